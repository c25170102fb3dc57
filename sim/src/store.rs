//! The MVCC store: one global revision counter, the current objects of every
//! resource type, and a bounded log of recent events from which watches resume
//! and past list snapshots are rebuilt. Every write stamps
//! `metadata.resourceVersion` and is broadcast to the watchers in order.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use super::managed::{self, Authors};
use super::objects::rfc3339_now;
use super::resources::{ResIdx, EVENTS, EVENTS_V1, RESOURCES};

/// A resource served as another one converted, as the apiserver serves one
/// stored object in several API versions: every write of `of` is written to
/// `view` too, at the same revision, with the same uid and resourceVersion.
struct View {
    of: ResIdx,
    view: ResIdx,
    convert: fn(&Value) -> Value,
}

/// core/v1 Events are also served as `events.k8s.io/v1` Events.
const VIEWS: &[View] = &[View {
    of: EVENTS,
    view: EVENTS_V1,
    convert: super::events::to_events_v1,
}];

/// One stored object version, serialized once at write time so that lists and
/// watch fan-out do not re-encode it for every client.
///
/// Only the encoded JSON and the small selectable part (`sel`: metadata and
/// the fields selectors and the workload read) are kept in memory; the full
/// tree is decoded on demand, which keeps 30k pods in a few hundred MB.
pub struct Obj {
    pub key: String,
    pub rev: u64,
    pub json: Bytes,
    pub sel: Value,
}

/// Fields copied into [`Obj::sel`] besides `metadata`.
const SELECTABLE: &[&[&str]] = &[
    &["status", "phase"],
    &["status", "podIP"],
    &["spec", "nodeName"],
    &["spec", "restartPolicy"],
    &["spec", "schedulerName"],
    &["spec", "serviceAccountName"],
    &["type"],
    &["reason"],
    &["involvedObject"],
    &["regarding"],
    &["reportingController"],
];

fn selectable(value: &Value) -> Value {
    // managedFields left out: nothing selects on them, and they are the
    // bulk of the metadata.
    let metadata: serde_json::Map<String, Value> = value["metadata"]
        .as_object()
        .map(|meta| {
            meta.iter()
                .filter(|(k, _)| *k != "managedFields")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut sel = serde_json::json!({"metadata": metadata});
    for path in SELECTABLE {
        let mut v = value;
        for p in *path {
            v = &v[*p];
        }
        if v.is_null() {
            continue;
        }
        let mut slot = &mut sel;
        for p in *path {
            slot = &mut slot[*p];
        }
        *slot = v.clone();
    }
    if let Some(cs) = value["status"]["containerStatuses"].as_array() {
        let ready: Vec<Value> = cs
            .iter()
            .map(|c| serde_json::json!({"ready": c["ready"]}))
            .collect();
        sel["status"]["containerStatuses"] = Value::Array(ready);
    }
    sel
}

impl std::fmt::Debug for Obj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Obj({} @{})", self.key, self.rev)
    }
}

impl Obj {
    fn new(key: String, rev: u64, value: Value) -> Obj {
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Obj {
            key,
            rev,
            sel: selectable(&value),
            json,
        }
    }

    /// The full object, decoded from its JSON.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// A copy of this object carrying another resourceVersion (the etcd3
    /// watcher stamps deleted and no-longer-matching objects with the
    /// revision of the event that removed them).
    pub fn restamped(&self, prefix: &str, rev: u64) -> Obj {
        let mut value = self.value();
        value["metadata"]["resourceVersion"] = Value::String(format!("{prefix}{rev}"));
        Obj::new(self.key.clone(), rev, value)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change. `obj` is the new state (for deletes: the last state
/// restamped with the deletion revision); `prev` the state before.
#[derive(Debug)]
pub struct Event {
    pub rev: u64,
    pub res: ResIdx,
    pub etype: EventType,
    pub obj: Arc<Obj>,
    pub prev: Option<Arc<Obj>>,
    /// The JSON watch line `{"type":…,"object":…}\n`, encoded once and
    /// shared by every watcher that sends the event unchanged.
    pub line: Bytes,
}

/// A JSON watch event line for an object.
pub fn event_line(etype: EventType, obj: &Obj) -> Bytes {
    let mut b = Vec::with_capacity(obj.json.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(etype.as_str().as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(&obj.json);
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

/// What watchers receive, in commit order.
#[derive(Debug, Clone)]
pub enum Msg {
    Event(Arc<Event>),
    /// History was compacted past every open watch: answer 410 and close.
    Compacted,
    /// Close every watch cleanly (fault `drop-watches`).
    DropWatches,
    /// Abort every connection (fault `restart`).
    Restart,
    /// The watches of one resource answer 410 Expired and close (fault
    /// `expire-watches` with a `resource`): one watch among many relists.
    Expire(super::resources::ResIdx),
    /// The watches of one resource end cleanly: the resource is no longer
    /// served (its CRD was uninstalled).
    Close(super::resources::ResIdx),
}

/// The requested revision is no longer available.
#[derive(Debug, Clone, Copy)]
pub struct Expired {
    pub requested: u64,
    pub oldest: u64,
}

struct State {
    rev: u64,
    /// Oldest revision a watch may start from / a snapshot may be rebuilt at.
    compacted: u64,
    objects: Vec<BTreeMap<String, Arc<Obj>>>,
    log: VecDeque<Arc<Event>>,
    uid_counter: u64,
}

pub struct Store {
    state: Mutex<State>,
    tx: broadcast::Sender<Msg>,
    prefix: String,
    log_cap: usize,
    uid_seed: u64,
    /// Keep `metadata.managedFields` (`SimConfig::managed_fields`).
    managed_fields: bool,
    pub events_generated: AtomicU64,
}

/// How a watch begins.
pub enum WatchStart {
    /// Synthetic ADDED events for the current state, then changes.
    Now,
    /// Changes after this revision.
    After(u64),
}

pub struct Subscription {
    /// Revision the watch is positioned at once `initial`/`replay` are sent.
    pub rev: u64,
    pub initial: Vec<Arc<Obj>>,
    pub replay: Vec<Arc<Event>>,
    pub rx: broadcast::Receiver<Msg>,
}

pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl Store {
    pub fn new(
        prefix: String,
        log_cap: usize,
        watch_buffer: usize,
        uid_seed: u64,
        managed_fields: bool,
    ) -> Store {
        let (tx, _) = broadcast::channel(watch_buffer.max(16));
        Store {
            state: Mutex::new(State {
                rev: 1,
                compacted: 1,
                objects: RESOURCES.iter().map(|_| BTreeMap::new()).collect(),
                log: VecDeque::new(),
                uid_counter: 0,
            }),
            tx,
            prefix,
            log_cap: log_cap.max(16),
            uid_seed,
            managed_fields,
            events_generated: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every write
        // is applied at once), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn rv_string(&self, rev: u64) -> String {
        format!("{}{}", self.prefix, rev)
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Parse a client-supplied resourceVersion. `None` when it is not one of ours.
    pub fn parse_rv(&self, rv: &str) -> Option<u64> {
        rv.strip_prefix(self.prefix.as_str())?.parse().ok()
    }

    pub fn revision(&self) -> u64 {
        self.lock().rev
    }

    pub fn oldest(&self) -> u64 {
        self.lock().compacted
    }

    pub fn count(&self, res: ResIdx) -> usize {
        self.lock().objects[res].len()
    }

    /// The keys of every object of a resource, in key order.
    pub fn keys(&self, res: ResIdx) -> Vec<String> {
        self.lock().objects[res].keys().cloned().collect()
    }

    pub fn get(&self, res: ResIdx, key: &str) -> Option<Arc<Obj>> {
        self.lock().objects[res].get(key).cloned()
    }

    /// Visit, in key order, the objects of a resource as they were at `at`
    /// (current when `None`), starting after key `after`, until `visit`
    /// returns false. Returns the revision the objects are from.
    pub fn snapshot(
        &self,
        res: ResIdx,
        namespace: Option<&str>,
        at: Option<u64>,
        after: Option<&str>,
        visit: &mut dyn FnMut(&Arc<Obj>) -> bool,
    ) -> Result<u64, Expired> {
        let st = self.lock();
        let at = at.unwrap_or(st.rev);
        if at >= st.rev {
            for obj in scoped_iter(&st.objects[res], namespace, after) {
                if !visit(obj) {
                    break;
                }
            }
            return Ok(st.rev);
        }
        if at < st.compacted {
            return Err(Expired {
                requested: at,
                oldest: st.compacted,
            });
        }
        // Undo the events after `at`, newest first; the last undo of a key wins.
        let mut undo: BTreeMap<String, Option<Arc<Obj>>> = BTreeMap::new();
        for e in st.log.iter().rev() {
            if e.rev <= at {
                break;
            }
            if e.res != res {
                continue;
            }
            undo.insert(e.obj.key.clone(), e.prev.clone());
        }
        let mut view: BTreeMap<String, Arc<Obj>> = scoped(&st.objects[res], namespace, after)
            .into_iter()
            .map(|o| (o.key.clone(), o))
            .collect();
        for (key, prev) in undo {
            if !in_scope(&key, namespace, after) {
                continue;
            }
            match prev {
                Some(o) => view.insert(key, o),
                None => view.remove(&key),
            };
        }
        for obj in view.values() {
            if !visit(obj) {
                break;
            }
        }
        Ok(at)
    }

    /// (revision, object count, DESIGN §4 digest) of one resource: the
    /// store's keys are already in byte order.
    pub fn digest(&self, res: ResIdx) -> (u64, usize, String) {
        let st = self.lock();
        let rvs: Vec<String> = st.objects[res]
            .values()
            .map(|obj| self.rv_string(obj.rev))
            .collect();
        let digest = deltascope_facts::digest_of_sorted(
            st.objects[res]
                .keys()
                .map(String::as_str)
                .zip(rvs.iter().map(String::as_str)),
        );
        (st.rev, st.objects[res].len(), digest)
    }

    pub fn subscribe(
        &self,
        res: ResIdx,
        start: WatchStart,
        namespace: Option<&str>,
    ) -> Result<Subscription, Expired> {
        let st = self.lock();
        let rx = self.tx.subscribe();
        match start {
            WatchStart::Now => Ok(Subscription {
                rev: st.rev,
                initial: scoped(&st.objects[res], namespace, None),
                replay: Vec::new(),
                rx,
            }),
            WatchStart::After(from) => {
                if from < st.compacted {
                    return Err(Expired {
                        requested: from,
                        oldest: st.compacted,
                    });
                }
                let replay = st
                    .log
                    .iter()
                    .filter(|e| e.rev > from && e.res == res)
                    .cloned()
                    .collect();
                Ok(Subscription {
                    rev: st.rev.max(from),
                    initial: Vec::new(),
                    replay,
                    rx,
                })
            }
        }
    }

    /// Create an object, written by `by` (its managedFields say so);
    /// metadata.name/namespace must be set. Replaces an existing object of
    /// the same key (as an update).
    pub fn create<'a>(
        &self,
        res: ResIdx,
        mut value: Value,
        by: impl Into<Authors<'a>>,
    ) -> Arc<Obj> {
        let by = by.into();
        let ns = value["metadata"]["namespace"].as_str().map(str::to_string);
        let name = value["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = key_of(ns.as_deref(), &name);
        let mut st = self.lock();
        if st.objects[res].contains_key(&key) {
            drop(st);
            return self
                .update(res, &key, by, |v| *v = value)
                .unwrap_or_else(|| Arc::new(Obj::new(key, 0, Value::Null)));
        }
        st.rev += 1;
        st.uid_counter += 1;
        let rev = st.rev;
        let meta = &mut value["metadata"];
        meta["uid"] = Value::String(uid(self.uid_seed, st.uid_counter));
        meta["resourceVersion"] = Value::String(self.rv_string(rev));
        if meta.get("creationTimestamp").is_none_or(Value::is_null) {
            meta["creationTimestamp"] = Value::String(rfc3339_now());
        }
        meta["generation"] = Value::from(1);
        if self.managed_fields {
            managed::on_create(&mut value, &by, &RESOURCES[res].api_version());
        }
        let obj = Arc::new(Obj::new(key.clone(), rev, value));
        self.put(&mut st, res, obj.clone(), EventType::Added);
        obj
    }

    /// Stores `obj` (or removes it for a deletion), commits its event and
    /// writes the views of it at the same revision.
    fn put(&self, st: &mut State, res: ResIdx, obj: Arc<Obj>, etype: EventType) {
        let prev = match etype {
            EventType::Deleted => st.objects[res].remove(&obj.key),
            _ => st.objects[res].insert(obj.key.clone(), obj.clone()),
        };
        let value = VIEWS.iter().any(|v| v.of == res).then(|| obj.value());
        self.commit(st, res, etype, obj.clone(), prev);
        for view in VIEWS.iter().filter(|v| v.of == res) {
            if let Some(value) = &value {
                let converted = Obj::new(obj.key.clone(), obj.rev, (view.convert)(value));
                self.put(st, view.view, Arc::new(converted), etype);
            }
        }
    }

    /// Change an object in place, written by `by` (its managedFields follow);
    /// bumps generation when its spec changes.
    pub fn update<'a>(
        &self,
        res: ResIdx,
        key: &str,
        by: impl Into<Authors<'a>>,
        f: impl FnOnce(&mut Value),
    ) -> Option<Arc<Obj>> {
        let mut st = self.lock();
        let prev = st.objects[res].get(key)?.clone();
        let prev_value = prev.value();
        let mut value = prev_value.clone();
        // The writer changes the object, the store its managedFields.
        let entries = value["metadata"]
            .as_object_mut()
            .and_then(|meta| meta.remove("managedFields"));
        f(&mut value);
        if let (Some(meta), Some(entries)) = (value["metadata"].as_object_mut(), entries) {
            meta.insert("managedFields".to_string(), entries);
        }
        // Identity fields are the store's, not the caller's.
        value["metadata"]["uid"] = prev_value["metadata"]["uid"].clone();
        value["metadata"]["creationTimestamp"] =
            prev_value["metadata"]["creationTimestamp"].clone();
        if value == prev_value {
            return Some(prev);
        }
        if value.get("spec") != prev_value.get("spec") {
            if let Some(g) = prev_value["metadata"]["generation"].as_i64() {
                value["metadata"]["generation"] = Value::from(g + 1);
            }
        }
        if self.managed_fields {
            managed::on_update(
                &prev_value,
                &mut value,
                &by.into(),
                &RESOURCES[res].api_version(),
            );
        }
        st.rev += 1;
        let rev = st.rev;
        value["metadata"]["resourceVersion"] = Value::String(self.rv_string(rev));
        let obj = Arc::new(Obj::new(key.to_string(), rev, value));
        self.put(&mut st, res, obj.clone(), EventType::Modified);
        Some(obj)
    }

    pub fn delete(&self, res: ResIdx, key: &str) -> Option<Arc<Obj>> {
        let mut st = self.lock();
        let prev = st.objects[res].get(key)?.clone();
        st.rev += 1;
        let rev = st.rev;
        let obj = Arc::new(prev.restamped(&self.prefix, rev));
        self.put(&mut st, res, obj.clone(), EventType::Deleted);
        Some(obj)
    }

    fn commit(
        &self,
        st: &mut State,
        res: ResIdx,
        etype: EventType,
        obj: Arc<Obj>,
        prev: Option<Arc<Obj>>,
    ) {
        let event = Arc::new(Event {
            line: event_line(etype, &obj),
            rev: st.rev,
            res,
            etype,
            obj,
            prev,
        });
        st.log.push_back(event.clone());
        while st.log.len() > self.log_cap {
            if let Some(old) = st.log.pop_front() {
                st.compacted = old.rev;
            }
        }
        self.events_generated.fetch_add(1, Ordering::Relaxed);
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(Msg::Event(event));
    }

    /// Compact all history: every revision before now becomes unavailable,
    /// open watches are told 410 and closed. Returns the new oldest revision.
    pub fn compact(&self) -> u64 {
        let mut st = self.lock();
        st.rev += 1;
        st.compacted = st.rev;
        st.log.clear();
        let _ = self.tx.send(Msg::Compacted);
        st.rev
    }

    /// Send a control message to every open watch, in order with events.
    pub fn broadcast(&self, msg: Msg) {
        let _st = self.lock();
        let _ = self.tx.send(msg);
    }

    /// `(resource, key, revision)` of every object now, and a receiver of
    /// every later message, taken under one lock so nothing falls between
    /// them (for [`super::Sim::record_versions`]).
    pub fn subscribe_everything(&self) -> (Vec<(ResIdx, String, u64)>, broadcast::Receiver<Msg>) {
        let st = self.lock();
        let rx = self.tx.subscribe();
        let now = st
            .objects
            .iter()
            .enumerate()
            .flat_map(|(res, objs)| objs.values().map(move |o| (res, o.key.clone(), o.rev)))
            .collect();
        (now, rx)
    }
}

fn in_scope(key: &str, namespace: Option<&str>, after: Option<&str>) -> bool {
    if let Some(after) = after {
        if key <= after {
            return false;
        }
    }
    match namespace {
        Some(ns) => key
            .strip_prefix(ns)
            .is_some_and(|rest| rest.starts_with('/')),
        None => true,
    }
}

fn scoped_iter<'a>(
    map: &'a BTreeMap<String, Arc<Obj>>,
    namespace: Option<&'a str>,
    after: Option<&'a str>,
) -> impl Iterator<Item = &'a Arc<Obj>> + 'a {
    use std::ops::Bound;
    let lower = match (namespace, after) {
        (_, Some(a)) => Bound::Excluded(a.to_string()),
        (Some(ns), None) => Bound::Included(format!("{ns}/")),
        (None, None) => Bound::Unbounded,
    };
    map.range((lower, Bound::Unbounded))
        .take_while(move |(k, _)| {
            namespace.is_none_or(|ns| k.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
        })
        .map(|(_, v)| v)
}

fn scoped(
    map: &BTreeMap<String, Arc<Obj>>,
    namespace: Option<&str>,
    after: Option<&str>,
) -> Vec<Arc<Obj>> {
    use std::ops::Bound;
    let lower = match (namespace, after) {
        (_, Some(a)) => Bound::Excluded(a.to_string()),
        (Some(ns), None) => Bound::Included(format!("{ns}/")),
        (None, None) => Bound::Unbounded,
    };
    map.range((lower, Bound::Unbounded))
        .take_while(|(k, _)| {
            namespace.is_none_or(|ns| k.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
        })
        .filter(|(k, _)| in_scope(k, namespace, after))
        .map(|(_, v)| v.clone())
        .collect()
}

/// A deterministic, UUID-shaped uid.
fn uid(seed: u64, n: u64) -> String {
    let a = splitmix(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let b = splitmix(a ^ n);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        (a as u16) & 0xfff,
        ((b >> 48) as u16) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

/// SplitMix64's finaliser: the sim's seeded hash (uids, log lines).
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
