//! [`Snapshotting`]: the store's objects looked up for a new base a step
//! per poll, not in one task (at 100k objects one task would hold the
//! page's thread too long), yet exactly the store as it is when the last
//! step ends.
//!
//! The keys are taken in order when it begins, and a cursor on the
//! informer's change log with them. Each step looks up a slice of keys
//! (a key gone meanwhile is skipped). The last step reads what changed
//! since it began and puts each changed key's current object in its place
//! (or takes it out): a key unchanged since then held the same object at
//! every step. When more changed than a few steps' worth, or the change
//! log lagged (it is bounded, and kept empty for an informer nobody reads),
//! the snapshot begins again, a step per poll as before: a relist of 100k
//! pods under a snapshot leaves it up to 100k changes behind, and looking
//! every key up at once would be a task of that size. It begins again
//! once; after that it looks
//! the store up at once, so a store that never stops changing still gets a
//! base.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::informer::{ChangeCursor, ChangeRead, Informer, StoreChange};
use crate::object::ObjectRef;

/// A snapshot of the store being taken.
pub(super) struct Snapshotting {
    /// The store's keys in order when it began.
    keys: Vec<Arc<str>>,
    /// The next key to look up.
    next: usize,
    /// The objects looked up so far, in key order.
    objects: Vec<ObjectRef>,
    /// The store's changes since it began.
    changes: ChangeCursor,
    /// It began again after too many changes (see the module doc).
    again: bool,
}

/// How a snapshot ends: with the store's objects, or by beginning again
/// (with the objects looked up so far, to be released a slice at a time).
pub(super) enum Finished {
    Objects(Vec<ObjectRef>),
    BeginsAgain(Snapshotting, Vec<ObjectRef>),
}

/// Changes patched in at the end at most, in steps' worth (more, and the
/// patch would be a longer task than a step: it begins again).
const PATCH_STEPS: usize = 4;

impl Snapshotting {
    pub(super) fn begin(informer: &Informer) -> Snapshotting {
        let keys = informer.store().keys_in_order().to_vec();
        Snapshotting {
            objects: Vec::with_capacity(keys.len()),
            keys,
            next: 0,
            changes: informer.change_cursor(),
            again: false,
        }
    }

    /// Looks up at most `step` more keys; true once every key is.
    pub(super) fn step(&mut self, informer: &Informer, step: usize) -> bool {
        let store = informer.store();
        let end = self.keys.len().min(self.next.saturating_add(step));
        self.objects.extend(
            self.keys[self.next..end]
                .iter()
                .filter_map(|key| store.get_by_key(key).cloned()),
        );
        self.next = end;
        self.next == self.keys.len()
    }

    /// The store now, in key order (every key looked up), or the snapshot
    /// begun again when more changed than `step` keys times
    /// [`PATCH_STEPS`] (see the module doc).
    pub(super) fn finish(mut self, informer: &Informer, step: usize) -> Finished {
        match informer.read_changes(&mut self.changes) {
            ChangeRead::Changes(changes) if changes.len() <= step.saturating_mul(PATCH_STEPS) => {
                Finished::Objects(self.patched(informer, changes))
            }
            _ if !self.again => {
                let mut again = Snapshotting::begin(informer);
                again.again = true;
                Finished::BeginsAgain(again, self.objects)
            }
            ChangeRead::Changes(changes) => Finished::Objects(self.patched(informer, changes)),
            ChangeRead::Lagged => {
                let store = informer.store();
                Finished::Objects(
                    store
                        .keys_in_order()
                        .iter()
                        .filter_map(|key| store.get_by_key(key).cloned())
                        .collect(),
                )
            }
        }
    }

    /// The objects looked up, with each key in `changes` put back as the
    /// store holds it now (or taken out), in key order.
    fn patched<'a>(
        self,
        informer: &Informer,
        changes: impl Iterator<Item = &'a StoreChange>,
    ) -> Vec<ObjectRef> {
        let store = informer.store();
        // Inserted, not collected: `collect` into a BTreeMap sorts first,
        // another copy of the standard sort in the page's wasm.
        let mut changed: BTreeMap<&str, Option<ObjectRef>> = BTreeMap::new();
        for change in changes {
            changed.insert(change.key.as_str(), store.get_by_key(&change.key).cloned());
        }
        if changed.is_empty() {
            return self.objects;
        }
        let mut now = Vec::with_capacity(self.objects.len() + changed.len());
        let mut changed = changed.into_iter().peekable();
        for object in self.objects {
            while let Some((_, current)) = changed.next_if(|(key, _)| *key < object.key.as_str()) {
                now.extend(current);
            }
            match changed.next_if(|(key, _)| *key == object.key.as_str()) {
                Some((_, current)) => now.extend(current),
                None => now.push(object),
            }
        }
        now.extend(changed.filter_map(|(_, current)| current));
        now
    }

    /// What it holds, to be released a slice at a time (it was abandoned).
    pub(super) fn into_objects(self) -> Vec<ObjectRef> {
        self.objects
    }
}
