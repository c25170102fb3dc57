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
//! restart, expire-watches, forbid; `POST /_sim/crd` (`{"installed": false}`
//! uninstalls the demo CRD and `true` installs it again; `{"group": G,
//! "version": V, "kind": K, "plural": P, "namespaced": B, "objects": […]}`
//! adds a CRD, `{"remove": "P.G"}` removes one); `POST /_sim/logs {"lines_per_sec": N}` (pod logs' rate,
//! up to 10,000 across all containers; `GET` reports it and the lines served);
//! `POST /_sim/patch {"resource": R, "key": "NS/NAME", "patch": {…},
//! "manager": M}` (a JSON merge patch written as field manager M; the
//! controllers react: a Deployment's `spec.replicas` scales its replicaset,
//! pods, events, statuses and EndpointSlice; answers the patch's
//! resourceVersion); `POST /_sim/events {"ttl_secs": N}` (the events' time to
//! live; `GET` reports it and how many are kept);
//! `GET /_sim/digest?resource=pods` (the store digest now) and
//! `GET /_sim/digest?resource=pods&rv=RV` (as it was at resourceVersion RV:
//! 400 for an RV that is not a number or is newer than now, 410 Expired
//! for one older than the oldest kept — see `digest` for the contract),
//! `GET /_sim/stats` (counters, the oldest resourceVersions a watch and a
//! past digest can start from, `clusterUid`).
//! `SimConfig::forbidden` (`--forbid pods,…`) makes resources answer 403 as RBAC would.
//!
//! The cluster's identity, the `kube-system` Namespace's `metadata.uid`
//! (`GET /api/v1/namespaces/kube-system`), is random for every [`Sim`] —
//! two sims, in one process or two, of one seed or not, differ — and stays
//! for its life, the `restart` fault included (the same cluster, its
//! apiserver restarted). Every other uid is seeded, the same seed giving
//! the same uids.
//!
//! Every object carries `metadata.managedFields` kept right on every write
//! (`managed`): the workload's writes name the manager a cluster's would
//! (kube-controller-manager, kube-scheduler, kubelet, helm, kubectl, …).
//! Events are aggregated (a repeat bumps `count`), expire after
//! `SimConfig::event_ttl`, and are served as core/v1 `events` and as
//! `events.k8s.io/v1` `events` (one object, two views). Each Service has an
//! EndpointSlice of its ready pods.
//!
//! Files: `config` (how it starts), `cluster` (the state every handler
//! shares), `store` (revisions, history, snapshots, views, the catalogue of
//! types), `resources` (the types and the catalogue), `routes` (paths and
//! query parameters → list/get/watch), `query` (query strings read as the
//! apiserver reads them), `watch` (streams), `selectors`, `table`
//! (server-side printing), `discovery`, `objects` (realistic object
//! builders), `events` (Event objects in both APIs), `managed`
//! (managedFields), `workload` (seeded churn, the controllers, the event
//! recorder, EndpointSlices), `faults` (pending faults), `control` (the
//! `/_sim/*` churn, scale, fault and stats routes), `digest` (`/_sim/digest`,
//! now and at a past resourceVersion), `patch`
//! (`/_sim/patch`, `/_sim/events`), `crd` (CRDs added and removed at
//! runtime, the demo's among them), `logs` (pods' logs, generated per
//! container run), `metrics` (the metrics API, `metrics.k8s.io/v1beta1`, as
//! metrics-server serves it, and the leaking container it OOMKills),
//! `record` (every object version, for tests), `status` (errors as
//! `Status`, JSON answers).

mod cluster;
mod config;
mod control;
mod crd;
mod digest;
mod discovery;
mod events;
mod faults;
mod list_body;
mod logs;
mod managed;
mod metrics;
mod objects;
mod patch;
mod query;
mod record;
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

use cluster::Inner;
use faults::Faults;
use store::{Store, StoreConfig};
use workload::Workload;

pub use config::SimConfig;
pub use digest::DigestAtError;
/// Kubernetes quantities as the metrics API writes them (for tests and
/// clients that read them back).
pub use metrics::quantity;
pub use record::{RecordedVersion, VersionLog, VersionOrigin};

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
        let store = Arc::new(Store::new(StoreConfig {
            prefix: config.rv_prefix.clone(),
            log_cap: config.history,
            key_history: config.digest_history,
            watch_buffer: config.watch_lag_limit,
            uid_seed: config.seed,
            cluster_uid: store::random_uid(),
            managed_fields: config.managed_fields,
        }));
        let mut wl = Workload::setup(&store, config.seed, config.initial_pods);
        tracing::info!(
            pods = config.initial_pods,
            seconds = format!("{:.1}", building.elapsed().as_secs_f64()),
            "the simulated cluster is ready"
        );
        wl.events().set_ttl(config.event_ttl);
        let workload = Arc::new(tokio::sync::Mutex::new(wl));
        tokio::spawn(workload::tasks::expire_events(
            store.clone(),
            workload.clone(),
        ));
        let metrics = metrics::Metrics::new(&config);
        if let Some(m) = &metrics {
            m.start(store.clone(), workload.clone());
        }
        let (churn, churn_rx) = tokio::sync::watch::channel(config.churn_per_sec);
        let (restart, _) = tokio::sync::watch::channel(0u64);
        tokio::spawn(workload::tasks::run(
            store.clone(),
            workload.clone(),
            churn_rx,
        ));
        Sim {
            inner: Arc::new(Inner {
                config,
                store,
                workload,
                churn,
                faults: Faults::default(),
                crd_lock: std::sync::Mutex::new(()),
                open_watches: AtomicUsize::new(0),
                restart,
                logs: logs::schedule::LogState::default(),
                metrics,
            }),
        }
    }

    /// `/api`, `/apis`, `/version`, `/openapi/*`: what `kubectl` and the page call.
    pub fn api_router(&self) -> axum::Router {
        routes::router(self.inner.clone())
    }

    /// `/_sim/*`: churn, scale, fault injection, CRDs, digest, stats, logs'
    /// rate, patches, events' TTL.
    pub fn control_router(&self) -> axum::Router {
        control::router(self.inner.clone())
            .merge(digest::router(self.inner.clone()))
            .merge(crd::router(self.inner.clone()))
            .merge(logs::router(self.inner.clone()))
            .merge(patch::router(self.inner.clone()))
    }

    /// The digest (`deltascope_facts::digest`: keys and resourceVersions in
    /// key order) of one resource (`pods`, `deployments.apps`), all
    /// namespaces, as the tests compare it with a client's. An unknown
    /// resource digests as empty.
    pub fn digest(&self, resource: &str) -> String {
        match self.inner.store.by_name(resource) {
            Some((res, _)) => self.inner.store.digest(res).2,
            None => deltascope_facts::EMPTY_DIGEST.to_string(),
        }
    }

    /// The digest of one resource as it was at `resource_version` (see
    /// `GET /_sim/digest?resource=R&rv=RV`): the objects that existed then,
    /// with their resourceVersions then.
    pub fn digest_at(
        &self,
        resource: &str,
        resource_version: &str,
    ) -> Result<String, DigestAtError> {
        digest::digest(&self.inner.store, resource, Some(resource_version)).map(|d| d.digest)
    }

    /// The cluster's identity: the `kube-system` Namespace's `metadata.uid`,
    /// random for each `Sim`, the same for its whole life.
    pub fn cluster_uid(&self) -> String {
        self.inner.store.cluster_uid().to_string()
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

    /// Starts recording every object version: those stored now and every
    /// later change, in commit order. Must be called inside the runtime.
    pub fn record_versions(&self) -> VersionLog {
        record::record(&self.inner.store)
    }
}
