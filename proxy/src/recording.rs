//! Serve's recorded history, assembled: the database `--history` names
//! opened (or why not: serve then runs live-only and says so on the command
//! line, in the summary route and so in the page), the recorder started on
//! it (unless this serve only reads what a team's `deltascope record`
//! writes), retention applied once a minute, and the clusters the history
//! routes read for. A serve of several clusters records each with a
//! recorder of its own into the same database, under its own identity; the
//! routes read the default cluster's, or the one their `cluster=` names.
//!
//! The history crate's [`HistoryStore`] is the recorder's [`RecordStore`]
//! through [`DatabaseStore`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deltascope_history::{
    ClusterId, HistoryError, HistoryStore, HistoryTarget, RecordedState, Retention, Write,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::forward::Forwarder;
use crate::history_access::{ClusterAccess, HistoryAccess};
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
    shared: Arc<Shared>,
}

/// What the tasks that open the database and start the recorders share.
struct Shared {
    options: HistoryOptions,
    /// serve's clusters, the default first: each recorded under its own
    /// identity (or, reading only, its identity read).
    clusters: Vec<Recorded>,
    store: watch::Sender<Option<Arc<HistoryStore>>>,
    unavailable: watch::Sender<Option<String>>,
    shutdown: CancellationToken,
}

/// One of serve's clusters, as the history knows it.
struct Recorded {
    /// serve's name for it (`None`: the one cluster of a plain `--upstream`).
    name: Option<String>,
    forwarder: Forwarder,
    /// Its identity (the `kube-system` uid), once known.
    cluster: watch::Sender<Option<ClusterId>>,
    recorder: Mutex<Option<RecorderHandle>>,
    status: Mutex<Option<watch::Receiver<recorder::RecorderStatus>>>,
}

impl Recorded {
    fn statuses(&self) -> Option<watch::Receiver<recorder::RecorderStatus>> {
        self.status.lock().ok().and_then(|held| held.clone())
    }

    /// Its recorder's state as the summary says it (`null`: not recording).
    fn recording_json(&self) -> serde_json::Value {
        match self.statuses() {
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
        }
    }

    /// Starts recording it into `store`.
    fn record(
        &self,
        store: &Arc<HistoryStore>,
        options: &HistoryOptions,
        shutdown: &CancellationToken,
    ) {
        let handle = recorder::spawn(
            self.forwarder.clone(),
            Arc::new(DatabaseStore(Arc::clone(store))),
            options.recorder.clone(),
            shutdown.clone(),
        );
        let statuses = handle.subscribe();
        follow_cluster(statuses.clone(), self.cluster.clone());
        let who = match &self.name {
            Some(name) => format!("recorder of cluster {name:?}"),
            None => "recorder".to_string(),
        };
        log_changes(statuses.clone(), who);
        if let Ok(mut held) = self.status.lock() {
            *held = Some(statuses);
        }
        if let Ok(mut held) = self.recorder.lock() {
            *held = Some(handle);
        }
    }
}

/// Waits between tries to reach a PostgreSQL that did not answer at start.
const REOPEN_WAIT: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));

impl History {
    /// Opens the database and starts what `options` asks for, for the one
    /// cluster behind `forwarder`. Never fails: a database that cannot be
    /// used leaves serve live-only, and why is said (in
    /// [`History::unavailable`], by the routes and so in the page). A
    /// PostgreSQL that cannot be reached is tried again with backoff, and
    /// recording starts once it answers (the time before is a gap, as any
    /// time nothing recorded).
    pub async fn start(options: &HistoryOptions, forwarder: &Forwarder) -> History {
        Self::start_for(options, vec![(None, forwarder.clone())]).await
    }

    /// [`History::start`] for serve's clusters, the default first, by
    /// name: when recording, each gets a recorder of its own into the same
    /// database, under its own identity; the routes read the default's, or
    /// the one their `cluster=` names.
    pub async fn start_for(
        options: &HistoryOptions,
        clusters: Vec<(Option<String>, Forwarder)>,
    ) -> History {
        let (store_tx, store) = watch::channel(None);
        let (unavailable_tx, unavailable) = watch::channel(None);
        let clusters: Vec<Recorded> = clusters
            .into_iter()
            .map(|(name, forwarder)| Recorded {
                name,
                forwarder,
                cluster: watch::channel(None).0,
                recorder: Mutex::new(None),
                status: Mutex::new(None),
            })
            .collect();
        let shared = Arc::new(Shared {
            options: options.clone(),
            clusters,
            store: store_tx,
            unavailable: unavailable_tx,
            shutdown: CancellationToken::new(),
        });
        if options.target != HistoryTarget::Off {
            open_store(&shared).await;
        }
        let clusters = (0..shared.clusters.len())
            .map(|index| {
                let recorded = &shared.clusters[index];
                let watched = Arc::clone(&shared);
                ClusterAccess {
                    name: recorded.name.clone(),
                    cluster: recorded.cluster.subscribe(),
                    recording: Arc::new(move || watched.clusters[index].recording_json()),
                }
            })
            .collect();
        History {
            access: HistoryAccess {
                store,
                unavailable,
                clusters,
            },
            shared,
        }
    }

    /// The database, once open.
    pub fn store(&self) -> Option<Arc<HistoryStore>> {
        self.access.store.borrow().clone()
    }

    /// Why serve keeps no history (now) although `--history` asked for one.
    pub fn unavailable(&self) -> Option<String> {
        self.access.unavailable.borrow().clone()
    }

    /// The default cluster's recorder's status now (`None`: not recording
    /// here).
    pub fn recorder_status(&self) -> Option<recorder::RecorderStatus> {
        self.statuses().map(|status| status.borrow().clone())
    }

    fn statuses(&self) -> Option<watch::Receiver<recorder::RecorderStatus>> {
        self.shared.clusters.first()?.statuses()
    }

    /// Stops recording: the last watermarks and what is queued are written
    /// (bounded by the recorders' own shutdown time), then the database is
    /// closed.
    pub async fn stop(&self) {
        self.shared.shutdown.cancel();
        let handles: Vec<RecorderHandle> = self
            .shared
            .clusters
            .iter()
            .filter_map(|recorded| {
                recorded
                    .recorder
                    .lock()
                    .ok()
                    .and_then(|mut held| held.take())
            })
            .collect();
        for handle in handles {
            if let Err(error) = handle.stopped().await {
                tracing::warn!(%error, "the recorder stopped with an error");
            }
        }
        if let Some(store) = self.store() {
            store.close().await;
        }
    }
}

impl Shared {
    /// The database is open: serve reads it, and records or learns its
    /// clusters; a recording serve applies retention.
    fn activate(shared: &Arc<Shared>, store: Arc<HistoryStore>) {
        let options = &shared.options;
        for recorded in &shared.clusters {
            if options.record {
                recorded.record(&store, options, &shared.shutdown);
            } else {
                read_cluster(
                    recorded.forwarder.clone(),
                    recorded.cluster.clone(),
                    shared.shutdown.clone(),
                );
            }
        }
        // The record's retention is the recorder's: a serve that only
        // reads (`--history-read-only`, beside a `deltascope record`)
        // never evicts what that recorder keeps.
        if options.record && options.retention != Retention::default() {
            apply_retention(
                Arc::clone(&store),
                options.retention,
                shared.shutdown.clone(),
            );
        }
        shared.unavailable.send_replace(None);
        shared.store.send_replace(Some(store));
    }
}

/// How long serve waits for the database before it starts without it.
/// Opening a SQLite file checks all of it (`PRAGMA quick_check`): 23 s
/// for a 417 MB file not in the page cache, so minutes for a week's
/// record; serve answers meanwhile, and the history arrives when the check
/// is done.
const OPEN_WAIT: Duration = Duration::from_secs(2);

/// Opens the database, waiting at most [`OPEN_WAIT`]; after that the open
/// goes on in a task of its own and serve starts live-only, saying so.
async fn open_store(shared: &Arc<Shared>) {
    let target = shared.options.target.clone();
    let mut opening = tokio::spawn(async move { HistoryStore::open(&target).await });
    match tokio::time::timeout(OPEN_WAIT, &mut opening).await {
        Ok(opened) => opened_store(shared, opened),
        Err(_) => {
            shared.unavailable.send_replace(Some(format!(
                "no history yet: opening the database {} (a SQLite file is checked whole \
                 first, minutes for a large one); serving live only meanwhile",
                shared.options.target
            )));
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                let opened = opening.await;
                if opened.as_ref().is_ok_and(Result::is_ok) {
                    tracing::info!("history: the database is checked and open");
                }
                opened_store(&shared, opened);
            });
        }
    }
}

/// What the first open of the database gave: the history starts, is tried
/// again (a server that did not answer), or serve stays live-only.
fn opened_store(
    shared: &Arc<Shared>,
    opened: Result<Result<HistoryStore, HistoryError>, tokio::task::JoinError>,
) {
    match opened {
        Ok(Ok(store)) => Shared::activate(shared, Arc::new(store)),
        Ok(Err(error @ HistoryError::Open { .. })) => {
            shared.unavailable.send_replace(Some(format!(
                "no history yet: {error}; trying again, serving live only meanwhile"
            )));
            reopen(Arc::clone(shared));
        }
        Ok(Err(error)) => {
            tracing::warn!("history: {error}; serving live only");
            shared
                .unavailable
                .send_replace(Some(format!("no history: {error}; serving live only")));
        }
        Err(error) => {
            shared.unavailable.send_replace(Some(format!(
                "no history: opening the database failed ({error}); serving live only"
            )));
        }
    }
}

/// Tries the database again with backoff until it opens (or serve stops).
fn reopen(shared: Arc<Shared>) {
    tokio::spawn(async move {
        let mut wait = REOPEN_WAIT.0;
        loop {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shared.shutdown.cancelled() => return,
            }
            match HistoryStore::open(&shared.options.target).await {
                Ok(store) => {
                    tracing::info!("history: the database answers now: {}", store.label());
                    Shared::activate(&shared, Arc::new(store));
                    return;
                }
                Err(error) => {
                    tracing::warn!("history: {error}; trying again in {wait:?}");
                    shared.unavailable.send_replace(Some(format!(
                        "no history yet: {error}; trying again, serving live only meanwhile"
                    )));
                }
            }
            wait = (wait * 2).min(REOPEN_WAIT.1);
        }
    });
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
fn log_changes(mut statuses: watch::Receiver<recorder::RecorderStatus>, who: String) {
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
                    tracing::warn!("{who}: {warning}");
                }
            }
            if state_said != Some(state) {
                tracing::info!("{who}: {summary}");
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

/// `deltascope record`: the recorder alone, until Ctrl-C or SIGTERM. A
/// database that is not one deltascope can use is an error (the database
/// is the point here); one that cannot be reached yet is tried again.
pub async fn record(upstream: &str, options: &HistoryOptions) -> Result<(), String> {
    if options.target == HistoryTarget::Off {
        return Err("`deltascope record --history off` would record nothing".into());
    }
    let forwarder = Forwarder::http(upstream, false, crate::forward::SessionLimits::default())
        .map_err(|e| format!("invalid upstream URL {upstream:?}: {e}"))?;
    let history = History::start(options, &forwarder).await;
    let mut unavailable = history.access.unavailable.clone();
    let mut stores = history.access.store.clone();
    let outcome = tokio::select! {
        outcome = follow_record(&history, upstream, &mut stores, &mut unavailable) => outcome,
        () = crate::process::stop_signal() => None,
    };
    history.stop().await;
    match outcome {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// What `deltascope record` says while it runs; the error it stops on.
async fn follow_record(
    history: &History,
    upstream: &str,
    stores: &mut watch::Receiver<Option<Arc<HistoryStore>>>,
    unavailable: &mut watch::Receiver<Option<String>>,
) -> Option<String> {
    loop {
        if let Some(store) = stores.borrow_and_update().clone() {
            crate::process::print_line(&format!(
                "deltascope: recording {upstream} into {}",
                store.label()
            ));
            break;
        }
        let why = unavailable.borrow_and_update().clone();
        match why {
            Some(why) if !why.starts_with("no history yet") => return Some(why),
            Some(why) => eprintln!("deltascope: {why}"),
            None => {}
        }
        tokio::select! {
            changed = stores.changed() => if changed.is_err() { return None },
            changed = unavailable.changed() => if changed.is_err() { return None },
        }
    }
    let mut statuses = history.statuses()?;
    loop {
        if let recorder::RecorderState::Stopped { error } = &statuses.borrow_and_update().state {
            return error.clone();
        }
        if statuses.changed().await.is_err() {
            return Some("the recorder ended".to_string());
        }
    }
}
