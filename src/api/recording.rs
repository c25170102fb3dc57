//! Recordings: the history as NDJSON of watch events with their times,
//! which the page exports and imports, and the script that answers the
//! replaying informer's list and watch from one. A data format below the
//! transport (which replays it) and the views (which export it); the store
//! at a moment, rebuilt from the history, is `crate::model::past`.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::informer::{DeltaType, History, Millis};

/// One line of a recording: a watch event with the page time it was seen at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// Milliseconds since the first recorded event.
    pub at: Millis,
    /// `ADDED`, `MODIFIED` or `DELETED`, as a watch stream says it.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The client-go delta type it came from (`Added`, `Replaced`, …), for the reader.
    #[serde(rename = "deltaType")]
    pub delta_type: String,
    pub object: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordingError {
    #[error("line {line} of the recording is not a recorded watch event: {message}")]
    BadLine { line: usize, message: String },
    #[error("line {line} has event type {event_type:?}; a recording holds ADDED, MODIFIED and DELETED events")]
    BadType { line: usize, event_type: String },
    #[error("the recording is empty")]
    Empty,
}

/// The history (or the part of it from `from` to `to`) as NDJSON. Relists and
/// resyncs become ADDED for keys not yet seen in the recording and MODIFIED
/// otherwise, so replaying the file through a watch rebuilds the same store.
pub fn export_ndjson(history: &History, from: Millis, to: Millis) -> String {
    let mut out = String::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut start: Option<Millis> = None;
    for entry in history.range(from, to) {
        let event_type = match entry.kind {
            DeltaType::Deleted => "DELETED",
            _ if seen.contains(entry.key()) => "MODIFIED",
            _ => "ADDED",
        };
        if entry.kind == DeltaType::Deleted {
            seen.remove(entry.key());
        } else {
            seen.insert(entry.key());
        }
        let start = *start.get_or_insert(entry.at);
        let line = RecordedEvent {
            at: entry.at - start,
            event_type: event_type.to_string(),
            delta_type: format!("{:?}", entry.kind),
            object: entry.object.value.to_json(),
        };
        if let Ok(text) = serde_json::to_string(&line) {
            out.push_str(&text);
            out.push('\n');
        }
    }
    out
}

/// Parses a recording; errors name the line.
pub fn parse_recording(text: &str) -> Result<Vec<RecordedEvent>, RecordingError> {
    let mut events = Vec::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let event: RecordedEvent =
            serde_json::from_str(line).map_err(|e| RecordingError::BadLine {
                line: index + 1,
                message: e.to_string(),
            })?;
        if !matches!(event.event_type.as_str(), "ADDED" | "MODIFIED" | "DELETED") {
            return Err(RecordingError::BadType {
                line: index + 1,
                event_type: event.event_type,
            });
        }
        events.push(event);
    }
    if events.is_empty() {
        return Err(RecordingError::Empty);
    }
    Ok(events)
}

/// The watch-stream line a recorded event replays as.
pub fn watch_line(event: &RecordedEvent) -> String {
    let mut line =
        serde_json::json!({"type": event.event_type, "object": event.object}).to_string();
    line.push('\n');
    line
}

/// The list body a replayed relist answers with (any resourceVersion does:
/// the replay ignores the one the reflector watches from).
fn list_body(objects: &[&Value]) -> String {
    serde_json::json!({
        "kind": "List",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "0"},
        "items": objects,
    })
    .to_string()
}

/// What ends a replayed watch where the recording relisted: the reflector
/// relists as it did live, so the relist's deltas come out of the DeltaFIFO
/// as Replaced (and tombstone Deleted) again.
const RELIST_LINE: &str = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":410,\"reason\":\"Expired\",\"message\":\"the recording relisted here\"}}\n";

fn recorded_key(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// One step of a replay: a relist (the recording's run of Replaced deltas)
/// or one watch event.
#[derive(Debug, Clone, PartialEq)]
enum ReplayStep {
    Relist { at: Millis, objects: Vec<Value> },
    Event(RecordedEvent),
}

/// Plays a recording to an informer as a server would (sans-IO: the page's
/// replay transport does the waiting and the feeding). Each run of Replaced
/// deltas is served as a list — the initial one, or after a 410 that ends
/// the watch where the live session relisted — so a replay records the same
/// delta types as the live session: Replaced for relisted objects and
/// tombstone Deleted for those the relist found gone (those Deleted lines in
/// the file are left out: the DeltaFIFO makes them again). A relist's deltas
/// share one time (they are applied when its list ends), which is how two
/// relists in a row are told apart. Everything else
/// is a watch event. Resync (Sync) deltas replay as updates.
#[derive(Debug, Clone)]
pub struct ReplayScript {
    steps: Vec<ReplayStep>,
    next: usize,
}

/// What the replayed watch sends next, and when (ms after the replay began,
/// at speed 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchItem {
    pub at: Millis,
    pub line: String,
    /// The line ends the watch (a relist follows); do not [`ReplayScript::sent`] it.
    pub ends_watch: bool,
}

impl ReplayScript {
    pub fn new(events: Vec<RecordedEvent>) -> ReplayScript {
        let mut steps: Vec<ReplayStep> = Vec::new();
        let mut relisted: HashSet<String> = HashSet::new();
        // after a relist: its tombstones, which the DeltaFIFO recreates
        let mut after_relist = false;
        for event in events {
            let key = recorded_key(&event.object);
            // One relist's deltas are all applied at one moment (the list's
            // end), so a new time starts a new relist.
            let run_at = match steps.last() {
                Some(ReplayStep::Relist { at, .. }) if after_relist => Some(*at),
                _ => None,
            };
            if event.delta_type == "Replaced" {
                let in_run = run_at == Some(event.at);
                if in_run && !relisted.contains(&key) {
                    if let Some(ReplayStep::Relist { objects, .. }) = steps.last_mut() {
                        objects.push(event.object);
                    }
                } else {
                    relisted.clear();
                    steps.push(ReplayStep::Relist {
                        at: event.at,
                        objects: vec![event.object],
                    });
                }
                relisted.insert(key);
                after_relist = true;
                continue;
            }
            if run_at == Some(event.at) && event.event_type == "DELETED" && !relisted.contains(&key)
            {
                continue;
            }
            after_relist = false;
            relisted.clear();
            steps.push(ReplayStep::Event(event));
        }
        ReplayScript { steps, next: 0 }
    }

    /// The body answering a list request: the pending relist, or an empty
    /// list when the recording does not start with one.
    pub fn answer_list(&mut self) -> String {
        match self.steps.get(self.next) {
            Some(ReplayStep::Relist { objects, .. }) => {
                self.next += 1;
                list_body(&objects.iter().collect::<Vec<_>>())
            }
            _ => list_body(&[]),
        }
    }

    /// The next line of the watch, if the recording has more.
    pub fn next_watch_item(&self) -> Option<WatchItem> {
        match self.steps.get(self.next)? {
            ReplayStep::Event(event) => Some(WatchItem {
                at: event.at,
                line: watch_line(event),
                ends_watch: false,
            }),
            ReplayStep::Relist { at, .. } => Some(WatchItem {
                at: *at,
                line: RELIST_LINE.to_string(),
                ends_watch: true,
            }),
        }
    }

    /// The informer took the item [`ReplayScript::next_watch_item`] gave.
    pub fn sent(&mut self) {
        if matches!(self.steps.get(self.next), Some(ReplayStep::Event(_))) {
            self.next += 1;
        }
    }

    /// Every step has been played.
    pub fn is_done(&self) -> bool {
        self.next >= self.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::HistoryEntry;
    use crate::informer::Input;
    use crate::informer::{HistoryConfig, KubeObject};
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn object(name: &str, rv: u64) -> Arc<KubeObject> {
        let value = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": rv.to_string()}});
        Arc::new(KubeObject::from_value(value).expect("valid object"))
    }

    proptest! {
        /// Export → parse keeps every delta of the range, in order, with its
        /// object, delta type and time (relative to the first).
        #[test]
        fn export_then_import_preserves_every_delta(
            ops in proptest::collection::vec((0u8..5, 0u8..6, 0u64..50), 1..60),
            cut in 0usize..60,
        ) {
            let kinds = [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted, DeltaType::Replaced, DeltaType::Sync];
            let mut history = History::new(HistoryConfig::default());
            let mut now = 1_000;
            for (rv, (kind, name, advance)) in ops.iter().enumerate() {
                now += advance;
                let obj = object(&format!("p{name}"), rv as u64 + 1);
                history.record(now, kinds[*kind as usize], obj.clone(), false, &obj.key);
            }
            // A range starting at some delta's time, to the end.
            let from = history.iter().nth(cut % history.len()).map_or(0, |e| e.at);
            let expected: Vec<&HistoryEntry> = history.range(from, Millis::MAX).collect();
            let events = parse_recording(&export_ndjson(&history, from, Millis::MAX)).expect("parses");
            prop_assert_eq!(events.len(), expected.len());
            for (event, entry) in events.iter().zip(&expected) {
                prop_assert_eq!(&entry.object.value, &event.object);
                prop_assert_eq!(&event.delta_type, &format!("{:?}", entry.kind));
                prop_assert_eq!(event.at, entry.at - expected[0].at);
                prop_assert_eq!(event.event_type == "DELETED", entry.kind == DeltaType::Deleted);
            }
        }
    }

    #[test]
    fn bad_recordings_name_the_line() {
        assert_eq!(parse_recording("\n  \n"), Err(RecordingError::Empty));
        let err = parse_recording(
            "{\"at\":0,\"type\":\"ADDED\",\"deltaType\":\"Added\",\"object\":{}}\nnot json",
        )
        .unwrap_err();
        assert!(
            matches!(err, RecordingError::BadLine { line: 2, .. }),
            "{err}"
        );
        let err =
            parse_recording("{\"at\":0,\"type\":\"BOOKMARK\",\"deltaType\":\"x\",\"object\":{}}")
                .unwrap_err();
        assert!(matches!(err, RecordingError::BadType { line: 1, .. }));
    }

    /// A scripted API server for one informer, natively: answers list and
    /// watch requests and pushes watch lines; `pending` holds the lines for
    /// the open watch.
    mod native {
        use crate::informer::{
            Action, Informer, InformerConfig, Input, Millis, RequestId, RequestKind, ResourceRef,
        };

        pub fn informer() -> Informer {
            let mut config = InformerConfig::new(ResourceRef::new("", "v1", "pods", true));
            config.streaming_list = false;
            config.resync_period = None;
            Informer::new(config)
        }

        /// Runs the informer's actions until it sends a request, advancing
        /// the clock through backoffs.
        pub fn next_request(inf: &mut Informer, now: &mut Millis) -> (RequestId, RequestKind) {
            for _ in 0..1_000 {
                while let Some(action) = inf.poll_action() {
                    match action {
                        Action::Send { id, kind, .. } => return (id, kind),
                        Action::Cancel { .. } => {}
                    }
                }
                *now = inf.poll_timeout().map_or(*now + 100, |at| at.max(*now));
                inf.handle(Input::Tick, *now);
            }
            panic!("the informer never asked for a request");
        }

        pub fn respond(inf: &mut Informer, id: RequestId, body: &str, end: bool, now: Millis) {
            inf.handle(
                Input::ResponseStarted {
                    id,
                    status: 200,
                    retry_after_secs: None,
                },
                now,
            );
            if !body.is_empty() {
                inf.handle(
                    Input::BodyChunk {
                        id,
                        bytes: body.as_bytes(),
                    },
                    now,
                );
            }
            if end {
                inf.handle(Input::BodyEnd { id }, now);
            }
        }
    }

    fn pod_json(name: u8, rv: u64) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{name}"), "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": rv.to_string()}})
    }

    /// (delta type, key, resourceVersion, tombstone) of every held delta.
    fn deltas_of(history: &History) -> Vec<(DeltaType, String, String, bool)> {
        history
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.key().to_string(),
                    e.resource_version().to_string(),
                    e.tombstone,
                )
            })
            .collect()
    }

    /// Drives `script` into a fresh informer the way the page's replay
    /// transport does.
    fn replay_natively(mut script: ReplayScript) -> crate::informer::Informer {
        let mut inf = native::informer();
        let mut now: Millis = 0;
        inf.start(now);
        for _ in 0..1_000 {
            let (id, kind) = native::next_request(&mut inf, &mut now);
            match kind {
                crate::informer::RequestKind::List => {
                    native::respond(&mut inf, id, &script.answer_list(), true, now)
                }
                crate::informer::RequestKind::Watch => {
                    native::respond(&mut inf, id, "", false, now);
                    while let Some(item) = script.next_watch_item() {
                        now = now.max(item.at);
                        inf.handle(
                            Input::BodyChunk {
                                id,
                                bytes: item.line.as_bytes(),
                            },
                            now,
                        );
                        if item.ends_watch {
                            break;
                        }
                        script.sent();
                    }
                    if script.is_done() {
                        return inf;
                    }
                }
            }
        }
        panic!("the replay did not finish");
    }

    #[derive(Debug, Clone)]
    enum LiveOp {
        Put(u8),
        Delete(u8),
        /// the watch expires; the informer relists
        Expire,
    }

    fn live_op() -> impl Strategy<Value = LiveOp> {
        prop_oneof![
            4 => (0u8..8).prop_map(LiveOp::Put),
            2 => (0u8..8).prop_map(LiveOp::Delete),
            1 => Just(LiveOp::Expire),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// A live session with watch events and relists (which make Replaced
        /// and tombstone Deleted deltas), exported and replayed through a
        /// fresh informer, records the same deltas — same types, keys,
        /// resourceVersions and tombstones, in the same order — and ends
        /// with the same store digest.
        #[test]
        fn replay_records_the_live_delta_types(
            initial in proptest::collection::btree_set(0u8..8, 0..5),
            ops in proptest::collection::vec(live_op(), 1..40),
        ) {
            use crate::informer::RequestKind;
            let mut server: BTreeMap<u8, u64> = BTreeMap::new();
            let mut rv = 1u64;
            for name in initial {
                rv += 1;
                server.insert(name, rv);
            }
            let list_of = |server: &BTreeMap<u8, u64>, rv: u64| {
                let items: Vec<Value> = server.iter().map(|(n, rv)| pod_json(*n, *rv)).collect();
                json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()}, "items": items}).to_string()
            };
            let mut live = native::informer();
            let mut now: Millis = 1_000;
            live.start(now);
            let (id, kind) = native::next_request(&mut live, &mut now);
            prop_assert_eq!(kind, RequestKind::List);
            native::respond(&mut live, id, &list_of(&server, rv), true, now);
            let (mut watch, kind) = native::next_request(&mut live, &mut now);
            prop_assert_eq!(kind, RequestKind::Watch);
            native::respond(&mut live, watch, "", false, now);
            for op in ops {
                now += 7;
                let line = match op {
                    LiveOp::Put(name) => {
                        rv += 1;
                        let kind = if server.insert(name, rv).is_some() { "MODIFIED" } else { "ADDED" };
                        json!({"type": kind, "object": pod_json(name, rv)}).to_string()
                    }
                    LiveOp::Delete(name) => match server.remove(&name) {
                        Some(old) => {
                            rv += 1;
                            json!({"type": "DELETED", "object": pod_json(name, old)}).to_string()
                        }
                        None => continue,
                    },
                    LiveOp::Expire => {
                        // changes the watch will never report: only the relist sees them
                        rv += 1;
                        server.insert(7, rv);
                        server.remove(&0);
                        let gone = json!({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}});
                        live.handle(Input::BodyChunk { id: watch, bytes: format!("{gone}\n").as_bytes() }, now);
                        let (id, kind) = native::next_request(&mut live, &mut now);
                        prop_assert_eq!(kind, RequestKind::List);
                        native::respond(&mut live, id, &list_of(&server, rv), true, now);
                        let (id, kind) = native::next_request(&mut live, &mut now);
                        prop_assert_eq!(kind, RequestKind::Watch);
                        watch = id;
                        native::respond(&mut live, watch, "", false, now);
                        continue;
                    }
                };
                live.handle(Input::BodyChunk { id: watch, bytes: format!("{line}\n").as_bytes() }, now);
            }
            let recording = parse_recording(&export_ndjson(live.history(), 0, Millis::MAX));
            let Ok(events) = recording else {
                // nothing happened at all (empty initial list, no events)
                prop_assert!(live.history().is_empty());
                return Ok(());
            };
            let replayed = replay_natively(ReplayScript::new(events));
            prop_assert_eq!(deltas_of(replayed.history()), deltas_of(live.history()));
            prop_assert_eq!(replayed.store().digest(), live.store().digest());
        }
    }
}
