//! Simulator figures of `cargo xtask bench`: watch fan-out and list
//! throughput of the built `deltascope sim`.
//!
//! - **fan-out**: N (1, 100, 1,000) concurrent pod watches are opened from
//!   the current resourceVersion, then `POST /_sim/scale` adds K pods at
//!   once (K ADDED events); the figure is events delivered per second summed
//!   over all watchers, from the POST until the last watcher has read all K.
//!   The reference, measured in the same run, is how fast the sim creates
//!   those K pods with no watcher open (the rate of the POST itself).
//! - **list**: `GET /api/v1/pods` of 30k pods (`--quick`: 8k), MB/s, against
//!   the same bytes served from memory by a bare tokio TCP server in this
//!   process (the loopback ceiling), alternating, median.
//!
//! Arguments: `--quick`, `--out PATH`, `--bin PATH/TO/deltascope`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use http_body_util::BodyExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Pods in the sim, read from a scale answer.
fn after(answer: &serde_json::Value) -> usize {
    answer["scale"]["after"]
        .as_u64()
        .expect("scale answer has scale.after") as usize
}

async fn scale(client: &HttpClient, sim: &str, pods: usize) -> (serde_json::Value, Duration) {
    let t = Instant::now();
    let answer = post(
        client,
        &format!("{sim}/_sim/scale"),
        json!({ "pods": pods }),
    )
    .await;
    (answer, t.elapsed())
}

/// Events delivered per second to `n` watchers when `k` pods are added.
async fn fanout(
    client: &HttpClient,
    sim: &str,
    base_pods: usize,
    n: usize,
    k: usize,
) -> (f64, f64) {
    let rv = current_rv(client, sim).await;
    let url = format!("{sim}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600");
    let ready = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let delivered = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            let (ready, done, delivered) = (ready.clone(), done.clone(), delivered.clone());
            tokio::spawn(async move {
                let resp = client
                    .request(get(&url))
                    .await
                    .unwrap_or_else(|e| panic!("watch {url}: {e}"));
                assert!(resp.status().is_success(), "watch {url}: {}", resp.status());
                ready.fetch_add(1, Ordering::SeqCst);
                let mut body = resp.into_body();
                let mut added = 0usize;
                let mut carry: Vec<u8> = Vec::new();
                while let Some(Ok(frame)) = body.frame().await {
                    let Some(d) = frame.data_ref() else { continue };
                    carry.extend_from_slice(d);
                    while let Some(nl) = carry.iter().position(|b| *b == b'\n') {
                        // `{"type":"ADDED",…`: no need to parse the object
                        if carry[..nl.min(40)].windows(7).any(|w| w == b"\"ADDED\"") {
                            added += 1;
                        }
                        carry.drain(..=nl);
                    }
                    if added >= k {
                        break;
                    }
                }
                delivered.fetch_add(added, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while ready.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < deadline,
            "watches did not open within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t = Instant::now();
    let (answer, _) = scale(client, sim, base_pods + k).await;
    assert_eq!(after(&answer), base_pods + k, "scale up");
    let deadline = Instant::now() + Duration::from_secs(300);
    while done.load(Ordering::SeqCst) < n {
        if Instant::now() > deadline {
            eprintln!(
                "sim_fanout: only {} of {n} watchers got all {k} events within 300 s",
                done.load(Ordering::SeqCst)
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let secs = t.elapsed().as_secs_f64();
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    let got = delivered.load(Ordering::SeqCst);
    // back to where we were, with no watcher open
    scale(client, sim, base_pods).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    (got as f64 / secs, k as f64 / secs)
}

/// A bare HTTP/1.1 server that answers every request with `body`.
async fn memory_server(body: Arc<Vec<u8>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the reference server");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            let _ = s.set_nodelay(true);
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut req = Vec::new();
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                    if req.windows(4).any(|w| w == b"\r\n\r\n") {
                        req.clear();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        if s.write_all(head.as_bytes()).await.is_err()
                            || s.write_all(&body).await.is_err()
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

async fn list_figure(client: &HttpClient, sim: &str, samples: usize) -> Figure {
    let url = format!("{sim}/api/v1/pods");
    let resp = client.request(get(&url)).await.expect("list the pods");
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("the list body")
        .to_bytes();
    let size = bytes.len();
    let items = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["items"].as_array().map(Vec::len))
        .unwrap_or(0);
    let reference = memory_server(Arc::new(bytes.to_vec())).await;
    drop(bytes);
    let _ = fetch_len(client, &reference).await;
    let (mut ours, mut refs) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        let t = Instant::now();
        let n = fetch_len(client, &url).await;
        ours.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
        let t = Instant::now();
        let n = fetch_len(client, &reference).await;
        refs.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let (o, r) = (median(&ours), median(&refs));
    Figure {
        id: "sim.list".into(),
        figure: format!(
            "sim list served, {items} pods ({:.0} MB)",
            size as f64 / 1e6
        ),
        unit: "MB/s",
        ours: o,
        reference: r,
        reference_name: "same bytes from memory, bare TCP server".into(),
        ratio: o / r,
        goal: "(reported)".into(),
        met: true,
        note: format!("median of {samples} alternating samples"),
    }
}

fn main() {
    let opts = Options::parse("sim_fanout");
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let figures = runtime.block_on(run(&opts));
    write("sim_fanout", &opts.out, opts.quick, started, &figures);
}

async fn run(opts: &Options) -> Vec<Figure> {
    let (list_pods, samples, k) = if opts.quick {
        (8_000, 5, 500)
    } else {
        (30_000, 7, 2_000)
    };
    let mut figures = Vec::new();
    {
        let base_pods = 200;
        let (proc_, sim) = start_sim(&opts.bin, base_pods);
        let client = client();
        // warm the store up once
        scale(&client, &sim, base_pods + k).await;
        scale(&client, &sim, base_pods).await;
        for n in [1usize, 100, 1000] {
            // the reference, just before: creating K pods with nobody watching
            let mut create = Vec::new();
            for _ in 0..3 {
                let (_, up) = scale(&client, &sim, base_pods + k).await;
                create.push(k as f64 / up.as_secs_f64());
                scale(&client, &sim, base_pods).await;
            }
            let create = median(&create);
            let (rate, per_watcher) = fanout(&client, &sim, base_pods, n, k).await;
            let f = Figure {
                id: format!("sim.fanout.{n}"),
                figure: format!("sim watch fan-out, {n} watcher(s), {k} ADDED pods: events delivered/s (all watchers)"),
                unit: "events/s",
                ours: rate,
                reference: create,
                reference_name: "pods created/s with no watcher".into(),
                ratio: rate / create,
                goal: "(reported)".into(),
                met: true,
                note: format!(
                    "{per_watcher:.0} events/s per watcher; ratio = delivered ÷ created (N would mean every watcher keeps pace)"
                ),
            };
            f.print();
            figures.push(f);
        }
        drop(proc_);
    }
    let (proc_, sim) = start_sim(&opts.bin, list_pods);
    let client = client();
    let f = list_figure(&client, &sim, samples).await;
    f.print();
    figures.push(f);
    drop(proc_);
    figures
}
