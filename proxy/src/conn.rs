//! The browser side's TCP connections: accepting them, how many may be open,
//! and how long one may sit without a request.
//!
//! Anyone on the machine can connect to serve, so a connection costs nothing
//! to open and must not cost serve much to hold. Three rules, each against a
//! way to starve it (1,100 connections that never sent a byte once exhausted
//! the file descriptors, and `/healthz` stopped answering):
//!
//! - **Header-read timeout** (`--header-read-timeout`, default 10 s): a
//!   connection that has not authenticated must deliver a complete request
//!   head within it — counted from when it opened, or from the end of its
//!   previous response. It also closes such a connection once idle that long.
//! - **Idle timeout** (`--idle-timeout`, default 60 s): a connection that has
//!   authenticated (some request on it carried a valid session cookie or
//!   bearer token) is closed after this long with no request in flight. A
//!   request is in flight from its head until its response body is finished or
//!   dropped, so a watch or the page's channel, which stream for hours, are
//!   never idle while they stream.
//! - **Connection cap** (`--max-connections`, default 512, lowered to what
//!   the file limit leaves room for): at the cap, a new connection takes the
//!   place of the oldest connection that has not authenticated; if every open
//!   connection has, the new one is closed at once. The same shedding frees a
//!   descriptor when `accept` fails for lack of one.
//!
//! hyper's own `header_read_timeout` is not used: it restarts whenever a
//! connection goes idle, so it cannot tell an idle keep-alive connection from
//! a slow request head, and the two limits differ here by who is connected.
//!
//! At start, [`raise_file_limit`] lifts the soft `RLIMIT_NOFILE` to the hard
//! limit, since every browser connection may also hold an upstream one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tower::ServiceExt;

use crate::body::Observer;

/// Default of `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default of `--header-read-timeout`.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of `--idle-timeout`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Descriptors kept out of the connection budget: the listener, the
/// runtime's own, log output, the files of the page being read.
const RESERVED_DESCRIPTORS: u64 = 64;

/// How long a connection told to close may take to finish writing.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The limits of [`Connections`]; from `ServeConfig`.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

/// What one browser connection has done so far; requests carry it in their
/// extensions so the layers can mark it authenticated and count its requests.
#[derive(Debug)]
pub struct ConnState {
    authenticated: AtomicBool,
    in_flight: AtomicUsize,
    /// Milliseconds since [`Connections::epoch`] when the last request ended
    /// (or the connection opened).
    idle_since_ms: AtomicU64,
    /// Woken when the last request in flight ends: the idle clock starts.
    became_idle: Notify,
    epoch: Instant,
}

impl ConnState {
    fn new(epoch: Instant) -> Self {
        ConnState {
            authenticated: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(millis_since(epoch)),
            became_idle: Notify::new(),
            epoch,
        }
    }

    /// A request on this connection proved a session: the connection now gets
    /// the idle timeout and is shed last.
    pub fn mark_authenticated(&self) {
        self.authenticated.store(true, Ordering::Release);
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Counts a request as in flight until the returned guard is dropped
    /// (with the response body, see [`crate::body::Observed`]).
    pub fn start_request(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    /// Time left before the connection counts as idle too long; `None` while a
    /// request is in flight.
    fn time_left(&self, limits: &ConnLimits) -> Option<Duration> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let allowed = if self.is_authenticated() {
            limits.idle_timeout
        } else {
            limits.header_read_timeout
        };
        let idle_for =
            millis_since(self.epoch).saturating_sub(self.idle_since_ms.load(Ordering::Acquire));
        Some(allowed.saturating_sub(Duration::from_millis(idle_for)))
    }
}

/// A request in flight; ends it when dropped.
#[derive(Debug)]
pub struct InFlight(Arc<ConnState>);

impl Observer for InFlight {}

impl Drop for InFlight {
    fn drop(&mut self) {
        let state = &self.0;
        state
            .idle_since_ms
            .store(millis_since(state.epoch), Ordering::Release);
        if state.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.became_idle.notify_one();
        }
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A snapshot of [`Connections::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Browser connections open now.
    pub open: usize,
    /// Of those, how many have authenticated.
    pub authenticated: usize,
    /// Connections closed to make room for a newer one since start.
    pub shed: u64,
    /// Connections closed on arrival because every open one had authenticated.
    pub refused: u64,
    /// The cap in force (`--max-connections`, lowered to fit the file limit).
    pub max: usize,
}

/// Every open browser connection, oldest first.
#[derive(Debug)]
pub struct Connections {
    limits: ConnLimits,
    epoch: Instant,
    next_id: AtomicU64,
    live: Mutex<BTreeMap<u64, Tracked>>,
    shed: AtomicU64,
    refused: AtomicU64,
}

#[derive(Debug)]
struct Tracked {
    state: Arc<ConnState>,
    task: AbortHandle,
}

impl Connections {
    pub fn new(limits: ConnLimits) -> Self {
        Connections {
            limits,
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            live: Mutex::new(BTreeMap::new()),
            shed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    pub fn stats(&self) -> ConnectionStats {
        let live = lock(&self.live);
        ConnectionStats {
            open: live.len(),
            authenticated: live.values().filter(|t| t.state.is_authenticated()).count(),
            shed: self.shed.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            max: self.limits.max_connections,
        }
    }

    /// Closes the oldest connection that has not authenticated; false if there is none.
    fn shed_one(&self, live: &mut BTreeMap<u64, Tracked>) -> bool {
        let victim = live
            .iter()
            .find(|(_, tracked)| !tracked.state.is_authenticated())
            .map(|(id, _)| *id);
        let Some(tracked) = victim.and_then(|id| live.remove(&id)) else {
            return false;
        };
        // Dropping the task's future drops the connection: the socket closes.
        tracked.task.abort();
        self.shed.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn forget(&self, id: u64) {
        lock(&self.live).remove(&id);
    }
}

/// Removes its connection from the registry when the connection's task ends
/// (or is aborted).
struct Registered {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.forget(self.id);
    }
}

/// Accepts connections and serves each with hyper's HTTP/1 server (browsers
/// speak HTTP/1.1 to a plain-http origin). Body chunks go out as vectored
/// writes of the upstream's own buffers instead of being copied into one flat
/// write buffer per connection: the copy was 8% of serve's CPU for a 100 MB
/// list. (Flattening once held less memory with 1,000 watches, 43 vs 54 MiB,
/// but that was before watches read 4 KiB at a time; on one worker thread,
/// see [`crate::serve::runtime`], vectored writes hold 34–36 MiB against
/// flattening's 37.)
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    connections: Arc<Connections>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                if out_of_descriptors(&error) && connections.shed_one(&mut lock(&connections.live))
                {
                    // The shed connection's task frees its descriptor when it
                    // next runs; let it.
                    tokio::task::yield_now().await;
                    continue;
                }
                // e.g. EMFILE with nothing to shed: wait for connections to
                // close instead of spinning
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

        let state = Arc::new(ConnState::new(connections.epoch));
        let mut live = lock(&connections.live);
        if live.len() >= connections.limits.max_connections && !connections.shed_one(&mut live) {
            drop(live);
            connections.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                %peer,
                max = connections.limits.max_connections,
                "refusing a connection: every open connection has authenticated \
                 (raise --max-connections)"
            );
            continue;
        }
        let id = connections.next_id.fetch_add(1, Ordering::Relaxed);
        let registered = Registered {
            connections: Arc::clone(&connections),
            id,
        };
        // Spawned with the registry locked, so the task cannot forget itself
        // before it is recorded.
        let task = tokio::spawn(serve_connection(
            tcp,
            peer,
            app.clone(),
            Arc::clone(&state),
            connections.limits,
            registered,
        ));
        live.insert(
            id,
            Tracked {
                state,
                task: task.abort_handle(),
            },
        );
    }
}

/// Serves one connection until it ends, closing it when it has been idle too
/// long (see the module doc).
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    state: Arc<ConnState>,
    limits: ConnLimits,
    _registered: Registered,
) {
    let conn_state = Arc::clone(&state);
    let service = app.map_request(move |mut request: http::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(Arc::clone(&conn_state));
        request
    });
    let service = hyper_util::service::TowerToHyperService::new(service);
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
    tokio::pin!(connection);
    let busy_recheck = limits.idle_timeout.max(limits.header_read_timeout);
    loop {
        let left = state.time_left(&limits);
        if left == Some(Duration::ZERO) {
            let why = if state.is_authenticated() {
                "idle timeout"
            } else {
                "header-read timeout"
            };
            tracing::debug!(%peer, why, "closing an idle connection");
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(CLOSE_GRACE, connection.as_mut()).await;
            return;
        }
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, %peer, "connection ended with an error");
                }
                return;
            }
            _ = state.became_idle.notified() => {}
            _ = tokio::time::sleep(left.unwrap_or(busy_recheck)) => {}
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(target_os = "linux")]
fn out_of_descriptors(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

#[cfg(not(target_os = "linux"))]
fn out_of_descriptors(_error: &std::io::Error) -> bool {
    false
}

/// Raises the soft limit on open files to the hard limit (bounded by what the
/// kernel allows a process). Returns the soft limit in force afterwards.
#[cfg(target_os = "linux")]
pub fn raise_file_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    // `fs.nr_open`'s default: a soft limit above it is refused.
    const KERNEL_DEFAULT_MAX: u64 = 1 << 20;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    let wanted = hard.min(KERNEL_DEFAULT_MAX);
    if soft >= wanted {
        return Some(soft);
    }
    match setrlimit(Resource::RLIMIT_NOFILE, wanted, hard) {
        Ok(()) => {
            tracing::debug!(from = soft, to = wanted, "raised the open-file limit");
            Some(wanted)
        }
        Err(error) => {
            tracing::warn!(%error, soft, hard, "cannot raise the open-file limit");
            Some(soft)
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn raise_file_limit() -> Option<u64> {
    None
}

/// The connection cap that fits the current soft file limit: each browser
/// connection may hold an upstream connection too, so half of what is left
/// after `RESERVED_DESCRIPTORS`.
#[cfg(target_os = "linux")]
pub fn fitting_cap(wanted: usize) -> usize {
    use nix::sys::resource::{getrlimit, Resource};
    let Ok((soft, _)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return wanted;
    };
    let budget =
        usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS) / 2).unwrap_or(usize::MAX);
    wanted.min(budget.max(1))
}

#[cfg(not(target_os = "linux"))]
pub fn fitting_cap(wanted: usize) -> usize {
    wanted
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
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

    #[test]
    fn idle_clock_runs_only_without_requests_and_by_who_is_connected() {
        let limits = ConnLimits {
            max_connections: 1,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        };
        let state = Arc::new(ConnState::new(Instant::now()));
        let left = state.time_left(&limits).unwrap();
        assert!(left <= Duration::from_secs(10) && left > Duration::from_secs(9));
        let request = state.start_request();
        assert_eq!(state.time_left(&limits), None);
        state.mark_authenticated();
        drop(request);
        let left = state.time_left(&limits).unwrap();
        assert!(left > Duration::from_secs(59), "{left:?}");
    }
}
