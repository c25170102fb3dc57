//! The kept resources and the retention settings, and the table's fading
//! deleted rows, as a person sees them in headless Chromium against
//! `deltascope serve --demo`:
//! - opening pods and then deployments keeps both live: the timeline draws
//!   one lane per resource, labelled by it, each with marks; the kept list
//!   names both; the delta list merges both and filters by resource; going
//!   back to pods reuses its informer (no new list), which kept watching
//!   while hidden; × stops a kept resource (its lane goes, its watch closes);
//! - the settings panel explains bad input, and a small max-deltas makes
//!   `history-stats` report evictions at once and keeps the held count under
//!   the limit while churn continues; the limit survives a reload;
//! - a pod deleted through the sim's control API stays as a fading row
//!   (`data-deleted`) for about 1.5 s while `store-stats` already counts it
//!   gone and matches the sim's digest, then the row goes; also while the
//!   table is sorted; ages tick and changed rows flash.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::{Duration, Instant};

use deltascope::model::table::natural_cmp;
use serde_json::{json, Value};
use support::{Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);

/// The page's address without the hash (after the login redirect).
fn base_url(server: &DemoServer) -> String {
    format!("http://{}/", server.addr)
}

async fn goto(browser: &Browser, url: &str) {
    browser
        .client
        .goto(url)
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
}

/// (lane name, deltas in view) of the timeline's lanes, top to bottom.
async fn lanes(browser: &Browser) -> Vec<(String, u64)> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=timeline-lane]'))\
               .map(l => [l.dataset.lane, Number(l.dataset.count)]);",
        )
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

/// (resource, shown) of the kept list's chips.
async fn kept(browser: &Browser) -> Vec<(String, bool)> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
               .map(k => [k.dataset.resource, k.dataset.shown === 'true']);",
        )
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

/// How many informers the page has started (each leaves a `list-start` mark).
async fn informers_started(browser: &Browser) -> u64 {
    browser
        .script("return performance.getEntriesByName('deltascope:list-start').length;")
        .await
        .as_u64()
        .unwrap_or(0)
}

async fn caught_up(browser: &Browser, server: &DemoServer, resource: &str) {
    browser
        .wait_for(&format!("{resource} to match the sim"), SYNC, || async {
            let expected = server.sim_digest(resource);
            let shown = browser
                .attr("[data-testid=store-stats]", "data-resource")
                .await?;
            let (_, _, _, digest) = browser.store_stats().await?;
            (shown == resource && digest == expected).then_some(())
        })
        .await;
}

fn open_watches(server: &DemoServer) -> u64 {
    let (status, body) = server.get("/_sim/stats");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let stats: Value = serde_json::from_slice(&body).expect("stats JSON");
    stats["openWatches"].as_u64().expect("openWatches")
}

async fn number(browser: &Browser, css: &str, attr: &str) -> Option<u64> {
    browser.attr(css, attr).await?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_opened_resource_keeps_its_lane_and_watch_until_stopped() {
    let server = DemoServer::start(&["--seed", "17", "--pods", "40", "--churn", "0"]);
    let browser = Browser::start().await;
    goto(&browser, &server.login_url).await;
    browser.wait_synced("pods", SYNC).await;
    goto(
        &browser,
        &format!("{}#/apps/v1/deployments", base_url(&server)),
    )
    .await;
    browser.wait_synced("deployments.apps", SYNC).await;
    assert_eq!(informers_started(&browser).await, 2);

    // One lane per resource, labelled by it, each with marks.
    let shown = browser
        .wait_for("a lane per kept resource", SYNC, || async {
            let lanes = lanes(&browser).await;
            let names: Vec<&str> = lanes.iter().map(|(n, _)| n.as_str()).collect();
            (names == ["pods", "deployments.apps"] && lanes.iter().all(|(_, c)| *c > 0))
                .then_some(lanes)
        })
        .await;
    assert_eq!(shown[0].1, 40, "the pods lane holds the 40 listed pods");
    assert_eq!(
        browser
            .attr("[data-testid=timeline]", "data-lanes")
            .await
            .as_deref(),
        Some("2")
    );
    assert_eq!(
        kept(&browser).await,
        [
            ("pods".to_string(), false),
            ("deployments.apps".to_string(), true)
        ]
    );
    browser.screenshot("lanes-two-resources.png").await;

    // The delta list covers both, merged, and filters by resource.
    browser.click("[data-testid=toggle-deltas]").await;
    let resources_in_list = "return Array.from(document.querySelectorAll('[data-testid=delta-list] tr[data-seq]')).map(r => r.dataset.resource);";
    browser
        .wait_for("the deltas of both resources", SYNC, || async {
            let total = number(&browser, "[data-testid=delta-list]", "data-total").await?;
            let rows: Vec<String> =
                serde_json::from_value(browser.script(resources_in_list).await).ok()?;
            // 40 pods and the deployments were listed; the newest (deployments) show first.
            (total > 40 && rows.iter().any(|r| r == "deployments.apps")).then_some(())
        })
        .await;
    browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=delta-resource]"))
        .await
        .expect("resource filter")
        .select_by_value("pods")
        .await
        .expect("filter to pods");
    browser
        .wait_for("only pods in the delta list", SYNC, || async {
            let rows: Vec<String> =
                serde_json::from_value(browser.script(resources_in_list).await).ok()?;
            let total = number(&browser, "[data-testid=delta-list]", "data-total").await?;
            (total == 40 && !rows.is_empty() && rows.iter().all(|r| r == "pods")).then_some(())
        })
        .await;

    // Churn while deployments are shown: the hidden pods informer keeps watching.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 150}));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server, "deployments.apps").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Back to pods: the kept informer (no new list), already up to date.
    let started = Instant::now();
    goto(&browser, &format!("{}#/core/v1/pods", base_url(&server))).await;
    caught_up(&browser, &server, "pods").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the kept pods were current at once ({:?})",
        started.elapsed()
    );
    assert_eq!(informers_started(&browser).await, 2, "no new informer");
    let pods_lane = browser
        .wait_for("the pods lane to count the churn", SYNC, || async {
            let lanes = lanes(&browser).await;
            lanes
                .iter()
                .find(|(n, _)| n == "pods")
                .filter(|(_, c)| *c > 40)
                .map(|(_, c)| *c)
        })
        .await;
    assert!(pods_lane > 40);

    // × stops deployments: its chip and lane go, and so does its watch.
    // Discovery's CRD watch opens on its own schedule, once the channel is
    // up; wait for it, or its opening could hide the deployments' closing.
    browser.wait_crd_watch_open(SYNC).await;
    let watches_before = open_watches(&server);
    assert!(
        watches_before >= 3,
        "pods, deployments and CRD watches: {watches_before}"
    );
    let stop =
        "[data-testid=kept-resource][data-resource='deployments.apps'] [data-testid=stop-kept]";
    browser.click(stop).await;
    browser
        .wait_for("deployments to stop", SYNC, || async {
            let names: Vec<String> = lanes(&browser).await.into_iter().map(|(n, _)| n).collect();
            (kept(&browser).await == [("pods".to_string(), true)] && names == ["pods"])
                .then_some(())
        })
        .await;
    browser
        .wait_for("the deployments watch to close", SYNC, || async {
            (open_watches(&server) == watches_before - 1).then_some(())
        })
        .await;
    // The shown resource cannot be stopped from the list.
    let disabled = browser
        .attr(
            "[data-testid=kept-resource][data-resource=pods] [data-testid=stop-kept]",
            "disabled",
        )
        .await;
    assert!(disabled.is_some(), "the table's own resource stays");
    browser.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_retention_limit_evicts_at_once_and_survives_a_reload() {
    let server = DemoServer::start(&["--seed", "23", "--pods", "60", "--churn", "0"]);
    let browser = Browser::start().await;
    goto(&browser, &server.login_url).await;
    browser.wait_synced("pods", SYNC).await;
    let stats = "[data-testid=history-stats]";
    assert_eq!(number(&browser, stats, "data-dropped").await, Some(0));

    browser.click("[data-testid=settings]").await;
    browser
        .wait_for("the settings panel", SYNC, || async {
            browser
                .attr("[data-testid=settings-panel]", "aria-label")
                .await
        })
        .await;
    let deltas_input = "[data-testid=retention-max-deltas]";
    let mib_input = "[data-testid=retention-max-mb]";
    let value_of = |css: &'static str| {
        let browser = &browser;
        async move {
            browser
                .script(&format!("return document.querySelector('{css}').value;"))
                .await
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
    };
    assert_eq!(value_of(deltas_input).await, "50000", "the default");
    assert_eq!(value_of(mib_input).await, "64", "the default");

    // Bad input is explained, and changes nothing.
    for (deltas, mib, words) in [
        ("lots", "64", "max deltas \"lots\" is not a number"),
        ("5", "64", "max deltas must be between 10 and"),
        ("20", "0.1", "max MiB must be between 0.5 and 256"),
    ] {
        browser.type_into(deltas_input, deltas).await;
        browser.type_into(mib_input, mib).await;
        browser.click("[data-testid=retention-apply]").await;
        let shown = browser
            .wait_for("the settings error", SYNC, || async {
                let text = browser
                    .script("const e = document.querySelector('[data-testid=settings-error]'); return e ? e.textContent : null;")
                    .await;
                text.as_str().map(str::to_string)
            })
            .await;
        assert!(shown.contains(words), "{shown:?} should say {words:?}");
    }
    assert_eq!(number(&browser, stats, "data-dropped").await, Some(0));
    assert_eq!(browser.store_stats().await.expect("stats").0, "60");

    // 20 deltas: the 60 listed ones are cut to 20 at once.
    browser.type_into(deltas_input, "20").await;
    browser.type_into(mib_input, "64").await;
    browser.click("[data-testid=retention-apply]").await;
    browser
        .wait_for("evictions", SYNC, || async {
            let dropped = number(&browser, stats, "data-dropped").await?;
            let held = number(&browser, stats, "data-held").await?;
            (dropped >= 40 && held <= 20).then_some(())
        })
        .await;
    let usage = "[data-testid=retention-usage][data-resource=pods]";
    assert!(number(&browser, usage, "data-held").await.expect("usage") <= 20);
    assert!(browser
        .attr("[data-testid=settings-saved]", "role")
        .await
        .is_some());
    browser.screenshot("settings-retention.png").await;

    // Churn: the history keeps evicting, never holding more than 20.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 200}));
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let held = number(&browser, stats, "data-held").await.expect("held");
        assert!(held <= 20, "held {held} > 20 while churning");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server, "pods").await;
    let (recorded, dropped, held) = history_counts(&browser).await;
    assert!(recorded > 60, "churn was recorded: {recorded}");
    assert_eq!(held, 20);
    assert_eq!(recorded, dropped + held);

    // The limit is saved: after a reload the history comes back from the
    // browser's database (held 20, the count of what was dropped kept) and
    // the limit applies to the new informer as changes go on.
    browser.client.refresh().await.expect("reload");
    browser.wait_synced("pods", SYNC).await;
    browser
        .wait_for("the stored history with the saved limit", SYNC, || async {
            let held = number(&browser, stats, "data-held").await?;
            let dropped = number(&browser, stats, "data-dropped").await?;
            (held == 20 && dropped + 20 >= recorded).then_some(())
        })
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 200}));
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server, "pods").await;
    let (after, dropped, held) = history_counts(&browser).await;
    assert!(
        after > recorded,
        "churn after the reload was recorded: {after}"
    );
    assert_eq!(held, 20);
    assert_eq!(after, dropped + held);
    browser.click("[data-testid=settings]").await;
    browser
        .wait_for("the saved limit in the panel", SYNC, || async {
            (value_of(deltas_input).await == "20").then_some(())
        })
        .await;
    browser.client.close().await.expect("close");
}

/// The history's counters on `history-stats`: (recorded, dropped, held).
async fn history_counts(browser: &Browser) -> (u64, u64, u64) {
    let stats = "[data-testid=history-stats]";
    let recorded = number(browser, stats, "data-deltas").await.expect("deltas");
    let dropped = number(browser, stats, "data-dropped")
        .await
        .expect("dropped");
    let held = number(browser, stats, "data-held").await.expect("held");
    (recorded, dropped, held)
}

/// The AGE cell of the row of `key`.
async fn age_of(browser: &Browser, key: &str) -> Option<String> {
    let value = browser
        .script(&format!(
            "const heads = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
             const i = heads.indexOf('AGE'); const r = document.querySelector('tr[data-key=\"{key}\"]');\
             return (i < 0 || !r) ? null : r.children[i].textContent;"
        ))
        .await;
    value.as_str().map(str::to_string)
}

/// Key and opacity of the fading row, if one shows.
async fn fading_row(browser: &Browser) -> Option<(String, f64)> {
    let value = browser
        .script(
            "const r = document.querySelector('tr[data-deleted=true].deleted');\
             return r ? [r.dataset.key, Number(getComputedStyle(r).opacity)] : null;",
        )
        .await;
    serde_json::from_value(value).ok()
}

/// In the table's descending NAME order (digit runs compare as numbers).
fn descending(names: &[String]) -> bool {
    names
        .windows(2)
        .all(|w| natural_cmp(&w[0], &w[1]) != std::cmp::Ordering::Less)
}

/// Scales the sim's pods to `pods` (the workload deletes the surplus).
fn scale(server: &DemoServer, pods: usize) {
    let (status, body) = server.post_json("/_sim/scale", &json!({ "pods": pods }));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// Deletes one pod through the sim and follows its row: it fades (while the
/// store already counts it gone) and then goes. The row's key.
async fn delete_one_and_watch_it_fade(
    browser: &Browser,
    server: &DemoServer,
    left: usize,
) -> String {
    browser
        .wait_for("no row fading yet", Duration::from_secs(10), || async {
            fading_row(browser).await.is_none().then_some(())
        })
        .await;
    scale(server, left);
    let seen = Instant::now();
    let (key, _) = browser
        .wait_for("a fading row", Duration::from_secs(10), || {
            fading_row(browser)
        })
        .await;
    // The store, its count and its digest no longer have it.
    let expected = server.sim_digest("pods");
    let (count, _, _, digest) = browser.store_stats().await.expect("stats");
    assert_eq!(count, left.to_string(), "store-stats counts the pod gone");
    assert_eq!(
        digest, expected,
        "store-stats matches the sim while {key} fades"
    );
    assert!(
        !browser.rows().await.iter().any(|(k, _)| *k == key),
        "a fading row is not a live row"
    );
    // It fades (opacity falls) and then goes, about 1.5 s after it was deleted.
    browser
        .wait_for("the row to fade", Duration::from_secs(5), || async {
            let (k, opacity) = fading_row(browser).await?;
            (k == key && opacity < 0.8).then_some(())
        })
        .await;
    let gone = browser
        .wait_for("the faded row to go", Duration::from_secs(10), || async {
            let present = browser
                .script(&format!(
                    "return document.querySelectorAll('tr[data-key=\"{key}\"]').length;"
                ))
                .await;
            (present == json!(0)).then(|| seen.elapsed())
        })
        .await;
    assert!(
        gone >= Duration::from_millis(1000) && gone < Duration::from_secs(5),
        "the row stayed {gone:?}"
    );
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_fades_out_then_goes_and_ages_tick() {
    let server = DemoServer::start(&["--seed", "31", "--pods", "12", "--churn", "0"]);
    let browser = Browser::start().await;
    goto(&browser, &server.login_url).await;
    assert_eq!(browser.wait_synced("pods", SYNC).await, "12");
    // The initial list is not a change: nothing flashes.
    assert_eq!(
        browser
            .script("return document.querySelectorAll('tr[data-key]').length - document.querySelectorAll('tr.changed').length;")
            .await,
        json!(12)
    );

    // AGE ticks with nothing arriving: a pod created now (its age in
    // seconds; the seeded ones may be days old, whose AGE ticks daily).
    server.post_json("/_sim/scale", &json!({"pods": 13}));
    browser
        .wait_for("the new pod", SYNC, || async {
            (browser.rows().await.len() == 13).then_some(())
        })
        .await;
    let (key, age) = browser
        .wait_for("a pod seconds old", SYNC, || async {
            let ages = browser
                .script(
                    "const heads = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
                     const i = heads.indexOf('AGE');\
                     return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])')).map(r => [r.dataset.key, r.children[i].textContent]);",
                )
                .await;
            let ages: Vec<(String, String)> = serde_json::from_value(ages).ok()?;
            ages.into_iter()
                .find(|(_, age)| age.ends_with('s') && !age.contains('m'))
        })
        .await;
    browser
        .wait_for("the age to tick", Duration::from_secs(10), || async {
            let now = age_of(&browser, &key).await?;
            (now != age).then_some(())
        })
        .await;

    // A changed row flashes.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 40}));
    browser
        .wait_for("a flashing row", SYNC, || async {
            let n = browser
                .script("return document.querySelectorAll('tr.changed').length;")
                .await;
            (n.as_u64()? > 0).then_some(())
        })
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    caught_up(&browser, &server, "pods").await;
    let pods: usize = browser
        .store_stats()
        .await
        .expect("stats")
        .0
        .parse()
        .expect("count");

    let first = delete_one_and_watch_it_fade(&browser, &server, pods - 1).await;
    browser.screenshot("fade-gone.png").await;

    // Sorted by NAME, descending: the fading row keeps its place in the order.
    let name_header = "//th[normalize-space(translate(., '▲▼', ''))='NAME']";
    for _ in 0..2 {
        browser
            .client
            .find(fantoccini::Locator::XPath(name_header))
            .await
            .expect("NAME header")
            .click()
            .await
            .expect("sort by NAME");
    }
    let names = "return Array.from(document.querySelectorAll('tr[data-key]')).map(r => r.dataset.key.split('/')[1]);";
    browser
        .wait_for("rows by NAME, descending", SYNC, || async {
            let names: Vec<String> = serde_json::from_value(browser.script(names).await).ok()?;
            (names.len() > 3 && descending(&names)).then_some(())
        })
        .await;
    scale(&server, pods - 2);
    let (second, _) = browser
        .wait_for(
            "a fading row in the sorted table",
            Duration::from_secs(10),
            || fading_row(&browser),
        )
        .await;
    let shown: Vec<String> = serde_json::from_value(browser.script(names).await).expect("names");
    assert!(
        descending(&shown),
        "still sorted with the fading row: {shown:?}"
    );
    assert_ne!(first, second);
    browser
        .wait_for("the sorted table without it", SYNC, || async {
            let rows = browser.rows().await;
            let all: Vec<String> = serde_json::from_value(browser.script(names).await).ok()?;
            (rows.len() == pods - 2 && all.len() == pods - 2).then_some(())
        })
        .await;
    caught_up(&browser, &server, "pods").await;
    browser.client.close().await.expect("close");
}
