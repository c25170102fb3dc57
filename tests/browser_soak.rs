//! The soak run behind `cargo xtask soak --minutes N` (ignored in normal test
//! runs; xtask builds the page and binary, then runs this with `--ignored`).
//! `deltascope serve --demo` churns at `DELTASCOPE_SOAK_RATE` events/s (500)
//! into a headless page watching pods with history retention on (its
//! defaults). Once a minute the driver samples the page's memory — the JS
//! heap after a forced garbage collection (DevTools `Runtime.getHeapUsage`)
//! and the WebAssembly memory (`[data-testid=memory-stats] data-wasm-bytes`)
//! — then pauses churn, waits for the page's digest to equal the simulated
//! cluster's, and resumes. Writes `soak.csv` and `soak.md` (the curve, the
//! growth after warm-up) to `DELTASCOPE_SOAK_OUT` (target/soak) and fails if
//! the page ever diverged.
#![cfg(not(target_arch = "wasm32"))]

mod support;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{devtools, Browser, DemoServer};

/// How long the page may take to reach the cluster's digest once churn
/// pauses: a page that fell behind may be in a backoff (up to 30 s) after the
/// cluster closed its lagging watch, then relists.
const CONVERGE_WITHIN: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
struct Sample {
    minute: u64,
    elapsed_s: f64,
    js_heap_used: u64,
    js_heap_total: u64,
    wasm_bytes: u64,
    store_count: u64,
    history_deltas: u64,
    history_dropped: u64,
    sim_events: u64,
    converged: bool,
    converge_ms: u128,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn out_dir() -> PathBuf {
    let dir = std::env::var_os("DELTASCOPE_SOAK_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/soak"));
    std::fs::create_dir_all(&dir).expect("create the soak output directory");
    dir
}

async fn attr_u64(browser: &Browser, css: &str, name: &str) -> u64 {
    browser
        .attr(css, name)
        .await
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Pauses churn, waits for equal digests, resumes churn. Returns (converged, ms).
async fn digest_check(server: &DemoServer, browser: &Browser, rate: u64) -> (bool, u128) {
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let expected = server.sim_digest("pods");
    let started = Instant::now();
    let mut converged = false;
    while started.elapsed() < CONVERGE_WITHIN {
        if let Some((_, synced, state, digest)) = browser.store_stats().await {
            if synced == "true" && state == "watching" && digest == expected {
                converged = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed().as_millis();
    server.post_json("/_sim/churn", &json!({"events_per_sec": rate}));
    (converged, took)
}

async fn sample(
    server: &DemoServer,
    browser: &Browser,
    minute: u64,
    started: Instant,
    rate: u64,
) -> Sample {
    let (converged, converge_ms) = digest_check(server, browser, rate).await;
    devtools(browser, "HeapProfiler.collectGarbage", json!({})).await;
    let heap = devtools(browser, "Runtime.getHeapUsage", json!({})).await;
    let (_, stats) = server.get("/_sim/stats");
    let stats: serde_json::Value = serde_json::from_slice(&stats).unwrap_or_default();
    Sample {
        minute,
        elapsed_s: started.elapsed().as_secs_f64(),
        js_heap_used: heap["usedSize"].as_f64().unwrap_or(0.0) as u64,
        js_heap_total: heap["totalSize"].as_f64().unwrap_or(0.0) as u64,
        wasm_bytes: attr_u64(browser, "[data-testid=memory-stats]", "data-wasm-bytes").await,
        store_count: attr_u64(browser, "[data-testid=store-stats]", "data-count").await,
        history_deltas: attr_u64(browser, "[data-testid=history-stats]", "data-deltas").await,
        history_dropped: attr_u64(browser, "[data-testid=history-stats]", "data-dropped").await,
        sim_events: stats["eventsGenerated"].as_u64().unwrap_or(0),
        converged,
        converge_ms,
    }
}

fn csv(samples: &[Sample]) -> String {
    let mut out = String::from(
        "minute,elapsed_s,js_heap_used_bytes,js_heap_total_bytes,wasm_memory_bytes,store_count,history_deltas,history_dropped,sim_events_generated,digest_equal,converge_ms\n",
    );
    for s in samples {
        let _ = writeln!(
            out,
            "{},{:.1},{},{},{},{},{},{},{},{},{}",
            s.minute,
            s.elapsed_s,
            s.js_heap_used,
            s.js_heap_total,
            s.wasm_bytes,
            s.store_count,
            s.history_deltas,
            s.history_dropped,
            s.sim_events,
            s.converged,
            s.converge_ms
        );
    }
    out
}

/// Least-squares slope of `y` over `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let den: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

fn summary(samples: &[Sample], rate: u64, minutes: u64) -> String {
    let mut out = format!(
        "# deltascope soak\n\n{minutes} min at {rate} events/s through `deltascope serve --demo` into a headless page (pods, history retention on). One row per minute: the JS heap after a forced GC, the wasm memory, and whether the page's digest equalled the cluster's after churn paused.\n\n"
    );
    out.push_str("| minute | JS heap used | JS heap total | wasm memory | store | history deltas | evicted | digest equal | converge ms |\n|---:|---:|---:|---:|---:|---:|---:|:---:|---:|\n");
    for s in samples {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.minute,
            mb(s.js_heap_used as f64),
            mb(s.js_heap_total as f64),
            mb(s.wasm_bytes as f64),
            s.store_count,
            s.history_deltas,
            s.history_dropped,
            if s.converged { "yes" } else { "**NO**" },
            s.converge_ms
        );
    }
    // Warm-up: until retention starts evicting (the history stops growing),
    // and at least the first third of the run.
    let evicting = samples
        .iter()
        .position(|s| s.history_dropped > 0)
        .unwrap_or(samples.len());
    let warm = evicting.max(samples.len() / 3).min(samples.len());
    let after: Vec<&Sample> = samples[warm..].iter().collect();
    let divergences = samples.iter().filter(|s| !s.converged).count();
    let _ = writeln!(
        out,
        "\nDivergences: {divergences} of {} digest checks.",
        samples.len()
    );
    if after.len() >= 2 {
        let heap: Vec<(f64, f64)> = after
            .iter()
            .map(|s| (s.minute as f64, s.js_heap_used as f64))
            .collect();
        let wasm: Vec<(f64, f64)> = after
            .iter()
            .map(|s| (s.minute as f64, s.wasm_bytes as f64))
            .collect();
        let first = after[0];
        let last = after[after.len() - 1];
        let _ = writeln!(
            out,
            "After warm-up (minute {} on): JS heap {} → {} (slope {}/min), wasm memory {} → {} (slope {}/min).",
            first.minute,
            mb(first.js_heap_used as f64),
            mb(last.js_heap_used as f64),
            mb(slope(&heap)),
            mb(first.wasm_bytes as f64),
            mb(last.wasm_bytes as f64),
            mb(slope(&wasm)),
        );
    } else {
        out.push_str("Too few minutes after warm-up to fit a slope; run longer.\n");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a long benchmark-style run: `cargo xtask soak --minutes N`"]
async fn soak() {
    let minutes = env_u64("DELTASCOPE_SOAK_MINUTES", 60).max(1);
    let rate = env_u64("DELTASCOPE_SOAK_RATE", 500);
    let pods = env_u64("DELTASCOPE_SOAK_PODS", 1000).to_string();
    let out = out_dir();
    let server = DemoServer::start(&["--seed", "1", "--pods", &pods, "--churn", "0"]);
    let browser = Browser::start().await;
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("open the page");
    browser
        .wait_for("the first sync", Duration::from_secs(120), || async {
            let (_, synced, state, _) = browser.store_stats().await?;
            (synced == "true" && state == "watching").then_some(())
        })
        .await;
    devtools(&browser, "Performance.enable", json!({})).await;
    let started = Instant::now();
    let mut samples = vec![sample(&server, &browser, 0, started, rate).await];
    eprintln!("soak: {:?}", samples[0]);
    for minute in 1..=minutes {
        let due = Duration::from_secs(60 * minute);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let row = sample(&server, &browser, minute, started, rate).await;
        eprintln!("soak: {row:?}");
        samples.push(row);
        std::fs::write(out.join("soak.csv"), csv(&samples)).expect("write soak.csv");
    }
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    let report = summary(&samples, rate, minutes);
    std::fs::write(out.join("soak.csv"), csv(&samples)).expect("write soak.csv");
    std::fs::write(out.join("soak.md"), &report).expect("write soak.md");
    println!("{report}");
    println!("soak: wrote {}/soak.csv and soak.md", out.display());
    browser.client.close().await.expect("close the browser");
    let diverged: Vec<u64> = samples
        .iter()
        .filter(|s| !s.converged)
        .map(|s| s.minute)
        .collect();
    assert!(
        diverged.is_empty(),
        "the page's digest did not reach the cluster's within {CONVERGE_WITHIN:?} at minutes {diverged:?}"
    );
}
