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
//! records the time nothing was watched as a [`Gap`].
//!
//! The change log is read through cursors ([`ChangeCursor`]), any number of
//! them, each at its own pace; reading takes `&self`. The log is bounded
//! ([`DEFAULT_CHANGE_LOG_CAPACITY`], settable): a reader that fell further
//! behind than that gets [`ChangeRead::Lagged`], never a silently shortened
//! list, and rebuilds what it derives from the store (which holds the state
//! every change led to).

use std::collections::VecDeque;
use std::sync::Arc;

use super::delta_fifo::{
    Delta, DeltaFifo, DeltaObject, DeltaType, PopResult, ProcessResult, ReplaceJob,
};
use super::field_managers;
use super::history::{Gap, History, HistoryEntry, RestoreError, StoredHistory};
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

/// Changes the log holds at most by default: a 30,000-object list and the
/// churn of several seconds fit, at roughly 60 bytes a change.
pub const DEFAULT_CHANGE_LOG_CAPACITY: usize = 65_536;

/// Where one reader of the change log is: the sequence number of the next
/// change it will read. Cheap to copy; the informer keeps no list of them.
/// The default cursor reads from the informer's first change on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChangeCursor {
    next: u64,
}

/// What [`Informer::read_changes`] found.
#[derive(Debug)]
pub enum ChangeRead<'a> {
    /// Every change since the cursor's last read, oldest first (possibly none).
    Changes(std::collections::vec_deque::Iter<'a, StoreChange>),
    /// The changes the cursor had not read were partly dropped (the log is
    /// bounded): rebuild from [`Informer::store`]. The cursor now points
    /// past the newest change, so the next read continues from the store.
    Lagged,
}

/// The store's changes in order, bounded: the oldest go first. Each change
/// has a sequence number (`first_seq` + its index) that cursors count in.
#[derive(Debug)]
struct ChangeLog {
    entries: VecDeque<StoreChange>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    capacity: usize,
}

impl ChangeLog {
    fn new(capacity: usize) -> ChangeLog {
        ChangeLog {
            entries: VecDeque::new(),
            first_seq: 0,
            capacity,
        }
    }

    fn end(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    fn push(&mut self, change: StoreChange) {
        self.entries.push_back(change);
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > self.capacity {
            self.entries.pop_front();
            self.first_seq += 1;
        }
    }

    fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.trim();
        self.entries.shrink_to(capacity.min(1024));
    }

    fn read(&self, cursor: &mut ChangeCursor) -> ChangeRead<'_> {
        let end = self.end();
        // A cursor past the end came from another informer: it cannot know
        // what it missed here either.
        if cursor.next < self.first_seq || cursor.next > end {
            cursor.next = end;
            return ChangeRead::Lagged;
        }
        let start = (cursor.next - self.first_seq) as usize;
        cursor.next = end;
        ChangeRead::Changes(self.entries.range(start..))
    }
}

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
    /// [`Reflector::resume`]), so the server's answer — and the quiet or
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
        if self.held || self.reflector.status().phase != super::reflector::Phase::Idle {
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
    /// [`Reflector::resume`]), unless it already does
    /// ([`Informer::watch_ahead`]): then what the watch brought meanwhile
    /// is applied now. It is warm until the watch has caught up. Does
    /// nothing once started. A stored history that cannot be true is
    /// refused, and nothing starts.
    pub fn resume(&mut self, resume: Resume, now: Millis) -> Result<(), RestoreError> {
        if !self.held && self.reflector.status().phase != super::reflector::Phase::Idle {
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
    fn settle_warm(&mut self, now: Millis) {
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

    /// When the next store operation to apply arrived, if it waited for a
    /// restore ([`Informer::watch_ahead`]).
    fn take_arrival(&mut self) -> Option<Millis> {
        let (left, at) = self.held_arrivals.front_mut()?;
        let at = *at;
        *left -= 1;
        if *left == 0 {
            self.held_arrivals.pop_front();
        }
        Some(at)
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

    /// A cursor that reads the changes made from now on (what came before
    /// is in the store).
    pub fn change_cursor(&self) -> ChangeCursor {
        ChangeCursor {
            next: self.changes.end(),
        }
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

    /// Pops queued keys until the FIFO is empty or `step` keys were popped
    /// (counted down across one `process`).
    fn drain_fifo(&mut self, now: Millis, step: &mut usize) {
        let mut sink = DeltaSink {
            store: &mut self.store,
            history: &mut self.history,
            changes: &mut self.changes,
            handlers: &mut self.handlers,
            now,
        };
        while *step > 0 {
            *step -= 1;
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
    }
}

/// Where a popped delta goes (client-go `processDeltas`): the history, the
/// indexer, the change log and the handlers.
struct DeltaSink<'a> {
    store: &'a mut Indexer,
    history: &'a mut History,
    changes: &'a mut ChangeLog,
    handlers: &'a mut Vec<Box<dyn EventHandler>>,
    now: Millis,
}

impl DeltaSink<'_> {
    fn apply(&mut self, key: &str, d: &Delta, is_in_initial_list: bool) {
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

#[cfg(test)]
mod change_log_tests;
