//! Serve recording the in-process simulated cluster into a SQLite file and
//! answering the history routes: the state the record gives for a moment
//! has the digest the cluster itself had at that resourceVersion (through a
//! dropped watch and a compaction, whose relist is stored as a gap), the
//! routes need a session and refuse bad parameters with a Status, and a
//! Secret's value is nowhere in what is stored.

use crate::serve_support;

use std::time::{Duration, Instant};

use deltascope_history::{HistoryTarget, Retention};
use deltascope_proxy::recorder::RecorderConfig;
use deltascope_proxy::recording::HistoryOptions;
use deltascope_proxy::serve::{Running, Upstream};
use deltascope_sim::SimConfig;
use serde_json::Value;
use serve_support::*;

const TOKEN: &str = "history-token-0123456789abcdef0123456789";
/// base64 of a value planted in a Secret.
const PLANTED: &str = "cGxhbnRlZC1oaXN0b3J5LXNlY3JldC12YWx1ZQ==";

async fn recording_demo(dir: &std::path::Path, churn: f64) -> Running {
    serve_support::recording_demo(
        HistoryTarget::Sqlite(dir.join("history.sqlite")),
        40,
        churn,
        TOKEN,
    )
    .await
}

async fn get(proxy: &Running, target: &str) -> Resp {
    send(proxy.local_addr(), req("GET", target).bearer(TOKEN)).await
}

async fn post(proxy: &Running, target: &str, body: &str) {
    let resp = send(
        proxy.local_addr(),
        req("POST", target)
            .bearer(TOKEN)
            .header("Content-Type", "application/json")
            .body(body),
    )
    .await;
    assert!(
        resp.status < 300,
        "{target}: {} {}",
        resp.status,
        resp.text()
    );
}

fn ms_time(ms: i64) -> String {
    deltascope_facts::time::format_rfc3339_millis(ms).unwrap()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Waits until the summary lists `resource` with a delta.
async fn wait_recorded(proxy: &Running, resource: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let summary = get(proxy, "/_deltascope/history/summary").await.json();
        let found = summary["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["resource"] == resource && r["deltas"].as_i64() > Some(0));
        if found {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{resource} never recorded: {summary}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn lines_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("an NDJSON line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_state_of_any_moment_is_the_clusters_own() {
    let dir = scratch_dir();
    let proxy = recording_demo(&dir, 150.0).await;
    wait_recorded(&proxy, "pods").await;
    let start = now_ms();
    tokio::time::sleep(Duration::from_secs(3)).await;
    post(&proxy, "/_sim/fault", r#"{"kind":"drop-watches"}"#).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    post(&proxy, "/_sim/fault", r#"{"kind":"compact"}"#).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    post(&proxy, "/_sim/churn", r#"{"events_per_sec":0}"#).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let lines = lines_of(
        &get(&proxy, "/_deltascope/history?resource=pods")
            .await
            .text(),
    );
    let gaps: Vec<&Value> = lines.iter().filter(|l| l.get("gap").is_some()).collect();
    assert!(
        gaps.iter().any(|g| g["gap"]["reason"] == "expired"),
        "the compaction's relist is a gap: {gaps:?}"
    );
    // No delta stored twice.
    let mut seen = std::collections::HashSet::new();
    for line in lines.iter().filter(|l| l.get("gap").is_none()) {
        let key = (
            line["object"]["metadata"]["uid"].to_string(),
            line["resourceVersion"].to_string(),
            line["deltaType"].to_string(),
        );
        assert!(seen.insert(key.clone()), "stored twice: {key:?}");
    }
    let last = lines
        .iter()
        .filter_map(|l| l["time"].as_str())
        .filter_map(deltascope_facts::time::parse_rfc3339_millis)
        .max()
        .expect("deltas");

    let (mut matched, mut in_gaps, mut forgotten) = (0, 0, 0);
    for step in 0..16 {
        let at = start + (last - start) * step / 15;
        let state = get(
            &proxy,
            &format!(
                "/_deltascope/history/state?resource=pods&at={}",
                ms_time(at)
            ),
        )
        .await;
        if state.status == 409 {
            let message = state.json()["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                message.contains("gap"),
                "409 outside a gap at {at}: {message}"
            );
            in_gaps += 1;
            continue;
        }
        assert_eq!(state.status, 200, "{}", state.text());
        let list = state.json();
        assert_eq!(list["kind"], "List");
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let items = list["items"].as_array().unwrap();
        let digest = digest_of_objects(items.iter());
        let truth = get(&proxy, &format!("/_sim/digest?resource=pods&rv={rv}")).await;
        if truth.status == 410 {
            forgotten += 1;
            continue;
        }
        assert_eq!(truth.status, 200, "{}", truth.text());
        let truth = truth.json();
        assert_eq!(
            truth["digest"].as_str(),
            Some(digest.as_str()),
            "state at {at} (rv {rv})"
        );
        matched += 1;
    }
    assert!(
        matched >= 6,
        "{matched} matched, {in_gaps} in gaps, {forgotten} compacted away"
    );
}

#[tokio::test]
async fn the_routes_need_a_session_and_refuse_bad_parameters() {
    let dir = scratch_dir();
    let proxy = recording_demo(&dir, 0.0).await;
    wait_recorded(&proxy, "pods").await;
    for target in [
        "/_deltascope/history?resource=pods",
        "/_deltascope/history/state?resource=pods&at=2026-01-01T00:00:00Z",
        "/_deltascope/history/summary",
    ] {
        send(proxy.local_addr(), req("GET", target))
            .await
            .assert_status(401);
    }
    for (target, code) in [
        ("/_deltascope/history", 400),
        ("/_deltascope/history?resource=pods&since=yesterday", 400),
        ("/_deltascope/history?resource=pods&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", 400),
        ("/_deltascope/history?resource=pods%27%3B%20DROP%20TABLE%20ds_deltas%3B--", 400),
        ("/_deltascope/history?resource=widgets.nowhere.example", 400),
        ("/_deltascope/history/state?resource=pods", 400),
        ("/_deltascope/history/state?resource=pods&at=1999-01-01T00:00:00Z", 409),
    ] {
        let resp = get(&proxy, target).await;
        assert_eq!(resp.status, code, "{target}: {}", resp.text());
        resp.assert_status(code);
    }
    let refused = send(
        proxy.local_addr(),
        req("DELETE", "/_deltascope/history?resource=pods").bearer(TOKEN),
    )
    .await;
    refused.assert_status(405);
    // Still answering after all that.
    assert_eq!(
        get(&proxy, "/_deltascope/history?resource=pods")
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_secrets_value_is_nowhere_in_what_is_stored() {
    let dir = scratch_dir();
    let proxy = recording_demo(&dir, 0.0).await;
    wait_recorded(&proxy, "secrets").await;
    let secrets = get(&proxy, "/api/v1/secrets").await.json();
    let first = &secrets["items"][0]["metadata"];
    let key = format!(
        "{}/{}",
        first["namespace"].as_str().unwrap(),
        first["name"].as_str().unwrap()
    );
    post(
        &proxy,
        "/_sim/patch",
        &format!(r#"{{"resource":"secrets","key":"{key}","patch":{{"data":{{"planted":"{PLANTED}"}}}},"manager":"test"}}"#),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = get(&proxy, "/_deltascope/history?resource=secrets")
            .await
            .text();
        let updated = lines_of(&text).iter().any(|l| l["deltaType"] == "Updated");
        if updated {
            assert!(
                !text.contains(PLANTED),
                "the planted value is in the history"
            );
            assert!(
                !text.contains("ZGVsdGFzY29wZQ=="),
                "a sim secret value is in the history"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Secret's change was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    proxy.history().stop().await;
    let file = std::fs::read(dir.join("history.sqlite")).unwrap();
    assert_eq!(
        serve_support::count_occurrences(&file, PLANTED.as_bytes()),
        0
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("history.sqlite"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// A serve that only reads (beside a `deltascope record` that keeps the
/// record) never evicts from it, whatever its retention flags say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_serve_never_evicts_what_a_recorder_keeps() {
    use deltascope_history::{ClusterId, DeltaRecord, HistoryStore, Write};
    let dir = scratch_dir();
    let target = HistoryTarget::Sqlite(dir.join("history.sqlite"));
    let store = HistoryStore::open(&target).await.unwrap();
    let month_ago = now_ms() - 30 * 86_400_000;
    let object = deltascope_informer::JsonValue::parse(
        br#"{"metadata":{"name":"old","namespace":"default","uid":"u-old","resourceVersion":"5"}}"#,
    )
    .unwrap();
    store
        .write(
            &ClusterId("another-cluster".into()),
            &[Write::Delta(DeltaRecord {
                resource: "configmaps".into(),
                namespace: "default".into(),
                name: "old".into(),
                uid: "u-old".into(),
                resource_version: "5".into(),
                store_resource_version: "5".into(),
                kind: deltascope_informer::DeltaType::Added,
                tombstone: false,
                at_ms: month_ago,
                managers: Vec::new(),
                object,
                previous: None,
            })],
        )
        .await
        .unwrap();
    store.close().await;

    let mut config = config_with_token(Upstream::Demo(SimConfig::default()), TOKEN);
    config.history = HistoryOptions {
        target: target.clone(),
        record: false,
        recorder: RecorderConfig::default(),
        retention: Retention {
            max_age: Some(Duration::from_secs(3_600)),
            max_bytes: Some(1),
        },
    };
    let proxy = start_proxy(config).await;
    // retention, where it runs, runs as the database opens
    let summary = get(&proxy, "/_deltascope/history/summary").await.json();
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(proxy);
    let store = HistoryStore::open(&target).await.unwrap();
    let kept = store.summary().await.unwrap();
    assert_eq!(kept.len(), 1, "{summary}");
    assert_eq!(kept[0].deltas, 1, "nothing evicted: {kept:?}");
    assert_eq!(kept[0].gaps, 0, "no not-kept gap: {kept:?}");
}
