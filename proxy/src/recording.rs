//! Serve's recorded history, assembled: the database `--history` names
//! opened (or why not: serve then runs live-only and says so on the command
//! line, in the summary route and so in the page), the recorder started on
//! it (unless this serve only reads what a team's `deltascope record`
//! writes), retention applied once a minute, and the cluster the history
//! routes read for.
//!
//! The history crate's [`HistoryStore`] is the recorder's [`RecordStore`]
//! through [`DatabaseStore`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deltascope_history::{ClusterId, HistoryStore, HistoryTarget, RecordedState, Retention, Write};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::forward::Forwarder;
use crate::history_api::HistoryAccess;
use crate::recorder::{self, RecordStore, RecorderConfig, RecorderHandle, StoreUnavailable};

/// How often retention runs.
pub const RETENTION_EVERY: Duration = Duration::from_secs(60);

/// What `--history` and its companions ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryOptions {
    pub target: HistoryTarget,
    /// Record here; `false` reads only (a `deltascope record` elsewhere
    /// writes the same database).
    pub record: bool,
    pub recorder: RecorderConfig,
    pub retention: Retention,
}

impl Default for HistoryOptions {
    /// Nothing kept: the library's default (the command line's is the
    /// SQLite file under the state directory).
    fn default() -> Self {
        HistoryOptions {
            target: HistoryTarget::Off,
            record: false,
            recorder: RecorderConfig::default(),
            retention: Retention::default(),
        }
    }
}

/// The history database as the recorder's store.
pub struct DatabaseStore(pub Arc<HistoryStore>);

impl RecordStore for DatabaseStore {
    async fn write(&self, cluster: &ClusterId, writes: Vec<Write>) -> Result<(), StoreUnavailable> {
        self.0
            .write(cluster, &writes)
            .await
            .map_err(|error| StoreUnavailable(error.to_string()))
    }

    async fn recorded_state(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> Result<Option<RecordedState>, StoreUnavailable> {
        self.0
            .recorded_state(cluster, resource)
            .await
            .map_err(|error| StoreUnavailable(error.to_string()))
    }
}

/// The history as serve runs it.
pub struct History {
    pub access: HistoryAccess,
    pub store: Option<Arc<HistoryStore>>,
    recorder: Mutex<Option<RecorderHandle>>,
    status: Option<watch::Receiver<recorder::RecorderStatus>>,
    shutdown: CancellationToken,
}

impl History {
    /// Opens the database and starts what `options` asks for. Never fails:
    /// a database that cannot be used leaves serve live-only, and why is
    /// said (returned in [`History::unavailable`] and by the routes).
    pub async fn start(options: &HistoryOptions, forwarder: &Forwarder) -> History {
        let shutdown = CancellationToken::new();
        let (cluster_tx, cluster) = watch::channel(None::<ClusterId>);
        let (store, unavailable) = match &options.target {
            HistoryTarget::Off => (None, None),
            target => match HistoryStore::open(target).await {
                Ok(store) => (Some(Arc::new(store)), None),
                Err(error) => (
                    None,
                    Some(format!("no history: {error}; serving live only")),
                ),
            },
        };
        let mut recorder_handle = None;
        let mut status = None;
        if let Some(store) = &store {
            if options.record {
                let handle = recorder::spawn(
                    forwarder.clone(),
                    Arc::new(DatabaseStore(Arc::clone(store))),
                    options.recorder.clone(),
                    shutdown.clone(),
                );
                let statuses = handle.subscribe();
                follow_cluster(statuses.clone(), cluster_tx);
                log_changes(statuses.clone());
                status = Some(statuses);
                recorder_handle = Some(handle);
            } else {
                read_cluster(forwarder.clone(), cluster_tx, shutdown.clone());
            }
            if options.retention != Retention::default() {
                apply_retention(Arc::clone(store), options.retention, shutdown.clone());
            }
        }
        let shown = status.clone();
        let recording: Arc<dyn Fn() -> serde_json::Value + Send + Sync> =
            Arc::new(move || match &shown {
                Some(status) => {
                    let status = status.borrow();
                    serde_json::json!({
                        "state": status.summary(),
                        "resources": status.resources,
                        "deltasWritten": status.deltas_written,
                        "lastWriteMs": status.last_write_ms,
                    })
                }
                None => serde_json::Value::Null,
            });
        History {
            access: HistoryAccess {
                store: store.clone(),
                unavailable,
                cluster,
                recording,
            },
            store,
            recorder: Mutex::new(recorder_handle),
            status,
            shutdown,
        }
    }

    /// Why serve keeps no history although `--history` asked for one.
    pub fn unavailable(&self) -> Option<&str> {
        self.access.unavailable.as_deref()
    }

    /// The recorder's status now (`None`: not recording here).
    pub fn recorder_status(&self) -> Option<recorder::RecorderStatus> {
        self.status.as_ref().map(|status| status.borrow().clone())
    }

    /// Stops recording: the last watermarks and what is queued are written
    /// (bounded by the recorder's own shutdown time), then the database is
    /// closed.
    pub async fn stop(&self) {
        self.shutdown.cancel();
        let handle = self.recorder.lock().ok().and_then(|mut held| held.take());
        if let Some(handle) = handle {
            if let Err(error) = handle.stopped().await {
                tracing::warn!(%error, "the recorder stopped with an error");
            }
        }
        if let Some(store) = &self.store {
            store.close().await;
        }
    }
}

/// The cluster the routes read for: the one the recorder identified.
fn follow_cluster(
    mut statuses: watch::Receiver<recorder::RecorderStatus>,
    cluster: watch::Sender<Option<ClusterId>>,
) {
    tokio::spawn(async move {
        loop {
            let known = statuses.borrow_and_update().cluster.clone();
            if known.is_some() {
                cluster.send_replace(known);
            }
            if statuses.changed().await.is_err() {
                return;
            }
        }
    });
}

/// Says on the command line when the recorder's state changes (not at
/// every delta), and each warning once.
fn log_changes(mut statuses: watch::Receiver<recorder::RecorderStatus>) {
    tokio::spawn(async move {
        let mut state_said = None;
        let mut warned = std::collections::HashSet::new();
        loop {
            let (state, summary, warnings) = {
                let status = statuses.borrow_and_update();
                (
                    std::mem::discriminant(&status.state),
                    status.summary(),
                    status.warnings.clone(),
                )
            };
            for warning in warnings {
                if warned.insert(warning.clone()) {
                    tracing::warn!("recorder: {warning}");
                }
            }
            if state_said != Some(state) {
                tracing::info!("recorder: {summary}");
                state_said = Some(state);
            }
            if statuses.changed().await.is_err() {
                return;
            }
        }
    });
}

/// Reads the cluster's identity for a serve that only reads the history,
/// retrying every few seconds until it can.
fn read_cluster(
    forwarder: Forwarder,
    cluster: watch::Sender<Option<ClusterId>>,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut wait = Duration::from_secs(1);
        loop {
            match recorder::read_cluster_id(&forwarder).await {
                Ok(id) => {
                    cluster.send_replace(Some(id));
                    return;
                }
                Err(error) => tracing::warn!("history: {error}; trying again in {wait:?}"),
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
            wait = (wait * 2).min(Duration::from_secs(30));
        }
    });
}

/// Retention now and every [`RETENTION_EVERY`].
fn apply_retention(store: Arc<HistoryStore>, retention: Retention, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            match store.enforce(retention, recorder::wall_now_ms()).await {
                Ok(report) if report.deltas_evicted > 0 => tracing::info!(
                    evicted = report.deltas_evicted,
                    bytes = report.bytes_after,
                    "history: retention evicted the oldest records"
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "history: retention failed; trying again later")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(RETENTION_EVERY) => {}
                () = shutdown.cancelled() => return,
            }
        }
    });
}

/// `deltascope record`: the recorder alone, until Ctrl-C or SIGTERM. The
/// database is the point here, so one that cannot be opened is an error
/// (serve instead runs live-only).
pub async fn record(upstream: &str, options: &HistoryOptions) -> Result<(), String> {
    if options.target == HistoryTarget::Off {
        return Err("`deltascope record --history off` would record nothing".into());
    }
    let forwarder = Forwarder::http(upstream, false, crate::forward::SessionLimits::default())
        .map_err(|e| format!("invalid upstream URL {upstream:?}: {e}"))?;
    let history = History::start(options, &forwarder).await;
    if let Some(why) = history.unavailable() {
        return Err(why.to_string());
    }
    if let Some(store) = &history.store {
        crate::serve::print_line(&format!(
            "deltascope: recording {upstream} into {}",
            store.label()
        ));
    }
    let mut statuses = history.status.clone();
    let stopped_on_its_own = async {
        let statuses = statuses.as_mut()?;
        loop {
            if let recorder::RecorderState::Stopped { error } = &statuses.borrow_and_update().state
            {
                return error.clone();
            }
            if statuses.changed().await.is_err() {
                return Some("the recorder ended".to_string());
            }
        }
    };
    let outcome = tokio::select! {
        error = stopped_on_its_own => error,
        () = crate::serve::stop_signal() => None,
    };
    history.stop().await;
    match outcome {
        Some(error) => Err(error),
        None => Ok(()),
    }
}
