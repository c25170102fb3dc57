//! Fault injection and the `/_sim/*` control API: churn rate, scale, faults
//! (drop-watches, compact, throttle, error, garbage-line, restart), digest
//! and stats; `/_sim/crd` is routed here and lives in `crd`. Every answer says what was done.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::resources::{by_name, ResIdx, RESOURCES};
use super::status::{json_response, ApiError};
use super::store::Msg;
use super::Inner;

/// Pending one-shot faults, consumed by the requests and watches they hit.
#[derive(Debug, Default)]
pub struct Faults {
    pub throttle: AtomicU64,
    pub errors: AtomicU64,
    pub garbage_lines: AtomicU64,
    /// Faults aimed at one resource: `forbid` (403, as if RBAC took its
    /// permission away and gave it back), and `throttle` or `error` given a
    /// `"resource"` (429 or 500 for that resource's requests only, so a
    /// test can fault the view it watches and not a request beside it).
    targeted: std::sync::Mutex<HashMap<(Aimed, ResIdx), u64>>,
}

/// What a fault aimed at one resource answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aimed {
    Forbid,
    Throttle,
    Error,
}

impl Faults {
    pub fn garbage_pending(&self) -> bool {
        self.garbage_lines.load(Ordering::Relaxed) > 0
    }

    /// The fault aimed at `res` that its next request meets, if any (and
    /// one fewer pending). Throttling is answered before an error, an error
    /// before a 403, as the apiserver's filters would.
    pub fn take_aimed(&self, res: ResIdx) -> Option<Aimed> {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        [Aimed::Throttle, Aimed::Error, Aimed::Forbid]
            .into_iter()
            .find(|aimed| match targeted.get_mut(&(*aimed, res)) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
    }

    fn aim(&self, aimed: Aimed, res: ResIdx, count: u64) {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        *targeted.entry((aimed, res)).or_default() += count;
    }
}

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

type Shared = Arc<Inner>;

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/churn", post(churn))
        .route("/_sim/scale", post(scale))
        .route("/_sim/fault", post(fault))
        .route("/_sim/crd", post(super::crd::control))
        .route("/_sim/digest", get(digest))
        .route("/_sim/stats", get(stats))
        .with_state(inner)
}

pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
    body: &Bytes,
    example: &str,
) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("invalid JSON body ({e}); expected e.g. {example}"))
    })
}

pub(crate) fn answer(v: Value) -> Response {
    json_response(serde_json::to_vec(&v).unwrap_or_default())
}

#[derive(Deserialize)]
struct ChurnBody {
    events_per_sec: f64,
}

async fn churn(State(inner): State<Shared>, body: Bytes) -> Response {
    let b: ChurnBody = match parse(&body, r#"{"events_per_sec": 20}"#) {
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
    let b: ScaleBody = match parse(&body, r#"{"pods": 500}"#) {
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
}

async fn fault(State(inner): State<Shared>, body: Bytes) -> Response {
    let example = r#"{"kind": "throttle", "count": 3}"#;
    let b: FaultBody = match parse(&body, example) {
        Ok(b) => b,
        Err(mut e) => {
            e.message = format!("{}; valid kinds: {}", e.message, FAULT_KINDS.join(", "));
            return e.into_response();
        }
    };
    let count = b.count.unwrap_or(1);
    let watches = inner.open_watches.load(Ordering::SeqCst);
    let resource = match (b.kind.as_str(), b.resource.as_deref()) {
        ("expire-watches" | "forbid", None) => {
            return ApiError::bad_request(format!(
                "fault {:?} needs a \"resource\", e.g. {{\"kind\": \"forbid\", \"resource\": \"pods\"}}",
                b.kind
            ))
            .into_response()
        }
        (_, Some(name)) => match by_name(name) {
            Some(res) => Some(res),
            None => {
                return ApiError::bad_request(format!("unknown resource {name:?}")).into_response()
            }
        },
        (_, None) => None,
    };
    let effect = match b.kind.as_str() {
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
        "throttle" => match resource {
            Some(res) => {
                inner.faults.aim(Aimed::Throttle, res, count);
                format!(
                    "the next {count} requests of {} get 429 Too Many Requests with Retry-After: 1",
                    RESOURCES[res].qualified()
                )
            }
            None => {
                inner.faults.throttle.fetch_add(count, Ordering::SeqCst);
                format!(
                    "the next {count} API requests get 429 Too Many Requests with Retry-After: 1"
                )
            }
        },
        "error" => match resource {
            Some(res) => {
                inner.faults.aim(Aimed::Error, res, count);
                format!(
                    "the next {count} requests of {} get 500 Internal Server Error",
                    RESOURCES[res].qualified()
                )
            }
            None => {
                inner.faults.errors.fetch_add(count, Ordering::SeqCst);
                format!("the next {count} API requests get 500 Internal Server Error")
            }
        },
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
        "expire-watches" => {
            let res = resource.unwrap_or_default();
            inner.store.broadcast(Msg::Expire(res));
            format!(
                "the open watches of {} get 410 Expired and close",
                RESOURCES[res].qualified()
            )
        }
        "forbid" => {
            let res = resource.unwrap_or_default();
            inner.faults.aim(Aimed::Forbid, res, count);
            format!(
                "the next {count} requests of {} get 403 Forbidden",
                RESOURCES[res].qualified()
            )
        }
        other => {
            return ApiError::bad_request(format!(
                "unknown fault kind {other:?}; valid kinds: {}",
                FAULT_KINDS.join(", ")
            ))
            .into_response()
        }
    };
    tracing::info!(kind = %b.kind, %effect, "fault injected");
    answer(json!({"fault": b.kind, "count": count, "effect": effect}))
}

async fn digest(State(inner): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let name = q.get("resource").map(String::as_str).unwrap_or("pods");
    let Some(res) = by_name(name) else {
        let known: Vec<String> = RESOURCES.iter().map(|r| r.qualified()).collect();
        return ApiError::not_found(format!(
            "unknown resource {name:?}; known: {}",
            known.join(", ")
        ))
        .into_response();
    };
    let (rev, count, digest) = super::digest_of(&inner.store, res);
    answer(json!({
        "resource": RESOURCES[res].qualified(), "count": count,
        "resourceVersion": inner.store.rv_string(rev), "digest": digest
    }))
}

async fn stats(State(inner): State<Shared>) -> Response {
    let mut objects = serde_json::Map::new();
    for (i, r) in RESOURCES.iter().enumerate() {
        objects.insert(r.qualified(), json!(inner.store.count(i)));
    }
    let rev = inner.store.revision();
    answer(json!({
        "revision": rev,
        "resourceVersion": inner.store.rv_string(rev),
        "oldestResourceVersion": inner.store.rv_string(inner.store.oldest()),
        "objects": objects,
        "openWatches": inner.open_watches.load(Ordering::SeqCst),
        "eventsGenerated": inner.store.events_generated.load(Ordering::Relaxed),
        "churnPerSec": *inner.churn.borrow(),
    }))
}
