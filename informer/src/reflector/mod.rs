//! The Reflector as a sans-IO state machine.
//!
//! It owns no socket and no timer. The driver (the wasm transport, or a test)
//! tells it what happened — response headers, body chunks, end of body, a
//! failed request, the clock ticked — and collects what to do next as
//! [`Action`]s (send this GET, cancel that request) and when to wake it
//! ([`Reflector::poll_timeout`]), plus the
//! store operations ([`StoreOp`]) that the informer feeds into the DeltaFIFO.
//!
//! Each state is a variant of `State` (`state.rs`) carrying its own data; nothing about
//! the current request lives beside it:
//! * `Listing` — a paginated LIST (`limit`/`continue`) from a `ListFrom`;
//!   pages are accumulated and become one `Replace` when the last arrives. A
//!   410 on a `continue` page restarts the list from the latest state.
//! * `StreamingList` — a WATCH with `sendInitialEvents=true` collecting the
//!   objects until the BOOKMARK annotated `k8s.io/initial-events-end`, which
//!   becomes the `Replace`; the same stream then goes on as `Watching`.
//! * `Watching` — a WATCH from a resourceVersion; every event (bookmarks
//!   too) advances it.
//! * `Waiting` — backing off (or honouring Retry-After) until a deadline,
//!   then doing the `Next` step it holds.
//! * `Halted` — the server called the request itself wrong (400 Bad Request,
//!   404 Not Found, 405, 422: a bad selector, a resource it does not serve):
//!   asking again would fail the same way, so nothing is sent until the
//!   user changes the request or asks to [`Reflector::retry`].
//! * `Idle` / `Stopped`.
//!
//! A store restored from the browser's database does not list: it
//! [`Reflector::resume`]s, watching from the resourceVersion it was stored
//! at (the apiserver's watch sends every change since, or 410 when that is
//! compacted away, and the reflector relists as after any 410). The resumed
//! watch has caught up at its first BOOKMARK (the server saying "synced
//! here", as etcd's progress notifications become bookmarks), or — for a
//! server that sends none soon — once its stream has been open and quiet for
//! [`CATCH_UP_QUIET`], and at the latest [`CATCH_UP_MAX`] after it was sent;
//! then [`StoreOp::CaughtUp`] follows the changes it brought.
//!
//! Choices that follow client-go's reflector: the first LIST uses
//! resourceVersion `"0"`, later ones the last seen RV, and `""` after the RV
//! was reported expired or too large; a clean end of a watch re-watches from
//! the last RV without relisting, unless the watch lasted under a second
//! with no events (an error: backoff, then relist); a watch ERROR 410 relists;
//! 429 waits for Retry-After; a 403 waits a slow backoff (5 s doubling to
//! 5 min: a role is rarely granted within seconds, and hammering a server
//! that refuses helps no one); every other failure waits an exponential
//! backoff. resourceVersions are opaque strings, never compared.
//!
//! Streaming-list fallback: the server does not support `sendInitialEvents`
//! when it answers 400/403/422 (1.27 and later without the WatchList
//! feature), or when it streams events but no `initial-events-end` bookmark
//! comes (an older server ignores the parameter and just watches, sending
//! every object as ADDED). That is seen when a plain BOOKMARK arrives first
//! (a server that honours the parameter sends none before the initial
//! events end; an older one sends one about once a minute), or when the
//! stream has no events `streaming_fallback_after` (10 s by default) after
//! the start, or — once events arrived — [`STREAMING_QUIET`] (2 s) after the
//! stream went quiet but no earlier than [`STREAMING_MIN_WAIT`] (3 s) after
//! the start, or at the latest [`STREAMING_MAX`] after the start. While the
//! events keep coming a large list is not cut short: 100,000 pods as Tables
//! take longer than 10 s to stream to a busy page. After a fallback the
//! reflector uses LIST + WATCH for the rest of its life.
//!
//! The files: `protocol` (inputs, actions, store ops), `status` (phase,
//! counters, errors), `request` (paths, queries, Accept), `printing` (the
//! server's Table columns), `state` (what each state holds), `timing` (how
//! long it waits for what), `list` and `watch` (what each response does),
//! `failure` (what a failed or refused request leads to).

mod failure;
mod list;
mod printing;
mod protocol;
mod request;
mod state;
mod status;
mod timing;
mod watch;

use std::collections::VecDeque;
use std::sync::Arc;

use self::printing::ServerColumns;
use self::request::Requests;
use self::state::{CatchUp, ListMode, Next, Sent, State};
use crate::backoff::{Backoff, SplitMix64};
use crate::clock::Millis;
use crate::config::InformerConfig;
use crate::object::ObjectRef;
use crate::table::ColumnDefinition;

pub use self::protocol::{next_request_id, Action, Input, RequestId, RequestKind, StoreOp};
pub(crate) use self::request::ListFrom;
pub use self::status::{Op, Phase, ReflectorError, ReflectorStatus};
pub use self::timing::{
    CATCH_UP_MAX, CATCH_UP_QUIET, STREAMING_MAX, STREAMING_MIN_WAIT, STREAMING_QUIET,
};

/// FNV-1a, to give informers with the same seed but different resources
/// different jitter (no thundering herd when one page runs many informers).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

pub struct Reflector {
    config: InformerConfig,
    resource_name: String,
    requests: Requests,
    backoff: Backoff,
    /// After a 403: slower than `backoff` (see [`InformerConfig::forbidden_backoff`]).
    forbidden_backoff: Backoff,
    rng: SplitMix64,
    state: State,
    list_mode: ListMode,
    /// Lists and watches started, for the relist and restart counters.
    lists_started: u32,
    watches_started: u32,
    /// When the next periodic resync is due (set by the first list).
    next_resync: Option<Millis>,
    actions: VecDeque<Action>,
    ops: VecDeque<StoreOp>,
    status: ReflectorStatus,
    columns: ServerColumns,
    /// A resumed watch is catching up (see [`Reflector::resume`]).
    catch_up: Option<CatchUp>,
}

impl std::fmt::Debug for Reflector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("resource", &self.resource_name)
            .field("state", &self.state)
            .field("status", &self.status)
            .finish()
    }
}

impl Reflector {
    pub fn new(config: InformerConfig) -> Reflector {
        let requests = Requests::new(&config);
        let selector_salt = config
            .label_selector
            .as_deref()
            .map_or(0, fnv1a)
            .rotate_left(17);
        Reflector {
            backoff: Backoff::new(config.backoff.clone()),
            forbidden_backoff: Backoff::new(config.forbidden_backoff.clone()),
            rng: SplitMix64::new(config.seed ^ fnv1a(requests.base_path()) ^ selector_salt),
            list_mode: if config.streaming_list {
                ListMode::Streaming
            } else {
                ListMode::Paginated
            },
            resource_name: config.resource.stats_name(),
            requests,
            config,
            state: State::Idle,
            lists_started: 0,
            watches_started: 0,
            next_resync: None,
            actions: VecDeque::new(),
            ops: VecDeque::new(),
            status: ReflectorStatus::default(),
            columns: ServerColumns::default(),
            catch_up: None,
        }
    }

    /// The column definitions of the server's Table (table mode), as the
    /// last list (or streaming list) printed them; `None` when the server
    /// answered plain lists, or before the first list. Callers may compare
    /// with `Arc::ptr_eq` to notice a change.
    pub fn server_columns(&self) -> Option<&Arc<[ColumnDefinition]>> {
        self.columns.get()
    }

    pub fn status(&self) -> &ReflectorStatus {
        &self.status
    }

    pub(crate) fn status_mut(&mut self) -> &mut ReflectorStatus {
        &mut self.status
    }

    pub fn config(&self) -> &InformerConfig {
        &self.config
    }

    /// True while a streaming list is still being attempted.
    pub fn uses_streaming_list(&self) -> bool {
        self.list_mode == ListMode::Streaming
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// Store operations are waiting for [`Reflector::poll_op`].
    pub fn has_ops(&self) -> bool {
        !self.ops.is_empty()
    }

    /// How many store operations wait for [`Reflector::poll_op`].
    pub fn queued_ops(&self) -> usize {
        self.ops.len()
    }

    /// Queues the first list (or streaming watch). Does nothing unless idle.
    pub fn start(&mut self, now: Millis) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        self.begin_list(ListFrom::Any, now);
    }

    /// Watches from `resource_version` instead of listing: the store was
    /// restored (from the browser's database) as it was at that version.
    /// Does nothing unless idle. Until the watch has caught up
    /// ([`StoreOp::CaughtUp`]) the reflector is [`Reflector::is_catching_up`];
    /// a 410 relists as for any watch, which ends the catching up.
    /// `columns` are the server's Table columns the stored rows were
    /// printed with (table mode).
    pub fn resume(
        &mut self,
        resource_version: &str,
        columns: Option<Vec<ColumnDefinition>>,
        now: Millis,
    ) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        if resource_version.is_empty() {
            self.start(now);
            return;
        }
        if let Some(columns) = columns {
            self.columns.adopt_if_unknown(&columns);
        }
        // The stored list counts as the first: a relist after this is one.
        self.lists_started = 1;
        self.set_last_rv(resource_version);
        self.catch_up = Some(CatchUp {
            sent_at: now,
            last_activity: now,
        });
        self.send_watch(resource_version.to_owned(), now);
    }

    /// The server's Table columns stored rows were printed with, known
    /// before the watch resumes (the rows shown while restoring), unless
    /// columns are known already.
    pub fn adopt_stored_columns(&mut self, columns: &[ColumnDefinition]) {
        self.columns.adopt_if_unknown(columns);
    }

    /// A resumed watch has not caught up yet (see [`Reflector::resume`]).
    pub fn is_catching_up(&self) -> bool {
        self.catch_up.is_some()
    }

    /// The resumed watch has caught up: the informer is told after the
    /// changes it brought.
    fn caught_up(&mut self) {
        if self.catch_up.take().is_some() {
            self.ops.push_back(StoreOp::CaughtUp);
        }
    }

    /// When a resumed watch that is open and quiet counts as caught up.
    fn catch_up_deadline(&self) -> Option<Millis> {
        let catch_up = self.catch_up?;
        let latest = catch_up.sent_at.saturating_add(CATCH_UP_MAX);
        match &self.state {
            State::Watching(w) if w.stream.sent.ok() => {
                Some(latest.min(catch_up.last_activity.saturating_add(CATCH_UP_QUIET)))
            }
            State::Watching(_) => Some(latest),
            _ => None,
        }
    }

    /// The user asks again now: a halted or backing-off reflector does its
    /// next step at once, with its backoffs forgotten. Does nothing while a
    /// request is in flight, or once stopped.
    pub fn retry(&mut self, now: Millis) {
        let next = match &self.state {
            State::Halted { next } | State::Waiting { next, .. } => next.clone(),
            _ => return,
        };
        self.backoff.reset();
        self.forbidden_backoff.reset();
        self.do_next(next, now);
    }

    /// The current watch's response has started with a 2xx: events can
    /// arrive. `Phase::Watching` begins when the watch is *sent* (a watch
    /// waiting for the channel to reconnect is not open yet).
    pub fn is_watch_open(&self) -> bool {
        self.stream_sent().is_some_and(Sent::ok)
    }

    /// When the current watch was sent, while its response has not started.
    pub fn watch_pending_since(&self) -> Option<Millis> {
        self.stream_sent()
            .filter(|sent| sent.http_status.is_none())
            .map(|sent| sent.sent_at)
    }

    /// True when nothing will be sent without [`Reflector::retry`] (a permanent failure).
    pub fn is_halted(&self) -> bool {
        matches!(self.state, State::Halted { .. })
    }

    /// Cancels in-flight requests; nothing is sent afterwards.
    pub fn stop(&mut self) {
        self.cancel_current();
        self.state = State::Stopped;
        self.status.phase = Phase::Stopped;
        self.next_resync = None;
    }

    pub fn handle(&mut self, input: Input<'_>, now: Millis) {
        if matches!(self.state, State::Stopped) {
            return;
        }
        match input {
            Input::ResponseStarted {
                id,
                status,
                retry_after_secs,
            } => {
                let ours = match self.sent_mut(id) {
                    Some(sent) => {
                        sent.http_status = Some(status);
                        sent.retry_after = retry_after_secs;
                        true
                    }
                    None => false,
                };
                if let (true, Some(catch_up)) = (ours, &mut self.catch_up) {
                    catch_up.last_activity = now;
                }
            }
            Input::BodyChunk { id, bytes } => self.on_chunk(id, bytes, now),
            Input::BodyEnd { id } => self.on_end(id, now),
            Input::Failed { id, message } => self.on_failed(id, message, now),
            Input::Tick => self.on_tick(now),
        }
    }

    /// When to call `handle(Input::Tick)` if nothing else happens first:
    /// the one timer of the reflector (a backoff's end, a streaming list's
    /// fallback, a hung watch, the next resync). Ask again after every
    /// call; a tick before it is harmless.
    pub fn poll_timeout(&self) -> Option<Millis> {
        let state_deadline = match &self.state {
            State::Waiting { until, .. } => Some(*until),
            State::StreamingList(s) => Some(
                s.fallback_deadline(self.config.streaming_fallback_after)
                    .min(s.stream.hard_deadline),
            ),
            State::Watching(w) => Some(
                self.catch_up_deadline()
                    .map_or(w.stream.hard_deadline, |d| d.min(w.stream.hard_deadline)),
            ),
            _ => None,
        };
        let resync = self.next_resync.filter(|_| {
            matches!(
                self.state,
                State::Watching(_)
                    | State::StreamingList(_)
                    | State::Listing(_)
                    | State::Waiting { .. }
            )
        });
        match (state_deadline, resync) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- the request in flight -------------------------------------------

    fn sent(&self) -> Option<&Sent> {
        match &self.state {
            State::Listing(l) => Some(&l.sent),
            _ => self.stream_sent(),
        }
    }

    fn stream_sent(&self) -> Option<&Sent> {
        match &self.state {
            State::StreamingList(s) => Some(&s.stream.sent),
            State::Watching(w) => Some(&w.stream.sent),
            _ => None,
        }
    }

    fn current_id(&self) -> Option<RequestId> {
        self.sent().map(|sent| sent.id)
    }

    fn sent_mut(&mut self, id: RequestId) -> Option<&mut Sent> {
        let sent = match &mut self.state {
            State::Listing(l) => &mut l.sent,
            State::StreamingList(s) => &mut s.stream.sent,
            State::Watching(w) => &mut w.stream.sent,
            _ => return None,
        };
        (sent.id == id).then_some(sent)
    }

    fn new_id(&mut self) -> RequestId {
        next_request_id()
    }

    fn send(&mut self, id: RequestId, kind: RequestKind, request: request::Request) {
        self.actions.push_back(Action::Send {
            id,
            kind,
            path_and_query: request.path_and_query,
            accept: request.accept,
        });
    }

    fn cancel_current(&mut self) {
        if let Some(id) = self.current_id() {
            self.actions.push_back(Action::Cancel { id });
        }
    }

    // ---- transitions ------------------------------------------------------

    /// A (re)list from `from`, streamed or paged as the server allows.
    fn begin_list(&mut self, from: ListFrom, now: Millis) {
        // A relist replaces the store: nothing restored is left to catch up.
        self.catch_up = None;
        if self.lists_started > 0 {
            self.status.relists += 1;
        }
        self.lists_started += 1;
        match self.list_mode {
            ListMode::Streaming => self.send_streaming_list(from, now),
            ListMode::Paginated => self.send_first_page(from, now),
        }
    }

    fn do_next(&mut self, next: Next, now: Millis) {
        match next {
            Next::List(from) => self.begin_list(from, now),
            Next::Watch(rv) => self.send_watch(rv, now),
        }
    }

    /// A list is complete: the informer replaces its store, and the watch
    /// (or the streaming list's stream) goes on from `rv`.
    fn list_done(&mut self, items: Vec<ObjectRef>, rv: &str, now: Millis) {
        self.ops.push_back(StoreOp::Replace {
            items,
            resource_version: rv.to_owned(),
        });
        self.set_last_rv(rv);
        if self.next_resync.is_none() {
            self.next_resync = self
                .config
                .resync_period
                .filter(|p| *p > 0)
                .map(|p| now.saturating_add(p));
        }
    }

    fn set_last_rv(&mut self, rv: &str) {
        if !rv.is_empty() {
            self.status.last_resource_version = rv.to_owned();
        }
    }

    // ---- inputs -----------------------------------------------------------

    fn on_chunk(&mut self, id: RequestId, bytes: &[u8], now: Millis) {
        match &self.state {
            State::Listing(l) if l.sent.id == id => self.list_chunk(bytes),
            State::StreamingList(s) if s.stream.sent.id == id => self.stream_chunk(id, bytes, now),
            State::Watching(w) if w.stream.sent.id == id => self.stream_chunk(id, bytes, now),
            _ => {}
        }
    }

    fn on_end(&mut self, id: RequestId, now: Millis) {
        if self.sent_mut(id).is_some_and(|r| r.http_status.is_none()) {
            let message = "the server closed the connection before sending a response".to_owned();
            self.on_failed(id, message, now);
            return;
        }
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Listing(l) if l.sent.id == id => self.list_end(l, now),
            state @ (State::StreamingList(_) | State::Watching(_)) => {
                self.state = state;
                if self.current_id() == Some(id) {
                    self.stream_end(id, now);
                }
            }
            other => self.state = other,
        }
    }

    fn on_tick(&mut self, now: Millis) {
        if self
            .catch_up_deadline()
            .is_some_and(|deadline| now >= deadline)
        {
            self.caught_up();
        }
        match &self.state {
            State::Waiting { until, next } if now >= *until => {
                let next = next.clone();
                self.do_next(next, now);
            }
            State::StreamingList(s)
                if now >= s.fallback_deadline(self.config.streaming_fallback_after) =>
            {
                // events but no initial-events-end bookmark: the server
                // ignores sendInitialEvents
                self.abandon_streaming_list(now);
            }
            State::Watching(w) if now >= w.stream.hard_deadline => {
                // past timeoutSeconds and still open: treat it as closed
                let rv = w.rv.clone();
                self.cancel_current();
                self.send_watch(rv, now);
            }
            _ => {}
        }
        if self.next_resync.is_some_and(|at| now >= at) {
            if let Some(period) = self.config.resync_period.filter(|p| *p > 0) {
                self.ops.push_back(StoreOp::Resync);
                self.next_resync = Some(now.saturating_add(period));
            }
        }
    }
}
