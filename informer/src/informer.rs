//! The Informer: one reflector, its DeltaFIFO, the indexer, the history and
//! the event handlers, tied together (client-go's `sharedIndexInformer` +
//! `controller`). Every input is fed to the reflector; the store operations
//! it produces go into the DeltaFIFO, which is then drained at once: each
//! popped key's deltas are applied to the indexer (client-go
//! `processDeltas`), recorded in the history, appended to the change log
//! as [`StoreChange`]s for incremental re-rendering, and fanned out to the
//! handlers. Several views share one informer per (resource, namespace,
//! selectors) by registering handlers or reading the store and the changes.
//!
//! A store restored from the browser's database comes back through
//! [`Informer::restore_objects`] and [`Informer::resume`]: the informer is
//! *warm* — it shows what was stored while its reflector watches from the
//! stored resourceVersion — until the watch has caught up
//! ([`StoreOp::CaughtUp`]); only then has it synced. When the server no
//! longer has that version (410) the reflector relists, and the history
//! records the time nothing was watched as a [`Gap`](crate::history::Gap).
//!
//! The change log is read through cursors ([`ChangeCursor`]), any number of
//! them, each at its own pace; reading takes `&self`. The log is bounded
//! ([`DEFAULT_CHANGE_LOG_CAPACITY`], settable): a reader that fell further
//! behind than that gets [`ChangeRead::Lagged`], never a silently shortened
//! list, and rebuilds what it derives from the store (which holds the state
//! every change led to).
//!
//! The files: `changes` (the change log and its cursors), `sink` (where a
//! popped delta goes: history, indexer, change log, handlers), `restore`
//! (coming back from the browser's database, warm until caught up).

mod changes;
mod restore;
mod sink;

use std::collections::VecDeque;
use std::sync::Arc;

use self::changes::ChangeLog;
use self::sink::DeltaSink;
use crate::clock::Millis;
use crate::config::InformerConfig;
use crate::delta_fifo::{
    Delta, DeltaFifo, DeltaObject, DeltaType, PopResult, ProcessResult, ReplaceJob,
};
use crate::history::{History, StoredHistory};
use crate::object::ObjectRef;
use crate::reflector::{Action, Input, Reflector, ReflectorStatus, StoreOp};
use crate::store::Indexer;
use crate::table::ColumnDefinition;

pub use self::changes::{
    ChangeCursor, ChangeKind, ChangeRead, StoreChange, DEFAULT_CHANGE_LOG_CAPACITY,
};
pub use self::sink::EventHandler;

pub struct Informer {
    reflector: Reflector,
    fifo: DeltaFifo,
    store: Indexer,
    history: History,
    changes: ChangeLog,
    handlers: Vec<Box<dyn EventHandler>>,
    synced: bool,
    /// The most queued keys one input applies (see `set_drain_step`).
    drain_step: usize,
    /// A relist larger than a step, being queued into the FIFO a step at a
    /// time; nothing is popped, and no later operation taken, until it is in.
    replacing: Option<ReplaceJob>,
    /// Showing a restored store until the watch catches up (see the module doc).
    warm: Option<Warm>,
    /// The store holds a stored base's faces, as of this time, until it
    /// resumes (see [`Informer::restore_faces`]).
    faces_as_of: Option<Millis>,
    /// The watch resumed ahead of the restore ([`Informer::watch_ahead`]):
    /// what it brings waits in the reflector until [`Informer::resume`].
    held: bool,
    /// When the store operations that waited arrived, oldest first: (how
    /// many, when). A change is recorded as of its arrival, not its
    /// application.
    held_arrivals: VecDeque<(usize, Millis)>,
}

/// A restored store not yet current.
#[derive(Debug, Clone, Copy)]
struct Warm {
    /// When the stored state was last known current.
    as_of: Millis,
    /// The resumed watch caught up; applied once nothing is queued.
    caught_up: bool,
    /// The server no longer had the stored version: a relist replaced it.
    relisted: bool,
}

/// What a restored informer resumes from (see [`Informer::resume`]).
#[derive(Debug)]
pub struct Resume {
    /// The resourceVersion the restored store was current at.
    pub resource_version: String,
    /// When (on the caller's clock) the store was last known current.
    pub as_of: Millis,
    /// The stored history (taken back with [`History::restore`] under the
    /// informer's retention).
    pub history: StoredHistory,
    /// The server's Table columns the stored rows were printed with.
    pub columns: Option<Vec<ColumnDefinition>>,
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
            changes: ChangeLog::new(DEFAULT_CHANGE_LOG_CAPACITY),
            handlers: Vec::new(),
            synced: false,
            drain_step: usize::MAX,
            replacing: None,
            warm: None,
            faces_as_of: None,
            held: false,
            held_arrivals: VecDeque::new(),
        }
    }

    /// Applies at most `keys` queued keys per input (and per
    /// [`Informer::drain`]); the rest stay queued, in order, for the next.
    /// A page sets this so a 100k-object list is applied over many tasks,
    /// not in one; `usize::MAX` (the default) applies everything at once.
    pub fn set_drain_step(&mut self, keys: usize) {
        self.drain_step = keys.max(1);
    }

    /// Deltas are still queued (see [`Informer::set_drain_step`]): call
    /// [`Informer::drain`] to apply the next step.
    pub fn has_queued_deltas(&self) -> bool {
        !self.held
            && (!self.fifo.is_empty() || self.replacing.is_some() || self.reflector.has_ops())
    }

    /// Applies the next step of queued deltas.
    pub fn drain(&mut self, now: Millis) {
        self.process(now);
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

    /// Feeds one input; drain [`Informer::poll_action`] and ask
    /// [`Informer::poll_timeout`] afterwards.
    pub fn handle(&mut self, input: Input<'_>, now: Millis) {
        let queued = self.reflector.queued_ops();
        self.reflector.handle(input, now);
        let arrived = self.reflector.queued_ops().saturating_sub(queued);
        if self.held && arrived > 0 {
            self.held_arrivals.push_back((arrived, now));
        }
        self.process(now);
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.reflector.poll_action()
    }

    /// When to feed `Input::Tick` next (see [`Reflector::poll_timeout`]).
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.reflector.poll_timeout()
    }

    pub fn store(&self) -> &Indexer {
        &self.store
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// New history retention limits; lower ones evict at once (see
    /// [`History::set_config`]).
    pub fn set_history_config(&mut self, config: crate::history::HistoryConfig) {
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

    /// A cursor that reads the changes made from now on (what came before
    /// is in the store).
    pub fn change_cursor(&self) -> ChangeCursor {
        self.changes.cursor_at_end()
    }

    /// The store changes since `cursor` last read, in order, and moves it
    /// past them; [`ChangeRead::Lagged`] when some were dropped meanwhile.
    pub fn read_changes(&self, cursor: &mut ChangeCursor) -> ChangeRead<'_> {
        self.changes.read(cursor)
    }

    /// Holds at most `capacity` changes from now on (the oldest go first;
    /// 0 keeps none, for an informer nobody reads incrementally).
    pub fn set_change_log_capacity(&mut self, capacity: usize) {
        self.changes.set_capacity(capacity);
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
        if self.held {
            // the restore is still being read (see `watch_ahead`)
            return;
        }
        let mut step = self.drain_step;
        // What an earlier step left queued goes first: a relist being
        // queued, then the FIFO.
        if self.continue_replace(&mut step) {
            self.drain_fifo(now, &mut step);
        }
        while self.replacing.is_none() {
            let Some(op) = self.reflector.poll_op() else {
                break;
            };
            let at = self.take_arrival().unwrap_or(now);
            if let (StoreOp::Replace { .. }, Some(warm)) = (&op, self.warm.as_mut()) {
                warm.relisted = true;
            }
            match op {
                StoreOp::CaughtUp => {
                    if let Some(warm) = self.warm.as_mut() {
                        warm.caught_up = true;
                    }
                }
                StoreOp::Replace { items, .. } => {
                    self.replacing = Some(self.fifo.start_replace(items));
                    if !self.continue_replace(&mut step) {
                        break;
                    }
                }
                StoreOp::Resync => self.fifo.resync(&self.store),
                StoreOp::Add(o) if self.fifo.is_empty() => self.apply_now(DeltaType::Added, o, at),
                StoreOp::Update(o) if self.fifo.is_empty() => {
                    self.apply_now(DeltaType::Updated, o, at)
                }
                StoreOp::Delete(o) if self.fifo.is_empty() => {
                    // as `DeltaFifo::delete`: a key unknown downstream is dropped
                    if self.store.get_by_key(&o.key).is_some() {
                        self.apply_now(DeltaType::Deleted, o, at)
                    }
                }
                StoreOp::Add(o) => self.fifo.add(o),
                StoreOp::Update(o) => self.fifo.update(o),
                StoreOp::Delete(o) => self.fifo.delete(o, &self.store),
            }
            self.drain_fifo(now, &mut step);
        }
        if self.warm.is_some() {
            self.settle_warm(now);
        } else if self.fifo.has_synced() {
            self.synced = true;
        }
        let synced = self.synced;
        self.reflector.status_mut().synced = synced;
    }

    /// One delta that bypasses the (empty) FIFO: what popping it would do.
    fn apply_now(&mut self, kind: DeltaType, object: ObjectRef, now: Millis) {
        let (fifo, mut sink) = self.fifo_and_sink(now);
        fifo.mark_populated();
        let is_in_initial_list = !fifo.has_synced();
        let delta = Delta {
            kind,
            object: DeltaObject::Object(object),
        };
        let key = delta.object.object().key.clone();
        sink.apply(&key, &delta, is_in_initial_list);
    }

    /// Queues the next step of a relist being queued; true when none is
    /// (left), so the FIFO may be popped.
    fn continue_replace(&mut self, step: &mut usize) -> bool {
        let Some(job) = self.replacing.as_mut() else {
            return true;
        };
        if !self.fifo.replace_step(job, step, &self.store) {
            return false;
        }
        self.replacing = None;
        true
    }

    /// The FIFO, and the sink its popped deltas go to (store, history,
    /// change log, handlers) at `now`: borrowed apart, so both can be used
    /// at once.
    fn fifo_and_sink(&mut self, now: Millis) -> (&mut DeltaFifo, DeltaSink<'_>) {
        let sink = DeltaSink {
            store: &mut self.store,
            history: &mut self.history,
            changes: &mut self.changes,
            handlers: &mut self.handlers,
            now,
        };
        (&mut self.fifo, sink)
    }

    /// Pops queued keys until the FIFO is empty or `step` keys were popped
    /// (counted down across one `process`).
    fn drain_fifo(&mut self, now: Millis, step: &mut usize) {
        let (fifo, mut sink) = self.fifo_and_sink(now);
        while *step > 0 {
            *step -= 1;
            let r = fifo.pop(|key, deltas, is_in_initial_list| {
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
    }
}
