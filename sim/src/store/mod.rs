//! The MVCC store: one global revision counter, the catalogue of resource
//! types, the current objects of every type, and a bounded log of recent
//! events from which watches resume and past list snapshots are rebuilt.
//! Every write stamps `metadata.resourceVersion` and is broadcast to the
//! watchers in order.
//!
//! Besides that log, a much longer and lighter one of keys and revisions
//! only (`past_digest`) answers the digest of a resource at a past
//! revision. The `kube-system` Namespace's uid is the cluster's identity:
//! random for every store (`uid::random_uid`), the other uids seeded.
//!
//! The files: `object` (what is stored and sent: objects, events, watch
//! messages), `scope` (which objects a read sees, now or at a past
//! revision), `past_digest` (the keys' history, digests at a past
//! revision), `uid` (the seeded uids and the cluster's random one).

mod object;
mod past_digest;
mod scope;
mod uid;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::managed::{self, Authors};
use crate::objects::rfc3339_now;
use crate::resources::{Catalogue, ResIdx, ResourceType, EVENTS, EVENTS_V1, NAMESPACES, RESOURCES};

pub use object::{event_line, key_of, Event, EventType, Expired, Msg, Obj};
pub use past_digest::PastDigestError;
pub(crate) use uid::random_uid;
pub use uid::{hash_parts, splitmix};

/// The Namespace whose uid names the cluster (as `kubectl` and recorders
/// read it: `GET /api/v1/namespaces/kube-system`).
const IDENTITY_NAMESPACE: &str = "kube-system";

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
    convert: crate::events::to_events_v1,
}];

struct State {
    rev: u64,
    /// Oldest revision a watch may start from / a snapshot may be rebuilt at.
    compacted: u64,
    /// The resource types; `objects` has a map for each position.
    catalogue: Catalogue,
    objects: Vec<BTreeMap<String, Arc<Obj>>>,
    log: VecDeque<Arc<Event>>,
    /// Every change's key and revisions, much further back than `log`.
    keys: past_digest::KeyHistory,
    uid_counter: u64,
}

pub struct Store {
    state: Mutex<State>,
    tx: broadcast::Sender<Msg>,
    prefix: String,
    log_cap: usize,
    uid_seed: u64,
    /// The `kube-system` Namespace's uid (see the module docs).
    cluster_uid: String,
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

/// How a [`Store`] is made: `SimConfig`'s share of it.
pub struct StoreConfig {
    /// Prepended to every resourceVersion.
    pub prefix: String,
    /// Events the watch log keeps (`SimConfig::history`).
    pub log_cap: usize,
    /// Changes the keys' history keeps (`SimConfig::digest_history`).
    pub key_history: usize,
    /// Messages a watcher may fall behind the broadcast.
    pub watch_buffer: usize,
    pub uid_seed: u64,
    /// The cluster's identity: the `kube-system` Namespace's uid.
    pub cluster_uid: String,
    pub managed_fields: bool,
}

impl Store {
    pub fn new(config: StoreConfig) -> Store {
        let StoreConfig {
            prefix,
            log_cap,
            key_history,
            watch_buffer,
            uid_seed,
            cluster_uid,
            managed_fields,
        } = config;
        let (tx, _) = broadcast::channel(watch_buffer.max(16));
        Store {
            state: Mutex::new(State {
                rev: 1,
                compacted: 1,
                objects: RESOURCES.iter().map(|_| BTreeMap::new()).collect(),
                catalogue: Catalogue::default(),
                log: VecDeque::new(),
                keys: past_digest::KeyHistory::new(key_history, 1),
                uid_counter: 0,
            }),
            tx,
            prefix,
            log_cap: log_cap.max(16),
            uid_seed,
            cluster_uid,
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

    /// The oldest revision a past digest can be given at
    /// ([`Store::digest_at`]).
    pub fn oldest_digest(&self) -> u64 {
        self.lock().keys.oldest()
    }

    /// The cluster's identity: the `kube-system` Namespace's uid.
    pub fn cluster_uid(&self) -> &str {
        &self.cluster_uid
    }

    // ---- the catalogue of resource types ---------------------------------

    /// The resource at `res`, served or not.
    pub fn resource(&self, res: ResIdx) -> Option<Arc<ResourceType>> {
        self.lock().catalogue.get(res).cloned()
    }

    /// The resource served at `/api{s}/{group}/{version}/{plural}`.
    pub fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<(ResIdx, Arc<ResourceType>)> {
        let st = self.lock();
        let res = st.catalogue.find(group, version, plural)?;
        Some((res, st.catalogue.get(res)?.clone()))
    }

    /// `pods`, `deployments.apps`, `deploy` → the resource, served or not.
    pub fn by_name(&self, name: &str) -> Option<(ResIdx, Arc<ResourceType>)> {
        let st = self.lock();
        let res = st.catalogue.by_name(name)?;
        Some((res, st.catalogue.get(res)?.clone()))
    }

    /// Is `res` served now (see [`Catalogue::serves`])?
    pub fn serves(&self, res: ResIdx) -> bool {
        self.lock().catalogue.serves(res)
    }

    /// The resources served now, in discovery order.
    pub fn served(&self) -> Vec<Arc<ResourceType>> {
        self.lock().catalogue.served()
    }

    /// Every resource's qualified name and position, served or not.
    pub fn resource_names(&self) -> Vec<(ResIdx, String)> {
        self.lock().catalogue.names().collect()
    }

    /// Serves `def`, a CRD's resource, with no objects yet, and returns its
    /// position; `Err` with the position of the one served under that name.
    pub fn define(&self, def: ResourceType) -> Result<ResIdx, ResIdx> {
        let mut st = self.lock();
        if let Some(res) = st.catalogue.by_qualified(&def.qualified()) {
            if st.catalogue.serves(res) {
                return Err(res);
            }
        }
        let res = st.catalogue.define(def);
        let len = st.catalogue.len();
        st.objects.resize_with(len, BTreeMap::new);
        Ok(res)
    }

    /// Starts or stops serving `res` (its CRD was created or deleted).
    pub fn set_served(&self, res: ResIdx, served: bool) {
        self.lock().catalogue.set_served(res, served);
    }

    /// The position of the resource called `plural.group`, served or not.
    pub fn position_of(&self, qualified: &str) -> Option<ResIdx> {
        self.lock().catalogue.by_qualified(qualified)
    }

    // ---- objects ---------------------------------------------------------

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
            for obj in scope::scoped_iter(&st.objects[res], namespace, after) {
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
        let view = scope::past(&st.objects[res], &st.log, res, at, namespace, after);
        for obj in view.values() {
            if !visit(obj) {
                break;
            }
        }
        Ok(at)
    }

    /// (revision, object count, digest) of one resource: the digest
    /// (`deltascope_facts::digest`) the tests compare with a client's; the
    /// store's keys are already in the byte order it needs.
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

    /// (object count, digest) of one resource as it was at revision `at`:
    /// the objects that existed then, with their resourceVersions then.
    /// At the current revision it is [`Store::digest`]'s.
    pub fn digest_at(&self, res: ResIdx, at: u64) -> Result<(usize, String), PastDigestError> {
        let st = self.lock();
        if at > st.rev {
            return Err(PastDigestError::Newer {
                requested: at,
                current: st.rev,
            });
        }
        if at < st.keys.oldest() {
            return Err(PastDigestError::Forgotten {
                requested: at,
                oldest: st.keys.oldest(),
            });
        }
        let now = st.objects[res].iter().map(|(k, o)| (k.as_str(), o.rev));
        let state = past_digest::state_at(now, st.keys.before(res, at));
        let rvs: Vec<String> = state.iter().map(|(_, rev)| self.rv_string(*rev)).collect();
        let digest = deltascope_facts::digest_of_sorted(
            state
                .iter()
                .map(|(key, _)| *key)
                .zip(rvs.iter().map(String::as_str)),
        );
        Ok((state.len(), digest))
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
                initial: scope::scoped(&st.objects[res], namespace, None),
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
        meta["uid"] = Value::String(if res == NAMESPACES && key == IDENTITY_NAMESPACE {
            self.cluster_uid.clone()
        } else {
            uid::uid(self.uid_seed, st.uid_counter)
        });
        meta["resourceVersion"] = Value::String(self.rv_string(rev));
        if meta.get("creationTimestamp").is_none_or(Value::is_null) {
            meta["creationTimestamp"] = Value::String(rfc3339_now());
        }
        meta["generation"] = Value::from(1);
        if self.managed_fields {
            let api_version = st.catalogue.get(res).map(|r| r.api_version());
            managed::on_create(&mut value, &by, api_version.as_deref().unwrap_or_default());
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
            let api_version = st.catalogue.get(res).map(|r| r.api_version());
            managed::on_update(
                &prev_value,
                &mut value,
                &by.into(),
                api_version.as_deref().unwrap_or_default(),
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
        st.keys
            .push(st.rev, res, &obj.key, prev.as_ref().map(|p| p.rev));
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

    /// Compact all history: every revision before now becomes unavailable
    /// to watches and lists (the watch log is emptied), open watches are
    /// told 410 and closed. The keys' history for past digests is kept.
    /// Returns the new oldest revision.
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
    /// them (for [`crate::Sim::record_versions`]).
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
