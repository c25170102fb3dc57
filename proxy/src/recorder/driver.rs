//! One resource's informer, driven natively: the recorder's counterpart of
//! the page's `transport::Driver`. It reads the resource's recorded state
//! (after a flush, so the state holds every earlier write; holding every
//! list permit: a recorded state comes whole, the text of every object, so
//! two read at once would hold both), restores the
//! informer from it or starts it fresh, then loops: carry out the
//! informer's actions (a GET through the [`Upstream`], at most one in
//! flight; lists take one of the recorder's list permits), feed it what
//! happens (`ResponseStarted`, each body chunk as it comes, `BodyEnd` or
//! `Failed`), tick it at `poll_timeout()`, and after every input hand the
//! [`Tracker`]'s writes to the writer's queue, waiting for room.
//!
//! A request is sent only while the epoch's identity gate is confirmed,
//! and whatever could mean another cluster answers — a failed request, an
//! answer that is not a success, a watch the server ended — puts the gate
//! in doubt (`identity_gate`).
//!
//! It stops two ways: `stop` (shutdown, or the resource left discovery)
//! writes a last watermark first; `abort` (the database failed) writes
//! nothing more.

use std::sync::Arc;
use std::time::Duration;

use deltascope_history::{ClusterId, RecordedState, Write};
use deltascope_informer::{
    Action, Informer, InformerConfig, Input, Millis, RequestId, RequestKind,
};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::clock::Clock;
use super::discovery::DiscoveredResource;
use super::gap_causes::GapCauses;
use super::identity_gate::IdentityGate;
use super::memory::Trimmer;
use super::owners::OwnerFeed;
use super::status::{Board, Health};
use super::store::{RecordStore, StoreUnavailable};
use super::supervisor::LIST_PERMITS;
use super::tracker::{unbounded_history, Tracker, WatermarkTiming};
use super::upstream::{InFlight, Upstream, Wire};
use super::writer::{Msg, Queue};

/// How long a halted informer (400, 404, 405, 422: the request itself is
/// wrong) waits before it asks again.
const HALTED_RETRY: Duration = Duration::from_secs(60);
/// How often the driver checks whether a watermark is due.
const MARK_CHECK: Duration = Duration::from_secs(1);
/// Objects in one list page (`limit`, as client-go's reflector): a list is
/// held a page of JSON at a time, never the whole body (100k pods are
/// about 900 MB of it).
pub const LIST_PAGE: u32 = 500;

/// Everything a driver needs.
pub struct Driver<S> {
    pub resource: DiscoveredResource,
    pub upstream: Upstream,
    /// No request is sent while the cluster's identity is in doubt.
    pub identity: Arc<IdentityGate>,
    pub store: Arc<S>,
    pub cluster: ClusterId,
    pub clock: Clock,
    pub timing: WatermarkTiming,
    pub queue: Queue,
    pub failures: mpsc::Sender<StoreUnavailable>,
    pub board: Board,
    /// The gap's reasons if the resource was recorded before.
    pub gap_causes: Arc<GapCauses>,
    pub list_permits: Arc<Semaphore>,
    /// Asked to give freed memory back after a list or a restore.
    pub trimmer: Arc<Trimmer>,
    /// Notified when this resource's objects change (the CRDs' driver).
    pub changed: Option<Arc<Notify>>,
    /// Fed every object restored and every delta (pods, ReplicaSets and
    /// Jobs, while usage is recorded): who owns each pod.
    pub owners: Option<OwnerFeed>,
    pub stop: CancellationToken,
    pub abort: CancellationToken,
}

/// The request in flight.
struct Current {
    id: RequestId,
    /// A watch (its end may mean another cluster answers now).
    watch: bool,
    request: InFlight,
    _permit: Option<OwnedSemaphorePermit>,
}

/// The driver ends (stopped, aborted, or the writer is gone).
struct Ended;

impl<S: RecordStore> Driver<S> {
    pub async fn run(self) {
        let name = self.resource.name();
        let _ = self.drive(&name).await;
        self.board.forget(&name);
    }

    async fn drive(&self, name: &str) -> Result<(), Ended> {
        self.board.report(name, Health::Ok);
        let (mut informer, mut tracker) = self.resume_or_start(name).await?;
        let mut current: Option<Current> = None;
        let was_warm = informer.is_warm();
        self.step(&mut informer, &mut tracker, &mut current, was_warm)
            .await?;
        self.follow(&mut informer, &mut tracker, &mut current).await
    }

    /// The resource's informer and tracker, restored from the recorded
    /// state or started fresh.
    async fn resume_or_start(&self, name: &str) -> Result<(Informer, Tracker), Ended> {
        // A restore runs alone (no other restore or list): the recorded
        // state is read whole, not a page at a time. At 100k pods, four
        // at once peaked 160 MiB higher.
        let restoring = self.all_list_permits().await?;
        let state = self.recorded_state(name).await?;
        let mut informer = self.new_informer();
        let mut tracker = Tracker::new(name.to_owned(), self.clock, self.timing);
        let now = self.clock.now();
        match state {
            Some(state) => {
                self.resume(name, &mut informer, &mut tracker, state, now)
                    .await?
            }
            None => informer.start(now),
        }
        drop(restoring);
        Ok((informer, tracker))
    }

    /// The resource as last recorded (`None`: never); a failed read is
    /// reported to the supervisor on `failures`.
    async fn recorded_state(&self, name: &str) -> Result<Option<RecordedState>, Ended> {
        // Everything queued before is stored before the state is read.
        let (flushed, done) = oneshot::channel();
        self.send(Msg::Flush(flushed)).await?;
        tokio::select! {
            _ = self.abort.cancelled() => return Err(Ended),
            result = done => result.map_err(|_| Ended)?,
        }
        let state = tokio::select! {
            _ = self.abort.cancelled() => return Err(Ended),
            state = self.store.recorded_state(&self.cluster, name) => state,
        };
        match state {
            Ok(state) => Ok(state),
            Err(failure) => {
                let _ = self.failures.try_send(failure);
                Err(Ended)
            }
        }
    }

    /// An informer for the recorder: no streaming list, no server-side
    /// table, no resync, every change kept for the tracker.
    fn new_informer(&self) -> Informer {
        let mut config = InformerConfig::new(self.resource.resource_ref())
            .streaming_list(false)
            .server_table(false)
            .resync(None);
        config.history = unbounded_history();
        config.page_size = LIST_PAGE;
        let mut informer = Informer::new(config);
        informer.set_change_log_capacity(0);
        informer
    }

    /// Restores the informer from the recorded `state` and writes the gap
    /// since it was recorded.
    async fn resume(
        &self,
        name: &str,
        informer: &mut Informer,
        tracker: &mut Tracker,
        state: RecordedState,
        now: Millis,
    ) -> Result<(), Ended> {
        let objects = state.objects.len();
        match tracker.restore(informer, state, &self.gap_causes, now) {
            // written before anything the catch-up brings
            Ok(gaps) => {
                for gap in gaps {
                    self.send(Msg::Write(gap)).await?;
                }
            }
            Err(error) => {
                // cannot happen: nothing but the objects is restored
                tracing::error!(resource = %name, %error, "recorder: cannot resume the resource");
                return Err(Ended);
            }
        }
        if let Some(feed) = &self.owners {
            for object in informer.store().objects() {
                feed.note_object(&object.key, &object.value);
            }
            feed.listed();
        }
        tracing::info!(resource = %name, objects, unreadable = tracker.unreadable, "recorder: resuming from the record");
        // the recorded state's text is freed
        self.trimmer.request();
        Ok(())
    }

    /// The loop: feeds the informer what its request brings and its ticks,
    /// checks watermarks, and steps after every input, until stopped
    /// (`Ok`, after a last watermark) or aborted.
    async fn follow(
        &self,
        informer: &mut Informer,
        tracker: &mut Tracker,
        current: &mut Option<Current>,
    ) -> Result<(), Ended> {
        let mut marks = tokio::time::interval(MARK_CHECK);
        marks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut halted_at: Option<tokio::time::Instant> = None;
        loop {
            let wake = informer
                .poll_timeout()
                .map(|at| tokio::time::Instant::from_std(self.clock.instant(at)));
            let was_warm = informer.is_warm();
            tokio::select! {
                biased;
                _ = self.abort.cancelled() => return Err(Ended),
                _ = self.stop.cancelled() => {
                    if let Some(mark) = tracker.final_watermark(informer) {
                        self.send(Msg::Write(mark)).await?;
                    }
                    return Ok(());
                }
                wire = next_wire(current) => {
                    let Some((id, wire)) = wire else { continue };
                    if puts_in_doubt(current.as_ref(), &wire) {
                        self.identity.doubt();
                    }
                    feed(informer, current, id, wire, self.clock.now());
                }
                _ = sleep_until(wake) => informer.handle(Input::Tick, self.clock.now()),
                _ = marks.tick() => self.check_marks(informer, tracker, &mut halted_at).await?,
            }
            self.step(informer, tracker, current, was_warm).await?;
        }
    }

    /// Every [`MARK_CHECK`]: a watermark if one is due, and a halted
    /// informer asked again once it has been halted for [`HALTED_RETRY`].
    async fn check_marks(
        &self,
        informer: &mut Informer,
        tracker: &mut Tracker,
        halted_at: &mut Option<tokio::time::Instant>,
    ) -> Result<(), Ended> {
        if let Some(mark) = tracker.watermark_due(informer) {
            self.send(Msg::Write(mark)).await?;
        }
        if informer.is_halted() {
            let since = *halted_at.get_or_insert_with(tokio::time::Instant::now);
            if since.elapsed() >= HALTED_RETRY {
                *halted_at = None;
                informer.retry(self.clock.now());
            }
        } else {
            *halted_at = None;
        }
        Ok(())
    }

    /// After an input: the tracker's writes, then the informer's actions.
    async fn step(
        &self,
        informer: &mut Informer,
        tracker: &mut Tracker,
        current: &mut Option<Current>,
        was_warm: bool,
    ) -> Result<(), Ended> {
        let mut actions = Vec::new();
        let mut list_applied = false;
        while let Some(action) = informer.poll_action() {
            if let Action::Send { kind, .. } = &action {
                list_applied |= tracker.saw_send(informer, *kind == RequestKind::List);
            }
            actions.push(action);
        }
        if list_applied {
            // the pages parsed and, on a relist, the objects replaced are freed
            self.trimmer.request();
        }
        if let Some(gap) = tracker.gap_before(informer, list_applied) {
            self.send(Msg::Write(gap)).await?;
        }
        let mut changed = false;
        while let Some(delta) = tracker.next_delta(informer) {
            changed = true;
            if let (Some(feed), Write::Delta(record)) = (&self.owners, &delta) {
                feed.note_delta(record);
            }
            self.send(Msg::Write(delta)).await?;
        }
        if let (Some(feed), true) = (&self.owners, informer.has_synced()) {
            feed.listed();
        }
        if let Some(gap) = tracker.finish_step(informer, was_warm) {
            self.send(Msg::Write(gap)).await?;
        }
        if let (true, Some(changed)) = (changed, &self.changed) {
            changed.notify_one();
        }
        if let Some(health) = tracker.health_change(informer) {
            self.board.report(&self.resource.name(), health);
        }
        for action in actions {
            match action {
                Action::Send {
                    id,
                    kind,
                    path_and_query,
                    accept,
                } => {
                    // a new request replaces (cancels) the one in flight
                    *current = None;
                    let permit = match kind {
                        RequestKind::List => Some(self.list_permit().await?),
                        RequestKind::Watch => None,
                    };
                    self.identity_confirmed().await?;
                    *current = Some(Current {
                        id,
                        watch: kind == RequestKind::Watch,
                        request: InFlight::send(&self.upstream, path_and_query, accept),
                        _permit: permit,
                    });
                }
                Action::Cancel { id } => {
                    if current.as_ref().is_some_and(|c| c.id == id) {
                        *current = None;
                    }
                }
            }
        }
        Ok(())
    }

    async fn list_permit(&self) -> Result<OwnedSemaphorePermit, Ended> {
        tokio::select! {
            _ = self.abort.cancelled() => Err(Ended),
            _ = self.stop.cancelled() => Err(Ended),
            permit = self.list_permits.clone().acquire_owned() => permit.map_err(|_| Ended),
        }
    }

    /// Waits until the cluster's identity is not in doubt.
    async fn identity_confirmed(&self) -> Result<(), Ended> {
        tokio::select! {
            _ = self.abort.cancelled() => Err(Ended),
            _ = self.stop.cancelled() => Err(Ended),
            _ = self.identity.confirmed() => Ok(()),
        }
    }

    /// Every list permit: nothing else lists or restores meanwhile.
    async fn all_list_permits(&self) -> Result<OwnedSemaphorePermit, Ended> {
        let all = u32::try_from(LIST_PERMITS).unwrap_or(u32::MAX);
        tokio::select! {
            _ = self.abort.cancelled() => Err(Ended),
            _ = self.stop.cancelled() => Err(Ended),
            permit = self.list_permits.clone().acquire_many_owned(all) => permit.map_err(|_| Ended),
        }
    }

    /// Queues a message, waiting for room (unless aborted).
    async fn send(&self, msg: Msg) -> Result<(), Ended> {
        tokio::select! {
            _ = self.abort.cancelled() => Err(Ended),
            sent = self.queue.send(msg) => sent.map_err(|_| Ended),
        }
    }
}

/// Hands the informer what the request in flight brought; the request is
/// done once its body ended or it failed.
fn feed(
    informer: &mut Informer,
    current: &mut Option<Current>,
    id: RequestId,
    wire: Wire,
    now: Millis,
) {
    match wire {
        Wire::Started {
            status,
            retry_after_secs,
        } => informer.handle(
            Input::ResponseStarted {
                id,
                status,
                retry_after_secs,
            },
            now,
        ),
        Wire::Chunk(bytes) => informer.handle(Input::BodyChunk { id, bytes: &bytes }, now),
        Wire::End => {
            *current = None;
            informer.handle(Input::BodyEnd { id }, now)
        }
        Wire::Failed(message) => {
            *current = None;
            informer.handle(Input::Failed { id, message }, now)
        }
    }
}

/// Whether what the request in flight brought could mean another cluster
/// answers: it failed, its answer is not a success, or the server ended a
/// watch (a list's last page ends it as expected).
fn puts_in_doubt(current: Option<&Current>, wire: &Wire) -> bool {
    match wire {
        Wire::Failed(_) => true,
        Wire::Started { status, .. } => !(200..300).contains(status),
        Wire::End => current.is_some_and(|current| current.watch),
        Wire::Chunk(_) => false,
    }
}

/// What happens next to the request in flight (never, without one).
async fn next_wire(current: &mut Option<Current>) -> Option<(RequestId, Wire)> {
    match current {
        Some(current) => Some((current.id, current.request.next().await)),
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or for ever without one (a `select!` branch that
/// is off).
pub(super) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
