//! The recorder's requests to the cluster, all through serve's
//! [`Forwarder`] (the same upstream: `kubectl proxy`, or the in-process
//! simulated cluster for `--demo`) with no browser session:
//! [`get_document`] reads a small whole body (discovery, the cluster's
//! identity), [`InFlight`] streams one informer request chunk by chunk.
//! [`read_cluster_id`] is the cluster's identity: the `kube-system`
//! namespace's `metadata.uid`.

use std::future::Future;
use std::pin::Pin;

use axum::body::{Body, BodyDataStream};
use axum::response::Response;
use bytes::Bytes;
use deltascope_history::ClusterId;
use futures_util::StreamExt;

use crate::forward::{ForwardError, Forwarder};

/// The largest discovery or identity document read (a cluster's discovery
/// documents are tens of KiB).
const MAX_DOCUMENT: usize = 32 * 1024 * 1024;

/// Where the recorder's requests go, and how Secrets are treated.
#[derive(Clone)]
pub struct Upstream {
    pub forwarder: Forwarder,
    /// Store Secrets' values (off: redacted as serve redacts them, whatever
    /// `--show-secrets` says).
    pub store_secret_values: bool,
}

impl Upstream {
    /// GET `path` for the cluster's identity, on a connection of its own
    /// (see [`Forwarder::identity_get`]).
    pub async fn identity_get(&self, path: &str) -> Result<Response, ForwardError> {
        self.forwarder.identity_get(path).await
    }

    /// GET `path_and_query` (see [`Forwarder::recorder_get`]).
    pub async fn get(
        &self,
        path_and_query: &str,
        accept: Option<&str>,
    ) -> Result<Response, ForwardError> {
        self.forwarder
            .recorder_get(path_and_query, accept, self.store_secret_values)
            .await
    }
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    #[error("GET {path}: {source}")]
    Forward { path: String, source: ForwardError },
    #[error("GET {path}: HTTP {status}{}{message}", if message.is_empty() { "" } else { ": " })]
    Status {
        path: String,
        status: u16,
        message: String,
    },
    #[error("GET {path}: reading the body failed: {message}")]
    Body { path: String, message: String },
}

impl GetError {
    /// Asking again later may work: no connection, a timeout, 429 or 5xx.
    pub fn is_unreachable(&self) -> bool {
        match self {
            GetError::Forward { source, .. } => !matches!(
                source,
                ForwardError::NotApiPath { .. } | ForwardError::NotRedactable { .. }
            ),
            GetError::Status { status, .. } => *status == 429 || *status >= 500,
            GetError::Body { .. } => true,
        }
    }
}

/// The whole body of a successful GET of `path`.
pub async fn get_document(upstream: &Upstream, path: &str) -> Result<Bytes, GetError> {
    get_document_up_to(upstream, path, MAX_DOCUMENT).await
}

/// [`get_document`] of a body of at most `max` bytes (a metrics list of
/// every pod is larger than a discovery document).
pub async fn get_document_up_to(
    upstream: &Upstream,
    path: &str,
    max: usize,
) -> Result<Bytes, GetError> {
    let response = upstream.get(path, Some("application/json")).await;
    document(response, path, max).await
}

/// The body of an answer that succeeded, or why not.
async fn document(
    response: Result<Response, ForwardError>,
    path: &str,
    max: usize,
) -> Result<Bytes, GetError> {
    let response = response.map_err(|source| GetError::Forward {
        path: path.to_owned(),
        source,
    })?;
    let status = response.status();
    let body = read_whole(response.into_body(), path, max).await?;
    if !status.is_success() {
        let message = deltascope_facts::Status::from_body(&body)
            .map(|s| s.message)
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
        return Err(GetError::Status {
            path: path.to_owned(),
            status: status.as_u16(),
            message: message.trim().to_owned(),
        });
    }
    Ok(body)
}

async fn read_whole(body: Body, path: &str, max: usize) -> Result<Bytes, GetError> {
    let mut chunks = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| GetError::Body {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        if out.len() + chunk.len() > max {
            return Err(GetError::Body {
                path: path.to_owned(),
                message: format!("longer than {max} bytes"),
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// Why the cluster's identity cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Not reachable now: the recorder retries with backoff.
    #[error("cannot read the cluster's identity (the kube-system namespace): {0}")]
    Unreachable(GetError),
    #[error(
        "cannot read the cluster's identity: GET /api/v1/namespaces/kube-system was refused \
         ({status}: {message}); the recorder needs `get` on that namespace (its uid names the \
         cluster in the history database)"
    )]
    Refused { status: u16, message: String },
    #[error(
        "cannot read the cluster's identity: the cluster has no kube-system namespace, whose \
         uid names the cluster in the history database"
    )]
    NoKubeSystem,
    #[error("cannot read the cluster's identity: the kube-system namespace {0}")]
    NoUid(&'static str),
}

impl IdentityError {
    /// Asking again later may work.
    pub fn is_retryable(&self) -> bool {
        matches!(self, IdentityError::Unreachable(_))
    }
}

/// `GET /api/v1/namespaces/kube-system` → its `metadata.uid`, read on a
/// connection of its own: it names whatever a new request reaches now.
pub async fn read_cluster_id(upstream: &Upstream) -> Result<ClusterId, IdentityError> {
    const PATH: &str = "/api/v1/namespaces/kube-system";
    let answer = upstream.identity_get(PATH).await;
    let body = match document(answer, PATH, MAX_DOCUMENT).await {
        Ok(body) => body,
        Err(GetError::Status { status: 404, .. }) => return Err(IdentityError::NoKubeSystem),
        Err(e) if e.is_unreachable() => return Err(IdentityError::Unreachable(e)),
        Err(GetError::Status {
            status, message, ..
        }) => return Err(IdentityError::Refused { status, message }),
        Err(e) => return Err(IdentityError::Unreachable(e)),
    };
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|_| IdentityError::NoUid("was not sent as JSON"))?;
    match value.pointer("/metadata/uid").and_then(|uid| uid.as_str()) {
        Some(uid) if !uid.trim().is_empty() => Ok(ClusterId(uid.to_owned())),
        _ => Err(IdentityError::NoUid("has no metadata.uid")),
    }
}

type Pending = Pin<Box<dyn Future<Output = Result<Response, ForwardError>> + Send>>;

/// One informer request on its way: the response's headers awaited, then
/// its body read a chunk at a time (only when the driver asks for the
/// next, so a busy recorder slows the upstream rather than buffering).
pub enum InFlight {
    Pending(Pending),
    Streaming(BodyDataStream),
    Done,
}

/// What happened to a request (the informer's inputs, owned).
#[derive(Debug)]
pub enum Wire {
    Started {
        status: u16,
        retry_after_secs: Option<u64>,
    },
    Chunk(Bytes),
    End,
    Failed(String),
}

impl InFlight {
    /// Sends GET `path_and_query`.
    pub fn send(upstream: &Upstream, path_and_query: String, accept: Option<&'static str>) -> Self {
        let upstream = upstream.clone();
        InFlight::Pending(Box::pin(async move {
            upstream.get(&path_and_query, accept).await
        }))
    }

    /// The next thing that happens to the request (cancel-safe; after
    /// `End` or `Failed` it never completes).
    pub async fn next(&mut self) -> Wire {
        match self {
            InFlight::Pending(pending) => match pending.as_mut().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after_secs = response
                        .headers()
                        .get(http::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse().ok());
                    *self = InFlight::Streaming(response.into_body().into_data_stream());
                    Wire::Started {
                        status,
                        retry_after_secs,
                    }
                }
                Err(error) => {
                    *self = InFlight::Done;
                    Wire::Failed(error.to_string())
                }
            },
            InFlight::Streaming(body) => match body.next().await {
                Some(Ok(chunk)) => Wire::Chunk(chunk),
                Some(Err(error)) => {
                    *self = InFlight::Done;
                    Wire::Failed(error.to_string())
                }
                None => {
                    *self = InFlight::Done;
                    Wire::End
                }
            },
            InFlight::Done => std::future::pending().await,
        }
    }
}
