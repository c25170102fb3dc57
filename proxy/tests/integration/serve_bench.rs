//! The proxy's figures (added latency, throughput, memory against `kubectl
//! proxy`), measured in one run (ignored by default; numbers
//! only mean something in a release build on a quiet machine):
//!
//! ```text
//! cargo test -p deltascope-proxy --release --test integration -- --ignored --nocapture serve_bench::
//! ```
//!
//! - throughput of a large list (default 100 MB, `DELTASCOPE_BENCH_LIST_MB`):
//!   direct from the upstream, through `deltascope serve`, through the real
//!   `kubectl proxy`, and through `deltascope serve` in front of `kubectl proxy`;
//! - latency of watch events (p50/p99), direct and through `deltascope serve`,
//!   the difference being what the proxy adds;
//! - resident memory of the `deltascope serve` binary holding 1,000 open watches
//!   (`DELTASCOPE_BENCH_WATCHES`).
//!
//! The upstream is a stub in this process that streams a pre-built body and
//! stamps each watch event with its send time. The report is printed as a
//! Markdown table and, if `DELTASCOPE_BENCH_OUT` names a file, written there
//! (for BENCHMARKS.md).

use crate::serve_support;

/// The session token of the servers benchmarked here.
const BENCH_TOKEN: &str = "bench-token-0123456789abcdef0123456789";

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use deltascope_proxy::serve::Upstream;
use serve_support::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The clock shared by the stub (send time) and the client (receive time).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A stub upstream: `/api/v1/configmaps` is a list of `list_bytes` bytes,
/// `?watch=1&events=N&interval_us=U` stamps events with their send time.
async fn bench_upstream(list_bytes: usize) -> SocketAddr {
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let list = Arc::new((chunk, list_bytes));
    let app = axum::Router::new().fallback(move |request: Request| {
        let list = Arc::clone(&list);
        async move {
            let query = request.uri().query().unwrap_or("").to_owned();
            let param = |name: &str| {
                query
                    .split('&')
                    .filter_map(|p| p.split_once('='))
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, v)| v.parse::<u64>().ok())
            };
            if query.contains("watch=1") {
                let total = param("events").unwrap_or(u64::MAX);
                let interval = Duration::from_micros(param("interval_us").unwrap_or(1_000_000));
                let stream = futures_util::stream::unfold(0u64, move |n| async move {
                    if n >= total {
                        return None;
                    }
                    if n > 0 {
                        tokio::time::sleep(interval).await;
                    }
                    let sent = epoch().elapsed().as_nanos();
                    let line = format!(
                        "{{\"type\":\"MODIFIED\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\
                         \"metadata\":{{\"name\":\"c{n}\",\"namespace\":\"default\",\"resourceVersion\":\"{n}\",\
                         \"annotations\":{{\"sent\":\"{sent}\"}}}}}}}}\n"
                    );
                    Some((Ok::<_, std::io::Error>(Bytes::from(line)), n + 1))
                });
                return Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from_stream(stream))
                    .unwrap();
            }
            // `{"kind":"ConfigMapList","items":[]` + padding + `}`: valid JSON of the size asked.
            let (chunk, total) = (list.0.clone(), list.1);
            let head = Bytes::from_static(b"{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"items\":[]");
            let mut left = total.saturating_sub(head.len() + 1);
            let mut parts = vec![head];
            while left > 0 {
                let n = left.min(chunk.len());
                parts.push(chunk.slice(..n));
                left -= n;
            }
            parts.push(Bytes::from_static(b"}"));
            let stream = futures_util::stream::iter(parts.into_iter().map(Ok::<_, std::io::Error>));
            Response::builder()
                .header("content-type", "application/json")
                .header("content-length", total.max(54).to_string())
                .body(Body::from_stream(stream))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// GETs `path` and reads the body to the end; returns (bytes, MB/s).
async fn fetch(addr: SocketAddr, path: &str, token: Option<&str>) -> (usize, f64) {
    let mut request = req("GET", path);
    if let Some(token) = token {
        request = request.bearer(token);
    }
    let started = Instant::now();
    let mut stream = open(addr, request).await;
    let mut total = 0usize;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    let secs = started.elapsed().as_secs_f64();
    (total, total as f64 / secs / 1e6)
}

/// Reads `events` watch lines from `addr`, returning each one's latency in µs.
async fn watch_latencies(addr: SocketAddr, events: usize, token: Option<&str>) -> Vec<f64> {
    let path = format!("/api/v1/configmaps?watch=1&events={events}&interval_us=2000");
    let mut request = req("GET", &path);
    if let Some(token) = token {
        request = request.bearer(token);
    }
    let stream = open(addr, request).await;
    let mut lines = tokio::io::BufReader::new(stream).lines();
    let mut latencies = Vec::with_capacity(events);
    while latencies.len() < events {
        let Some(line) = lines.next_line().await.unwrap() else {
            break;
        };
        let Some(at) = line.find("\"sent\":\"") else {
            continue;
        };
        let rest = &line[at + 8..];
        let sent: u128 = rest[..rest.find('"').unwrap()].parse().unwrap();
        let now = epoch().elapsed().as_nanos();
        latencies.push((now.saturating_sub(sent)) as f64 / 1000.0);
    }
    latencies.sort_by(|a, b| a.total_cmp(b));
    latencies
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn kubectl_proxy(server: &str) -> Option<(tokio::process::Child, SocketAddr)> {
    let home = std::env::temp_dir().join(format!("deltascope-bench-{}", std::process::id()));
    std::fs::create_dir_all(&home).ok()?;
    let mut child = tokio::process::Command::new("kubectl")
        .arg(format!("--server={server}"))
        .args(["proxy", "--port=0", "--address=127.0.0.1"])
        .env("HOME", &home)
        .env("KUBECONFIG", home.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take()?).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .ok()?
        .ok()??;
    let addr = line.rsplit(' ').next()?.trim().parse().ok()?;
    Some((child, addr))
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
async fn benchmark() {
    let list_mb = env_usize("DELTASCOPE_BENCH_LIST_MB", 100);
    let watches = env_usize("DELTASCOPE_BENCH_WATCHES", 1000);
    let events = env_usize("DELTASCOPE_BENCH_EVENTS", 2000);
    epoch();
    let upstream = bench_upstream(list_mb * 1_000_000).await;
    let mut direct_config = config(Upstream::Url(format!("http://{upstream}")));
    direct_config.token = Some(BENCH_TOKEN.into());
    let proxy = start_proxy(direct_config).await;
    let kubectl = kubectl_proxy(&format!("http://{upstream}")).await;
    let chained = match &kubectl {
        Some((_, addr)) => {
            let mut chained_config = config(Upstream::Url(format!("http://{addr}")));
            chained_config.token = Some(BENCH_TOKEN.into());
            Some(start_proxy(chained_config).await)
        }
        None => None,
    };
    let mut report = String::new();
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    report.push_str(&format!(
        "Measured by `proxy/tests/serve_bench.rs` ({build} build, {} CPUs).\n\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));

    // The real binary, in its own process (RSS is measured on it too).
    let dist = make_dist();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_deltascope"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token", BENCH_TOKEN])
        .args(["--upstream", &format!("http://{upstream}")])
        .args(["--max-watches", &(watches + 1).to_string(), "--dist"])
        .arg(&dist)
        .env("RUST_LOG", "warn")
        .env("DELTASCOPE_HISTORY", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let addr: SocketAddr = line
        .trim_start_matches("deltascope: open http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let idle = rss_kib(pid).unwrap_or(0);

    // Throughput.
    let path = "/api/v1/configmaps";
    fetch(upstream, path, None).await; // warm up
    let (bytes, direct) = fetch(upstream, path, None).await;
    let (via_bytes, via) = fetch(proxy.local_addr(), path, Some(BENCH_TOKEN)).await;
    assert!(via_bytes >= bytes, "the proxy returned less than the list");
    let (_, binary) = fetch(addr, path, Some(BENCH_TOKEN)).await;
    report.push_str(&format!(
        "| {list_mb} MB list | MB/s | × direct |\n|---|---|---|\n| direct | {direct:.0} | 1.00 |\n\
         | deltascope serve (in this process) | {via:.0} | {:.2} |\n\
         | deltascope serve (own process) | {binary:.0} | {:.2} |\n",
        via / direct,
        binary / direct
    ));
    if let (Some((_, kaddr)), Some(chained)) = (&kubectl, &chained) {
        let (_, k) = fetch(*kaddr, path, None).await;
        let (_, kc) = fetch(chained.local_addr(), path, Some(BENCH_TOKEN)).await;
        report.push_str(&format!(
            "| kubectl proxy | {k:.0} | {:.2} |\n| deltascope serve → kubectl proxy | {kc:.0} | {:.2} (× kubectl proxy: {:.2}) |\n",
            k / direct,
            kc / direct,
            kc / k
        ));
    }

    // Watch latency.
    let direct = watch_latencies(upstream, events, None).await;
    let via = watch_latencies(proxy.local_addr(), events, Some(BENCH_TOKEN)).await;
    let own = watch_latencies(addr, events, Some(BENCH_TOKEN)).await;
    report.push_str(&format!(
        "\n| watch event latency ({events} events) | p50 µs | p99 µs |\n|---|---|---|\n\
         | direct | {:.0} | {:.0} |\n| deltascope serve (in this process) | {:.0} | {:.0} |\n\
         | added by deltascope serve (in this process) | {:.0} | {:.0} |\n\
         | deltascope serve (own process) | {:.0} | {:.0} |\n\
         | added by deltascope serve (own process) | {:.0} | {:.0} |\n",
        percentile(&direct, 0.5),
        percentile(&direct, 0.99),
        percentile(&via, 0.5),
        percentile(&via, 0.99),
        percentile(&via, 0.5) - percentile(&direct, 0.5),
        percentile(&via, 0.99) - percentile(&direct, 0.99),
        percentile(&own, 0.5),
        percentile(&own, 0.99),
        percentile(&own, 0.5) - percentile(&direct, 0.5),
        percentile(&own, 0.99) - percentile(&direct, 0.99),
    ));
    if let (Some((_, kaddr)), Some(chained)) = (&kubectl, &chained) {
        let k = watch_latencies(*kaddr, events, None).await;
        let kc = watch_latencies(chained.local_addr(), events, Some(BENCH_TOKEN)).await;
        report.push_str(&format!(
            "| kubectl proxy | {:.0} | {:.0} |\n| deltascope serve → kubectl proxy | {:.0} | {:.0} |\n",
            percentile(&k, 0.5),
            percentile(&k, 0.99),
            percentile(&kc, 0.5),
            percentile(&kc, 0.99),
        ));
    }

    // Memory of the binary with many open watches.
    let mut open_streams: Vec<TcpStream> = Vec::with_capacity(watches);
    for _ in 0..watches {
        let mut stream = open(
            addr,
            req("GET", "/api/v1/configmaps?watch=1&interval_us=30000000").bearer(BENCH_TOKEN),
        )
        .await;
        // Wait for the first event so the watch is really open end to end.
        let mut first = [0u8; 512];
        let _ = stream.read(&mut first).await.unwrap();
        open_streams.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let loaded = rss_kib(pid).unwrap_or(0);
    report.push_str(&format!(
        "\n| `deltascope serve` RSS | MiB |\n|---|---|\n| idle | {:.1} |\n| {watches} open watches | {:.1} |\n",
        idle as f64 / 1024.0,
        loaded as f64 / 1024.0
    ));
    for mut stream in open_streams {
        let _ = stream.shutdown().await;
    }
    child.kill().await.unwrap();

    println!("\n{report}");
    if let Ok(out) = std::env::var("DELTASCOPE_BENCH_OUT") {
        std::fs::write(&out, &report).unwrap();
    }
}
