//! What each state of the reflector holds (see the module doc of
//! `reflector`): the request in flight ([`Sent`]), a paginated list's pages
//! so far ([`ListState`]), an open stream ([`Stream`]) as a streaming list
//! ([`StreamingList`]) or a watch ([`WatchState`]), and the step a wait
//! ends in ([`Next`]). Data only: what the states do is in `list`, `watch`
//! and `failure`.

use std::collections::BTreeMap;

use super::printing::PrintedSoFar;
use super::protocol::RequestId;
use super::request::ListFrom;
use super::timing::{MAX_ERROR_BODY, STREAMING_MAX, STREAMING_MIN_WAIT, STREAMING_QUIET};
use crate::clock::Millis;
use crate::framer::LineFramer;
use crate::object::ObjectRef;

/// What to do when a wait is over (or the user retries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// (Re)list from here.
    List(ListFrom),
    /// Re-open the watch from this resourceVersion.
    Watch(String),
}

/// Whether lists stream (`sendInitialEvents`) or page (`limit`/`continue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListMode {
    Streaming,
    Paginated,
}

/// Where the reflector is; each state carries its own data.
#[derive(Debug)]
pub(super) enum State {
    Idle,
    Listing(ListState),
    StreamingList(StreamingList),
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

/// One request in flight: when it was sent, what its response said so far.
#[derive(Debug)]
pub(super) struct Sent {
    pub(super) id: RequestId,
    pub(super) sent_at: Millis,
    pub(super) http_status: Option<u16>,
    pub(super) retry_after: Option<u64>,
    /// A list page's body, or an error body (capped at [`MAX_ERROR_BODY`]).
    pub(super) body: Vec<u8>,
}

impl Sent {
    pub(super) fn new(id: RequestId, now: Millis) -> Sent {
        Sent {
            id,
            sent_at: now,
            http_status: None,
            retry_after: None,
            body: Vec::new(),
        }
    }

    pub(super) fn ok(&self) -> bool {
        matches!(self.http_status, Some(200..=299))
    }

    /// Keeps the start of an error body, up to [`MAX_ERROR_BODY`].
    pub(super) fn keep_error_bytes(&mut self, bytes: &[u8]) {
        let room = MAX_ERROR_BODY.saturating_sub(self.body.len());
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// A resumed watch catching up: when its current request was sent and when
/// its stream last showed life.
#[derive(Debug, Clone, Copy)]
pub(super) struct CatchUp {
    pub(super) sent_at: Millis,
    pub(super) last_activity: Millis,
}

/// A paginated list in flight.
#[derive(Debug)]
pub(super) struct ListState {
    pub(super) sent: Sent,
    /// The resourceVersion the list started from.
    pub(super) from: ListFrom,
    /// `Some` while a later page is being fetched.
    pub(super) continue_token: Option<String>,
    pub(super) so_far: ListSoFar,
}

/// What the pages of a list received so far hold.
#[derive(Debug, Default)]
pub(super) struct ListSoFar {
    pub(super) pages: u32,
    pub(super) items: Vec<ObjectRef>,
    pub(super) bytes: u64,
    pub(super) printed: PrintedSoFar,
}

/// An open (or opening) watch response.
#[derive(Debug)]
pub(super) struct Stream {
    pub(super) sent: Sent,
    /// The server should have closed the watch (timeoutSeconds) by then.
    pub(super) hard_deadline: Millis,
    pub(super) framer: LineFramer,
    pub(super) events: u64,
}

/// A streaming list: the objects so far, until the end bookmark.
#[derive(Debug)]
pub(super) struct StreamingList {
    pub(super) stream: Stream,
    /// Where a relist would start if this one fails.
    pub(super) from: ListFrom,
    pub(super) objects: BTreeMap<String, ObjectRef>,
    /// The resourceVersion of the latest event or bookmark.
    pub(super) rv: String,
    pub(super) printed: PrintedSoFar,
    /// When bytes last arrived, once at least one event did.
    pub(super) last_event: Option<Millis>,
    pub(super) bytes: u64,
}

impl StreamingList {
    /// When to give up waiting for the `initial-events-end` bookmark:
    /// `fallback_after` without events; once events flow, when the stream
    /// has gone quiet, and at the latest [`STREAMING_MAX`] after the start.
    pub(super) fn fallback_deadline(&self, fallback_after: Millis) -> Millis {
        let started = self.stream.sent.sent_at;
        match self.last_event {
            Some(last) => started.saturating_add(STREAMING_MAX).min(
                started
                    .saturating_add(STREAMING_MIN_WAIT)
                    .max(last.saturating_add(STREAMING_QUIET)),
            ),
            None => started.saturating_add(fallback_after),
        }
    }
}

/// A watch from a resourceVersion.
#[derive(Debug)]
pub(super) struct WatchState {
    pub(super) stream: Stream,
    /// The last resourceVersion seen (list, event or bookmark).
    pub(super) rv: String,
}
