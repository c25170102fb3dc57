//! The recorder's top: it reads the cluster's identity (retrying while the
//! upstream is unreachable), then runs *epochs*. An epoch reads the
//! identity again every couple of seconds, and at once when its gate is in
//! doubt (`identity_gate`: a request failed; no request is sent meanwhile):
//! when another cluster answers behind the same upstream, the epoch ends
//! (the old cluster's record stops at its last watermark) and the new one
//! is recorded apart, under its own identity, from an empty record. An
//! epoch starts the writer and a driver per resource discovery lists
//! (re-discovering every minute, and soon after the CRDs change), and
//! ends on shutdown (every driver
//! writes its last watermark, the writer stores what is queued) or when the
//! database fails (every driver is aborted, the writer is gone). Then the
//! database is probed with backoff (1 s doubling to 30 s) and a new epoch
//! restarts every resource from what the record holds, each with a
//! DatabaseUnavailable gap.
//!
//! An epoch also runs the usage sampler while discovery lists the metrics
//! API (see `usage`), fed by the pods', ReplicaSets' and Jobs' drivers
//! with who owns each pod.
//!
//! Everything runs on the recorder's own thread (see [`super::spawn`]):
//! an informer is not `Send`, so drivers are local tasks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deltascope_history::{ClusterId, GapReason};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::clock::Clock;
use super::discovery::{discover, Discovered, DiscoveredResource, Filter};
use super::driver::{sleep_until, Driver};
use super::gap_causes::GapCauses;
use super::identity_gate::IdentityGate;
use super::memory::Trimmer;
use super::owners::{OwnerFeed, Owners, SharedOwners};
use super::status::{Board, RecorderState};
use super::store::{RecordStore, StoreUnavailable};
use super::upstream::{read_cluster_id, Upstream};
use super::usage::Sampler;
use super::writer::{self, Queue, Writer};
use super::{RecorderConfig, RecorderError};

/// The CRDs' resource: a change to it re-runs discovery.
const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";
/// Lists in flight at once across the recorder (watches are not limited).
pub const LIST_PERMITS: usize = 4;
/// How long drivers and the writer get to finish on shutdown.
const FINISH_GRACE: Duration = Duration::from_secs(10);
/// The usage sampler's name among the tasks stopping.
const USAGE_SAMPLER: &str = "(usage sampler)";

/// Doubling waits between `first` and `max`.
struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    fn next(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    fn reset(&mut self) {
        self.next = self.first;
    }
}

/// One running resource.
struct Running {
    resource: DiscoveredResource,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// How an epoch ended.
enum EpochEnd {
    Shutdown,
    Database {
        failure: StoreUnavailable,
        wrote: bool,
    },
    /// Another cluster answers behind the upstream (this identity now).
    ClusterChanged(ClusterId),
}

/// While the identity is in doubt and cannot be read (the upstream is
/// down), it is read again after this long, doubling up to
/// [`IDENTITY_RETRY_MAX`].
const IDENTITY_RETRY: Duration = Duration::from_millis(250);
const IDENTITY_RETRY_MAX: Duration = Duration::from_secs(4);

pub(super) struct Supervisor<S> {
    pub upstream: Upstream,
    pub store: Arc<S>,
    pub config: RecorderConfig,
    pub board: Board,
    pub clock: Clock,
    pub shutdown: CancellationToken,
}

impl<S: RecordStore> Supervisor<S> {
    pub async fn run(self) -> Result<(), RecorderError> {
        let result = self.record().await;
        let error = result.as_ref().err().map(ToString::to_string);
        self.board.set_state(RecorderState::Stopped { error });
        result
    }

    async fn record(&self) -> Result<(), RecorderError> {
        let Some(mut cluster) = self.identify().await? else {
            return Ok(());
        };
        loop {
            self.board.update(|s| s.cluster = Some(cluster.clone()));
            let Some(next) = self.record_cluster(&cluster).await else {
                return Ok(());
            };
            tracing::warn!(
                from = %cluster.0,
                to = %next.0,
                "recorder: a different cluster now answers; recording it apart, under its own identity"
            );
            cluster = next;
        }
    }

    /// Records `cluster` until shutdown (`None`) or another cluster
    /// answers (its identity).
    async fn record_cluster(&self, cluster: &ClusterId) -> Option<ClusterId> {
        // who owns each pod, kept across epochs (each restore notes again)
        let owners = Owners::shared();
        let mut causes = GapCauses::starting(self.clock.wall_now(), GapReason::NotRunning);
        let mut backoff = Backoff::new(self.config.database_retry.0, self.config.database_retry.1);
        loop {
            let (mut failure, wrote) =
                match self.epoch(cluster, Arc::new(causes.clone()), &owners).await {
                    EpochEnd::Shutdown => return None,
                    EpochEnd::ClusterChanged(next) => return Some(next),
                    EpochEnd::Database { failure, wrote } => (failure, wrote),
                };
            if wrote {
                backoff.reset();
            }
            loop {
                let wait = backoff.next();
                let retry_at = self.clock.wall_now() + wait.as_millis() as i64;
                self.board.set_state(RecorderState::DatabaseUnavailable {
                    reason: failure.0.clone(),
                    next_retry_ms: retry_at,
                });
                tokio::select! {
                    _ = self.shutdown.cancelled() => return None,
                    _ = tokio::time::sleep(wait) => {}
                }
                match self.store.recorded_state(cluster, CRDS).await {
                    Ok(_) => break,
                    Err(again) => failure = again,
                }
            }
            tracing::info!("recorder: the history database answers again; resuming");
            causes.begin(self.clock.wall_now(), GapReason::DatabaseUnavailable);
        }
    }

    /// The cluster's identity; `None` on shutdown first.
    async fn identify(&self) -> Result<Option<ClusterId>, RecorderError> {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        loop {
            let attempt = tokio::select! {
                _ = self.shutdown.cancelled() => return Ok(None),
                attempt = read_cluster_id(&self.upstream) => attempt,
            };
            match attempt {
                Ok(cluster) => return Ok(Some(cluster)),
                Err(error) if error.is_retryable() => {
                    tracing::warn!(%error, "recorder: retrying");
                    self.board.set_state(RecorderState::UpstreamUnreachable {
                        reason: error.to_string(),
                    });
                }
                Err(error) => return Err(RecorderError::Identity(error)),
            }
            tokio::select! {
                _ = self.shutdown.cancelled() => return Ok(None),
                _ = tokio::time::sleep(backoff.next()) => {}
            }
        }
    }

    /// One epoch: the writer and the drivers, until shutdown or the
    /// database fails; every driver and the writer have ended when it returns.
    async fn epoch(
        &self,
        cluster: &ClusterId,
        gap_causes: Arc<GapCauses>,
        owners: &SharedOwners,
    ) -> EpochEnd {
        let abort = CancellationToken::new();
        let (queue, receiver) = writer::queue();
        let (failures, mut failed) = mpsc::channel(4);
        let batches = Arc::new(AtomicU64::new(0));
        let writer = tokio::task::spawn_local(
            Writer {
                store: self.store.clone(),
                cluster: cluster.clone(),
                board: self.board.clone(),
                clock: self.clock,
                failures: failures.clone(),
                batches: batches.clone(),
            }
            .run(receiver),
        );
        let mut epoch = Epoch {
            supervisor: self,
            cluster: cluster.clone(),
            queue,
            failures,
            abort: abort.clone(),
            gap_causes,
            filter: Filter::new(self.config.record.as_deref(), &self.config.no_record),
            running: BTreeMap::new(),
            stopping: Vec::new(),
            list_permits: Arc::new(Semaphore::new(LIST_PERMITS)),
            trimmer: Arc::new(Trimmer::default()),
            crds_changed: Arc::new(Notify::new()),
            discovered_once: false,
            last: None,
            owners: owners.clone(),
            identity: IdentityGate::new(),
            sampler: None,
        };
        let end = match epoch.until_end(&mut failed).await {
            EpochEnd::Shutdown => {
                epoch.finish(false).await;
                EpochEnd::Shutdown
            }
            EpochEnd::Database { failure, .. } => {
                abort.cancel();
                epoch.finish(true).await;
                EpochEnd::Database {
                    failure,
                    wrote: batches.load(Ordering::Relaxed) > 0,
                }
            }
            // Nothing more under the old identity: its record ends at its
            // last watermark.
            EpochEnd::ClusterChanged(next) => {
                abort.cancel();
                epoch.finish(true).await;
                EpochEnd::ClusterChanged(next)
            }
        };
        wait_for_writer(writer).await;
        end
    }
}

/// Waits for an epoch's writer once every sender is gone: the writer stores
/// what is queued, or is done. One still writing after the grace is dropped
/// mid-write (the store's write is all or nothing), so no write of this
/// epoch can land after the next one has read the record.
async fn wait_for_writer(writer: JoinHandle<()>) {
    let stuck = writer.abort_handle();
    if tokio::time::timeout(FINISH_GRACE, writer).await.is_err() {
        tracing::warn!("recorder: the writer did not finish in time; dropping its batch");
        stuck.abort();
    }
}

/// One epoch's running resources.
struct Epoch<'a, S> {
    supervisor: &'a Supervisor<S>,
    cluster: ClusterId,
    queue: Queue,
    failures: mpsc::Sender<StoreUnavailable>,
    abort: CancellationToken,
    /// Why the record broke off before this epoch and the earlier ones.
    gap_causes: Arc<GapCauses>,
    filter: Filter,
    running: BTreeMap<String, Running>,
    /// Drivers told to stop, not ended yet (a resource is not started
    /// again before its last driver has ended).
    stopping: Vec<(String, JoinHandle<()>)>,
    list_permits: Arc<Semaphore>,
    /// Gives back what lists and restores freed (see `memory`).
    trimmer: Arc<Trimmer>,
    crds_changed: Arc<Notify>,
    discovered_once: bool,
    /// What discovery last found (applied again once a stopped driver ends).
    last: Option<Discovered>,
    /// Who owns each pod (fed by the drivers, read by the sampler).
    owners: SharedOwners,
    /// No request is sent while the identity is in doubt.
    identity: Arc<IdentityGate>,
    /// The usage sampler, while discovery lists the metrics API.
    sampler: Option<(CancellationToken, JoinHandle<()>)>,
}

impl<S: RecordStore> Epoch<'_, S> {
    /// Runs discovery when due (every `rediscover_every`, with backoff
    /// while it fails, soon after the CRDs change) and [`Epoch::tick`]s
    /// every second, until shutdown or a database failure (`wrote` is
    /// filled in by the caller).
    async fn until_end(&mut self, failed: &mut mpsc::Receiver<StoreUnavailable>) -> EpochEnd {
        let supervisor = self.supervisor;
        let mut next_discovery = Instant::now();
        let mut follow_up: Option<Instant> = None;
        let mut discovery_backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        let mut fold = tokio::time::interval(Duration::from_secs(1));
        let every = supervisor.config.identity_check_every;
        let mut identity = tokio::time::interval_at(Instant::now() + every, every);
        let gate = self.identity.clone();
        // While in doubt and unreadable: when to read again, and how long after that.
        let mut reread: Option<Instant> = None;
        let mut reread_backoff = Backoff::new(IDENTITY_RETRY, IDENTITY_RETRY_MAX);
        let crds_changed = self.crds_changed.clone();
        loop {
            let read_identity = tokio::select! {
                biased;
                failure = failed.recv() => {
                    let failure = failure.unwrap_or_else(|| StoreUnavailable("the writer stopped".into()));
                    return EpochEnd::Database { failure, wrote: false };
                }
                _ = supervisor.shutdown.cancelled() => return EpochEnd::Shutdown,
                _ = tokio::time::sleep_until(next_discovery) => {
                    if self.rediscover().await {
                        discovery_backoff.reset();
                        next_discovery = match follow_up.take() {
                            Some(at) if at > Instant::now() => at,
                            _ => Instant::now() + supervisor.config.rediscover_every,
                        };
                    } else {
                        next_discovery = Instant::now() + discovery_backoff.next();
                    }
                    false
                }
                _ = crds_changed.notified() => {
                    let soon = Instant::now() + Duration::from_secs(1);
                    next_discovery = next_discovery.min(soon);
                    follow_up = Some(soon + Duration::from_secs(5));
                    false
                }
                _ = fold.tick() => {
                    self.tick();
                    false
                }
                _ = gate.doubted() => {
                    reread_backoff.reset();
                    true
                }
                _ = sleep_until(reread) => true,
                _ = identity.tick() => true,
            };
            if read_identity {
                reread = None;
                if let Some(next) = self.settle_identity(&mut reread, &mut reread_backoff).await {
                    return EpochEnd::ClusterChanged(next);
                }
            }
        }
    }

    /// Reads the identity of the cluster answering now: another cluster's
    /// is returned (the epoch ends); this one's confirms the gate; none (the
    /// upstream does not answer, or shutdown) leaves a doubted gate in
    /// doubt, read again at `reread`.
    async fn settle_identity(
        &self,
        reread: &mut Option<Instant>,
        backoff: &mut Backoff,
    ) -> Option<ClusterId> {
        let supervisor = self.supervisor;
        let since = self.identity.doubts();
        let read = tokio::select! {
            _ = supervisor.shutdown.cancelled() => return None,
            read = read_cluster_id(&supervisor.upstream) => read,
        };
        match read {
            Ok(now) if now != self.cluster => {
                supervisor.board.identity_problem(None);
                Some(now)
            }
            Ok(_) => {
                supervisor.board.identity_problem(None);
                // doubted again meanwhile: the read that doubt asked for decides
                self.identity.confirm(since);
                None
            }
            Err(error) => {
                if !self.identity.is_confirmed() {
                    if error.is_retryable() {
                        tracing::debug!(%error, "recorder: the cluster's identity is in doubt and cannot be read; requests wait");
                    } else {
                        tracing::warn!(%error, "recorder: the cluster's identity is in doubt and cannot be read; nothing is recorded until it can");
                    }
                    supervisor.board.identity_problem(Some(format!(
                        "{error}; nothing is recorded until it can be read"
                    )));
                    *reread = Some(Instant::now() + backoff.next());
                }
                None
            }
        }
    }

    /// Once a second: forgets drivers that ended, folds the resources'
    /// health into the recorder's (once discovery has run), and gives
    /// memory back when due.
    fn tick(&mut self) {
        self.reap();
        if self.discovered_once {
            self.supervisor.board.fold_health();
        }
        let lists_idle = self.list_permits.available_permits() == LIST_PERMITS;
        self.trimmer.run_if_due(lists_idle);
    }

    /// Runs discovery and starts and stops resources to match; false when
    /// discovery failed (everything running keeps running).
    async fn rediscover(&mut self) -> bool {
        let board = &self.supervisor.board;
        let discovered = tokio::select! {
            _ = self.supervisor.shutdown.cancelled() => return true,
            discovered = discover(&self.supervisor.upstream) => discovered,
        };
        let discovered = match discovered {
            Ok(discovered) => discovered,
            Err(error) => {
                tracing::warn!(%error, "recorder: discovery failed; retrying");
                if !self.discovered_once && error.is_unreachable() {
                    board.set_state(RecorderState::UpstreamUnreachable {
                        reason: error.to_string(),
                    });
                }
                return false;
            }
        };
        let warnings = self.filter.unknown_names(&discovered);
        board.update(|s| s.warnings = warnings);
        self.apply(&discovered);
        self.last = Some(discovered);
        if !self.discovered_once {
            self.discovered_once = true;
            board.set_state(RecorderState::Recording);
        }
        true
    }

    fn apply(&mut self, discovered: &Discovered) {
        let wanted: BTreeMap<String, &DiscoveredResource> = discovered
            .resources
            .iter()
            .filter(|r| self.filter.wants(&r.name()))
            .map(|r| (r.name(), r))
            .collect();
        let gone: Vec<String> = self
            .running
            .iter()
            .filter(|(name, running)| match wanted.get(*name) {
                Some(now) => **now != running.resource,
                // kept while its group version could not be read
                None => discovered.read(&running.resource.group, &running.resource.version),
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            if let Some(running) = self.running.remove(&name) {
                tracing::info!(resource = %name, "recorder: no longer recording");
                running.stop.cancel();
                self.supervisor.board.forget(&name);
                self.stopping.push((name, running.task));
            }
        }
        for (name, resource) in wanted {
            if self.running.contains_key(&name) || self.stopping.iter().any(|(n, _)| *n == name) {
                continue;
            }
            self.start(name, resource.clone());
        }
        let count = self.running.len();
        self.supervisor.board.update(|s| s.resources = count);
        self.apply_sampler(discovered.metrics);
    }

    /// Starts the usage sampler while discovery lists the metrics API (and
    /// `--record-usage` is not `off`), stops it once it does not.
    fn apply_sampler(&mut self, listed: bool) {
        let supervisor = self.supervisor;
        let every = supervisor.config.usage_every.filter(|_| listed);
        if self
            .sampler
            .as_ref()
            .is_some_and(|(_, task)| task.is_finished())
        {
            self.sampler = None;
        }
        match (every, self.sampler.take()) {
            (Some(_), Some(running)) => self.sampler = Some(running),
            (Some(every), None) => {
                let stop = supervisor.shutdown.child_token();
                let sampler = Sampler {
                    upstream: supervisor.upstream.clone(),
                    identity: self.identity.clone(),
                    queue: self.queue.clone(),
                    clock: supervisor.clock,
                    every,
                    owners: self.owners.clone(),
                    stop: stop.clone(),
                    abort: self.abort.clone(),
                    started: tokio::time::Instant::now(),
                };
                self.sampler = Some((stop, tokio::task::spawn_local(sampler.run())));
            }
            (None, Some((stop, task))) => {
                tracing::info!(
                    "recorder: the metrics API is gone from discovery; no longer sampling usage"
                );
                stop.cancel();
                self.stopping.push((USAGE_SAMPLER.to_string(), task));
            }
            (None, None) => {}
        }
    }

    fn start(&mut self, name: String, resource: DiscoveredResource) {
        let supervisor = self.supervisor;
        let stop = supervisor.shutdown.child_token();
        let driver = Driver {
            resource: resource.clone(),
            upstream: supervisor.upstream.clone(),
            identity: self.identity.clone(),
            store: supervisor.store.clone(),
            cluster: self.cluster.clone(),
            clock: supervisor.clock,
            timing: supervisor.config.watermarks,
            queue: self.queue.clone(),
            failures: self.failures.clone(),
            board: supervisor.board.clone(),
            gap_causes: self.gap_causes.clone(),
            list_permits: self.list_permits.clone(),
            trimmer: self.trimmer.clone(),
            changed: (name == CRDS).then(|| self.crds_changed.clone()),
            owners: supervisor
                .config
                .usage_every
                .and_then(|_| OwnerFeed::of(&name, &self.owners)),
            stop: stop.clone(),
            abort: self.abort.clone(),
        };
        let task = tokio::task::spawn_local(driver.run());
        self.running.insert(
            name,
            Running {
                resource,
                stop,
                task,
            },
        );
    }

    /// Forgets drivers that ended: stopped ones, and any that ended on its
    /// own (a panic): discovery starts it again.
    fn reap(&mut self) {
        let stopping = self.stopping.len();
        self.stopping.retain(|(_, task)| !task.is_finished());
        if self.stopping.len() < stopping {
            // a resource stopped to be started again (a new version) starts now
            if let Some(last) = self.last.take() {
                self.apply(&last);
                self.last = Some(last);
            }
        }
        let ended: Vec<String> = self
            .running
            .iter()
            .filter(|(_, running)| running.task.is_finished())
            .map(|(name, _)| name.clone())
            .collect();
        for name in ended {
            tracing::warn!(resource = %name, "recorder: a resource's driver ended; restarting it at the next discovery");
            self.running.remove(&name);
        }
    }

    /// Stops every driver (after `abort`, or gracefully) and waits for them.
    async fn finish(self, aborted: bool) {
        let mut tasks = Vec::new();
        for (_, running) in self.running {
            running.stop.cancel();
            tasks.push(running.task);
        }
        tasks.extend(self.stopping.into_iter().map(|(_, task)| task));
        if let Some((stop, task)) = self.sampler {
            stop.cancel();
            tasks.push(task);
        }
        drop(self.queue);
        drop(self.failures);
        let all = futures_util::future::join_all(tasks.iter_mut());
        if tokio::time::timeout(FINISH_GRACE, all).await.is_err() {
            tracing::warn!(aborted, "recorder: some resources did not stop in time");
            for task in &tasks {
                task.abort();
            }
        }
    }
}
