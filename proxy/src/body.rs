//! A response body wrapper that lets a value observe the bytes going out and
//! live exactly as long as the response: the access log entry is written, and
//! a watch slot released, when the body is finished or dropped (which is also
//! what happens when the client disconnects).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

/// Sees every data frame of a body; does its final work in `Drop`.
pub trait Observer: Send + Unpin + 'static {
    fn on_data(&mut self, _len: usize) {}
}

/// `inner`, unchanged, with `observer` attached.
pub struct Observed<O> {
    inner: Body,
    observer: O,
}

impl<O: Observer> Observed<O> {
    pub fn wrap(inner: Body, observer: O) -> Body {
        Body::new(Observed { inner, observer })
    }
}

impl<O: Observer> hyper::body::Body for Observed<O> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                this.observer.on_data(data.len());
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
