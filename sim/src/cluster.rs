//! What every handler of the simulated cluster shares, behind one `Arc`
//! ([`Inner`]): the configuration, the store, the workload and its churn
//! rate, pending faults, the watch count, the restart signal, the pod
//! logs' rate schedule and the metrics API's state. Handlers take it as their axum state; it depends on
//! the parts' state types only, never on the handlers.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use crate::config::SimConfig;
use crate::faults::Faults;
use crate::logs::schedule::LogState;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::workload::Workload;

/// Shared state behind every clone of [`crate::Sim`].
pub(crate) struct Inner {
    pub config: SimConfig,
    pub store: Arc<Store>,
    pub workload: Arc<tokio::sync::Mutex<Workload>>,
    pub churn: tokio::sync::watch::Sender<f64>,
    pub faults: Faults,
    /// Held for a whole `POST /_sim/crd`, so two never interleave their
    /// writes (which CRDs exist is the store's catalogue).
    pub crd_lock: std::sync::Mutex<()>,
    pub open_watches: AtomicUsize,
    /// Bumped by the `restart` fault; standalone connections close on change.
    pub restart: tokio::sync::watch::Sender<u64>,
    /// Pod logs: the rate schedule and the lines served.
    pub logs: LogState,
    /// The metrics API (`None` with `SimConfig::metrics` off).
    pub metrics: Option<Arc<Metrics>>,
}

/// How handlers hold it.
pub(crate) type Shared = Arc<Inner>;
