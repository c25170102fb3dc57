//! What every history route shares: the state they read
//! ([`HistoryAccess`]: the database, the cluster, the recorder's state),
//! the answers they give alike (no database, no cluster yet, a database
//! that fails, JSON the browser does not cache), the checks of names a
//! query carries, and the summary route. Apart from the routes' dispatch
//! (`crate::history_api`) so that each route's module (`history_usage`)
//! reads these without importing the dispatch that calls it.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use deltascope_history::{ClusterId, HistoryStore};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use tokio::sync::watch;

use crate::status::status;

/// What the routes read: the database (if any), the cluster it is read
/// for, and what to say about recording.
#[derive(Clone)]
pub struct HistoryAccess {
    /// `None`: `--history off`, or the database could not be opened (yet).
    pub store: watch::Receiver<Option<Arc<HistoryStore>>>,
    /// Why there is no store (said by the routes and the summary).
    pub unavailable: watch::Receiver<Option<String>>,
    /// The cluster serve reads for (the `kube-system` uid), once known.
    pub cluster: watch::Receiver<Option<ClusterId>>,
    /// The recorder's state as JSON, for the summary (`None`: not recording).
    pub recording: Arc<dyn Fn() -> serde_json::Value + Send + Sync>,
}

/// A DNS label: what a namespace and a plural resource name are.
pub(crate) fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// What an object may be called (RBAC names hold `:`, and more): up to 253
/// printable characters, no `/` and no `%`.
pub(crate) fn is_object_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text != "."
        && text != ".."
        && !text.chars().any(|c| c == '/' || c == '%' || c.is_control())
}

pub(crate) fn no_cluster_yet() -> Response {
    status(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "serve has not yet learned which cluster it reads (the kube-system namespace's uid); try again shortly",
    )
}

pub(crate) fn no_store(access: &HistoryAccess) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        access
            .unavailable
            .borrow()
            .clone()
            .unwrap_or_else(|| "this serve keeps no history (--history off)".to_string()),
    )
}

pub(crate) fn database_failed(error: &deltascope_history::HistoryError) -> Response {
    tracing::warn!(%error, "history read failed");
    status(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        format!("the history database cannot be read now: {error}"),
    )
}

pub(crate) async fn summary(access: &HistoryAccess) -> Response {
    let cluster = access.cluster.borrow().clone();
    // The recorder's state is said even while the database cannot be read.
    let store = access.store.borrow().clone();
    let mut usage = None;
    let (resources, unavailable) = match &store {
        Some(store) => match store.summary().await {
            Ok(resources) => {
                // asked only of a database that answers: one that is gone
                // costs the summary one wait, not two
                usage = store
                    .usage_summary()
                    .await
                    .ok()
                    .flatten()
                    .and_then(|usage| serde_json::to_value(usage).ok());
                (serde_json::to_value(resources).unwrap_or_default(), None)
            }
            Err(error) => (
                serde_json::Value::Array(Vec::new()),
                Some(format!("the history database cannot be read now: {error}")),
            ),
        },
        None => (
            serde_json::Value::Array(Vec::new()),
            access.unavailable.borrow().clone(),
        ),
    };
    let body = serde_json::json!({
        "cluster": cluster.map(|c| c.0),
        "history": store.as_ref().map(|store| store.label().to_string()),
        "unavailable": unavailable,
        "recording": (access.recording)(),
        "resources": resources,
        "usage": usage,
    });
    json_response(&body)
}

/// A JSON answer the browser does not cache.
pub(crate) fn json_response(body: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
