//! A channel's streams: a control request's opens and closes, the request
//! each open stands for, and the relay of its answer onto the channel as
//! frames of at most [`MAX_DATA_FRAME`] bytes, each queued once it has room
//! (see [`super::queue`]).

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use deltascope_channel::{Control, Frame, Open, StreamId, CHANNEL_STREAM};
use futures_util::StreamExt;
use http::header::{self, HeaderValue};
use http::{Request, StatusCode, Uri};
use tokio::sync::Notify;

use super::queue::{lock, short, Channel, NoRoom, ToBytes, SLOW_READER_GRACE};
use crate::auth::SlotKind;
use crate::limits::{
    MAX_DATA_FRAME, MAX_STREAMS_PER_CHANNEL, MAX_STREAMS_PER_SESSION, STREAM_BUFFER,
};
use crate::paths::{classify, normalise, Route};
use crate::status::{status, too_many_requests};

/// Why a control request's opens were refused (its closes still apply).
#[derive(Debug, thiserror::Error)]
pub(super) enum ControlError {
    #[error("stream {0} is already open on this channel, named twice, or reserved (0)")]
    StreamInUse(StreamId),
    #[error(
        "this channel holds {open} streams and the request opens {asked}: a channel carries \
         at most {MAX_STREAMS_PER_CHANNEL} at once (finished ones count until the page has \
         read them); close some first"
    )]
    ChannelFull { open: usize, asked: usize },
    #[error(
        "this session holds {open} streams over its channels and the request opens {asked}: \
         a session carries at most {MAX_STREAMS_PER_SESSION} at once; close some first"
    )]
    SessionFull { open: usize, asked: usize },
}

impl ControlError {
    pub(super) fn into_response(self) -> Response {
        match self {
            ControlError::StreamInUse(_) => {
                status(StatusCode::BAD_REQUEST, "BadRequest", self.to_string())
            }
            ControlError::ChannelFull { .. } | ControlError::SessionFull { .. } => {
                too_many_requests(self.to_string(), 1)
            }
        }
    }
}

impl Channel {
    /// Closes, then opens (so one request may close a stream and reuse its
    /// id). The opens are checked, counted and stored under one lock, all or
    /// none, so two control requests can never open the same stream twice
    /// nor pass a bound together.
    pub(super) fn apply(self: &Arc<Self>, control: Control) -> Result<(), ControlError> {
        for stream in control.close {
            self.close_stream(stream);
        }
        if control.open.is_empty() {
            return Ok(());
        }
        let accepted: Vec<(Open, Arc<Notify>)> = {
            let mut state = lock(&self.state);
            if state.closed {
                return Ok(());
            }
            let mut seen = HashSet::new();
            if let Some(open) = control.open.iter().find(|o| {
                o.stream == CHANNEL_STREAM
                    || state.streams.contains_key(&o.stream)
                    || !seen.insert(o.stream)
            }) {
                return Err(ControlError::StreamInUse(open.stream));
            }
            let asked = control.open.len();
            let open = state.streams.len();
            if open + asked > MAX_STREAMS_PER_CHANNEL {
                return Err(ControlError::ChannelFull { open, asked });
            }
            let Some(slots) =
                self.session
                    .try_take(SlotKind::Stream, asked, MAX_STREAMS_PER_SESSION)
            else {
                return Err(ControlError::SessionFull {
                    open: self.session.open_slots(SlotKind::Stream),
                    asked,
                });
            };
            control
                .open
                .into_iter()
                .zip(slots)
                .map(|(open, slot)| {
                    let drained = Channel::insert(&mut state, open.stream, slot);
                    (open, drained)
                })
                .collect()
        };
        for (open, drained) in accepted {
            let channel = Arc::clone(self);
            let stream = open.stream;
            let task = tokio::spawn(async move {
                let response = channel.request(&open).await;
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
        let (forwarder, path) = match self.upstreams.route(&path) {
            Ok(routed) => routed,
            Err(unknown) => return unknown.into_response(),
        };
        forwarder.forward(request, &path, &api, &self.session).await
    }

    /// Moves `response` onto the channel as `stream`'s frames, waiting for
    /// room for each and ending the stream as too slow when none comes.
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
        if self
            .send(stream, start.to_bytes(), false, &drained)
            .await
            .is_err()
        {
            return;
        }
        let mut body = response.into_body().into_data_stream();
        let last = loop {
            match body.next().await {
                Some(Ok(bytes)) => {
                    for piece in pieces(bytes) {
                        let frame = Frame::Data {
                            stream,
                            bytes: &piece,
                        };
                        match self.send(stream, frame.to_bytes(), false, &drained).await {
                            Ok(()) => {}
                            Err(NoRoom::Gone) => return,
                            Err(NoRoom::Slow) => return self.end_slow(stream, &drained).await,
                        }
                    }
                }
                Some(Err(error)) => {
                    let reason = format!("the upstream response broke: {error}");
                    break Frame::Fail {
                        stream,
                        reason: &reason,
                    }
                    .to_bytes();
                }
                None => break Frame::End { stream }.to_bytes(),
            }
        };
        let _ = self.send(stream, last, true, &drained).await;
    }

    /// Drops what `stream` had queued and tells the page it was too slow,
    /// the way an apiserver ends a watcher that does not keep up.
    async fn end_slow(&self, stream: StreamId, drained: &Notify) {
        let reason = format!(
            "deltascope serve ended this stream: the page read none of its last {} KiB for {} s \
             (as an apiserver ends a watcher that is too slow); it resumes from the last \
             resourceVersion the page received",
            STREAM_BUFFER / 1024,
            SLOW_READER_GRACE.as_secs()
        );
        tracing::warn!(channel = %short(&self.id), stream, "ending a stream whose reader is too slow");
        self.drop_queue(stream);
        let fail = Frame::Fail {
            stream,
            reason: &reason,
        };
        let _ = self.send(stream, fail.to_bytes(), true, drained).await;
    }
}

/// `bytes` cut into pieces of at most [`MAX_DATA_FRAME`] (no copy).
fn pieces(mut bytes: Bytes) -> impl Iterator<Item = Bytes> {
    std::iter::from_fn(move || {
        (!bytes.is_empty()).then(|| bytes.split_to(bytes.len().min(MAX_DATA_FRAME)))
    })
}

fn bad_request(message: impl Into<String>) -> Response {
    status(StatusCode::BAD_REQUEST, "BadRequest", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_cut_into_bounded_pieces_in_order() {
        let data: Vec<u8> = (0..(2 * MAX_DATA_FRAME + 10)).map(|i| i as u8).collect();
        let cut: Vec<Bytes> = pieces(Bytes::from(data.clone())).collect();
        assert_eq!(
            cut.iter().map(Bytes::len).collect::<Vec<_>>(),
            [MAX_DATA_FRAME, MAX_DATA_FRAME, 10]
        );
        assert_eq!(cut.concat(), data);
        assert_eq!(pieces(Bytes::new()).count(), 0);
    }
}
