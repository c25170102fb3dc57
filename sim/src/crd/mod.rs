//! CustomResourceDefinitions added and removed at runtime, behind
//! `POST /_sim/crd`, so tests can watch a client notice a resource that
//! appears or goes while it runs (the page refreshes its API discovery
//! after a change to the CRDs). The body (`body`) is one of
//! - `{"installed": false|true}`: uninstall or install the demo CRD
//!   `widgets.demo.deltascope.dev` (the cluster starts with it; installing
//!   brings back its nine widgets);
//! - `{"group": G, "version": V, "kind": K, "plural": P, "namespaced": B,
//!   "objects": [OBJECT, …]}`: add a CRD, its objects optional (201);
//! - `{"remove": "P.G"}`: remove a CRD (the demo's too);
//!
//! a bad body answers 400, adding one that exists 409, removing one that
//! does not 404, each with a Kubernetes Status. What a CRD's coming and
//! going does to the store, discovery and watches is `install`'s.

mod body;
mod install;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::json;

use self::body::{BodyError, CrdRequest, NewCrd};
use self::install::{demo_name, CrdError, DemoChange};
use crate::cluster::{Inner, Shared};
use crate::resources::CRD_GROUP;
use crate::status::{answer, ApiError};

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/crd", post(control))
        .with_state(inner)
}

/// `POST /_sim/crd` (see the module doc).
async fn control(State(inner): State<Shared>, body: Bytes) -> Response {
    let request = match body::parse(&body) {
        Ok(request) => request,
        Err(e) => return bad_body(e).into_response(),
    };
    // Held for the whole change: two never interleave their writes.
    let _one_at_a_time = inner.crd_lock.lock().unwrap_or_else(|e| e.into_inner());
    let answered = match request {
        CrdRequest::Installed(installed) => Ok(set_demo(&inner, installed)),
        CrdRequest::Add(crd) => add(&inner, crd),
        CrdRequest::Remove(name) => remove(&inner, &name),
    };
    answered.unwrap_or_else(|e| e.into_response())
}

fn bad_body(e: BodyError) -> ApiError {
    ApiError::bad_request(e.to_string())
}

fn set_demo(inner: &Inner, installed: bool) -> Response {
    let name = demo_name();
    let effect = match install::set_demo(&inner.store, installed) {
        DemoChange::Unchanged if installed => format!("{name} was already installed"),
        DemoChange::Unchanged => format!("{name} was already uninstalled"),
        DemoChange::Installed { widgets } => format!(
            "installed {name}: discovery lists {CRD_GROUP}/v1 again; created {widgets} widgets"
        ),
        DemoChange::Uninstalled { widgets } => format!(
            "uninstalled {name}: deleted {widgets} widgets and closed their watches; discovery omits {CRD_GROUP} and its requests answer 404"
        ),
    };
    tracing::info!(installed, %effect, "sim CRD control");
    let rv = inner.store.rv_string(inner.store.revision());
    answer(json!({"crd": name, "installed": installed, "effect": effect, "resourceVersion": rv}))
}

fn add(inner: &Inner, crd: NewCrd) -> Result<Response, ApiError> {
    let name = crd.name();
    let gv = format!("{}/{}", crd.group, crd.version);
    let (_, objects) = install::add(&inner.store, crd).map_err(refused)?;
    let effect = format!("added {name}: discovery lists {gv}; created {objects} objects");
    tracing::info!(%name, %effect, "sim CRD control");
    let rv = inner.store.rv_string(inner.store.revision());
    let mut resp = answer(
        json!({"crd": name, "added": true, "objects": objects, "effect": effect, "resourceVersion": rv}),
    );
    *resp.status_mut() = StatusCode::CREATED;
    Ok(resp)
}

fn remove(inner: &Inner, name: &str) -> Result<Response, ApiError> {
    let objects = install::remove(&inner.store, name).map_err(refused)?;
    let effect = format!(
        "removed {name}: deleted {objects} objects and closed their watches; discovery omits its resource and its requests answer 404"
    );
    tracing::info!(%name, %effect, "sim CRD control");
    let rv = inner.store.rv_string(inner.store.revision());
    Ok(answer(
        json!({"crd": name, "removed": true, "objects": objects, "effect": effect, "resourceVersion": rv}),
    ))
}

/// The Status a refused add or remove answers.
fn refused(e: CrdError) -> ApiError {
    let message = e.to_string();
    match e {
        CrdError::AlreadyExists(_) | CrdError::Demo(_) | CrdError::Served { .. } => {
            ApiError::new(StatusCode::CONFLICT, "AlreadyExists", message)
        }
        CrdError::NotFound(_) => ApiError::not_found(message),
    }
}
