//! The recorder's restart path, against the in-process simulated cluster
//! and an in-memory store: a recorder started again on the same record
//! resumes from it (a NotRunning gap from the last watermark, only the
//! differences written, nothing twice), and a database that fails for a
//! while stops the informers and restarts them from the record with a
//! DatabaseUnavailable gap.

use crate::recorder_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deltascope_history::GapReason;
use deltascope_informer::DeltaType;
use deltascope_proxy::recorder::RecorderState;
use deltascope_sim::Sim;
use recorder_support::*;

/// key → resourceVersion of a replayed record.
fn versions(store: &MemoryStore, resource: &str) -> BTreeMap<String, String> {
    store
        .replay(resource)
        .into_iter()
        .map(|(key, text)| {
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let rv = value["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_owned();
            (key, rv)
        })
        .collect()
}

/// Records pods for `recording` once the recorder is up, stops it, and
/// returns when it had stopped (wall-clock ms).
async fn record_pods_then_stop(sim: &Sim, store: &Arc<MemoryStore>, recording: Duration) -> i64 {
    let first = start(sim, store, config(&["pods"]));
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&first)
    })
    .await;
    tokio::time::sleep(recording).await;
    first.shutdown();
    first.stopped().await.unwrap();
    deltascope_proxy::recorder::wall_now_ms()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_recorder_resumes_from_the_record_and_writes_only_the_differences() {
    let sim = sim(40, 200.0);
    let store = MemoryStore::new();

    // 1: record, stop
    let stopped_at = record_pods_then_stop(&sim, &store, Duration::from_secs(2)).await;
    let written = store.writes().len();

    // 2: changes while nothing records; resumed from the recorded
    // resourceVersion, the watch brings them
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = start(&sim, &store, config(&["pods"]));
    wait_for("a not-running gap", Duration::from_secs(10), || {
        gap_reasons(&store, "pods") == vec![GapReason::NotRunning]
    })
    .await;
    let gap = store.gaps("pods")[0].clone();
    assert!(
        gap.from_ms <= stopped_at && gap.from_ms > stopped_at - 1_000,
        "{gap:?} from the last watermark"
    );
    assert!(gap.to_ms > stopped_at);
    let resumed: Vec<_> = store.writes()[written..]
        .iter()
        .filter_map(|w| match w {
            deltascope_history::Write::Delta(d) => Some(d.kind),
            _ => None,
        })
        .collect();
    assert!(
        !resumed.contains(&DeltaType::Replaced),
        "a resumed watch lists nothing: {resumed:?}"
    );
    second.shutdown();
    second.stopped().await.unwrap();

    // 3: the recorded resourceVersion compacted away meanwhile: a relist,
    // whose differences only are written
    let before = versions(&store, "pods");
    let written = store.writes().len();
    churn(&sim, 10.0).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    control(&sim, "/_sim/fault", serde_json::json!({"kind": "compact"})).await;
    churn(&sim, 0.0).await;
    let third = start(&sim, &store, config(&["pods"]));
    wait_for("a second not-running gap", Duration::from_secs(10), || {
        gap_reasons(&store, "pods") == vec![GapReason::NotRunning, GapReason::NotRunning]
    })
    .await;
    wait_replay_matches(&sim, &store, "pods").await;
    let relisted: Vec<_> = store.writes()[written..]
        .iter()
        .filter_map(|w| match w {
            deltascope_history::Write::Delta(d) => Some(d.clone()),
            _ => None,
        })
        .collect();
    assert!(!relisted.is_empty(), "pods changed while nothing recorded");
    assert!(
        relisted
            .iter()
            .all(|d| d.kind == DeltaType::Replaced || d.kind == DeltaType::Deleted),
        "a relist writes Replaced and Deleted: {relisted:?}"
    );
    for delta in &relisted {
        let key = format!("{}/{}", delta.namespace, delta.name);
        match delta.kind {
            DeltaType::Replaced => assert_ne!(
                before.get(&key),
                Some(&delta.resource_version),
                "an unchanged pod was written again"
            ),
            DeltaType::Deleted => assert!(delta.tombstone && before.contains_key(&key)),
            _ => {}
        }
    }
    // Exactly the pods that differ between the record before and the
    // cluster after (changed, added or gone) are written: however long the
    // churn ran on a loaded machine, not one more.
    let after = versions(&store, "pods");
    let differing = before
        .keys()
        .chain(after.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|key| before.get(*key) != after.get(*key))
        .count();
    assert_eq!(
        relisted.len(),
        differing,
        "{} of {} pods written; {differing} differ",
        relisted.len(),
        before.len()
    );
    assert!(differing < before.len(), "some pods stayed as they were");
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    third.shutdown();
    third.stopped().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_stops_recording_and_leaves_a_gap() {
    let sim = sim(40, 200.0);
    let store = MemoryStore::new();
    let handle = start(&sim, &store, config(&["pods", "deployments.apps"]));
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    store.set_failing(true);
    wait_for("database unavailable", Duration::from_secs(5), || {
        matches!(
            handle.status().state,
            RecorderState::DatabaseUnavailable { .. }
        )
    })
    .await;
    let summary = handle.status().summary();
    assert!(summary.contains("database is unavailable"), "{summary}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    store.set_failing(false);
    wait_for("recording again", Duration::from_secs(10), || {
        is_recording(&handle) && gap_reasons(&store, "pods") == vec![GapReason::DatabaseUnavailable]
    })
    .await;
    churn(&sim, 0.0).await;
    wait_replay_matches(&sim, &store, "pods").await;
    wait_replay_matches(&sim, &store, "deployments.apps").await;
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    let gap = &store.gaps("pods")[0];
    assert!(gap.to_ms - gap.from_ms >= 2_000, "{gap:?}");
    handle.shutdown();
    handle.stopped().await.unwrap();
}

/// A recorder started while its database is down cannot restore anything
/// in its first epoch; restored only after the outage, a resource's gap
/// keeps both causes: nothing ran (up to the restart), then the database
/// was unavailable. (In CI a kill -9 followed by an outage read as the
/// outage alone, when a slow relist had not restored pods before it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_across_a_restart_and_an_outage_keeps_both_causes() {
    let sim = sim(40, 200.0);
    let store = MemoryStore::new();
    let stopped_at = record_pods_then_stop(&sim, &store, Duration::from_secs(1)).await;

    store.set_failing(true);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let restarted_at = deltascope_proxy::recorder::wall_now_ms();
    let second = start(&sim, &store, config(&["pods"]));
    wait_for("database unavailable", Duration::from_secs(5), || {
        matches!(
            second.status().state,
            RecorderState::DatabaseUnavailable { .. }
        )
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let recovered_at = deltascope_proxy::recorder::wall_now_ms();
    store.set_failing(false);
    wait_for("recording again", Duration::from_secs(10), || {
        is_recording(&second)
    })
    .await;
    // quiet, so the record can be seen to catch up with the sim (under
    // 200 changes a second it seldom matches at the moment it is polled)
    churn(&sim, 0.0).await;
    wait_replay_matches(&sim, &store, "pods").await;
    let gaps = store.gaps("pods");
    let reasons: Vec<GapReason> = gaps.iter().map(|g| g.reason).collect();
    assert_eq!(
        reasons[..2],
        [GapReason::NotRunning, GapReason::DatabaseUnavailable],
        "{gaps:#?}"
    );
    let (not_running, outage) = (&gaps[0], &gaps[1]);
    assert!(not_running.from_ms <= stopped_at, "{not_running:?}");
    assert!(
        (restarted_at..recovered_at).contains(&not_running.to_ms),
        "up to the restart: {not_running:?}"
    );
    assert_eq!(outage.from_ms, not_running.to_ms, "{outage:?}");
    assert!(outage.to_ms >= recovered_at, "{outage:?}");
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    second.shutdown();
    second.stopped().await.unwrap();
}
