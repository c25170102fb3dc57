//! What the store keeps and sends: one stored object version ([`Obj`],
//! encoded once at write time, with the small part selectors read), one
//! committed change ([`Event`], its watch line encoded once), and what
//! watchers receive in commit order ([`Msg`]).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::resources::ResIdx;

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
    pub(super) fn new(key: String, rev: u64, value: Value) -> Obj {
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
    Expire(ResIdx),
    /// The watches of one resource end cleanly: the resource is no longer
    /// served (its CRD was uninstalled).
    Close(ResIdx),
}

/// The requested revision is no longer available.
#[derive(Debug, Clone, Copy)]
pub struct Expired {
    pub requested: u64,
    pub oldest: u64,
}

/// `namespace/name`, or `name` for a cluster-scoped object: an object's key.
pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}
