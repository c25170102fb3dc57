//! Recordings: the history as NDJSON of watch events with their times,
//! which the page exports and imports, and the script that answers the
//! replaying informer's list and watch from one. A data format below the
//! transport (which replays it) and the views (which export it); the store
//! at a moment, rebuilt from the history, is `crate::model::past`.
//!
//! An import also reads what deltascope serve's `GET /_deltascope/history`
//! writes (a *record*): the same lines with serve's fields added (`time`,
//! `resource`, `resourceVersion`, `managers`, `tombstone`; fields the page
//! does not use are accepted and ignored), and gap lines
//! `{"gap":{"from":T,"to":T,"reason":R}}` — spans the recorder did not
//! watch — which the replay skips and [`Recording::gaps`] keeps. A record
//! stores only what a relist changed (Replaced for new or changed objects,
//! tombstones for gone ones), so its replay lists the state recorded so far
//! with those changes applied, not just the changed objects.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::object_record::{ObjectRecord, RecordGap};
use crate::informer::{DeltaType, History, Millis, ObjectRef};
use deltascope_facts::time::format_rfc3339_millis;

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
    /// When serve's recorder received it (RFC 3339): only in a record from
    /// serve, whose relists hold only what changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// A record's deletion found by a relist (the object was gone).
    #[serde(default, skip_serializing_if = "is_false")]
    pub tombstone: bool,
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

/// A span a record says the recorder did not watch, as serve writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RecordedGap {
    /// RFC 3339.
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
    /// `not-running`, `unreachable`, `expired`, `database-unavailable`, `not-kept`.
    #[serde(default)]
    pub reason: String,
}

/// A gap line: `{"gap":{…}}`.
#[derive(Deserialize)]
struct GapLine {
    gap: RecordedGap,
}

/// A recording read for a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Every event, in the file's order.
    pub events: Vec<RecordedEvent>,
    /// The gaps a record from serve states (none in the page's own exports).
    pub gaps: Vec<RecordedGap>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordingError {
    #[error("line {line} of the recording is not a recorded watch event: {message}")]
    BadLine { line: usize, message: String },
    #[error("line {line} has event type {event_type:?}; a recording holds ADDED, MODIFIED and DELETED events")]
    BadType { line: usize, event_type: String },
    #[error("the recording is empty")]
    Empty,
    #[error("the record holds no changes, only {gaps} gap{}", if *gaps == 1 { "" } else { "s" })]
    OnlyGaps { gaps: usize },
}

/// The history (or the part of it from `from` to `to`) as NDJSON. Relists and
/// resyncs become ADDED for keys not yet seen in the recording and MODIFIED
/// otherwise, so replaying the file through a watch rebuilds the same store.
pub fn export_ndjson(history: &History, from: Millis, to: Millis) -> String {
    export_with_record(history, None, from, to)
}

/// [`export_ndjson`] with what serve recorded before the page's own history
/// (`record`, an answer of `GET /_deltascope/history` for the resource):
/// its deltas in the range come first, in serve's order, then the page's
/// own; a version the page holds too (same key and resourceVersion) is
/// written once, the page's. The record's gaps in the range are written as
/// its gap lines, first (an import counts and says them).
pub fn export_with_record(
    history: &History,
    record: Option<&ObjectRecord>,
    from: Millis,
    to: Millis,
) -> String {
    let page: Vec<ExportDelta<'_>> = history
        .range(from, to)
        .map(|entry| ExportDelta {
            at: entry.at,
            kind: entry.kind,
            tombstone: entry.tombstone,
            object: &entry.object,
        })
        .collect();
    let mut out = String::new();
    let Some(record) = record else {
        write_deltas(&mut out, page);
        return out;
    };
    let in_range = |ms: i64| ms >= from as i64 && ms <= to.min(i64::MAX as Millis) as i64;
    for gap in &record.gaps {
        if gap.to_ms >= from as i64 && gap.from_ms <= to.min(i64::MAX as Millis) as i64 {
            push_gap_line(&mut out, gap);
        }
    }
    let held: HashSet<(&str, &str)> = page
        .iter()
        .map(|d| (d.object.key.as_str(), d.object.resource_version.as_str()))
        .collect();
    let recorded = record
        .versions
        .iter()
        .filter(|v| in_range(v.time_ms))
        .filter(|v| !held.contains(&(v.object.key.as_str(), v.resource_version())))
        .map(|v| ExportDelta {
            at: v.time_ms.max(0) as Millis,
            kind: v.kind,
            tombstone: v.tombstone,
            object: &v.object,
        });
    write_deltas(&mut out, recorded.chain(page).collect());
    out
}

/// One delta as an export writes it.
struct ExportDelta<'a> {
    at: Millis,
    kind: DeltaType,
    tombstone: bool,
    object: &'a ObjectRef,
}

/// Writes `deltas` as watch events, their times counted from the first.
fn write_deltas(out: &mut String, deltas: Vec<ExportDelta<'_>>) {
    let mut seen: HashSet<&str> = HashSet::new();
    let start = deltas.first().map_or(0, |d| d.at);
    for delta in &deltas {
        let key = delta.object.key.as_str();
        let gone = delta.kind == DeltaType::Deleted || delta.tombstone;
        let event_type = match () {
            _ if gone => "DELETED",
            _ if seen.contains(key) => "MODIFIED",
            _ => "ADDED",
        };
        if gone {
            seen.remove(key);
        } else {
            seen.insert(key);
        }
        let line = RecordedEvent {
            at: delta.at.saturating_sub(start),
            event_type: event_type.to_string(),
            delta_type: format!("{:?}", delta.kind),
            object: delta.object.value.to_json(),
            time: None,
            tombstone: delta.tombstone,
        };
        if let Ok(text) = serde_json::to_string(&line) {
            out.push_str(&text);
            out.push('\n');
        }
    }
}

/// A record's gap as serve writes it: `{"gap":{"from":T,"to":T,"reason":R}}`.
fn push_gap_line(out: &mut String, gap: &RecordGap) {
    let (Some(from), Some(to)) = (
        format_rfc3339_millis(gap.from_ms),
        format_rfc3339_millis(gap.to_ms),
    ) else {
        return;
    };
    let line = serde_json::json!({"gap": {"from": from, "to": to, "reason": gap.reason}});
    out.push_str(&line.to_string());
    out.push('\n');
}

/// Parses a recording (the page's export, or a record from serve's
/// `GET /_deltascope/history`); errors name the line.
pub fn parse_recording(text: &str) -> Result<Recording, RecordingError> {
    let mut events = Vec::new();
    let mut gaps = Vec::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let event: RecordedEvent = match serde_json::from_slice(line.as_bytes()) {
            Ok(event) => event,
            Err(error) => match serde_json::from_slice::<GapLine>(line.as_bytes()) {
                Ok(gap) => {
                    gaps.push(gap.gap);
                    continue;
                }
                Err(_) => {
                    return Err(RecordingError::BadLine {
                        line: index + 1,
                        message: error.to_string(),
                    })
                }
            },
        };
        if !matches!(event.event_type.as_str(), "ADDED" | "MODIFIED" | "DELETED") {
            return Err(RecordingError::BadType {
                line: index + 1,
                event_type: event.event_type,
            });
        }
        events.push(event);
    }
    match (events.is_empty(), gaps.len()) {
        (true, 0) => Err(RecordingError::Empty),
        (true, gaps) => Err(RecordingError::OnlyGaps { gaps }),
        (false, _) => Ok(Recording { events, gaps }),
    }
}

/// "2 gaps in the record" (the import says it), or nothing without gaps.
pub fn gap_words(gaps: usize) -> Option<String> {
    match gaps {
        0 => None,
        1 => Some("1 gap in the record".to_string()),
        n => Some(format!("{n} gaps in the record")),
    }
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
    Relist {
        at: Millis,
        objects: Vec<Value>,
        /// The keys of the tombstones that followed it in the file.
        gone: Vec<String>,
    },
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
///
/// A record from serve stores only what each relist changed; its lists are
/// the objects recorded so far (kept as the replay goes) with the relist's
/// changes applied, so its store is rebuilt whole.
#[derive(Debug, Clone)]
pub struct ReplayScript {
    steps: Vec<ReplayStep>,
    next: usize,
    /// A record's objects so far, by key (`None` for the page's exports,
    /// whose relists list every object).
    record: Option<BTreeMap<String, Value>>,
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
        let record = events.iter().any(|e| e.time.is_some()).then(BTreeMap::new);
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
                        gone: Vec::new(),
                    });
                }
                relisted.insert(key);
                after_relist = true;
                continue;
            }
            if run_at == Some(event.at) && event.event_type == "DELETED" && !relisted.contains(&key)
            {
                if let Some(ReplayStep::Relist { gone, .. }) = steps.last_mut() {
                    gone.push(key);
                }
                continue;
            }
            after_relist = false;
            relisted.clear();
            steps.push(ReplayStep::Event(event));
        }
        ReplayScript {
            steps,
            next: 0,
            record,
        }
    }

    /// The body answering a list request: the pending relist, or an empty
    /// list when the recording does not start with one (a record: what it
    /// holds so far).
    pub fn answer_list(&mut self) -> String {
        let ReplayScript {
            steps,
            next,
            record,
        } = self;
        match (steps.get(*next), record) {
            (Some(ReplayStep::Relist { objects, .. }), None) => {
                *next += 1;
                list_body(&objects.iter().collect::<Vec<_>>())
            }
            (Some(ReplayStep::Relist { objects, gone, .. }), Some(known)) => {
                *next += 1;
                for key in gone {
                    known.remove(key);
                }
                for object in objects {
                    known.insert(recorded_key(object), object.clone());
                }
                list_body(&known.values().collect::<Vec<_>>())
            }
            (_, None) => list_body(&[]),
            (_, Some(known)) => list_body(&known.values().collect::<Vec<_>>()),
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
        if let Some(ReplayStep::Event(event)) = self.steps.get(self.next) {
            if let Some(known) = &mut self.record {
                let key = recorded_key(&event.object);
                if event.event_type == "DELETED" {
                    known.remove(&key);
                } else {
                    known.insert(key, event.object.clone());
                }
            }
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
            let events = parse_recording(&export_ndjson(&history, from, Millis::MAX)).expect("parses").events;
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
            let Ok(Recording { events, .. }) = recording else {
                // nothing happened at all (empty initial list, no events)
                prop_assert!(live.history().is_empty());
                return Ok(());
            };
            let replayed = replay_natively(ReplayScript::new(events));
            prop_assert_eq!(deltas_of(replayed.history()), deltas_of(live.history()));
            prop_assert_eq!(replayed.store().digest(), live.store().digest());
        }
    }
    /// Lines of `GET /_deltascope/history?resource=deployments.apps` exactly
    /// as serve wrote them (`deltascope serve --demo --history sqlite:…`,
    /// with two expire-watches faults): four objects of the first list, two
    /// updates, the two `expired` gaps, and the one object the relist after
    /// them found changed.
    const RECORD: &str = include_str!("../../tests/data/history-deployments.ndjson");

    /// (key, resourceVersion) of every object in the informer's store.
    fn store_of(informer: &crate::informer::Informer) -> Vec<(String, String)> {
        informer
            .store()
            .list()
            .map(|o| (o.key.to_string(), o.resource_version.to_string()))
            .collect()
    }

    #[test]
    fn a_record_from_serve_is_read_with_its_gaps() {
        let recording = parse_recording(RECORD).expect("serve's lines are a recording");
        assert_eq!(recording.events.len(), 7);
        assert_eq!(
            recording
                .gaps
                .iter()
                .map(|g| g.reason.as_str())
                .collect::<Vec<_>>(),
            ["expired", "expired"]
        );
        assert_eq!(recording.gaps[0].from, "2026-11-27T19:52:25.540Z");
        assert_eq!(recording.gaps[0].to, "2026-11-27T19:52:26.946Z");
        let first = &recording.events[0];
        assert_eq!(first.delta_type, "Replaced");
        assert_eq!(first.time.as_deref(), Some("2026-11-27T19:52:20.498Z"));
        assert!(!first.tombstone);
        assert_eq!(
            gap_words(recording.gaps.len()).as_deref(),
            Some("2 gaps in the record")
        );
        assert_eq!(gap_words(1).as_deref(), Some("1 gap in the record"));
        assert_eq!(gap_words(0), None);
    }

    #[test]
    fn a_record_replays_to_the_store_it_recorded() {
        let recording = parse_recording(RECORD).expect("parses");
        // What the file says each object is last.
        let mut expected: BTreeMap<String, String> = BTreeMap::new();
        for event in &recording.events {
            let rv = event.object["metadata"]["resourceVersion"]
                .as_str()
                .expect("rv");
            expected.insert(recorded_key(&event.object), rv.to_string());
        }
        assert_eq!(expected.len(), 4);
        let replayed = replay_natively(ReplayScript::new(recording.events));
        // The relist after the gaps changed one object; the three it left
        // unchanged are still there.
        assert_eq!(
            store_of(&replayed),
            expected.into_iter().collect::<Vec<_>>()
        );
        let kinds: Vec<DeltaType> = replayed.history().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == DeltaType::Updated).count(),
            2
        );
        assert!(!kinds.contains(&DeltaType::Deleted), "{kinds:?}");
    }

    /// A record line as serve writes it.
    fn record_line(
        at: Millis,
        event_type: &str,
        delta_type: &str,
        name: u8,
        rv: u64,
        tombstone: bool,
    ) -> String {
        let mut line = json!({"at": at, "time": "2026-11-27T19:52:20.498Z", "type": event_type,
            "deltaType": delta_type, "resource": "pods", "resourceVersion": rv.to_string(),
            "managers": ["kubelet"], "object": pod_json(name, rv)});
        if tombstone {
            line["tombstone"] = Value::Bool(true);
        }
        line.to_string()
    }

    #[test]
    fn a_record_relist_applies_its_changes_and_tombstones_to_what_was_recorded() {
        let lines = [
            record_line(0, "ADDED", "Replaced", 1, 10, false),
            record_line(0, "ADDED", "Replaced", 2, 11, false),
            record_line(0, "ADDED", "Replaced", 3, 12, false),
            record_line(40, "MODIFIED", "Updated", 1, 13, false),
            r#"{"gap":{"from":"2026-11-27T19:52:21.000Z","to":"2026-11-27T19:52:23.000Z","reason":"not-running"}}"#.to_string(),
            // after the restart: p2 changed, p3 gone, p1 as it was (not stored)
            record_line(3_000, "MODIFIED", "Replaced", 2, 20, false),
            record_line(3_000, "DELETED", "Deleted", 3, 12, true),
            record_line(3_500, "ADDED", "Added", 4, 21, false),
        ];
        let recording = parse_recording(&lines.join("\n")).expect("parses");
        assert_eq!((recording.events.len(), recording.gaps.len()), (7, 1));
        assert!(recording.events[5].tombstone);
        let replayed = replay_natively(ReplayScript::new(recording.events));
        assert_eq!(
            store_of(&replayed),
            [("ns/p1", "13"), ("ns/p2", "20"), ("ns/p4", "21")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        // the relist found p3 gone: a tombstone, as the recorder saw it
        assert!(deltas_of(replayed.history()).contains(&(
            DeltaType::Deleted,
            "ns/p3".to_string(),
            "12".to_string(),
            true
        )));
    }

    #[test]
    fn a_malformed_line_in_a_record_is_named() {
        let mut lines: Vec<&str> = RECORD.lines().collect();
        lines.insert(4, "{\"at\":1796,\"type\":\"MODIFIED\"");
        let err = parse_recording(&lines.join("\n")).unwrap_err();
        assert!(
            matches!(err, RecordingError::BadLine { line: 5, .. }),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("line 5 of the recording"),
            "{err}"
        );
        let err = parse_recording("{\"gap\":3}").unwrap_err();
        assert!(
            matches!(err, RecordingError::BadLine { line: 1, .. }),
            "{err}"
        );
        let only_gaps = RECORD
            .lines()
            .filter(|l| l.starts_with("{\"gap\""))
            .collect::<Vec<_>>();
        assert_eq!(
            parse_recording(&only_gaps.join("\n")),
            Err(RecordingError::OnlyGaps { gaps: 2 })
        );
    }

    #[test]
    fn the_page_exports_no_record_fields() {
        let mut history = History::new(HistoryConfig::default());
        let a = object("a", 1);
        history.record(5, DeltaType::Added, a.clone(), false, &a.key);
        let text = export_ndjson(&history, 0, Millis::MAX);
        assert!(
            !text.contains("\"time\"") && !text.contains("tombstone"),
            "{text}"
        );
        assert_eq!(parse_recording(&text).expect("parses").gaps, []);
    }

    #[test]
    fn an_export_writes_serve_s_record_before_the_page_s_own_once_each() {
        use crate::api::object_record::RecordedVersion;
        let mut history = History::new(HistoryConfig::default());
        let (a2, b1) = (object("a", 2), object("b", 1));
        history.record(10_000, DeltaType::Replaced, a2.clone(), false, &a2.key);
        history.record(11_000, DeltaType::Added, b1.clone(), false, &b1.key);
        let version = |at: i64, kind, tombstone, object: &Arc<KubeObject>| RecordedVersion {
            time_ms: at,
            kind,
            tombstone,
            managers: Vec::new(),
            object: object.clone(),
        };
        let c1 = object("c", 1);
        let record = ObjectRecord {
            versions: vec![
                version(1_000, DeltaType::Replaced, false, &object("a", 1)),
                version(2_000, DeltaType::Added, false, &c1),
                version(3_000, DeltaType::Deleted, true, &c1),
                // the page holds this one too: written once
                version(10_000, DeltaType::Updated, false, &a2),
            ],
            gaps: vec![RecordGap {
                from_ms: 1_500,
                to_ms: 1_800,
                reason: "expired".into(),
            }],
        };
        let text = export_with_record(&history, Some(&record), 0, Millis::MAX);
        let recording = parse_recording(&text).expect("parses");
        let lines: Vec<(Millis, &str, &str, String)> = recording
            .events
            .iter()
            .map(|e| {
                (
                    e.at,
                    e.event_type.as_str(),
                    e.delta_type.as_str(),
                    recorded_key(&e.object),
                )
            })
            .collect();
        assert_eq!(
            lines,
            [
                (0, "ADDED", "Replaced", "ns/a".to_string()),
                (1_000, "ADDED", "Added", "ns/c".to_string()),
                (2_000, "DELETED", "Deleted", "ns/c".to_string()),
                (9_000, "MODIFIED", "Replaced", "ns/a".to_string()),
                (10_000, "ADDED", "Added", "ns/b".to_string()),
            ]
        );
        assert_eq!(recording.gaps.len(), 1);
        assert_eq!(recording.gaps[0].reason, "expired");
        // a selection after the record's deltas holds only the page's
        let later = export_with_record(&history, Some(&record), 10_500, Millis::MAX);
        assert_eq!(parse_recording(&later).expect("parses").events.len(), 1);
    }
}
