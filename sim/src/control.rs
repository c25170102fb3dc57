//! The `/_sim/*` control routes that steer the cluster as a whole: the churn
//! rate (`/_sim/churn`), the number of pods (`/_sim/scale`), fault injection
//! (`/_sim/fault`: drop-watches, compact, throttle, error, garbage-line,
//! restart, expire-watches, forbid) and the counters (`/_sim/stats`, with
//! the cluster's identity). Every answer says what was done. Digests
//! (`digest`), CRDs (`crd`), logs' rate (`logs`), patches and events' TTL
//! (`patch`) have routers of their own.

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use crate::cluster::{Inner, Shared};
use crate::faults::{Aim, Aimed};
use crate::status::{answer, parse_body, ApiError};
use crate::store::Msg;

pub const FAULT_KINDS: &[&str] = &[
    "drop-watches",
    "compact",
    "throttle",
    "error",
    "garbage-line",
    "restart",
    "expire-watches",
    "forbid",
];

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/churn", post(churn))
        .route("/_sim/scale", post(scale))
        .route("/_sim/fault", post(fault))
        .route("/_sim/stats", get(stats))
        .with_state(inner)
}

#[derive(Deserialize)]
struct ChurnBody {
    events_per_sec: f64,
}

async fn churn(State(inner): State<Shared>, body: Bytes) -> Response {
    let b: ChurnBody = match parse_body(&body, r#"{"events_per_sec": 20}"#) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if !b.events_per_sec.is_finite() || b.events_per_sec < 0.0 || b.events_per_sec > 100_000.0 {
        return ApiError::bad_request(
            "events_per_sec must be between 0 and 100000 (0 stops the workload)",
        )
        .into_response();
    }
    let previous = inner.churn.send_replace(b.events_per_sec);
    tracing::info!(previous, now = b.events_per_sec, "churn rate changed");
    answer(json!({"churn": {"events_per_sec": b.events_per_sec, "previous": previous}}))
}

#[derive(Deserialize)]
struct ScaleBody {
    pods: usize,
}

async fn scale(State(inner): State<Shared>, body: Bytes) -> Response {
    let b: ScaleBody = match parse_body(&body, r#"{"pods": 500}"#) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if b.pods > 200_000 {
        return ApiError::bad_request("pods must be at most 200000").into_response();
    }
    let store = inner.store.clone();
    let mut wl = inner.workload.lock().await;
    let report = wl.scale_to(&store, b.pods);
    tracing::info!(?report, "scaled");
    answer(json!({"scale": report, "resourceVersion": store.rv_string(store.revision())}))
}

#[derive(Deserialize)]
struct FaultBody {
    kind: String,
    #[serde(default)]
    count: Option<u64>,
    /// `expire-watches` and `forbid` act on one resource (`pods`,
    /// `deployments.apps`); `throttle` and `error` do when given one.
    #[serde(default)]
    resource: Option<String>,
    /// `throttle` and `error` act on the requests of exactly this path
    /// when given one (`/api/v1`).
    #[serde(default)]
    path: Option<String>,
}

/// What a fault is aimed at, and its name in the fault's words (the
/// resource's qualified name, or the path).
type Target = (Aim, String);

async fn fault(State(inner): State<Shared>, body: Bytes) -> Response {
    match inject(&inner, &body) {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

fn inject(inner: &Inner, body: &[u8]) -> Result<Response, ApiError> {
    let example = r#"{"kind": "throttle", "count": 3}"#;
    let b: FaultBody = parse_body(body, example).map_err(|mut e| {
        e.message = format!("{}; valid kinds: {}", e.message, FAULT_KINDS.join(", "));
        e
    })?;
    let count = b.count.unwrap_or(1);
    let target = match (b.kind.as_str(), b.resource.as_deref(), b.path.as_deref()) {
        (_, Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "a fault is aimed at a \"resource\" or at a \"path\", not both",
            ))
        }
        ("expire-watches" | "forbid", None, _) => {
            return Err(ApiError::bad_request(format!(
                "fault {:?} needs a \"resource\", e.g. {{\"kind\": \"forbid\", \"resource\": \"pods\"}}",
                b.kind
            )))
        }
        (kind, None, Some(path)) => {
            if !matches!(kind, "throttle" | "error") || !path.starts_with('/') {
                return Err(ApiError::bad_request(format!(
                    "fault {kind:?} with \"path\" {path:?}: only throttle and error take one, an API path such as /api/v1"
                )));
            }
            Some((Aim::Path(path.to_owned()), path.to_owned()))
        }
        (_, Some(name), None) => match inner.store.by_name(name) {
            Some((res, r)) => Some((Aim::Resource(res), r.qualified())),
            None => return Err(ApiError::bad_request(format!("unknown resource {name:?}"))),
        },
        (_, None, None) => None,
    };
    let effect = match (b.kind.as_str(), target) {
        ("throttle" | "error" | "forbid", target) => aim(inner, &b.kind, target, count),
        ("expire-watches", Some((Aim::Resource(res), name))) => {
            inner.store.broadcast(Msg::Expire(res));
            format!("the open watches of {name} get 410 Expired and close")
        }
        (kind, _) => whole_cluster(inner, kind, count)?,
    };
    tracing::info!(kind = %b.kind, %effect, "fault injected");
    Ok(answer(
        json!({"fault": b.kind, "count": count, "effect": effect}),
    ))
}

/// `throttle`, `error` (on every API request, or one resource's or path's)
/// and `forbid` (one resource's): what they will do.
fn aim(inner: &Inner, kind: &str, target: Option<Target>, count: u64) -> String {
    let (aimed, answered) = match kind {
        "throttle" => (Aimed::Throttle, "429 Too Many Requests with Retry-After: 1"),
        "error" => (Aimed::Error, "500 Internal Server Error"),
        _ => (Aimed::Forbid, "403 Forbidden"),
    };
    match target {
        Some((aim, name)) => {
            inner.faults.aim(aimed, aim, count);
            format!("the next {count} requests of {name} get {answered}")
        }
        None => {
            let counter = match aimed {
                Aimed::Throttle => &inner.faults.throttle,
                _ => &inner.faults.errors,
            };
            counter.fetch_add(count, Ordering::SeqCst);
            format!("the next {count} API requests get {answered}")
        }
    }
}

/// The faults that hit every watch or connection: what they did.
fn whole_cluster(inner: &Inner, kind: &str, count: u64) -> Result<String, ApiError> {
    let watches = inner.open_watches.load(Ordering::SeqCst);
    Ok(match kind {
        "drop-watches" => {
            inner.store.broadcast(Msg::DropWatches);
            format!("closed {watches} open watches")
        }
        "compact" => {
            let oldest = inner.store.compact();
            format!(
                "compacted history: resourceVersions before {} are gone; {watches} open watches get 410 Expired",
                inner.store.rv_string(oldest)
            )
        }
        "garbage-line" => {
            inner
                .faults
                .garbage_lines
                .fetch_add(count, Ordering::SeqCst);
            format!("the next {count} watch event lines are not JSON (each closes its watch)")
        }
        "restart" => {
            inner.store.broadcast(Msg::Restart);
            inner.restart.send_modify(|n| *n += 1);
            format!("dropped all connections ({watches} watches); resourceVersions continue")
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown fault kind {other:?}; valid kinds: {}",
                FAULT_KINDS.join(", ")
            )))
        }
    })
}

async fn stats(State(inner): State<Shared>) -> Response {
    let mut objects = serde_json::Map::new();
    for (res, name) in inner.store.resource_names() {
        objects.insert(name, json!(inner.store.count(res)));
    }
    let rev = inner.store.revision();
    answer(json!({
        "revision": rev,
        "resourceVersion": inner.store.rv_string(rev),
        "oldestResourceVersion": inner.store.rv_string(inner.store.oldest()),
        "oldestDigestResourceVersion": inner.store.rv_string(inner.store.oldest_digest()),
        "clusterUid": inner.store.cluster_uid(),
        "objects": objects,
        "openWatches": inner.open_watches.load(Ordering::SeqCst),
        "eventsGenerated": inner.store.events_generated.load(Ordering::Relaxed),
        "churnPerSec": *inner.churn.borrow(),
    }))
}
