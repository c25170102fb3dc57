//! Streams on the channel whose reader is not an informer's `Driver`: a
//! log follower's requests (`crate::service::logs`), and a GET read whole
//! ([`get_whole`]: the metrics API's lists that `kubectl top`'s columns and the
//! usage charts read once per window). Each is a stream like a watch's,
//! its inputs handed to a [`StreamFeed`]; when serve offers no channel it
//! is a `fetch` of its own instead (such streams are few: one per
//! container on screen, one list per window), closed through the same
//! stream id.

use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

use deltascope_channel::StreamId;
use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use super::{ensure_connected, flush, status, with, ChannelStatus, Sink, Target};
use crate::informer::reflector::next_request_id;
use crate::informer::{Input, RequestId};
use crate::transport::serve_history::{Answer, SummaryFetchError};

/// Whoever reads a stream that is not an informer's (a log follower's):
/// takes each input, returns false once it wants no more.
pub type StreamFeed = Rc<dyn Fn(Input<'_>) -> bool>;

/// Carries out a request whose inputs go to `feed` (a log follower's): a
/// stream on the channel, or a fetch of its own when serve offers no
/// channel. The stream id is the handle to [`close`](super::close) it with.
pub fn open_stream(
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
    feed: StreamFeed,
) -> StreamId {
    let stream = with(|c| {
        let stream = c.next_stream;
        c.next_stream += 1;
        stream
    });
    if matches!(status(), ChannelStatus::Unavailable { .. }) {
        fetch_own(stream, id, path, accept, feed);
        return stream;
    }
    with(|c| {
        c.sinks.insert(
            stream,
            Sink {
                target: Target::Feed(feed),
                id,
                path,
                accept,
            },
        );
        c.to_open.push(stream);
    });
    ensure_connected();
    flush();
    stream
}

/// A feed's request on a connection of its own (no channel).
pub(super) fn fetch_own(
    stream: StreamId,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
    feed: StreamFeed,
) {
    let Ok(controller) = AbortController::new() else {
        feed(Input::Failed {
            id,
            message: "the browser refused to create an AbortController".into(),
        });
        return;
    };
    let signal = controller.signal();
    with(|c| c.fallback.insert(stream, controller));
    let reader = move |input: Input<'_>| {
        if !with(|c| c.fallback.contains_key(&stream)) {
            return false;
        }
        if matches!(input, Input::BodyEnd { .. } | Input::Failed { .. }) {
            with(|c| c.fallback.remove(&stream));
        }
        feed(input)
    };
    spawn_local(crate::transport::fetch::run_request_with(
        reader, id, path, accept, signal,
    ));
}

/// What a [`get_whole`] has read so far.
#[derive(Default)]
struct Reading {
    status: Option<u16>,
    body: Vec<u8>,
    /// Set at the end: `Err` with why it failed.
    outcome: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// `GET path` read whole, whatever its status: a stream on the channel
/// (so it shares the one connection and serve's per-session limits with
/// the watches), or a fetch of its own when serve offers no channel.
pub async fn get_whole(path: &str) -> Result<Answer, SummaryFetchError> {
    let reading = Rc::new(RefCell::new(Reading::default()));
    let writer = reading.clone();
    let feed: StreamFeed = Rc::new(move |input| {
        let mut reading = writer.borrow_mut();
        match input {
            Input::ResponseStarted { status, .. } => {
                reading.status = Some(status);
                reading.body.clear();
            }
            Input::BodyChunk { bytes, .. } => reading.body.extend_from_slice(bytes),
            Input::BodyEnd { .. } => reading.outcome = Some(Ok(())),
            Input::Failed { message, .. } => reading.outcome = Some(Err(message)),
            Input::Tick => {}
        }
        let done = reading.outcome.is_some();
        if done {
            if let Some(waker) = reading.waker.take() {
                waker.wake();
            }
        }
        !done
    });
    open_stream(next_request_id(), path.to_string(), None, feed);
    let outcome = std::future::poll_fn(|context| {
        let mut reading = reading.borrow_mut();
        match reading.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                reading.waker = Some(context.waker().clone());
                Poll::Pending
            }
        }
    })
    .await;
    let mut reading = reading.borrow_mut();
    match (outcome, reading.status) {
        (Ok(()), Some(status)) => Ok(Answer {
            status,
            body: std::mem::take(&mut reading.body),
        }),
        (_, None) => Err(SummaryFetchError::Unreachable(path.to_string())),
        (Err(_), Some(_)) => Err(SummaryFetchError::Body(path.to_string())),
    }
}
