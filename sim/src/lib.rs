//! The simulated cluster: an in-memory Kubernetes API server (MVCC store, list
//! and watch routes, selectors, Table output, discovery), a seeded workload
//! generator and fault injection. Used by `deltascope sim`, `serve --demo` and tests.
//!
//! Semantics follow the apiserver's etcd3 watcher: one global revision
//! stamps every write; lists page with opaque `continue` tokens that are
//! consistent snapshots until compacted (then 410); watches resume from a
//! resourceVersion in the history window (older → ERROR 410), start with
//! ADDED events when none is given, end a streaming list with an annotated
//! BOOKMARK, turn selector transitions into ADDED/DELETED, send periodic
//! BOOKMARKs and close slow readers instead of buffering without bound.
//!
//! Control API (`control_router`): `POST /_sim/churn {"events_per_sec": N}`,
//! `POST /_sim/scale {"pods": N}`, `POST /_sim/fault {"kind": K, "count": N}`
//! with K one of drop-watches, compact, throttle, error, garbage-line,
//! restart; `POST /_sim/crd {"installed": false}` (uninstall the demo CRD, or
//! install it again); `POST /_sim/logs {"lines_per_sec": N}` (pod logs' rate,
//! up to 10,000 across all containers; `GET` reports it and the lines served);
//! `POST /_sim/patch {"resource": R, "key": "NS/NAME", "patch": {…},
//! "manager": M}` (a JSON merge patch written as field manager M; the
//! controllers react: a Deployment's `spec.replicas` scales its replicaset,
//! pods, events, statuses and EndpointSlice; answers the patch's
//! resourceVersion); `POST /_sim/events {"ttl_secs": N}` (the events' time to
//! live; `GET` reports it and how many are kept);
//! `GET /_sim/digest?resource=pods`, `GET /_sim/stats`.
//! `SimConfig::forbidden` (`--forbid pods,…`) makes resources answer 403 as RBAC would.
//!
//! Every object carries `metadata.managedFields` kept right on every write
//! (`managed`): the workload's writes name the manager a cluster's would
//! (kube-controller-manager, kube-scheduler, kubelet, helm, kubectl, …).
//! Events are aggregated (a repeat bumps `count`), expire after
//! `SimConfig::event_ttl`, and are served as core/v1 `events` and as
//! `events.k8s.io/v1` `events` (one object, two views). Each Service has an
//! EndpointSlice of its ready pods.
//!
//! Files: `store` (revisions, history, snapshots, views), `resources` (what is
//! served), `routes` (paths and query parameters → list/get/watch), `watch`
//! (streams), `selectors`, `table` (server-side printing), `discovery`,
//! `objects` (realistic object builders), `events` (Event objects in both
//! APIs), `managed` (managedFields), `workload` (seeded churn, the
//! controllers, the event recorder, EndpointSlices), `faults` (fault
//! injection and `/_sim/*`), `patch` (`/_sim/patch`, `/_sim/events`), `crd`
//! (the demo CRD installed and uninstalled at runtime), `logs` (pods' logs,
//! generated per container run), `status` (errors as `Status`).

mod crd;
mod discovery;
mod events;
mod faults;
mod list_body;
mod logs;
mod managed;
mod objects;
mod patch;
mod resources;
mod routes;
pub mod selectors;
mod status;
mod store;
mod table;
mod watch;
mod workload;

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};

use faults::Faults;
use resources::{by_name, ResIdx};
use store::Store;
use workload::Workload;

/// How the simulated cluster starts.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub initial_pods: usize,
    pub churn_per_sec: f64,
    /// Prepended to every resourceVersion ("" = plain numbers).
    pub rv_prefix: String,
    pub minor_version: u32,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Events kept for watches resuming from a resourceVersion and for
    /// consistent continued lists; older ones are compacted away.
    pub history: usize,
    /// Serve streaming lists (`sendInitialEvents=true`). When false, such a
    /// watch is refused with 422 Invalid, as an apiserver with the WatchList
    /// feature gate off does, so clients list page by page (`--no-watch-list`).
    pub watch_list: bool,
    /// Events a watch may fall behind the store before it is closed.
    pub watch_lag_limit: usize,
    /// Encoded events buffered per watch connection.
    pub watch_buffer: usize,
    /// A watch whose buffer stays full this long is closed as too slow.
    pub slow_watch_timeout: Duration,
    /// Resources every request for is answered `403 Forbidden`, as RBAC would
    /// (`--forbid`): plurals, or `plural.group` for a named group.
    pub forbidden: Vec<String>,
    /// Events are deleted this long after their last write (the
    /// apiserver's `--event-ttl`; `deltascope sim --event-ttl SECS`, and
    /// `POST /_sim/events {"ttl_secs": N}` at runtime).
    pub event_ttl: Duration,
    /// Write `metadata.managedFields` on every object (about 4 KB of a
    /// pod's 9 KB); off, objects carry none (for benchmarks that want the
    /// bytes of the objects alone).
    pub managed_fields: bool,
}

impl SimConfig {
    /// Does `--forbid` name this resource (`pods`, or `widgets.demo.deltascope.dev`)?
    pub fn forbids(&self, plural: &str, group: &str) -> bool {
        self.forbidden.iter().any(|name| {
            let name = name.trim();
            name == plural || (!group.is_empty() && name == format!("{plural}.{group}"))
        })
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            initial_pods: 200,
            churn_per_sec: 5.0,
            rv_prefix: String::new(),
            minor_version: 32,
            bookmark_interval: Duration::from_secs(1),
            history: 5000,
            watch_list: true,
            watch_lag_limit: 4096,
            watch_buffer: 64,
            slow_watch_timeout: Duration::from_secs(10),
            forbidden: Vec::new(),
            event_ttl: workload::events::DEFAULT_TTL,
            managed_fields: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the simulated cluster only listens on loopback addresses; {0} is not one (try 127.0.0.1:8001)")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Server(std::io::Error),
}

/// Shared state behind every clone of [`Sim`].
pub(crate) struct Inner {
    config: SimConfig,
    store: Arc<Store>,
    workload: Arc<tokio::sync::Mutex<Workload>>,
    churn: tokio::sync::watch::Sender<f64>,
    faults: Faults,
    /// The demo CRD, installed or not (`POST /_sim/crd`).
    crd: crd::CrdState,
    open_watches: AtomicUsize,
    /// Bumped by the `restart` fault; standalone connections close on change.
    restart: tokio::sync::watch::Sender<u64>,
    /// Pod logs: the rate schedule and the lines served.
    logs: logs::LogState,
}

/// `deltascope sim --listen ADDR`.
pub async fn run_standalone(listen: SocketAddr, config: SimConfig) -> Result<(), SimError> {
    if !listen.ip().is_loopback() {
        return Err(SimError::NotLoopback(listen));
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| SimError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(SimError::Server)?;
    let sim = Sim::start(config);
    let app = sim.api_router().merge(sim.control_router());
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "deltascope sim: listening on http://{addr}");
        let _ = out.flush();
    }
    tracing::info!(%addr, "simulated cluster listening");
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut restart = sim.inner.restart.subscribe();
        tokio::spawn(async move {
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            tokio::select! {
                result = conn => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                _ = restart.changed() => {
                    tracing::info!(%peer, "fault: dropping connection (simulated restart)");
                }
            }
        });
    }
}

/// A running simulated cluster. Cheap to clone; all clones share one cluster.
/// `start` must be called inside a tokio runtime (it spawns the workload task).
#[derive(Clone)]
pub struct Sim {
    inner: Arc<Inner>,
}

impl Sim {
    pub fn start(config: SimConfig) -> Sim {
        // at 100,000 pods this takes half a minute on a small machine: say
        // so before, and when it is done
        let building = std::time::Instant::now();
        tracing::info!(
            pods = config.initial_pods,
            "building the simulated cluster (about 3 s per 10,000 pods)…"
        );
        let store = Arc::new(Store::new(
            config.rv_prefix.clone(),
            config.history,
            config.watch_lag_limit,
            config.seed,
            config.managed_fields,
        ));
        let mut wl = Workload::setup(&store, config.seed, config.initial_pods);
        tracing::info!(
            pods = config.initial_pods,
            seconds = format!("{:.1}", building.elapsed().as_secs_f64()),
            "the simulated cluster is ready"
        );
        wl.events().set_ttl(config.event_ttl);
        let workload = Arc::new(tokio::sync::Mutex::new(wl));
        tokio::spawn(workload::expire_events(store.clone(), workload.clone()));
        let (churn, churn_rx) = tokio::sync::watch::channel(config.churn_per_sec);
        let (restart, _) = tokio::sync::watch::channel(0u64);
        tokio::spawn(workload::run(store.clone(), workload.clone(), churn_rx));
        Sim {
            inner: Arc::new(Inner {
                config,
                store,
                workload,
                churn,
                faults: Faults::default(),
                crd: crd::CrdState::default(),
                open_watches: AtomicUsize::new(0),
                restart,
                logs: logs::LogState::default(),
            }),
        }
    }

    /// `/api`, `/apis`, `/version`, `/openapi/*`: what `kubectl` and the page call.
    pub fn api_router(&self) -> axum::Router {
        routes::router(self.inner.clone())
    }

    /// `/_sim/*`: churn, scale, fault injection, digest.
    pub fn control_router(&self) -> axum::Router {
        faults::router(self.inner.clone())
            .merge(logs::router(self.inner.clone()))
            .merge(patch::router(self.inner.clone()))
    }

    /// DESIGN §4 digest of one resource (`pods`, `deployments.apps`), all
    /// namespaces. An unknown resource digests as empty.
    pub fn digest(&self, resource: &str) -> String {
        match by_name(resource) {
            Some(res) => digest_of(&self.inner.store, res).2,
            None => deltascope_facts::EMPTY_DIGEST.to_string(),
        }
    }

    /// Watches currently being served.
    pub fn open_watches(&self) -> usize {
        self.inner.open_watches.load(Ordering::SeqCst)
    }

    /// Changes each time the `restart` fault is injected. The sim aborts its
    /// own watches; a server embedding the sim (`serve --demo`) may also drop
    /// its connections when this changes, as `run_standalone` does.
    pub fn restart_signal(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.restart.subscribe()
    }
}

/// (revision, object count, DESIGN §4 digest) of one resource.
pub(crate) fn digest_of(store: &Store, res: ResIdx) -> (u64, usize, String) {
    store.digest(res)
}

/// How a recorded object version came to be (see [`Sim::record_versions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionOrigin {
    /// Already stored when recording started.
    Existing,
    Added,
    Modified,
    /// The deletion event (the last state restamped with the deletion's revision).
    Deleted,
}

/// One object version the simulated cluster held or committed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordedVersion {
    /// `pods`, `deployments.apps`, ...
    pub resource: String,
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub key: String,
    pub resource_version: String,
    pub origin: VersionOrigin,
}

/// Every object version since [`Sim::record_versions`] was called, filled by
/// a background task; tests check a client never shows a version the
/// cluster did not produce.
#[derive(Clone)]
pub struct VersionLog {
    versions: Arc<std::sync::Mutex<Vec<RecordedVersion>>>,
    /// The recorder fell behind the store's broadcast and missed events.
    lagged: Arc<std::sync::atomic::AtomicBool>,
}

impl VersionLog {
    /// A copy of everything recorded so far, in commit order.
    pub fn versions(&self) -> Vec<RecordedVersion> {
        self.versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// True if events were missed (the log is then incomplete).
    pub fn lagged(&self) -> bool {
        self.lagged.load(Ordering::SeqCst)
    }
}

impl Sim {
    /// Starts recording every object version: those stored now and every
    /// later change, in commit order. Must be called inside the runtime.
    pub fn record_versions(&self) -> VersionLog {
        use resources::RESOURCES;
        let (now, mut rx) = self.inner.store.subscribe_everything();
        let store = self.inner.store.clone();
        let initial = now
            .into_iter()
            .map(|(res, key, rev)| RecordedVersion {
                resource: RESOURCES[res].qualified(),
                key,
                resource_version: store.rv_string(rev),
                origin: VersionOrigin::Existing,
            })
            .collect();
        let log = VersionLog {
            versions: Arc::new(std::sync::Mutex::new(initial)),
            lagged: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        };
        let out = log.clone();
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match rx.recv().await {
                    Ok(store::Msg::Event(e)) => {
                        let origin = match e.etype {
                            store::EventType::Added => VersionOrigin::Added,
                            store::EventType::Modified => VersionOrigin::Modified,
                            store::EventType::Deleted => VersionOrigin::Deleted,
                        };
                        let v = RecordedVersion {
                            resource: RESOURCES[e.res].qualified(),
                            key: e.obj.key.clone(),
                            resource_version: store.rv_string(e.rev),
                            origin,
                        };
                        out.versions
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(v);
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => out.lagged.store(true, Ordering::SeqCst),
                    Err(RecvError::Closed) => return,
                }
            }
        });
        log
    }
}
