//! Figures, not a check (ignored; run in release): how fast the recorder
//! turns the simulated cluster's pods into writes — the first list, and a
//! churn it follows — with a store that only counts.
//!
//! `cargo test --release -p deltascope-proxy --test integration -- --ignored --nocapture recorder_throughput::`
//! (`RECORDER_BENCH_PODS`, default 20,000; `RECORDER_BENCH_CHURN`, default 5,000/s).

use crate::recorder_support;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltascope_history::{ClusterId, RecordedState, Write};
use deltascope_proxy::recorder::{self, RecordStore, StoreUnavailable};
use recorder_support::*;
use tokio_util::sync::CancellationToken;

/// Counts deltas and the bytes of their objects; keeps nothing.
#[derive(Default)]
struct Counting {
    deltas: AtomicU64,
    bytes: AtomicU64,
}

impl RecordStore for Counting {
    fn write(
        &self,
        _: &ClusterId,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<(), StoreUnavailable>> + Send {
        for write in &writes {
            if let Write::Delta(delta) = write {
                self.deltas.fetch_add(1, Ordering::Relaxed);
                self.bytes
                    .fetch_add(delta.object.compact_len() as u64, Ordering::Relaxed);
            }
        }
        std::future::ready(Ok(()))
    }

    fn recorded_state(
        &self,
        _: &ClusterId,
        _: &str,
    ) -> impl Future<Output = Result<Option<RecordedState>, StoreUnavailable>> + Send {
        std::future::ready(Ok(None))
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "figures: run in release with --ignored --nocapture"]
async fn recorder_throughput_for_pods() {
    let pods = env("RECORDER_BENCH_PODS", 20_000);
    let rate = env("RECORDER_BENCH_CHURN", 5_000);
    let sim = sim(pods as usize, 0.0);
    let store = Arc::new(Counting::default());
    let started = Instant::now();
    let handle = recorder::spawn(
        forwarder(&sim, false),
        store.clone(),
        config(&["pods"]),
        CancellationToken::new(),
    );
    while store.deltas.load(Ordering::Relaxed) < pods {
        assert!(started.elapsed() < Duration::from_secs(600));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listed = started.elapsed().as_secs_f64();
    let list_cpu = recorder_cpu_secs();
    let bytes = store.bytes.load(Ordering::Relaxed);
    println!(
        "first list: {pods} pods in {listed:.2} s = {:.0} deltas/s ({:.1} MB of JSON, {:.0} B a pod); \
         the recorder's thread used {list_cpu:.2} s of CPU = {:.0} µs a delta",
        pods as f64 / listed,
        bytes as f64 / 1e6,
        bytes as f64 / pods as f64,
        list_cpu * 1e6 / pods as f64
    );

    // a burst: the sim creates as many pods again at once; their ADDED
    // events (and the updates that make them Running) stream to the watch
    let before = store.deltas.load(Ordering::Relaxed);
    let cpu_before = recorder_cpu_secs();
    let burst = Instant::now();
    control(&sim, "/_sim/scale", serde_json::json!({ "pods": pods * 2 })).await;
    let scaled = burst.elapsed().as_secs_f64();
    let (written, secs) = until_quiet(&store, before, burst).await;
    let cpu = recorder_cpu_secs() - cpu_before;
    println!(
        "  the recorder's thread used {cpu:.2} s of CPU = {:.0} µs a delta ({:.0} deltas/s on one core)",
        cpu * 1e6 / written as f64,
        written as f64 / cpu
    );
    println!(
        "scale to {} pods (the sim took {scaled:.2} s): {written} pod deltas written \
         {secs:.2} s after it began = {:.0} deltas/s through the watch",
        pods * 2,
        written as f64 / secs
    );

    let stats = |v: serde_json::Value| v["eventsGenerated"].as_u64().unwrap_or(0);
    let before = (
        store.deltas.load(Ordering::Relaxed),
        stats(api_stats(&sim).await),
    );
    let window = Instant::now();
    churn(&sim, rate as f64).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    churn(&sim, 0.0).await;
    let generated = stats(api_stats(&sim).await) - before.1;
    let secs = window.elapsed().as_secs_f64();
    let written_then = store.deltas.load(Ordering::Relaxed) - before.0;
    let caught_up = Instant::now();
    // the pods' share of the sim's events is not known: wait until quiet
    let mut last = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = store.deltas.load(Ordering::Relaxed);
        if now == last {
            break;
        }
        last = now;
    }
    let written = last - before.0;
    println!(
        "churn {rate}/s asked: the sim made {generated} changes (all resources) in {secs:.1} s; \
         {written_then} pod deltas written meanwhile ({:.0}/s), {written} once quiet \
         ({:.1} s after the churn stopped)",
        written_then as f64 / secs,
        caught_up.elapsed().as_secs_f64() - 0.5
    );
    handle.shutdown();
    handle.stopped().await.unwrap();
}

/// CPU seconds (user + system) the recorder's thread has used.
fn recorder_cpu_secs() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("deltascope-reco") {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // after the ")" closing the name: state is field 3, utime 14, stime 15
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        return (ticks(11) + ticks(12)) / 100.0;
    }
    0.0
}

/// Deltas written since `before` once none came for half a second, and
/// the seconds from `since` to the last of them.
async fn until_quiet(store: &Counting, before: u64, since: Instant) -> (u64, f64) {
    let mut last = (store.deltas.load(Ordering::Relaxed), since.elapsed());
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = store.deltas.load(Ordering::Relaxed);
        if now == last.0 {
            return (now - before, last.1.as_secs_f64());
        }
        last = (now, since.elapsed());
    }
}

async fn api_stats(sim: &deltascope_sim::Sim) -> serde_json::Value {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = http::Request::get("/_sim/stats")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = sim.control_router().oneshot(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}
