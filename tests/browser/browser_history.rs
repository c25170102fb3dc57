//! The history as a user sees it, in headless Chromium against `deltascope
//! serve --demo`: the timeline counts every delta the page recorded, a click
//! at its start shows the table as it was (a pod deleted since is there again,
//! clearly marked as the past), and "Back to live" returns to the live store.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

fn listed_keys(server: &DemoServer) -> BTreeSet<String> {
    let (status, body) = server.get("/api/v1/pods");
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("list");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["metadata"]["namespace"].as_str().unwrap_or(""),
                p["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_travel_shows_a_deleted_pod_before_its_deletion() {
    let server = DemoServer::start(&["--seed", "21", "--pods", "120", "--churn", "0"]);
    let before = listed_keys(&server);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser
        .wait_for("the initial list", Duration::from_secs(60), || async {
            let (count, synced, _, _) = browser.store_stats().await?;
            (synced == "true" && count == "120").then_some(())
        })
        .await;
    // Let the first bucket of the timeline hold only the initial list.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Churn until some pod that existed at the start is gone.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 300}));
    let deleted = browser
        .wait_for(
            "a churn that deletes a listed pod",
            Duration::from_secs(40),
            || async {
                let now = listed_keys(&server);
                before.difference(&now).next().cloned()
            },
        )
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let expected = server.sim_digest("pods");
    browser
        .wait_for("the page to catch up", Duration::from_secs(30), || async {
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == expected).then_some(())
        })
        .await;
    let recorded: u64 = browser
        .attr("[data-testid=history-stats]", "data-deltas")
        .await
        .and_then(|d| d.parse().ok())
        .expect("deltas");
    browser
        .wait_for(
            "the timeline to show every recorded delta",
            Duration::from_secs(10),
            || async {
                let marks: u64 = browser
                    .attr("[data-testid=timeline]", "data-marks")
                    .await?
                    .parse()
                    .ok()?;
                (marks == recorded).then_some(())
            },
        )
        .await;

    // Filter to the deleted pod: live, it is gone.
    let name = deleted.split('/').nth(1).expect("name").to_string();
    let filter = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=text-filter]"))
        .await
        .expect("filter");
    filter.send_keys(&name).await.expect("type the name");
    browser
        .wait_for(
            "no live row for the deleted pod",
            Duration::from_secs(10),
            || async { browser.rows().await.is_empty().then_some(()) },
        )
        .await;

    // Travel to the start: it is back, and the view says it is the past.
    let canvas = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=timeline] canvas"))
        .await
        .expect("canvas");
    let script = "const c = arguments[0]; const r = c.getBoundingClientRect();\
                  c.dispatchEvent(new MouseEvent('click', {clientX: r.left + 2, clientY: r.top + 10, bubbles: true}));";
    browser
        .client
        .execute(
            script,
            vec![serde_json::to_value(&canvas).expect("element")],
        )
        .await
        .expect("click");
    browser
        .wait_for(
            "the deleted pod in the past view",
            Duration::from_secs(10),
            || async {
                browser.attr("[data-testid=time-travel]", "data-at").await?;
                let rows = browser.rows().await;
                rows.iter().any(|(k, _)| *k == deleted).then_some(())
            },
        )
        .await;
    browser.screenshot("time-travel.png").await;

    // Back to live.
    browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=back-to-live]"))
        .await
        .expect("button")
        .click()
        .await
        .expect("click");
    browser
        .wait_for("the live view again", Duration::from_secs(10), || async {
            let banner = browser
                .client
                .find(fantoccini::Locator::Css("[data-testid=time-travel]"))
                .await;
            (banner.is_err() && browser.rows().await.is_empty()).then_some(())
        })
        .await;
    browser.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_recording_replays_offline_to_the_same_digest() {
    let server = DemoServer::start(&["--seed", "33", "--pods", "80", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser
        .wait_for("the initial list", Duration::from_secs(60), || async {
            let (count, synced, _, _) = browser.store_stats().await?;
            (synced == "true" && count == "80").then_some(())
        })
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 200}));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let recorded_digest = server.sim_digest("pods");
    browser
        .wait_for("the page to catch up", Duration::from_secs(30), || async {
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == recorded_digest).then_some(())
        })
        .await;

    // What "Export recording" downloads.
    let recording = browser
        .download_by_clicking("[data-testid=export]", "the exported NDJSON")
        .await;
    let lines = recording.lines().count();
    assert!(
        lines > 80,
        "the recording holds the list and the churn: {lines} lines"
    );
    let path = support::artifacts_dir().join("recording.ndjson");
    std::fs::write(&path, &recording).expect("write the recording");

    // Import it at 100×: the page replays it offline to the same digest.
    let speed = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=replay-speed]"))
        .await
        .expect("speed");
    speed.select_by_value("100").await.expect("100×");
    let input = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=import]"))
        .await
        .expect("import");
    input
        .send_keys(&path.display().to_string())
        .await
        .expect("choose the file");
    browser
        .wait_for(
            "the replay to reach the recorded digest",
            Duration::from_secs(30),
            || async {
                browser.attr("[data-testid=replay]", "role").await?;
                let (_, synced, _, digest) = browser.store_stats().await?;
                (synced == "true" && digest == recorded_digest).then_some(())
            },
        )
        .await;
    // The replay recorded the same deltas as the live session, with the same
    // types: the initial list as Replaced again, not as Added.
    let deltas = |text: &str| -> Vec<(String, String, String)> {
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|v| {
                let text = |p: &str| {
                    v.pointer(p)
                        .and_then(|x| x.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                (
                    text("/deltaType"),
                    text("/object/metadata/name"),
                    text("/object/metadata/resourceVersion"),
                )
            })
            .collect()
    };
    let replayed = browser
        .download_by_clicking("[data-testid=export]", "the replayed history")
        .await;
    let (live, again) = (deltas(&recording), deltas(&replayed));
    assert_eq!(live.len(), lines, "every recorded line is a delta");
    assert!(
        live.iter().any(|d| d.0 == "Replaced"),
        "the live list was recorded as Replaced"
    );
    assert_eq!(
        again, live,
        "the replay's history differs from the recording"
    );

    // A file that is not a recording is refused with the line that is wrong.
    let bad = support::artifacts_dir().join("not-a-recording.ndjson");
    std::fs::write(&bad, "{\"hello\": 1}\n").expect("write");
    let input = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=import]"))
        .await
        .expect("import");
    input
        .send_keys(&bad.display().to_string())
        .await
        .expect("choose the bad file");
    let error = browser
        .wait_for("the import error", Duration::from_secs(10), || async {
            browser
                .client
                .find(fantoccini::Locator::Css("[data-testid=import-error]"))
                .await
                .ok()?
                .text()
                .await
                .ok()
        })
        .await;
    assert!(error.contains("line 1"), "{error}");
    browser.client.close().await.expect("close");
}
