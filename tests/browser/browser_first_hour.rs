//! What a user hits in the first hour, in headless Chromium at
//! 1400×900 against `deltascope serve --demo`, each driven as a user would:
//! - the `:` command bar takes the keyboard with no click (real key presses
//!   through WebDriver, not events dispatched at the input), and `?` lists
//!   PageUp/PageDown/Home/End;
//! - a real shift-drag over half the timeline selects that half, with the
//!   Deltas panel closed and then open, and the canvas never moves under it;
//! - a 400 (a bad label selector) and a 404 (a resource the cluster does not
//!   serve) show the reason and an action, never "Loading…", one notice, the
//!   picker naming the route, and are not requested again for 30 s (counted
//!   in the page's resource timing: list GETs and the channel's control
//!   POSTs, which carry every watch); Retry asks again;
//! - the status line never says "synced" when the page is not: a stopped
//!   server and a 403 after the first sync say "disconnected since …",
//!   a replayed recording says "replaying recording (offline)" (with the
//!   live table's columns);
//! - API discovery recovers from one 429 at load without a reload, and picks
//!   up a CRD installed (and uninstalled) while the page is open within 7 s
//!   (`POST /_sim/crd`);
//! - in dark mode with the object panel open every column stays in view;
//! - the README's example links each show rows in the demo.
//!
//! Screenshots are saved as test artefacts.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use fantoccini::actions::{
    InputSource, KeyAction, KeyActions, MouseActions, PointerAction, MOUSE_BUTTON_LEFT,
};
use serde_json::{json, Value};
use support::{devtools, Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);
const SHIFT: char = '\u{e008}';
const ENTER: char = '\u{e007}';

/// A browser at the size the issue was found at.
async fn browser_1400x900() -> Browser {
    Browser::start_sized(1400, 900).await
}

/// Types `keys` as real key presses to whatever has the focus (no element
/// is targeted, so nothing is focused or clicked for us).
async fn type_keys(browser: &Browser, keys: &str) {
    let mut actions = KeyActions::new("keyboard".into());
    for key in keys.chars() {
        actions = actions
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
    }
    browser
        .client
        .perform_actions(actions)
        .await
        .expect("key presses through WebDriver");
}

async fn text_of(browser: &Browser, css: &str) -> String {
    let script = format!(
        "const e = document.querySelector({}); return e ? e.textContent : '';",
        json!(css)
    );
    browser
        .script(&script)
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The status bar's words: (label + resource, freshness, detail).
async fn status_words(browser: &Browser) -> (String, String, String) {
    (
        text_of(browser, "[data-testid=store-stats]").await,
        text_of(browser, "[data-testid=freshness]").await,
        text_of(browser, ".status-bar .detail").await,
    )
}

/// The status line says the table is synced or watching.
fn claims_synced((stats, freshness, detail): &(String, String, String)) -> bool {
    let words = format!("{stats} {freshness} {detail}").replace("last synced state", "");
    words.contains("synced") || words.contains("watching for changes")
}

// ---- 1. the command bar -------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_bar_takes_the_keyboard_without_a_click() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;

    // `:` opens the bar and the keys that follow land in it.
    type_keys(&browser, ":").await;
    let focused = browser
        .wait_for("the command bar", Duration::from_secs(5), || async {
            let value = browser
                .script("const a = document.activeElement; return a ? (a.dataset.testid || a.tagName) : null;")
                .await;
            value.as_str().map(str::to_string)
        })
        .await;
    assert_eq!(focused, "command-input", "the bar has the focus");
    type_keys(&browser, &format!("deploy{ENTER}")).await;
    browser.wait_synced("deployments.apps", SYNC).await;
    let url = browser.client.current_url().await.expect("url");
    assert!(url.as_str().ends_with("#/apps/v1/deployments"), "{url}");

    // `:ns shop` keeps the resource.
    type_keys(&browser, &format!(":ns shop{ENTER}")).await;
    browser
        .wait_for("the shop namespace", SYNC, || async {
            let url = browser.client.current_url().await.ok()?;
            url.as_str()
                .ends_with("#/apps/v1/deployments?namespace=shop")
                .then_some(())
        })
        .await;
    browser.wait_synced("deployments.apps", SYNC).await;

    // `?` lists every key the table answers to.
    type_keys(&browser, "?").await;
    let help = browser
        .wait_for("the help", Duration::from_secs(5), || async {
            Some(text_of(&browser, "[data-testid=help]").await).filter(|t| !t.is_empty())
        })
        .await;
    for key in ["PageDown", "PageUp", "Home", "End"] {
        assert!(help.contains(key), "the help names {key}: {help}");
    }
    browser.screenshot("first-hour-help.png").await;
}

// ---- 2. shift-drag on the timeline -----------------------------------------

/// The timeline canvas: (left, top, width, height) in the viewport.
async fn canvas_box(browser: &Browser) -> (f64, f64, f64, f64) {
    let value = browser
        .script(
            "const r = document.querySelector('[data-testid=timeline] canvas').getBoundingClientRect();\
             return [r.left, r.top, r.width, r.height];",
        )
        .await;
    serde_json::from_value(value).expect("the canvas box")
}

async fn number(browser: &Browser, css: &str, attr: &str) -> Option<f64> {
    browser.attr(css, attr).await?.parse().ok()
}

/// Shift-drags with the real pointer from `from` to `to` (fractions of the
/// canvas width) in small steps; returns the share of the range shown that
/// the brush covers, and how far the canvas moved while the button was down.
async fn shift_drag(browser: &Browser, from: f64, to: f64) -> (f64, f64) {
    let timeline = "[data-testid=timeline]";
    let (left, top, width, height) = canvas_box(browser).await;
    let start = number(browser, timeline, "data-start")
        .await
        .expect("start");
    let end = number(browser, timeline, "data-end").await.expect("end");
    // Where the canvas is on every move while the button is down.
    browser
        .script(
            "window.__tops = []; const c = document.querySelector('[data-testid=timeline] canvas');\
             window.__topsListener = () => { if (window.__down) window.__tops.push(c.getBoundingClientRect().top); };\
             document.addEventListener('pointermove', window.__topsListener, true);\
             document.addEventListener('pointerdown', () => { window.__down = true; }, true);\
             document.addEventListener('pointerup', () => { window.__down = false; }, true);",
        )
        .await;
    let y = (top + height / 2.0).round();
    let x = |f: f64| (left + width * f).round();
    let steps = 25;
    let mut mouse = MouseActions::new("mouse".into())
        .then(PointerAction::MoveTo {
            duration: None,
            x: x(from),
            y,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        });
    let mut keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: SHIFT })
        .pause(Duration::from_millis(0));
    for step in 1..=steps {
        let f = from + (to - from) * step as f64 / steps as f64;
        mouse = mouse.then(PointerAction::MoveTo {
            duration: Some(Duration::from_millis(20)),
            x: x(f),
            y,
        });
        keys = keys.pause(Duration::from_millis(0));
    }
    mouse = mouse.then(PointerAction::Up {
        button: MOUSE_BUTTON_LEFT,
    });
    keys = keys
        .pause(Duration::from_millis(0))
        .then(KeyAction::Up { value: SHIFT });
    browser
        .client
        .perform_actions(fantoccini::actions::Actions::from(keys).and(mouse))
        .await
        .expect("a shift-drag through WebDriver");
    browser.client.release_actions().await.expect("release");
    let brush = browser
        .wait_for("the brush", Duration::from_secs(5), || async {
            Some((
                number(browser, timeline, "data-brush-from").await?,
                number(browser, timeline, "data-brush-to").await?,
            ))
        })
        .await;
    let tops: Vec<f64> =
        serde_json::from_value(browser.script("return window.__tops;").await).unwrap_or_default();
    browser
        .script("document.removeEventListener('pointermove', window.__topsListener, true);")
        .await;
    let moved = tops.iter().map(|t| (t - top).abs()).fold(0.0_f64, f64::max);
    assert!(tops.len() >= steps / 2, "moves were seen: {tops:?}");
    ((brush.1 - brush.0) / (end - start), moved)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shift_drag_over_half_the_timeline_selects_that_half() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    // A few deltas spread over some seconds, so the range is worth brushing.
    server.post_json("/_sim/churn", &json!({"events_per_sec": 5}));
    tokio::time::sleep(Duration::from_secs(8)).await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));

    // The Deltas panel closed: it opens when the drag ends, not under it.
    assert!(browser
        .attr("[data-testid=delta-list]", "data-total")
        .await
        .is_none());
    let (share, moved) = shift_drag(&browser, 0.25, 0.75).await;
    assert!(
        (share - 0.5).abs() <= 0.05,
        "half the timeline selected: {share:.3} of the range (the canvas moved {moved} px)"
    );
    assert!(moved < 1.0, "the canvas moved {moved} px under the drag");
    browser
        .wait_for("the Deltas panel", Duration::from_secs(5), || async {
            browser.attr("[data-testid=delta-list]", "data-total").await
        })
        .await;
    browser.screenshot("first-hour-brush.png").await;

    // Again with the panel open (the label must not re-wrap the legend).
    let (share, moved) = shift_drag(&browser, 0.1, 0.6).await;
    assert!(
        (share - 0.5).abs() <= 0.05,
        "with the panel open, half selected: {share:.3} (the canvas moved {moved} px)"
    );
    assert!(moved < 1.0, "the canvas moved {moved} px under the drag");
}

// ---- 3. failures a retry cannot fix ----------------------------------------

/// Requests the page made so far: (list GETs naming `needle`, channel control POSTs).
async fn requests(browser: &Browser, needle: &str) -> (u64, u64) {
    let value = browser
        .script(&format!(
            "const all = performance.getEntriesByType('resource').map(e => e.name);\
             return [all.filter(n => n.includes({}) && !n.includes('/_deltascope/')).length,\
                     all.filter(n => n.includes('/_deltascope/channel/')).length];",
            json!(needle)
        ))
        .await;
    serde_json::from_value(value).expect("request counts")
}

/// Opens `route` on a page that already shows pods; waits for its notice
/// (`[data-testid=NOTICE]`) and returns its `data-kind`, if any.
async fn open_failing_route(
    server: &DemoServer,
    browser: &Browser,
    route: &str,
    notice: &str,
) -> Option<String> {
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    browser
        .script("performance.setResourceTimingBufferSize(100000); return true;")
        .await;
    let base = format!("http://{}/", server.addr);
    browser
        .client
        .goto(&format!("{base}{route}"))
        .await
        .expect("the failing route");
    let css = format!("[data-testid={notice}]");
    browser
        .wait_for(&format!("the {notice} notice"), SYNC, || async {
            browser.attr(&css, "class").await
        })
        .await;
    browser.attr(&css, "data-kind").await
}

/// The table and the progress bar say nothing is loading.
async fn assert_not_loading(browser: &Browser, what: &str) {
    let table = text_of(browser, "[data-testid=table-scroll]").await;
    assert!(
        !table.contains("Loading"),
        "{what}: the table says {table:?}"
    );
    let progress = browser
        .script("return document.querySelectorAll('[data-testid=list-progress]').length;")
        .await;
    assert_eq!(progress, json!(0), "{what}: no list progress");
}

/// Nothing is requested again for 10 s; then Retry asks once more. A page
/// that retried would have asked three times by then: the informer's
/// backoff is client-go's, 800 ms doubling (0.8 + 1.6 + 3.2 s).
async fn assert_not_asked_again(browser: &Browser, needle: &str, what: &str) {
    // The page's own CRD watch (behind discovery) is open: its control POST
    // is not counted as the failing view's.
    browser.wait_crd_watch_open(SYNC).await;
    // Let the failure settle (the control POST that opened it).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = requests(browser, needle).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = requests(browser, needle).await;
    assert_eq!(
        before, after,
        "{what}: (list GETs, channel control POSTs) before and 10 s later"
    );
    let (stats, freshness, detail) = status_words(browser).await;
    assert!(
        !claims_synced(&(stats.clone(), freshness.clone(), detail.clone())),
        "{what}: {stats} | {freshness} | {detail}"
    );
    // The counting can see a request: Retry sends one.
    browser.click("[data-testid=retry]").await;
    browser
        .wait_for("the retry's request", Duration::from_secs(10), || async {
            let now = requests(browser, needle).await;
            (now.0 > after.0 || now.1 > after.1).then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_label_selector_says_why_and_is_not_asked_again() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    let kind = open_failing_route(
        &server,
        &browser,
        "#/core/v1/pods?labelSelector=app%3D%3D%2C%2C%3D",
        "plain-error",
    )
    .await;
    assert_eq!(kind.as_deref(), Some("bad-request"));
    let notice = text_of(&browser, "[data-testid=plain-error]").await;
    assert!(notice.contains("selector"), "{notice}");
    assert!(
        notice.contains("unable to parse requirement"),
        "the server's words: {notice}"
    );
    assert_eq!(
        browser
            .attr("[data-testid=clear-selectors]", "href")
            .await
            .as_deref(),
        Some("#/core/v1/pods"),
        "an action: the view without the selector"
    );
    let (_, synced, state, _) = browser.store_stats().await.expect("stats");
    assert_eq!((synced.as_str(), state.as_str()), ("false", "error"));
    assert_not_loading(&browser, "400").await;
    browser.screenshot("first-hour-bad-selector.png").await;
    assert_not_asked_again(&browser, "labelSelector=app", "a 400").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_the_cluster_does_not_serve_is_said_once_and_not_asked_again() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    open_failing_route(&server, &browser, "#/core/v1/nosuch", "unknown-resource").await;
    browser
        .wait_for("the 404", SYNC, || async {
            let (_, _, state, _) = browser.store_stats().await?;
            (state == "error").then_some(())
        })
        .await;
    // The informer's 404 and discovery say the same: one notice, not two.
    let notices = browser
        .script(
            "return Array.from(document.querySelectorAll('.notice'))\
               .filter(n => n.textContent.includes('does not serve nosuch')).length;",
        )
        .await;
    assert_eq!(notices, json!(1), "the notice shows once");
    let picked = browser
        .script(
            "const s = document.querySelector('[data-testid=resource-select]');\
             return s.options[s.selectedIndex].textContent.trim();",
        )
        .await;
    assert_eq!(
        picked,
        json!("nosuch (not served)"),
        "the picker names the route"
    );
    assert_not_loading(&browser, "404").await;
    browser.screenshot("first-hour-not-served.png").await;
    assert_not_asked_again(&browser, "/nosuch", "a 404").await;
}

// ---- 4. the status line ------------------------------------------------------

/// Waits until the status line says it shows the last synced state since a time.
async fn wait_disconnected(browser: &Browser, what: &str) -> (String, String, String) {
    let words = browser
        .wait_for(what, SYNC, || async {
            let words = status_words(browser).await;
            words.1.starts_with("disconnected since ").then_some(words)
        })
        .await;
    assert!(
        words.1.ends_with("— showing the last synced state"),
        "{words:?}"
    );
    let clock = words.1["disconnected since ".len()..]
        .split(' ')
        .next()
        .unwrap_or("");
    assert!(
        clock.len() == 8 && clock.chars().filter(|c| *c == ':').count() == 2,
        "a clock time: {words:?}"
    );
    assert!(!claims_synced(&words), "{words:?}");
    // docs/contracts.md: data-synced means "synced at least once", and stays.
    let (_, synced, _, _) = browser.store_stats().await.expect("stats");
    assert_eq!(synced, "true");
    words
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_says_disconnected_when_the_server_stops() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    let words = status_words(&browser).await;
    assert_eq!(words.1, "synced", "{words:?}");
    assert_eq!(words.2, "watching for changes", "{words:?}");
    drop(server);
    wait_disconnected(&browser, "the status line to say disconnected").await;
    // And it keeps saying so while it retries.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let words = status_words(&browser).await;
    assert!(words.1.starts_with("disconnected since "), "{words:?}");
    assert!(!claims_synced(&words), "{words:?}");
    browser.screenshot("first-hour-server-stopped.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_says_disconnected_after_a_403() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    // Permission taken away, and the watch expires: the relist gets 403s.
    server.post_json(
        "/_sim/fault",
        &json!({"kind": "forbid", "resource": "pods", "count": 1000}),
    );
    server.post_json(
        "/_sim/fault",
        &json!({"kind": "expire-watches", "resource": "pods"}),
    );
    let words = wait_disconnected(&browser, "the status line after the 403").await;
    let kind = browser
        .wait_for("the 403 notice", SYNC, || async {
            browser.attr("[data-testid=plain-error]", "data-kind").await
        })
        .await;
    assert_eq!(kind, "forbidden", "{words:?}");
    let notice = text_of(&browser, "[data-testid=plain-error]").await;
    assert!(
        notice.contains("cannot list pods"),
        "what is missing: {notice}"
    );
    assert!(
        browser.attr("[data-testid=retry]", "title").await.is_some(),
        "Retry now is offered"
    );
    browser.screenshot("first-hour-forbidden.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_says_a_replay_is_a_replay() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    let live_titles = browser.titles().await;
    let cells = "return Object.fromEntries(Array.from(document.querySelectorAll('tr[data-key]'))\
                 .map(r => [r.dataset.key, Array.from(r.children).map(c => c.textContent)]));";
    let live_rows: serde_json::Map<String, Value> =
        serde_json::from_value(browser.script(cells).await).expect("rows");
    let recording = browser
        .download_by_clicking("[data-testid=export]", "the exported NDJSON")
        .await;
    let path = support::artifacts_dir().join("first-hour-recording.ndjson");
    std::fs::write(&path, &recording).expect("write the recording");
    browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=import]"))
        .await
        .expect("import")
        .send_keys(&path.display().to_string())
        .await
        .expect("choose the file");
    browser
        .wait_for("the replay to sync", SYNC, || async {
            browser.attr("[data-testid=replay]", "role").await?;
            let (_, synced, _, _) = browser.store_stats().await?;
            (synced == "true").then_some(())
        })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let words = status_words(&browser).await;
    assert_eq!(words.1, "replaying recording (offline)", "{words:?}");
    assert!(!words.2.contains("watching for changes"), "{words:?}");
    // The replayed table shows the live table's columns, cells as kubectl
    // prints them — but not `kubectl top`'s, which measure the cluster now
    // and are no part of a recording.
    let of_objects = |titles: &[String]| -> Vec<String> {
        titles
            .iter()
            .filter(|t| !["CPU", "MEMORY"].contains(&t.as_str()))
            .cloned()
            .collect()
    };
    let replay_titles = browser.titles().await;
    assert_eq!(replay_titles, of_objects(&live_titles));
    let replay_rows: serde_json::Map<String, Value> =
        serde_json::from_value(browser.script(cells).await).expect("rows");
    let restarts = live_titles
        .iter()
        .position(|t| t == "RESTARTS")
        .expect("RESTARTS");
    let recent: Vec<&String> = live_rows
        .iter()
        .filter(|(_, cells)| cells[restarts].as_str().is_some_and(|c| c.contains("ago)")))
        .map(|(key, _)| key)
        .collect();
    assert!(
        !recent.is_empty(),
        "some pod restarted recently: {live_rows:?}"
    );
    for key in recent {
        let (live, replayed) = (&live_rows[key][restarts], &replay_rows[key][restarts]);
        let count = |cell: &Value| {
            cell.as_str()
                .unwrap_or("")
                .split(' ')
                .next()
                .map(str::to_string)
        };
        assert_eq!(count(live), count(replayed), "{key}: {live} vs {replayed}");
        assert!(
            replayed.as_str().is_some_and(|c| c.contains(" ago)")),
            "{key}: RESTARTS says when, as live: {live} vs {replayed}"
        );
    }
    browser.screenshot("first-hour-replay.png").await;
}

// ---- 5. discovery ------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_recovers_from_a_429_at_load_without_a_reload() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    // Discovery's first request, /api/v1, gets a 429 (aimed at its path:
    // serve's own health checks of the cluster, every few seconds, would
    // take a fault aimed at any request first now and then).
    let (status, _) = server.post_json(
        "/_sim/fault",
        &json!({"kind": "throttle", "count": 1, "path": "/api/v1"}),
    );
    assert_eq!(status, 200);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    let options = browser
        .wait_for("the picker to offer the CRD", Duration::from_secs(30), || async {
            let value = browser
                .script("return Array.from(document.querySelectorAll('[data-testid=resource-select] option')).map(o => o.value);")
                .await;
            let options: Vec<String> = serde_json::from_value(value).ok()?;
            options
                .iter()
                .any(|o| o == "widgets.demo.deltascope.dev")
                .then_some(options)
        })
        .await;
    assert!(
        options.iter().any(|o| o == "deployments.apps"),
        "{options:?}"
    );
    browser
        .wait_for(
            "the discovery message to go",
            Duration::from_secs(10),
            || async {
                browser
                    .attr("[data-testid=discovery-warning]", "class")
                    .await
                    .is_none()
                    .then_some(())
            },
        )
        .await;
    // It was the 429 that discovery met, and it asked again by itself.
    let fetched = browser
        .script(
            "return performance.getEntriesByType('resource')\
               .filter(e => new URL(e.name).pathname === '/api/v1')\
               .map(e => e.responseStatus);",
        )
        .await;
    let statuses: Vec<u16> = serde_json::from_value(fetched).expect("statuses");
    assert!(
        statuses.len() >= 2 && statuses[0] == 429 && statuses[1] == 200,
        "/api/v1 answered {statuses:?}"
    );
    let navigations = browser
        .script("return performance.getEntriesByType('navigation').length;")
        .await;
    assert_eq!(navigations, json!(1), "no reload");
    // The page watches the cluster's CRDs (a change runs discovery again:
    // `discovery_picks_up_a_crd_created_while_the_page_is_open`).
    browser.wait_crd_watch_open(SYNC).await;
}

/// The values the resource picker offers (`pods`, `widgets.demo.deltascope.dev`, …).
async fn picker_options(browser: &Browser) -> Vec<String> {
    let value = browser
        .script("return Array.from(document.querySelectorAll('[data-testid=resource-select] option')).map(o => o.value);")
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

/// Waits (up to `within`) until the picker offers the demo CRD's widgets or
/// stops offering them; how long it took.
async fn wait_widgets_offered(browser: &Browser, offered: bool, within: Duration) -> Duration {
    let since = std::time::Instant::now();
    let what = if offered {
        "the picker to offer widgets"
    } else {
        "the picker to stop offering widgets"
    };
    browser
        .wait_for(what, within, || async {
            let has = picker_options(browser).await.iter().any(|o| o == WIDGETS);
            (has == offered).then_some(())
        })
        .await;
    since.elapsed()
}

const WIDGETS: &str = "widgets.demo.deltascope.dev";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_picks_up_a_crd_created_while_the_page_is_open() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    // The cluster has no CRD of its own when the page loads.
    let (status, body) = server.post_json("/_sim/crd", &json!({"installed": false}));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser
        .wait_for("discovery's first run", SYNC, || async {
            let runs = browser.attr("[data-testid=discovery]", "data-runs").await?;
            (runs.parse::<u64>().ok()? >= 1).then_some(())
        })
        .await;
    let options = picker_options(&browser).await;
    assert!(
        options.iter().any(|o| o == "deployments.apps") && !options.iter().any(|o| o == WIDGETS),
        "discovery ran and found no widgets: {options:?}"
    );
    // Installed right after discovery ran, while the CRD watch is still
    // listing: in neither discovery nor the watch's later changes, so the
    // page must notice it when the watch's list arrives.
    let (status, body) = server.post_json("/_sim/crd", &json!({"installed": true}));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // Installed after the watch's list, it arrives by the watch, which a
    // background informer sends BACKGROUND_WATCH_DELAY_MS (5 s) late; then
    // CRD_SETTLE_MS, a poll of the discovery loop and the run itself: about
    // 7 s, so 7 s failed now and then. The bound is for a page that never
    // notices, not a timing.
    let took = wait_widgets_offered(&browser, true, Duration::from_secs(15)).await;
    eprintln!("widgets offered {took:?} after the CRD was installed during load");
    browser.wait_crd_watch_open(SYNC).await;

    // Uninstalled and installed while the page is open: the CRD watch sees
    // DELETED and ADDED, and discovery runs again each time, with no reload.
    let (status, body) = server.post_json("/_sim/crd", &json!({"installed": false}));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let took = wait_widgets_offered(&browser, false, Duration::from_secs(7)).await;
    eprintln!("widgets gone {took:?} after the CRD was uninstalled");
    let (status, body) = server.post_json("/_sim/crd", &json!({"installed": true}));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let took = wait_widgets_offered(&browser, true, Duration::from_secs(7)).await;
    eprintln!("widgets offered {took:?} after the CRD was installed");
    browser.screenshot("first-hour-crd-installed.png").await;
    let navigations = browser
        .script("return performance.getEntriesByType('navigation').length;")
        .await;
    assert_eq!(navigations, json!(1), "no reload");
}

// ---- 6. dark mode with the object panel, the README's links -------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dark_mode_with_the_object_panel_keeps_every_column_in_view() {
    let server = DemoServer::start(&["--seed", "1", "--pods", "50", "--churn", "0"]);
    let browser = browser_1400x900().await;
    devtools(
        &browser,
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    )
    .await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    let dark = browser
        .script("return matchMedia('(prefers-color-scheme: dark)').matches;")
        .await;
    assert_eq!(dark, json!(true), "dark mode");
    support::live::open_first_object(&browser).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    browser.screenshot("first-hour-dark-object-panel.png").await;
    // Every header cell and every cell of the first row lies inside the part
    // of the table's scroll box that is on screen.
    let value = browser
        .script(
            "const s = document.querySelector('[data-testid=table-scroll]');\
             const r = s.getBoundingClientRect();\
             const right = r.left + s.clientWidth;\
             const cells = Array.from(document.querySelectorAll('thead th'))\
               .concat(Array.from(document.querySelector('tr[data-key]').children));\
             return [right, cells.map(c => { const b = c.getBoundingClientRect();\
               return [c.textContent, b.left, b.right, b.width]; })];",
        )
        .await;
    let (right, cells): (f64, Vec<(String, f64, f64, f64)>) =
        serde_json::from_value(value).expect("boxes");
    assert!(cells.len() >= 12, "{cells:?}");
    for (text, left, cell_right, width) in &cells {
        assert!(
            *left >= 0.0 && *cell_right <= right + 0.5 && *width > 20.0,
            "{text:?} spans {left}..{cell_right}, the table shows up to {right}"
        );
    }
    let titles = browser.titles().await;
    assert!(titles.iter().any(|t| t == "AGE"), "{titles:?}");
}

/// The `#/…` links of the README's "Views are links" sentence.
fn readme_links() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme
        .find("Views are links:")
        .expect("the README's example links");
    let sentence = &readme[start..];
    let sentence = &sentence[..sentence.find("\n\n").unwrap_or(sentence.len())];
    sentence
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("#/"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_example_links_show_rows_in_the_demo() {
    let links = readme_links();
    assert!(links.len() >= 3, "{links:?}");
    // As `cargo xtask demo` runs it: serve's defaults.
    let server = DemoServer::start(&["--churn", "0"]);
    let browser = browser_1400x900().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    let base = format!("http://{}/", server.addr);
    for link in &links {
        let route = deltascope::address::route::Route::parse(link).expect("a route");
        browser
            .client
            .goto(&format!("{base}{link}"))
            .await
            .expect("the link");
        let count = browser
            .wait_for(&format!("{link} to sync"), SYNC, || async {
                let shown = browser
                    .attr("[data-testid=store-stats]", "data-resource")
                    .await?;
                let url = browser.client.current_url().await.ok()?;
                let (count, synced, state, _) = browser.store_stats().await?;
                (shown == route.stats_name()
                    && url.as_str().ends_with(link.as_str())
                    && synced == "true"
                    && state == "watching")
                    .then_some(count)
            })
            .await;
        assert_ne!(count, "0", "{link} shows rows in the demo");
        assert!(
            !browser.rows().await.is_empty(),
            "{link}: rows in the table"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_out_ends_the_session_and_the_spent_link_does_not_sign_in_again() {
    let server = DemoServer::start(&["--seed", "2", "--pods", "20", "--churn", "0"]);
    let browser = Browser::start().await;
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("sign in");
    browser.wait_synced("pods", SYNC).await;
    browser.click("[data-testid=sign-out]").await;
    // serve answers with its sign-in page; the page's API calls are refused now.
    browser
        .wait_for("the sign-in page", SYNC, || async {
            let url = browser.client.current_url().await.ok()?;
            let status = browser
                .script(
                    "return fetch('/api/v1/namespaces', {credentials: 'same-origin'}).then(r => r.status);",
                )
                .await;
            (url.path() == "/" && status == json!(401)).then_some(())
        })
        .await;
    // The printed link was spent by the first sign-in: it opens nothing now.
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("the old link");
    let status = browser
        .script(
            "return fetch('/api/v1/namespaces', {credentials: 'same-origin'}).then(r => r.status);",
        )
        .await;
    assert_eq!(status, json!(401), "a spent link does not sign in again");
}
