//! Watch streams: one task per watch that sends the initial state or replays
//! history, then forwards committed events as one JSON line each (flushed per
//! event), with selector transitions as the etcd3 watcher does them,
//! periodic BOOKMARKs, `timeoutSeconds`, and a bounded buffer — a watcher that
//! falls behind is closed rather than allowed to grow memory.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::cluster::Inner;
use crate::faults::take;
use crate::resources::{ResIdx, ResourceType};
use crate::selectors::Selector;
use crate::status::ApiError;
use crate::store::{event_line, Event, EventType, Msg, Obj, WatchStart};
use crate::table::{self, IncludeObject};

pub struct WatchRequest {
    pub res: ResIdx,
    /// The type at `res`, as it was when the watch began.
    pub resource: Arc<ResourceType>,
    pub namespace: Option<String>,
    pub selector: Selector,
    pub start: WatchStart,
    /// `sendInitialEvents=true`: end the initial state with the annotated BOOKMARK.
    pub initial_events_end: bool,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
    pub table: Option<IncludeObject>,
}

type Chunk = Result<Bytes, std::io::Error>;

/// Counts open watches for `Sim::open_watches`.
struct OpenGuard(Arc<Inner>);

impl OpenGuard {
    fn new(inner: Arc<Inner>) -> OpenGuard {
        inner.open_watches.fetch_add(1, Ordering::SeqCst);
        OpenGuard(inner)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

fn streaming_response(rx: mpsc::Receiver<Chunk>) -> Response {
    let mut resp = (StatusCode::OK, Body::from_stream(ReceiverStream::new(rx))).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

/// Start a watch and return its streaming response.
pub fn serve(inner: Arc<Inner>, req: WatchRequest) -> Response {
    let buffer = inner.config.watch_buffer.max(8);
    let (tx, rx) = mpsc::channel::<Chunk>(buffer);
    match inner
        .store
        .subscribe(req.res, clone_start(&req.start), req.namespace.as_deref())
    {
        Ok(sub) => {
            let task = Watcher {
                inner: inner.clone(),
                tx,
                first_table: true,
                pos: sub.rev,
                floor: match req.start {
                    WatchStart::Now => sub.rev,
                    WatchStart::After(from) => from,
                },
                req,
            };
            tokio::spawn(task.run(sub.initial, sub.replay, sub.rx));
        }
        Err(expired) => {
            let err = ApiError::expired(format!(
                "too old resource version: {} (the oldest still available is {}); list again and watch from the list's resourceVersion",
                inner.store.rv_string(expired.requested),
                inner.store.rv_string(expired.oldest)
            ));
            let line = error_line(&err);
            // The channel is empty and has room for one line.
            let _ = tx.try_send(Ok(line));
        }
    }
    streaming_response(rx)
}

fn clone_start(s: &WatchStart) -> WatchStart {
    match s {
        WatchStart::Now => WatchStart::Now,
        WatchStart::After(r) => WatchStart::After(*r),
    }
}

fn error_line(err: &ApiError) -> Bytes {
    let v = json!({"type": "ERROR", "object": err.to_status()});
    let mut b = serde_json::to_vec(&v).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

struct Watcher {
    inner: Arc<Inner>,
    tx: mpsc::Sender<Chunk>,
    req: WatchRequest,
    first_table: bool,
    /// Every event up to this revision has been considered for this watcher.
    pos: u64,
    /// Events at or below this revision were already covered (initial state
    /// or the client's resourceVersion).
    floor: u64,
}

enum Flow {
    Continue,
    Stop,
}

impl Watcher {
    async fn run(
        mut self,
        initial: Vec<Arc<Obj>>,
        replay: Vec<Arc<Event>>,
        mut rx: broadcast::Receiver<Msg>,
    ) {
        let _guard = OpenGuard::new(self.inner.clone());
        // timeoutSeconds counts from the request, initial events included.
        let deadline = self.req.timeout.map(|t| tokio::time::Instant::now() + t);
        let plural = self.req.resource.qualified();
        tracing::debug!(resource = %plural, "watch opened");
        for obj in initial {
            if self.req.selector.matches(&obj.sel) {
                if let Flow::Stop = self.send_event(EventType::Added, &obj).await {
                    return;
                }
            }
        }
        if self.req.initial_events_end {
            let line = self.bookmark_line(true);
            if self.send(line).await.is_err() {
                return;
            }
        }
        for e in replay {
            if let Flow::Stop = self.handle(&e).await {
                return;
            }
        }
        let period = self
            .inner
            .config
            .bookmark_interval
            .max(Duration::from_millis(50));
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            tokio::select! {
                _ = self.tx.closed() => return,
                _ = sleep_until(deadline) => return,
                _ = ticker.tick(), if self.req.bookmarks => {
                    let line = self.bookmark_line(false);
                    if self.send(line).await.is_err() { return; }
                }
                msg = rx.recv() => {
                    if let Flow::Stop = self.on_msg(msg, &plural).await { return; }
                }
            }
        }
    }

    /// What the store's broadcast brought: an event to filter and send, or
    /// a control message that may end this watch.
    async fn on_msg(
        &mut self,
        msg: Result<Msg, broadcast::error::RecvError>,
        plural: &str,
    ) -> Flow {
        match msg {
            Ok(Msg::Event(e)) => self.handle(&e).await,
            Ok(Msg::Compacted) => {
                let err = ApiError::expired(format!(
                    "too old resource version: {} (history was compacted by a simulated fault); list again",
                    self.inner.store.rv_string(self.pos)
                ));
                let _ = self.send(error_line(&err)).await;
                Flow::Stop
            }
            Ok(Msg::Expire(res)) if res == self.req.res => {
                let err = ApiError::expired(format!(
                    "too old resource version: {} (this resource's watches were expired by a simulated fault); list again",
                    self.inner.store.rv_string(self.pos)
                ));
                let _ = self.send(error_line(&err)).await;
                Flow::Stop
            }
            Ok(Msg::Expire(_)) => Flow::Continue,
            Ok(Msg::Close(res)) if res == self.req.res => Flow::Stop,
            Ok(Msg::Close(_)) => Flow::Continue,
            Ok(Msg::DropWatches) => Flow::Stop,
            Ok(Msg::Restart) => {
                let _ = self
                    .tx
                    .send(Err(std::io::Error::other("simulated apiserver restart")))
                    .await;
                Flow::Stop
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(resource = %plural, behind = n, "closing a watch that cannot keep up: it fell {n} events behind the buffer; the client should re-watch from its last resourceVersion");
                let err = ApiError::internal(format!("watch closed: this client fell {n} events behind; re-watch from the last resourceVersion you saw"));
                let _ = self.tx.try_send(Ok(error_line(&err)));
                Flow::Stop
            }
            Err(broadcast::error::RecvError::Closed) => Flow::Stop,
        }
    }

    /// Send one line. A client whose buffer stays full for
    /// `slow_watch_timeout` is too slow: close its watch instead of queueing.
    async fn send(&self, line: Bytes) -> Result<(), ()> {
        match tokio::time::timeout(self.inner.config.slow_watch_timeout, self.tx.send(Ok(line)))
            .await
        {
            Ok(result) => result.map_err(|_| ()),
            Err(_) => {
                tracing::warn!(
                    resource = %self.req.resource.qualified(),
                    "closing a watch that cannot keep up: its buffer of {} events stayed full for {:?}; the client should re-watch from its last resourceVersion",
                    self.inner.config.watch_buffer,
                    self.inner.config.slow_watch_timeout
                );
                Err(())
            }
        }
    }

    /// Apply the resource/namespace/selector filter with transitions.
    async fn handle(&mut self, e: &Arc<Event>) -> Flow {
        self.pos = self.pos.max(e.rev);
        if e.res != self.req.res || e.rev <= self.floor {
            return Flow::Continue;
        }
        if let Some(ns) = &self.req.namespace {
            if e.obj.sel["metadata"]["namespace"].as_str() != Some(ns.as_str()) {
                return Flow::Continue;
            }
        }
        let sel = &self.req.selector;
        if sel.is_empty() {
            if self.req.table.is_none() && !self.inner.faults.garbage_pending() {
                return match self.send(e.line.clone()).await {
                    Ok(()) => Flow::Continue,
                    Err(()) => Flow::Stop,
                };
            }
            return self.send_event(e.etype, &e.obj).await;
        }
        let now = sel.matches(&e.obj.sel);
        let before = e.prev.as_ref().is_some_and(|p| sel.matches(&p.sel));
        match e.etype {
            EventType::Added if now => self.send_event(EventType::Added, &e.obj).await,
            EventType::Deleted if before => self.send_event(EventType::Deleted, &e.obj).await,
            EventType::Modified => match (before, now) {
                (true, true) => self.send_event(EventType::Modified, &e.obj).await,
                (false, true) => self.send_event(EventType::Added, &e.obj).await,
                (true, false) => {
                    // The object as it last matched, stamped with this event's revision.
                    let Some(prev) = &e.prev else {
                        return Flow::Continue;
                    };
                    let gone = prev.restamped(self.inner.store.prefix(), e.rev);
                    self.send_event(EventType::Deleted, &gone).await
                }
                (false, false) => Flow::Continue,
            },
            _ => Flow::Continue,
        }
    }

    async fn send_event(&mut self, etype: EventType, obj: &Obj) -> Flow {
        if take(&self.inner.faults.garbage_lines) {
            tracing::info!("fault: sending a watch line that is not JSON, then closing the watch");
            let _ = self
                .send(Bytes::from_static(
                    b"{\"type\":\"MODIFIED\",\"object\":{<<simulated garbage line>>\n",
                ))
                .await;
            return Flow::Stop;
        }
        let line = match self.req.table {
            None => event_line(etype, obj),
            Some(include) => {
                let plural = self.req.resource.printed_as();
                let row = table::row_json(plural, &obj.value(), &obj.json, include);
                let t = table::table_json(
                    plural,
                    &[row],
                    &json!({"resourceVersion": obj.sel["metadata"]["resourceVersion"]}),
                    self.first_table,
                );
                self.first_table = false;
                let mut b = Vec::with_capacity(t.len() + 32);
                b.extend_from_slice(b"{\"type\":\"");
                b.extend_from_slice(etype.as_str().as_bytes());
                b.extend_from_slice(b"\",\"object\":");
                b.extend_from_slice(&t);
                b.extend_from_slice(b"}\n");
                Bytes::from(b)
            }
        };
        match self.send(line).await {
            Ok(()) => Flow::Continue,
            Err(()) => Flow::Stop,
        }
    }

    fn bookmark_line(&self, initial_end: bool) -> Bytes {
        let r = &self.req.resource;
        let mut meta = json!({"resourceVersion": self.inner.store.rv_string(self.pos)});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj: Value = json!({"kind": r.kind, "apiVersion": r.api_version(), "metadata": meta});
        let mut b =
            serde_json::to_vec(&json!({"type": "BOOKMARK", "object": obj})).unwrap_or_default();
        b.push(b'\n');
        Bytes::from(b)
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending::<()>().await,
    }
}
