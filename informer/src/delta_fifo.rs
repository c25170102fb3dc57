//! The DeltaFIFO: a queue of keys, each with the ordered list of changes
//! (`Deltas`, oldest first) that happened to that object since it was last
//! popped. Semantics follow client-go's `DeltaFIFO`:
//!
//! * Added/Updated/Deleted from the watch are appended to the key's deltas;
//!   two consecutive Deleted collapse into one, keeping the one that is not a
//!   `DeletedFinalStateUnknown` tombstone.
//! * A Delete for a key that is neither queued nor in the known objects (the
//!   store) is dropped.
//! * `replace` (a relist) queues Replaced for every listed item and a
//!   Deleted tombstone for every key that was queued or known but is missing
//!   from the list; the first replace fixes the initial population count, and
//!   `has_synced` is true once that many keys have been popped.
//! * `resync` queues Sync for every known key that has nothing queued.
//! * `pop` hands one key's deltas to a processing function, which may ask for
//!   them to be requeued (they are put back only if the key was not queued
//!   again in the meantime); after `close`, `pop` reports `Closed`.
//!
//! The page is single-threaded, so there are no locks; callers own it through
//! `&mut`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::key_hash::{KeyMap, KeySet};

use super::object::ObjectRef;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    Added,
    Updated,
    Deleted,
    /// The object was part of a relist.
    Replaced,
    /// Periodic resync of an unchanged object.
    Sync,
}

impl DeltaType {
    pub fn as_str(&self) -> &'static str {
        match self {
            DeltaType::Added => "Added",
            DeltaType::Updated => "Updated",
            DeltaType::Deleted => "Deleted",
            DeltaType::Replaced => "Replaced",
            DeltaType::Sync => "Sync",
        }
    }
}

/// The object a delta carries: the object itself, or — for deletions found
/// by a relist, whose final state was never seen — a tombstone holding the
/// last state the informer knew.
#[derive(Debug, Clone, PartialEq)]
pub enum DeltaObject {
    Object(ObjectRef),
    /// client-go's `DeletedFinalStateUnknown`.
    Tombstone {
        key: String,
        last_known: ObjectRef,
    },
}

impl DeltaObject {
    /// The object (for a tombstone, the last known state).
    pub fn object(&self) -> &ObjectRef {
        match self {
            DeltaObject::Object(o) => o,
            DeltaObject::Tombstone { last_known, .. } => last_known,
        }
    }

    pub fn key(&self) -> &str {
        match self {
            DeltaObject::Object(o) => &o.key,
            DeltaObject::Tombstone { key, .. } => key,
        }
    }

    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeltaObject::Tombstone { .. })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub kind: DeltaType,
    pub object: DeltaObject,
}

/// Oldest first.
pub type Deltas = Vec<Delta>;

/// What the FIFO needs to know about the store downstream of it (client-go's
/// `KeyListerGetter`).
pub trait KnownObjects {
    /// The keys, shared with the store (copying 100k keys into Strings for
    /// a relist would be a long task).
    fn known_keys(&self) -> Vec<Arc<str>>;
    fn known_object(&self, key: &str) -> Option<ObjectRef>;
}

/// For a FIFO without a downstream store.
pub struct NoKnownObjects;

impl KnownObjects for NoKnownObjects {
    fn known_keys(&self) -> Vec<Arc<str>> {
        Vec::new()
    }
    fn known_object(&self, _key: &str) -> Option<ObjectRef> {
        None
    }
}

/// Returned by a pop's processing function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessResult {
    Done,
    /// Put the deltas back (unless the key was queued again meanwhile).
    Requeue,
}

/// Outcome of [`DeltaFifo::pop`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopResult {
    /// One key was processed.
    Processed {
        key: String,
    },
    /// One key was processed and requeued.
    Requeued {
        key: String,
    },
    Empty,
    Closed,
}

#[derive(Debug, Default)]
pub struct DeltaFifo {
    items: KeyMap<String, Deltas>,
    queue: VecDeque<String>,
    populated: bool,
    initial_population_count: usize,
    closed: bool,
}

impl DeltaFifo {
    pub fn new() -> DeltaFifo {
        DeltaFifo::default()
    }

    /// Number of queued keys.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Deltas queued for `key`.
    pub fn deltas(&self, key: &str) -> Option<&Deltas> {
        self.items.get(key)
    }

    /// Queued keys in queue order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.queue.iter().map(String::as_str)
    }

    /// What queueing any delta does to `has_synced`, for a delta the caller
    /// applies directly because the queue is empty (see `Informer`).
    pub fn mark_populated(&mut self) {
        self.populated = true;
    }

    pub fn add(&mut self, obj: ObjectRef) {
        self.populated = true;
        self.queue_action(DeltaType::Added, DeltaObject::Object(obj));
    }

    pub fn update(&mut self, obj: ObjectRef) {
        self.populated = true;
        self.queue_action(DeltaType::Updated, DeltaObject::Object(obj));
    }

    /// Queues a deletion, unless the key is unknown both here and downstream.
    pub fn delete(&mut self, obj: ObjectRef, known: &dyn KnownObjects) {
        let queued = self.items.contains_key(&obj.key);
        if !queued && known.known_object(&obj.key).is_none() {
            return;
        }
        self.populated = true;
        self.queue_action(DeltaType::Deleted, DeltaObject::Object(obj));
    }

    /// A relist: Replaced for every item, tombstone Deleted for keys queued or
    /// known but absent from `list`.
    pub fn replace(&mut self, list: Vec<ObjectRef>, known: &dyn KnownObjects) {
        let mut job = self.start_replace(list);
        self.replace_step(&mut job, &mut { usize::MAX }, known);
    }

    /// A relist to queue a step at a time with [`DeltaFifo::replace_step`]
    /// (so a relist of 100k objects never holds the page's thread in one
    /// long task). Pop nothing until it is done: the deletions
    /// it queues are computed from what is queued and known, as
    /// [`DeltaFifo::replace`] does at once.
    pub fn start_replace(&self, list: Vec<ObjectRef>) -> ReplaceJob {
        ReplaceJob {
            queued_unlisted: self.items.keys().cloned().collect(),
            queue_before: self.queue.len(),
            listed_again: 0,
            listed: 0,
            items: list.into_iter(),
            known: None,
            queued_deletions: 0,
        }
    }

    /// Queues more of a relist, counting `budget` down by one per listed
    /// item queued or known key checked; true once it is all queued (the
    /// Replaced items, then the tombstones, then the initial population).
    pub fn replace_step(
        &mut self,
        job: &mut ReplaceJob,
        budget: &mut usize,
        known: &dyn KnownObjects,
    ) -> bool {
        while *budget > 0 {
            let Some(obj) = job.items.next() else { break };
            *budget -= 1;
            if !job.queued_unlisted.is_empty() && job.queued_unlisted.remove(obj.key.as_str()) {
                job.listed_again += 1;
            }
            self.queue_action(DeltaType::Replaced, DeltaObject::Object(obj));
        }
        if job.items.len() > 0 {
            return false;
        }
        if job.known.is_none() {
            job.listed = self.queue.len() - job.queue_before + job.listed_again;
            // Keys queued here but gone from the list (a deletion missed
            // while disconnected); sorted so that the result does not
            // depend on hash order.
            let mut missing: Vec<String> = std::mem::take(&mut job.queued_unlisted)
                .into_iter()
                .collect();
            crate::compact_sort::sort(&mut missing);
            for key in missing {
                let Some(last_known) = self
                    .items
                    .get(&key)
                    .and_then(|d| d.last())
                    .map(|d| d.object.object().clone())
                else {
                    continue;
                };
                job.queued_deletions += 1;
                self.queue_action(
                    DeltaType::Deleted,
                    DeltaObject::Tombstone { key, last_known },
                );
            }
            // keys are distinct: the unstable sort orders them as the
            // stable one, and is the one the store's keys already use
            let mut known_keys = known.known_keys();
            known_keys.sort_unstable();
            job.known = Some(known_keys.into_iter());
        }
        let Some(known_keys) = job.known.as_mut() else {
            return false;
        };
        while *budget > 0 {
            let Some(key) = known_keys.next() else { break };
            *budget -= 1;
            // Every listed key is queued now (nothing was popped), so a key
            // with nothing queued was not listed.
            if self.items.get(&*key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(last_known) = known.known_object(&key) {
                job.queued_deletions += 1;
                self.queue_action(
                    DeltaType::Deleted,
                    DeltaObject::Tombstone {
                        key: key.to_string(),
                        last_known,
                    },
                );
            }
        }
        if known_keys.len() > 0 {
            return false;
        }
        if !self.populated {
            self.populated = true;
            self.initial_population_count = job.listed + job.queued_deletions;
        }
        true
    }

    /// Queues Sync for every known key that has nothing queued.
    pub fn resync(&mut self, known: &dyn KnownObjects) {
        for key in known.known_keys() {
            if self.items.get(&*key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(obj) = known.known_object(&key) {
                self.queue_action(DeltaType::Sync, DeltaObject::Object(obj));
            }
        }
    }

    /// True once the first `replace` happened and all the keys it queued
    /// have been popped. (Add/Update/Delete before the first replace also
    /// mark the queue populated, as in client-go.)
    pub fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    /// Pops the oldest key and hands its deltas to `process`, with
    /// `is_in_initial_list` true while the initial population is still being
    /// drained.
    pub fn pop(&mut self, process: impl FnOnce(&str, &Deltas, bool) -> ProcessResult) -> PopResult {
        loop {
            let Some(key) = self.queue.pop_front() else {
                return if self.closed {
                    PopResult::Closed
                } else {
                    PopResult::Empty
                };
            };
            let is_in_initial_list = !self.has_synced();
            if self.initial_population_count > 0 {
                self.initial_population_count -= 1;
            }
            let Some(deltas) = self.items.remove(&key) else {
                // cannot happen (queue and items move together); skip defensively
                continue;
            };
            return match process(&key, &deltas, is_in_initial_list) {
                ProcessResult::Done => PopResult::Processed { key },
                ProcessResult::Requeue => {
                    self.add_if_not_present(key.clone(), deltas);
                    PopResult::Requeued { key }
                }
            };
        }
    }

    /// Puts popped deltas back at the end of the queue unless the key has
    /// been queued again since (then the newer deltas win and these are
    /// dropped) — client-go's `AddIfNotPresent`, used for requeues.
    pub fn add_if_not_present(&mut self, key: String, deltas: Deltas) {
        self.populated = true;
        if self.items.contains_key(&key) || deltas.is_empty() {
            return;
        }
        self.queue.push_back(key.clone());
        self.items.insert(key, deltas);
    }

    /// After close, `pop` returns `Closed` once the queue is empty.
    pub fn close(&mut self) {
        self.closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn queue_action(&mut self, kind: DeltaType, object: DeltaObject) {
        let deltas = match self.items.get_mut(object.key()) {
            Some(d) => d,
            None => {
                let key = object.key().to_owned();
                self.queue.push_back(key.clone());
                self.items.entry(key).or_default()
            }
        };
        deltas.push(Delta { kind, object });
        dedup_tail(deltas);
    }
}

/// A relist being queued a step at a time (see [`DeltaFifo::start_replace`]).
#[derive(Debug)]
pub struct ReplaceJob {
    items: std::vec::IntoIter<ObjectRef>,
    /// Keys queued before the relist and not listed (so far).
    queued_unlisted: KeySet<String>,
    /// The queue's length before the relist: every key it queued is listed.
    queue_before: usize,
    /// Keys that were queued before the relist and are listed.
    listed_again: usize,
    /// Distinct keys listed, once every item is queued.
    listed: usize,
    /// Once every item is queued: the known keys left to check.
    known: Option<std::vec::IntoIter<Arc<str>>>,
    queued_deletions: usize,
}

/// Collapses two trailing Deleted deltas into one, keeping the one that is
/// not a tombstone (client-go `dedupDeltas` / `isDeletionDup`).
fn dedup_tail(deltas: &mut Deltas) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if deltas[n - 1].kind != DeltaType::Deleted || deltas[n - 2].kind != DeltaType::Deleted {
        return;
    }
    if deltas[n - 1].object.is_tombstone() {
        deltas.pop();
    } else {
        deltas.remove(n - 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::KubeObject;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn obj(name: &str, rv: &str) -> ObjectRef {
        Arc::new(
            KubeObject::from_value(json!({"metadata":{"name":name,"resourceVersion":rv}})).unwrap(),
        )
    }

    #[derive(Default)]
    struct Known(BTreeMap<String, ObjectRef>);
    impl KnownObjects for Known {
        fn known_keys(&self) -> Vec<Arc<str>> {
            self.0.keys().map(|k| Arc::from(k.as_str())).collect()
        }
        fn known_object(&self, key: &str) -> Option<ObjectRef> {
            self.0.get(key).cloned()
        }
    }

    type Popped = Vec<(String, Vec<(DeltaType, String, bool)>)>;

    fn pop_all(f: &mut DeltaFifo) -> Popped {
        let mut out = vec![];
        loop {
            let mut got = None;
            match f.pop(|k, d, _| {
                got = Some((
                    k.to_owned(),
                    d.iter()
                        .map(|d| {
                            (
                                d.kind,
                                d.object.object().resource_version.clone(),
                                d.object.is_tombstone(),
                            )
                        })
                        .collect(),
                ));
                ProcessResult::Done
            }) {
                PopResult::Processed { .. } => out.push(got.unwrap()),
                _ => return out,
            }
        }
    }

    #[test]
    fn deltas_accumulate_per_key_in_fifo_order() {
        // client-go: Deltas oldest->newest, keys popped in first-queued order
        let mut f = DeltaFifo::new();
        f.add(obj("a", "1"));
        f.add(obj("b", "2"));
        f.update(obj("a", "3"));
        let out = pop_all(&mut f);
        assert_eq!(out[0].0, "a");
        assert_eq!(
            out[0].1,
            vec![
                (DeltaType::Added, "1".into(), false),
                (DeltaType::Updated, "3".into(), false)
            ]
        );
        assert_eq!(out[1].0, "b");
        assert_eq!(f.pop(|_, _, _| ProcessResult::Done), PopResult::Empty);
    }

    #[test]
    fn consecutive_deletes_dedup_keeping_non_tombstone() {
        // client-go isDeletionDup: keep the one that is not DeletedFinalStateUnknown
        let mut f = DeltaFifo::new();
        let mut known = Known::default();
        known.0.insert("a".into(), obj("a", "1"));
        f.delete(obj("a", "2"), &known);
        f.replace(vec![], &known); // queues a tombstone for a (queued, missing)
        let d = f.deltas("a").unwrap();
        assert_eq!(d.len(), 1);
        assert!(!d[0].object.is_tombstone());
        assert_eq!(d[0].object.object().resource_version, "2");

        let mut f = DeltaFifo::new();
        f.replace(vec![], &known); // tombstone first
        f.delete(obj("a", "3"), &known); // then real delete: replaces the tombstone
        let d = f.deltas("a").unwrap();
        assert_eq!(d.len(), 1);
        assert!(!d[0].object.is_tombstone());
        assert_eq!(d[0].object.object().resource_version, "3");
    }

    #[test]
    fn delete_of_unknown_key_is_dropped() {
        // client-go Delete: not in items and not in knownObjects -> ignored
        let mut f = DeltaFifo::new();
        f.delete(obj("x", "1"), &Known::default());
        assert!(f.is_empty());
        f.add(obj("x", "1"));
        f.delete(obj("x", "2"), &Known::default());
        assert_eq!(f.deltas("x").unwrap().len(), 2);
    }

    #[test]
    fn replace_emits_replaced_and_tombstones_for_missing_known() {
        // client-go Replace with emitDeltaTypeReplaced + knownObjects deletion detection
        let mut f = DeltaFifo::new();
        let mut known = Known::default();
        known.0.insert("a".into(), obj("a", "1"));
        known.0.insert("gone".into(), obj("gone", "1"));
        f.replace(vec![obj("a", "5"), obj("new", "6")], &known);
        let out = pop_all(&mut f);
        let m: BTreeMap<_, _> = out.into_iter().collect();
        assert_eq!(m["a"], vec![(DeltaType::Replaced, "5".into(), false)]);
        assert_eq!(m["new"], vec![(DeltaType::Replaced, "6".into(), false)]);
        assert_eq!(m["gone"], vec![(DeltaType::Deleted, "1".into(), true)]);
    }

    #[test]
    fn has_synced_after_initial_population_popped_and_never_flips_back() {
        // client-go HasSynced: populated && initialPopulationCount == 0
        let mut f = DeltaFifo::new();
        assert!(!f.has_synced());
        f.replace(vec![obj("a", "1"), obj("b", "1")], &Known::default());
        assert!(!f.has_synced());
        let mut flags = vec![];
        f.pop(|_, _, init| {
            flags.push(init);
            ProcessResult::Done
        });
        assert!(!f.has_synced());
        f.pop(|_, _, init| {
            flags.push(init);
            ProcessResult::Done
        });
        assert!(f.has_synced());
        assert_eq!(flags, vec![true, true]);
        f.replace(vec![obj("c", "1")], &Known::default());
        assert!(f.has_synced());
        f.pop(|_, _, init| {
            assert!(!init);
            ProcessResult::Done
        });
    }

    #[test]
    fn empty_replace_syncs_immediately() {
        let mut f = DeltaFifo::new();
        f.replace(vec![], &Known::default());
        assert!(f.has_synced());
    }

    #[test]
    fn resync_only_for_keys_with_nothing_queued() {
        // client-go syncKeyLocked: skip keys that have queued deltas
        let mut f = DeltaFifo::new();
        let mut known = Known::default();
        known.0.insert("a".into(), obj("a", "1"));
        known.0.insert("b".into(), obj("b", "1"));
        f.update(obj("a", "2"));
        f.resync(&known);
        assert_eq!(
            f.deltas("a")
                .unwrap()
                .iter()
                .map(|d| d.kind)
                .collect::<Vec<_>>(),
            vec![DeltaType::Updated]
        );
        assert_eq!(
            f.deltas("b")
                .unwrap()
                .iter()
                .map(|d| d.kind)
                .collect::<Vec<_>>(),
            vec![DeltaType::Sync]
        );
    }

    #[test]
    fn requeue_puts_back_unless_requeued_meanwhile() {
        // client-go ErrRequeue -> addIfNotPresent
        let mut f = DeltaFifo::new();
        f.add(obj("a", "1"));
        f.add(obj("b", "1"));
        assert_eq!(
            f.pop(|_, _, _| ProcessResult::Requeue),
            PopResult::Requeued { key: "a".into() }
        );
        // requeued at the back, deltas intact
        assert_eq!(f.keys().collect::<Vec<_>>(), vec!["b", "a"]);
        assert_eq!(f.deltas("a").unwrap().len(), 1);
        // key queued again before the requeue: the newer deltas win
        let mut f2 = DeltaFifo::new();
        f2.add(obj("a", "1"));
        let mut stash = None;
        f2.pop(|_, d, _| {
            stash = Some(d.clone());
            ProcessResult::Done
        });
        f2.add(obj("a", "2"));
        f2.add_if_not_present("a".into(), stash.unwrap());
        let d = f2.deltas("a").unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].object.object().resource_version, "2");
    }

    #[test]
    fn close_makes_pop_report_closed_when_empty() {
        let mut f = DeltaFifo::new();
        f.add(obj("a", "1"));
        f.close();
        assert!(matches!(
            f.pop(|_, _, _| ProcessResult::Done),
            PopResult::Processed { .. }
        ));
        assert_eq!(f.pop(|_, _, _| ProcessResult::Done), PopResult::Closed);
    }

    #[derive(Debug, Clone)]
    enum FOp {
        Add(u8, u8),
        Update(u8, u8),
        Delete(u8),
        Replace(Vec<(u8, u8)>),
        Resync,
        Pop,
        PopRequeue,
    }

    fn fop() -> impl proptest::strategy::Strategy<Value = FOp> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..5, 0u8..50).prop_map(|(k, v)| FOp::Add(k, v)),
            (0u8..5, 0u8..50).prop_map(|(k, v)| FOp::Update(k, v)),
            (0u8..5).prop_map(FOp::Delete),
            proptest::collection::vec((0u8..5, 0u8..50), 0..5).prop_map(FOp::Replace),
            Just(FOp::Resync),
            Just(FOp::Pop),
            Just(FOp::PopRequeue),
        ]
    }

    fn apply(store: &mut Known, deltas: &Deltas) {
        // client-go processDeltas
        for d in deltas {
            let o = d.object.object();
            match d.kind {
                DeltaType::Deleted => {
                    store.0.remove(d.object.key());
                }
                _ => {
                    store.0.insert(o.key.clone(), o.clone());
                }
            }
        }
    }

    /// One step of the random use below, `store` standing for the
    /// informer's store downstream.
    fn run(f: &mut DeltaFifo, store: &mut Known, op: &FOp) {
        let obj_of = |k: &u8, v: &u8| obj(&format!("k{k}"), &v.to_string());
        match op {
            FOp::Add(k, v) => f.add(obj_of(k, v)),
            FOp::Update(k, v) => f.update(obj_of(k, v)),
            FOp::Delete(k) => f.delete(obj(&format!("k{k}"), "d"), store),
            FOp::Replace(items) => {
                f.replace(items.iter().map(|(k, v)| obj_of(k, v)).collect(), store)
            }
            FOp::Resync => f.resync(store),
            FOp::Pop => {
                f.pop(|_, d, _| {
                    apply(store, d);
                    ProcessResult::Done
                });
            }
            FOp::PopRequeue => {
                f.pop(|_, _, _| ProcessResult::Requeue);
            }
        }
    }

    proptest::proptest! {
        /// Invariants of client-go's DeltaFIFO under random use: the queue
        /// holds each key once and exactly the keys with deltas; no two
        /// consecutive Deleted deltas; after a final Replace with the true
        /// state and draining, the downstream store equals that state.
        #[test]
        fn fifo_invariants_and_replace_converges(ops in proptest::collection::vec(fop(), 0..40), last in proptest::collection::vec((0u8..5, 0u8..50), 0..5)) {
            let mut f = DeltaFifo::new();
            let mut store = Known::default();
            let mut synced_once = false;
            for op in &ops {
                run(&mut f, &mut store, op);
                let keys: Vec<&str> = f.keys().collect();
                let uniq: std::collections::BTreeSet<&str> = keys.iter().copied().collect();
                proptest::prop_assert_eq!(keys.len(), uniq.len());
                proptest::prop_assert_eq!(uniq.len(), f.items.len());
                for d in f.items.values() {
                    proptest::prop_assert!(!d.is_empty());
                    for w in d.windows(2) {
                        proptest::prop_assert!(!(w[0].kind == DeltaType::Deleted && w[1].kind == DeltaType::Deleted));
                    }
                }
                if f.has_synced() { synced_once = true; }
                proptest::prop_assert!(!synced_once || f.has_synced(), "HasSynced flipped back");
            }
            // dedup "last" by key like a real list
            let truth: BTreeMap<String, String> = last.iter().map(|(k, v)| (format!("k{k}"), v.to_string())).collect();
            f.replace(truth.iter().map(|(k, v)| obj(k, v)).collect(), &store);
            while let PopResult::Processed { .. } = f.pop(|_, d, _| { apply(&mut store, d); ProcessResult::Done }) {}
            proptest::prop_assert!(f.has_synced());
            let got: BTreeMap<String, String> = store.0.iter().map(|(k, o)| (k.clone(), o.resource_version.clone())).collect();
            proptest::prop_assert_eq!(got, truth);
        }

        /// A relist queued a few items at a time queues exactly what
        /// queueing it at once does (the same keys in the same order, the
        /// same deltas, tombstones and initial population), whatever was
        /// queued and known before; duplicates in the list included.
        #[test]
        fn a_relist_queued_in_steps_equals_one_queued_at_once(ops in proptest::collection::vec(fop(), 0..30), list in proptest::collection::vec((0u8..6, 0u8..50), 0..6), budget in 1usize..4) {
            let build = || {
                let (mut f, mut store) = (DeltaFifo::new(), Known::default());
                for op in &ops {
                    run(&mut f, &mut store, op);
                }
                (f, store)
            };
            let items = || list.iter().map(|(k, v)| obj(&format!("k{k}"), &v.to_string())).collect::<Vec<_>>();
            let (mut at_once, known) = build();
            at_once.replace(items(), &known);
            let (mut stepped, known) = build();
            let mut job = stepped.start_replace(items());
            let mut calls = 0;
            while !stepped.replace_step(&mut job, &mut budget.clone(), &known) {
                calls += 1;
                proptest::prop_assert!(calls < 100, "the relist never finished");
            }
            proptest::prop_assert_eq!(pop_all(&mut stepped), pop_all(&mut at_once));
        }
    }
}
