//! `deltascope serve`: assembles the listener, the auth and host/origin layers,
//! the read-only API forwarders (to one or more clusters — kubeconfig
//! contexts through the `kubectl proxy` serve runs on a private socket,
//! upstream URLs — or the in-process simulated cluster; see
//! [`crate::clusters`]) and the static assets of the page.
//!
//! Connections are accepted, capped and timed out by [`crate::conn`]. Every
//! request passes the same stack of layers (`layers.rs`), outermost first:
//!
//! 1. `track` — counts the request as in flight on its connection until its
//!    response body is done (the connection's idle clock stops meanwhile).
//! 2. `access_log` — method, path (never the query: it may hold a sign-in code),
//!    status, bytes and duration, written when the body is done; security
//!    headers, including a Content-Security-Policy on every response.
//! 3. `host_origin` — DNS-rebinding and cross-site defence: exactly one `Host`,
//!    one of the names we listen under; `Sec-Fetch-Site` (if sent) `same-origin`
//!    or `none`; `Origin` (if sent) the page's own.
//! 4. `normalise` — one canonical path, classified once
//!    ([`Classified`](crate::paths::Classified));
//!    everything after decides on it, and it is what gets forwarded.
//! 5. `authenticate` — session cookie or bearer token; the sign-in link and
//!    form on `/`, new sign-in links (`signin.rs`).
//! 6. `policy` — the allowlist (403) and read-only methods (405).
//!
//! and then `dispatch` sends it to the assets, the forwarder, the channel,
//! sign-out or `/_sim`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::middleware;
use axum::Router;

use crate::auth::{check_token, Auth, TokenError};
use crate::channel::Channels;
use crate::clusters::{ClusterError, ClusterFlag, ClusterPlan, Clusters};
use crate::conn::{ConnLimits, ConnectionStats, Connections};
use crate::forward::{Forwarder, SessionLimits};
use crate::layers::{access_log, authenticate, dispatch, host_origin, normalise, policy, track};
use crate::process::{print_line, stop_signal};
use crate::recording::{History, HistoryOptions};
use crate::signin::SignInLinks;
use crate::state::AppState;
use crate::token_file::TokenFile;
use deltascope_sim::{Sim, SimConfig};

/// Where API requests go.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A Kubernetes API URL, normally `kubectl proxy` (`http://127.0.0.1:8001`).
    Url(String),
    /// The embedded simulated cluster, in-process.
    Demo(SimConfig),
    /// One or more clusters: kubeconfig contexts (serve runs their `kubectl
    /// proxy` on private sockets) and URLs; none named: the current context.
    Clusters(ClusterPlan),
}

/// Everything `deltascope serve` needs; built from the command line by `main.rs`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: Upstream,
    /// The built page: `Some(dir)` serves trunk's output from disk (`--dist`,
    /// for the dev loop and tests), `None` the page built into the binary.
    pub dist: Option<PathBuf>,
    /// `None`: a random 256-bit token, hex-encoded. Otherwise at least
    /// [`crate::auth::MIN_TOKEN_BYTES`] bytes.
    pub token: Option<String>,
    pub allow_hosts: Vec<String>,
    pub allow_writes: bool,
    pub show_secrets: bool,
    pub max_watches_per_session: usize,
    /// Upstream requests other than watches in flight per session.
    pub max_requests_per_session: usize,
    /// Serve the page's multiplexed channel (`--no-channel` turns it off,
    /// to try the page's fallback of a few watches on their own connections).
    pub channel: bool,
    /// Browser connections open at once (lowered to fit the open-file limit).
    pub max_connections: usize,
    /// How long a connection that has not authenticated may take to send a
    /// request head, counted from its opening or its previous response.
    pub header_read_timeout: Duration,
    /// How long an authenticated connection may stay open with no request.
    pub idle_timeout: Duration,
    /// A browser session unused this long ends.
    pub session_idle_timeout: Duration,
    /// How long a sign-in link's code stays valid: [`crate::sign_in_code::CODE_TTL`]
    /// but in tests (`--sign-in-code-ttl`, a hidden flag).
    pub sign_in_code_ttl: Duration,
    /// The recorded history: where (`--history`), whether serve records,
    /// and what it keeps (see [`crate::recording`]).
    pub history: HistoryOptions,
}

impl ServeConfig {
    /// The defaults of `deltascope serve`'s flags, for `upstream`.
    pub fn new(upstream: Upstream) -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            upstream,
            dist: None,
            token: None,
            allow_hosts: Vec::new(),
            allow_writes: false,
            show_secrets: false,
            max_watches_per_session: crate::limits::DEFAULT_MAX_WATCHES,
            max_requests_per_session: crate::limits::DEFAULT_MAX_REQUESTS,
            channel: true,
            max_connections: crate::conn::DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: crate::conn::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: crate::conn::DEFAULT_IDLE_TIMEOUT,
            session_idle_timeout: crate::auth::DEFAULT_SESSION_IDLE,
            sign_in_code_ttl: crate::sign_in_code::CODE_TTL,
            history: HistoryOptions::default(),
        }
    }
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
    #[error(transparent)]
    Clusters(ClusterError),
    #[error("the session token must not be empty (omit --token for a random one)")]
    EmptyToken,
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("--max-connections must be at least 1")]
    NoConnections,
    #[error("this deltascope binary was built without the page (dist/ was missing when it was compiled): build the page first (`trunk build --release`, or `cargo xtask build`) and then the binary, or pass --dist DIR")]
    NoPage,
}

/// A bound server: where it listens and how to get in.
#[derive(Clone)]
pub struct Running {
    local_addr: SocketAddr,
    token: String,
    cookie_name: String,
    sim: Option<Sim>,
    clusters: Arc<Clusters>,
    channels: Option<Arc<Channels>>,
    connections: Arc<Connections>,
    state: Weak<AppState>,
    history: Arc<History>,
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

    /// The session cookie's name (it carries the port, see [`crate::auth::cookie_name`]).
    pub fn cookie_name(&self) -> &str {
        &self.cookie_name
    }

    /// A new sign-in link, `http://ADDR/?code=C`: it opens one browser
    /// session, once, for a few minutes. `None` once the server is gone.
    pub fn sign_in_link(&self) -> Option<String> {
        self.state.upgrade().map(|s| s.sign_in_links.issue())
    }

    /// `http://ADDR/`.
    pub fn base_url(&self) -> String {
        format!("http://{}/", self.local_addr)
    }

    /// What the page channels hold now (`None` with `--no-channel`).
    pub fn channel_stats(&self) -> Option<crate::channel::ChannelStats> {
        self.channels.as_ref().map(|c| c.stats())
    }

    /// The browser connections now and since start.
    pub fn connection_stats(&self) -> ConnectionStats {
        self.connections.stats()
    }

    /// Browser (cookie) sessions open now; 0 once the server is gone.
    pub fn session_count(&self) -> usize {
        self.state.upgrade().map_or(0, |s| s.auth.session_count())
    }

    /// The in-process simulated cluster in `--demo` mode.
    pub fn sim(&self) -> Option<&Sim> {
        self.sim.as_ref()
    }

    /// The recorded history as this serve runs it.
    pub fn history(&self) -> &Arc<History> {
        &self.history
    }

    /// The clusters serve forwards to (what `/_deltascope/clusters` shows).
    pub fn clusters(&self) -> &Arc<Clusters> {
        &self.clusters
    }
}

/// Runs until the process is stopped; Ctrl-C and SIGTERM end it normally.
/// Once listening it prints on stdout `deltascope: open http://ADDR/?code=C`
/// and, for a token it made up, `deltascope: token for the sign-in form and
/// Authorization: Bearer is in PATH` (see [`crate::token_file`]; that file is
/// removed when `run` returns).
pub async fn run(config: ServeConfig) -> Result<(), ServeError> {
    let generated_token = config.token.is_none();
    let config_history = config.history.clone();
    let (running, server) = bind(config).await?;
    if let Some(link) = running.sign_in_link() {
        crate::signin::print_link(&link);
    }
    let _token_file = if generated_token {
        keep_token(&running)
    } else {
        None
    };
    tracing::info!(addr = %running.local_addr(), "deltascope serve listening");
    tracing::info!(
        "the link above signs in one browser, once, within a few minutes; for another \
         browser, open {} and have serve print a new link, or enter the token there; \
         CLI clients send `Authorization: Bearer TOKEN`",
        running.base_url()
    );
    running.clusters.check_health();
    say_history(&running.history, &config_history);
    let result = tokio::select! {
        result = server => result,
        () = stop_signal() => {
            tracing::info!("deltascope serve stopping");
            Ok(())
        }
    };
    running.history.stop().await;
    running.clusters.stop().await;
    result
}

/// One line on stdout about the history: where it is recorded, or why not.
fn say_history(history: &History, options: &HistoryOptions) {
    if let Some(why) = history.unavailable() {
        eprintln!("deltascope: {why}");
        return;
    }
    let Some(store) = history.store() else { return };
    print_line(&if options.record {
        format!(
            "deltascope: recording the cluster's history into {}",
            store.label()
        )
    } else {
        format!(
            "deltascope: reading the history in {} (recorded by `deltascope record`)",
            store.label()
        )
    });
}

/// Writes a token serve made up to its private file and prints where; says
/// on stderr when it cannot (serving goes on: the link works without it).
fn keep_token(running: &Running) -> Option<TokenFile> {
    let written = crate::token_file::token_dir()
        .and_then(|dir| TokenFile::write(&dir, running.local_addr().port(), running.token()));
    match written {
        Ok(file) => {
            print_line(&format!(
                "deltascope: token for the sign-in form and Authorization: Bearer is in {}",
                file.path().display()
            ));
            Some(file)
        }
        Err(error) => {
            eprintln!(
                "deltascope: {error}; the sign-in link above still works, and the sign-in \
                 page can have serve print a new one (or restart serve with --token-file)"
            );
            None
        }
    }
}

/// The tokio runtime for `deltascope serve` with this upstream. In front of
/// an upstream URL the process only moves bytes between sockets, and it does
/// so with one worker thread: the upstream connection's task and the browser
/// connection's task then share it, so no body chunk or watch event crosses
/// threads (each crossing was a futex wake and a context switch). A 100 MB
/// list cost serve 35 instead of 45–50 ms of CPU that way (with vectored
/// writes, see [`crate::conn`]; 24 instead of 34 ms once loopback connections
/// used Reno), which on a small machine is CPU the upstream and the browser
/// get back. `--demo` keeps a worker per core: the simulated cluster renders
/// lists and fans out events in the same process.
pub fn runtime(upstream: &Upstream) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if !matches!(upstream, Upstream::Demo(_)) {
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
    check_config(&config)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(ServeError::Server)?;

    let limits = SessionLimits {
        watches: config.max_watches_per_session,
        requests: config.max_requests_per_session,
    };
    let (clusters, sim) = start_clusters(&config, limits).await?;
    let connections = Arc::new(Connections::new(conn_limits(&config)));
    let started = Started {
        local_addr,
        clusters,
        sim,
        connections: Arc::clone(&connections),
    };
    let (state, running) = assemble(&config, started).await;
    sweep_sessions(Arc::downgrade(&state));
    let app = router(state);
    let server = async move {
        crate::conn::accept_loop(listener, app, connections).await;
        Ok(())
    };
    Ok((running, server))
}

/// What the command line can get wrong before anything starts: no page to
/// serve, an unusable token, no connections allowed.
fn check_config(config: &ServeConfig) -> Result<(), ServeError> {
    if config.dist.is_none() && !crate::assets::built_in_page() {
        return Err(ServeError::NoPage);
    }
    if let Some(token) = config.token.as_deref() {
        if token.trim().is_empty() {
            return Err(ServeError::EmptyToken);
        }
        check_token(token)?;
    }
    if config.max_connections == 0 {
        return Err(ServeError::NoConnections);
    }
    Ok(())
}

/// The browser connections' limits, `--max-connections` lowered (with a
/// warning) to what the open-file limit leaves room for.
fn conn_limits(config: &ServeConfig) -> ConnLimits {
    let max_connections = crate::conn::fitting_cap(config.max_connections);
    if max_connections < config.max_connections {
        tracing::warn!(
            max_connections,
            wanted = config.max_connections,
            "the open-file limit leaves room for fewer browser connections than --max-connections"
        );
    }
    ConnLimits {
        max_connections,
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
    }
}

/// What `bind` has started before the shared state is built.
struct Started {
    local_addr: SocketAddr,
    clusters: Arc<Clusters>,
    sim: Option<Sim>,
    connections: Arc<Connections>,
}

/// The sessions, the channels and the recorded history (started here),
/// and from them the state every layer reads and the [`Running`] handle.
async fn assemble(config: &ServeConfig, started: Started) -> (Arc<AppState>, Running) {
    let Started {
        local_addr,
        clusters,
        sim,
        connections,
    } = started;
    let auth = Auth::new(
        config.token.clone(),
        crate::auth::cookie_name(local_addr.port()),
        config.session_idle_timeout,
    );
    let channels = config.channel.then(|| {
        Arc::new(Channels::for_upstreams(
            Arc::clone(clusters.upstreams()),
            sim.is_some(),
        ))
    });
    let cookie_name = auth.cookie_name().to_owned();
    let token = auth.token().to_owned();
    let recorded = clusters.upstreams().all();
    let history = Arc::new(History::start_for(&config.history, recorded).await);
    let state = Arc::new(AppState {
        history: history.access.clone(),
        auth,
        sign_in_links: SignInLinks::new(format!("http://{local_addr}/"), config.sign_in_code_ttl),
        allowed_hosts: allowed_hosts(local_addr, &config.allow_hosts),
        allow_writes: config.allow_writes,
        demo: sim.is_some(),
        dist: config.dist.clone(),
        compressed: Default::default(),
        channels: channels.clone(),
        upstreams: Arc::clone(clusters.upstreams()),
        clusters: Arc::clone(&clusters),
        sim_control: sim.as_ref().map(Sim::control_router),
    });
    let running = Running {
        channels,
        local_addr,
        token,
        cookie_name,
        sim,
        clusters,
        connections,
        state: Arc::downgrade(&state),
        history,
    };
    (state, running)
}

/// The clusters of `config.upstream`, started (and the simulated cluster
/// for `--demo`).
async fn start_clusters(
    config: &ServeConfig,
    limits: SessionLimits,
) -> Result<(Arc<Clusters>, Option<Sim>), ServeError> {
    let plan = match &config.upstream {
        Upstream::Demo(sim_config) => {
            let sim = Sim::start(sim_config.clone());
            let forwarder = Forwarder::sim(sim.api_router(), config.show_secrets, limits);
            return Ok((Arc::new(Clusters::demo(forwarder)), Some(sim)));
        }
        Upstream::Url(url) => ClusterPlan {
            flags: vec![ClusterFlag::Upstream {
                name: None,
                url: url.clone(),
            }],
            kubeconfig: None,
        },
        Upstream::Clusters(plan) => plan.clone(),
    };
    match Clusters::start(&plan, config.show_secrets, limits).await {
        Ok(clusters) => Ok((Arc::new(clusters), None)),
        Err(ClusterError::Upstream { url, reason }) => Err(ServeError::Upstream { url, reason }),
        Err(error) => Err(ServeError::Clusters(error)),
    }
}

/// Ends idle sessions (and notes which are in use) for as long as the server lives.
fn sweep_sessions(state: Weak<AppState>) {
    let Some(interval) = state.upgrade().map(|s| s.auth.sweep_interval()) else {
        return;
    };
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match state.upgrade() {
                Some(state) => state.auth.sweep(),
                None => return,
            }
        }
    });
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
        .layer(middleware::from_fn(track))
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
