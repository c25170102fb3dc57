//! [`Snapshotting`]: the store's objects looked up for a new base a step
//! per poll, not in one task (issue 21: 30k pods took 20 ms, 100k over
//! 50 ms), yet exactly the store as it is when the last step ends.
//!
//! The keys are taken in order when it begins, and a cursor on the
//! informer's change log with them. Each step looks up a slice of keys
//! (a key gone meanwhile is skipped). The last step reads what changed
//! since it began and puts each changed key's current object in its place
//! (or takes it out): a key unchanged since then held the same object at
//! every step. With the change log lagged (bounded, or kept empty for an
//! informer nobody reads), it looks the store up again at once, as before.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::informer::{ChangeCursor, ChangeRead, Informer};
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
}

impl Snapshotting {
    pub(super) fn begin(informer: &Informer) -> Snapshotting {
        let keys = informer.store().keys_in_order().to_vec();
        Snapshotting {
            objects: Vec::with_capacity(keys.len()),
            keys,
            next: 0,
            changes: informer.change_cursor(),
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

    /// The store now, in key order (every key looked up).
    pub(super) fn finish(mut self, informer: &Informer) -> Vec<ObjectRef> {
        let store = informer.store();
        let changed: BTreeMap<&str, Option<ObjectRef>> =
            match informer.read_changes(&mut self.changes) {
                ChangeRead::Changes(changes) => changes
                    .map(|change| (change.key.as_str(), store.get_by_key(&change.key).cloned()))
                    .collect(),
                ChangeRead::Lagged => {
                    return store
                        .keys_in_order()
                        .iter()
                        .filter_map(|key| store.get_by_key(key).cloned())
                        .collect();
                }
            };
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
