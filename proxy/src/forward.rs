//! Forwarding of allowlisted API requests to the cluster: an upstream URL
//! (normally `kubectl proxy`) or the Unix socket of a `kubectl proxy` serve
//! runs itself (see [`crate::upstream_io`]) over a pooled hyper client, or
//! the in-process simulated cluster's router in `--demo` mode.
//!
//! Bodies stream both ways untouched: hyper writes each chunk as it comes, so a
//! watch event reaches the browser as soon as the upstream sends it, and when
//! the browser goes away the response body is dropped, which drops the
//! upstream response and closes that connection (the upstream sees the watch
//! end). The exception is Secrets: their bodies go through
//! [`crate::redact::StreamRedactor`] (one JSON value at a time), and for them
//! the upstream is asked for uncompressed JSON so there is something to parse.
//!
//! Which requests are watches is decided once, by [`crate::query`], the way
//! the apiserver decides it, for the `--max-watches` count and for redaction
//! alike (a pod log with `follow` streams for as long and counts the same).
//! Headers in both directions, `Cache-Control: no-store` and the rule that an
//! API response is never rendered by a browser are [`crate::api_headers`]'s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use http::header;
use http::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::api_headers::{
    check_redactable, confine_content_type, request_headers, strip_response_headers, NotRedactable,
};
use crate::auth::{Session, Slot, SlotKind};
use crate::body::{Observed, Observer};
use crate::limits::{MAX_UPSTREAM_READ, WATCH_READ_SIZE, WHOLE_REDACTIONS};
use crate::paths::{ApiPath, NormalPath};
use crate::query::flag_set;
pub use crate::query::is_watch_query;
use crate::redact::StreamRedactor;
use crate::status::{status, too_many_requests};
use crate::upstream_io::Connector;

/// How long a non-watch request may wait for the upstream's response headers.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

// Read sizes of upstream connections ([`crate::limits`]): a watch reads
// `WATCH_READ_SIZE` at a time. hyper's adaptive strategy starts at 8 KiB and,
// when an event straddles two reads, the buffer doubles and keeps its size
// for the watch's life; a thousand watches held about 20 MiB that way.
// Events are read in a few more syscalls instead. Other requests read at
// most `MAX_UPSTREAM_READ` at a time, so the chunk a channel stream holds
// while it waits for room is bounded.

/// Why an upstream URL is not usable.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamUrlError {
    #[error("not a URL: {0}")]
    Parse(#[from] http::uri::InvalidUri),
    #[error("only http:// upstreams are supported (kubectl proxy speaks plain HTTP on loopback)")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("the URL must not have a query")]
    Query,
}

/// Why a forwarded request got no usable answer; each becomes a `Status`.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error(
        "cannot reach the Kubernetes API at {url}: is `kubectl proxy` running on {url}? ({detail})"
    )]
    Unreachable { url: String, detail: String },
    #[error(
        "cannot reach the Kubernetes API through {label} ({detail}); serve restarts it, \
         and /_deltascope/clusters says why it is down"
    )]
    SocketUnreachable { label: String, detail: String },
    #[error("the Kubernetes API at {url} failed to answer: {detail}")]
    Failed { url: String, detail: String },
    #[error("the Kubernetes API did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    /// A Secret response in a form the redactor cannot read.
    #[error(transparent)]
    NotRedactable(#[from] NotRedactable),
    /// The recorder asked for something that is not an allowlisted
    /// Kubernetes API path ([`Forwarder::recorder_get`]).
    #[error("{path:?} is not a Kubernetes API path deltascope forwards")]
    NotApiPath { path: String },
}

impl ForwardError {
    /// The `Status` the client gets.
    pub fn into_response(self) -> Response {
        let (code, reason) = match self {
            ForwardError::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, "Timeout"),
            _ => (StatusCode::BAD_GATEWAY, "BadGateway"),
        };
        status(code, reason, self.to_string())
    }
}

/// Where allowlisted API requests go.
#[derive(Clone)]
enum Backend {
    Http(Arc<Upstream>),
    Sim(axum::Router),
}

/// An upstream URL and the pooled clients that talk to it.
struct Upstream {
    /// `http://host:port/prefix` without a trailing slash.
    base: String,
    /// For a Unix socket: what errors call it (`kubectl proxy` of a context).
    socket_label: Option<String>,
    client: Client<Connector, Body>,
    /// Watches only: a small fixed read size per connection (see [`WATCH_READ_SIZE`]).
    watch_client: Client<Connector, Body>,
    /// No pool: each request on a connection of its own ([`Connection::Fresh`]).
    fresh_client: Client<Connector, Body>,
}

/// Which connection a request goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connection {
    /// A pooled one, kept alive between requests.
    Pooled,
    /// One of its own, opened for it and closed after: its answer comes
    /// from whatever a new connection reaches now, never from a connection
    /// opened before (to what answered behind the address then).
    Fresh,
}

/// How many upstream requests one session may have in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Watches and followed logs (`--max-watches`).
    pub watches: usize,
    /// Every other request, until its response body ends (`--max-requests`).
    pub requests: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            watches: crate::limits::DEFAULT_MAX_WATCHES,
            requests: crate::limits::DEFAULT_MAX_REQUESTS,
        }
    }
}

/// Forwards allowlisted API requests, applying redaction and the session's limits.
#[derive(Clone)]
pub struct Forwarder {
    backend: Backend,
    show_secrets: bool,
    limits: SessionLimits,
    /// For non-watch requests, until the response headers arrive.
    timeout: Duration,
}

impl Forwarder {
    /// Forwarding to an upstream URL such as `http://127.0.0.1:8001`.
    pub fn http(
        url: &str,
        show_secrets: bool,
        limits: SessionLimits,
    ) -> Result<Self, UpstreamUrlError> {
        let uri: Uri = url.parse()?;
        if uri.scheme_str() != Some("http") {
            return Err(UpstreamUrlError::Scheme);
        }
        let authority = uri.authority().ok_or(UpstreamUrlError::NoHost)?;
        if uri.query().is_some() {
            return Err(UpstreamUrlError::Query);
        }
        let base = format!("http://{authority}{}", uri.path().trim_end_matches('/'));
        Ok(Self::over(
            Connector::tcp(),
            base,
            None,
            show_secrets,
            limits,
        ))
    }

    /// Forwarding over the Unix socket at `socket` (a `kubectl proxy
    /// --unix-socket` serve runs); `label` names it in errors.
    pub fn unix(
        socket: &std::path::Path,
        label: String,
        show_secrets: bool,
        limits: SessionLimits,
    ) -> Self {
        // kubectl proxy accepts loopback names only (`--accept-hosts`).
        let base = "http://localhost".to_owned();
        Self::over(
            Connector::unix(socket),
            base,
            Some(label),
            show_secrets,
            limits,
        )
    }

    fn over(
        connector: Connector,
        base: String,
        socket_label: Option<String>,
        show_secrets: bool,
        limits: SessionLimits,
    ) -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_max_buf_size(MAX_UPSTREAM_READ)
            .build(connector.clone());
        let watch_client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_read_buf_exact_size(WATCH_READ_SIZE)
            .build(connector.clone());
        let fresh_client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        Forwarder {
            backend: Backend::Http(Arc::new(Upstream {
                base,
                socket_label,
                client,
                watch_client,
                fresh_client,
            })),
            show_secrets,
            limits,
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// Forwarding to the simulated cluster's API router, in-process.
    pub fn sim(api_router: axum::Router, show_secrets: bool, limits: SessionLimits) -> Self {
        Forwarder {
            backend: Backend::Sim(api_router),
            show_secrets,
            limits,
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// Replaces [`REQUEST_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Checks that the upstream answers `GET /version` (demo mode always does).
    pub async fn probe(&self) -> Result<(), ForwardError> {
        let mut request = Request::new(Body::empty());
        *request.uri_mut() = match &self.backend {
            Backend::Http(upstream) => format!("{}/version", upstream.base),
            Backend::Sim(_) => return Ok(()),
        }
        .parse()
        .map_err(|e: http::uri::InvalidUri| ForwardError::Failed {
            url: String::new(),
            detail: e.to_string(),
        })?;
        match tokio::time::timeout(self.timeout, self.send(request, false)).await {
            Ok(result) => result.map(drop),
            Err(_) => Err(ForwardError::Timeout(self.timeout)),
        }
    }

    /// Where a request for the normalised `path` with its `query` (kept byte
    /// for byte) goes: the upstream's URL, or the path and query the
    /// in-process sim routes.
    fn target(&self, path: &NormalPath, query: Option<&str>) -> String {
        let path_and_query = match query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_string(),
        };
        match &self.backend {
            Backend::Http(upstream) => format!("{}{path_and_query}", upstream.base),
            Backend::Sim(_) => path_and_query,
        }
    }

    /// Forwards `request` for the normalised `path`; always answers (errors as `Status`).
    pub async fn forward(
        &self,
        request: Request<Body>,
        path: &NormalPath,
        api: &ApiPath,
        session: &Arc<Session>,
    ) -> Response {
        let (parts, body) = request.into_parts();
        let query = parts.uri.query();
        let watch = is_stream(api, query);
        let redact = api.is_secrets() && !self.show_secrets;
        let head = parts.method == Method::HEAD;

        let (kind, limit) = if watch {
            (SlotKind::Watch, self.limits.watches)
        } else {
            (SlotKind::Request, self.limits.requests)
        };
        let Some(slot) = session.try_take_one(kind, limit) else {
            return too_many(kind, limit);
        };

        let target = self.target(path, query);
        let uri: Uri = match target.parse() {
            Ok(uri) => uri,
            Err(_) => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    "the request's query is not valid",
                )
            }
        };
        let mut upstream = Request::new(body);
        *upstream.method_mut() = parts.method.clone();
        *upstream.uri_mut() = uri;
        *upstream.headers_mut() = request_headers(&parts.headers, redact);

        let sent = self.send(upstream, watch);
        let response = if watch {
            sent.await
        } else {
            match tokio::time::timeout(self.timeout, sent).await {
                Ok(result) => result,
                Err(_) => Err(ForwardError::Timeout(self.timeout)),
            }
        };
        let response = match response {
            Ok(response) => response,
            Err(error) => return error.into_response(),
        };

        let (mut parts, body) = response.into_parts();
        strip_response_headers(&mut parts.headers);
        confine_content_type(&mut parts.headers, has_body(head, parts.status));
        let body = if redact && has_body(head, parts.status) {
            if let Err(error) = check_redactable(&parts.headers) {
                return ForwardError::from(error).into_response();
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            redacting_body(body, watch)
        } else {
            body
        };
        let body = Observed::wrap(
            body,
            InFlight {
                _slot: slot,
                watch: watch.then(|| (path.to_string(), Instant::now())),
            },
        );
        Response::from_parts(parts, body)
    }

    /// The recorder's own GET of `path_and_query` (`/api/v1/pods?watch=true&…`,
    /// as the informer builds it) over the same upstream as [`Forwarder::forward`],
    /// with no browser session: it takes no session's slot. The path must be
    /// an allowlisted API path (normalised and classified as serve does);
    /// `accept` is the `Accept` header (`None`: `application/json`).
    ///
    /// A successful Secrets response is redacted exactly as serve redacts it
    /// (`redacting_body`) unless `store_secret_values` (the recorder's own,
    /// separately named option) says otherwise — `--show-secrets` does not
    /// change what the recorder stores. A watch's body streams chunk by chunk.
    /// Errors are the upstream's (unreachable, failed, timed out before the
    /// headers for a non-watch) or a response that cannot be redacted.
    pub async fn recorder_get(
        &self,
        path_and_query: &str,
        accept: Option<&str>,
        store_secret_values: bool,
    ) -> Result<Response, ForwardError> {
        self.get_api(
            path_and_query,
            accept,
            store_secret_values,
            true,
            Connection::Pooled,
        )
        .await
    }

    /// A GET for the cluster's identity (`recorder::read_cluster_id`) on a
    /// connection of its own, never a pooled one: a connection kept from
    /// before could still reach the cluster that answered then, while every
    /// new request reaches another. A failure is not logged here (whoever
    /// reads the identity says what it means).
    pub async fn identity_get(&self, path: &str) -> Result<Response, ForwardError> {
        self.get_api(path, None, false, false, Connection::Fresh)
            .await
    }

    /// [`Forwarder::recorder_get`] for serve's health check of a cluster
    /// (`crate::clusters::supervise`): a failure is not logged here, since
    /// the check says once when a cluster stops answering, and not while
    /// the `kubectl proxy` serve just started is still coming up.
    pub async fn health_get(&self, path: &str) -> Result<Response, ForwardError> {
        self.get_api(path, None, false, false, Connection::Pooled)
            .await
    }

    async fn get_api(
        &self,
        path_and_query: &str,
        accept: Option<&str>,
        store_secret_values: bool,
        say_failure: bool,
        connection: Connection,
    ) -> Result<Response, ForwardError> {
        let not_api = || ForwardError::NotApiPath {
            path: path_and_query.to_owned(),
        };
        let (raw_path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_and_query, None),
        };
        let path = crate::paths::normalise(raw_path).map_err(|_| not_api())?;
        let crate::paths::Route::Api(api) = crate::paths::classify(&path, false) else {
            return Err(not_api());
        };
        let watch = is_stream(&api, query);
        let redact = api.is_secrets() && !store_secret_values;
        let target = self.target(&path, query);
        let uri: Uri = target.parse().map_err(|_| not_api())?;
        let mut headers = http::HeaderMap::new();
        let accept = accept.unwrap_or("application/json");
        headers.insert(
            header::ACCEPT,
            http::HeaderValue::from_str(accept)
                .unwrap_or_else(|_| http::HeaderValue::from_static("application/json")),
        );
        let mut request = Request::new(Body::empty());
        *request.uri_mut() = uri;
        *request.headers_mut() = request_headers(&headers, redact);

        let sent = self.send_as(request, watch, say_failure, connection);
        let response = if watch {
            sent.await?
        } else {
            tokio::time::timeout(self.timeout, sent)
                .await
                .map_err(|_| ForwardError::Timeout(self.timeout))??
        };
        let (mut parts, body) = response.into_parts();
        let body = if redact && parts.status.is_success() {
            check_redactable(&parts.headers)?;
            parts.headers.remove(header::CONTENT_LENGTH);
            redacting_body(body, watch)
        } else {
            body
        };
        Ok(Response::from_parts(parts, body))
    }

    async fn send(&self, request: Request<Body>, watch: bool) -> Result<Response, ForwardError> {
        self.send_as(request, watch, true, Connection::Pooled).await
    }

    /// Sends `request` on `connection`; a failure is logged when
    /// `say_failure`.
    async fn send_as(
        &self,
        request: Request<Body>,
        watch: bool,
        say_failure: bool,
        connection: Connection,
    ) -> Result<Response, ForwardError> {
        let upstream = match &self.backend {
            Backend::Sim(router) => match router.clone().oneshot(request).await {
                Ok(response) => return Ok(response),
                Err(never) => match never {},
            },
            Backend::Http(upstream) => upstream,
        };
        match if connection == Connection::Fresh {
            &upstream.fresh_client
        } else if watch {
            &upstream.watch_client
        } else {
            &upstream.client
        }
        .request(request)
        .await
        {
            Ok(response) => Ok(response.map(Body::new)),
            Err(error) => {
                let name = upstream.socket_label.as_deref().unwrap_or(&upstream.base);
                if say_failure {
                    tracing::warn!(upstream = %name, watch, %error, "upstream request failed");
                }
                let detail = source_chain(&error);
                Err(upstream_error(upstream, error.is_connect(), detail))
            }
        }
    }
}

fn upstream_error(upstream: &Upstream, connect: bool, detail: String) -> ForwardError {
    let url = upstream.base.clone();
    if let (true, Some(label)) = (connect, &upstream.socket_label) {
        return ForwardError::SocketUnreachable {
            label: label.clone(),
            detail,
        };
    }
    if connect {
        ForwardError::Unreachable { url, detail }
    } else {
        ForwardError::Failed { url, detail }
    }
}

fn source_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether the request is a long-lived stream that takes one of the
/// session's `--max-watches` slots and is redacted event by event: a watch
/// (the legacy `/watch/` prefix, or [`is_watch_query`]) or a followed pod log.
pub fn is_stream(api: &ApiPath, query: Option<&str>) -> bool {
    api.watch_prefix
        || query.is_some_and(is_watch_query)
        || (api.subresource.as_deref() == Some("log")
            && query.is_some_and(|q| flag_set(q, "follow")))
}

/// 429 with `Retry-After: 1`: the session holds `limit` slots of `kind`.
fn too_many(kind: SlotKind, limit: usize) -> Response {
    let message = match kind {
        SlotKind::Watch => format!(
            "this session already has {limit} open watches, the limit \
             (raise it with `deltascope serve --max-watches N`)"
        ),
        _ => format!(
            "this session already has {limit} requests in flight, the limit \
             (raise it with `deltascope serve --max-requests N`)"
        ),
    };
    too_many_requests(message, 1)
}

fn has_body(head: bool, code: StatusCode) -> bool {
    !head && code != StatusCode::NO_CONTENT && code != StatusCode::NOT_MODIFIED
}

/// Buffered Secret JSON at least this big is parsed and redacted on tokio's
/// blocking pool rather than on a worker: `serve --upstream` runs one worker
/// thread ([`crate::serve::runtime`]), and every other stream waits while it parses.
const BLOCKING_REDACTION_BYTES: usize = 256 * 1024;

/// The body with every JSON value redacted; a watch emits each event as soon as
/// its line is complete. A value that cannot be parsed ends the body with an error.
///
/// A list is buffered whole before it is redacted, so at most
/// [`WHOLE_REDACTIONS`] are read at once in the whole process (the others
/// wait for their turn before reading their upstream): their size is the
/// cluster's, and clients must not be able to multiply it.
fn redacting_body(body: Body, watch: bool) -> Body {
    static WHOLE: Semaphore = Semaphore::const_new(WHOLE_REDACTIONS);
    let state = Some((body.into_data_stream(), StreamRedactor::new(watch), None));
    let stream = futures_util::stream::unfold(state, move |state| async move {
        let (mut chunks, mut redactor, mut turn) = state?;
        if !watch && turn.is_none() {
            // The semaphore is never closed.
            turn = WHOLE.acquire().await.ok();
        }
        loop {
            let mut out = Vec::new();
            match chunks.next().await {
                Some(Ok(chunk)) => match redactor.push(&chunk, &mut out) {
                    Ok(()) if out.is_empty() => continue,
                    Ok(()) => return Some((Ok(Bytes::from(out)), Some((chunks, redactor, turn)))),
                    Err(error) => return Some((Err(redaction_failed(error)), None)),
                },
                Some(Err(error)) => return Some((Err(std::io::Error::other(error)), None)),
                None => {
                    return match finish(redactor).await {
                        Ok(out) if out.is_empty() => None,
                        Ok(out) => Some((Ok(Bytes::from(out)), None)),
                        Err(error) => Some((Err(error), None)),
                    }
                }
            }
        }
    });
    Body::from_stream(stream)
}

/// The redacted rest of a body (all of a list), off the worker when it is big.
async fn finish(redactor: StreamRedactor) -> Result<Vec<u8>, std::io::Error> {
    let big = redactor.buffered() >= BLOCKING_REDACTION_BYTES;
    let run = move || {
        let mut out = Vec::new();
        redactor.finish(&mut out).map(|()| out)
    };
    let finished = if big {
        tokio::task::spawn_blocking(run)
            .await
            .map_err(std::io::Error::other)?
    } else {
        run()
    };
    finished.map_err(redaction_failed)
}

fn redaction_failed(error: crate::redact::RedactError) -> std::io::Error {
    tracing::warn!(%error, "cutting a Secret response short");
    std::io::Error::other(error)
}

/// Holds the request's slot for as long as its body lives, and logs a
/// watch's lifetime.
struct InFlight {
    _slot: Slot,
    /// A watch's path and start.
    watch: Option<(String, Instant)>,
}

impl Observer for InFlight {}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some((path, started)) = &self.watch {
            tracing::info!(
                target: "deltascope::access",
                path = %path,
                lifetime_ms = started.elapsed().as_millis() as u64,
                "watch closed"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_watches_in_any_spelling_the_legacy_prefix_and_followed_logs() {
        let api = |path: &str| match crate::paths::classify(
            &crate::paths::normalise(path).unwrap(),
            false,
        ) {
            crate::paths::Route::Api(api) => api,
            other => panic!("{other:?}"),
        };
        let pods = api("/api/v1/pods");
        assert!(is_stream(&pods, Some("watch=true")));
        assert!(is_stream(&pods, Some("labelSelector=a&w%61tch")));
        assert!(!is_stream(&pods, Some("watch=false")));
        assert!(!is_stream(&pods, Some("nowatch=true")));
        assert!(!is_stream(&pods, None));
        assert!(is_stream(&api("/api/v1/watch/pods"), Some("watch=0")));
        let log = api("/api/v1/namespaces/a/pods/b/log");
        assert!(is_stream(&log, Some("container=c&follow")));
        assert!(!is_stream(&log, Some("follow=false")));
        assert!(!is_stream(&pods, Some("follow=true")));
    }

    #[tokio::test]
    async fn slow_non_watch_requests_time_out_but_watches_do_not() {
        let slow = axum::Router::new().fallback(|| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            "late"
        });
        let forwarder = Forwarder::sim(slow, false, SessionLimits::default())
            .with_timeout(Duration::from_millis(100));
        let session = Arc::new(Session::new("s".into()));
        let path = crate::paths::normalise("/api/v1/pods").unwrap();
        let api = ApiPath {
            resource: Some("pods".into()),
            ..ApiPath::default()
        };
        let request = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
        let response = forwarder
            .forward(request("/api/v1/pods"), &path, &api, &session)
            .await;
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        let response = forwarder
            .forward(request("/api/v1/pods?watch=1"), &path, &api, &session)
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn the_recorders_gets_are_api_paths_only_and_redact_secrets_whatever_show_secrets_says() {
        let secret = r#"{"kind":"Secret","metadata":{"name":"s"},"data":{"k":"c2VjcmV0"}}"#;
        let upstream = axum::Router::new().fallback(move || async move {
            ([(header::CONTENT_TYPE, "application/json")], secret)
        });
        let forwarder = Forwarder::sim(upstream, true, SessionLimits::default());
        let body = |response: Response| async move {
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            String::from_utf8(bytes.to_vec()).unwrap()
        };
        let get =
            |store: bool| forwarder.recorder_get("/api/v1/namespaces/a/secrets/s", None, store);
        let redacted = body(get(false).await.unwrap()).await;
        assert!(!redacted.contains("c2VjcmV0") && redacted.contains("<redacted: 6 bytes>"));
        assert!(body(get(true).await.unwrap()).await.contains("c2VjcmV0"));
        for path in [
            "/_sim/fault",
            "/api/v1/namespaces/a/pods/p/exec",
            "/index.html",
        ] {
            assert!(matches!(
                forwarder.recorder_get(path, None, false).await,
                Err(ForwardError::NotApiPath { .. })
            ));
        }
    }

    #[test]
    fn upstream_urls() {
        assert!(Forwarder::http("http://127.0.0.1:8001", false, SessionLimits::default()).is_ok());
        assert!(
            Forwarder::http("https://127.0.0.1:8001", false, SessionLimits::default()).is_err()
        );
        assert!(Forwarder::http("nonsense url", false, SessionLimits::default()).is_err());
    }
}
