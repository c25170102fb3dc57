//! A gap in serve's record, seen from a page opened after it, in headless
//! Chromium: `deltascope sim` churns; `deltascope serve --upstream` records
//! it into a SQLite file, is stopped for a few seconds and started again on
//! the same file (the recorder stores the span it was not running as a gap,
//! reason `not-running`). Then a fresh browser opens pods and zooms the
//! timeline out past its own history: the pods lane draws serve's record
//! (`data-recorded`), shades the gap (`data-recorded-gaps`, its title
//! saying "serve did not record … not-running"), and a click inside the gap
//! travels to a moment serve cannot show: `time-travel-record` says `gap`
//! and no wrong table is shown (`time-travel` `data-source=none`).
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::chain::{start_serve_upstream, start_sim};
use support::scratch::{unix_ms, Scratch};
use support::sign_in::random_token;
use support::{http, timeline, Browser};

const WAIT: Duration = Duration::from_secs(60);

/// serve's `not-running` gap of pods: (from, to) in ms.
fn not_running_gap(serve: std::net::SocketAddr, token: &str) -> Option<(i64, i64)> {
    let (status, body) = http(
        serve,
        "GET",
        "/_deltascope/history?resource=pods",
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    String::from_utf8(body)
        .expect("NDJSON")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["gap"]["reason"] == "not-running")
        .find_map(|line| {
            let time = |field: &str| {
                deltascope_facts::time::parse_rfc3339_millis(line["gap"][field].as_str()?)
            };
            Some((time("from")?, time("to")?))
        })
}

fn address_of(login_url: &str) -> std::net::SocketAddr {
    let rest = login_url.strip_prefix("http://").expect("http URL");
    rest.split_once('/')
        .expect("a path")
        .0
        .parse()
        .expect("an address")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_serve_did_not_record_is_shaded_and_never_shown_as_a_table() {
    let scratch = Scratch::new("recorded-gap", "recording");
    let history = format!("sqlite:{}", scratch.0.join("h.sqlite").display());
    let (_sim, sim_addr) = start_sim(&["--seed", "23", "--pods", "30", "--churn", "10"]);
    let upstream = format!("http://{sim_addr}");
    let token = random_token();
    let flags = ["--history", history.as_str(), "--token", token.as_str()];
    let first = start_serve_upstream(&upstream, &flags);
    std::thread::sleep(Duration::from_secs(8));
    drop(first);
    let stopped_ms = unix_ms();
    std::thread::sleep(Duration::from_secs(6));
    let (_serve, login_url) = start_serve_upstream(&upstream, &flags);
    let serve = address_of(&login_url);
    let started_again_ms = unix_ms();
    std::thread::sleep(Duration::from_secs(8));
    let (gap_from, gap_to) =
        not_running_gap(serve, &token).expect("serve stored the span it was not running as a gap");
    assert!(
        gap_from <= stopped_ms + 1_000 && gap_to >= started_again_ms - 1_000,
        "the gap {gap_from}..{gap_to} covers the stop {stopped_ms}..{started_again_ms}"
    );

    let browser = Browser::start().await;
    let page_opened_ms = unix_ms();
    browser.client.goto(&login_url).await.expect("login");
    timeline::open_recorded_pods(&browser, &format!("http://{serve}"), WAIT).await;
    timeline::zoom_out(&browser, 3000).await;
    let (recorded, _, title) = browser
        .wait_for(
            "the pods lane to draw serve's record and its gap",
            WAIT,
            || async {
                timeline::recorded_lane(&browser, "pods")
                    .await
                    .filter(|(recorded, gaps, _)| *recorded > 0 && *gaps > 0)
            },
        )
        .await;
    browser.screenshot("recorded-gap-timeline.png").await;
    assert!(
        title.contains("serve did not record from") && title.contains("not-running"),
        "the lane's title says the gap and its reason: {title}"
    );
    assert!(
        recorded > 30,
        "the recorder's first list and churn: {recorded}"
    );
    let (start, end) = timeline::range(&browser).await.expect("the range");
    assert!(start < gap_from && end > page_opened_ms, "{start}..{end}");

    // Inside the gap: no table, the gap said.
    let middle = (gap_from + gap_to) / 2;
    timeline::click_at(&browser, (middle - start) as f64 / (end - start) as f64).await;
    let (state, words, source) = browser
        .wait_for("the moment in the gap said as such", WAIT, || async {
            let value = browser
                .script(
                    "const t = document.querySelector('[data-testid=time-travel]');\
                     const r = document.querySelector('[data-testid=time-travel-record]');\
                     return t && r ? [r.dataset.state, r.textContent.trim(), t.dataset.source] : null;",
                )
                .await;
            let read: (String, String, String) = serde_json::from_value(value).ok()?;
            (read.0 == "gap").then_some(read)
        })
        .await;
    browser.screenshot("recorded-gap-travel.png").await;
    assert_eq!(source, "none", "no table for a moment serve did not see");
    assert!(
        words.contains("not-running") || words.contains("not running"),
        "the reason is said: {words} ({state})"
    );
    let rows = browser.rows().await;
    assert!(rows.is_empty(), "no rows for a moment in a gap: {rows:?}");
}
