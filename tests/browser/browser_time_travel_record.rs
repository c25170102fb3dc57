//! Time travel to a moment recorded before the page opened, in headless
//! Chromium against `deltascope serve --demo` recording into a SQLite file:
//! the cluster churns for ~20 s with no page open; then a fresh browser
//! opens pods, zooms the timeline out past its own history and clicks a
//! moment in that recorded span. The table is serve's record then
//! (`[data-testid=time-travel]` `data-source=recorder`, its
//! `data-resource-version` the RV serve's `history/state` answers for
//! that moment, "as recorded by serve at …"), and `store-stats`
//! `data-digest` is the digest `/_sim/digest?resource=pods&rv=RV` gives
//! for that RV (the sim keeps its past). *Back to live* returns to the
//! live store and its digest.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::scratch::{unix_ms, Scratch};
use support::{timeline, Browser, DemoServer};

const WAIT: Duration = Duration::from_secs(60);

/// serve's state of pods at `at_ms`: (status, its resourceVersion, the
/// digest of its items).
fn recorded_state(server: &DemoServer, at_ms: i64) -> (u16, String, String) {
    let at = deltascope_facts::time::format_rfc3339_millis(at_ms).expect("a time");
    let path = format!(
        "/_deltascope/history/state?resource=pods&at={}",
        deltascope_facts::percent::encode_query_value(&at)
    );
    let (status, body) = server.get(&path);
    if status != 200 {
        return (
            status,
            String::from_utf8_lossy(&body).into_owned(),
            String::new(),
        );
    }
    let list: Value = serde_json::from_slice(&body).expect("a List");
    let pairs = list["items"].as_array().expect("items").iter().map(|item| {
        let meta = &item["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let key = match meta["namespace"].as_str() {
            Some(namespace) => format!("{namespace}/{name}"),
            None => name.to_string(),
        };
        (
            key,
            meta["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    });
    let digest = deltascope_facts::digest::digest_of(pairs);
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("metadata.resourceVersion")
        .to_string();
    (status, rv, digest)
}

/// `/_sim/digest?resource=pods&rv=RV`.
fn sim_digest_at(server: &DemoServer, rv: &str) -> String {
    let (status, body) = server.get(&format!("/_sim/digest?resource=pods&rv={rv}"));
    assert_eq!(
        status,
        200,
        "/_sim/digest at {rv}: {}",
        String::from_utf8_lossy(&body)
    );
    let value: Value = serde_json::from_slice(&body).expect("digest JSON");
    value["digest"].as_str().expect("digest").to_string()
}

/// `[data-testid=time-travel]`: data-at, data-source, data-resource-version,
/// and the record's line (data-state, words), read in one script.
async fn travel_banner(browser: &Browser) -> Option<Vec<String>> {
    let value = browser
        .script(
            "const t = document.querySelector('[data-testid=time-travel]');\
             if (!t) return null;\
             const r = t.querySelector('[data-testid=time-travel-record]');\
             return [t.getAttribute('data-at') || '', t.getAttribute('data-source') || '',\
                     t.getAttribute('data-resource-version') || '',\
                     r ? r.getAttribute('data-state') : '', r ? r.textContent.trim() : ''];",
        )
        .await;
    serde_json::from_value(value).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_travel_reaches_a_moment_serve_recorded_before_the_page_opened() {
    let scratch = Scratch::new("time-travel-record", "recording");
    let history = format!("sqlite:{}", scratch.0.join("h.sqlite").display());
    let server = DemoServer::start(&[
        "--seed",
        "17",
        "--pods",
        "40",
        "--churn",
        "20",
        "--history",
        &history,
    ]);
    let started_ms = unix_ms();
    // Churn with no page open.
    std::thread::sleep(Duration::from_secs(20));
    // A moment in that span, after the recorder's first list.
    let target_ms = started_ms + 12_000;
    let (status, rv, _) = recorded_state(&server, target_ms);
    assert_eq!(status, 200, "serve recorded pods then: {rv}");

    let browser = Browser::start().await;
    let page_opened_ms = unix_ms();
    browser.client.goto(&server.login_url).await.expect("login");
    timeline::open_recorded_pods(&browser, &format!("http://{}", server.addr), WAIT).await;

    // Zoom the timeline out around now, past the page's own history.
    timeline::zoom_out(&browser, 2000).await;
    browser
        .wait_for("the timeline to reach the recorded span", WAIT, || async {
            let (start, end) = timeline::range(&browser).await?;
            (start < target_ms - 3_000 && end > page_opened_ms).then_some(())
        })
        .await;
    let (start, end) = timeline::range(&browser).await.expect("the range");
    let fraction = (target_ms - start) as f64 / (end - start) as f64;
    timeline::click_at(&browser, fraction).await;

    let banner = browser
        .wait_for("serve's record shown", WAIT, || async {
            let banner = travel_banner(&browser).await?;
            (banner[1] == "recorder" && !banner[2].is_empty()).then_some(banner)
        })
        .await;
    browser.screenshot("time-travel-record.png").await;
    let at_ms: i64 = banner[0].parse().expect("data-at");
    assert!(
        (at_ms - target_ms).abs() < 5_000 && at_ms < page_opened_ms,
        "the moment clicked, before the page opened: {at_ms} ({target_ms}, {page_opened_ms})"
    );
    let shown_rv = banner[2].clone();
    assert_eq!(banner[3], "recorded", "{banner:?}");
    assert!(
        banner[4].starts_with("pods as recorded by serve at ")
            && banner[4].contains(&format!("(resourceVersion {shown_rv})")),
        "{banner:?}"
    );
    // serve answers that moment with that resourceVersion, and the page
    // shows its digest, the cluster's at that resourceVersion.
    let (status, served_rv, served_digest) = recorded_state(&server, at_ms);
    assert_eq!(
        (status, served_rv.as_str()),
        (200, shown_rv.as_str()),
        "serve's state at data-at"
    );
    let expected = sim_digest_at(&server, &shown_rv);
    assert_eq!(
        served_digest, expected,
        "serve's record is the cluster then"
    );
    browser
        .wait_for("the recorded table's digest", WAIT, || async {
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == expected).then_some(())
        })
        .await;
    let count: usize = browser
        .attr("[data-testid=time-travel]", "data-count")
        .await
        .and_then(|c| c.parse().ok())
        .expect("data-count");
    assert!(count > 0, "the recorded table has rows");
    let rows = browser.rows().await;
    assert!(!rows.is_empty(), "rows are drawn");

    // Back to live: the live store and its digest.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    browser.click("[data-testid=back-to-live]").await;
    browser
        .wait_for("the live view again", WAIT, || async {
            if travel_banner(&browser).await.is_some() {
                return None;
            }
            let expected = server.sim_digest("pods");
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == expected).then_some(())
        })
        .await;
    browser.client.close().await.expect("close");
}
