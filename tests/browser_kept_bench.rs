//! The page with 32 resources kept live, measured in headless
//! Chromium against the release `deltascope serve --demo` with 30k pods
//! (`--quick`: 10k): every resource discovery lists plus per-namespace views
//! of the busy ones, 32 informers in all, the pods table on screen. While the
//! simulated cluster makes 2,000 writes/s (spread over pods, their Events,
//! ReplicaSets and Deployments, so over many of the kept informers):
//!
//! - frame p95 (requestAnimationFrame) and event→DOM p99 over every event fed
//!   to any kept informer (`window.__deltascope.metrics()`);
//! - 0 lost: afterwards every kept resource's digest equals the cluster's;
//! - browser connections in use: established TCP connections to serve's port
//!   (read with `ss` on serve's side), against the 32 a page with one
//!   connection per watch would need (browsers allow six).
//!
//! An `#[ignore]` test run by `cargo xtask bench --only page`, with the same
//! environment as `browser_page_bench.rs`; it writes `kept.json` and
//! `kept.tsv` beside `PAGE_BENCH_OUT`.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::bench::{
    chromium, frame_stats, num, run, run_async, FRAMES, FRAME_BUDGET_MS, PAGE_STATE,
};
use support::live::{Cluster, Resource};
use support::DemoServer;
use tsv_row::row;

const KEPT: usize = 32;
const CHURN_WRITES_PER_S: f64 = 2_000.0;

/// Established TCP connections whose server side is `port` (the browser's to serve).
fn connections_to(port: u16) -> usize {
    let output = Command::new("ss")
        .args([
            "-Htn",
            "state",
            "established",
            &format!("( sport = :{port} )"),
        ])
        .output()
        .expect("run ss (Debian's iproute2) to count connections");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Every discovered resource, then per-namespace views of the busy ones, up to [`KEPT`].
fn kept_routes(cluster: &Cluster) -> Vec<(Resource, Option<String>)> {
    let mut routes: Vec<(Resource, Option<String>)> = cluster
        .discovered()
        .into_iter()
        .filter(|r| r.name != "pods")
        .map(|r| (r, None))
        .collect();
    let namespaces = cluster.get("/api/v1/namespaces");
    let namespaces: Vec<String> = namespaces["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let busy = [
        ("#/core/v1/pods", "pods", "/api/v1/namespaces/{ns}/pods"),
        (
            "#/core/v1/events",
            "events",
            "/api/v1/namespaces/{ns}/events",
        ),
        (
            "#/apps/v1/replicasets",
            "replicasets.apps",
            "/apis/apps/v1/namespaces/{ns}/replicasets",
        ),
        (
            "#/apps/v1/deployments",
            "deployments.apps",
            "/apis/apps/v1/namespaces/{ns}/deployments",
        ),
    ];
    'fill: for (route, name, _) in busy {
        for ns in &namespaces {
            if routes.len() >= KEPT - 1 {
                break 'fill;
            }
            routes.push((
                Resource {
                    route: format!("{route}?namespace={ns}"),
                    name: name.to_string(),
                },
                Some(ns.clone()),
            ));
        }
    }
    // All pods last: the table on screen during the churn.
    routes.push((
        Resource {
            route: "#/core/v1/pods".into(),
            name: "pods".into(),
        },
        None,
    ));
    routes
}

/// The cluster's digest for what a route shows.
fn cluster_digest(server: &DemoServer, resource: &Resource, namespace: Option<&str>) -> String {
    let Some(ns) = namespace else {
        return server.sim_digest(&resource.name);
    };
    let path = match resource.name.split_once('.') {
        Some((plural, group)) => format!("/apis/{group}/v1/namespaces/{ns}/{plural}"),
        None => format!("/api/v1/namespaces/{ns}/{}", resource.name),
    };
    server.listed_digest(&path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by `cargo xtask bench --only page`"]
async fn kept_figures() {
    let quick = std::env::var("PAGE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let out = std::env::var_os("PAGE_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/page.json"))
        .with_file_name("kept.json");
    let (pods, churn_ms) = if quick {
        (10_000, 10_000.0)
    } else {
        (30_000, 30_000.0)
    };
    let count = pods.to_string();
    let server = DemoServer::start(&["--seed", "3", "--pods", &count, "--churn", "0"]);
    let cluster = Cluster {
        addr: server.addr,
        bearer: Some(server.token.clone()),
    };
    let routes = kept_routes(&cluster);
    assert_eq!(routes.len(), KEPT, "{routes:?}");
    let browser = chromium().await;
    let client = &browser.client;
    client.goto(&server.login_url).await.expect("login");
    let base = format!("http://{}/", server.addr);
    let opened = Instant::now();
    for (resource, _) in &routes {
        client
            .goto(&format!("{base}{}", resource.route))
            .await
            .expect("open a resource");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let states = run(
            client,
            "return Array.from(document.querySelectorAll('[data-testid=kept-resource]')).map(k => k.dataset.state);",
            vec![],
        )
        .await;
        let states: Vec<String> = serde_json::from_value(states).unwrap_or_default();
        if states.len() == KEPT && states.iter().all(|s| s == "watching") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "32 kept resources did not all sync: {states:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let all_synced_s = opened.elapsed().as_secs_f64();
    let idle_connections = connections_to(server.addr.port());

    run(client, PAGE_STATE, vec![json!(true)]).await; // resets the page's counters
    let (status, body) = server.post_json(
        "/_sim/churn",
        &json!({ "events_per_sec": CHURN_WRITES_PER_S }),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let churn_started = Instant::now();
    let port = server.addr.port();
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        loop {
            peak = peak.max(connections_to(port));
            tokio::time::sleep(Duration::from_millis(200)).await;
            if churn_started.elapsed().as_secs_f64() * 1000.0 > churn_ms {
                return peak;
            }
        }
    });
    let frames = run_async(client, FRAMES, vec![json!(churn_ms), json!("")]).await;
    let churned = churn_started.elapsed().as_secs_f64();
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    assert_eq!(status, 200);
    let during = run(client, PAGE_STATE, vec![json!(false)]).await;
    let peak_connections = sampler.await.unwrap_or(0);
    let metrics = &during["metrics"];
    let events = num(metrics, "eventToDomCount");

    // 0 lost: each kept resource, shown again, reaches the cluster's digest.
    let mut lost = Vec::new();
    for (resource, namespace) in &routes {
        client
            .goto(&format!("{base}{}", resource.route))
            .await
            .expect("show a kept resource");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let want = cluster_digest(&server, resource, namespace.as_deref());
            let state = run(client, PAGE_STATE, vec![json!(false)]).await;
            if state["digest"] == json!(want) {
                break;
            }
            if Instant::now() > deadline {
                lost.push(resource.route.clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    let (p50, p95, max, n) = frame_stats(&frames);
    let rate = events / churned;
    let mut tsv = String::new();
    tsv.push_str(&row(
        "kept.frames.churn",
        &format!("frame p95 with {KEPT} resources kept live while {rate:.0} events/s reach them ({}k pods)", pods / 1000),
        "ms",
        p95,
        FRAME_BUDGET_MS,
        "one 60 Hz frame",
        "p95 ≤ 16.7 ms, 0 lost",
        p95 <= FRAME_BUDGET_MS + 0.5 && lost.is_empty(),
        &format!(
            "{n} frames in {churned:.0} s, p50 {p50:.1} ms, max {max:.1} ms; {events:.0} events fed to the {KEPT} informers \
             at {CHURN_WRITES_PER_S:.0} writes/s; all {KEPT} synced {all_synced_s:.0} s after the first was opened; \
             digests equal to the cluster's afterwards: {} of {KEPT}{}",
            KEPT - lost.len(),
            if lost.is_empty() { String::new() } else { format!(" (not: {})", lost.join(", ")) },
        ),
    ));
    let p99 = num(metrics, "eventToDomP99");
    tsv.push_str(&row(
        "kept.event_to_dom.p99",
        &format!("event→DOM p99 with {KEPT} resources kept live, {rate:.0} events/s"),
        "ms",
        p99,
        250.0,
        "the goal",
        "p99 ≤ 250 ms",
        p99 <= 250.0,
        &format!(
            "{events:.0} events timed over every kept informer; p50 {:.0} ms, max {:.0} ms",
            num(metrics, "eventToDomP50"),
            num(metrics, "eventToDomMax"),
        ),
    ));
    let in_flight = num(metrics, "requestsInFlightPeak");
    tsv.push_str(&row(
        "kept.connections",
        &format!("requests the page holds open with {KEPT} resources kept live, during the churn (peak)"),
        "requests",
        in_flight,
        KEPT as f64,
        "one connection per watch (what the page needed before the channel; browsers allow 6)",
        "≤ 3 (the channel + lists in flight)",
        in_flight <= 3.0,
        &format!(
            "the page's own count of fetches in flight (channel, control requests, lists); TCP connections \
             established to serve's port (ss, idle keep-alive ones included): {idle_connections} before \
             the churn, at most {peak_connections} during it"
        ),
    ));
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let json = json!({"bench": "kept", "quick": quick, "frames": frames, "lost": lost});
    std::fs::write(&out, format!("{json}\n")).expect("write the JSON");
    std::fs::write(out.with_extension("tsv"), &tsv).expect("write the TSV");
    print!("{tsv}");
    let _ = browser.client.clone().close().await;
}
