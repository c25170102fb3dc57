//! The delta history timeline as a user drives it, in headless Chromium
//! against `deltascope serve --demo`, checked against the simulated cluster's
//! own event log (a watch the test opens itself over HTTP):
//! - after a churn burst, `history-stats` counts exactly the deltas the page
//!   received (the initial list plus every watch event of the burst), and the
//!   delta list holds them all;
//! - a chosen object's version list (opened from the delta list) matches the
//!   sim's events for that object, and its diff shows the changed label, also
//!   when two non-consecutive versions are compared;
//! - wheel zoom pauses live-follow and "Live" resumes it; drag pans back;
//!   shift-drag brushes a range whose delta list is newest first, filterable
//!   by type and namespace, virtualised, and exports as a recording of exactly
//!   those deltas; lanes switch to namespaces.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use fantoccini::Locator;
use serde_json::{json, Value};
use support::{Browser, DemoServer};

fn key_of(object: &Value) -> String {
    format!(
        "{}/{}",
        object["metadata"]["namespace"].as_str().unwrap_or(""),
        object["metadata"]["name"].as_str().unwrap_or("")
    )
}

fn rv_of(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The pods and the list's resourceVersion, straight from the server.
fn list_pods(server: &DemoServer) -> (BTreeMap<String, Value>, String) {
    let (status, body) = server.get("/api/v1/pods");
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("list");
    let items = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| (key_of(p), p.clone()))
        .collect();
    (items, rv_of(&list))
}

/// Opens a watch from `rv` that the server closes after `seconds`; the
/// returned thread yields every event it carried, in order.
fn watch_log(
    server: &DemoServer,
    rv: &str,
    seconds: u32,
) -> std::thread::JoinHandle<Vec<(String, Value)>> {
    let (addr, token) = (server.addr, server.token.clone());
    let path = format!("/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds={seconds}");
    std::thread::spawn(move || {
        let (status, body) = support::http(
            addr,
            "GET",
            &path,
            &[("Authorization", &format!("Bearer {token}"))],
            None,
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).expect("watch event JSON"))
            .filter(|e| e["type"] != "BOOKMARK")
            .map(|e| {
                (
                    e["type"].as_str().unwrap_or("").to_string(),
                    e["object"].clone(),
                )
            })
            .collect()
    })
}

async fn wait_synced(browser: &Browser, count: usize) {
    browser
        .wait_for("the initial list", Duration::from_secs(60), || async {
            let (c, synced, _, _) = browser.store_stats().await?;
            (synced == "true" && c == count.to_string()).then_some(())
        })
        .await;
}

/// The page's digest reaches the cluster's. The cluster's is read again each
/// time: when churn stops, the sim may still be making writes it owed (a
/// digest read once could be left behind, and the page would never "catch up").
async fn caught_up(browser: &Browser, server: &DemoServer) {
    browser
        .wait_for("the page to catch up", Duration::from_secs(30), || async {
            let expected = server.sim_digest("pods");
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == expected).then_some(())
        })
        .await;
}

async fn number(browser: &Browser, css: &str, attr: &str) -> Option<i64> {
    browser.attr(css, attr).await?.parse().ok()
}

/// Dispatches mouse events on the timeline canvas at fractions of its width.
async fn canvas_gesture(browser: &Browser, script_body: &str) {
    let script = format!(
        "const c = document.querySelector('[data-testid=timeline] canvas');\
         const r = c.getBoundingClientRect();\
         const at = (f) => r.left + r.width * f; const y = r.top + 5;\
         const fire = (type, f, extra) => c.dispatchEvent(new MouseEvent(type, Object.assign({{clientX: at(f), clientY: y, bubbles: true}}, extra || {{}})));\
         {script_body}"
    );
    browser
        .client
        .execute(&script, vec![])
        .await
        .expect("gesture");
}

/// (seq, key, type) of the delta rows in the DOM, top to bottom.
async fn delta_rows(browser: &Browser) -> Vec<(u64, String, String)> {
    let script =
        "return Array.from(document.querySelectorAll('[data-testid=delta-list] tr[data-seq]'))\
                  .map(r => [r.dataset.seq, r.dataset.deltaKey, r.dataset.deltaType]);";
    let value = browser
        .client
        .execute(script, vec![])
        .await
        .unwrap_or(Value::Null);
    value
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| {
                    Some((
                        r[0].as_str()?.parse().ok()?,
                        r[1].as_str()?.to_string(),
                        r[2].as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_counts_versions_and_diffs_match_the_sims_event_log() {
    let server = DemoServer::start(&["--seed", "41", "--pods", "60", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    wait_synced(&browser, 60).await;
    let (initial, rv) = list_pods(&server);
    assert_eq!(initial.len(), 60);

    // The sim's event log for the burst: a watch of our own from the list's RV.
    let log = watch_log(&server, &rv, 6);
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 150}));
    tokio::time::sleep(Duration::from_millis(2000)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server).await;
    let events = log.join().expect("watch thread");
    assert!(events.len() > 50, "the burst made {} events", events.len());

    // Every delta the page received: the list (one Replaced each) + each event.
    let expected = (initial.len() + events.len()) as i64;
    let stats = "[data-testid=history-stats]";
    let deltas = browser
        .wait_for(
            "history-stats to settle",
            Duration::from_secs(10),
            || async { number(&browser, stats, "data-deltas").await },
        )
        .await;
    assert_eq!(deltas, expected, "history-stats vs the sim's events");
    assert_eq!(number(&browser, stats, "data-dropped").await, Some(0));
    browser.click("[data-testid=toggle-deltas]").await;
    browser
        .wait_for(
            "the delta list to hold them all",
            Duration::from_secs(10),
            || async {
                (number(&browser, "[data-testid=delta-list]", "data-total").await? == expected)
                    .then_some(())
            },
        )
        .await;

    // The object to inspect: a pod that was relabelled (and, among those, changed most).
    let mut versions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (key, object) in &initial {
        versions
            .entry(key.clone())
            .or_default()
            .push(object.clone());
    }
    for (_, object) in &events {
        versions
            .entry(key_of(object))
            .or_default()
            .push(object.clone());
    }
    let relabelled = |objects: &Vec<Value>| {
        objects
            .windows(2)
            .any(|w| w[0]["metadata"]["labels"] != w[1]["metadata"]["labels"])
    };
    let (key, objects) = versions
        .iter()
        .filter(|(_, objects)| relabelled(objects))
        .max_by_key(|(_, objects)| objects.len())
        .expect("the burst relabelled some pod");
    let expected_rvs: Vec<String> = objects.iter().map(rv_of).collect();
    let name = key.split('/').nth(1).expect("name").to_string();

    // Open it from the delta list.
    browser.type_into("[data-testid=delta-text]", &name).await;
    browser
        .wait_for("the object's deltas", Duration::from_secs(10), || async {
            let rows = delta_rows(&browser).await;
            (rows.len() == expected_rvs.len() && rows.iter().all(|(_, k, _)| k == key))
                .then_some(())
        })
        .await;
    browser.click("[data-testid=delta-list] tr[data-seq]").await;
    browser
        .wait_for("the object view", Duration::from_secs(10), || async {
            (browser
                .attr("[data-testid=object-view]", "data-key")
                .await?
                == *key)
                .then_some(())
        })
        .await;
    browser
        .click("[data-testid=object-view] .tabs button:nth-child(3)")
        .await;
    let shown_rvs = browser
        .wait_for("the version list", Duration::from_secs(10), || async {
            let value = browser
                .client
                .execute(
                    "return Array.from(document.querySelectorAll('[data-testid=object-history] li.version')).map(v => v.dataset.rv);",
                    vec![],
                )
                .await
                .ok()?;
            let mut rvs: Vec<String> = serde_json::from_value(value).ok()?;
            rvs.reverse(); // shown newest first
            (!rvs.is_empty()).then_some(rvs)
        })
        .await;
    assert_eq!(
        shown_rvs, expected_rvs,
        "versions of {key} vs the sim's events"
    );

    // The consecutive diff shows the changed label.
    let label_changes = browser
        .client
        .execute(
            "return document.querySelectorAll('[data-testid=object-history] li.version li.change[data-path^=\"/metadata/labels/\"]').length;",
            vec![],
        )
        .await
        .expect("count");
    assert!(
        label_changes.as_u64().unwrap_or(0) > 0,
        "a label change is shown"
    );

    // Any two versions: the first against the last still shows the label (or
    // the same labels, if it was changed back), and always the RV change when
    // bookkeeping is shown.
    let first_labels = &objects[0]["metadata"]["labels"];
    let last_labels = &objects[objects.len() - 1]["metadata"]["labels"];
    let from = browser
        .client
        .find(Locator::Css("[data-testid=diff-from]"))
        .await
        .expect("from picker");
    from.select_by_value("0").await.expect("oldest");
    let to = browser
        .client
        .find(Locator::Css("[data-testid=diff-to]"))
        .await
        .expect("to picker");
    to.select_by_value(&(objects.len() - 1).to_string())
        .await
        .expect("newest");
    let paths = browser
        .wait_for("the chosen diff", Duration::from_secs(10), || async {
            let value = browser
                .client
                .execute(
                    "const d = document.querySelector('[data-testid=version-diff]'); if (!d) return null;\
                     return [d.dataset.fromRv, d.dataset.toRv, Array.from(d.querySelectorAll('li.change')).map(c => c.dataset.path)];",
                    vec![],
                )
                .await
                .ok()?;
            let (from_rv, to_rv, paths): (String, String, Vec<String>) =
                serde_json::from_value(value).ok()?;
            (from_rv == expected_rvs[0] && to_rv == expected_rvs[expected_rvs.len() - 1])
                .then_some(paths)
        })
        .await;
    let label_diff = paths.iter().any(|p| p.starts_with("/metadata/labels/"));
    assert_eq!(
        label_diff,
        first_labels != last_labels,
        "label paths in the chosen diff: {paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p == "/metadata/resourceVersion"),
        "bookkeeping is folded by default: {paths:?}"
    );
    browser.screenshot("object-compare.png").await;
    browser.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zoom_pan_brush_and_the_delta_list() {
    let server = DemoServer::start(&["--seed", "43", "--pods", "80", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    wait_synced(&browser, 80).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 150}));
    tokio::time::sleep(Duration::from_millis(2000)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server).await;
    let timeline = "[data-testid=timeline]";
    assert_eq!(
        browser.attr(timeline, "data-follow").await.as_deref(),
        Some("true")
    );

    // Wheel up in the middle: zoomed in, no longer reaching now, so live-follow pauses.
    let span = |s: Option<i64>, e: Option<i64>| e.unwrap_or(0) - s.unwrap_or(0);
    let before = span(
        number(&browser, timeline, "data-start").await,
        number(&browser, timeline, "data-end").await,
    );
    browser
        .client
        .execute(
            "const c = document.querySelector('[data-testid=timeline] canvas'); const r = c.getBoundingClientRect();\
             c.dispatchEvent(new WheelEvent('wheel', {clientX: r.left + r.width / 2, clientY: r.top + 5, deltaY: -400, bubbles: true, cancelable: true}));",
            vec![],
        )
        .await
        .expect("wheel");
    let zoomed = browser
        .wait_for("the zoom", Duration::from_secs(10), || async {
            let follow = browser.attr(timeline, "data-follow").await?;
            let now = span(
                number(&browser, timeline, "data-start").await,
                number(&browser, timeline, "data-end").await,
            );
            (follow == "false" && now < before * 2 / 3).then_some(now)
        })
        .await;
    browser
        .client
        .find(Locator::Css("[data-testid=resume-live]"))
        .await
        .expect("a Live button while paused");

    // Drag to the right: back in time by that share of the span.
    let start_before = number(&browser, timeline, "data-start")
        .await
        .expect("start");
    canvas_gesture(
        &browser,
        "fire('mousedown', 0.5); fire('mousemove', 0.6); fire('mousemove', 0.75); fire('mouseup', 0.75);",
    )
    .await;
    browser
        .wait_for("the pan", Duration::from_secs(10), || async {
            let start = number(&browser, timeline, "data-start").await?;
            let moved = start_before - start;
            (moved > zoomed / 8 && moved < zoomed / 3).then_some(())
        })
        .await;
    assert!(
        browser
            .attr("[data-testid=time-travel]", "data-at")
            .await
            .is_none(),
        "a drag is not a click"
    );

    // Back to live, then brush the middle of everything.
    browser.click("[data-testid=resume-live]").await;
    browser
        .wait_for("live-follow again", Duration::from_secs(10), || async {
            (browser.attr(timeline, "data-follow").await? == "true").then_some(())
        })
        .await;
    canvas_gesture(
        &browser,
        "fire('mousedown', 0.2, {shiftKey: true}); fire('mousemove', 0.5, {shiftKey: true}); fire('mousemove', 0.995, {shiftKey: true}); fire('mouseup', 0.995, {shiftKey: true});",
    )
    .await;
    let (from, to) = browser
        .wait_for("the brush", Duration::from_secs(10), || async {
            Some((
                number(&browser, timeline, "data-brush-from").await?,
                number(&browser, timeline, "data-brush-to").await?,
            ))
        })
        .await;
    assert!(from < to);
    let list = "[data-testid=delta-list]";
    let total = browser
        .wait_for(
            "the brushed delta list",
            Duration::from_secs(10),
            || async {
                number(&browser, list, "data-total")
                    .await
                    .filter(|t| *t > 0)
            },
        )
        .await;
    let recorded = number(&browser, "[data-testid=history-stats]", "data-deltas")
        .await
        .expect("deltas");
    assert!(
        total < recorded,
        "the brush selects part of the history: {total} of {recorded}"
    );
    let rows = delta_rows(&browser).await;
    assert!(
        rows.windows(2).all(|w| w[0].0 > w[1].0),
        "newest first: {:?}",
        &rows[..rows.len().min(5)]
    );
    if total > 60 {
        assert!(
            rows.len() < total as usize,
            "virtualised: {} rows in the DOM of {total}",
            rows.len()
        );
    }

    // Filters: only Deleted; then one namespace.
    for kind in ["Replaced", "Sync", "Added", "Updated"] {
        browser
            .click(&format!("[data-testid=delta-type-{kind}]"))
            .await;
    }
    let deleted = browser
        .wait_for("only deletions", Duration::from_secs(10), || async {
            let rows = delta_rows(&browser).await;
            let t = number(&browser, list, "data-total").await?;
            (t < total && rows.iter().all(|(_, _, kind)| kind == "Deleted")).then_some(t)
        })
        .await;
    for kind in ["Replaced", "Sync", "Added", "Updated"] {
        browser
            .click(&format!("[data-testid=delta-type-{kind}]"))
            .await;
    }
    let namespace = rows
        .first()
        .and_then(|(_, key, _)| key.split('/').next().map(str::to_string))
        .expect("a row");
    browser
        .type_into("[data-testid=delta-namespace]", &namespace)
        .await;
    browser
        .wait_for("one namespace", Duration::from_secs(10), || async {
            let rows = delta_rows(&browser).await;
            let t = number(&browser, list, "data-total").await?;
            (t > 0
                && t <= total
                && !rows.is_empty()
                && rows
                    .iter()
                    .all(|(_, key, _)| key.starts_with(&format!("{namespace}/"))))
            .then_some(())
        })
        .await;
    browser.type_into("[data-testid=delta-namespace]", "").await;
    browser
        .wait_for("the filter cleared", Duration::from_secs(10), || async {
            (number(&browser, list, "data-total").await? == total).then_some(())
        })
        .await;

    // Export the selection: exactly the brushed deltas, as a recording.
    let recording = browser
        .download_by_clicking("[data-testid=export]", "the exported selection")
        .await;
    let events = deltascope::api::recording::parse_recording(&recording)
        .expect("a recording")
        .events;
    assert_eq!(events.len() as i64, total, "the selection exported");
    assert_eq!(
        events.iter().filter(|e| e.delta_type == "Deleted").count() as i64,
        deleted
    );

    // Lanes per namespace.
    browser
        .client
        .find(Locator::Css("[data-testid=lane-mode]"))
        .await
        .expect("lane mode")
        .select_by_value("namespace")
        .await
        .expect("namespace lanes");
    browser
        .wait_for("namespace lanes", Duration::from_secs(10), || async {
            let lanes = number(&browser, timeline, "data-lanes").await?;
            (browser.attr(timeline, "data-mode").await? == "namespace" && lanes > 1).then_some(())
        })
        .await;
    browser.screenshot("timeline-brush.png").await;

    // A click on a row opens that object.
    let (_, key, _) = delta_rows(&browser)
        .await
        .into_iter()
        .next()
        .expect("a row");
    browser.click("[data-testid=delta-list] tr[data-seq]").await;
    browser
        .wait_for("the object view", Duration::from_secs(10), || async {
            (browser
                .attr("[data-testid=object-view]", "data-key")
                .await?
                == key)
                .then_some(())
        })
        .await;
    browser.client.close().await.expect("close");
}
