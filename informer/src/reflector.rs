//! The Reflector as a sans-IO state machine (DESIGN §3).
//!
//! It owns no socket and no timer. The driver (the wasm transport, or a test)
//! tells it what happened — response headers, body chunks, end of body, a
//! failed request, the clock ticked — and collects what to do next as
//! [`Action`]s (send this GET, cancel that request, wake me at T) plus the
//! store operations ([`StoreOp`]) that the informer feeds into the DeltaFIFO.
//!
//! States, each a variant of [`State`]:
//! * `Listing` — a paginated LIST (`limit`/`continue`) is in flight; pages
//!   are accumulated and become one `Replace` when the last page arrives. A
//!   410 on a `continue` page restarts the list with resourceVersion `""`.
//! * `Watching` — a WATCH stream is open; its bytes go through the framer and
//!   every event advances the last seen resourceVersion (bookmarks too). In
//!   streaming-list mode the watch starts with `sendInitialEvents=true` and
//!   collects objects in a temporary map until the BOOKMARK annotated
//!   `k8s.io/initial-events-end`, which becomes the `Replace`.
//! * `Waiting` — backing off (or honouring Retry-After) until a deadline,
//!   then doing the remembered next step.
//! * `Halted` — the server called the request itself wrong (400 Bad Request,
//!   404 Not Found, 405, 422: a bad selector, a resource it does not serve):
//!   asking again would fail the same way, so nothing is sent until the
//!   user changes the request or asks to [`Reflector::retry`].
//! * `Idle` / `Stopped`.
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
//! when it answers 400/403/422, or when it streams events but no
//! `initial-events-end` bookmark arrives in time (an older server ignores the
//! parameter and just watches). "In time" is: 10 s after the watch started
//! (`streaming_fallback_after`), or 2 s after start when events arrived and
//! the stream has then been quiet for 1 s. After a fallback the reflector
//! uses LIST + WATCH for the rest of its life.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::backoff::{Backoff, SplitMix64};
use super::event::{decode_event_with_columns, decode_list, Status, WatchEvent};
use super::framer::{FramerError, LineFramer};
use super::object::ObjectRef;
use super::table::{ColumnDefinition, TABLE_ACCEPT};
use super::{InformerConfig, Millis};
use deltascope_facts::percent::encode_query_value as percent_encode;

/// Identifies one HTTP request the reflector asked for; unique across all
/// informers of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    List,
    Watch,
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// GET `path_and_query` with this `Accept` header (`None`: the
    /// client's default); report headers, body chunks and the end (or a
    /// failure) with this id.
    Send {
        id: RequestId,
        kind: RequestKind,
        path_and_query: String,
        accept: Option<&'static str>,
    },
    /// Abort an in-flight request; later inputs for it are ignored anyway.
    Cancel { id: RequestId },
    /// Call `handle(Input::Tick)` at or after `at`; the latest WakeAt wins.
    WakeAt { at: Millis },
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    ResponseStarted {
        id: RequestId,
        status: u16,
        retry_after_secs: Option<u64>,
    },
    BodyChunk {
        id: RequestId,
        bytes: &'a [u8],
    },
    BodyEnd {
        id: RequestId,
    },
    Failed {
        id: RequestId,
        message: String,
    },
    Tick,
}

/// What the informer should do to the DeltaFIFO.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    Replace {
        items: Vec<ObjectRef>,
        resource_version: String,
    },
    Add(ObjectRef),
    Update(ObjectRef),
    Delete(ObjectRef),
    Resync,
}

/// The state shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Listing {
        pages: u32,
        items: u64,
        bytes: u64,
    },
    Watching,
    Backoff {
        until: Millis,
        reason: String,
    },
    /// Failing in a way the user must act on (401, 403); retried slowly.
    Error {
        message: String,
    },
    /// The server called the request wrong (see [`ReflectorError::is_permanent`]):
    /// nothing more is sent until [`Reflector::retry`].
    Failed {
        message: String,
    },
    Stopped,
}

impl Phase {
    /// The DESIGN §4 `data-state` value. `Idle` reads as `listing` (an
    /// informer is started right after it is created) and `Stopped` as
    /// `error` (the data is no longer kept up to date).
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Idle | Phase::Listing { .. } => "listing",
            Phase::Watching => "watching",
            Phase::Backoff { .. } => "backoff",
            Phase::Error { .. } | Phase::Failed { .. } | Phase::Stopped => "error",
        }
    }

    /// Not listing or watching because of an error (retrying or not).
    pub fn is_failing(&self) -> bool {
        matches!(
            self,
            Phase::Backoff { .. } | Phase::Error { .. } | Phase::Failed { .. }
        )
    }
}

/// List or watch, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    List,
    Watch,
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Op::List => "listing",
            Op::Watch => "watching",
        })
    }
}

fn http_hint(status: u16) -> &'static str {
    match status {
        401 => " Your session is not authenticated: reload the page with a valid token (or check the credentials of kubectl proxy).",
        400 => " The server rejected the request: check the label and field selectors. deltascope does not send it again as it is.",
        403 => " Your account is not allowed to do this: ask for list/watch permission on this resource. deltascope retries slowly (at most every 5 minutes) in case access is granted.",
        404 => " The server does not serve this resource: check the API group/version, or whether the CRD is installed. deltascope does not ask again on its own.",
        410 => " The requested resourceVersion is too old; deltascope relists.",
        429 => " The server is throttling requests; deltascope waits as asked.",
        500..=599 => " The server had a problem; deltascope retries with backoff.",
        _ => "",
    }
}

fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// Why a list or watch failed, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReflectorError {
    #[error("{op} {resource} failed: HTTP {status} {reason}{}{message}.{}", if message.is_empty() { "" } else { ": " }, http_hint(*status))]
    Http {
        op: Op,
        resource: String,
        status: u16,
        reason: String,
        message: String,
    },
    #[error("{op} {resource} failed: the connection failed ({message}). Check that the API server (or kubectl proxy) is reachable; deltascope retries with backoff.")]
    Network {
        op: Op,
        resource: String,
        message: String,
    },
    #[error("{op} {resource}: the server sent data deltascope cannot read ({message}); it reconnects from the last good resourceVersion.")]
    Decode {
        op: Op,
        resource: String,
        message: String,
    },
    #[error("watching {resource}: the server reported an error in the stream: {code} {reason}: {message}.{}", http_hint(*code))]
    WatchEvent {
        resource: String,
        code: u16,
        reason: String,
        message: String,
    },
    #[error("watching {resource}: the watch closed after {millis} ms without any event (a very short watch usually means a proxy or the server is dropping connections); deltascope relists after a backoff.")]
    ShortWatch { resource: String, millis: Millis },
    #[error("{op} {resource}: {source}")]
    Framing {
        op: Op,
        resource: String,
        source: FramerError,
    },
}

impl ReflectorError {
    /// The HTTP status, if any.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReflectorError::Http { status, .. } => Some(*status),
            ReflectorError::WatchEvent { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// 401/403/404: retrying alone will probably not help, the user must act.
    pub fn needs_user(&self) -> bool {
        matches!(self.status(), Some(401 | 403 | 404))
    }

    /// The server called the request itself wrong — 400 (a bad selector),
    /// 404 (a resource it does not serve), 405, 422: the same request can
    /// only fail again, so the reflector stops asking until the user changes
    /// it or asks to retry. Only an answer to the request counts: an ERROR
    /// event inside a watch that opened fine is about the stream, and relists.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ReflectorError::Http {
                status: 400 | 404 | 405 | 422,
                ..
            }
        )
    }
}

/// Reflector state reported to the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorStatus {
    pub phase: Phase,
    /// The informer has synced (the initial list has been fully processed).
    pub synced: bool,
    /// The last resourceVersion seen (list, event or bookmark).
    pub last_resource_version: String,
    /// Lists started after the first one.
    pub relists: u32,
    /// Watches started after the first one.
    pub watch_restarts: u32,
    /// Watch events received (bookmarks included, errors excluded).
    pub events: u64,
    /// The most recent error; kept after recovery so the UI can say what
    /// happened (the phase tells whether it is current).
    pub last_error: Option<ReflectorError>,
}

impl Default for ReflectorStatus {
    fn default() -> Self {
        ReflectorStatus {
            phase: Phase::Idle,
            synced: false,
            last_resource_version: String::new(),
            relists: 0,
            watch_restarts: 0,
            events: 0,
            last_error: None,
        }
    }
}

/// What to do when a wait is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    List,
    Watch,
}

#[derive(Debug)]
struct Request {
    id: RequestId,
    sent_at: Millis,
    http_status: Option<u16>,
    retry_after: Option<u64>,
    /// list body, or an error body (capped)
    body: Vec<u8>,
}

impl Request {
    fn new(id: RequestId, now: Millis) -> Request {
        Request {
            id,
            sent_at: now,
            http_status: None,
            retry_after: None,
            body: Vec::new(),
        }
    }

    fn ok(&self) -> bool {
        matches!(self.http_status, Some(200..=299))
    }
}

#[derive(Debug)]
struct ListState {
    req: Request,
    /// resourceVersion the list was started with
    rv: String,
    continue_token: Option<String>,
    pages: u32,
    items: Vec<ObjectRef>,
    bytes: u64,
    /// column definitions of this list's first Table page that had any
    columns: Option<Vec<ColumnDefinition>>,
}

/// What the pages of a list received so far hold.
#[derive(Debug, Default)]
struct ListSoFar {
    pages: u32,
    items: Vec<ObjectRef>,
    bytes: u64,
    columns: Option<Vec<ColumnDefinition>>,
}

#[derive(Debug)]
struct InitialEvents {
    objects: BTreeMap<String, ObjectRef>,
    rv: String,
    /// column definitions of the first Table event that had any
    columns: Option<Vec<ColumnDefinition>>,
    /// some event carried a Table row (else the server printed no Table)
    saw_table: bool,
    /// some event carried a plain object
    saw_plain: bool,
    /// when bytes last arrived, once at least one event did
    last_event: Option<Millis>,
    bytes: u64,
}

#[derive(Debug)]
struct WatchState {
    req: Request,
    /// the server should have closed the watch (timeoutSeconds) by then
    hard_deadline: Millis,
    framer: LineFramer,
    events: u64,
    /// `Some` while a streaming list is still receiving its initial events
    initial: Option<InitialEvents>,
}

#[derive(Debug)]
enum State {
    Idle,
    Listing(ListState),
    Watching(WatchState),
    Waiting {
        until: Millis,
        next: Next,
    },
    /// A permanent failure: nothing is sent until `retry`, which does `next`.
    Halted {
        next: Next,
    },
    Stopped,
}

/// FNV-1a, to give informers with the same seed but different resources
/// different jitter (no thundering herd when one page runs many informers).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn fnv1a_opt(s: &Option<String>) -> u64 {
    s.as_deref().map_or(0, fnv1a).rotate_left(17)
}

static NEXT_REQUEST_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Maximum bytes kept of an error body.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest Retry-After honoured.
const MAX_RETRY_AFTER_SECS: u64 = 600;
/// A watch shorter than this with no events is an error.
const SHORT_WATCH: Millis = 1_000;
/// Streaming-list fallback: once events flow, the `initial-events-end`
/// bookmark is expected no earlier than this after the start ...
const STREAMING_MIN_WAIT: Millis = 3_000;
/// ... and at the latest this long after the stream went quiet.
const STREAMING_QUIET: Millis = 2_000;
/// A watch still open this long after its `timeoutSeconds` is presumed hung
/// (a proxy that never closes): it is cancelled and re-opened.
const WATCH_GRACE_SECS: u64 = 60;

pub struct Reflector {
    config: InformerConfig,
    resource_name: String,
    base_path: String,
    backoff: Backoff,
    /// After a 403: slower than `backoff` (see [`InformerConfig::forbidden_backoff`]).
    forbidden_backoff: Backoff,
    rng: SplitMix64,
    state: State,
    /// streaming list still worth trying
    streaming: bool,
    last_rv: String,
    rv_unavailable: bool,
    listed_once: bool,
    watched_once: bool,
    has_listed: bool,
    next_resync: Option<Millis>,
    last_wake: Option<Millis>,
    actions: VecDeque<Action>,
    ops: VecDeque<StoreOp>,
    status: ReflectorStatus,
    /// The server's Table columns (table mode, once a list printed a Table).
    columns: Option<Arc<[ColumnDefinition]>>,
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
        let resource_name = config.resource.stats_name();
        let base_path = config.resource.api_path(config.namespace.as_deref());
        Reflector {
            backoff: Backoff::new(config.backoff.clone()),
            forbidden_backoff: Backoff::new(config.forbidden_backoff.clone()),
            rng: SplitMix64::new(
                config.seed ^ fnv1a(&base_path) ^ fnv1a_opt(&config.label_selector),
            ),
            streaming: config.streaming_list,
            resource_name,
            base_path,
            config,
            state: State::Idle,
            last_rv: String::new(),
            rv_unavailable: false,
            listed_once: false,
            watched_once: false,
            has_listed: false,
            next_resync: None,
            last_wake: None,
            actions: VecDeque::new(),
            ops: VecDeque::new(),
            status: ReflectorStatus::default(),
            columns: None,
        }
    }

    /// The column definitions of the server's Table (table mode), as the
    /// last list (or streaming list) printed them; `None` when the server
    /// answered plain lists, or before the first list. Callers may compare
    /// with `Arc::ptr_eq` to notice a change.
    pub fn server_columns(&self) -> Option<&Arc<[ColumnDefinition]>> {
        self.columns.as_ref()
    }

    /// Adopts `defs` unless the same columns are already known.
    fn set_columns(&mut self, defs: Vec<ColumnDefinition>) {
        if self.columns.as_deref() != Some(defs.as_slice()) {
            self.columns = Some(defs.into());
        }
    }

    /// Table mode: the Accept header and `includeObject` parameter of every request.
    fn table_request(&self, q: &mut String) -> Option<&'static str> {
        if !self.config.server_table {
            return None;
        }
        q.push_str("&includeObject=Object");
        Some(TABLE_ACCEPT)
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
        self.streaming
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// Queues the first list (or streaming watch). Does nothing unless idle.
    pub fn start(&mut self, now: Millis) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        self.begin_list(now);
        self.schedule_wake(false);
    }

    /// The user asks again now: a halted or backing-off reflector does its
    /// next step at once, with its backoffs forgotten. Does nothing while a
    /// request is in flight, or once stopped.
    pub fn retry(&mut self, now: Millis) {
        let next = match self.state {
            State::Halted { next } | State::Waiting { next, .. } => next,
            _ => return,
        };
        self.backoff.reset();
        self.forbidden_backoff.reset();
        self.do_next(next, now);
        self.schedule_wake(false);
    }

    /// The current watch's response has started with a 2xx: events can
    /// arrive. `Phase::Watching` begins when the watch is *sent* (a watch
    /// waiting for the channel to reconnect is not open yet).
    pub fn is_watch_open(&self) -> bool {
        matches!(&self.state, State::Watching(w) if w.req.ok())
    }

    /// When the current watch was sent, while its response has not started.
    pub fn watch_pending_since(&self) -> Option<Millis> {
        match &self.state {
            State::Watching(w) if w.req.http_status.is_none() => Some(w.req.sent_at),
            _ => None,
        }
    }

    /// True when nothing will be sent without [`Reflector::retry`] (a permanent failure).
    pub fn is_halted(&self) -> bool {
        matches!(self.state, State::Halted { .. })
    }

    /// Cancels in-flight requests; nothing is sent afterwards.
    pub fn stop(&mut self) {
        if let Some(id) = self.current_id() {
            self.actions.push_back(Action::Cancel { id });
        }
        self.state = State::Stopped;
        self.status.phase = Phase::Stopped;
        self.next_resync = None;
    }

    pub fn handle(&mut self, input: Input<'_>, now: Millis) {
        if matches!(self.state, State::Stopped) {
            return;
        }
        let tick = matches!(input, Input::Tick);
        match input {
            Input::ResponseStarted {
                id,
                status,
                retry_after_secs,
            } => self.on_response(id, status, retry_after_secs),
            Input::BodyChunk { id, bytes } => self.on_chunk(id, bytes, now),
            Input::BodyEnd { id } => self.on_end(id, now),
            Input::Failed { id, message } => self.on_failed(id, message, now),
            Input::Tick => self.on_tick(now),
        }
        self.schedule_wake(tick);
    }

    fn current_id(&self) -> Option<RequestId> {
        match &self.state {
            State::Listing(l) => Some(l.req.id),
            State::Watching(w) => Some(w.req.id),
            _ => None,
        }
    }

    fn current_req(&mut self, id: RequestId) -> Option<&mut Request> {
        match &mut self.state {
            State::Listing(l) if l.req.id == id => Some(&mut l.req),
            State::Watching(w) if w.req.id == id => Some(&mut w.req),
            _ => None,
        }
    }

    /// Ids come from one process-wide counter, so the driver can keep the
    /// requests of all its informers in one map without collisions.
    fn new_id(&mut self) -> RequestId {
        RequestId(NEXT_REQUEST_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The earliest time something must happen without input.
    pub fn next_deadline(&self) -> Option<Millis> {
        let mut d: Option<Millis> = None;
        let mut consider = |t: Millis| d = Some(d.map_or(t, |x| x.min(t)));
        match &self.state {
            State::Waiting { until, .. } => consider(*until),
            State::Watching(w) => {
                if let Some(init) = &w.initial {
                    consider(self.streaming_deadline(w.req.sent_at, init));
                }
                consider(w.hard_deadline);
            }
            _ => {}
        }
        if let Some(r) = self.next_resync {
            if matches!(
                self.state,
                State::Watching(_) | State::Listing(_) | State::Waiting { .. }
            ) {
                consider(r);
            }
        }
        d
    }

    fn streaming_deadline(&self, started: Millis, init: &InitialEvents) -> Millis {
        let hard = started.saturating_add(self.config.streaming_fallback_after);
        match init.last_event {
            Some(last) => hard.min(
                started
                    .saturating_add(STREAMING_MIN_WAIT)
                    .max(last.saturating_add(STREAMING_QUIET)),
            ),
            None => hard,
        }
    }

    fn schedule_wake(&mut self, force: bool) {
        let d = self.next_deadline();
        if let Some(at) = d {
            if force || self.last_wake != Some(at) {
                self.actions.push_back(Action::WakeAt { at });
            }
        }
        self.last_wake = d;
    }

    // ---- requests ---------------------------------------------------------

    fn selectors(&self, q: &mut String) {
        if let Some(s) = self
            .config
            .label_selector
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            q.push_str("&labelSelector=");
            q.push_str(&percent_encode(s));
        }
        if let Some(s) = self
            .config
            .field_selector
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            q.push_str("&fieldSelector=");
            q.push_str(&percent_encode(s));
        }
    }

    /// client-go relistResourceVersion: "" after expired/too large, "0" for
    /// the very first list, else the last seen RV.
    fn relist_rv(&self) -> String {
        if self.rv_unavailable {
            String::new()
        } else if self.last_rv.is_empty() {
            "0".to_owned()
        } else {
            self.last_rv.clone()
        }
    }

    fn begin_list(&mut self, now: Millis) {
        if self.listed_once {
            self.status.relists += 1;
        }
        self.listed_once = true;
        if self.streaming {
            self.send_watch(now, true);
        } else {
            let rv = self.relist_rv();
            self.send_list_page(now, rv, None, ListSoFar::default());
        }
    }

    fn send_list_page(
        &mut self,
        now: Millis,
        rv: String,
        continue_token: Option<String>,
        so_far: ListSoFar,
    ) {
        let ListSoFar {
            pages,
            items,
            bytes,
            columns,
        } = so_far;
        let id = self.new_id();
        let mut q = format!("{}?limit={}", self.base_path, self.config.page_size.max(1));
        match &continue_token {
            Some(c) => {
                q.push_str("&continue=");
                q.push_str(&percent_encode(c));
            }
            None => {
                if !rv.is_empty() {
                    q.push_str("&resourceVersion=");
                    q.push_str(&percent_encode(&rv));
                }
            }
        }
        self.selectors(&mut q);
        let accept = self.table_request(&mut q);
        self.status.phase = Phase::Listing {
            pages,
            items: items.len() as u64,
            bytes,
        };
        self.state = State::Listing(ListState {
            req: Request::new(id, now),
            rv,
            continue_token,
            pages,
            items,
            bytes,
            columns,
        });
        self.actions.push_back(Action::Send {
            id,
            kind: RequestKind::List,
            path_and_query: q,
            accept,
        });
    }

    fn send_watch(&mut self, now: Millis, streaming: bool) {
        let id = self.new_id();
        let mut q = format!("{}?watch=true&allowWatchBookmarks=true", self.base_path);
        if streaming {
            q.push_str("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
            // client-go: the last RV unless it is known to be unavailable
            if !self.rv_unavailable && !self.last_rv.is_empty() {
                q.push_str("&resourceVersion=");
                q.push_str(&percent_encode(&self.last_rv));
            }
            self.status.phase = Phase::Listing {
                pages: 0,
                items: 0,
                bytes: 0,
            };
        } else {
            if self.watched_once {
                self.status.watch_restarts += 1;
            }
            self.watched_once = true;
            q.push_str("&resourceVersion=");
            q.push_str(&percent_encode(&self.last_rv));
            self.status.phase = Phase::Watching;
        }
        // client-go: minWatchTimeout * (1 + rand) with 5 min → [300, 600) s
        let timeout = self.rng.range(300, 600);
        let hard_deadline = now.saturating_add((timeout + WATCH_GRACE_SECS) * 1000);
        q.push_str(&format!("&timeoutSeconds={timeout}"));
        self.selectors(&mut q);
        let accept = self.table_request(&mut q);
        self.state = State::Watching(WatchState {
            req: Request::new(id, now),
            hard_deadline,
            framer: LineFramer::new(self.config.max_line_bytes),
            events: 0,
            initial: streaming.then(|| InitialEvents {
                objects: BTreeMap::new(),
                rv: String::new(),
                columns: None,
                saw_table: false,
                saw_plain: false,
                last_event: None,
                bytes: 0,
            }),
        });
        self.actions.push_back(Action::Send {
            id,
            kind: RequestKind::Watch,
            path_and_query: q,
            accept,
        });
    }

    /// The server does not do streaming lists: LIST + WATCH from now on.
    fn fallback_to_list(&mut self, now: Millis) {
        self.streaming = false;
        let rv = self.relist_rv();
        self.send_list_page(now, rv, None, ListSoFar::default());
    }

    fn do_next(&mut self, next: Next, now: Millis) {
        match next {
            Next::List => self.begin_list(now),
            Next::Watch => self.send_watch(now, false),
        }
    }

    /// Records `err`, waits (Retry-After or backoff), then does `next`; a
    /// permanent failure halts instead (nothing is sent until `retry`).
    fn fail(&mut self, err: ReflectorError, next: Next, retry_after: Option<u64>, now: Millis) {
        if err.is_permanent() {
            self.status.phase = Phase::Failed {
                message: err.to_string(),
            };
            self.status.last_error = Some(err);
            self.state = State::Halted { next };
            return;
        }
        let delay = match retry_after {
            Some(s) => s.min(MAX_RETRY_AFTER_SECS) * 1000,
            None if err.status() == Some(403) => {
                self.forbidden_backoff.next_delay(now, &mut self.rng)
            }
            None => self.backoff.next_delay(now, &mut self.rng),
        }
        .max(1);
        let until = now.saturating_add(delay);
        self.status.phase = if err.needs_user() {
            Phase::Error {
                message: err.to_string(),
            }
        } else {
            Phase::Backoff {
                until,
                reason: err.to_string(),
            }
        };
        self.status.last_error = Some(err);
        self.state = State::Waiting { until, next };
    }

    fn cancel_current(&mut self) {
        if let Some(id) = self.current_id() {
            self.actions.push_back(Action::Cancel { id });
        }
    }

    // ---- inputs -----------------------------------------------------------

    fn on_response(&mut self, id: RequestId, status: u16, retry_after: Option<u64>) {
        if let Some(req) = self.current_req(id) {
            req.http_status = Some(status);
            req.retry_after = retry_after;
        }
    }

    fn on_chunk(&mut self, id: RequestId, bytes: &[u8], now: Millis) {
        match &mut self.state {
            State::Listing(l) if l.req.id == id => {
                if l.req.ok() {
                    l.req.body.extend_from_slice(bytes);
                    l.bytes += bytes.len() as u64;
                    self.status.phase = Phase::Listing {
                        pages: l.pages,
                        items: l.items.len() as u64,
                        bytes: l.bytes,
                    };
                } else {
                    let room = MAX_ERROR_BODY.saturating_sub(l.req.body.len());
                    l.req
                        .body
                        .extend_from_slice(&bytes[..bytes.len().min(room)]);
                }
            }
            State::Watching(w) if w.req.id == id => {
                if !w.req.ok() {
                    let room = MAX_ERROR_BODY.saturating_sub(w.req.body.len());
                    w.req
                        .body
                        .extend_from_slice(&bytes[..bytes.len().min(room)]);
                    return;
                }
                if let Some(init) = &mut w.initial {
                    if init.last_event.is_some() {
                        init.last_event = Some(now);
                    }
                }
                let mut framer = std::mem::take(&mut w.framer);
                let res = framer.push(bytes, |line| {
                    if self.current_id() == Some(id) {
                        self.on_watch_line(id, line, now);
                    }
                });
                if let State::Watching(w) = &mut self.state {
                    if w.req.id == id {
                        w.framer = framer;
                        if let Err(e) = res {
                            self.watch_framing_error(e, now);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn watch_framing_error(&mut self, source: FramerError, now: Millis) {
        let streaming = matches!(&self.state, State::Watching(w) if w.initial.is_some());
        self.cancel_current();
        let err = ReflectorError::Framing {
            op: Op::Watch,
            resource: self.resource_name.clone(),
            source,
        };
        self.fail(
            err,
            if streaming { Next::List } else { Next::Watch },
            None,
            now,
        );
    }

    fn on_watch_line(&mut self, id: RequestId, line: &[u8], now: Millis) {
        let (event, columns) = match decode_event_with_columns(line) {
            Ok(e) => e,
            Err(e) => {
                // a line we cannot read: report, drop this watch and re-watch
                // from the last good RV (or restart the streaming list)
                let streaming = matches!(&self.state, State::Watching(w) if w.initial.is_some());
                self.cancel_current();
                let err = ReflectorError::Decode {
                    op: Op::Watch,
                    resource: self.resource_name.clone(),
                    message: e.to_string(),
                };
                self.fail(
                    err,
                    if streaming { Next::List } else { Next::Watch },
                    None,
                    now,
                );
                return;
            }
        };
        let State::Watching(w) = &mut self.state else {
            return;
        };
        if w.req.id != id {
            return;
        }
        if let WatchEvent::Error(status) = event {
            self.watch_error_event(status, now);
            return;
        }
        w.events += 1;
        self.status.events += 1;
        if let Some(init) = &mut w.initial {
            init.last_event = Some(now);
            init.bytes += line.len() as u64;
            if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &event
            {
                if o.cells.is_some() {
                    init.saw_table = true;
                } else {
                    init.saw_plain = true;
                }
            }
            if init.columns.is_none() {
                init.columns = columns;
                if let (None, Some(defs)) = (&self.columns, &init.columns) {
                    // the first list: show the server's columns while it streams
                    self.columns = Some(defs.clone().into());
                }
            }
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    init.rv.clone_from(&o.resource_version);
                    init.objects.insert(o.key.clone(), o);
                }
                WatchEvent::Deleted(o) => {
                    init.rv.clone_from(&o.resource_version);
                    init.objects.remove(&o.key);
                }
                WatchEvent::Bookmark {
                    resource_version,
                    initial_events_end,
                } => {
                    if !resource_version.is_empty() {
                        init.rv = resource_version;
                    }
                    if initial_events_end {
                        let Some(init) = w.initial.take() else { return };
                        self.streaming_list_done(init, now);
                        return;
                    }
                }
                WatchEvent::Error(_) => {}
            }
            self.status.phase = Phase::Listing {
                pages: 0,
                items: init.objects.len() as u64,
                bytes: init.bytes,
            };
            return;
        }
        if let (None, Some(defs)) = (&self.columns, columns) {
            self.set_columns(defs);
        }
        let rv = match event {
            WatchEvent::Added(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Add(o));
                rv
            }
            WatchEvent::Modified(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Update(o));
                rv
            }
            WatchEvent::Deleted(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Delete(o));
                rv
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => resource_version,
            WatchEvent::Error(_) => String::new(),
        };
        if !rv.is_empty() {
            self.set_last_rv(rv);
        }
    }

    fn set_last_rv(&mut self, rv: String) {
        self.status.last_resource_version.clone_from(&rv);
        self.last_rv = rv;
    }

    fn list_done(&mut self, items: Vec<ObjectRef>, rv: String, now: Millis) {
        self.ops.push_back(StoreOp::Replace {
            items,
            resource_version: rv.clone(),
        });
        self.set_last_rv(rv);
        self.rv_unavailable = false;
        self.has_listed = true;
        if self.next_resync.is_none() {
            self.next_resync = self
                .config
                .resync_period
                .filter(|p| *p > 0)
                .map(|p| now.saturating_add(p));
        }
    }

    fn streaming_list_done(&mut self, init: InitialEvents, now: Millis) {
        match (init.columns, init.saw_table, init.saw_plain) {
            (Some(defs), _, false) => self.set_columns(defs),
            // objects but no Table: the server does not print Tables
            (_, false, true) => self.columns = None,
            _ => {}
        }
        let items: Vec<ObjectRef> = init.objects.into_values().collect();
        self.list_done(items, init.rv, now);
        self.watched_once = true;
        self.status.phase = Phase::Watching;
    }

    fn watch_error_event(&mut self, status: Status, now: Millis) {
        self.cancel_current();
        let err = ReflectorError::WatchEvent {
            resource: self.resource_name.clone(),
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        };
        let streaming = matches!(&self.state, State::Watching(w) if w.initial.is_some());
        if status.is_too_large_rv() || (streaming && status.is_expired()) {
            // a streaming list would ask for the same RV again
            self.rv_unavailable = true;
        }
        // client-go: an expired watch relists from the last seen RV (a LIST
        // at that RV returns data at least that fresh); throttling and
        // internal errors retry the watch; anything else relists.
        let retry_watch = !streaming
            && !status.is_expired()
            && !status.is_too_large_rv()
            && (status.code == 429 || status.code >= 500);
        let next = if retry_watch { Next::Watch } else { Next::List };
        self.fail(err, next, None, now);
    }

    fn on_end(&mut self, id: RequestId, now: Millis) {
        if self
            .current_req(id)
            .is_some_and(|r| r.http_status.is_none())
        {
            let message = "the server closed the connection before sending a response".to_owned();
            self.on_failed(id, message, now);
            return;
        }
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Listing(l) if l.req.id == id => self.list_end(l, now),
            State::Watching(mut w) if w.req.id == id => {
                if !w.req.ok() {
                    self.state = State::Watching(w);
                    self.http_failure(id, now);
                    return;
                }
                let last = w.framer.finish();
                self.state = State::Watching(w);
                match last {
                    Ok(Some(line)) => self.on_watch_line(id, &line, now),
                    Ok(None) => {}
                    Err(e) => {
                        self.watch_framing_error(e, now);
                        return;
                    }
                }
                // the last line may have changed the state
                let State::Watching(w) = &self.state else {
                    return;
                };
                if w.req.id != id {
                    return;
                }
                let streaming = w.initial.is_some();
                let lasted = now.saturating_sub(w.req.sent_at);
                if w.events == 0 && lasted < SHORT_WATCH {
                    let err = ReflectorError::ShortWatch {
                        resource: self.resource_name.clone(),
                        millis: lasted,
                    };
                    self.fail(err, Next::List, None, now);
                } else if streaming {
                    // closed before the initial events ended: start over
                    self.begin_list(now);
                } else {
                    // clean close: re-watch from the last RV, no relist
                    self.send_watch(now, false);
                }
            }
            other => self.state = other,
        }
    }

    fn list_end(&mut self, l: ListState, now: Millis) {
        if !l.req.ok() {
            self.state = State::Listing(l);
            let id = self.current_id().unwrap_or(RequestId(0));
            self.http_failure(id, now);
            return;
        }
        match decode_list(&l.req.body) {
            Err(e) => {
                let err = ReflectorError::Decode {
                    op: Op::List,
                    resource: self.resource_name.clone(),
                    message: e.to_string(),
                };
                self.fail(err, Next::List, None, now);
            }
            Ok(page) => {
                let mut items = l.items;
                items.extend(page.items);
                let pages = l.pages + 1;
                let table = page.columns.is_some();
                let mut columns = l.columns;
                if columns.is_none() {
                    columns = page.columns.filter(|defs| !defs.is_empty());
                    if let (None, Some(defs)) = (&self.columns, &columns) {
                        // the first list: show the server's columns while it pages
                        self.columns = Some(defs.clone().into());
                    }
                }
                match page.continue_token {
                    Some(tok) => {
                        let so_far = ListSoFar {
                            pages,
                            items,
                            bytes: l.bytes,
                            columns,
                        };
                        self.send_list_page(now, l.rv, Some(tok), so_far)
                    }
                    None => {
                        match (table, columns) {
                            (true, Some(defs)) => self.set_columns(defs),
                            (true, None) => {}
                            // a plain list: the server does not print Tables
                            (false, _) => self.columns = None,
                        }
                        self.list_done(items, page.resource_version, now);
                        self.send_watch(now, false);
                    }
                }
            }
        }
    }

    /// A non-2xx response (body complete or failed).
    fn http_failure(&mut self, id: RequestId, now: Millis) {
        let (op, code, retry_after, body, streaming, continuing, list_rv) = match &mut self.state {
            State::Listing(l) if l.req.id == id => (
                Op::List,
                l.req.http_status.unwrap_or(0),
                l.req.retry_after,
                std::mem::take(&mut l.req.body),
                false,
                l.continue_token.is_some(),
                l.rv.clone(),
            ),
            State::Watching(w) if w.req.id == id => (
                Op::Watch,
                w.req.http_status.unwrap_or(0),
                w.req.retry_after,
                std::mem::take(&mut w.req.body),
                w.initial.is_some(),
                false,
                String::new(),
            ),
            _ => return,
        };
        let status = Status::from_body(&body).unwrap_or_default();
        let message = if status.message.is_empty() {
            String::from_utf8_lossy(&body[..body.len().min(300)])
                .trim()
                .to_owned()
        } else {
            status.message.clone()
        };
        let reason = if status.reason.is_empty() {
            http_reason(code).to_owned()
        } else {
            status.reason.clone()
        };
        let err = ReflectorError::Http {
            op,
            resource: self.resource_name.clone(),
            status: code,
            reason,
            message,
        };
        let expired = code == 410 || status.is_expired();
        let too_large = status.is_too_large_rv();
        if streaming && matches!(code, 400 | 403 | 422) {
            // the server rejects sendInitialEvents: fall back to list+watch
            self.status.last_error = Some(err);
            self.fallback_to_list(now);
            return;
        }
        match op {
            Op::List if (expired || too_large) && (continuing || !list_rv.is_empty()) => {
                // 410 on continue, or RV expired/too large: relist from ""
                self.rv_unavailable = true;
                self.status.last_error = Some(err);
                self.status.relists += 1;
                self.send_list_page(now, String::new(), None, ListSoFar::default());
            }
            Op::List => self.fail(
                err,
                Next::List,
                if code == 429 { retry_after } else { None },
                now,
            ),
            Op::Watch if expired || too_large => {
                if too_large || streaming {
                    // a streaming list would ask for the same RV again
                    self.rv_unavailable = true;
                }
                self.fail(err, Next::List, None, now)
            }
            Op::Watch => {
                let next = if streaming { Next::List } else { Next::Watch };
                self.fail(err, next, if code == 429 { retry_after } else { None }, now)
            }
        }
    }

    fn on_failed(&mut self, id: RequestId, message: String, now: Millis) {
        let Some(req) = self.current_req(id) else {
            return;
        };
        if req.http_status.is_some() && !req.ok() {
            self.http_failure(id, now);
            return;
        }
        let (op, next) = match &self.state {
            State::Listing(_) => (Op::List, Next::List),
            State::Watching(w) if w.initial.is_some() => (Op::Watch, Next::List),
            _ => (Op::Watch, Next::Watch),
        };
        let err = ReflectorError::Network {
            op,
            resource: self.resource_name.clone(),
            message,
        };
        self.fail(err, next, None, now);
    }

    fn on_tick(&mut self, now: Millis) {
        match &self.state {
            State::Waiting { until, next } if now >= *until => {
                let next = *next;
                self.do_next(next, now);
            }
            State::Watching(w) => {
                let hung = now >= w.hard_deadline;
                if let Some(init) = &w.initial {
                    if now >= self.streaming_deadline(w.req.sent_at, init) {
                        // events but no initial-events-end bookmark: the
                        // server ignores sendInitialEvents
                        self.cancel_current();
                        self.fallback_to_list(now);
                    }
                } else if hung {
                    // past timeoutSeconds and still open: treat it as closed
                    self.cancel_current();
                    self.send_watch(now, false);
                }
            }
            _ => {}
        }
        if let Some(at) = self.next_resync {
            if now >= at && self.has_listed {
                if let Some(p) = self.config.resync_period.filter(|p| *p > 0) {
                    self.ops.push_back(StoreOp::Resync);
                    self.next_resync = Some(now.saturating_add(p));
                }
            }
        }
    }
}
