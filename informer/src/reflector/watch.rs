//! The WATCH stream, in its two uses: a streaming list (`sendInitialEvents`,
//! collecting objects until the `initial-events-end` bookmark) and a plain
//! watch from a resourceVersion. Bytes go through the line framer; each line
//! is one event; what ends or breaks a stream decides the next step.

use std::collections::BTreeMap;

use super::printing::PrintedSoFar;
use super::protocol::{RequestId, RequestKind, StoreOp};
use super::request::ListFrom;
use super::state::{CatchUp, Next, Sent, State, Stream, StreamingList, WatchState};
use super::status::{Op, Phase, ReflectorError};
use super::timing::{SHORT_WATCH, WATCH_GRACE_SECS};
use super::Reflector;
use crate::clock::Millis;
use crate::event::{decode_event_with_columns, WatchEvent};
use crate::framer::{FramerError, LineFramer};
use crate::object::ObjectRef;
use crate::table::ColumnDefinition;
use deltascope_facts::Status;

impl Reflector {
    fn open_stream(&mut self, now: Millis) -> (RequestId, u64, Stream) {
        let id = self.new_id();
        // client-go: minWatchTimeout * (1 + rand) with 5 min → [300, 600) s
        let timeout = self.rng.range(300, 600);
        let stream = Stream {
            sent: Sent::new(id, now),
            hard_deadline: now.saturating_add((timeout + WATCH_GRACE_SECS) * 1000),
            framer: LineFramer::new(self.config.max_line_bytes),
            events: 0,
        };
        (id, timeout, stream)
    }

    pub(super) fn send_streaming_list(&mut self, from: ListFrom, now: Millis) {
        let (id, timeout, stream) = self.open_stream(now);
        let request = self.requests.streaming_list(&from, timeout);
        self.status.phase = Phase::Listing {
            pages: 0,
            items: 0,
            bytes: 0,
        };
        self.state = State::StreamingList(StreamingList {
            stream,
            from,
            objects: BTreeMap::new(),
            rv: String::new(),
            printed: PrintedSoFar::default(),
            last_event: None,
            bytes: 0,
        });
        self.send(id, RequestKind::Watch, request);
    }

    pub(super) fn send_watch(&mut self, rv: String, now: Millis) {
        if self.watches_started > 0 {
            self.status.watch_restarts += 1;
        }
        self.watches_started += 1;
        let (id, timeout, stream) = self.open_stream(now);
        let request = self.requests.watch(&rv, timeout);
        if let Some(catch_up) = &mut self.catch_up {
            *catch_up = CatchUp {
                sent_at: now,
                last_activity: now,
            };
        }
        self.status.phase = Phase::Watching;
        self.state = State::Watching(WatchState { stream, rv });
        self.send(id, RequestKind::Watch, request);
    }

    fn stream_mut(&mut self, id: RequestId) -> Option<&mut Stream> {
        let stream = match &mut self.state {
            State::StreamingList(s) => &mut s.stream,
            State::Watching(w) => &mut w.stream,
            _ => return None,
        };
        (stream.sent.id == id).then_some(stream)
    }

    /// Where to go when the current stream breaks: a streaming list starts
    /// over, a watch re-watches from its last resourceVersion.
    fn after_broken_stream(&self) -> Next {
        match &self.state {
            State::StreamingList(s) => Next::List(s.from.clone()),
            State::Watching(w) => Next::Watch(w.rv.clone()),
            _ => Next::List(ListFrom::Any),
        }
    }

    pub(super) fn stream_chunk(&mut self, id: RequestId, bytes: &[u8], now: Millis) {
        let Some(stream) = self.stream_mut(id) else {
            return;
        };
        if !stream.sent.ok() {
            stream.sent.keep_error_bytes(bytes);
            return;
        }
        let mut framer = std::mem::take(&mut stream.framer);
        if let Some(catch_up) = &mut self.catch_up {
            catch_up.last_activity = now;
        }
        if let State::StreamingList(s) = &mut self.state {
            if s.last_event.is_some() {
                s.last_event = Some(now);
            }
        }
        let res = framer.push(bytes, |line| {
            if self.current_id() == Some(id) {
                self.on_watch_line(id, line, now);
            }
        });
        if let Some(stream) = self.stream_mut(id) {
            stream.framer = framer;
            if let Err(e) = res {
                self.watch_framing_error(e, now);
            }
        }
    }

    fn watch_framing_error(&mut self, source: FramerError, now: Millis) {
        let next = self.after_broken_stream();
        self.cancel_current();
        let err = ReflectorError::Framing {
            op: Op::Watch,
            resource: self.resource_name.clone(),
            source,
        };
        self.fail(err, next, None, now);
    }

    fn on_watch_line(&mut self, id: RequestId, line: &[u8], now: Millis) {
        let (event, columns) = match decode_event_with_columns(line) {
            Ok(e) => e,
            Err(e) => {
                // a line we cannot read: report, drop this watch and re-watch
                // from the last good RV (or restart the streaming list)
                let next = self.after_broken_stream();
                self.cancel_current();
                let err = ReflectorError::Decode {
                    op: Op::Watch,
                    resource: self.resource_name.clone(),
                    message: e.to_string(),
                };
                self.fail(err, next, None, now);
                return;
            }
        };
        if self.stream_mut(id).is_none() {
            return;
        }
        if let WatchEvent::Error(status) = event {
            self.watch_error_event(status, now);
            return;
        }
        self.status.events += 1;
        match &mut self.state {
            State::StreamingList(s) => {
                s.stream.events += 1;
                s.last_event = Some(now);
                s.bytes += line.len() as u64;
                self.initial_event(event, columns, now);
            }
            State::Watching(w) => {
                w.stream.events += 1;
                self.watched_event(event, columns);
            }
            _ => {}
        }
    }

    /// One event of a watch: a store operation (a BOOKMARK none), and the
    /// resourceVersion the watch goes on from.
    fn watched_event(&mut self, event: WatchEvent, columns: Option<Vec<ColumnDefinition>>) {
        if let Some(defs) = &columns {
            self.columns.adopt_if_unknown(defs);
        }
        let mut bookmark = false;
        let rv = match event {
            WatchEvent::Added(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Add(o));
                rv
            }
            WatchEvent::Modified(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Update(o));
                rv
            }
            WatchEvent::Deleted(o) => {
                let rv = o.resource_version.clone();
                self.ops.push_back(StoreOp::Delete(o));
                rv
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => {
                // the server says the watch is synced here
                bookmark = true;
                resource_version
            }
            WatchEvent::Error(_) => String::new(),
        };
        if !rv.is_empty() {
            self.status.last_resource_version.clone_from(&rv);
            if let State::Watching(w) = &mut self.state {
                w.rv = rv;
            }
        }
        if bookmark {
            self.caught_up();
        }
    }

    /// One event of a streaming list's initial events.
    fn initial_event(
        &mut self,
        event: WatchEvent,
        columns: Option<Vec<ColumnDefinition>>,
        now: Millis,
    ) {
        let State::StreamingList(s) = &mut self.state else {
            return;
        };
        match &event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                s.printed.saw(o.cells.is_some(), columns, &mut self.columns)
            }
            _ => s.printed.saw_columns(columns, &mut self.columns),
        }
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                s.rv.clone_from(&o.resource_version);
                s.objects.insert(o.key.clone(), o);
            }
            WatchEvent::Deleted(o) => {
                s.rv.clone_from(&o.resource_version);
                s.objects.remove(&o.key);
            }
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                if !resource_version.is_empty() {
                    s.rv = resource_version;
                }
                if initial_events_end {
                    self.streaming_list_done(now);
                    return;
                }
                // a periodic bookmark before the end of the initial events:
                // the server watches as if it never heard sendInitialEvents
                self.abandon_streaming_list(now);
                return;
            }
            WatchEvent::Error(_) => {}
        }
        self.status.phase = Phase::Listing {
            pages: 0,
            items: s.objects.len() as u64,
            bytes: s.bytes,
        };
    }

    /// The `initial-events-end` bookmark: the collected objects replace the
    /// store, and the same stream goes on as a watch.
    fn streaming_list_done(&mut self, now: Millis) {
        let State::StreamingList(s) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        s.printed.finish(&mut self.columns);
        let items: Vec<ObjectRef> = s.objects.into_values().collect();
        self.list_done(items, &s.rv, now);
        self.watches_started += 1;
        self.status.phase = Phase::Watching;
        self.state = State::Watching(WatchState {
            stream: s.stream,
            rv: s.rv,
        });
    }

    /// An ERROR event inside a stream that opened fine.
    fn watch_error_event(&mut self, status: Status, now: Millis) {
        self.cancel_current();
        let err = ReflectorError::WatchEvent {
            resource: self.resource_name.clone(),
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        };
        let next = match &self.state {
            // a streaming list would ask for the same RV again
            State::StreamingList(_) if status.is_expired() || status.is_too_large_rv() => {
                Next::List(ListFrom::Latest)
            }
            State::StreamingList(s) => Next::List(s.from.clone()),
            State::Watching(_) if status.is_too_large_rv() => Next::List(ListFrom::Latest),
            // client-go: an expired watch relists from the last seen RV (a
            // LIST at that RV returns data at least that fresh); throttling
            // and internal errors retry the watch; anything else relists.
            State::Watching(w)
                if !status.is_expired() && (status.code == 429 || status.code >= 500) =>
            {
                Next::Watch(w.rv.clone())
            }
            State::Watching(w) => Next::List(ListFrom::after(&w.rv)),
            _ => return,
        };
        self.fail(err, next, None, now);
    }

    /// The stream's body ended.
    pub(super) fn stream_end(&mut self, id: RequestId, now: Millis) {
        let Some(stream) = self.stream_mut(id) else {
            return;
        };
        if !stream.sent.ok() {
            self.http_failure(now);
            return;
        }
        match stream.framer.finish() {
            Ok(Some(line)) => self.on_watch_line(id, &line, now),
            Ok(None) => {}
            Err(e) => {
                self.watch_framing_error(e, now);
                return;
            }
        }
        // the last line may have changed the state
        let Some(stream) = self.stream_mut(id) else {
            return;
        };
        let lasted = now.saturating_sub(stream.sent.sent_at);
        let short = stream.events == 0 && lasted < SHORT_WATCH;
        let next = match &self.state {
            State::StreamingList(s) => Next::List(s.from.clone()),
            State::Watching(w) => Next::Watch(w.rv.clone()),
            _ => return,
        };
        if short {
            let err = ReflectorError::ShortWatch {
                resource: self.resource_name.clone(),
                millis: lasted,
            };
            let from = match next {
                Next::List(from) => from,
                Next::Watch(rv) => ListFrom::after(&rv),
            };
            self.fail(err, Next::List(from), None, now);
            return;
        }
        match next {
            // closed before the initial events ended: start over
            Next::List(from) => self.begin_list(from, now),
            // clean close: re-watch from the last RV, no relist
            Next::Watch(rv) => self.send_watch(rv, now),
        }
    }

    /// The server refused a streaming list.
    pub(super) fn streaming_list_refused(&mut self, s: StreamingList, now: Millis) {
        let (err, status) = self.http_error(Op::Watch, &s.stream.sent);
        let code = s.stream.sent.http_status.unwrap_or(0);
        if matches!(code, 400 | 403 | 422) {
            // the server rejects sendInitialEvents: fall back to list+watch
            self.status.last_error = Some(err);
            self.fallback_to_paginated(s.from, now);
            return;
        }
        let from = if code == 410 || status.is_expired() || status.is_too_large_rv() {
            // a streaming list would ask for the same RV again
            ListFrom::Latest
        } else {
            s.from
        };
        let retry_after = if code == 429 {
            s.stream.sent.retry_after
        } else {
            None
        };
        self.fail(err, Next::List(from), retry_after, now);
    }

    /// The server refused a watch.
    pub(super) fn watch_refused(&mut self, w: WatchState, now: Millis) {
        let (err, status) = self.http_error(Op::Watch, &w.stream.sent);
        let code = w.stream.sent.http_status.unwrap_or(0);
        let next = if status.is_too_large_rv() {
            Next::List(ListFrom::Latest)
        } else if code == 410 || status.is_expired() {
            Next::List(ListFrom::after(&w.rv))
        } else {
            Next::Watch(w.rv)
        };
        let retry_after = match next {
            Next::Watch(_) if code == 429 => w.stream.sent.retry_after,
            _ => None,
        };
        self.fail(err, next, retry_after, now);
    }
}
