//! Serve recording into a real PostgreSQL that goes away for 10 seconds:
//! the recorder says the database is unavailable (and the summary still
//! answers), comes back on its own once the server does, stores the time
//! in between as a `database-unavailable` gap, and the state of every
//! moment outside the gaps is the cluster's own.
//!
//! The server is this test's own (`private_postgres`: initdb from
//! `DELTASCOPE_TEST_PG_BIN`, run as `DELTASCOPE_TEST_PG_USER`), so stopping
//! it disturbs no other test.

use crate::private_postgres;
use crate::serve_support;

use std::time::{Duration, Instant};

use deltascope_history::HistoryTarget;
use deltascope_proxy::serve::Running;
use private_postgres::PrivatePostgres;
use serde_json::Value;
use serve_support::*;

const TOKEN: &str = "postgres-fault-token-0123456789abcdef012345";

async fn get(proxy: &Running, target: &str) -> Resp {
    send(proxy.local_addr(), req("GET", target).bearer(TOKEN)).await
}

async fn summary_until(
    proxy: &Running,
    within: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let summary = get(proxy, "/_deltascope/history/summary").await;
        assert_eq!(summary.status, 200, "{}", summary.text());
        let summary = summary.json();
        if done(&summary) {
            return summary;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never happened: {summary}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_gone_for_ten_seconds_is_a_gap_and_recording_resumes() {
    let postgres = PrivatePostgres::start();
    let proxy = recording_demo(HistoryTarget::Postgres(postgres.url()), 30, 60.0, TOKEN).await;
    let pods_recorded = |s: &Value| {
        s["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["resource"] == "pods" && r["deltas"].as_i64() > Some(0))
    };
    summary_until(
        &proxy,
        Duration::from_secs(20),
        "recording pods",
        pods_recorded,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    postgres.down();
    let paused = summary_until(
        &proxy,
        Duration::from_secs(15),
        "the recorder saying so",
        |s| {
            s["recording"]["state"]
                .as_str()
                .unwrap_or_default()
                .contains("database is unavailable")
        },
    )
    .await;
    assert!(
        paused["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be read now"),
        "{paused}"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    postgres.up();
    summary_until(&proxy, Duration::from_secs(60), "recording again", |s| {
        s["recording"]["state"]
            .as_str()
            .unwrap_or_default()
            .starts_with("recording")
            && pods_recorded(s)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stop = send(
        proxy.local_addr(),
        req("POST", "/_sim/churn")
            .bearer(TOKEN)
            .header("Content-Type", "application/json")
            .body("{\"events_per_sec\":0}"),
    )
    .await;
    assert!(stop.status < 300);
    tokio::time::sleep(Duration::from_secs(6)).await;

    let text = get(&proxy, "/_deltascope/history?resource=pods")
        .await
        .text();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let gap = lines
        .iter()
        .find(|l| l["gap"]["reason"] == "database-unavailable")
        .unwrap_or_else(|| panic!("no database-unavailable gap in {} lines", lines.len()));
    let gap_ms = |edge: &str| {
        deltascope_facts::time::parse_rfc3339_millis(gap["gap"][edge].as_str().unwrap()).unwrap()
    };
    assert!(
        gap_ms("to") - gap_ms("from") >= 9_000,
        "the gap covers the outage: {gap}"
    );
    let times: Vec<i64> = lines
        .iter()
        .filter_map(|l| l["time"].as_str())
        .filter_map(deltascope_facts::time::parse_rfc3339_millis)
        .collect();
    let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let (mut matched, mut in_gaps) = (0, 0);
    // Eight moments before the outage's gap, eight after, and its middle.
    let before = (0..8).map(|i| first + (gap_ms("from") - first) * i / 7);
    let after = (0..8).map(|i| gap_ms("to") + (last - gap_ms("to")) * i / 7);
    let middle = std::iter::once((gap_ms("from") + gap_ms("to")) / 2);
    for at in before.chain(middle).chain(after) {
        let at_text = deltascope_facts::time::format_rfc3339_millis(at).unwrap();
        let state = get(
            &proxy,
            &format!("/_deltascope/history/state?resource=pods&at={at_text}"),
        )
        .await;
        if state.status == 409 {
            let message = state.json()["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                message.contains("gap"),
                "409 outside a gap at {at_text}: {message}"
            );
            in_gaps += 1;
            continue;
        }
        assert_eq!(state.status, 200, "{}", state.text());
        let list = state.json();
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let digest = digest_of_objects(list["items"].as_array().unwrap().iter());
        let truth = get(&proxy, &format!("/_sim/digest?resource=pods&rv={rv}"))
            .await
            .json();
        assert_eq!(
            truth["digest"].as_str(),
            Some(digest.as_str()),
            "state at {at_text} (rv {rv})"
        );
        matched += 1;
    }
    let gaps: Vec<&Value> = lines.iter().filter(|l| l.get("gap").is_some()).collect();
    assert!(
        matched >= 12 && in_gaps >= 1,
        "{matched} matched, {in_gaps} in gaps, from {first} to {last}: {gaps:?}"
    );
    proxy.history().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_not_up_at_start_is_tried_again_until_it_answers() {
    let postgres = PrivatePostgres::start();
    postgres.down();
    let proxy = recording_demo(HistoryTarget::Postgres(postgres.url()), 10, 0.0, TOKEN).await;
    let waiting = summary_until(&proxy, Duration::from_secs(5), "saying it waits", |s| {
        s["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("trying again")
    })
    .await;
    assert!(waiting["recording"].is_null(), "{waiting}");
    assert_eq!(
        get(&proxy, "/api/v1/pods").await.status,
        200,
        "the live view works meanwhile"
    );
    postgres.up();
    summary_until(
        &proxy,
        Duration::from_secs(45),
        "recording once it answers",
        |s| {
            s["unavailable"].is_null()
                && s["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["resource"] == "pods" && r["deltas"].as_i64() > Some(0))
        },
    )
    .await;
    proxy.history().stop().await;
}
