//! Streams on the channel whose reader is not an informer's `Driver`: a
//! log follower's requests (`crate::service::logs`), and a GET whose
//! answer is handed on as it arrives ([`get_streamed`]: the metrics API's
//! lists that `kubectl top`'s columns and the usage charts read once per
//! window). Each is a stream like a watch's,
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
use crate::transport::serve_history::SummaryFetchError;

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

/// What a [`get_streamed`] knows so far.
#[derive(Default)]
struct Progress {
    started: bool,
    /// Set at the end: `Err` with why it failed.
    outcome: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// `GET path`, whatever its status, its answer handed on as it arrives: a
/// stream on the channel (so it shares the one connection and serve's
/// per-session limits with the watches), or a fetch of its own when serve
/// offers no channel. Its status goes to `on_start` (again should the
/// request start over elsewhere),
/// each piece of its body to `on_chunk` (the channel's frames are at most
/// 64 KiB: a reader that keeps up with them holds no task long).
pub async fn get_streamed(
    path: &str,
    on_start: impl FnMut(u16) + 'static,
    on_chunk: impl FnMut(&[u8]) + 'static,
) -> Result<(), SummaryFetchError> {
    let progress = Rc::new(RefCell::new(Progress::default()));
    let writer = progress.clone();
    let readers = RefCell::new((on_start, on_chunk));
    let feed: StreamFeed = Rc::new(move |input| {
        let mut progress = writer.borrow_mut();
        match input {
            Input::ResponseStarted { status, .. } => {
                progress.started = true;
                (readers.borrow_mut().0)(status);
            }
            Input::BodyChunk { bytes, .. } => (readers.borrow_mut().1)(bytes),
            Input::BodyEnd { .. } => progress.outcome = Some(Ok(())),
            Input::Failed { message, .. } => progress.outcome = Some(Err(message)),
            Input::Tick => {}
        }
        let done = progress.outcome.is_some();
        if done {
            if let Some(waker) = progress.waker.take() {
                waker.wake();
            }
        }
        !done
    });
    open_stream(next_request_id(), path.to_string(), None, feed);
    let outcome = std::future::poll_fn(|context| {
        let mut progress = progress.borrow_mut();
        match progress.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                progress.waker = Some(context.waker().clone());
                Poll::Pending
            }
        }
    })
    .await;
    let started = progress.borrow().started;
    match (outcome, started) {
        (Ok(()), true) => Ok(()),
        (_, false) => Err(SummaryFetchError::Unreachable(path.to_string())),
        (Err(_), true) => Err(SummaryFetchError::Body(path.to_string())),
    }
}
