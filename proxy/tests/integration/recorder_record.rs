//! The recorder against the in-process simulated cluster, with an in-memory
//! store: what it records replays to the cluster's state (through churn and
//! a 410 relist, which is stored as a gap), and Secrets are stored redacted
//! unless the separately named option says otherwise.

use crate::recorder_support;

use std::time::Duration;

use deltascope_history::{GapReason, Write};
use deltascope_informer::DeltaType;
use deltascope_proxy::recorder::{self, RecorderConfig};
use recorder_support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_pods_so_that_the_record_replays_to_the_clusters_state() {
    let sim = sim(60, 0.0);
    let store = MemoryStore::new();
    let handle = recording(&sim, &store, "pods").await;
    churn(&sim, 300.0).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    churn(&sim, 0.0).await;
    wait_replay_matches(&sim, &store, "pods").await;

    let deltas = store.deltas("pods");
    let kinds = |kind| deltas.iter().filter(|d| d.kind == kind).count();
    assert!(
        kinds(DeltaType::Replaced) >= 60,
        "the first list: {deltas:?}"
    );
    assert!(kinds(DeltaType::Updated) > 0 && kinds(DeltaType::Added) > 0);
    assert!(
        deltas
            .iter()
            .any(|d| d.kind == DeltaType::Updated && !d.managers.is_empty()),
        "updates name their field managers"
    );
    assert!(
        deltas
            .iter()
            .filter(|d| d.kind == DeltaType::Updated)
            .all(|d| d.previous.is_some()),
        "an update's previous version is the one handed before"
    );
    let now = recorder::wall_now_ms();
    assert!(deltas
        .iter()
        .all(|d| d.at_ms <= now && d.at_ms > now - 60_000));
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    assert!(store.gaps("pods").is_empty(), "{:?}", store.gaps("pods"));
    assert_eq!(store.clusters().len(), 1);
    let status = handle.status();
    assert_eq!(status.resources, 1);
    assert_eq!(status.deltas_written as usize, deltas.len());
    assert!(status.cluster.is_some() && status.last_write_ms.is_some());
    assert!(
        status.summary().starts_with("recording 1 resource"),
        "{}",
        status.summary()
    );

    handle.shutdown();
    handle.stopped().await.unwrap();
    assert!(store.watermarks("pods") >= 1);
    match store.writes().last() {
        Some(Write::Watermark(mark)) => assert!(mark.through_ms <= recorder::wall_now_ms()),
        other => panic!("the last write is the shutdown's watermark, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_410_relist_is_stored_as_an_expired_gap_and_the_record_stays_right() {
    let sim = sim(40, 200.0);
    let store = MemoryStore::new();
    let handle = start(&sim, &store, config(&["pods"]));
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // watches dropped and resumed from their resourceVersion: nothing lost, no gap
    control(
        &sim,
        "/_sim/fault",
        serde_json::json!({"kind": "drop-watches"}),
    )
    .await;
    control(&sim, "/_sim/fault", serde_json::json!({"kind": "restart"})).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(store.gaps("pods").is_empty(), "{:?}", store.gaps("pods"));
    let before = store.deltas("pods").len();
    control(&sim, "/_sim/fault", serde_json::json!({"kind": "compact"})).await;
    wait_for("an expired gap", Duration::from_secs(10), || {
        gap_reasons(&store, "pods") == vec![GapReason::Expired]
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    churn(&sim, 0.0).await;
    wait_replay_matches(&sim, &store, "pods").await;

    let gap = &store.gaps("pods")[0];
    assert!(
        gap.from_ms <= gap.to_ms && gap.to_ms - gap.from_ms < 10_000,
        "{gap:?}"
    );
    // the relist wrote only what differed from the record
    let relisted = store.deltas("pods")[before..]
        .iter()
        .filter(|d| d.kind == DeltaType::Replaced)
        .count();
    assert!(relisted < 40, "{relisted} Replaced after the relist");
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    handle.shutdown();
    handle.stopped().await.unwrap();
}

/// Base64 of a value planted in a Secret, and the sim's own values.
const PLANTED: &str = "cGxhbnRlZC1yZWNvcmRlci12YWx1ZQ=="; // "planted-recorder-value"
const SIM_SECRET_VALUES: [&str; 2] = ["ZGVsdGFzY29wZQ==", "c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"];

async fn record_secrets(show_secrets: bool, store_secret_values: bool) -> Vec<String> {
    let sim = sim(5, 0.0);
    let store = MemoryStore::new();
    let config = RecorderConfig {
        store_secret_values,
        ..config(&["secrets"])
    };
    let handle = recorder::spawn(
        forwarder(&sim, show_secrets),
        store.clone(),
        config,
        CancellationToken::new(),
    );
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    wait_replay_matches(&sim, &store, "secrets").await;
    let secrets = api_get(&sim, "/api/v1/secrets").await;
    let first = &secrets["items"][0]["metadata"];
    let key = format!(
        "{}/{}",
        first["namespace"].as_str().unwrap(),
        first["name"].as_str().unwrap()
    );
    control(
        &sim,
        "/_sim/patch",
        serde_json::json!({"resource": "secrets", "key": key,
            "patch": {"data": {"planted": PLANTED}}, "manager": "test"}),
    )
    .await;
    wait_replay_matches(&sim, &store, "secrets").await;
    handle.shutdown();
    handle.stopped().await.unwrap();
    let deltas = store.deltas("secrets");
    assert!(deltas.iter().any(|d| d.kind == DeltaType::Updated));
    deltas
        .into_iter()
        .flat_map(|d| std::iter::once(d.object).chain(d.previous))
        .map(|object| object.to_string())
        .collect()
}

fn holds_a_value(texts: &[String]) -> bool {
    texts.iter().any(|text| {
        text.contains(PLANTED) || SIM_SECRET_VALUES.iter().any(|value| text.contains(value))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_stored_redacted_even_under_show_secrets() {
    for show_secrets in [false, true] {
        let texts = record_secrets(show_secrets, false).await;
        assert!(
            !holds_a_value(&texts),
            "--show-secrets {show_secrets}: a value was stored"
        );
        assert!(texts.iter().any(|t| t.contains("deltascope.io/redacted")));
        assert!(
            texts.iter().any(|t| t.contains("<redacted: 22 bytes>")),
            "the planted value's size"
        );
    }
    // the loudly named option stores them
    let texts = record_secrets(false, true).await;
    assert!(texts.iter().any(|t| t.contains(PLANTED)));
}
