//! The page's channel (wire format in `deltascope_channel`): one long-lived
//! response per page that carries every watch the page has open, so a page
//! keeping 32 resources live holds one browser connection for all of them
//! instead of 32 (browsers give an origin six).
//!
//! `GET /_deltascope/channel` opens a channel for the caller's session and
//! streams its frames; `POST /_deltascope/channel/{id}` with a JSON `Control`
//! opens and closes streams on it. Each open is turned into the request the
//! page would have sent on a connection of its own and goes through the same
//! path rules and [`Forwarder::forward`] — read-only, refused subresources,
//! Secret redaction, the session's `--max-watches` — so the answer, whatever
//! it is (200, 403, 410, 429, 5xx, with its body), reaches the page's
//! reflector exactly as that connection would have given it.
//!
//! **Backpressure, never silent loss.** Each stream has a queue in serve of
//! at most [`STREAM_BUFFER`] bytes (plus the one chunk that crossed it); a full
//! queue stops reading that stream's upstream, so the upstream sees a slow
//! reader and the page's other streams are not held back (the writer takes
//! frames from the streams in turn). A stream whose queue stays full for
//! [`SLOW_READER_GRACE`] is ended the way an apiserver ends a watcher that
//! is too slow: its queue is dropped and a Fail frame tells the page, whose
//! reflector re-watches from the last resourceVersion it *received* — so no
//! event is lost, only re-sent. serve therefore holds at most
//! `--max-watches × (STREAM_BUFFER + one chunk)` per session for watches.
//!
//! A channel lives as long as its response: when the page goes away (tab
//! closed, reload) the next ping fails within [`PING_INTERVAL_MS`], the
//! response is dropped, and with it every stream task and upstream watch.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use deltascope_channel::{
    encode, Control, Frame, Open, StreamId, CHANNEL_STREAM, CONTENT_TYPE, PING_INTERVAL_MS,
};
use futures_util::StreamExt;
use http::header::{self, HeaderValue};
use http::{Request, StatusCode, Uri};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::auth::{random_hex_256, Session};
use crate::forward::Forwarder;
use crate::paths::{classify, normalise, Route};
use crate::status::status;

/// A stream's queue in serve, in bytes, before its upstream is no longer read.
pub const STREAM_BUFFER: usize = 256 * 1024;

/// How long a stream's queue may stay full before the stream is ended as too slow.
pub const SLOW_READER_GRACE: Duration = Duration::from_secs(10);

/// Bytes the writer gathers into one write of the channel response.
const WRITE_BATCH: usize = 64 * 1024;

/// Channels one session may hold at once (one per tab); the oldest is closed beyond.
const MAX_CHANNELS_PER_SESSION: usize = 16;

/// Streams one channel may have open at once (watches are bounded further by `--max-watches`).
const MAX_STREAMS_PER_CHANNEL: usize = 1024;

/// A control request's body at most.
pub const MAX_CONTROL_BYTES: usize = 1024 * 1024;

/// A snapshot of [`Channels::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    pub channels: usize,
    pub streams: usize,
    /// Frame bytes waiting in serve, over every stream.
    pub queued_bytes: usize,
    pub largest_queue: usize,
}

/// Every open channel, by id.
pub struct Channels {
    forwarder: Forwarder,
    demo: bool,
    by_id: Mutex<HashMap<String, Arc<Channel>>>,
    /// Numbers channels in the order they were opened.
    opened: AtomicU64,
}

struct Channel {
    id: String,
    serial: u64,
    session: Arc<Session>,
    forwarder: Forwarder,
    demo: bool,
    state: Mutex<ChannelState>,
    /// Wakes the writer: a frame was queued, or the channel was closed.
    wake_writer: Notify,
}

#[derive(Default)]
struct ChannelState {
    streams: HashMap<StreamId, StreamQueue>,
    /// Streams with frames queued, in the order the writer serves them.
    ready: VecDeque<StreamId>,
    closed: bool,
}

struct StreamQueue {
    frames: VecDeque<Bytes>,
    bytes: usize,
    /// Wakes the stream's task when the writer took some of its frames.
    drained: Arc<Notify>,
    task: Option<AbortHandle>,
    /// Its last frame (End or Fail) is queued: gone once written.
    finished: bool,
}

impl Channels {
    pub fn new(forwarder: Forwarder, demo: bool) -> Self {
        Channels {
            forwarder,
            demo,
            by_id: Mutex::new(HashMap::new()),
            opened: AtomicU64::new(0),
        }
    }

    /// What the channels hold now: for tests of the memory bound.
    pub fn stats(&self) -> ChannelStats {
        let by_id = lock(&self.by_id);
        let mut stats = ChannelStats {
            channels: by_id.len(),
            ..ChannelStats::default()
        };
        for channel in by_id.values() {
            let state = lock(&channel.state);
            stats.streams += state.streams.len();
            for queue in state.streams.values() {
                stats.queued_bytes += queue.bytes;
                stats.largest_queue = stats.largest_queue.max(queue.bytes);
            }
        }
        stats
    }

    /// `GET /_deltascope/channel`: a new channel for `session`, as a streaming response.
    pub fn open(self: &Arc<Self>, session: Arc<Session>) -> Response {
        let channel = Arc::new(Channel {
            id: random_hex_256(),
            serial: self.opened.fetch_add(1, Ordering::Relaxed),
            session,
            forwarder: self.forwarder.clone(),
            demo: self.demo,
            state: Mutex::new(ChannelState::default()),
            wake_writer: Notify::new(),
        });
        {
            let mut by_id = lock(&self.by_id);
            let theirs = by_id
                .values()
                .filter(|c| Arc::ptr_eq(&c.session, &channel.session) && !lock(&c.state).closed);
            if theirs.clone().count() >= MAX_CHANNELS_PER_SESSION {
                if let Some(oldest) = theirs.min_by_key(|c| c.serial) {
                    oldest.close();
                }
            }
            by_id.insert(channel.id.clone(), Arc::clone(&channel));
        }
        let mut hello = Vec::new();
        encode(
            &Frame::Hello {
                channel: &channel.id,
            },
            &mut hello,
        );
        let writer = Writer {
            channel,
            registry: Arc::downgrade(self),
            hello: Some(Bytes::from(hello)),
            ping: tokio::time::interval_at(
                tokio::time::Instant::now() + Duration::from_millis(PING_INTERVAL_MS),
                Duration::from_millis(PING_INTERVAL_MS),
            ),
        };
        let body = futures_util::stream::unfold(writer, |mut writer| async move {
            let bytes = writer.next_write().await?;
            Some((Ok::<_, std::io::Error>(bytes), writer))
        });
        let mut response = Response::new(Body::from_stream(body));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // Proxies in between (nginx and kin) must not hold frames back.
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        response
    }

    /// `POST /_deltascope/channel/{id}`: opens and closes streams. Their
    /// answers come on the channel; this answers 202, or why it could not.
    pub fn control(&self, id: &str, session: &Arc<Session>, body: &[u8]) -> Response {
        let channel = lock(&self.by_id).get(id).cloned();
        let Some(channel) = channel.filter(|c| Arc::ptr_eq(&c.session, session)) else {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "no such channel in this session (it closed, or serve restarted); open a new one",
            );
        };
        let control: Control = match serde_json::from_slice(body) {
            Ok(control) => control,
            Err(error) => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    format!("a channel control request must be JSON {{\"open\":[…],\"close\":[…]}}: {error}"),
                )
            }
        };
        if let Err(message) = channel.apply(control) {
            return status(StatusCode::BAD_REQUEST, "BadRequest", message);
        }
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::ACCEPTED;
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    fn forget(&self, id: &str) {
        lock(&self.by_id).remove(id);
    }
}

impl Channel {
    /// Closes, then opens (so one request may close a stream and reuse its
    /// id). The opens are checked and queued under one lock, so two control
    /// requests can never open the same stream twice.
    fn apply(self: &Arc<Self>, control: Control) -> Result<(), String> {
        for stream in control.close {
            self.close_stream(stream);
        }
        let accepted: Vec<(Open, Arc<Notify>, bool)> = {
            let mut state = lock(&self.state);
            if state.closed {
                return Ok(());
            }
            let mut seen = std::collections::HashSet::new();
            if let Some(open) = control.open.iter().find(|o| {
                o.stream == CHANNEL_STREAM
                    || state.streams.contains_key(&o.stream)
                    || !seen.insert(o.stream)
            }) {
                return Err(format!(
                    "stream {} is already open on this channel, named twice, or reserved (0)",
                    open.stream
                ));
            }
            control
                .open
                .into_iter()
                .map(|open| {
                    let too_many = state.streams.len() >= MAX_STREAMS_PER_CHANNEL;
                    let drained = Arc::new(Notify::new());
                    state.streams.insert(
                        open.stream,
                        StreamQueue {
                            frames: VecDeque::new(),
                            bytes: 0,
                            drained: Arc::clone(&drained),
                            task: None,
                            finished: false,
                        },
                    );
                    (open, drained, too_many)
                })
                .collect()
        };
        for (open, drained, too_many) in accepted {
            let channel = Arc::clone(self);
            let stream = open.stream;
            let task = tokio::spawn(async move {
                let response = if too_many {
                    status(
                        StatusCode::TOO_MANY_REQUESTS,
                        "TooManyRequests",
                        format!(
                            "a channel carries at most {MAX_STREAMS_PER_CHANNEL} streams at once"
                        ),
                    )
                } else {
                    channel.request(&open).await
                };
                channel.relay(open.stream, response, drained).await;
            });
            match lock(&self.state).streams.get_mut(&stream) {
                Some(queue) => queue.task = Some(task.abort_handle()),
                None => task.abort(), // closed (or already finished) meanwhile
            }
        }
        Ok(())
    }

    /// The answer `open` would have had on a connection of its own.
    async fn request(&self, open: &Open) -> Response {
        let uri: Uri = match open.path.parse() {
            Ok(uri) => uri,
            Err(_) => return bad_request(format!("not a request path: {:?}", open.path)),
        };
        if uri.scheme().is_some() || uri.authority().is_some() {
            return bad_request("a channel stream names a path on this server, not a URL");
        }
        let path = match normalise(uri.path()) {
            Ok(path) => path,
            Err(error) => return bad_request(format!("deltascope refuses this path: {error}")),
        };
        let api = match classify(&path, self.demo) {
            Route::Api(api) => api,
            Route::Forbidden(why) => {
                return status(
                    StatusCode::FORBIDDEN,
                    "Forbidden",
                    format!("deltascope refuses this path: {why}"),
                )
            }
            _ => return bad_request("the channel carries Kubernetes API requests only"),
        };
        let mut request = Request::new(Body::empty());
        *request.uri_mut() = uri;
        if let Some(accept) = open
            .accept
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            request.headers_mut().insert(header::ACCEPT, accept);
        }
        self.forwarder
            .forward(request, &path, &api, &self.session)
            .await
    }

    /// Moves `response` onto the channel as `stream`'s frames, waiting for
    /// room in its queue and ending it as too slow when none comes.
    async fn relay(&self, stream: StreamId, response: Response, drained: Arc<Notify>) {
        let retry_after_secs = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok());
        let start = Frame::Start {
            stream,
            status: response.status().as_u16(),
            retry_after_secs,
        };
        if !self.push(stream, &start, false) {
            return;
        }
        let mut body = response.into_body().into_data_stream();
        loop {
            match self.wait_for_room(stream, &drained).await {
                Room::Yes => {}
                Room::Gone => return,
                Room::Slow => {
                    self.end_slow(stream);
                    return;
                }
            }
            let last = match body.next().await {
                Some(Ok(bytes)) if bytes.is_empty() => continue,
                Some(Ok(bytes)) => {
                    let mut frame =
                        Vec::with_capacity(bytes.len() + deltascope_channel::HEADER_LEN);
                    encode(
                        &Frame::Data {
                            stream,
                            bytes: &bytes,
                        },
                        &mut frame,
                    );
                    if !self.push_encoded(stream, Bytes::from(frame), false) {
                        return;
                    }
                    continue;
                }
                Some(Err(error)) => {
                    let reason = format!("the upstream response broke: {error}");
                    Frame::Fail {
                        stream,
                        reason: &reason,
                    }
                    .to_bytes()
                }
                None => Frame::End { stream }.to_bytes(),
            };
            self.push_encoded(stream, last, true);
            return;
        }
    }

    async fn wait_for_room(&self, stream: StreamId, drained: &Notify) -> Room {
        loop {
            match lock(&self.state).streams.get(&stream) {
                None => return Room::Gone,
                Some(queue) if queue.bytes < STREAM_BUFFER => return Room::Yes,
                Some(_) => {}
            }
            // Any progress by the writer starts the grace period again.
            if tokio::time::timeout(SLOW_READER_GRACE, drained.notified())
                .await
                .is_err()
            {
                return match lock(&self.state).streams.get(&stream) {
                    None => Room::Gone,
                    Some(queue) if queue.bytes >= STREAM_BUFFER => Room::Slow,
                    Some(_) => Room::Yes,
                };
            }
        }
    }

    /// Drops what `stream` had queued and tells the page it was too slow.
    fn end_slow(&self, stream: StreamId) {
        let reason = format!(
            "deltascope serve ended this stream: the page read none of its last {} KiB for {} s \
             (as an apiserver ends a watcher that is too slow); it resumes from the last \
             resourceVersion the page received",
            STREAM_BUFFER / 1024,
            SLOW_READER_GRACE.as_secs()
        );
        tracing::warn!(channel = %short(&self.id), stream, "ending a stream whose reader is too slow");
        let mut state = lock(&self.state);
        if let Some(queue) = state.streams.get_mut(&stream) {
            queue.frames.clear();
            queue.bytes = 0;
        }
        drop(state);
        self.push_encoded(
            stream,
            Frame::Fail {
                stream,
                reason: &reason,
            }
            .to_bytes(),
            true,
        );
    }

    fn push(&self, stream: StreamId, frame: &Frame<'_>, last: bool) -> bool {
        self.push_encoded(stream, frame.to_bytes(), last)
    }

    /// Queues an encoded frame of `stream`; false when the stream is gone.
    fn push_encoded(&self, stream: StreamId, bytes: Bytes, last: bool) -> bool {
        let mut state = lock(&self.state);
        let Some(queue) = state.streams.get_mut(&stream) else {
            return false;
        };
        let was_empty = queue.frames.is_empty();
        queue.bytes += bytes.len();
        queue.frames.push_back(bytes);
        queue.finished |= last;
        if was_empty {
            state.ready.push_back(stream);
        }
        drop(state);
        self.wake_writer.notify_one();
        true
    }

    fn close_stream(&self, stream: StreamId) {
        let removed = lock(&self.state).streams.remove(&stream);
        if let Some(task) = removed.and_then(|q| q.task) {
            task.abort();
        }
    }

    /// Ends the channel's response (its streams go with it).
    fn close(&self) {
        lock(&self.state).closed = true;
        self.wake_writer.notify_one();
    }

    /// Takes up to [`WRITE_BATCH`] bytes of frames, one frame per stream in turn.
    fn take_batch(&self) -> Option<Bytes> {
        let mut state = lock(&self.state);
        let ChannelState { streams, ready, .. } = &mut *state;
        let mut batch: Option<BytesMut> = None;
        let mut single: Option<Bytes> = None;
        while let Some(stream) = ready.pop_front() {
            let Some(queue) = streams.get_mut(&stream) else {
                continue; // closed while queued
            };
            let Some(frame) = queue.frames.pop_front() else {
                continue;
            };
            queue.bytes -= frame.len();
            queue.drained.notify_one();
            if !queue.frames.is_empty() {
                ready.push_back(stream);
            } else if queue.finished {
                streams.remove(&stream);
            }
            // One big frame goes out as it is; small ones are gathered.
            match (&mut batch, single.take()) {
                (None, None) => single = Some(frame),
                (None, Some(first)) => {
                    let mut gathered =
                        BytesMut::with_capacity(WRITE_BATCH.max(first.len() + frame.len()));
                    gathered.extend_from_slice(&first);
                    gathered.extend_from_slice(&frame);
                    batch = Some(gathered);
                }
                (Some(gathered), _) => gathered.extend_from_slice(&frame),
            }
            let len = batch
                .as_ref()
                .map_or_else(|| single.as_ref().map_or(0, Bytes::len), BytesMut::len);
            if len >= WRITE_BATCH {
                break;
            }
        }
        batch.map(BytesMut::freeze).or(single)
    }
}

enum Room {
    Yes,
    Gone,
    Slow,
}

/// The channel's response body: the hello, then frames as they are queued,
/// and a ping whenever the channel was idle for [`PING_INTERVAL_MS`].
struct Writer {
    channel: Arc<Channel>,
    registry: Weak<Channels>,
    hello: Option<Bytes>,
    ping: tokio::time::Interval,
}

impl Writer {
    async fn next_write(&mut self) -> Option<Bytes> {
        if let Some(hello) = self.hello.take() {
            return Some(hello);
        }
        loop {
            if lock(&self.channel.state).closed {
                return None;
            }
            if let Some(batch) = self.channel.take_batch() {
                self.ping.reset();
                return Some(batch);
            }
            tokio::select! {
                _ = self.channel.wake_writer.notified() => {}
                _ = self.ping.tick() => return Some(Frame::Ping.to_bytes()),
            }
        }
    }
}

impl Drop for Writer {
    /// The page went away or the channel was closed: every stream's task
    /// (and with it its upstream request and watch slot) goes too.
    fn drop(&mut self) {
        let streams = {
            let mut state = lock(&self.channel.state);
            state.closed = true;
            state.ready.clear();
            std::mem::take(&mut state.streams)
        };
        for queue in streams.into_values() {
            if let Some(task) = queue.task {
                task.abort();
            }
        }
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(&self.channel.id);
        }
        tracing::debug!(channel = %short(&self.channel.id), "channel closed");
    }
}

trait ToBytes {
    fn to_bytes(&self) -> Bytes;
}

impl ToBytes for Frame<'_> {
    fn to_bytes(&self) -> Bytes {
        let mut out = Vec::new();
        encode(self, &mut out);
        Bytes::from(out)
    }
}

fn bad_request(message: impl Into<String>) -> Response {
    status(StatusCode::BAD_REQUEST, "BadRequest", message)
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
