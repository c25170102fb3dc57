//! Streams on the channel whose reader is not an informer's `Driver`: a
//! log follower's requests (`crate::service::logs`). Each is a stream like
//! a watch's, its inputs handed to a [`StreamFeed`]; when serve offers no
//! channel it is a `fetch` of its own instead (log streams are few: one
//! per container on screen), closed through the same stream id.

use std::rc::Rc;

use deltascope_channel::StreamId;
use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use super::{ensure_connected, flush, status, with, ChannelStatus, Sink, Target};
use crate::informer::{Input, RequestId};

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
