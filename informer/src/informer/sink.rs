//! Where a popped delta goes (client-go `processDeltas`): the history
//! records it with the field managers that wrote it, the indexer applies
//! it, the change log notes it and the handlers ([`EventHandler`]) hear of
//! it.

use std::sync::Arc;

use super::changes::{ChangeKind, ChangeLog, StoreChange};
use crate::clock::Millis;
use crate::delta_fifo::{Delta, DeltaObject, DeltaType};
use crate::field_managers;
use crate::history::History;
use crate::object::ObjectRef;
use crate::store::Indexer;

/// Notified of every change applied to the store (client-go
/// `ResourceEventHandler`).
pub trait EventHandler {
    /// A new object; `is_in_initial_list` while the first list is being
    /// processed.
    fn on_add(&mut self, obj: &ObjectRef, is_in_initial_list: bool);
    /// An object changed (also called for resyncs and relists, with the
    /// same or an equal object).
    fn on_update(&mut self, old: &ObjectRef, new: &ObjectRef);
    /// An object was deleted; a tombstone if the deletion was discovered by
    /// a relist and the final state is unknown.
    fn on_delete(&mut self, obj: &DeltaObject);
}

/// Where a popped delta goes (client-go `processDeltas`): the history, the
/// indexer, the change log and the handlers.
pub(super) struct DeltaSink<'a> {
    pub(super) store: &'a mut Indexer,
    pub(super) history: &'a mut History,
    pub(super) changes: &'a mut ChangeLog,
    pub(super) handlers: &'a mut Vec<Box<dyn EventHandler>>,
    pub(super) now: Millis,
}

impl DeltaSink<'_> {
    pub(super) fn apply(&mut self, key: &str, d: &Delta, is_in_initial_list: bool) {
        let writers = match d.kind {
            DeltaType::Added | DeltaType::Updated | DeltaType::Replaced => {
                let old = self.store.get_by_key(key);
                let new = d.object.object();
                match (old, d.kind) {
                    (Some(old), _) if Arc::ptr_eq(old, new) => Vec::new(),
                    // A list is no write: who wrote what it holds is unknown.
                    (None, DeltaType::Replaced) => Vec::new(),
                    (old, _) => {
                        field_managers::writers(old.map(|o| o.value.root()), new.value.root())
                    }
                }
            }
            DeltaType::Deleted | DeltaType::Sync => Vec::new(),
        };
        self.history.record_written(
            self.now,
            d.kind,
            d.object.object().clone(),
            d.object.is_tombstone(),
            key,
            writers,
        );
        match d.kind {
            DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                let new = d.object.object();
                match self.store.update(new.clone()) {
                    Some(old) => {
                        if !Arc::ptr_eq(&old, new) {
                            self.changes.push(StoreChange {
                                key: key.to_owned(),
                                kind: ChangeKind::Updated,
                            });
                        }
                        for h in self.handlers.iter_mut() {
                            h.on_update(&old, new);
                        }
                    }
                    None => {
                        self.changes.push(StoreChange {
                            key: key.to_owned(),
                            kind: ChangeKind::Added,
                        });
                        for h in self.handlers.iter_mut() {
                            h.on_add(new, is_in_initial_list);
                        }
                    }
                }
            }
            DeltaType::Deleted => {
                if self.store.delete_key(key).is_some() {
                    self.changes.push(StoreChange {
                        key: key.to_owned(),
                        kind: ChangeKind::Deleted,
                    });
                }
                for h in self.handlers.iter_mut() {
                    h.on_delete(&d.object);
                }
            }
        }
    }
}
