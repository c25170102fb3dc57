//! The page's one channel to `deltascope serve` (wire format and the design
//! in `deltascope_channel`): a single long-lived `fetch` whose body carries
//! every watch of every kept informer, each tagged with its stream. Watches
//! are opened and closed with small control `POST`s, batched and sent one at
//! a time (so an open and the close of the same stream can never cross).
//!
//! The reflectors do not know about it: each stream's frames are fed to its
//! informer as the inputs a connection of its own would have produced —
//! `ResponseStarted` (status, `Retry-After`), `BodyChunk`s, `BodyEnd` or
//! `Failed`. When the channel breaks, every stream on it fails with the
//! reason, each reflector backs off and re-watches from its last
//! resourceVersion, and the channel reconnects (with backoff) as soon as a
//! watch asks for it. When serve offers no channel (a 404, or an HTML page
//! from `trunk serve` in front of `kubectl proxy`), watches fall back to the
//! connection budget ([`super::budget`]) for the rest of the page's life.
//! Streams whose reader is not an informer (log followers) ride it too
//! ([`open_stream`], in `feeds`).
//!
//! Here: the client's state, connecting, reading the frames and handing
//! them on, and the batched control requests; how the channel ends
//! (`breaks`) and its HTTP requests (`requests`) are files of their own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use deltascope_channel::{Control, Decoder, Event, Open, StreamId, CONTENT_TYPE};
use futures_util::StreamExt;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::{AbortController, AbortSignal, Response};

mod breaks;
mod feeds;
mod requests;

use breaks::{broken, refused, unavailable, watchdog};
pub use feeds::{get_streamed, open_stream, StreamFeed};
use requests::{get, post, PostError};

use super::fetch::describe;
use super::slicing::{ChunkPieces, TaskBudget, SLICE_BYTES};
use super::{budget, feed, set_in_flight, timer, DriverState, InFlight};
use crate::informer::{Input, RequestId};

/// What the page knows of its channel (plain data, with its words, in the
/// view models).
pub use crate::model::connection::ChannelStatus;

/// Who a stream's inputs go to.
#[derive(Clone)]
enum Target {
    Driver(Weak<RefCell<DriverState>>),
    Feed(StreamFeed),
}

/// The reflector request a stream answers, and how to redo it elsewhere.
struct Sink {
    target: Target,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
}

struct Client {
    status: ChannelStatus,
    /// Which connection is current; a task of an older one does nothing.
    generation: u64,
    channel_id: Option<String>,
    next_stream: StreamId,
    sinks: HashMap<StreamId, Sink>,
    to_open: Vec<StreamId>,
    to_close: Vec<StreamId>,
    /// A control request is in flight.
    posting: bool,
    abort: Option<AbortController>,
    /// Feeds' streams carried by a fetch of their own (no channel).
    fallback: HashMap<StreamId, AbortController>,
    /// Breaks in a row, for the reconnect backoff.
    failures: u32,
    reconnect_pending: bool,
    last_received: f64,
}

thread_local! {
    static CLIENT: RefCell<Client> = RefCell::new(Client {
        status: ChannelStatus::Idle,
        generation: 0,
        channel_id: None,
        next_stream: 1,
        sinks: HashMap::new(),
        to_open: Vec::new(),
        to_close: Vec::new(),
        posting: false,
        abort: None,
        fallback: HashMap::new(),
        failures: 0,
        reconnect_pending: false,
        last_received: 0.0,
    });
}

fn with<R>(f: impl FnOnce(&mut Client) -> R) -> R {
    CLIENT.with(|c| f(&mut c.borrow_mut()))
}

/// The channel's state now.
pub fn status() -> ChannelStatus {
    with(|c| c.status.clone())
}

/// Streams open on the channel now.
pub fn open_streams() -> usize {
    with(|c| c.sinks.len())
}

/// Carries out a watch request: on the channel, or on the connection budget
/// when serve offers no channel.
pub(crate) fn send_watch(
    state: &Rc<RefCell<DriverState>>,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
) {
    if matches!(status(), ChannelStatus::Unavailable { .. }) {
        budget::request_watch(state, id, path, accept);
        return;
    }
    let stream = with(|c| {
        let stream = c.next_stream;
        c.next_stream += 1;
        c.sinks.insert(
            stream,
            Sink {
                target: Target::Driver(Rc::downgrade(state)),
                id,
                path,
                accept,
            },
        );
        c.to_open.push(stream);
        stream
    });
    set_in_flight(state, id, InFlight::Channel(stream));
    ensure_connected();
    flush();
}

/// The reflector cancelled the request `stream` carries.
pub fn close(stream: StreamId) {
    if let Some(controller) = with(|c| c.fallback.remove(&stream)) {
        controller.abort();
        return;
    }
    with(|c| {
        c.sinks.remove(&stream);
        if let Some(index) = c.to_open.iter().position(|s| *s == stream) {
            c.to_open.remove(index); // never sent: nothing to close
        } else {
            c.to_close.push(stream);
        }
    });
    flush();
}

fn ensure_connected() {
    let (connect_now, reconnect_later) = with(|c| match c.status {
        ChannelStatus::Idle => (true, None),
        ChannelStatus::Broken { .. } if !c.reconnect_pending => {
            c.reconnect_pending = true;
            let delay = (800u64 << c.failures.min(6)).min(30_000);
            (false, Some((c.generation, delay)))
        }
        _ => (false, None),
    });
    if connect_now {
        connect();
    }
    if let Some((generation, delay)) = reconnect_later {
        spawn_local(async move {
            timer::sleep_ms(delay).await;
            let due = with(|c| {
                c.reconnect_pending = false;
                c.generation == generation && !c.sinks.is_empty()
            });
            if due {
                connect();
            }
        });
    }
}

fn connect() {
    let Ok(controller) = AbortController::new() else {
        return;
    };
    let signal = controller.signal();
    let generation = with(|c| {
        if let Some(old) = c.abort.replace(controller) {
            old.abort();
        }
        c.generation += 1;
        c.status = ChannelStatus::Connecting;
        c.channel_id = None;
        c.posting = false;
        c.last_received = now();
        // Every stream not yet answered is (re)opened on the new channel.
        let mut pending: Vec<StreamId> = c.sinks.keys().copied().collect();
        crate::informer::compact_sort::sort(&mut pending);
        c.to_open = pending;
        c.to_close.clear();
        c.generation
    });
    spawn_local(run(generation, signal));
    spawn_local(watchdog(generation));
}

async fn run(generation: u64, signal: AbortSignal) {
    let _in_flight = crate::metrics::in_flight();
    let response = match get(&signal).await {
        Ok(response) => response,
        Err(message) => {
            broken(
                generation,
                format!("cannot reach deltascope serve for the channel: {message}"),
            );
            return;
        }
    };
    let content_type = response
        .headers()
        .get("Content-Type")
        .ok()
        .flatten()
        .unwrap_or_default();
    let status = response.status();
    if status == 200 && content_type.starts_with(CONTENT_TYPE) {
        read(generation, response).await;
    } else if matches!(status, 200 | 404 | 405 | 501) {
        unavailable(
            generation,
            if status == 200 {
                "the server answered the channel with a page, not a channel (trunk serve \
                 in front of kubectl proxy?)"
                    .to_string()
            } else {
                format!("the server has no deltascope channel (HTTP {status})")
            },
        );
    } else {
        let retry_after_secs = response
            .headers()
            .get("Retry-After")
            .ok()
            .flatten()
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = match response.text() {
            Ok(promise) => JsFuture::from(promise)
                .await
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        refused(generation, status, retry_after_secs, body);
    }
}

async fn read(generation: u64, response: Response) {
    let Some(body) = response.body() else {
        broken(
            generation,
            "deltascope serve sent a channel with no body".into(),
        );
        return;
    };
    let mut chunks = wasm_streams::ReadableStream::from_raw(body.unchecked_into()).into_stream();
    let mut decoder = Decoder::new();
    let mut budget = TaskBudget::default();
    let mut buffer = Vec::new();
    while let Some(chunk) = chunks.next().await {
        if !current(generation) {
            return;
        }
        let mut pieces = match chunk {
            Ok(chunk) => ChunkPieces::new(&chunk),
            Err(error) => {
                broken(
                    generation,
                    format!(
                        "the channel to deltascope serve broke: {}",
                        describe(&error)
                    ),
                );
                return;
            }
        };
        with(|c| c.last_received = now());
        while let Some(bytes) = pieces.next_into(&mut buffer) {
            let mut events = Vec::new();
            if let Err(error) = decoder.feed(bytes, |event| events.push(event)) {
                broken(generation, format!("the channel is out of step: {error}"));
                return;
            }
            for event in events {
                // A stream's data in slices, yielding between them when the
                // task has run its budget (`slicing`), so the page draws.
                let Event::Data { stream, bytes } = event else {
                    if !current(generation) {
                        return;
                    }
                    deliver(event);
                    continue;
                };
                for slice in bytes.chunks(SLICE_BYTES) {
                    if !current(generation) {
                        return;
                    }
                    deliver(Event::Data {
                        stream,
                        bytes: slice,
                    });
                    budget.spend().await;
                }
            }
            budget.spend().await;
        }
    }
    broken(generation, "deltascope serve closed the channel".into());
}

/// Feeds one channel event to the reflector its stream belongs to.
fn deliver(event: Event<'_>) {
    let (stream, input) = match event {
        Event::Hello { channel } => {
            with(|c| {
                c.channel_id = Some(channel);
                c.status = ChannelStatus::Open;
                c.failures = 0;
            });
            flush();
            return;
        }
        Event::Ping => return,
        Event::Start {
            stream,
            status,
            retry_after_secs,
        } => (
            stream,
            Input::ResponseStarted {
                id: RequestId(0),
                status,
                retry_after_secs: retry_after_secs.map(u64::from),
            },
        ),
        Event::Data { stream, bytes } => (
            stream,
            Input::BodyChunk {
                id: RequestId(0),
                bytes,
            },
        ),
        Event::End { stream } => (stream, Input::BodyEnd { id: RequestId(0) }),
        Event::Fail { stream, reason } => (
            stream,
            Input::Failed {
                id: RequestId(0),
                message: reason,
            },
        ),
    };
    let last = matches!(input, Input::BodyEnd { .. } | Input::Failed { .. });
    let sink = with(|c| {
        let sink = c.sinks.get(&stream)?;
        let found = (sink.target.clone(), sink.id);
        if last {
            c.sinks.remove(&stream);
        }
        Some(found)
    });
    let Some((target, id)) = sink else {
        return; // closed by the page meanwhile
    };
    let input = match input {
        Input::ResponseStarted {
            status,
            retry_after_secs,
            ..
        } => Input::ResponseStarted {
            id,
            status,
            retry_after_secs,
        },
        Input::BodyChunk { bytes, .. } => Input::BodyChunk { id, bytes },
        Input::BodyEnd { .. } => Input::BodyEnd { id },
        Input::Failed { message, .. } => Input::Failed { id, message },
        Input::Tick => return,
    };
    let wanted = match target {
        Target::Driver(driver) => feed(&driver, input),
        Target::Feed(feed) => feed(input),
    };
    if !wanted && !last {
        // The informer stopped or moved on: stop the stream too.
        close(stream);
    }
}

/// Sends what is queued to open and close, one control request at a time.
fn flush() {
    let batch = with(|c| {
        if c.posting || c.status != ChannelStatus::Open {
            return None;
        }
        let channel = c.channel_id.clone()?;
        let open: Vec<Open> = std::mem::take(&mut c.to_open)
            .into_iter()
            .filter_map(|stream| {
                let sink = c.sinks.get(&stream)?;
                Some(Open {
                    stream,
                    path: sink.path.clone(),
                    accept: sink.accept.map(str::to_owned),
                })
            })
            .collect();
        let close = std::mem::take(&mut c.to_close);
        if open.is_empty() && close.is_empty() {
            return None;
        }
        c.posting = true;
        Some((channel, c.generation, Control { open, close }))
    });
    let Some((channel, generation, control)) = batch else {
        return;
    };
    spawn_local(async move {
        let result = post(&channel, &control).await;
        if !current(generation) {
            return;
        }
        with(|c| c.posting = false);
        match result {
            Ok(()) => flush(),
            Err(PostError::UnknownChannel(message)) => {
                broken(generation, message);
            }
            Err(PostError::Other(message)) => {
                for open in control.open {
                    deliver(Event::Fail {
                        stream: open.stream,
                        reason: message.clone(),
                    });
                }
                flush();
            }
        }
    });
}

fn current(generation: u64) -> bool {
    with(|c| c.generation == generation)
}

fn now() -> f64 {
    budget::clock()
}
