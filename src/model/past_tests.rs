//! Tests of `past`: the store rebuilt at any moment equals the store then,
//! at once and a step at a time, and a recording's export replays to the
//! live store's digest (the recordings are `crate::api::recording`'s).

use super::*;
use crate::api::recording::{export_ndjson, parse_recording, watch_line};
use crate::informer::{digest_of, HistoryConfig, KubeObject};
use proptest::prelude::*;
use serde_json::json;

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
    /// store_at(T) equals the model's state after every op recorded at
    /// or before T, and so does a PastBuilder taking `budget` deltas or
    /// keys a step (its keys also matched with a text filter).
    #[test]
    fn reconstruction_at_any_time_equals_the_store_then(ops in proptest::collection::vec((op(), 0u64..3), 1..80), budget in 1usize..5) {
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
            prop_assert_eq!(&got, &expected, "at t={}", t);
            for filter in ["", " P1 "] {
                let mut builder = PastBuilder::new(&history, t, filter);
                let past = loop {
                    if let Some(past) = builder.step(&history, budget) {
                        break past;
                    }
                };
                let objects: BTreeMap<String, u64> = past.objects.iter()
                    .map(|(k, o)| (k.clone(), o.resource_version.parse().unwrap_or(0)))
                    .collect();
                prop_assert_eq!(&objects, &expected, "stepped, at t={}", t);
                let keys: Vec<String> = past.keys.iter().map(|k| k.to_string()).collect();
                let matching: Vec<String> = expected.keys().filter(|k| filter.is_empty() || k.contains("p1")).cloned().collect();
                prop_assert_eq!(keys, matching, "keys matching {:?} at t={}", filter, t);
                prop_assert!(past.complete);
                // The digest is the whole state's, whatever the filter.
                let digest = digest_of(expected.iter().map(|(k, rv)| (k.clone(), rv.to_string())));
                prop_assert_eq!(&past.digest, &digest, "digest at t={}", t);
                prop_assert_eq!(&past.source, &PastSource::Page);
            }
        }
    }
}

#[test]
fn a_past_whose_deltas_are_evicted_while_it_is_built_is_incomplete() {
    let mut history = History::new(HistoryConfig {
        max_deltas: 8,
        ..HistoryConfig::default()
    });
    for n in 0..8u64 {
        let obj = object(&format!("p{n}"), n + 1);
        history.record(n, DeltaType::Added, obj.clone(), false, &obj.key);
    }
    let mut builder = PastBuilder::new(&history, 5, "");
    assert!(
        builder.step(&history, 2).is_none(),
        "two of six deltas applied"
    );
    for n in 8..12u64 {
        let obj = object(&format!("p{n}"), n + 1);
        history.record(n, DeltaType::Added, obj.clone(), false, &obj.key);
    }
    let past = builder.step(&history, 100).expect("built");
    assert!(
        !past.complete,
        "p2 and p3 were evicted before they were applied"
    );
    let keys: Vec<String> = past.keys.iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["ns/p0", "ns/p1", "ns/p4", "ns/p5"]);
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
    let events = parse_recording(&text).expect("parses").events;
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
