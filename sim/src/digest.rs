//! `GET /_sim/digest`: the store digest (`deltascope_facts::digest`: keys
//! and resourceVersions in key order) of one resource, all namespaces, as
//! it is now or — given `rv` — as it was at that resourceVersion, rebuilt
//! from the store's keys' history (`store::past_digest`). Tests compare it
//! with what a client shows; [`DigestAtError`] says why a past one cannot
//! be given, and becomes the route's `Status`.
//!
//! The contract:
//! - `?resource=R` (`pods`, `deployments.apps`, a short name; `pods` when
//!   absent): `200 {"resource", "count", "resourceVersion", "digest"}` now;
//!   `404` Status (NotFound) for an unknown resource.
//! - `?resource=R&rv=RV`: the same object for the objects of R that existed
//!   at RV, each with its resourceVersion at RV (every change with a
//!   revision ≤ RV applied, none after); `resourceVersion` is RV. `400`
//!   Status (BadRequest) when RV is not a resourceVersion of this cluster
//!   (not a number, or without its `--rv-prefix`) or is newer than the
//!   current one; `410` Status (Expired) when it is older than the oldest
//!   the sim still knows (the message names that one; `GET /_sim/stats`
//!   reports it as `oldestDigestResourceVersion`). That is bounded by
//!   `SimConfig::digest_history` changes (250,000), not by the watch log:
//!   the `compact` fault, after which lists and watches at older
//!   resourceVersions get 410, leaves past digests answering.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use crate::cluster::Shared;
use crate::status::{answer, ApiError};
use crate::store::{PastDigestError, Store};

/// Why `GET /_sim/digest?resource=R&rv=RV` (or [`crate::Sim::digest_at`])
/// gives no digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestAtError {
    #[error("unknown resource {name:?}; known: {known}")]
    UnknownResource { name: String, known: String },
    #[error("rv {given:?} is not a resourceVersion of this cluster (a number{prefix_note})")]
    NotAResourceVersion { given: String, prefix_note: String },
    #[error(
        "resourceVersion {requested} is too old: the oldest the simulated cluster still \
         knows for digests is {oldest}"
    )]
    Expired { requested: String, oldest: String },
    #[error("resourceVersion {requested} is newer than the current resourceVersion {current}")]
    TooNew { requested: String, current: String },
}

impl From<DigestAtError> for ApiError {
    fn from(e: DigestAtError) -> ApiError {
        match e {
            DigestAtError::UnknownResource { .. } => ApiError::not_found(e.to_string()),
            DigestAtError::NotAResourceVersion { .. } | DigestAtError::TooNew { .. } => {
                ApiError::bad_request(e.to_string())
            }
            DigestAtError::Expired { .. } => ApiError::expired(e.to_string()),
        }
    }
}

/// A digest and what it is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digest {
    /// `pods`, `deployments.apps`.
    pub resource: String,
    pub count: usize,
    pub resource_version: String,
    pub digest: String,
}

/// The digest of `resource` now (`rv` `None`) or at the resourceVersion `rv`.
pub(crate) fn digest(
    store: &Store,
    resource: &str,
    rv: Option<&str>,
) -> Result<Digest, DigestAtError> {
    let Some((res, r)) = store.by_name(resource) else {
        let known: Vec<String> = store
            .resource_names()
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        return Err(DigestAtError::UnknownResource {
            name: resource.to_string(),
            known: known.join(", "),
        });
    };
    let Some(rv) = rv else {
        let (rev, count, digest) = store.digest(res);
        return Ok(Digest {
            resource: r.qualified(),
            count,
            resource_version: store.rv_string(rev),
            digest,
        });
    };
    let at = store
        .parse_rv(rv)
        .ok_or_else(|| DigestAtError::NotAResourceVersion {
            given: rv.to_string(),
            prefix_note: match store.prefix() {
                "" => String::new(),
                prefix => format!(" after the prefix {prefix:?}"),
            },
        })?;
    let (count, digest) = store.digest_at(res, at).map_err(|e| match e {
        PastDigestError::Forgotten { requested, oldest } => DigestAtError::Expired {
            requested: store.rv_string(requested),
            oldest: store.rv_string(oldest),
        },
        PastDigestError::Newer { requested, current } => DigestAtError::TooNew {
            requested: store.rv_string(requested),
            current: store.rv_string(current),
        },
    })?;
    Ok(Digest {
        resource: r.qualified(),
        count,
        resource_version: store.rv_string(at),
        digest,
    })
}

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/digest", get(digest_route))
        .with_state(inner)
}

async fn digest_route(
    State(inner): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let name = q.get("resource").map(String::as_str).unwrap_or("pods");
    match digest(&inner.store, name, q.get("rv").map(String::as_str)) {
        Ok(d) => answer(json!({
            "resource": d.resource, "count": d.count,
            "resourceVersion": d.resource_version, "digest": d.digest
        })),
        Err(e) => ApiError::from(e).into_response(),
    }
}
