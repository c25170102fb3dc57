//! Looking back: the store as it was at a moment, rebuilt from the history
//! (for each key, its last delta at or before the moment; a Deleted delta
//! means absent), and recordings — the history as NDJSON of watch events
//! with their times, which the page can export and import.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::informer::{DeltaType, History, HistoryEntry, Millis};

/// The objects present at `at`, by key (sorted). Complete only when the
/// history has evicted nothing (`history.dropped() == 0`).
pub fn store_at(history: &History, at: Millis) -> BTreeMap<&str, &HistoryEntry> {
    let mut state: BTreeMap<&str, &HistoryEntry> = BTreeMap::new();
    for entry in history.iter().take_while(|e| e.at <= at) {
        match entry.kind {
            DeltaType::Deleted => {
                state.remove(entry.key());
            }
            _ => {
                state.insert(entry.key(), entry);
            }
        }
    }
    state
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{digest_of, HistoryConfig, KubeObject};
    use proptest::prelude::*;
    use serde_json::json;
    use std::sync::Arc;

    fn object(name: &str, rv: u64) -> Arc<KubeObject> {
        let value = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": rv.to_string()}});
        Arc::new(KubeObject::from_value(value).expect("valid object"))
    }

    #[derive(Debug, Clone)]
    enum Op {
        Put(u8),
        Delete(u8),
        Relist,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![4 => (0u8..8).prop_map(Op::Put), 2 => (0u8..8).prop_map(Op::Delete), 1 => Just(Op::Relist)]
    }

    proptest! {
        /// store_at(T) equals the model's state after every op recorded at or before T.
        #[test]
        fn reconstruction_at_any_time_equals_the_store_then(ops in proptest::collection::vec((op(), 0u64..3), 1..80)) {
            let mut history = History::new(HistoryConfig::default());
            let mut model: BTreeMap<String, u64> = BTreeMap::new();
            let mut snapshots: Vec<(Millis, BTreeMap<String, u64>)> = Vec::new();
            let (mut now, mut rv) = (0, 0);
            for (op, advance) in ops {
                now += advance;
                rv += 1;
                match op {
                    Op::Put(n) => {
                        let name = format!("p{n}");
                        let kind = if model.contains_key(&format!("ns/{name}")) { DeltaType::Updated } else { DeltaType::Added };
                        let obj = object(&name, rv);
                        history.record(now, kind, obj.clone(), false, &obj.key);
                        model.insert(obj.key.clone(), rv);
                    }
                    Op::Delete(n) => {
                        let key = format!("ns/p{n}");
                        if let Some(old) = model.remove(&key) {
                            let obj = object(&format!("p{n}"), old);
                            history.record(now, DeltaType::Deleted, obj, false, &key);
                        }
                    }
                    Op::Relist => {
                        // A relist re-announces everything as Replaced.
                        for (key, object_rv) in &model {
                            let name = key.split('/').nth(1).unwrap_or_default();
                            history.record(now, DeltaType::Replaced, object(name, *object_rv), false, key);
                        }
                    }
                }
                snapshots.retain(|(t, _)| *t != now);
                snapshots.push((now, model.clone()));
            }
            for (t, expected) in snapshots {
                let got: BTreeMap<String, u64> = store_at(&history, t)
                    .into_iter()
                    .map(|(k, e)| (k.to_string(), e.resource_version().parse().unwrap_or(0)))
                    .collect();
                prop_assert_eq!(got, expected, "at t={}", t);
            }
        }
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
    fn a_deleted_object_is_present_before_its_deletion() {
        let mut history = History::new(HistoryConfig::default());
        let a = object("a", 1);
        history.record(10, DeltaType::Added, a.clone(), false, &a.key);
        history.record(20, DeltaType::Deleted, object("a", 1), false, &a.key);
        assert!(store_at(&history, 15).contains_key("ns/a"));
        assert!(!store_at(&history, 20).contains_key("ns/a"));
        assert!(store_at(&history, 5).is_empty());
    }

    #[test]
    fn export_then_parse_round_trips_and_rebuilds_the_digest() {
        let mut history = History::new(HistoryConfig::default());
        let (a1, b1, a2) = (object("a", 1), object("b", 2), object("a", 3));
        history.record(100, DeltaType::Replaced, a1.clone(), false, &a1.key);
        history.record(100, DeltaType::Replaced, b1.clone(), false, &b1.key);
        history.record(150, DeltaType::Updated, a2.clone(), false, &a2.key);
        history.record(180, DeltaType::Deleted, b1.clone(), false, &b1.key);
        let text = export_ndjson(&history, 0, Millis::MAX);
        let events = parse_recording(&text).expect("parses");
        let kinds: Vec<(&str, Millis)> = events
            .iter()
            .map(|e| (e.event_type.as_str(), e.at))
            .collect();
        assert_eq!(
            kinds,
            [
                ("ADDED", 0),
                ("ADDED", 0),
                ("MODIFIED", 50),
                ("DELETED", 80)
            ]
        );
        assert_eq!(events[0].delta_type, "Replaced");
        // Applying the events in order gives the live store's digest.
        let mut state: BTreeMap<String, String> = BTreeMap::new();
        for event in &events {
            let obj = KubeObject::from_value(event.object.clone()).expect("object");
            if event.event_type == "DELETED" {
                state.remove(&obj.key);
            } else {
                state.insert(obj.key.clone(), obj.resource_version.clone());
            }
        }
        let replayed = digest_of(state.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let live = digest_of(
            store_at(&history, Millis::MAX)
                .iter()
                .map(|(k, e)| (*k, e.resource_version())),
        );
        assert_eq!(replayed, live);
        assert!(watch_line(&events[2]).starts_with("{\"object\":"));
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
}
