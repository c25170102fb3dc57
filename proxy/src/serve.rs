//! `deltascope serve`: assembles the listener, the auth and host/origin layers,
//! the read-only API forwarder (to an upstream URL or the in-process simulated
//! cluster) and the static assets of the page.
//!
//! Every request passes the same stack of layers, outermost first:
//!
//! 1. [`access_log`] — method, path (never the query: it may hold the token),
//!    status, bytes and duration, written when the body is done; security headers.
//! 2. [`host_origin`] — DNS-rebinding and cross-site defence: `Host` must be a
//!    name we listen under, `Origin` (if any) must be the page's own.
//! 3. [`normalise`] — one canonical path, classified once ([`Classified`]);
//!    everything after decides on it, and it is what gets forwarded.
//! 4. [`authenticate`] — session cookie or bearer token; the `?token=` exchange on `/`.
//! 5. [`policy`] — the allowlist (403) and read-only methods (405).
//!
//! and then [`dispatch`] sends it to the assets, the forwarder or `/_sim`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::header::{self, HeaderValue};
use http::{Method, StatusCode};
use tower::ServiceExt;

use crate::assets;
use crate::auth::{query_token, Auth, Session};
use crate::body::{Observed, Observer};
use crate::channel::Channels;
use crate::forward::Forwarder;
use crate::paths::{classify, normalise as normalise_path, NormalPath, Route};
use crate::sim::{Sim, SimConfig};
use crate::status::{status, unauthorized};

/// Where API requests go.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A Kubernetes API URL, normally `kubectl proxy` (`http://127.0.0.1:8001`).
    Url(String),
    /// The embedded simulated cluster, in-process.
    Demo(SimConfig),
}

/// Everything `deltascope serve` needs; built from the command line by `main.rs`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: Upstream,
    pub dist: PathBuf,
    /// `None`: a random 256-bit token, hex-encoded.
    pub token: Option<String>,
    pub allow_hosts: Vec<String>,
    pub allow_writes: bool,
    pub show_secrets: bool,
    pub max_watches_per_session: usize,
    /// Serve the page's multiplexed channel (`--no-channel` turns it off,
    /// to try the page's fallback of a few watches on their own connections).
    pub channel: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Server(std::io::Error),
    #[error("invalid upstream URL {url:?}: {reason}")]
    Upstream { url: String, reason: String },
    #[error("the session token must not be empty (omit --token for a random one)")]
    EmptyToken,
}

/// A bound server: where it listens and how to get in.
#[derive(Clone)]
pub struct Running {
    local_addr: SocketAddr,
    token: String,
    sim: Option<Sim>,
    upstream: Option<String>,
    forwarder: Forwarder,
    channels: Option<Arc<Channels>>,
}

impl Running {
    /// The address actually bound (the real port when listening on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The session token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `http://ADDR/?token=T`, the URL to open.
    pub fn url(&self) -> String {
        // Encode all but RFC 3986 unreserved characters, so a hex token prints as is.
        const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'.')
            .remove(b'_')
            .remove(b'~');
        let token = percent_encoding::utf8_percent_encode(&self.token, QUERY_VALUE);
        format!("http://{}/?token={token}", self.local_addr)
    }

    /// What the page channels hold now (`None` with `--no-channel`).
    pub fn channel_stats(&self) -> Option<crate::channel::ChannelStats> {
        self.channels.as_ref().map(|c| c.stats())
    }

    /// The in-process simulated cluster in `--demo` mode.
    pub fn sim(&self) -> Option<&Sim> {
        self.sim.as_ref()
    }
}

/// Runs until the process is stopped. Prints `deltascope: open http://ADDR/?token=T`
/// on stdout once listening.
pub async fn run(config: ServeConfig) -> Result<(), ServeError> {
    let (running, server) = bind(config).await?;
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        // If stdout is gone nobody can read the URL anyway; keep serving.
        let _ = writeln!(stdout, "deltascope: open {}", running.url());
        let _ = stdout.flush();
    }
    tracing::info!(addr = %running.local_addr(), "deltascope serve listening");
    if let Some(url) = running.upstream.clone() {
        let forwarder = running.forwarder.clone();
        tokio::spawn(async move {
            match forwarder.probe().await {
                Ok(()) => tracing::info!(upstream = %url, "the Kubernetes API answers"),
                Err(error) => tracing::warn!("{error}"),
            }
        });
    }
    server.await
}

/// The tokio runtime for `deltascope serve` with this upstream. In front of
/// an upstream URL the process only moves bytes between sockets, and it does
/// so with one worker thread: the upstream connection's task and the browser
/// connection's task then share it, so no body chunk or watch event crosses
/// threads (each crossing was a futex wake and a context switch). A 100 MB
/// list cost serve 35 instead of 45–50 ms of CPU that way (with vectored
/// writes, see [`accept_loop`]; 24 instead of 34 ms once loopback connections
/// used Reno, see [`unpaced_on_loopback`]), which on a small machine is CPU
/// the upstream and the browser get back. `--demo` keeps a worker per core: the simulated
/// cluster renders lists and fans out events in the same process.
pub fn runtime(upstream: &Upstream) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Upstream::Url(_) = upstream {
        builder.worker_threads(1);
    }
    builder.enable_all().build()
}

/// Binds the listener and builds the server; the returned future serves until
/// dropped. Must be called inside a tokio runtime.
pub async fn bind(
    config: ServeConfig,
) -> Result<
    (
        Running,
        impl Future<Output = Result<(), ServeError>> + Send + 'static,
    ),
    ServeError,
> {
    if config.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ServeError::EmptyToken);
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(ServeError::Server)?;

    let (forwarder, sim) = match &config.upstream {
        Upstream::Url(url) => {
            let forwarder =
                Forwarder::http(url, config.show_secrets, config.max_watches_per_session).map_err(
                    |e| ServeError::Upstream {
                        url: url.clone(),
                        reason: e.to_string(),
                    },
                )?;
            (forwarder, None)
        }
        Upstream::Demo(sim_config) => {
            let sim = Sim::start(sim_config.clone());
            let forwarder = Forwarder::sim(
                sim.api_router(),
                config.show_secrets,
                config.max_watches_per_session,
            );
            (forwarder, Some(sim))
        }
    };

    let auth = Auth::new(config.token.clone());
    let channels = config
        .channel
        .then(|| Arc::new(Channels::new(forwarder.clone(), sim.is_some())));
    let running = Running {
        channels: channels.clone(),
        local_addr,
        token: auth.token().to_owned(),
        sim: sim.clone(),
        upstream: match &config.upstream {
            Upstream::Url(url) => Some(url.clone()),
            Upstream::Demo(_) => None,
        },
        forwarder: forwarder.clone(),
    };
    let state = Arc::new(AppState {
        auth,
        allowed_hosts: allowed_hosts(local_addr, &config.allow_hosts),
        allow_writes: config.allow_writes,
        demo: sim.is_some(),
        dist: config.dist.clone(),
        channels: channels.clone(),
        forwarder,
        sim_control: sim.as_ref().map(Sim::control_router),
    });
    let app = router(state);
    let server = async move {
        accept_loop(listener, app).await;
        Ok(())
    };
    Ok((running, server))
}

/// Accepts connections and serves each with hyper's HTTP/1 server (browsers
/// speak HTTP/1.1 to a plain-http origin). Body chunks go out as vectored
/// writes of the upstream's own buffers instead of being copied into one flat
/// write buffer per connection: the copy was 8% of serve's CPU for a 100 MB
/// list. (Flattening once held less memory with 1,000 watches, 43 vs 54 MiB,
/// but that was before watches read 4 KiB at a time; on one worker thread,
/// see [`runtime`], vectored writes hold 34–36 MiB against flattening's 37.)
async fn accept_loop(listener: tokio::net::TcpListener, app: Router) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // e.g. EMFILE: wait for connections to close instead of spinning
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Watch events are small writes that must leave at once: no Nagle delay.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        unpaced_on_loopback(&tcp, peer);
        // Large list bodies may be spliced to this connection: its requests
        // carry its queue of pipes, and its writes go through the stream that
        // turns stand-in chunks into splices (see `crate::splice`).
        #[cfg(target_os = "linux")]
        let (io, service) = {
            let splices = Arc::new(crate::splice::BrowserSplices::default());
            let io = crate::splice::BrowserStream::new(tcp, Arc::clone(&splices));
            let service = app.clone().map_request(
                move |mut request: http::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(Arc::clone(&splices));
                    request
                },
            );
            (io, service)
        };
        #[cfg(not(target_os = "linux"))]
        let (io, service) = (tcp, app.clone());
        let service = hyper_util::service::TowerToHyperService::new(service);
        tokio::spawn(async move {
            // Vectored writes keep body chunks as they are, which the
            // stand-ins of spliced bodies rely on.
            let connection = hyper::server::conn::http1::Builder::new()
                .writev(true)
                .serve_connection(hyper_util::rt::TokioIo::new(io), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
        });
    }
}

/// A browser on the same machine gets its bytes with Reno congestion control
/// instead of the system default. Where that default is BBR, the kernel paces
/// every segment with a timer on loopback (which has no queueing discipline to
/// pace for it): a 100 MB list cost serve 32 ms of CPU and the reading client
/// 33 ms that way, against 22–24 and 22 ms with Reno (or CUBIC), and its
/// transfer took 57 instead of 42–45 ms. On loopback there is no link to be
/// fair to, and Reno is the one algorithm every user may choose
/// (`net.ipv4.tcp_allowed_congestion_control`). Remote peers keep the default.
#[cfg(target_os = "linux")]
fn unpaced_on_loopback(tcp: &tokio::net::TcpStream, peer: SocketAddr) {
    if !peer.ip().to_canonical().is_loopback() {
        return;
    }
    if let Err(error) = socket2::SockRef::from(tcp).set_tcp_congestion(b"reno") {
        tracing::debug!(%error, "cannot choose Reno congestion control for a loopback connection");
    }
}

#[cfg(not(target_os = "linux"))]
fn unpaced_on_loopback(_tcp: &tokio::net::TcpStream, _peer: SocketAddr) {}

/// Shared by every layer and the dispatcher.
struct AppState {
    auth: Auth,
    /// Lowercase `host:port` values accepted in `Host` (and, with `http://`, in `Origin`).
    allowed_hosts: Vec<String>,
    allow_writes: bool,
    demo: bool,
    dist: PathBuf,
    forwarder: Forwarder,
    sim_control: Option<Router>,
    /// The page's channels; `None` with `--no-channel`.
    channels: Option<Arc<Channels>>,
}

/// The normalised path of a request and what it names; set by [`normalise`].
#[derive(Debug, Clone)]
pub struct Classified {
    pub path: NormalPath,
    pub route: Route,
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .fallback(dispatch)
        .layer(middleware::from_fn_with_state(Arc::clone(&state), policy))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            authenticate,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            normalise,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            host_origin,
        ))
        .layer(middleware::from_fn(access_log))
        .with_state(state)
}

fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![
        local.to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ];
    for host in extra {
        let host = host.trim().to_ascii_lowercase();
        // A bare name means "under our port"; `name:port` is taken as given.
        let has_port = host.rsplit_once(':').is_some_and(|(_, p)| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(']')
        });
        if has_port {
            hosts.push(host);
        } else {
            hosts.push(format!("{host}:{port}"));
        }
    }
    hosts.iter_mut().for_each(|h| h.make_ascii_lowercase());
    hosts
}

// ---- layers -----------------------------------------------------------------

/// Logs each request when its response body is finished or dropped.
async fn access_log(request: Request, next: Next) -> Response {
    let mut entry = AccessEntry {
        method: request.method().clone(),
        // The path only: the query of `/?token=` carries the token.
        path: request.uri().path().to_owned(),
        status: 0,
        bytes: 0,
        started: Instant::now(),
    };
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let headers = &mut parts.headers;
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    entry.status = parts.status.as_u16();
    Response::from_parts(parts, Observed::wrap(body, entry))
}

struct AccessEntry {
    method: Method,
    path: String,
    status: u16,
    bytes: u64,
    started: Instant,
}

impl Observer for AccessEntry {
    fn on_data(&mut self, len: usize) {
        self.bytes += len as u64;
    }
}

impl Drop for AccessEntry {
    fn drop(&mut self) {
        tracing::info!(
            target: "deltascope::access",
            method = %self.method,
            path = %self.path,
            status = self.status,
            bytes = self.bytes,
            duration_ms = self.started.elapsed().as_millis() as u64,
        );
    }
}

/// `Host` must be one of ours; `Origin`, when sent, must be the page's own.
async fn host_origin(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    // An absolute-form request target carries its own authority: it must pass too.
    let target_ok = request.uri().authority().is_none_or(|a| {
        state
            .allowed_hosts
            .contains(&a.as_str().to_ascii_lowercase())
    });
    let Some(host) = host.filter(|h| target_ok && state.allowed_hosts.contains(h)) else {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "deltascope refuses this Host header (DNS-rebinding defence); open the URL \
             `deltascope serve` printed, or start it with `--allow-host NAME` for the name you use",
        );
    };
    for origin in request.headers().get_all(header::ORIGIN) {
        let ours = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| state.allowed_hosts.contains(&o.to_ascii_lowercase()));
        if !ours {
            return status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "deltascope refuses cross-origin requests: only pages served from \
                     http://{host} may call it"
                ),
            );
        }
    }
    next.run(request).await
}

/// Normalises the path once, classifies it, and stores the result.
async fn normalise(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = match normalise_path(request.uri().path()) {
        Ok(path) => path,
        Err(error) => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!("deltascope refuses this path: {error}"),
            )
        }
    };
    let route = classify(&path, state.demo);
    request.extensions_mut().insert(Classified { path, route });
    next.run(request).await
}

/// Sessions: `/healthz` and page assets are public; `/` exchanges `?token=`
/// for a cookie or shows the sign-in page; everything else needs a session.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(route) = request
        .extensions()
        .get::<Classified>()
        .map(|c| c.route.clone())
    else {
        return internal();
    };
    match route {
        Route::Healthz | Route::Asset => next.run(request).await,
        Route::Index => {
            if let Some(token) = query_token(request.uri().query()) {
                if request.method() != Method::GET || !state.auth.token_matches(&token) {
                    return assets::sign_in_page();
                }
                let cookie = state.auth.open_session();
                return Response::builder()
                    .status(StatusCode::SEE_OTHER)
                    .header(header::LOCATION, "/")
                    .header(header::SET_COOKIE, cookie)
                    .header(header::CACHE_CONTROL, "no-store")
                    .body(Body::empty())
                    .unwrap_or_else(|_| internal());
            }
            match state.auth.authenticate(request.headers()) {
                Some(session) => {
                    request.extensions_mut().insert(session);
                    next.run(request).await
                }
                None => assets::sign_in_page(),
            }
        }
        Route::Api(_) | Route::Sim | Route::Channel(_) | Route::Forbidden(_) => {
            match state.auth.authenticate(request.headers()) {
                Some(session) => {
                    request.extensions_mut().insert(session);
                    next.run(request).await
                }
                None => unauthorized(),
            }
        }
    }
}

/// The allowlist (403) and the read-only rule (405).
async fn policy(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let Some(route) = request
        .extensions()
        .get::<Classified>()
        .map(|c| c.route.clone())
    else {
        return internal();
    };
    let method = request.method();
    let read = method == Method::GET || method == Method::HEAD;
    match route {
        Route::Forbidden(why) => {
            return status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!("deltascope refuses this path: {why}"),
            )
        }
        Route::Api(_) if !read && !state.allow_writes => {
            return method_not_allowed(
                method,
                "deltascope is read-only: only GET and HEAD reach the cluster \
                 (start it with `--allow-writes` to let writes through)",
                "GET, HEAD",
            )
        }
        Route::Sim if !read && method != Method::POST => {
            return method_not_allowed(
                method,
                "the simulated cluster's controls take GET and POST",
                "GET, HEAD, POST",
            )
        }
        Route::Channel(None) if !read => {
            return method_not_allowed(method, "a channel is opened with GET", "GET, HEAD")
        }
        Route::Channel(Some(_)) if method != Method::POST => {
            return method_not_allowed(
                method,
                "a channel is controlled with POST {\"open\":[…],\"close\":[…]}",
                "POST",
            )
        }
        Route::Healthz | Route::Index | Route::Asset if !read => {
            return method_not_allowed(
                method,
                "the page's files are read-only (API writes need `--allow-writes`)",
                "GET, HEAD",
            )
        }
        _ => {}
    }
    next.run(request).await
}

fn method_not_allowed(method: &Method, message: &str, allow: &'static str) -> Response {
    let mut response = status(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("{method} refused: {message}"),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

fn internal() -> Response {
    status(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "deltascope: request reached a handler without passing its layers",
    )
}

// ---- dispatch ---------------------------------------------------------------

async fn dispatch(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let Some(Classified { path, route }) = request.extensions().get::<Classified>().cloned() else {
        return internal();
    };
    match route {
        Route::Healthz => (
            [(header::CONTENT_TYPE, "application/json")],
            "{\"status\":\"ok\"}\n",
        )
            .into_response(),
        Route::Index | Route::Asset => assets::serve_file(&state.dist, path.segments()).await,
        Route::Api(api) => {
            let Some(session) = request.extensions().get::<Arc<Session>>().cloned() else {
                return unauthorized();
            };
            state
                .forwarder
                .forward(request, &path, &api, &session)
                .await
        }
        Route::Sim => {
            let Some(control) = state.sim_control.clone() else {
                return status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "/_sim exists only with `deltascope serve --demo`",
                );
            };
            let (mut parts, body) = request.into_parts();
            let target = match parts.uri.query() {
                Some(q) => format!("{path}?{q}"),
                None => path.to_string(),
            };
            match target.parse() {
                Ok(uri) => parts.uri = uri,
                Err(_) => return status(StatusCode::BAD_REQUEST, "BadRequest", "invalid query"),
            }
            parts.headers.remove(header::COOKIE);
            parts.headers.remove(header::AUTHORIZATION);
            match control.oneshot(Request::from_parts(parts, body)).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Route::Channel(id) => {
            let Some(session) = request.extensions().get::<Arc<Session>>().cloned() else {
                return unauthorized();
            };
            let Some(channels) = state.channels.as_ref() else {
                return status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "this deltascope serve runs without the channel (--no-channel)",
                );
            };
            match id {
                None => channels.open(session),
                Some(id) => {
                    let body = match axum::body::to_bytes(
                        request.into_body(),
                        crate::channel::MAX_CONTROL_BYTES,
                    )
                    .await
                    {
                        Ok(body) => body,
                        Err(_) => {
                            return status(
                                StatusCode::PAYLOAD_TOO_LARGE,
                                "RequestEntityTooLarge",
                                format!(
                                    "a channel control request may have at most {} bytes",
                                    crate::channel::MAX_CONTROL_BYTES
                                ),
                            )
                        }
                    };
                    channels.control(&id, &session, &body)
                }
            }
        }
        Route::Forbidden(_) => internal(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_connections_use_reno() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (tcp, peer) = listener.accept().await.unwrap();
        unpaced_on_loopback(&tcp, peer);
        let algorithm = socket2::SockRef::from(&tcp).tcp_congestion().unwrap();
        assert_eq!(algorithm.split(|b| *b == 0).next(), Some(&b"reno"[..]));
    }
}
