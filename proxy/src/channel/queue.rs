//! A channel's queues and the budgets that bound them. Every frame a stream
//! queues is first given room: in its stream's queue ([`STREAM_BUFFER`]), in
//! its channel's budget ([`CHANNEL_BUFFER`]) and in its session's
//! ([`crate::limits::SESSION_BUFFER`], shared by the session's channels), by
//! its encoded size; the writer gives the room back as it writes. So serve
//! never holds more than those budgets in frames, whatever the client does:
//! a stream that finds no room in its own queue for [`SLOW_READER_GRACE`] is
//! ended as too slow, and a channel whose writer makes no progress for
//! [`CHANNEL_STALL_GRACE`] while it has frames to write is torn down with every
//! stream (the page reconnects, as after any break).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use deltascope_channel::{encode, Frame, StreamId};
use tokio::sync::{Notify, Semaphore};
use tokio::task::AbortHandle;

use crate::auth::{Session, Slot};
use crate::limits::{CHANNEL_BUFFER, STREAM_BUFFER};
use crate::upstreams::Upstreams;

/// How long a stream's queue may stay full before the stream is ended as too slow.
pub const SLOW_READER_GRACE: Duration = Duration::from_secs(10);

/// How long a channel with frames queued may go without its writer taking
/// any before it is torn down: longer than [`SLOW_READER_GRACE`], so a busy
/// stream is ended as too slow first (as an apiserver would), and longer
/// than the page waits for a silent channel (three pings, 15 s).
pub const CHANNEL_STALL_GRACE: Duration = Duration::from_secs(20);

/// Bytes the writer gathers into one write of the channel response.
const WRITE_BATCH: usize = 64 * 1024;

/// One page's channel: its streams' queues and what bounds them.
pub(super) struct Channel {
    pub(super) id: String,
    pub(super) serial: u64,
    pub(super) session: Arc<Session>,
    pub(super) upstreams: Arc<Upstreams>,
    pub(super) demo: bool,
    pub(super) state: Mutex<ChannelState>,
    /// Wakes the writer: a frame was queued, or the channel was closed.
    pub(super) wake_writer: Notify,
    /// Bytes this channel may still queue ([`CHANNEL_BUFFER`] in all);
    /// closed when the channel is torn down.
    room: Semaphore,
}

#[derive(Default)]
pub(super) struct ChannelState {
    pub(super) streams: HashMap<StreamId, StreamQueue>,
    /// Streams with frames queued, in the order the writer serves them.
    ready: VecDeque<StreamId>,
    pub(super) closed: bool,
    /// Frame bytes queued over every stream.
    pub(super) queued: usize,
    /// Streams waiting for room in the channel's or the session's budget.
    waiting: usize,
    /// When the writer last took frames, or the channel last got frames to
    /// write (queued, or waiting for room) after it had none.
    last_progress: Option<Instant>,
}

impl ChannelState {
    /// Starts the stall clock if the channel had nothing to write.
    fn became_busy(&mut self) {
        if self.queued == 0 && self.waiting == 0 {
            self.last_progress = Some(Instant::now());
        }
    }
}

/// A stream waiting for room in the budgets, counted for as long as it waits
/// (its task may be aborted meanwhile).
struct Waiting<'a>(&'a Channel);

impl<'a> Waiting<'a> {
    fn new(channel: &'a Channel) -> Self {
        let mut state = lock(&channel.state);
        state.became_busy();
        state.waiting += 1;
        Waiting(channel)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).waiting -= 1;
    }
}

pub(super) struct StreamQueue {
    frames: VecDeque<Bytes>,
    pub(super) bytes: usize,
    /// Wakes the stream's task when the writer took some of its frames.
    drained: Arc<Notify>,
    pub(super) task: Option<AbortHandle>,
    /// Its last frame (End or Fail) is queued: gone once written.
    finished: bool,
    /// Its place among the session's streams.
    _slot: Slot,
}

/// Why a stream cannot queue its next frame.
pub(super) enum NoRoom {
    /// Closed by the page, or the channel is gone.
    Gone,
    /// Its queue stayed full for [`SLOW_READER_GRACE`].
    Slow,
}

impl Channel {
    pub(super) fn new(
        id: String,
        serial: u64,
        session: Arc<Session>,
        upstreams: Arc<Upstreams>,
        demo: bool,
    ) -> Self {
        Channel {
            id,
            serial,
            session,
            upstreams,
            demo,
            state: Mutex::new(ChannelState::default()),
            wake_writer: Notify::new(),
            room: Semaphore::new(CHANNEL_BUFFER),
        }
    }

    /// Adds `stream` to the table with its session slot; returns what wakes it.
    pub(super) fn insert(state: &mut ChannelState, stream: StreamId, slot: Slot) -> Arc<Notify> {
        let drained = Arc::new(Notify::new());
        state.streams.insert(
            stream,
            StreamQueue {
                frames: VecDeque::new(),
                bytes: 0,
                drained: Arc::clone(&drained),
                task: None,
                finished: false,
                _slot: slot,
            },
        );
        drained
    }

    /// Queues `frame` of `stream` once there is room for it in the stream's
    /// queue, the channel's budget and the session's.
    pub(super) async fn send(
        &self,
        stream: StreamId,
        frame: Bytes,
        last: bool,
        drained: &Notify,
    ) -> Result<(), NoRoom> {
        let len = frame.len();
        self.wait_for_stream_room(stream, len, drained).await?;
        // The stream's task is aborted when the channel is torn down, and
        // the channel's budget closed, so neither wait outlives the channel.
        let waiting = Waiting::new(self);
        let channel_room = self.room.acquire_many(permits(len)).await;
        let Ok(channel_room) = channel_room else {
            return Err(NoRoom::Gone);
        };
        let Ok(session_room) = self.session.queue_room().acquire_many(permits(len)).await else {
            return Err(NoRoom::Gone);
        };
        drop(waiting);
        if !self.push(stream, frame, last) {
            return Err(NoRoom::Gone);
        }
        channel_room.forget();
        session_room.forget();
        Ok(())
    }

    async fn wait_for_stream_room(
        &self,
        stream: StreamId,
        len: usize,
        drained: &Notify,
    ) -> Result<(), NoRoom> {
        let has_room = |queue: &StreamQueue| queue.bytes == 0 || queue.bytes + len <= STREAM_BUFFER;
        loop {
            match lock(&self.state).streams.get(&stream) {
                None => return Err(NoRoom::Gone),
                Some(queue) if has_room(queue) => return Ok(()),
                Some(_) => {}
            }
            // Any progress by the writer starts the grace period again.
            if tokio::time::timeout(SLOW_READER_GRACE, drained.notified())
                .await
                .is_err()
            {
                return match lock(&self.state).streams.get(&stream) {
                    None => Err(NoRoom::Gone),
                    Some(queue) if has_room(queue) => Ok(()),
                    Some(_) => Err(NoRoom::Slow),
                };
            }
        }
    }

    /// Queues a frame whose room was taken; false when the stream is gone.
    fn push(&self, stream: StreamId, bytes: Bytes, last: bool) -> bool {
        let len = bytes.len();
        let mut state = lock(&self.state);
        let state = &mut *state;
        let Some(queue) = state.streams.get_mut(&stream) else {
            return false;
        };
        let was_empty = queue.frames.is_empty();
        queue.bytes += len;
        queue.frames.push_back(bytes);
        queue.finished |= last;
        state.became_busy();
        state.queued += len;
        if was_empty {
            state.ready.push_back(stream);
        }
        self.wake_writer.notify_one();
        true
    }

    /// Drops what `stream` had queued (the page will be sent it again: its
    /// reflector resumes from the last resourceVersion it received).
    pub(super) fn drop_queue(&self, stream: StreamId) {
        let freed = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            let Some(queue) = state.streams.get_mut(&stream) else {
                return;
            };
            let freed = std::mem::take(&mut queue.bytes);
            queue.frames.clear();
            state.queued -= freed;
            freed
        };
        self.give_back(freed);
    }

    fn give_back(&self, bytes: usize) {
        if bytes > 0 {
            self.room.add_permits(bytes);
            self.session.queue_room().add_permits(bytes);
        }
    }

    /// Takes a stream out of the table (the page closed it); its task ends.
    pub(super) fn close_stream(&self, stream: StreamId) {
        let removed = {
            let mut state = lock(&self.state);
            let removed = state.streams.remove(&stream);
            if let Some(queue) = &removed {
                state.queued -= queue.bytes;
            }
            removed
        };
        if let Some(queue) = removed {
            self.give_back(queue.bytes);
            if let Some(task) = queue.task {
                task.abort();
            }
        }
    }

    /// Ends the channel: its response ends, every stream's task (and with it
    /// its upstream request and slots) goes, and what was queued is dropped
    /// and given back to the session. Idempotent.
    pub(super) fn tear_down(&self, why: &str) {
        let (streams, queued) = {
            let mut state = lock(&self.state);
            if state.closed && state.streams.is_empty() {
                return;
            }
            state.closed = true;
            state.ready.clear();
            let queued = std::mem::take(&mut state.queued);
            (std::mem::take(&mut state.streams), queued)
        };
        self.room.close();
        if queued > 0 {
            self.session.queue_room().add_permits(queued);
        }
        for queue in streams.into_values() {
            if let Some(task) = queue.task {
                task.abort();
            }
        }
        self.wake_writer.notify_one();
        tracing::debug!(channel = %short(&self.id), why, "channel closed");
    }

    pub(super) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Frames to write (queued, or waiting for room) and none taken by the
    /// writer for [`CHANNEL_STALL_GRACE`]. A channel starved by a frozen
    /// sibling in its session stalls too: both are closed, and a live page
    /// reconnects.
    pub(super) fn stalled(&self) -> bool {
        let state = lock(&self.state);
        (state.queued > 0 || state.waiting > 0)
            && state
                .last_progress
                .is_some_and(|at| at.elapsed() >= CHANNEL_STALL_GRACE)
    }

    /// Takes up to [`WRITE_BATCH`] bytes of frames, one frame per stream in turn.
    pub(super) fn take_batch(&self) -> Option<Bytes> {
        let mut batch: Option<BytesMut> = None;
        let mut single: Option<Bytes> = None;
        let mut taken = 0;
        {
            let mut state = lock(&self.state);
            let ChannelState {
                streams,
                ready,
                queued,
                last_progress,
                ..
            } = &mut *state;
            while let Some(stream) = ready.pop_front() {
                let Some(queue) = streams.get_mut(&stream) else {
                    continue; // closed while queued
                };
                let Some(frame) = queue.frames.pop_front() else {
                    continue;
                };
                queue.bytes -= frame.len();
                taken += frame.len();
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
            *queued -= taken;
            if taken > 0 {
                *last_progress = Some(Instant::now());
            }
        }
        self.give_back(taken);
        batch.map(BytesMut::freeze).or(single)
    }
}

/// Semaphore permits for `len` bytes (a frame is far below `u32::MAX`).
fn permits(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

pub(super) trait ToBytes {
    fn to_bytes(&self) -> Bytes;
}

impl ToBytes for Frame<'_> {
    fn to_bytes(&self) -> Bytes {
        let mut out = Vec::new();
        encode(self, &mut out);
        Bytes::from(out)
    }
}

pub(super) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
