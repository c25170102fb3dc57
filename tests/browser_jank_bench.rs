//! The page never freezes (ARCHITECTURE.md, *The page never holds its
//! thread*) beyond its first sync: the long tasks
//! and frames of a relist of N pods (the watch gets 410 Gone after a
//! compaction), of switches between two kept resources (the pods and the
//! ReplicaSets of the same cluster), and of time travel over the history
//! of the list (N deltas held), and of the sim's fastest churn (watch
//! events of four kept resources arriving for 20 s), in headless
//! Chromium against the release `serve --demo` and release page; N is
//! 100,000 (`PAGE_BENCH_QUICK=1`: 30,000). The first sync's figures are
//! the page bench's (`page.jank.sync.*`).
//!
//! An `#[ignore]` test run by `cargo xtask bench --only page` (environment
//! as `browser_page_bench.rs`); it writes `jank.tsv` and `jank.json`
//! beside `PAGE_BENCH_OUT`.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use support::bench::{chromium, num, run, sign_in_observed, FRAME_BUDGET_MS, JANK};
use support::DemoServer;
use tsv_row::{jank_rows, Jank};

/// Retention for the bench: enough deltas for the list and the relist.
const RETENTION: &str = "250000 268435456";

/// What the page shows now: its clock, the store-stats hook, the deltas
/// recorded and the moment time travel shows.
const NOW: &str = "const s = document.querySelector('[data-testid=store-stats]');\
    const h = document.querySelector('[data-testid=history-stats]');\
    const t = document.querySelector('[data-testid=time-travel]');\
    return {now: performance.now(), resource: s ? s.dataset.resource : '', count: s ? Number(s.dataset.count) : -1,\
      synced: s ? s.dataset.synced === 'true' : false, state: s ? s.dataset.state : '',\
      deltas: h ? Number(h.dataset.deltas) : -1, held: h ? Number(h.dataset.held) : -1,\
      at: t ? t.dataset.at : null, rows: document.querySelectorAll('tr[data-key]').length};";

async fn now(client: &Client) -> Value {
    run(client, NOW, vec![]).await
}

/// Polls [`NOW`] until `done` says so (at most `timeout`).
async fn wait_until(
    client: &Client,
    what: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let state = now(client).await;
        if done(&state) {
            return state;
        }
        assert!(
            started.elapsed() < timeout,
            "{what}: not within {timeout:?}; the page: {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn jank_between(client: &Client, from: f64, to: f64) -> Value {
    run(client, JANK, vec![json!(from), json!(to)]).await
}

/// Opens `route` (a hash change: the page stays) and waits for its table
/// to sync.
async fn show(client: &Client, server: &DemoServer, route: &str, resource: &str) -> Value {
    client
        .goto(&format!("http://{}/#/{route}", server.addr))
        .await
        .expect("open a resource");
    wait_until(client, route, Duration::from_secs(300), |s| {
        s["resource"] == json!(resource) && s["synced"] == json!(true) && num(s, "rows") > 0.0
    })
    .await
}

/// Clicks the timeline at `fraction` of its width and waits for the past it
/// names to be shown (another `data-at`).
async fn travel(client: &Client, fraction: f64, previous: &Value) -> Value {
    let canvas = client
        .find(Locator::Css("[data-testid=timeline] canvas"))
        .await
        .expect("the timeline");
    let script = "const [c, f] = arguments; const r = c.getBoundingClientRect();\
        c.dispatchEvent(new MouseEvent('click', {clientX: r.left + r.width * f, clientY: r.top + 10, bubbles: true}));\
        return true;";
    run(
        client,
        script,
        vec![
            serde_json::to_value(&canvas).expect("element"),
            json!(fraction),
        ],
    )
    .await;
    let previous = previous.clone();
    wait_until(
        client,
        "the past shown",
        Duration::from_secs(60),
        move |s| !s["at"].is_null() && s["at"] != previous,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: cargo xtask bench --only page"]
async fn jank_figures() {
    let quick = std::env::var("PAGE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let pods: usize = if quick { 30_000 } else { 100_000 };
    let k = pods / 1000;
    let server = DemoServer::start(&["--seed", "3", "--pods", &pods.to_string(), "--churn", "0"]);
    let browser = chromium().await;
    let client = &browser.client;
    sign_in_observed(client, &server, ("deltascope.retention", RETENTION)).await;
    let synced = show(client, &server, "core/v1/pods", "pods").await;
    assert_eq!(num(&synced, "count"), pods as f64, "every pod listed");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut tsv = String::new();
    let mut raw = Vec::new();

    // Time travel over the history of the list (every pod's Added delta).
    let from = num(&now(client).await, "now");
    let mut at = json!(null);
    for fraction in [0.01, 0.5, 0.2, 0.9] {
        at = travel(client, fraction, &at).await["at"].clone();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }
    let jank = jank_between(client, from, num(&now(client).await, "now")).await;
    tsv.push_str(&jank_rows(
        &format!("page.jank.travel.{k}k"),
        &format!(
            "time travel to 4 moments over {:.0}k deltas held ({k}k pods)",
            num(&synced, "held") / 1000.0
        ),
        &Jank::from_script(&jank),
        FRAME_BUDGET_MS,
        "each: a click on the timeline, until the past is shown, 1 s on it",
    ));
    client
        .find(Locator::Css("[data-testid=back-to-live]"))
        .await
        .expect("the back-to-live button")
        .click()
        .await
        .expect("back to live");
    raw.push(json!({"id": format!("page.jank.travel.{k}k"), "jank": jank, "held": synced["held"]}));

    // Switches between two kept resources.
    let other = show(client, &server, "apps/v1/replicasets", "replicasets.apps").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let from = num(&now(client).await, "now");
    for _ in 0..3 {
        show(client, &server, "core/v1/pods", "pods").await;
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        show(client, &server, "apps/v1/replicasets", "replicasets.apps").await;
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    show(client, &server, "core/v1/pods", "pods").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let jank = jank_between(client, from, num(&now(client).await, "now")).await;
    tsv.push_str(&jank_rows(
        &format!("page.jank.switch.{k}k"),
        &format!(
            "7 switches between two kept resources ({k}k pods, {:.0} ReplicaSets)",
            num(&other, "count")
        ),
        &Jank::from_script(&jank),
        FRAME_BUDGET_MS,
        "each switch: the hash changes, the kept informer's table is shown, 1.5 s on it",
    ));
    raw.push(json!({"id": format!("page.jank.switch.{k}k"), "jank": jank}));

    // A relist: compaction, then the pods' watch gets 410 Gone.
    let before = now(client).await;
    for fault in [
        json!({"kind": "compact"}),
        json!({"kind": "expire-watches", "resource": "pods"}),
    ] {
        let (status, body) = server.post_json("/_sim/fault", &fault);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }
    let relisted = wait_until(client, "the relist", Duration::from_secs(300), |s| {
        num(s, "deltas") >= num(&before, "deltas") + pods as f64 && s["state"] == json!("watching")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = now(client).await;
    let jank = jank_between(client, num(&before, "now"), num(&after, "now")).await;
    tsv.push_str(&jank_rows(
        &format!("page.jank.relist.{k}k"),
        &format!("a relist of {k}k pods (410 Gone → relisted)"),
        &Jank::from_script(&jank),
        FRAME_BUDGET_MS,
        &format!(
            "from the fault to 3 s after the relisted deltas were recorded ({:.0} ms)",
            num(&relisted, "now") - num(&before, "now")
        ),
    ));
    raw.push(json!({"id": format!("page.jank.relist.{k}k"), "jank": jank}));

    // Watch events arriving as fast as the sim makes them (6,000 writes/s:
    // Pods, their Events, ReplicaSets and Deployments), all four kept live,
    // the pods shown.
    show(client, &server, "apps/v1/deployments", "deployments.apps").await;
    // (the sim's Events may all have expired by now: kept, maybe empty)
    client
        .goto(&format!("http://{}/#/core/v1/events", server.addr))
        .await
        .expect("open the events");
    wait_until(client, "the events", Duration::from_secs(60), |s| {
        s["resource"] == json!("events") && s["synced"] == json!(true)
    })
    .await;
    show(client, &server, "core/v1/pods", "pods").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let churn_s = if quick { 10 } else { 20 };
    let fed = |client: &Client| {
        let client = client.clone();
        async move {
            let metrics = run(
                &client,
                "return window.__deltascope.metrics(false);",
                vec![],
            )
            .await;
            num(&metrics, "eventToDomCount")
        }
    };
    let (before, fed_before) = (now(client).await, fed(client).await);
    let (status, body) = server.post_json("/_sim/churn", &json!({ "events_per_sec": 6_000 }));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    tokio::time::sleep(Duration::from_secs(churn_s)).await;
    let (status, _) = server.post_json("/_sim/churn", &json!({ "events_per_sec": 0 }));
    assert_eq!(status, 200);
    let after = now(client).await;
    let seconds = (num(&after, "now") - num(&before, "now")) / 1000.0;
    let pod_rate = (num(&after, "deltas") - num(&before, "deltas")) / seconds;
    let rate = (fed(client).await - fed_before) / seconds;
    let jank = jank_between(client, num(&before, "now"), num(&after, "now")).await;
    tsv.push_str(&jank_rows(
        &format!("page.jank.churn.{k}k"),
        &format!("{rate:.0} watch events/s over 4 kept resources ({k}k pods)"),
        &Jank::from_script(&jank),
        FRAME_BUDGET_MS,
        &format!(
            "{churn_s} s of the sim's churn at 6,000 writes/s; watch events fed to the kept Pods, \
             ReplicaSets, Deployments and Events per second ({pod_rate:.0} Pod deltas/s), the pods shown"
        ),
    ));
    raw.push(json!({"id": format!("page.jank.churn.{k}k"), "jank": jank,
        "events_per_s": rate, "pod_deltas_per_s": pod_rate}));

    let out = std::env::var_os("PAGE_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/page.json")
        });
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(
        out.with_file_name("jank.json"),
        format!("{}\n", json!({"figures": raw})),
    )
    .expect("write the JSON");
    std::fs::write(out.with_file_name("jank.tsv"), &tsv).expect("write the TSV");
    print!("{tsv}");
}
