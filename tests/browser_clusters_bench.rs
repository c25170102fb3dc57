//! Several clusters (issue 42), measured: the page syncing two clusters'
//! pods at once against the same page syncing one, and serve with five
//! contexts against serve with one.
//!
//! - In headless Chromium, against the release `deltascope serve
//!   --upstream home=… --upstream b=… --upstream c=…` in front of three
//!   release `deltascope sim`s (b and c: 30,000 pods each, `--quick`:
//!   10,000; home, the default cluster, a few pods the page never opens,
//!   so that nothing measured is restored from the browser's database):
//!   after a first page that only warms the browser's code cache, the
//!   reference is a fresh page syncing b's pods alone; then a fresh
//!   page opens b's pods and, at once, c's, both kept live and syncing
//!   together on the one channel. For each: the longest main-thread task
//!   and the frame p95 from navigation until every table is synced
//!   (PerformanceObserver longtask + requestAnimationFrame), and then each
//!   table's digest against its own sim's.
//! - serve with `--context` ×5 (a kubeconfig of five contexts, one sim
//!   behind them) against serve with one: its resident memory once every
//!   cluster answers, and the `kubectl proxy` processes it runs.
//!
//! An `#[ignore]` test run by `cargo xtask bench --only page`
//! (environment as `browser_page_bench.rs`); it writes `clusters.tsv` and
//! `clusters.json` beside `PAGE_BENCH_OUT`.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fantoccini::Client;
use serde_json::{json, Value};
use support::bench::{chromium, observe_jank, run, store_stat, FRAME_BUDGET_MS, JANK};
use support::chain::{
    kubectl_children, served_clusters, sim_digest, start_serve_contexts, start_serve_upstream,
    start_sim, write_kubeconfig,
};
use support::scratch::Scratch;
use tsv_row::{row, Jank};

const CONTEXTS: usize = 5;

/// The page's clock and what its kept resources say: `(label, state)`.
const KEPT: &str = "return {now: performance.now(), kept: Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
    .map(k => [k.dataset.resource, k.dataset.state])};";

/// A fresh page (its JANK observer installed) opening `hashes` one after
/// the other at once; waits until each (by its lane, `labels`) is kept and
/// watching. The stretch's jank and how long it took.
async fn sync_fresh(
    client: &Client,
    base: &str,
    (hashes, labels): (&[&str], &[&str]),
) -> (Value, f64) {
    client.goto("about:blank").await.expect("blank");
    let started = Instant::now();
    client
        .goto(&format!("{base}{}", hashes[0]))
        .await
        .expect("the first view");
    for hash in &hashes[1..] {
        // once the page shows the view before: the app starts after the
        // load event, and a hash changed before it starts opens only the
        // last view
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = store_stat(client, "state").await;
            if matches!(state.as_str(), "listing" | "watching") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the first view never listed: {state}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        run(
            client,
            "location.hash = arguments[0]; return true;",
            vec![json!(hash)],
        )
        .await;
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    let until = loop {
        let state = run(client, KEPT, vec![]).await;
        let kept: Vec<(String, String)> =
            serde_json::from_value(state["kept"].clone()).unwrap_or_default();
        let watching = |label: &&str| kept.iter().any(|(l, s)| l == label && s == "watching");
        if labels.iter().all(watching) {
            break state["now"].as_f64().unwrap_or(f64::NAN);
        }
        assert!(Instant::now() < deadline, "not all synced: {kept:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // while syncing: from the first list on (the page's start before it
    // is the same with one cluster or two, and the page bench's figure)
    let listed = run(
        client,
        "const e = performance.getEntriesByName('deltascope:list-start'); return e.length ? e[0].startTime : 0;",
        vec![],
    )
    .await;
    let syncing = run(client, JANK, vec![listed, json!(until)]).await;
    let from_navigation = run(client, JANK, vec![json!(0), json!(until)]).await;
    (
        json!({"syncing": syncing, "fromNavigation": from_navigation}),
        started.elapsed().as_secs_f64(),
    )
}

/// The digest the page shows for `hash` once it equals `want` (at most a
/// minute), or the last one it showed.
async fn shown_digest(client: &Client, base: &str, hash: &str, want: &str) -> String {
    client
        .goto(&format!("{base}{hash}"))
        .await
        .expect("a kept view");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let digest = store_stat(client, "digest").await;
        if digest == want || Instant::now() > deadline {
            return digest;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A process's resident memory, from `/proc`.
fn rss_bytes(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb * 1024.0)
}

/// serve with the contexts `names` of `kubeconfig`, once every cluster
/// answers and a few health checks later: its RSS and its kubectl
/// children's.
fn serve_with_contexts(kubeconfig: &Path, names: &[String]) -> (f64, Vec<f64>) {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (child, link, token) = start_serve_contexts(kubeconfig, &names, "off");
    let addr: SocketAddr = link
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("serve's address");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let clusters = served_clusters(addr, &token);
        let up = clusters.iter().filter(|c| c["state"] == "up").count();
        if up == names.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every cluster answered: {clusters:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // a few health checks (every 5 s) with every cluster up
    std::thread::sleep(Duration::from_secs(12));
    let pid = child.0.id();
    let kubectls = kubectl_children(pid)
        .into_iter()
        .map(|(child, _)| rss_bytes(child))
        .collect();
    (rss_bytes(pid), kubectls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by `cargo xtask bench --only page`"]
async fn clusters_figures() {
    let quick = std::env::var("PAGE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let out = std::env::var_os("PAGE_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/page.json"))
        .with_file_name("clusters.json");
    let pods = if quick { 10_000 } else { 30_000 };
    let k = pods / 1000;
    let count = pods.to_string();
    let (_home, home) = start_sim(&["--seed", "1", "--pods", "20", "--churn", "0"]);
    let (_sim_b, b) = start_sim(&["--seed", "3", "--pods", &count, "--churn", "0"]);
    let (_sim_c, c) = start_sim(&["--seed", "5", "--pods", &count, "--churn", "0"]);
    let upstreams = [format!("b=http://{b}"), format!("c=http://{c}")];
    let (_serve, login) = start_serve_upstream(
        &format!("home=http://{home}"),
        &["--upstream", &upstreams[0], "--upstream", &upstreams[1]],
    );
    let base = login.split("?code=").next().expect("base").to_string();
    let browser = chromium().await;
    let client = &browser.client;
    client.goto(&login).await.expect("sign in");
    // signed in on the default cluster's pods: gone before the page stores
    // them, so that no measured page restores them
    observe_jank(client).await;

    // A first page pays for compiling the page's code; neither measured
    // page should (c's namespaces: a few objects, stored nowhere).
    sync_fresh(
        client,
        &base,
        (&["#/c/core/v1/namespaces"], &["c: namespaces"]),
    )
    .await;
    let (alone, alone_s) = sync_fresh(client, &base, (&["#/b/core/v1/pods"], &["b: pods"])).await;
    let (both, both_s) = sync_fresh(
        client,
        &base,
        (
            &["#/b/core/v1/pods", "#/c/core/v1/pods"],
            &["b: pods", "c: pods"],
        ),
    )
    .await;
    let mut lost = Vec::new();
    for (hash, sim) in [("#/b/core/v1/pods", b), ("#/c/core/v1/pods", c)] {
        let want = sim_digest(sim, "pods");
        if shown_digest(client, &base, hash, &want).await != want {
            lost.push(hash);
        }
    }
    let from_navigation = |run: &Value| Jank::from_script(&run["fromNavigation"]).longest;
    let (alone_nav, both_nav) = (from_navigation(&alone), from_navigation(&both));
    let (alone, both) = (
        Jank::from_script(&alone["syncing"]),
        Jank::from_script(&both["syncing"]),
    );
    let same = format!(
        "two clusters synced together in {both_s:.1} s, one alone in {alone_s:.1} s; \
         two: {:.0} long tasks, {:.0} ms blocked, longest frame gap {:.0} ms over {:.0} frames; \
         one: {:.0} long tasks, longest {:.0} ms, longest gap {:.0} ms; from the first list on (from navigation, the page's \
         start included, the longest task was {both_nav:.0} ms with two, {alone_nav:.0} ms with one); \
         digests equal to each sim's afterwards: {} of 2",
        both.count,
        both.blocked,
        both.longest_gap,
        both.frames,
        alone.count,
        alone.longest,
        alone.longest_gap,
        2 - lost.len(),
    );
    let mut tsv = row(
        &format!("clusters.sync.{k}k.longest_task"),
        &format!(
            "longest main-thread task while two clusters of {k}k pods sync at once in one page"
        ),
        "ms",
        both.longest,
        50.0,
        "the 50 ms long-task limit (one cluster alone: in the notes)",
        "no task over 50 ms (as with one cluster), 0 lost",
        both.longest <= 50.0 && lost.is_empty(),
        &same,
    );
    tsv.push_str(&row(
        &format!("clusters.sync.{k}k.frames"),
        &format!("frame p95 while two clusters of {k}k pods sync at once in one page"),
        "ms",
        both.p95,
        alone.p95,
        &format!("one cluster of {k}k pods alone, the same page"),
        "p95 ≤ 16.7 ms (as with one cluster)",
        both.p95 <= FRAME_BUDGET_MS + 0.5,
        &format!("one 60 Hz frame is {FRAME_BUDGET_MS:.1} ms"),
    ));
    drop(browser);

    // serve with five contexts (one sim behind them all) against one.
    let scratch = Scratch::new("clusters_bench", "kubeconfig");
    let kubeconfig = scratch.0.join("kubeconfig");
    // five contexts, one sim behind them all
    let names: Vec<String> = (0..CONTEXTS).map(|n| format!("c{n}")).collect();
    let contexts: Vec<(&str, String)> = names
        .iter()
        .map(|name| (name.as_str(), format!("http://{home}")))
        .collect();
    write_kubeconfig(&kubeconfig, &contexts);
    let (one_rss, one_kubectls) = serve_with_contexts(&kubeconfig, &names[..1]);
    let (five_rss, five_kubectls) = serve_with_contexts(&kubeconfig, &names);
    let kubectl_mb = |k: &[f64]| k.iter().sum::<f64>() / 1e6;
    tsv.push_str(&row(
        "clusters.serve_rss.5_contexts",
        &format!("serve's resident memory with {CONTEXTS} contexts, every cluster answering"),
        "MB",
        five_rss / 1e6,
        one_rss / 1e6,
        "serve with one context",
        "(reported)",
        true,
        &format!(
            "kubectl proxy processes: {} with {CONTEXTS} contexts ({:.0} MB resident together), {} with one ({:.0} MB); \
             no page open, recording off",
            five_kubectls.len(),
            kubectl_mb(&five_kubectls),
            one_kubectls.len(),
            kubectl_mb(&one_kubectls),
        ),
    ));
    tsv.push_str(&row(
        "clusters.kubectl_processes.5_contexts",
        &format!("kubectl proxy processes serve runs for {CONTEXTS} contexts"),
        "processes",
        five_kubectls.len() as f64,
        CONTEXTS as f64,
        "one per context",
        "one per context",
        five_kubectls.len() == CONTEXTS && one_kubectls.len() == 1,
        &format!(
            "{:.0} MB resident together; serve itself {:.0} MB",
            kubectl_mb(&five_kubectls),
            five_rss / 1e6
        ),
    ));
    if let Some(parent) = out.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let json = json!({"bench": "clusters", "quick": quick, "lost": lost});
    std::fs::write(&out, format!("{json}\n")).expect("write the JSON");
    std::fs::write(out.with_extension("tsv"), &tsv).expect("write the TSV");
    print!("{tsv}");
}
