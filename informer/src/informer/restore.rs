//! Restoring an informer from the browser's database: the stored objects
//! (or first their faces) put back, the stored deltas after the snapshot
//! applied, the watch started ahead from the stored resourceVersion, and
//! the informer *warm* until that watch has caught up (then synced; after
//! a relist instead, with the time nothing was watched recorded as a gap).

use super::changes::{ChangeKind, StoreChange};
use super::{Informer, Resume, Warm};
use crate::clock::Millis;
use crate::delta_fifo::DeltaType;
use crate::history::{Gap, History, HistoryEntry, RestoreError};
use crate::object::ObjectRef;
use crate::reflector::Phase;
use crate::store::Indexer;
use crate::table::ColumnDefinition;

impl Informer {
    /// Puts objects of a stored store back, before [`Informer::resume`]
    /// (called once per stored chunk, so a large store comes back over
    /// many tasks); each is a change readers see, as a listed object is.
    /// No delta is recorded: the restored history holds what happened.
    pub fn restore_objects(&mut self, objects: impl IntoIterator<Item = ObjectRef>) {
        self.put_restored(objects, Indexer::update);
    }

    /// Puts each object with `put`, each a change readers see.
    fn put_restored(
        &mut self,
        objects: impl IntoIterator<Item = ObjectRef>,
        put: fn(&mut Indexer, ObjectRef) -> Option<ObjectRef>,
    ) {
        for object in objects {
            let key = object.key.clone();
            let kind = match put(&mut self.store, object) {
                Some(_) => ChangeKind::Updated,
                None => ChangeKind::Added,
            };
            self.changes.push(StoreChange { key, kind });
        }
    }

    /// Puts a stored base's faces in the store (`persist::face`: each
    /// object cut down to its table row), to show every row at once, as of
    /// `as_of`, when the base's snapshot was taken; the base's chunks then
    /// replace each with its whole object ([`Informer::restore_objects`]).
    /// `columns` are the server's Table columns of their cells (table
    /// mode): a face has no fields to compute other columns from.
    pub fn restore_faces(
        &mut self,
        faces: Vec<ObjectRef>,
        as_of: Millis,
        columns: Option<&[ColumnDefinition]>,
    ) {
        if let Some(columns) = columns {
            self.reflector.adopt_stored_columns(columns);
        }
        self.put_restored(faces, Indexer::add_unindexed);
        self.faces_as_of = Some(as_of);
    }

    /// Being restored, showing faces: when their snapshot was taken.
    pub fn faces_as_of(&self) -> Option<Millis> {
        self.faces_as_of
    }

    /// Applies one stored delta recorded after the stored snapshot to the
    /// restored store (a deletion removes the key; anything else puts the
    /// object), before [`Informer::resume`].
    pub fn restore_delta(&mut self, entry: &HistoryEntry) {
        let key = entry.key().to_owned();
        match entry.kind {
            DeltaType::Deleted => {
                if self.store.delete_key(&key).is_some() {
                    self.changes.push(StoreChange {
                        key,
                        kind: ChangeKind::Deleted,
                    });
                }
            }
            _ => self.restore_objects([entry.object.clone()]),
        }
    }

    /// While the stored store is still being read: the reflector watches
    /// from the resourceVersion it will be current at (see
    /// [`Reflector::resume`](crate::reflector::Reflector::resume)), so the server's answer — and the quiet or
    /// the BOOKMARK that says the watch caught up — comes while the rest is
    /// read, not after. Nothing it brings is applied: the store operations
    /// wait in the reflector, in order, until [`Informer::resume`] puts the
    /// history back and applies them after the stored deltas. A 410 relists
    /// as for any resumed watch, and that relist waits the same way. Does
    /// nothing once started.
    pub fn watch_ahead(
        &mut self,
        resource_version: &str,
        columns: Option<Vec<ColumnDefinition>>,
        now: Millis,
    ) {
        if self.held || self.reflector.status().phase != Phase::Idle {
            return;
        }
        self.held = true;
        self.reflector.resume(resource_version, columns, now);
    }

    /// The watch runs ahead of the restore ([`Informer::watch_ahead`]).
    pub fn is_watching_ahead(&self) -> bool {
        self.held
    }

    /// Starts a restored informer: its history is put back and its
    /// reflector watches from the stored resourceVersion (see
    /// [`Reflector::resume`](crate::reflector::Reflector::resume)), unless it already does
    /// ([`Informer::watch_ahead`]): then what the watch brought meanwhile
    /// is applied now. It is warm until the watch has caught up. Does
    /// nothing once started. A stored history that cannot be true is
    /// refused, and nothing starts.
    pub fn resume(&mut self, resume: Resume, now: Millis) -> Result<(), RestoreError> {
        if !self.held && self.reflector.status().phase != Phase::Idle {
            return Ok(());
        }
        self.history = History::restore(self.config().history.clone(), resume.history)?;
        self.faces_as_of = None;
        self.warm = Some(Warm {
            as_of: resume.as_of,
            caught_up: false,
            relisted: false,
        });
        if self.held {
            self.held = false;
        } else {
            self.reflector
                .resume(&resume.resource_version, resume.columns, now);
        }
        self.process(now);
        Ok(())
    }

    /// Showing a restored store whose watch has not caught up yet.
    pub fn is_warm(&self) -> bool {
        self.warm.is_some()
    }

    /// While warm: when the restored store was last known current.
    pub fn warm_as_of(&self) -> Option<Millis> {
        self.warm.map(|warm| warm.as_of)
    }

    /// A warm informer becomes synced once what the watch brought is
    /// applied; after a relist, the history records the gap.
    pub(super) fn settle_warm(&mut self, now: Millis) {
        let Some(warm) = self.warm else {
            return;
        };
        if !(warm.caught_up || warm.relisted) || self.has_queued_deltas() {
            return;
        }
        if warm.relisted {
            self.history.record_gap(Gap {
                from: warm.as_of,
                to: now,
            });
        }
        self.warm = None;
        self.synced = true;
    }

    /// When the next store operation to apply arrived, if it waited for a
    /// restore ([`Informer::watch_ahead`]).
    pub(super) fn take_arrival(&mut self) -> Option<Millis> {
        let (left, at) = self.held_arrivals.front_mut()?;
        let at = *at;
        *left -= 1;
        if *left == 0 {
            self.held_arrivals.pop_front();
        }
        Some(at)
    }
}
