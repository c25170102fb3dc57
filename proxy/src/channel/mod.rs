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
//! at most [`STREAM_BUFFER`] bytes; a full queue stops reading that stream's
//! upstream, so the upstream sees a slow reader and the page's other streams
//! are not held back (the writer takes frames from the streams in turn). A
//! stream whose queue stays full for [`SLOW_READER_GRACE`] is ended the way an
//! apiserver ends a watcher that is too slow: its queue is dropped and a Fail
//! frame tells the page, whose reflector re-watches from the last
//! resourceVersion it *received* — so no event is lost, only re-sent.
//!
//! **A hard bound.** Every frame, data and Status alike, is queued only once
//! its stream, its channel and its session have room for it by its encoded
//! size ([`crate::limits`] has the numbers, `queue.rs` the mechanism), streams
//! beyond a channel's or a session's count are refused at control time with
//! a 429 and never stored, and a channel whose page reads nothing for
//! [`CHANNEL_STALL_GRACE`] is torn down with its streams.
//!
//! A channel lives as long as its response: when the page goes away (tab
//! closed, reload) the next ping fails within [`PING_INTERVAL_MS`], the
//! response is dropped, and with it every stream task and upstream watch.

mod queue;
mod relay;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use deltascope_channel::{encode, Control, Frame, CONTENT_TYPE, PING_INTERVAL_MS};
use http::header::{self, HeaderValue};
use http::StatusCode;

use crate::auth::{random_hex_256, Session};
use crate::forward::Forwarder;
use crate::limits::MAX_CHANNELS_PER_SESSION;
use crate::status::status;
use crate::upstreams::Upstreams;
use queue::{lock, short, Channel, ToBytes};

pub use crate::limits::{MAX_CONTROL_BYTES, STREAM_BUFFER};
pub use queue::{CHANNEL_STALL_GRACE, SLOW_READER_GRACE};

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
    upstreams: Arc<Upstreams>,
    demo: bool,
    by_id: Mutex<HashMap<String, Arc<Channel>>>,
    /// Numbers channels in the order they were opened.
    opened: AtomicU64,
}

impl Channels {
    /// Channels whose streams all go to `forwarder`'s cluster.
    pub fn new(forwarder: Forwarder, demo: bool) -> Self {
        Self::for_upstreams(Arc::new(Upstreams::single(forwarder)), demo)
    }

    /// Channels whose streams go to any of `upstreams`' clusters: a
    /// stream's `/clusters/{name}/…` path names its cluster.
    pub fn for_upstreams(upstreams: Arc<Upstreams>, demo: bool) -> Self {
        Channels {
            upstreams,
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
            stats.queued_bytes += state.queued;
            for queue in state.streams.values() {
                stats.largest_queue = stats.largest_queue.max(queue.bytes);
            }
        }
        stats
    }

    /// `GET /_deltascope/channel`: a new channel for `session`, as a streaming response.
    pub fn open(self: &Arc<Self>, session: Arc<Session>) -> Response {
        let channel = Arc::new(Channel::new(
            random_hex_256(),
            self.opened.fetch_add(1, Ordering::Relaxed),
            session,
            Arc::clone(&self.upstreams),
            self.demo,
        ));
        let pushed_out = {
            let mut by_id = lock(&self.by_id);
            let theirs = by_id
                .values()
                .filter(|c| Arc::ptr_eq(&c.session, &channel.session) && !c.is_closed());
            let oldest = if theirs.clone().count() >= MAX_CHANNELS_PER_SESSION {
                theirs.min_by_key(|c| c.serial).cloned()
            } else {
                None
            };
            by_id.insert(channel.id.clone(), Arc::clone(&channel));
            oldest
        };
        if let Some(oldest) = pushed_out {
            self.tear_down(&oldest, "the session opened too many channels");
        }
        tokio::spawn(watch_for_stall(
            Arc::downgrade(self),
            Arc::downgrade(&channel),
        ));
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
        if let Err(error) = channel.apply(control) {
            return error.into_response();
        }
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::ACCEPTED;
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    /// Ends `channel` and forgets it.
    fn tear_down(&self, channel: &Channel, why: &str) {
        channel.tear_down(why);
        self.forget(&channel.id);
    }

    fn forget(&self, id: &str) {
        lock(&self.by_id).remove(id);
    }
}

/// Tears `channel` down once it stalls (see [`CHANNEL_STALL_GRACE`]) or its
/// session ends; returns when the channel is gone.
async fn watch_for_stall(registry: Weak<Channels>, channel: Weak<Channel>) {
    let mut tick = tokio::time::interval(CHANNEL_STALL_GRACE / 4);
    loop {
        tick.tick().await;
        let (Some(registry), Some(channel)) = (registry.upgrade(), channel.upgrade()) else {
            return;
        };
        if channel.is_closed() {
            return;
        }
        if channel.session.has_ended() {
            registry.tear_down(&channel, "its session ended");
            return;
        }
        if channel.stalled() {
            tracing::warn!(
                channel = %short(&channel.id),
                "closing a channel whose page read none of its frames for {} s",
                CHANNEL_STALL_GRACE.as_secs()
            );
            registry.tear_down(&channel, "stalled");
            return;
        }
    }
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
            if self.channel.is_closed() {
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
    /// (and with it its upstream request and slots) goes too.
    fn drop(&mut self) {
        match self.registry.upgrade() {
            Some(registry) => registry.tear_down(&self.channel, "its response ended"),
            None => self.channel.tear_down("serve is stopping"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::SessionLimits;
    use crate::limits::{MAX_STREAMS_PER_CHANNEL, MAX_STREAMS_PER_SESSION};
    use deltascope_channel::{Open, StreamId};

    /// A channel nobody reads (its response body is never polled) and its id.
    fn unread(channels: &Arc<Channels>, session: &Arc<Session>) -> (Response, String) {
        let response = channels.open(Arc::clone(session));
        let id = lock(&channels.by_id)
            .values()
            .max_by_key(|c| c.serial)
            .map(|c| c.id.clone())
            .unwrap();
        (response, id)
    }

    fn opening(from: StreamId, count: usize) -> Vec<u8> {
        let open: Vec<Open> = (0..count as StreamId)
            .map(|i| Open {
                stream: from + i,
                path: "/x".into(),
                accept: None,
            })
            .collect();
        serde_json::to_vec(&Control {
            open,
            close: Vec::new(),
        })
        .unwrap()
    }

    #[tokio::test]
    async fn finished_but_unwritten_streams_count_against_the_caps() {
        let forwarder = Forwarder::sim(axum::Router::new(), false, SessionLimits::default());
        let channels = Arc::new(Channels::new(forwarder, false));
        let session = Arc::new(Session::new("s".into()));
        let (_first, first) = unread(&channels, &session);
        let answer = channels.control(&first, &session, &opening(1, MAX_STREAMS_PER_CHANNEL));
        assert_eq!(answer.status(), StatusCode::ACCEPTED);
        // Every stream answers 400 at once and finishes; nobody reads them.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while channels.stats().queued_bytes == 0
            || lock(&channels.by_id).values().any(|c| {
                lock(&c.state)
                    .streams
                    .values()
                    .any(|q| q.task.as_ref().is_some_and(|t| !t.is_finished()))
            })
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the streams did not finish"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(channels.stats().streams, MAX_STREAMS_PER_CHANNEL);
        let refused = channels.control(&first, &session, &opening(5000, 1));
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.headers().contains_key(header::RETRY_AFTER));
        assert_eq!(
            channels.stats().streams,
            MAX_STREAMS_PER_CHANNEL,
            "nothing stored"
        );

        // The session's count spans its channels.
        let mut held = vec![];
        let mut next = 10_000;
        while session.open_slots(crate::auth::SlotKind::Stream) < MAX_STREAMS_PER_SESSION {
            let (response, id) = unread(&channels, &session);
            held.push(response);
            let answer = channels.control(&id, &session, &opening(next, MAX_STREAMS_PER_CHANNEL));
            assert_eq!(answer.status(), StatusCode::ACCEPTED);
            next += MAX_STREAMS_PER_CHANNEL as StreamId;
        }
        let (_last, last) = unread(&channels, &session);
        let refused = channels.control(&last, &session, &opening(1, 1));
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        let body = axum::body::to_bytes(refused.into_body(), 4096)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("a session carries at most"), "{text}");
    }
}
