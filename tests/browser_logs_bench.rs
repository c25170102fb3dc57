//! Figures for the logs view, not checks: run by `cargo xtask
//! bench --only page` (the release page), or by hand with `cargo nextest run
//! -p deltascope --test browser_logs_bench --run-ignored only --no-capture`
//! after `cargo xtask build` (the debug page). Writes `logs.tsv` beside
//! `PAGE_BENCH_OUT` for the benchmark table. Against `deltascope sim --pods 4` behind `serve
//! --upstream`, after more than six resources are open, the busiest
//! Deployment's pods are followed while the sim writes 10,000 lines/s
//! (spread over its 8 containers):
//! - for 30 s: frame intervals (requestAnimationFrame), newest line → DOM
//!   (each frame, `Date.now()` minus the kubelet timestamp of the last line
//!   drawn, when it changed: the sim stamps lines with its clock as it
//!   writes them, on this machine), bytes the ring holds against its bound;
//! - lines not taken in: what the sim served (`GET /_sim/logs`) minus what
//!   the page held and evicted, once the rate is 0;
//! - then, holding 100,000 lines, frame intervals while scrolling through
//!   them 600 px a frame.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::time::{Duration, Instant};

use serde_json::json;
use support::chain::{start_serve_upstream, start_sim};
use support::live::Cluster;
use support::logs::{log_attr, open_more_than_six};
use support::Browser;

/// Samples every animation frame for `ms`: the frame intervals, and the
/// newest drawn line's age whenever it changed. With `scroll`, the log is
/// scrolled 600 px a frame (from the top, wrapping).
async fn sample(browser: &Browser, ms: u64, scroll: bool) -> (Vec<f64>, Vec<f64>) {
    let script = format!(
        "const done = arguments[0]; const frames = [], ages = []; let last = performance.now(), seen = '';\
         const end = last + {ms}; const s = document.querySelector('[data-testid=log-scroll]');\
         if ({scroll}) s.scrollTop = 0;\
         const step = t => {{ frames.push(t - last); last = t;\
           const lines = s.querySelectorAll('[data-testid=log-line]');\
           const newest = lines.length ? lines[lines.length - 1].dataset.ts : '';\
           if (!{scroll} && newest && newest !== seen) {{ seen = newest; ages.push(Date.now() - Date.parse(newest)); }}\
           if ({scroll}) {{ s.scrollTop = s.scrollTop + 600 >= s.scrollHeight - s.clientHeight ? 0 : s.scrollTop + 600; }}\
           if (t < end) requestAnimationFrame(step); else done([frames, ages]); }};\
         requestAnimationFrame(step);"
    );
    let value = browser
        .client
        .execute_async(&script, vec![])
        .await
        .expect("sampling frames");
    let (mut frames, mut ages): (Vec<f64>, Vec<f64>) =
        serde_json::from_value(value).unwrap_or_default();
    frames.sort_by(f64::total_cmp);
    ages.sort_by(f64::total_cmp);
    (frames, ages)
}

fn p(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

async fn number(browser: &Browser, name: &str) -> u64 {
    log_attr(browser, name)
        .await
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by `cargo xtask bench --only page`"]
async fn ten_thousand_lines_a_second() {
    let (_sim, sim_addr) = start_sim(&["--pods", "4", "--churn", "0"]);
    let (_serve, login_url) = start_serve_upstream(&format!("http://{sim_addr}"), &[]);
    let base = login_url.split('?').next().unwrap_or_default().to_string();
    let browser = Browser::start().await;
    browser.client.goto(&login_url).await.expect("sign in");
    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    open_more_than_six(&browser, &base, &cluster).await;
    let deployments = cluster.get("/apis/apps/v1/deployments");
    let busiest = deployments["items"]
        .as_array()
        .into_iter()
        .flatten()
        .max_by_key(|d| d["spec"]["replicas"].as_u64().unwrap_or(0))
        .expect("a deployment");
    let (namespace, name) = (
        busiest["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default(),
        busiest["metadata"]["name"].as_str().unwrap_or_default(),
    );
    cluster.post("/_sim/logs", json!({"lines_per_sec": 10000}));
    browser
        .client
        .goto(&format!(
            "{base}#/apps/v1/deployments/{namespace}/{name}/log?tail=1"
        ))
        .await
        .expect("follow the deployment");
    browser
        .wait_for("lines arriving", Duration::from_secs(30), || async {
            (number(&browser, "data-lines").await > 1000).then_some(())
        })
        .await;

    let started = Instant::now();
    let taken_before =
        number(&browser, "data-lines").await + number(&browser, "data-dropped").await;
    // Three windows of 10 s (a WebDriver script may run for 30 s at most).
    let (mut frames, mut ages) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (f, a) = sample(&browser, 10_000, false).await;
        frames.extend(f);
        ages.extend(a);
    }
    frames.sort_by(f64::total_cmp);
    ages.sort_by(f64::total_cmp);
    let elapsed = started.elapsed().as_secs_f64();
    let taken_after = number(&browser, "data-lines").await + number(&browser, "data-dropped").await;
    let (bytes, max_bytes) = (
        number(&browser, "data-bytes").await,
        number(&browser, "data-max-bytes").await,
    );
    let heap = browser
        .script("return performance.memory ? performance.memory.usedJSHeapSize : 0;")
        .await;
    let taken_per_s = (taken_after - taken_before) as f64 / elapsed;
    let follow_frames = (p(&frames, 0.5), p(&frames, 0.95), p(&frames, 1.0));
    let line_to_dom = (p(&ages, 0.5), p(&ages, 0.99), ages.len());
    println!(
        "logs bench: followed {} streams for {elapsed:.1} s: {:.0} lines/s taken in; \
         frame p50 {:.1} / p95 {:.1} / max {:.1} ms; newest line -> DOM p50 {:.0} / p99 {:.0} / max {:.0} ms \
         ({} samples); ring {:.1} MiB of its {:.0} MiB bound, JS heap {:.1} MiB",
        log_attr(&browser, "data-sources").await.unwrap_or_default(),
        (taken_after - taken_before) as f64 / elapsed,
        p(&frames, 0.5),
        p(&frames, 0.95),
        p(&frames, 1.0),
        p(&ages, 0.5),
        p(&ages, 0.99),
        p(&ages, 1.0),
        ages.len(),
        bytes as f64 / (1 << 20) as f64,
        max_bytes as f64 / (1 << 20) as f64,
        heap.as_f64().unwrap_or(0.0) / (1 << 20) as f64,
    );

    let held = browser
        .wait_for("100,000 lines held", Duration::from_secs(120), || async {
            let held = number(&browser, "data-lines").await;
            (held >= 100_000).then_some(held)
        })
        .await;
    browser.click("[data-testid=log-follow]").await;
    let (scrolling, _) = sample(&browser, 5_000, true).await;
    println!(
        "logs bench: holding {held} lines, scrolling 600 px a frame: frame p50 {:.1} / p95 {:.1} / max {:.1} ms",
        p(&scrolling, 0.5),
        p(&scrolling, 0.95),
        p(&scrolling, 1.0),
    );

    cluster.post("/_sim/logs", json!({"lines_per_sec": 0}));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let served = cluster.get("/_sim/logs")["lines_served"]
        .as_u64()
        .unwrap_or(0);
    let taken = number(&browser, "data-lines").await + number(&browser, "data-dropped").await;
    let repeated = number(&browser, "data-repeated").await;
    println!(
        "logs bench: the sim served {served} lines; the page took in {taken} (held + evicted) and dropped \
         {repeated} sent again after {} breaks: {} lost",
        log_attr(&browser, "data-breaks").await.unwrap_or_default(),
        served as i64 - taken as i64 - repeated as i64,
    );
    browser.screenshot("logs-bench.png").await;

    let lost = served as i64 - taken as i64 - repeated as i64;
    let mut tsv = String::new();
    tsv.push_str(&tsv_row::row(
        "logs.frames.follow",
        "frame p95 while following a Deployment's pods at 10,000 lines/s for 30 s",
        "ms",
        follow_frames.1,
        16.7,
        "one 60 Hz frame",
        "p95 ≤ 16.7 ms",
        follow_frames.1 <= 17.2,
        &format!(
            "{taken_per_s:.0} lines/s taken in from the sim's 10,000/s; p50 {:.1} ms, max {:.1} ms",
            follow_frames.0, follow_frames.2
        ),
    ));
    tsv.push_str(&tsv_row::row(
        "logs.line_to_dom.p99",
        "newest line → DOM p99 while following at 10,000 lines/s",
        "ms",
        line_to_dom.1,
        250.0,
        "the goal",
        "p99 ≤ 250 ms",
        line_to_dom.1 <= 250.0,
        &format!(
            "{} samples (kubelet timestamp of the newest line drawn → Date.now()); p50 {:.0} ms",
            line_to_dom.2, line_to_dom.0
        ),
    ));
    tsv.push_str(&tsv_row::row(
        "logs.memory",
        "bytes the logs ring holds against its bound",
        "MiB",
        bytes as f64 / (1 << 20) as f64,
        max_bytes as f64 / (1 << 20) as f64,
        "the ring's byte bound",
        "≤ the bound",
        bytes <= max_bytes,
        "the 100,000-line bound is reached first",
    ));
    tsv.push_str(&tsv_row::row(
        "logs.lost",
        "lines lost against the sim's own count",
        "lines",
        lost as f64,
        served as f64,
        "lines the sim served",
        "0 lost",
        lost == 0,
        &format!(
            "taken in {taken} (held + evicted), {repeated} dropped as sent again after reconnects"
        ),
    ));
    tsv.push_str(&tsv_row::row(
        "logs.frames.scroll",
        "frame p95 scrolling 600 px a frame through 100,000 held lines",
        "ms",
        p(&scrolling, 0.95),
        16.7,
        "one 60 Hz frame",
        "p95 ≤ 16.7 ms",
        p(&scrolling, 0.95) <= 17.2,
        &format!(
            "p50 {:.1} ms, max {:.1} ms",
            p(&scrolling, 0.5),
            p(&scrolling, 1.0)
        ),
    ));
    let out = std::env::var_os("PAGE_BENCH_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/page.json")
        })
        .with_file_name("logs.tsv");
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&out, &tsv).expect("write logs.tsv");
    print!("{tsv}");
}
