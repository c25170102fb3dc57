//! Response body wrappers. [`Observed`] lets a value observe the bytes going
//! out and live exactly as long as the response: the access log entry is
//! written, a watch slot released and a request counted as finished on its
//! connection when the body is finished or dropped (which is also what happens
//! when the client disconnects). [`Until`] cuts a body short when something
//! outside it ends, e.g. the session it streams for.

use std::future::Future;
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

/// `inner` until `stop` resolves; then the body ends with an error, so the
/// client sees a cut stream (hyper closes the connection), never a clean end.
pub struct Until {
    inner: Body,
    /// `None` once it resolved (a finished future must not be polled again).
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    reason: &'static str,
}

impl Until {
    pub fn wrap(
        inner: Body,
        stop: impl Future<Output = ()> + Send + 'static,
        reason: &'static str,
    ) -> Body {
        Body::new(Until {
            inner,
            stop: Some(Box::pin(stop)),
            reason,
        })
    }
}

impl hyper::body::Body for Until {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let Some(stop) = this.stop.as_mut() else {
            return Poll::Ready(None);
        };
        if stop.as_mut().poll(cx).is_ready() {
            this.stop = None;
            return Poll::Ready(Some(Err(axum::Error::new(this.reason))));
        }
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.stop.is_none() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
