//! Scrolling the resource table as a user does, in headless Chromium against
//! `deltascope serve --demo`, with eight resources kept (more than the
//! browser's six connections per origin). The table draws only the rows in
//! view and reuses their elements as it scrolls (`src/ui/table.rs`), so this
//! checks what a person sees while it does: every drawn row shows its own
//! object's cells at every scroll position, the ends of the table show the
//! first and last objects, and a row that changed keeps fading its
//! highlight as the table moves under it instead of lighting up again.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

/// The kept resources: more than six, each its own watch on the channel;
/// the pods last, so theirs is the table shown.
const RESOURCES: [(&str, &str); 8] = [
    ("#/core/v1/nodes", "nodes"),
    ("#/core/v1/services", "services"),
    ("#/core/v1/configmaps", "configmaps"),
    ("#/core/v1/namespaces", "namespaces"),
    ("#/apps/v1/replicasets", "replicasets.apps"),
    ("#/apps/v1/deployments", "deployments.apps"),
    ("#/core/v1/events", "events"),
    ("#/core/v1/pods", "pods"),
];

/// The table rows' height in pixels (the stylesheet's).
const ROW_PX: u64 = 28;

/// The drawn rows: (key, NAMESPACE cell, NAME cell) of each live row.
async fn drawn(browser: &Browser) -> Vec<(String, String, String)> {
    let value = browser
        .script(
            "const titles = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
             const ns = titles.indexOf('NAMESPACE'), name = titles.indexOf('NAME');\
             return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])'))\
               .map(r => [r.dataset.key, r.children[ns].textContent, r.children[name].textContent]);",
        )
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

/// Scrolls the table to `top` pixels and waits until the rows drawn are
/// those of that position: the row at `top` is drawn.
async fn scroll_to(browser: &Browser, top: u64, keys: &[String]) {
    browser
        .script(&format!(
            "const s = document.querySelector('[data-testid=table-scroll]'); s.scrollTop = {top}; s.dispatchEvent(new Event('scroll'));"
        ))
        .await;
    let row = ((top / ROW_PX) as usize).min(keys.len() - 1);
    let expected = keys[row].clone();
    browser
        .wait_for(
            &format!("row {row} ({expected}) drawn at scrollTop {top}"),
            Duration::from_secs(10),
            || async {
                drawn(browser)
                    .await
                    .iter()
                    .any(|(key, _, _)| *key == expected)
                    .then_some(())
            },
        )
        .await;
}

/// Each drawn row shows its own object's namespace and name, and the rows
/// are consecutive keys of the table's order.
fn assert_rows_are_their_objects(rows: &[(String, String, String)], keys: &[String], at: u64) {
    assert!(!rows.is_empty(), "no rows drawn at scrollTop {at}");
    for (key, namespace, name) in rows {
        assert_eq!(
            *key,
            format!("{namespace}/{name}"),
            "at scrollTop {at} a row of {key} shows another object's cells"
        );
    }
    let first = keys
        .iter()
        .position(|k| *k == rows[0].0)
        .unwrap_or_else(|| panic!("{} is not a pod", rows[0].0));
    let expected: Vec<&String> = keys[first..].iter().take(rows.len()).collect();
    let shown: Vec<&String> = rows.iter().map(|(key, _, _)| key).collect();
    assert_eq!(
        shown, expected,
        "at scrollTop {at} the rows are not in order"
    );
}

/// How far the highlight of `key`'s row has run (0 to 1), if it shows.
async fn highlight_progress(browser: &Browser, key: &str) -> Option<f64> {
    browser
        .script(&format!(
            "const r = document.querySelector('tr.changed[data-key=\"{key}\"]');\
             const a = r && r.firstElementChild.getAnimations()[0];\
             return a ? a.effect.getComputedTiming().progress : null;"
        ))
        .await
        .as_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolled_rows_show_their_own_objects_and_a_highlight_runs_on() {
    let server = DemoServer::start(&["--seed", "8", "--pods", "400", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let resources: Vec<(&str, String)> = RESOURCES
        .iter()
        .map(|(hash, name)| (*hash, name.to_string()))
        .collect();
    browser.keep_each(&resources).await;

    // The table's order: by namespace/name, as the sim lists them.
    let (status, body) = server.get("/api/v1/pods");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).expect("the pod list");
    let mut keys: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|pod| {
            format!(
                "{}/{}",
                pod["metadata"]["namespace"].as_str().unwrap_or_default(),
                pod["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    keys.sort();
    assert!(keys.len() >= 300, "the sim has {} pods", keys.len());

    // Down the table in steps of one row, then of many, then back up: at
    // every stop each drawn row is its own object, in order.
    let end = keys.len() as u64 * ROW_PX;
    let stops: Vec<u64> = (0..12)
        .map(|row| 10 * ROW_PX + row * ROW_PX)
        .chain((1..10).map(|step| step * end / 10 + 13))
        .chain([end, 5 * ROW_PX, 0])
        .collect();
    for top in stops {
        scroll_to(&browser, top, &keys).await;
        assert_rows_are_their_objects(&drawn(&browser).await, &keys, top);
    }
    let rows = drawn(&browser).await;
    assert_eq!(
        rows[0].0, keys[0],
        "the top of the table shows the first pod"
    );
    scroll_to(&browser, end, &keys).await;
    let rows = drawn(&browser).await;
    assert_eq!(
        rows.last().map(|(key, _, _)| key),
        keys.last(),
        "the end of the table shows the last pod"
    );

    // A pod in the middle of the view changes: its row lights up, and the
    // light fades on from where it was when the table scrolls by a row.
    let top = 100 * ROW_PX;
    scroll_to(&browser, top, &keys).await;
    let key = keys[105].clone();
    let (status, body) = server.post_json(
        "/_sim/patch",
        &json!({"resource": "pods", "key": key, "patch": {"metadata": {"labels": {"scrolled": "yes"}}}, "manager": "scroll-test"}),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    browser
        .wait_for(
            &format!("{key} to light up"),
            Duration::from_secs(10),
            || highlight_progress(&browser, &key),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = highlight_progress(&browser, &key)
        .await
        .expect("the row is still lit");
    assert!(before > 0.2, "the highlight has run {before}");
    scroll_to(&browser, top + 3 * ROW_PX, &keys).await;
    let after = browser
        .wait_for(
            &format!("{key} drawn after the scroll"),
            Duration::from_secs(5),
            || async {
                let rows = drawn(&browser).await;
                let first = rows.first().map(|(k, _, _)| k.clone())?;
                // the rows moved: the first drawn is no longer that of `top`
                (first != keys[(top / ROW_PX) as usize - 4]).then_some(())?;
                highlight_progress(&browser, &key).await
            },
        )
        .await;
    assert!(
        after >= before - 0.05,
        "the highlight started again as the table scrolled: {before} before, {after} after"
    );
    assert_rows_are_their_objects(&drawn(&browser).await, &keys, top + 3 * ROW_PX);
}
