//! The recorder: every change of every watched resource kept in
//! the history database from the moment serve (or `deltascope record`)
//! starts, with the spans it could not watch stored as gaps.
//!
//! It runs the page's informer core natively, one [`Informer`] per
//! resource, over serve's own upstream path ([`Forwarder`]: `kubectl proxy`
//! or the in-process simulated cluster) with no browser session, and hands
//! what the informers produce to a [`RecordStore`] as
//! [`deltascope_history::Write`]s. The database is not here: the store is
//! the history crate's (or a test's).
//!
//! - `supervisor`: the cluster's identity, discovery every minute and after
//!   a CRD change, a driver per resource, the database's outages (stop
//!   everything, probe with backoff, restart from the record);
//!   `gap_causes`: the reasons of a gap that spans several of its epochs;
//!   `identity_gate`: no request is sent while the identity is in doubt;
//! - `driver`: one resource's informer and its requests; `tracker`: what
//!   its informer's output becomes (deltas, gaps, watermarks);
//! - `writer`: the one task that stores, in batches, from a bounded queue;
//! - `usage`: the usage sampler (`kubectl top`'s numbers once per metrics
//!   window, `--record-usage`), `usage_list` reading its answers, `owners`
//!   each pod's controller and top workload from the drivers' deltas;
//! - `memory`: freed memory given back after lists and restores;
//! - `discovery`, `upstream`, `status`, `clock`, `store` (the trait).
//!
//! It runs on a thread of its own with a current-thread runtime (an
//! informer is not `Send`, and parsing and writing every change must not
//! hold serve's workers). Informers list page by page (no streaming list),
//! as plain JSON (no Table mode), in all namespaces, with no resync: no
//! Sync deltas exist to store.
//!
//! Memory: the informers' stores (compact tapes, shared with the
//! tracker's set of last recorded versions, which keeps no copy of a key),
//! one list page ([`LIST_PAGE`] objects) or response chunk per resource,
//! the writer's queue and the batch being stored ([`WRITE_QUEUE`] messages
//! and [`QUEUE_BYTES`] of objects together), and what one informer input
//! produces while it is handed on. Lists run [`LIST_PERMITS`] at a time.
//! At their peak a relist holds the objects it replaces and the new list,
//! and a restore the recorded state's text; once done, what they freed is
//! given back to the system (`memory`: glibc keeps it otherwise).
//!
//! [`Informer`]: deltascope_informer::Informer

mod clock;
mod discovery;
mod driver;
mod gap_causes;
mod identity_gate;
mod memory;
mod owners;
mod status;
mod store;
mod supervisor;
mod tracker;
#[cfg(test)]
mod tracker_tests;
mod upstream;
mod usage;
mod usage_list;
mod writer;
#[cfg(test)]
mod writer_tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::forward::Forwarder;

pub use self::clock::wall_now_ms;
pub use self::discovery::{DiscoveredResource, Filter};
pub use self::driver::LIST_PAGE;
pub use self::status::{RecorderState, RecorderStatus, ResourceProblem};
pub use self::store::{RecordStore, StoreUnavailable};
pub use self::supervisor::LIST_PERMITS;
pub use self::tracker::WatermarkTiming;
pub use self::upstream::{GetError, IdentityError};
pub use self::writer::{BATCH_BYTES, BATCH_WAIT, BATCH_WRITES, QUEUE_BYTES, WRITE_QUEUE};

/// What to record and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// `--record RES,…`: only these (names as in `data-resource`: `pods`,
    /// `deployments.apps`); `None`: every resource discovery lists.
    pub record: Option<Vec<String>>,
    /// `--no-record RES,…`: all but these.
    pub no_record: Vec<String>,
    /// Store Secrets' values. Off (the default), Secrets are stored redacted
    /// exactly as serve redacts them, even under `--show-secrets`.
    pub store_secret_values: bool,
    /// Discovery runs again this often (and soon after a CRD changes).
    pub rediscover_every: Duration,
    /// How often watermarks are written.
    pub watermarks: WatermarkTiming,
    /// The database is retried after the first wait, doubling up to the second.
    pub database_retry: (Duration, Duration),
    /// `--record-usage`: a metrics window of pods' and nodes' usage is
    /// stored at most this often (`None`: `off`, none is).
    pub usage_every: Option<Duration>,
    /// The cluster's identity is read again at least this often, and at
    /// once whenever something puts it in doubt (`identity_gate`).
    pub identity_check_every: Duration,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            record: None,
            no_record: Vec::new(),
            store_secret_values: false,
            rediscover_every: Duration::from_secs(60),
            watermarks: WatermarkTiming::default(),
            database_retry: (Duration::from_secs(1), Duration::from_secs(30)),
            usage_every: Some(Duration::from_secs(60)),
            identity_check_every: Duration::from_secs(2),
        }
    }
}

/// Why the recorder stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// The cluster's identity cannot be read (refused, or no kube-system
    /// namespace): nothing can be recorded without it.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error("the recorder cannot start its runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the recorder failed: {0}")]
    Panicked(String),
}

/// A running recorder.
pub struct RecorderHandle {
    status: watch::Receiver<RecorderStatus>,
    shutdown: CancellationToken,
    result: oneshot::Receiver<Result<(), RecorderError>>,
}

impl RecorderHandle {
    /// The status now (a clone).
    pub fn status(&self) -> RecorderStatus {
        self.status.borrow().clone()
    }

    /// The status as it changes.
    pub fn subscribe(&self) -> watch::Receiver<RecorderStatus> {
        self.status.clone()
    }

    /// Stops recording: each resource writes its last watermark and what is
    /// queued is stored (within 10 s), then [`RecorderHandle::stopped`]
    /// returns. The same as cancelling the token given to [`spawn`].
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Waits until the recorder has stopped: after the shutdown signal
    /// (`Ok`), or on an error it cannot get past.
    pub async fn stopped(self) -> Result<(), RecorderError> {
        match self.result.await {
            Ok(result) => result,
            Err(_) => Err(RecorderError::Panicked(
                "the recorder's thread ended without saying why".into(),
            )),
        }
    }
}

/// Starts recording what `forwarder`'s upstream serves into `store`, until
/// `shutdown` is cancelled.
///
/// The recorder runs on a thread of its own (`deltascope-recorder`, a
/// current-thread tokio runtime): the informer core is not `Send`, and
/// parsing and writing every change must not hold serve's workers. The
/// store's futures run there too.
pub fn spawn<S: RecordStore>(
    forwarder: Forwarder,
    store: Arc<S>,
    config: RecorderConfig,
    shutdown: CancellationToken,
) -> RecorderHandle {
    let (board, status) = status::Board::new();
    let (done, result) = oneshot::channel();
    let supervisor = supervisor::Supervisor {
        upstream: upstream::Upstream {
            forwarder,
            store_secret_values: config.store_secret_values,
        },
        store,
        config,
        board: board.clone(),
        clock: clock::Clock::new(),
        shutdown: shutdown.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("deltascope-recorder".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let error = RecorderError::Runtime(error);
                    board.set_state(RecorderState::Stopped {
                        error: Some(error.to_string()),
                    });
                    let _ = done.send(Err(error));
                    return;
                }
            };
            let local = tokio::task::LocalSet::new();
            let result = local.block_on(&runtime, supervisor.run());
            let _ = done.send(result);
        });
    if let Err(error) = thread {
        // `done` went with the closure: stopped() says the thread ended
        tracing::error!(%error, "recorder: cannot start its thread");
    }
    RecorderHandle {
        status,
        shutdown,
        result,
    }
}

/// The cluster's identity (the `kube-system` namespace's uid) read through
/// `forwarder`, for a serve that reads the history without recording.
pub async fn read_cluster_id(
    forwarder: &Forwarder,
) -> Result<deltascope_history::ClusterId, IdentityError> {
    let upstream = upstream::Upstream {
        forwarder: forwarder.clone(),
        store_secret_values: false,
    };
    upstream::read_cluster_id(&upstream).await
}
