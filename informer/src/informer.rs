//! The Informer: one reflector, its DeltaFIFO, the indexer, the history and
//! the event handlers, tied together (client-go's `sharedIndexInformer` +
//! `controller`). Every input is fed to the reflector; the store operations
//! it produces go into the DeltaFIFO, which is then drained at once: each
//! popped key's deltas are applied to the indexer (client-go
//! `processDeltas`), recorded in the history, reported as [`StoreChange`]s
//! for incremental re-rendering, and fanned out to the handlers. Several
//! views share one informer per (resource, namespace, selectors) by
//! registering handlers or reading the store and the changes.

use std::sync::Arc;

use super::delta_fifo::{Delta, DeltaFifo, DeltaObject, DeltaType, PopResult, ProcessResult};
use super::history::History;
use super::object::ObjectRef;
use super::reflector::{Action, Input, Reflector, ReflectorStatus, StoreOp};
use super::store::Indexer;
use super::table::ColumnDefinition;
use super::{InformerConfig, Millis};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    Added,
    Updated,
    Deleted,
}

/// One change to the store, for incremental re-rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreChange {
    pub key: String,
    pub kind: ChangeKind,
}

pub struct Informer {
    reflector: Reflector,
    fifo: DeltaFifo,
    store: Indexer,
    history: History,
    changes: Vec<StoreChange>,
    handlers: Vec<Box<dyn EventHandler>>,
    synced: bool,
    /// keep `changes` bounded if nobody takes them
    max_changes: usize,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("reflector", &self.reflector)
            .field("store", &self.store)
            .field("synced", &self.synced)
            .finish()
    }
}

impl Informer {
    pub fn new(config: InformerConfig) -> Informer {
        let history = History::new(config.history.clone());
        Informer {
            reflector: Reflector::new(config),
            fifo: DeltaFifo::new(),
            store: Indexer::new(),
            history,
            changes: Vec::new(),
            handlers: Vec::new(),
            synced: false,
            max_changes: 1_000_000,
        }
    }

    pub fn config(&self) -> &InformerConfig {
        self.reflector.config()
    }

    /// Queues the first list (or streaming watch).
    pub fn start(&mut self, now: Millis) {
        self.reflector.start(now);
        self.process(now);
    }

    /// Queues Cancel for in-flight requests; nothing is sent afterwards and
    /// later inputs are ignored. The store and history stay readable. A
    /// stopped informer cannot be started again: create a new one.
    pub fn stop(&mut self) {
        self.reflector.stop();
        self.fifo.close();
    }

    /// The user asks again now (see [`Reflector::retry`]); drain
    /// [`Informer::poll_action`] afterwards.
    pub fn retry(&mut self, now: Millis) {
        self.reflector.retry(now);
        self.process(now);
    }

    /// The watch is open (see [`Reflector::is_watch_open`]).
    pub fn is_watch_open(&self) -> bool {
        self.reflector.is_watch_open()
    }

    /// When the watch waiting for its response was sent (see [`Reflector::watch_pending_since`]).
    pub fn watch_pending_since(&self) -> Option<Millis> {
        self.reflector.watch_pending_since()
    }

    /// Nothing will be sent without [`Informer::retry`] (see [`Reflector::is_halted`]).
    pub fn is_halted(&self) -> bool {
        self.reflector.is_halted()
    }

    /// Feeds one input; drain [`Informer::poll_action`] afterwards.
    pub fn handle(&mut self, input: Input<'_>, now: Millis) {
        self.reflector.handle(input, now);
        self.process(now);
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.reflector.poll_action()
    }

    pub fn store(&self) -> &Indexer {
        &self.store
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// New history retention limits; lower ones evict at once (see
    /// [`History::set_config`]).
    pub fn set_history_config(&mut self, config: super::HistoryConfig) {
        self.history.set_config(config);
    }

    pub fn status(&self) -> &ReflectorStatus {
        self.reflector.status()
    }

    /// The server's Table columns in table mode (see
    /// [`Reflector::server_columns`]).
    pub fn server_columns(&self) -> Option<&Arc<[ColumnDefinition]>> {
        self.reflector.server_columns()
    }

    pub fn has_synced(&self) -> bool {
        self.synced
    }

    /// Store changes since the last call, in order.
    pub fn take_changes(&mut self) -> Vec<StoreChange> {
        std::mem::take(&mut self.changes)
    }

    /// Registers a handler; it first receives `on_add` for every object
    /// already in the store (client-go replays the store to late handlers).
    pub fn add_handler(&mut self, mut handler: Box<dyn EventHandler>) {
        let initial = !self.synced;
        for o in self.store.list() {
            handler.on_add(o, initial);
        }
        self.handlers.push(handler);
    }

    /// Feeds the reflector's store operations into the DeltaFIFO and drains
    /// it after each one, so the store, the history and the handlers see
    /// changes in the order the server sent them (the FIFO's per-key
    /// batching still applies within a relist).
    fn process(&mut self, now: Millis) {
        while let Some(op) = self.reflector.poll_op() {
            // The FIFO is drained after every operation, so a single Add,
            // Update or Delete would be queued and popped at once: apply it
            // directly (same deltas, same order, no queue bookkeeping).
            // Replace and Resync go through the FIFO for its per-key batching
            // and tombstones.
            match op {
                StoreOp::Replace { items, .. } => self.fifo.replace(items, &self.store),
                StoreOp::Resync => self.fifo.resync(&self.store),
                StoreOp::Add(o) if self.fifo.is_empty() => self.apply_now(DeltaType::Added, o, now),
                StoreOp::Update(o) if self.fifo.is_empty() => {
                    self.apply_now(DeltaType::Updated, o, now)
                }
                StoreOp::Delete(o) if self.fifo.is_empty() => {
                    // as `DeltaFifo::delete`: a key unknown downstream is dropped
                    if self.store.get_by_key(&o.key).is_some() {
                        self.apply_now(DeltaType::Deleted, o, now)
                    }
                }
                StoreOp::Add(o) => self.fifo.add(o),
                StoreOp::Update(o) => self.fifo.update(o),
                StoreOp::Delete(o) => self.fifo.delete(o, &self.store),
            }
            self.drain_fifo(now);
        }
        self.drain_fifo(now);
        if self.fifo.has_synced() {
            self.synced = true;
        }
        let synced = self.synced;
        self.reflector.status_mut().synced = synced;
    }

    /// One delta that bypasses the (empty) FIFO: what popping it would do.
    fn apply_now(&mut self, kind: DeltaType, object: ObjectRef, now: Millis) {
        self.fifo.mark_populated();
        let is_in_initial_list = !self.fifo.has_synced();
        let delta = Delta {
            kind,
            object: DeltaObject::Object(object),
        };
        let mut sink = DeltaSink {
            store: &mut self.store,
            history: &mut self.history,
            changes: &mut self.changes,
            handlers: &mut self.handlers,
            now,
        };
        let key = delta.object.object().key.clone();
        sink.apply(&key, &delta, is_in_initial_list);
        self.bound_changes();
    }

    fn drain_fifo(&mut self, now: Millis) {
        let mut sink = DeltaSink {
            store: &mut self.store,
            history: &mut self.history,
            changes: &mut self.changes,
            handlers: &mut self.handlers,
            now,
        };
        loop {
            let r = self.fifo.pop(|key, deltas, is_in_initial_list| {
                for d in deltas {
                    sink.apply(key, d, is_in_initial_list);
                }
                ProcessResult::Done
            });
            match r {
                PopResult::Processed { .. } | PopResult::Requeued { .. } => {}
                PopResult::Empty | PopResult::Closed => break,
            }
        }
        self.bound_changes();
    }

    fn bound_changes(&mut self) {
        if self.changes.len() > self.max_changes {
            // nobody is reading them: keep the newest half, so that trimming
            // is amortised rather than a shift on every delta
            let excess = self.changes.len() - self.max_changes / 2;
            self.changes.drain(..excess);
        }
    }
}

/// Where a popped delta goes (client-go `processDeltas`): the history, the
/// indexer, the change list and the handlers.
struct DeltaSink<'a> {
    store: &'a mut Indexer,
    history: &'a mut History,
    changes: &'a mut Vec<StoreChange>,
    handlers: &'a mut Vec<Box<dyn EventHandler>>,
    now: Millis,
}

impl DeltaSink<'_> {
    fn apply(&mut self, key: &str, d: &Delta, is_in_initial_list: bool) {
        self.history.record(
            self.now,
            d.kind,
            d.object.object().clone(),
            d.object.is_tombstone(),
            key,
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
