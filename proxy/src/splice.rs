//! Kernel-side pass-through of large upstream bodies (Linux only).
//!
//! A list of a hundred megabytes passes through serve untouched, yet reading
//! it from the upstream socket and writing it to the browser's socket copied
//! every byte twice: over 40% of serve's CPU per list went to those copies.
//! Here the body goes from one socket into a pipe and from the pipe into the
//! other socket with `splice(2)`, so the bytes stay in the kernel.
//!
//! hyper owns both connections and frames both messages, so the two ends are
//! taken over without leaving it:
//!
//! - **Upstream**: the request is sent on a connection of its own through
//!   hyper's low-level HTTP/1 client over [`UpstreamStream`], which hands hyper
//!   the response head and nothing more (it peeks for the blank line and reads
//!   exactly that far). If the answer is a length-delimited body worth
//!   splicing, hyper gives the socket back ([`fetch`]) with the whole body
//!   still in the kernel; otherwise hyper is let read on, as on any other
//!   connection.
//! - **Browser**: the response body is a [`SplicedBody`]. It splices what the
//!   upstream has sent into a pipe and yields, for those bytes, the same number
//!   of *stand-in* bytes: a slice of one static buffer. hyper queues body
//!   chunks as they are (vectored writes) and writes them through
//!   [`BrowserStream`], which recognises a stand-in by its address and splices
//!   that many bytes from the pipe into the socket instead. hyper frames the
//!   message (`Content-Length`, keep-alive) as for any other body.
//!
//! While a body is being spliced, the upstream socket's receive low-water
//! mark makes it wake serve once per half megabyte instead of every few
//! segments (see [`LOW_WATER`]).
//!
//! Only plain GETs of API data take this path: watches stream event by event,
//! Secrets are redacted, and a chunked or short answer streams through hyper
//! as before, on the connection it arrived on, which is then not reused. (A
//! real apiserver behind `kubectl proxy` usually sends a large list chunked,
//! so there this path mostly saves nothing; the simulated cluster, and any
//! upstream that announces its lengths, gets it.)
//!
//! One pipe belongs to one response. A browser connection keeps the pipes of
//! its responses in order ([`BrowserSplices`]); a pipe leaves the queue when
//! every byte of its body has been written. A body holds at most one pipe-full
//! at a time: it splices more only once the connection has emptied the pipe,
//! so "the pipe is full" never has to be told apart from "the socket is empty".
//!
//! Anything unexpected ends the browser connection rather than let a wrong
//! byte out: a stand-in with nothing in the pipe behind it, a body dropped
//! before it was written, an upstream that closes early.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

use axum::body::Body;
use bytes::Bytes;
use http::{header, HeaderMap, Request, Response, StatusCode};
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::TokioIo;
use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
use nix::sys::socket::{recv, MsgFlags};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// Bodies shorter than this are read and written as usual: a pipe and the
/// extra system calls are not worth it for them.
pub const MIN_SPLICE_BYTES: u64 = 256 * 1024;

/// The most one splice moves, and the pipe size asked for (the default
/// `fs.pipe-max-size`, so any user may have it).
const STAND_IN_LEN: usize = 1 << 20;

/// Stand-in bytes: body chunks whose address lies in this buffer mean "this
/// many bytes from the pipe". Its contents are never sent.
static STAND_IN: [u8; STAND_IN_LEN] = [0; STAND_IN_LEN];

/// The upstream socket wakes serve only once this much of the body is waiting
/// (`SO_RCVLOWAT`; an end of stream wakes it regardless). Without it, serve
/// woke for every few segments the upstream sent: a 100 MB list took 14 ms of
/// serve's CPU, most of it switching in and out, against 9–12 ms with it. In
/// runs of the bench's list figure (31 samples a path) that read 0.80–1.03×
/// of direct without the mark and 0.92–1.00× with it.
const LOW_WATER: usize = 512 * 1024;

/// The longest response head looked for before giving up on splicing.
const MAX_HEAD: usize = 64 * 1024;

/// Body bytes that went through a pipe since the process started.
static SPLICED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Body bytes that went through a pipe since the process started (for tests and logs).
pub fn spliced_bytes() -> u64 {
    SPLICED_BYTES.load(Ordering::Relaxed)
}

fn is_stand_in(buf: &[u8]) -> bool {
    let start = STAND_IN.as_ptr() as usize;
    let at = buf.as_ptr() as usize;
    !buf.is_empty() && at >= start && at + buf.len() <= start + STAND_IN_LEN
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state stays consistent under every early return; a panic elsewhere
    // must not turn into a second one here.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn broken(what: &str) -> io::Error {
    io::Error::other(format!("spliced body out of step: {what}"))
}

/// One response's pipe and how far its body has got.
struct Transfer {
    /// The pipe's read end; the connection splices from it.
    pipe_out: OwnedFd,
    state: Mutex<TransferState>,
}

struct TransferState {
    /// Bytes spliced into the pipe and not yet out of it.
    in_pipe: usize,
    /// Bytes of the body the connection has still to write.
    owed: u64,
    /// The body, waiting for the pipe to empty.
    producer: Option<Waker>,
    /// The body was dropped before it had taken all of itself from the upstream.
    abandoned: bool,
}

/// The spliced bodies of one browser connection that are still being written,
/// oldest first. The accept loop gives every request of a connection this
/// connection's queue (as a request extension).
#[derive(Default)]
pub struct BrowserSplices {
    pending: Mutex<VecDeque<Arc<Transfer>>>,
}

/// A browser connection's socket: reads and writes pass through, except that
/// a stand-in chunk is written by splicing from the oldest pending pipe.
pub struct BrowserStream {
    tcp: TcpStream,
    splices: Arc<BrowserSplices>,
}

impl BrowserStream {
    pub fn new(tcp: TcpStream, splices: Arc<BrowserSplices>) -> Self {
        BrowserStream { tcp, splices }
    }

    fn poll_splice_out(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<usize>> {
        let Some(transfer) = lock(&self.splices.pending).front().cloned() else {
            return Poll::Ready(Err(broken("a stand-in chunk but no pipe")));
        };
        let want = {
            let state = lock(&transfer.state);
            if state.abandoned {
                return Poll::Ready(Err(broken("the body was dropped before it was written")));
            }
            if state.in_pipe == 0 {
                return Poll::Ready(Err(broken("a stand-in chunk but an empty pipe")));
            }
            len.min(state.in_pipe)
        };
        let pipe = transfer.pipe_out.as_fd();
        let n = ready!(poll_splice(cx, &self.tcp, Interest::WRITABLE, pipe, want))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        let mut state = lock(&transfer.state);
        state.in_pipe -= n;
        state.owed = state.owed.saturating_sub(n as u64);
        if state.in_pipe == 0 {
            if let Some(waker) = state.producer.take() {
                waker.wake();
            }
        }
        if state.owed == 0 {
            drop(state);
            lock(&self.splices.pending).pop_front();
        }
        SPLICED_BYTES.fetch_add(n as u64, Ordering::Relaxed);
        Poll::Ready(Ok(n))
    }
}

impl AsyncRead for BrowserStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for BrowserStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let bufs = match bufs.iter().position(|b| !b.is_empty()) {
            Some(first) => &bufs[first..],
            None => return Poll::Ready(Ok(0)),
        };
        if is_stand_in(&bufs[0]) {
            return this.poll_splice_out(cx, bufs[0].len());
        }
        // Real bytes (a response head, a small body) up to the next stand-in.
        let end = bufs
            .iter()
            .position(|b| is_stand_in(b))
            .unwrap_or(bufs.len());
        Pin::new(&mut this.tcp).poll_write_vectored(cx, &bufs[..end])
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// A response body that moves `Content-Length` bytes from the upstream socket
/// to the browser's through a pipe; its data frames are stand-ins.
pub struct SplicedBody {
    upstream: TcpStream,
    /// The pipe's write end.
    pipe_in: OwnedFd,
    /// The most one splice into the pipe moves.
    chunk: usize,
    transfer: Arc<Transfer>,
    browser: Arc<BrowserSplices>,
    /// Body bytes not yet taken from the upstream.
    unread: u64,
    /// The transfer is in the browser connection's queue.
    queued: bool,
    /// The upstream socket's receive low-water mark (`SO_RCVLOWAT`).
    low_water: usize,
}

impl SplicedBody {
    fn wait_for_empty_pipe(&self, cx: &mut Context<'_>) -> bool {
        let mut state = lock(&self.transfer.state);
        if state.in_pipe == 0 {
            return true;
        }
        state.producer = Some(cx.waker().clone());
        false
    }
}

impl hyper::body::Body for SplicedBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        if this.unread == 0 {
            return Poll::Ready(None);
        }
        if !this.queued {
            // hyper polls a body only once the previous response's body has
            // ended, so the queue is in response order.
            lock(&this.browser.pending).push_back(Arc::clone(&this.transfer));
            this.queued = true;
        }
        if !this.wait_for_empty_pipe(cx) {
            return Poll::Pending;
        }
        let want = usize::try_from(this.unread).map_or(this.chunk, |n| n.min(this.chunk));
        // Never above what is left of the body, or its last bytes would never wake us.
        let low_water = want.min(LOW_WATER);
        if low_water != this.low_water {
            this.low_water = low_water;
            if let Err(error) = set_receive_low_water(&this.upstream, low_water) {
                tracing::debug!(%error, "cannot set SO_RCVLOWAT on the upstream connection");
            }
        }
        let pipe = this.pipe_in.as_fd();
        let n = ready!(poll_splice(
            cx,
            &this.upstream,
            Interest::READABLE,
            pipe,
            want
        ))?;
        if n == 0 {
            return Poll::Ready(Some(Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the upstream closed {} bytes before the end of the body",
                    this.unread
                ),
            ))));
        }
        lock(&this.transfer.state).in_pipe = n;
        this.unread -= n as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&STAND_IN[..n])))))
    }

    fn is_end_stream(&self) -> bool {
        self.unread == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.unread)
    }
}

impl Drop for SplicedBody {
    /// hyper drops a body once it has yielded its last chunk, while stand-ins
    /// may still wait in its write queue (the pipe's read end lives on in the
    /// transfer). Dropped before that, the rest of the body will never come.
    fn drop(&mut self) {
        if self.unread > 0 {
            lock(&self.transfer.state).abandoned = true;
        }
    }
}

/// How far [`UpstreamStream`] lets hyper read.
enum Gate {
    /// Up to the end of the response head; `left` once the head's length is known.
    Head { left: Option<usize> },
    /// The head has been read; reads wait until [`Gate::Open`].
    Held(Option<Waker>),
    /// Everything passes.
    Open,
}

type SharedGate = Arc<Mutex<Gate>>;

fn open(gate: &SharedGate) {
    if let Gate::Held(Some(waker)) = std::mem::replace(&mut *lock(gate), Gate::Open) {
        waker.wake();
    }
}

/// An upstream connection that gives hyper the response head and then waits,
/// so the body is still in the socket when hyper has parsed the head.
struct UpstreamStream {
    tcp: TcpStream,
    gate: SharedGate,
    peeked: Vec<u8>,
}

/// The length of the response head at the start of `bytes` (through the blank
/// line), if it is all there.
fn head_length(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

enum Peeked {
    Head(usize),
    Eof,
    TooLong,
}

impl UpstreamStream {
    /// Waits until the whole head is in the socket and returns its length.
    fn poll_head_length(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Peeked>> {
        loop {
            ready!(self.tcp.poll_read_ready(cx))?;
            let peeked = &mut self.peeked;
            let tcp = &self.tcp;
            match tcp.try_io(Interest::READABLE, || {
                let n = recv(tcp.as_raw_fd(), peeked, MsgFlags::MSG_PEEK)?;
                if n == 0 {
                    return Ok(Peeked::Eof);
                }
                if let Some(length) = head_length(&peeked[..n]) {
                    return Ok(Peeked::Head(length));
                }
                if n == peeked.len() {
                    return Ok(Peeked::TooLong);
                }
                // Part of the head: wait for more to arrive.
                Err(io::ErrorKind::WouldBlock.into())
            }) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                other => return Poll::Ready(other),
            }
        }
    }
}

impl AsyncRead for UpstreamStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let left = match &mut *lock(&this.gate) {
            Gate::Open => None,
            Gate::Held(waiting) => {
                *waiting = Some(cx.waker().clone());
                return Poll::Pending;
            }
            Gate::Head { left } => Some(*left),
        };
        let left = match left {
            None => return Pin::new(&mut this.tcp).poll_read(cx, buf),
            Some(Some(left)) => left,
            Some(None) => match ready!(this.poll_head_length(cx))? {
                Peeked::Head(length) => {
                    // An interim (1xx) head is followed by another head: let
                    // hyper read on and do not splice this response.
                    if this.peeked.starts_with(b"HTTP/1.1 1") {
                        *lock(&this.gate) = Gate::Open;
                        return Pin::new(&mut this.tcp).poll_read(cx, buf);
                    }
                    length
                }
                Peeked::Eof => return Poll::Ready(Ok(())),
                Peeked::TooLong => {
                    *lock(&this.gate) = Gate::Open;
                    return Pin::new(&mut this.tcp).poll_read(cx, buf);
                }
            },
        };
        let take = left.min(buf.remaining());
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            match this.tcp.try_read(&mut this.peeked[..take]) {
                Ok(n) => {
                    buf.put_slice(&this.peeked[..n]);
                    let left = left - n;
                    *lock(&this.gate) = if left == 0 {
                        Gate::Held(None)
                    } else {
                        Gate::Head { left: Some(left) }
                    };
                    return Poll::Ready(Ok(()));
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for UpstreamStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// Splices up to `len` bytes between `socket` and `pipe`, once the socket is
/// ready: from the socket into the pipe for [`Interest::READABLE`], from the
/// pipe into the socket for [`Interest::WRITABLE`]. The pipe must be ready by
/// construction (empty, or holding at least `len` bytes).
fn poll_splice(
    cx: &mut Context<'_>,
    socket: &TcpStream,
    interest: Interest,
    pipe: BorrowedFd<'_>,
    len: usize,
) -> Poll<io::Result<usize>> {
    let (from, to) = if interest.is_readable() {
        (socket.as_fd(), pipe)
    } else {
        (pipe, socket.as_fd())
    };
    loop {
        if interest.is_readable() {
            ready!(socket.poll_read_ready(cx))?;
        } else {
            ready!(socket.poll_write_ready(cx))?;
        }
        let moved = socket.try_io(interest, || {
            let flags = SpliceFFlags::SPLICE_F_NONBLOCK | SpliceFFlags::SPLICE_F_MOVE;
            splice(from, None, to, None, len, flags).map_err(io::Error::from)
        });
        match moved {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            other => return Poll::Ready(other),
        }
    }
}

/// Sets `SO_RCVLOWAT`: readiness (and so a wake-up) needs `bytes` waiting.
fn set_receive_low_water(tcp: &TcpStream, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: the descriptor is open for the call (borrowed from `tcp`), and
    // the option value is a c_int whose address and size are passed as such.
    let result = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A pipe for one body: (read end, write end, the most one splice moves).
fn body_pipe() -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
    let size = match fcntl(&write, FcntlArg::F_SETPIPE_SZ(STAND_IN_LEN as i32)) {
        Ok(size) => size,
        // A lower `fs.pipe-max-size`: keep the default size.
        Err(_) => fcntl(&write, FcntlArg::F_GETPIPE_SZ)?,
    };
    let chunk = usize::try_from(size).unwrap_or(0).clamp(4096, STAND_IN_LEN);
    Ok((read, write, chunk))
}

/// The body length, when the response is one whose body can be spliced.
fn spliceable_length(status: StatusCode, headers: &HeaderMap) -> Option<u64> {
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || headers.contains_key(header::TRANSFER_ENCODING)
    {
        return None;
    }
    let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
    let length = lengths.next()?.to_str().ok()?.trim().parse::<u64>().ok()?;
    if lengths.next().is_some() || length < MIN_SPLICE_BYTES {
        return None;
    }
    Some(length)
}

/// Why [`fetch`] got no response.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("the request has no http://host[:port] to send it to: {0}")]
    Target(String),
    #[error("cannot connect")]
    Connect(#[source] io::Error),
    #[error(transparent)]
    Http(#[from] hyper::Error),
    #[error("the connection closed before a response")]
    Closed,
}

/// `request`'s absolute `http://` URI as (host, port), with the request turned
/// into what goes on the wire: an origin-form target and a `Host` header.
fn origin_form(request: &mut Request<Body>) -> Result<(String, u16), FetchError> {
    let uri = request.uri();
    let authority = uri
        .authority()
        .filter(|_| uri.scheme_str() == Some("http"))
        .ok_or_else(|| FetchError::Target(uri.to_string()))?
        .clone();
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = target
        .parse()
        .map_err(|error: http::uri::InvalidUri| FetchError::Target(error.to_string()))?;
    let host = header::HeaderValue::from_str(authority.as_str())
        .map_err(|error| FetchError::Target(error.to_string()))?;
    request.headers_mut().insert(header::HOST, host);
    let name = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    Ok((name.to_owned(), authority.port_u16().unwrap_or(80)))
}

/// Sends `request` (an absolute `http://` URI, no body) on a new connection. A
/// length-delimited body of at least [`MIN_SPLICE_BYTES`] comes back as a
/// [`SplicedBody`] written to `browser`'s connection; any other response
/// streams through hyper as usual.
pub async fn fetch(
    mut request: Request<Body>,
    browser: Arc<BrowserSplices>,
) -> Result<Response<Body>, FetchError> {
    let (host, port) = origin_form(&mut request)?;
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(FetchError::Connect)?;
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY upstream");
    }
    let gate: SharedGate = Arc::new(Mutex::new(Gate::Head { left: None }));
    let stream = UpstreamStream {
        tcp,
        gate: Arc::clone(&gate),
        peeked: vec![0; MAX_HEAD],
    };
    let (mut sender, mut connection) =
        hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(stream)).await?;
    let response = {
        let mut sent = pin!(sender.send_request(request));
        poll_fn(|cx| {
            if let Poll::Ready(response) = sent.as_mut().poll(cx) {
                return Poll::Ready(response.map_err(FetchError::from));
            }
            match connection.poll_without_shutdown(cx) {
                Poll::Ready(Ok(())) => Poll::Ready(Err(FetchError::Closed)),
                Poll::Ready(Err(error)) => Poll::Ready(Err(error.into())),
                Poll::Pending => Poll::Pending,
            }
        })
        .await?
    };
    drop(sender);
    let held = matches!(*lock(&gate), Gate::Held(_));
    let length = spliceable_length(response.status(), response.headers()).filter(|_| held);
    let pipe = match length {
        Some(_) => match body_pipe() {
            Ok(pipe) => Some(pipe),
            Err(error) => {
                tracing::debug!(%error, "cannot create a pipe; the body is copied instead");
                None
            }
        },
        None => None,
    };
    let (Some(length), Some((pipe_out, pipe_in, chunk))) = (length, pipe) else {
        open(&gate);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "upstream connection ended with an error");
            }
        });
        return Ok(response.map(Body::new));
    };
    let (parts, incoming) = response.into_parts();
    drop(incoming);
    let hyper::client::conn::http1::Parts { io, read_buf, .. } = connection.into_parts();
    if !read_buf.is_empty() {
        // Cannot happen while the gate holds; never splice around bytes hyper has.
        return Err(FetchError::Closed);
    }
    let upstream = io.into_inner().tcp;
    let body = SplicedBody {
        upstream,
        pipe_in,
        chunk,
        transfer: Arc::new(Transfer {
            pipe_out,
            state: Mutex::new(TransferState {
                in_pipe: 0,
                owed: length,
                producer: None,
                abandoned: false,
            }),
        }),
        browser,
        unread: length,
        queued: false,
        low_water: 1,
    };
    Ok(Response::from_parts(parts, Body::new(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_told_apart_by_address() {
        assert!(is_stand_in(&STAND_IN[..10]));
        assert!(is_stand_in(&STAND_IN[STAND_IN_LEN - 1..]));
        assert!(!is_stand_in(&STAND_IN[..0]));
        let copy = STAND_IN[..10].to_vec();
        assert!(!is_stand_in(&copy));
    }

    #[test]
    fn head_length_includes_the_blank_line() {
        assert_eq!(head_length(b"HTTP/1.1 200 OK\r\n\r\nbody"), Some(19));
        assert_eq!(head_length(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
    }

    #[test]
    fn requests_go_out_in_origin_form_with_their_host() {
        let mut request = Request::get("http://[::1]:8001/prefix/api/v1/pods?limit=5")
            .body(Body::empty())
            .unwrap();
        assert_eq!(origin_form(&mut request).unwrap(), ("::1".to_owned(), 8001));
        assert_eq!(request.uri(), "/prefix/api/v1/pods?limit=5");
        assert_eq!(request.headers()[header::HOST], "[::1]:8001");
        let mut request = Request::get("/api").body(Body::empty()).unwrap();
        assert!(matches!(
            origin_form(&mut request),
            Err(FetchError::Target(_))
        ));
    }

    #[test]
    fn only_long_length_delimited_bodies_are_spliced() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, "1000000".parse().unwrap());
        assert_eq!(spliceable_length(StatusCode::OK, &headers), Some(1_000_000));
        assert_eq!(spliceable_length(StatusCode::NOT_MODIFIED, &headers), None);
        headers.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert_eq!(spliceable_length(StatusCode::OK, &headers), None);
        headers.remove(header::TRANSFER_ENCODING);
        headers.insert(header::CONTENT_LENGTH, "1000".parse().unwrap());
        assert_eq!(spliceable_length(StatusCode::OK, &headers), None);
        headers.append(header::CONTENT_LENGTH, "1000000".parse().unwrap());
        assert_eq!(spliceable_length(StatusCode::OK, &headers), None);
    }
}
