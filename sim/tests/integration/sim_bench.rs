//! Figures, not timed tests (run with `cargo test -p deltascope-sim
//! --release --test integration -- --ignored --nocapture sim_bench:: --test-threads 1`):
//! watch fan-out to 1, 100 and 1,000 concurrent watchers, serving a list of
//! 30k pods whole and in pages of 500, and the cost of a write.
//!
//! Figures (release build without LTO, 2 shared cores, client and server
//! in one process): fan-out to 1 watcher 94k events/s (450 MB/s), to 100
//! watchers 88k events/s (425 MB/s), to 1,000 watchers 130k events/s
//! (627 MB/s) delivered in total (load average about 8); a pod with its
//! managedFields is 8.9 KB, 30k pods 268 MB, listed whole at 215–234 MB/s
//! and in 60 pages of 500 at 35 MB/s; starting with 30k pods takes about
//! 6 s and leaves 942 MB resident; `/_sim/scale` creates 20k pods at 7.7k
//! writes/s and deletes them at 12.3k writes/s; churn runs at 9.1k
//! writes/s (load average about 2).

use crate::support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltascope_sim::SimConfig;
use http_body_util::BodyExt;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: cargo test -p deltascope-sim --release --test integration -- --ignored --nocapture sim_bench::"]
async fn bench_watch_fanout() {
    for (watchers, events) in [(1usize, 4000u64), (100, 2000), (1000, 300)] {
        let t = start(SimConfig {
            watch_lag_limit: 1 << 16,
            history: 10_000,
            slow_watch_timeout: Duration::from_secs(60),
            ..quiet(100)
        })
        .await;
        // Produce the events first, then measure delivery alone: every
        // watcher replays them from the same resourceVersion.
        let rv = rv_of(&t.get_json("/api/v1/pods?limit=1").await);
        t.post("/_sim/scale", &format!(r#"{{"pods": {}}}"#, 100 + events))
            .await;
        let lines = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..watchers {
            let resp = t
                .send_with(
                    "GET",
                    &format!("/api/v1/pods?watch=1&resourceVersion={rv}"),
                    &[],
                    None,
                )
                .await;
            let (lines, bytes) = (lines.clone(), bytes.clone());
            tasks.push(tokio::spawn(async move {
                let mut body = resp.into_body();
                let mut seen = 0;
                while seen < events {
                    match body.frame().await {
                        Some(Ok(f)) => {
                            if let Ok(d) = f.into_data() {
                                let n = d.iter().filter(|b| **b == b'\n').count() as u64;
                                seen += n;
                                lines.fetch_add(n, Ordering::Relaxed);
                                bytes.fetch_add(d.len() as u64, Ordering::Relaxed);
                            }
                        }
                        _ => break,
                    }
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
        let secs = started.elapsed().as_secs_f64();
        let delivered = lines.load(Ordering::Relaxed);
        println!(
            "fan-out: {watchers:>5} watchers, {events} pod events each: {delivered} events in {secs:.2}s = {:.0} events/s delivered ({:.0} MB/s)",
            delivered as f64 / secs,
            bytes.load(Ordering::Relaxed) as f64 / secs / 1e6
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: cargo test -p deltascope-sim --release --test integration -- --ignored --nocapture sim_bench::"]
async fn bench_list_30k_pods() {
    let setup = Instant::now();
    let t = start(quiet(30_000)).await;
    println!(
        "start with 30k pods: {:.1}s, RSS {} MB",
        setup.elapsed().as_secs_f64(),
        rss_mb()
    );
    for round in 0..2 {
        let started = Instant::now();
        let r = t.get("/api/v1/pods").await;
        let secs = started.elapsed().as_secs_f64();
        println!(
            "list 30k pods whole (round {round}): {:.1} MB in {secs:.2}s = {:.0} MB/s",
            r.body.len() as f64 / 1e6,
            r.body.len() as f64 / secs / 1e6
        );
    }
    let started = Instant::now();
    let (mut total, mut pages) = (0usize, 0);
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            Some(c) => format!("/api/v1/pods?limit=500&continue={c}"),
            None => "/api/v1/pods?limit=500".to_string(),
        };
        let r = t.get(&path).await;
        total += r.body.len();
        pages += 1;
        token = r.json()["metadata"]["continue"].as_str().map(String::from);
        if token.is_none() {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "list 30k pods in {pages} pages of 500: {:.1} MB in {secs:.2}s = {:.0} MB/s",
        total as f64 / 1e6,
        total as f64 / secs / 1e6
    );
}

/// This process's resident memory in MB (Linux; 0 elsewhere).
fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// The cost of a write: 20,000 pods created and deleted through
/// `/_sim/scale` (each a pod write plus its deployment's and replicaset's
/// spec and status writes), and 20,000 churn steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: cargo test -p deltascope-sim --release --test integration -- --ignored --nocapture sim_bench::"]
async fn bench_writes() {
    let t = start(quiet(1000)).await;
    for (what, pods) in [("create", 21_000), ("delete", 1000)] {
        let rev = t.get_json("/_sim/stats").await["revision"].as_u64();
        let started = Instant::now();
        t.post("/_sim/scale", &format!(r#"{{"pods": {pods}}}"#))
            .await;
        let secs = started.elapsed().as_secs_f64();
        let writes = t.get_json("/_sim/stats").await["revision"]
            .as_u64()
            .unwrap_or(0)
            - rev.unwrap_or(0);
        println!(
            "scale: {what} 20k pods: {writes} writes in {secs:.2}s = {:.0} writes/s",
            writes as f64 / secs
        );
    }
    let rev = t.get_json("/_sim/stats").await["revision"]
        .as_u64()
        .unwrap_or(0);
    let started = Instant::now();
    t.post("/_sim/churn", r#"{"events_per_sec": 100000}"#).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    let secs = started.elapsed().as_secs_f64();
    let writes = t.get_json("/_sim/stats").await["revision"]
        .as_u64()
        .unwrap_or(0)
        - rev;
    println!(
        "churn at 100k/s asked: {writes} writes in {secs:.2}s = {:.0} writes/s",
        writes as f64 / secs
    );
}
