//! What every history route shares: the state they read
//! ([`HistoryAccess`]: the database, each cluster and its recorder's state,
//! and which cluster a route's `cluster=` names),
//! the answers they give alike (no database, no cluster yet, a database
//! that fails, JSON the browser does not cache), the checks of names a
//! query carries, and the summary route. Apart from the routes' dispatch
//! (`crate::history_api`) so that each route's module (`history_usage`)
//! reads these without importing the dispatch that calls it.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use deltascope_facts::percent::decode_query_value;
use deltascope_history::{ClusterId, HistoryStore};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use tokio::sync::watch;

use crate::status::status;
use crate::upstreams::UnknownCluster;

/// What the routes read: the database (if any), the clusters it is read
/// for, and what to say about recording.
#[derive(Clone)]
pub struct HistoryAccess {
    /// `None`: `--history off`, or the database could not be opened (yet).
    pub store: watch::Receiver<Option<Arc<HistoryStore>>>,
    /// Why there is no store (said by the routes and the summary).
    pub unavailable: watch::Receiver<Option<String>>,
    /// serve's clusters, the default first (never empty when built by
    /// `crate::recording`).
    pub clusters: Vec<ClusterAccess>,
}

/// One cluster the routes read the record of.
#[derive(Clone)]
pub struct ClusterAccess {
    /// serve's name for it (`None`: the one cluster of a plain `--upstream`).
    pub name: Option<String>,
    /// Its identity (the `kube-system` uid), once known.
    pub cluster: watch::Receiver<Option<ClusterId>>,
    /// Its recorder's state as JSON, for the summary (`null`: not recording).
    pub recording: Arc<dyn Fn() -> serde_json::Value + Send + Sync>,
}

impl HistoryAccess {
    /// The cluster a route's `cluster=` names (`None`: the default one).
    pub(crate) fn cluster_named(
        &self,
        name: Option<&str>,
    ) -> Result<&ClusterAccess, ClusterParamError> {
        let found = match name {
            None => self.clusters.first(),
            Some(name) => self
                .clusters
                .iter()
                .find(|c| c.name.as_deref() == Some(name)),
        };
        found.ok_or_else(|| {
            ClusterParamError::Unknown(UnknownCluster {
                name: name.unwrap_or_default().to_owned(),
                known: self
                    .clusters
                    .iter()
                    .filter_map(|c| c.name.clone())
                    .collect(),
            })
        })
    }
}

/// Why a route's `cluster=` is refused.
#[derive(Debug, thiserror::Error)]
pub enum ClusterParamError {
    #[error("parameter cluster is given more than once")]
    Repeated,
    #[error("parameter cluster is not a cluster's name in percent-encoded UTF-8")]
    Encoding,
    /// A name serve does not serve (404, as for `/clusters/{name}/…`).
    #[error(transparent)]
    Unknown(UnknownCluster),
}

impl ClusterParamError {
    /// 400, or 404 for an unknown name, with a Status.
    pub fn into_response(self) -> Response {
        match self {
            ClusterParamError::Unknown(unknown) => unknown.into_response(),
            refused => status(StatusCode::BAD_REQUEST, "BadRequest", refused.to_string()),
        }
    }
}

/// Takes `cluster=NAME` out of a route's query: the name (decoded) and
/// the rest, which the route reads as it always did.
pub(crate) fn split_cluster_param(
    query: &str,
) -> Result<(Option<String>, String), ClusterParamError> {
    let mut name = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=') {
            Some(("cluster", value)) => {
                if name.is_some() {
                    return Err(ClusterParamError::Repeated);
                }
                let decoded = decode_query_value(value).filter(|v| !v.is_empty());
                name = Some(decoded.ok_or(ClusterParamError::Encoding)?);
            }
            _ => rest.push(pair),
        }
    }
    Ok((name, rest.join("&")))
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

/// The summary, for `asked` (the default cluster, or the one `cluster=`
/// names): its identity and recorder at the top, every cluster's in
/// `clusters`, and what the database holds of all of them.
pub(crate) async fn summary(access: &HistoryAccess, asked: &ClusterAccess) -> Response {
    let cluster = asked.cluster.borrow().clone();
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
        "name": asked.name,
        "recording": (asked.recording)(),
        "resources": resources,
        "usage": usage,
        // serve's named clusters (a plain `--upstream URL` names none)
        "clusters": access.clusters.iter().enumerate().filter_map(|(index, each)| {
            Some(serde_json::json!({
                "name": each.name.as_ref()?,
                "default": index == 0,
                "cluster": each.cluster.borrow().as_ref().map(|c| c.0.clone()),
                "recording": (each.recording)(),
            }))
        }).collect::<Vec<_>>(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn access(names: &[Option<&str>]) -> HistoryAccess {
        let clusters = names
            .iter()
            .map(|name| ClusterAccess {
                name: name.map(str::to_owned),
                cluster: watch::channel(None).1,
                recording: Arc::new(|| serde_json::Value::Null),
            })
            .collect();
        HistoryAccess {
            store: watch::channel(None).1,
            unavailable: watch::channel(None).1,
            clusters,
        }
    }

    #[test]
    fn cluster_is_taken_out_of_the_query_decoded_and_the_rest_kept() {
        let split = split_cluster_param("resource=pods&cluster=arn%3Aaws%3Aeks&since=x").unwrap();
        assert_eq!(
            split,
            (Some("arn:aws:eks".into()), "resource=pods&since=x".into())
        );
        assert_eq!(
            split_cluster_param("resource=pods").unwrap(),
            (None, "resource=pods".into())
        );
        for (query, why) in [
            ("cluster=a&cluster=b", "cluster is given more than once"),
            ("cluster=", "not a cluster's name"),
            ("cluster=%ff", "not a cluster's name"),
        ] {
            let refused = split_cluster_param(query).unwrap_err();
            assert!(refused.to_string().contains(why), "{query}: {refused}");
            assert_eq!(refused.into_response().status(), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn a_name_picks_its_cluster_none_the_default_and_an_unknown_one_is_404() {
        let named = access(&[Some("prod"), Some("staging")]);
        let name_of = |asked: Option<&str>| named.cluster_named(asked).map(|c| c.name.clone());
        assert_eq!(name_of(None).unwrap(), Some("prod".into()));
        assert_eq!(name_of(Some("staging")).unwrap(), Some("staging".into()));
        let unknown = named.cluster_named(Some("dev")).err().unwrap();
        assert_eq!(
            unknown.to_string(),
            "this deltascope serve has no cluster named \"dev\" (it serves: prod, staging)"
        );
        assert_eq!(unknown.into_response().status(), StatusCode::NOT_FOUND);
        // A plain --upstream: one cluster with no name.
        let plain = access(&[None]);
        assert!(plain.cluster_named(None).is_ok());
        let unknown = plain.cluster_named(Some("a")).err().unwrap();
        assert!(unknown
            .to_string()
            .contains("it serves: one cluster, at /api and /apis"));
    }
}
