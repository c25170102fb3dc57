//! Retention on both engines: the oldest records go, the span they covered
//! becomes a `not-kept` gap, and every moment after the cut still reads
//! back exactly as before.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use deltascope_history::{GapReason, Retention, StateError, Write};
use deltascope_informer::DeltaType;
use serde_json::Value;
use support::{cluster, delta, fresh_store, pod};

/// Ten pods updated every 10 ms from t=1000 for `rounds` rounds; pod 0
/// deleted at the first round's end. Returns each moment's expected state.
async fn churn(
    store: &deltascope_history::HistoryStore,
    rounds: u64,
) -> BTreeMap<i64, Vec<String>> {
    let mut now: BTreeMap<String, Value> = BTreeMap::new();
    let mut expected = BTreeMap::new();
    let mut at = 1_000;
    let mut rv = 1;
    let mut writes = Vec::new();
    for round in 0..rounds {
        for i in 0..10 {
            let name = format!("p{i}");
            if i == 0 && round == 1 {
                let before = now.remove(&name).unwrap();
                writes.push(delta(DeltaType::Deleted, &before, at, Some(&before)));
            } else if i == 0 && round > 1 {
                continue;
            } else {
                rv += 1;
                let object = pod("default", &name, rv, "Running", round);
                let kind = if round == 0 {
                    DeltaType::Added
                } else {
                    DeltaType::Updated
                };
                writes.push(delta(kind, &object, at, now.get(&name)));
                now.insert(name, object);
            }
            let digest: Vec<String> = now
                .values()
                .map(|o| {
                    format!(
                        "{}@{}",
                        o["metadata"]["name"], o["metadata"]["resourceVersion"]
                    )
                })
                .collect();
            expected.insert(at, digest);
            at += 10;
        }
    }
    writes.push(Write::Watermark(deltascope_history::WatermarkRecord {
        resource: "pods".into(),
        store_resource_version: rv.to_string(),
        through_ms: at,
    }));
    for batch in writes.chunks(50) {
        store.write(&cluster(), batch).await.unwrap();
    }
    expected
}

async fn names_at(
    store: &deltascope_history::HistoryStore,
    at: i64,
) -> Result<Vec<String>, StateError> {
    let past = store.state_at(&cluster(), "pods", None, at).await?;
    let mut names = Vec::new();
    store
        .state_objects(&past, |batch| {
            names.extend(batch.iter().map(|text| {
                let o: Value = serde_json::from_str(text).unwrap();
                format!(
                    "{}@{}",
                    o["metadata"]["name"], o["metadata"]["resourceVersion"]
                )
            }));
            true
        })
        .await?;
    names.sort();
    Ok(names)
}

async fn old_records_go_and_leave_a_gap(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    let expected = churn(&store, 30).await;
    let before = store.summary().await.unwrap()[0].deltas;
    let cut_at = 1_000 + 10 * 10 * 15;
    let now = cut_at + 60_000;
    let report = store
        .enforce(
            Retention {
                max_age: Some(Duration::from_secs(60)),
                max_bytes: None,
            },
            now,
        )
        .await
        .unwrap();
    assert_eq!(report.cut_ms, Some(cut_at));
    assert!(report.deltas_evicted > 0);
    let summary = &store.summary().await.unwrap()[0];
    assert_eq!(summary.deltas, before - report.deltas_evicted as i64);
    assert_eq!(summary.first_ms, Some(cut_at));
    for (at, names) in &expected {
        let mut names = names.clone();
        names.sort();
        if *at < cut_at {
            assert!(
                matches!(
                    names_at(&store, *at).await,
                    Err(StateError::InGap {
                        reason: GapReason::NotKept,
                        ..
                    }) | Err(StateError::Before { .. })
                ),
                "{at} is before the cut"
            );
        } else {
            assert_eq!(names_at(&store, *at).await.unwrap(), names, "state at {at}");
        }
    }
    // A second pass keeps one not-kept gap, from the first record.
    store
        .enforce(
            Retention {
                max_age: Some(Duration::from_secs(60)),
                max_bytes: None,
            },
            now + 100,
        )
        .await
        .unwrap();
    assert_eq!(store.summary().await.unwrap()[0].gaps, 1);
}
on_both_engines!(by_age, old_records_go_and_leave_a_gap);

async fn a_size_bound_evicts_until_under_it(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    churn(&store, 60).await;
    let used = store.used_bytes().await.unwrap();
    let bound = used * 2 / 3;
    let report = store
        .enforce(
            Retention {
                max_age: None,
                max_bytes: Some(bound),
            },
            0,
        )
        .await
        .unwrap();
    assert!(report.deltas_evicted > 0, "{report:?} from {used}");
    assert!(
        report.bytes_after <= bound || report.bytes_after < used,
        "{report:?} from {used}"
    );
    let cut = report.cut_ms.unwrap();
    assert!(matches!(
        names_at(&store, cut - 1).await,
        Err(StateError::InGap {
            reason: GapReason::NotKept,
            ..
        }) | Err(StateError::Before { .. })
    ));
    assert!(names_at(&store, cut).await.is_ok());
}
on_both_engines!(by_size, a_size_bound_evicts_until_under_it);
