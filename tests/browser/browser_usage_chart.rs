//! The object view's Usage tab in headless Chromium against `deltascope
//! serve --demo` (the simulated cluster serves `metrics.k8s.io`, here a
//! window every 2 s, and `shop`'s `cart` container leaks memory up to its
//! limit, is OOMKilled and restarts) with the recorder keeping usage:
//! - the leaking pod's memory chart, for its `cart` container, has the
//!   container's limit as its limit line (read here from the pod's spec),
//!   climbs to near it, and marks the OOMKilled restart at the time of one
//!   of the versions its History lists; hovering says a time and a value;
//! - after a reload the chart reaches back before the page opened, from
//!   serve's record (`data-recorded=read`, `data-first` older than the
//!   reload);
//! - a node's chart has its allocatable as the limit; a Deployment's sums
//!   its pods;
//! - with `--no-metrics` the tab says one quiet line, draws no chart, and
//!   the page shows no error;
//! - with no recorder (`--history off`) the chart still survives a reload:
//!   the page kept its samples in the browser's database.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::scratch::{unix_ms, Scratch};
use support::{Browser, DemoServer};

const WAIT: Duration = Duration::from_secs(90);

/// A memory quantity as the sim writes a limit (`256Mi`, `1Gi`) in bytes.
fn bytes(text: &str) -> u64 {
    let (digits, scale) = [
        ("Ki", 1u64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1_000),
    ]
    .iter()
    .find_map(|(suffix, scale)| Some((text.strip_suffix(suffix)?, *scale)))
    .unwrap_or((text, 1));
    digits.parse::<u64>().expect("a whole memory quantity") * scale
}

fn json(server: &DemoServer, path: &str) -> Value {
    let (status, body) = server.get(path);
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("JSON")
}

/// The pod whose `cart` container was OOMKilled, and that container's
/// memory limit in bytes.
fn leaker(server: &DemoServer) -> Option<(String, u64)> {
    let pods = json(
        server,
        "/api/v1/namespaces/shop/pods?labelSelector=app%3Dcart",
    );
    pods["items"].as_array()?.iter().find_map(|pod| {
        let statuses = pod["status"]["containerStatuses"].as_array()?;
        let killed = statuses
            .iter()
            .any(|s| s["name"] == "cart" && s["lastState"]["terminated"]["reason"] == "OOMKilled");
        let limit = pod["spec"]["containers"]
            .as_array()?
            .iter()
            .find(|c| c["name"] == "cart")?["resources"]["limits"]["memory"]
            .as_str()
            .map(bytes)?;
        killed.then(|| {
            (
                pod["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                limit,
            )
        })
    })
}

async fn open_object(browser: &Browser, server: &DemoServer, path: &str, key: &str) {
    browser
        .client
        .goto(&format!("http://{}/#/{path}", server.addr))
        .await
        .expect("the object's address");
    browser
        .wait_for("the object view", WAIT, || async {
            let shown = browser
                .attr("[data-testid=object-view]", "data-key")
                .await?;
            (shown == key).then_some(())
        })
        .await;
    browser
        .wait_for("the Usage tab", WAIT, || async {
            let clicked = browser
                .script(
                    "const b = Array.from(document.querySelectorAll('.object-view [role=tab]'))\
                       .find(b => b.textContent.startsWith('Usage'));\
                     if (b) b.click(); return !!b;",
                )
                .await;
            (clicked == Value::Bool(true)).then_some(())
        })
        .await;
}

/// What a chart shows: points, last, peak, limit, request, and its marks
/// (kind, at ms).
#[derive(Debug, serde::Deserialize)]
struct ChartSeen {
    points: u64,
    peak: Option<u64>,
    limit: Option<u64>,
    marks: Vec<(String, u64)>,
}

async fn chart(browser: &Browser, metric: &str) -> Option<ChartSeen> {
    let value = browser
        .script(&format!(
            "const c = document.querySelector('[data-testid=usage-chart][data-metric={metric}]');\
             if (!c) return null;\
             const n = v => v ? Number(v) : null;\
             return {{points: Number(c.dataset.points), peak: n(c.dataset.peak), limit: n(c.dataset.limit),\
               marks: Array.from(c.querySelectorAll('[data-testid=usage-mark]')).map(m => [m.dataset.kind, Number(m.dataset.at)])}};"
        ))
        .await;
    serde_json::from_value(value).ok()
}

async fn usage_attr(browser: &Browser, name: &str) -> Option<String> {
    browser.attr("[data-testid=usage]", name).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaking_pods_chart_climbs_to_its_limit_and_marks_the_oom_kill_its_history_shows() {
    let scratch = Scratch::new("usage-chart", "history");
    let history = format!("sqlite:{}", scratch.0.join("h.sqlite").display());
    let server = DemoServer::start(&[
        "--metrics-resolution",
        "2",
        "--metrics-leak-windows",
        "8",
        "--history",
        &history,
        "--record-usage",
        "2s",
    ]);
    let started = std::time::Instant::now();
    let (pod, limit) = loop {
        if let Some(found) = leaker(&server) {
            break found;
        }
        assert!(started.elapsed() < WAIT, "no cart container was OOMKilled");
        std::thread::sleep(Duration::from_secs(1));
    };
    let key = format!("shop/{pod}");
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    open_object(&browser, &server, &format!("core/v1/pods/{key}"), &key).await;
    browser
        .script("document.querySelector('[data-testid=usage-container][data-name=cart]')?.click();")
        .await;
    let memory = browser
        .wait_for("the cart container's memory to climb to its limit and be OOMKilled", WAIT, || async {
            browser
                .script("document.querySelector('[data-testid=usage-container][data-name=cart]')?.click();")
                .await;
            let seen = chart(&browser, "memory").await?;
            let climbed = seen.peak.is_some_and(|peak| peak * 4 >= limit * 3);
            let killed = seen.marks.iter().any(|(kind, _)| kind == "oom-killed");
            (seen.points >= 5 && climbed && killed && seen.limit == Some(limit)).then_some(seen)
        })
        .await;
    browser.screenshot("usage-chart-leak.png").await;
    assert!(
        memory.peak.unwrap_or(0) <= limit,
        "never above the limit: {memory:?}"
    );

    // the OOMKilled mark is where the History lists a version
    let kill_at: Vec<u64> = memory
        .marks
        .iter()
        .filter(|(kind, _)| kind == "oom-killed")
        .map(|(_, at)| *at)
        .collect();
    browser
        .script(
            "Array.from(document.querySelectorAll('.object-view [role=tab]'))\
               .find(b => b.textContent.startsWith('History')).click();",
        )
        .await;
    let versions: Vec<u64> = browser
        .wait_for("the History's versions", WAIT, || async {
            let times = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=object-delta]'))\
                       .map(r => Date.parse(r.dataset.time));",
                )
                .await;
            let times: Vec<u64> = serde_json::from_value(times).ok()?;
            (!times.is_empty()).then_some(times)
        })
        .await;
    assert!(
        kill_at.iter().all(|at| versions.contains(at)),
        "each OOMKilled mark {kill_at:?} is at a version's time {versions:?}"
    );

    // hovering the memory chart says a time and a value
    browser
        .script(
            "Array.from(document.querySelectorAll('.object-view [role=tab]'))\
               .find(b => b.textContent.startsWith('Usage')).click();",
        )
        .await;
    let hover = browser
        .wait_for("a hovered sample", WAIT, || async {
            let text = browser
                .script(
                    "const s = document.querySelector('[data-testid=usage-chart][data-metric=memory] svg');\
                     if (!s) return null;\
                     const r = s.getBoundingClientRect();\
                     s.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.left + r.width * 0.9, clientY: r.top + 10}));\
                     const h = document.querySelector('[data-testid=usage-hover]');\
                     return h ? h.textContent : null;",
                )
                .await;
            text.as_str().map(str::to_string)
        })
        .await;
    assert!(
        hover.contains(" · memory ") && hover.contains("Mi"),
        "the hover says the time and value: {hover}"
    );

    // a reload reaches back into serve's record
    let reloaded_at = unix_ms() as u64;
    browser.client.refresh().await.expect("reload");
    open_object(&browser, &server, &format!("core/v1/pods/{key}"), &key).await;
    let first = browser
        .wait_for(
            "the chart to reach back into serve's record",
            WAIT,
            || async {
                let recorded = usage_attr(&browser, "data-recorded").await?;
                let first: u64 = usage_attr(&browser, "data-first").await?.parse().ok()?;
                (recorded == "read" && first + 5_000 < reloaded_at).then_some(first)
            },
        )
        .await;
    assert!(
        first + 5_000 < reloaded_at,
        "samples from before the reload: first {first}, reload {reloaded_at}"
    );
    browser.screenshot("usage-chart-reloaded.png").await;

    // a node: its allocatable is the limit
    let nodes = json(&server, "/api/v1/nodes");
    let node = &nodes["items"][0];
    let node_name = node["metadata"]["name"]
        .as_str()
        .expect("a node")
        .to_string();
    let allocatable = bytes(
        node["status"]["allocatable"]["memory"]
            .as_str()
            .expect("allocatable"),
    );
    open_object(
        &browser,
        &server,
        &format!("core/v1/nodes/_/{node_name}"),
        &node_name,
    )
    .await;
    browser
        .wait_for(
            "the node's memory against its allocatable",
            WAIT,
            || async {
                let seen = chart(&browser, "memory").await?;
                (seen.points > 0 && seen.limit == Some(allocatable)).then_some(())
            },
        )
        .await;

    // the deployments table: a row's MEMORY is its pods' summed
    let cart = json(&server, "/apis/apps/v1/namespaces/shop/deployments/cart");
    let selector: Vec<String> = cart["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
        .iter()
        .map(|(k, v)| format!("{k}%3D{}", v.as_str().unwrap_or_default()))
        .collect();
    let metrics_path = format!(
        "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods?labelSelector={}",
        selector.join("%2C")
    );
    browser
        .client
        .goto(&format!(
            "http://{}/#/apps/v1/deployments?namespace=shop",
            server.addr
        ))
        .await
        .expect("deployments");
    browser
        .wait_for("the cart row's MEMORY to be its pods' sum", WAIT, || async {
            let cell = browser
                .script(
                    "const titles = Array.from(document.querySelectorAll('th')).map(t => t.textContent.trim());                     const at = titles.indexOf('MEMORY');                     const row = document.querySelector('tbody tr[data-key=\"shop/cart\"]');                     return at >= 0 && row ? row.querySelectorAll('td')[at].textContent : null;",
                )
                .await;
            let cell = cell.as_str()?.to_string();
            let pods = json(&server, &metrics_path);
            let total: u64 = pods["items"]
                .as_array()?
                .iter()
                .flat_map(|pod| pod["containers"].as_array().cloned().unwrap_or_default())
                .map(|c| bytes(c["usage"]["memory"].as_str().unwrap_or("0")))
                .sum();
            (cell == format!("{}Mi", total >> 20)).then_some(())
        })
        .await;

    // a Deployment: the sum of its pods
    open_object(
        &browser,
        &server,
        "apps/v1/deployments/shop/cart",
        "shop/cart",
    )
    .await;
    browser
        .wait_for("the Deployment's summed usage", WAIT, || async {
            let subject = usage_attr(&browser, "data-subject").await?;
            let seen = chart(&browser, "cpu").await?;
            (subject == "workload" && seen.points > 0).then_some(())
        })
        .await;
    browser.screenshot("usage-chart-workload.png").await;
}

/// Signs a browser in and opens the Usage tab of `shop`'s first pod;
/// the browser and the pod's key.
async fn a_shop_pods_usage(server: &DemoServer) -> (Browser, String) {
    let pods = json(server, "/api/v1/namespaces/shop/pods");
    let name = pods["items"][0]["metadata"]["name"]
        .as_str()
        .expect("a pod")
        .to_string();
    let key = format!("shop/{name}");
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    open_object(&browser, server, &format!("core/v1/pods/{key}"), &key).await;
    (browser, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_metrics_api_the_usage_tab_says_one_quiet_line() {
    let server = DemoServer::start(&["--no-metrics"]);
    let (browser, _) = a_shop_pods_usage(&server).await;
    let note = browser
        .wait_for("the quiet line", WAIT, || async {
            let state = usage_attr(&browser, "data-state").await?;
            let note = browser
                .script("const n = document.querySelector('[data-testid=usage-note]'); return n ? n.textContent : null;")
                .await;
            (state == "none").then(|| note.as_str().unwrap_or_default().to_string())
        })
        .await;
    assert_eq!(note, "this cluster serves no metrics API (metrics-server)");
    let charts = browser
        .script("return document.querySelectorAll('[data-testid=usage-chart]').length;")
        .await;
    assert_eq!(charts, Value::from(0), "no chart without metrics");
    let errors = browser
        .script("return Array.from(document.querySelectorAll('.notice.error')).map(e => e.textContent);")
        .await;
    assert_eq!(errors, Value::Array(Vec::new()), "no error shown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_recorder_the_chart_survives_a_reload_from_the_browsers_database() {
    let server = DemoServer::start(&["--metrics-resolution", "2", "--history", "off"]);
    let (browser, key) = a_shop_pods_usage(&server).await;
    let (first, samples) = browser
        .wait_for("a few windows measured by the page", WAIT, || async {
            let samples: u64 = usage_attr(&browser, "data-samples").await?.parse().ok()?;
            let first: u64 = usage_attr(&browser, "data-first").await?.parse().ok()?;
            (samples >= 4).then_some((first, samples))
        })
        .await;
    // the window after the one written last is measured 2 s on: one more
    // makes sure the samples above were written
    browser
        .wait_for("one more window", WAIT, || async {
            let now: u64 = usage_attr(&browser, "data-samples").await?.parse().ok()?;
            (now > samples).then_some(())
        })
        .await;

    let reloaded_at = unix_ms() as u64;
    browser.client.refresh().await.expect("reload");
    open_object(&browser, &server, &format!("core/v1/pods/{key}"), &key).await;
    let (again, recorded) = browser
        .wait_for("the samples from before the reload", WAIT, || async {
            let again: u64 = usage_attr(&browser, "data-first").await?.parse().ok()?;
            let recorded = usage_attr(&browser, "data-recorded").await?;
            (again <= first).then_some((again, recorded))
        })
        .await;
    assert_eq!(again, first, "the first sample is the one measured before");
    assert!(
        first < reloaded_at,
        "{first} before the reload at {reloaded_at}"
    );
    assert_ne!(recorded, "read", "no recorder: nothing came from serve");
    let points = chart(&browser, "cpu").await.map_or(0, |c| c.points);
    assert!(
        points >= samples,
        "{points} points drawn of {samples} stored"
    );
    browser.screenshot("usage-chart-stored.png").await;
}
