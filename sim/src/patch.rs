//! The control endpoints that write through the workload, beside
//! `control`'s:
//! `POST /_sim/patch {"resource": R, "key": "NS/NAME", "patch": {…},
//! "manager": M}` — a JSON merge patch (RFC 7386) written as field manager
//! M through the workload, so its controllers react and its bookkeeping
//! stays right — and `POST /_sim/events {"ttl_secs": N}` (`GET` reports the
//! TTL and how many events are kept), the events' time to live.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::cluster::Shared;
use crate::resources::EVENTS_V1;
use crate::status::{answer, parse_body, ApiError};
use crate::workload::PatchError;

/// Longest field manager name the apiserver accepts.
const MAX_MANAGER: usize = 128;

/// Longest event TTL `/_sim/events` accepts: a day.
const MAX_TTL_SECS: u64 = 86_400;

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/patch", post(patch))
        .route("/_sim/events", post(set_events).get(events))
        .with_state(inner)
}

#[derive(Deserialize)]
struct PatchBody {
    resource: String,
    key: String,
    patch: Value,
    #[serde(default)]
    manager: Option<String>,
}

const PATCH_EXAMPLE: &str = r#"{"resource": "deployments.apps", "key": "shop/frontend", "patch": {"spec": {"replicas": 5}}, "manager": "ops-cli"}"#;

async fn patch(State(inner): State<Shared>, body: Bytes) -> Response {
    match patch_answer(&inner, &body).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

async fn patch_answer(inner: &Shared, body: &Bytes) -> Result<Response, ApiError> {
    let b: PatchBody = parse_body(body, PATCH_EXAMPLE)?;
    let manager = match b.manager.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() && m.len() <= MAX_MANAGER => m.to_string(),
        Some(m) if !m.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "manager must be at most {MAX_MANAGER} characters"
            )))
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "\"manager\" is required: the field manager the patch is written as; e.g. {PATCH_EXAMPLE}"
            )))
        }
    };
    let (res, r) = inner.store.by_name(&b.resource).ok_or_else(|| {
        let known: Vec<String> = inner
            .store
            .resource_names()
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        ApiError::bad_request(format!(
            "unknown resource {:?}; known: {}",
            b.resource,
            known.join(", ")
        ))
    })?;
    if res == EVENTS_V1 {
        return Err(ApiError::bad_request(
            "events.events.k8s.io is served from the core events: patch resource \"events\"",
        ));
    }
    if !b.patch.is_object() {
        return Err(ApiError::bad_request(format!(
            "patch must be a JSON object (a JSON merge patch, RFC 7386), not {}; e.g. {{\"spec\": {{\"replicas\": 5}}}}",
            kind_of(&b.patch)
        )));
    }
    let name = b.key.rsplit('/').next().unwrap_or(&b.key);
    let not_found = || ApiError::object_not_found(&r.plural, &r.group, name);
    if !inner.store.serves(res) {
        return Err(not_found());
    }
    let store = inner.store.clone();
    let mut wl = inner.workload.lock().await;
    let (obj, writes) = wl
        .patch(&store, res, &b.key, &b.patch, &manager)
        .map_err(|e| match e {
            PatchError::NotFound => not_found(),
            PatchError::BadRequest(why) => ApiError::bad_request(why),
            PatchError::Invalid(why) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!("{} {name:?} is invalid: {why}", r.qualified()),
            ),
        })?;
    drop(wl);
    tracing::info!(resource = %r.qualified(), key = %b.key, %manager, writes, "patched");
    Ok(answer(json!({
        "patched": {"resource": r.qualified(), "key": b.key, "manager": manager},
        "resourceVersion": store.rv_string(obj.rev),
        "writes": writes,
    })))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[derive(Deserialize)]
struct EventsBody {
    ttl_secs: u64,
}

async fn set_events(State(inner): State<Shared>, body: Bytes) -> Response {
    let b: EventsBody = match parse_body(&body, r#"{"ttl_secs": 300}"#) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if b.ttl_secs == 0 || b.ttl_secs > MAX_TTL_SECS {
        return ApiError::bad_request(format!(
            "ttl_secs must be from 1 to {MAX_TTL_SECS} (events are deleted that long after their last write)"
        ))
        .into_response();
    }
    let mut wl = inner.workload.lock().await;
    let previous = wl.events().ttl().as_secs();
    wl.events().set_ttl(Duration::from_secs(b.ttl_secs));
    tracing::info!(previous, now = b.ttl_secs, "event TTL changed");
    answer(
        json!({"events": {"ttl_secs": b.ttl_secs, "previous": previous, "kept": wl.events().count()}}),
    )
}

async fn events(State(inner): State<Shared>) -> Response {
    let mut wl = inner.workload.lock().await;
    let ttl = wl.events().ttl().as_secs();
    answer(json!({"events": {"ttl_secs": ttl, "kept": wl.events().count()}}))
}
