//! The reflector's sans-IO interface: what the driver tells it ([`Input`]),
//! what it asks the driver to do ([`Action`]) and what it hands the informer
//! for the DeltaFIFO ([`StoreOp`]). Nothing here knows about the states.

use crate::object::ObjectRef;

/// Identifies one HTTP request the reflector asked for; unique across all
/// informers of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

static NEXT_REQUEST_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A fresh id from one process-wide counter, so a driver can keep the
/// requests of all its informers and log followers in one map.
pub fn next_request_id() -> RequestId {
    RequestId(NEXT_REQUEST_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// Whether a request is a LIST (one response body) or a WATCH (a stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    List,
    Watch,
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// GET `path_and_query` with this `Accept` header (`None`: the
    /// client's default); report headers, body chunks and the end (or a
    /// failure) with this id.
    Send {
        id: RequestId,
        kind: RequestKind,
        path_and_query: String,
        accept: Option<&'static str>,
    },
    /// Abort an in-flight request; later inputs for it are ignored anyway.
    Cancel { id: RequestId },
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    ResponseStarted {
        id: RequestId,
        status: u16,
        retry_after_secs: Option<u64>,
    },
    BodyChunk {
        id: RequestId,
        bytes: &'a [u8],
    },
    BodyEnd {
        id: RequestId,
    },
    Failed {
        id: RequestId,
        message: String,
    },
    Tick,
}

/// What the informer should do to the DeltaFIFO.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    Replace {
        items: Vec<ObjectRef>,
        resource_version: String,
    },
    Add(ObjectRef),
    Update(ObjectRef),
    Delete(ObjectRef),
    Resync,
    /// A resumed watch ([`super::Reflector::resume`]) has delivered
    /// everything the server had since the stored resourceVersion: the
    /// store restored from the browser's database is current again.
    CaughtUp,
}
