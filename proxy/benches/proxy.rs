//! Proxy figures of `cargo xtask bench`: `deltascope serve
//! --upstream` against a direct connection to the same upstream and against
//! the real `kubectl proxy`, all in one run.
//!
//! Processes: the built `deltascope sim` (the upstream, idle), `deltascope
//! serve --upstream SIM` and `/usr/bin/kubectl proxy --port=0` with a scratch
//! kubeconfig pointing at the sim; this binary is the client (hyper, tokio).
//!
//! - **list throughput**: `GET /api/v1/pods` of a ~100 MB list (`--quick`:
//!   ~30 MB), read to the end; direct, serve and kubectl proxy alternate, one
//!   warm-up each, then N samples each; median MB/s.
//! - **added latency per watch event**: one watch per path opened from the
//!   same resourceVersion; the sim churns; every event's arrival is stamped
//!   on the client's clock per path and matched by resourceVersion, so the
//!   figure is `t(serve) − t(direct)` for the very same event (p50, p99).
//! - **RSS with 1,000 open watches**: `VmRSS` of the serve process (and of
//!   kubectl proxy, the reference) with 1,000 concurrent watches through it
//!   while the sim churns slowly.
//!
//! Arguments: `--quick`, `--out PATH`, `--bin PATH/TO/deltascope`.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use http_body_util::BodyExt;

/// Workload changes per second while watch latency is measured.
const CHURN: u32 = 500;

struct Path {
    name: &'static str,
    base: String,
}

async fn list_throughput(client: &HttpClient, paths: &[Path], samples: usize) -> Vec<Figure> {
    let mut sizes = Vec::new();
    for p in paths {
        // warm-up, and the size the figure is about
        sizes.push(fetch_len(client, &format!("{}/api/v1/pods", p.base)).await);
    }
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    for _ in 0..samples {
        for (i, p) in paths.iter().enumerate() {
            let t = Instant::now();
            let n = fetch_len(client, &format!("{}/api/v1/pods", p.base)).await;
            rates[i].push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
    }
    let med: Vec<f64> = rates.iter().map(|r| median(r)).collect();
    for (i, p) in paths.iter().enumerate() {
        eprintln!(
            "list via {}: {:.1} MB, median {:.0} MB/s (samples {:?})",
            p.name,
            sizes[i] as f64 / 1e6,
            med[i],
            rates[i].iter().map(|r| r.round()).collect::<Vec<_>>()
        );
    }
    let mb = sizes[0] as f64 / 1e6;
    let mut figs = vec![Figure {
        id: "proxy.list.vs_direct".into(),
        figure: format!("proxy list throughput, {mb:.0} MB pod list, serve vs direct"),
        unit: "MB/s",
        ours: med[1],
        reference: med[0],
        reference_name: "direct to the sim".into(),
        ratio: med[1] / med[0],
        goal: "≥ 0.9×".into(),
        met: med[1] / med[0] >= 0.9,
        note: format!("median of {samples} alternating samples per path"),
    }];
    if paths.len() > 2 {
        figs.push(Figure {
            id: "proxy.list.vs_kubectl".into(),
            figure: format!("proxy list throughput, {mb:.0} MB pod list, serve vs kubectl proxy"),
            unit: "MB/s",
            ours: med[1],
            reference: med[2],
            reference_name: "kubectl proxy".into(),
            ratio: med[1] / med[2],
            goal: "(reported)".into(),
            met: true,
            note: format!("kubectl proxy reaches {:.2}× direct", med[2] / med[0]),
        });
    }
    figs
}

/// What a watch task reports: (path index, resourceVersion, arrival).
type Stamp = (usize, String, Instant);

/// Opens a watch and stamps each event's arrival (per frame, on this
/// client's clock) with the event's resourceVersion.
async fn stamp_watch(
    client: HttpClient,
    url: String,
    index: usize,
    ready: Arc<AtomicUsize>,
    tx: tokio::sync::mpsc::UnboundedSender<Stamp>,
) {
    let resp = client
        .request(get(&url))
        .await
        .unwrap_or_else(|e| panic!("watch {url}: {e}"));
    assert!(resp.status().is_success(), "watch {url}: {}", resp.status());
    ready.fetch_add(1, Ordering::SeqCst);
    let mut body = resp.into_body();
    let mut carry: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let now = Instant::now();
        let Some(data) = frame.data_ref() else {
            continue;
        };
        carry.extend_from_slice(data);
        while let Some(nl) = carry.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = carry.drain(..=nl).collect();
            let v: serde_json::Value =
                serde_json::from_slice(&line).expect("a JSON watch event line");
            if let Some(rv) = v["object"]["metadata"]["resourceVersion"].as_str() {
                let _ = tx.send((index, rv.to_owned(), now));
            }
        }
    }
}

async fn latency(client: &HttpClient, sim: &str, paths: &[Path], seconds: u64) -> Vec<Figure> {
    let rv = current_rv(client, sim).await;
    let ready = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let url = format!(
                "{}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600",
                p.base
            );
            tokio::spawn(stamp_watch(
                client.clone(),
                url,
                i,
                ready.clone(),
                tx.clone(),
            ))
        })
        .collect();
    drop(tx);
    while ready.load(Ordering::SeqCst) < paths.len() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    churn_for(client, sim, CHURN, seconds).await;
    for t in &tasks {
        t.abort();
    }
    let mut seen: Vec<HashMap<String, Instant>> = vec![HashMap::new(); paths.len()];
    while let Ok((i, rv, at)) = rx.try_recv() {
        seen[i].insert(rv, at);
    }
    let added = |i: usize| -> Vec<f64> {
        seen[0]
            .iter()
            .filter_map(|(rv, t0)| seen[i].get(rv).map(|ti| signed_ms(*ti, *t0)))
            .collect()
    };
    let ours = added(1);
    assert!(
        ours.len() > 10,
        "too few events matched between direct and serve ({})",
        ours.len()
    );
    let reference = (paths.len() > 2).then(|| added(2));
    let mut figs = Vec::new();
    for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
        let o = percentile(&ours, p);
        let (r, rname) = match &reference {
            Some(r) if !r.is_empty() => (percentile(r, p), "kubectl proxy's added latency"),
            _ => (1.0, "the goal"),
        };
        figs.push(Figure {
            id: format!("proxy.latency.{label}"),
            figure: format!("proxy added latency per watch event, {label} (serve − direct, same event)"),
            unit: "ms",
            ours: o,
            reference: r,
            reference_name: rname.into(),
            ratio: if r.abs() > 1e-9 { o / r } else { f64::NAN },
            goal: if label == "p99" { "≤ +1 ms".into() } else { "(reported)".into() },
            met: label != "p99" || o <= 1.0,
            note: format!(
                "{} events matched over {seconds} s of churn at {CHURN}/s; direct events seen {}, via serve {}{}",
                ours.len(),
                seen[0].len(),
                seen[1].len(),
                match &reference {
                    Some(r) => format!(", via kubectl proxy {} (matched {})", seen[2].len(), r.len()),
                    None => String::new(),
                }
            ),
        });
    }
    figs
}

/// Opens `n` watches through `base`, lets the sim churn slowly, and returns
/// the peak `VmRSS` of `proc_` seen meanwhile, its idle RSS, and how many
/// events the watches received.
async fn rss_under_watches(
    client: &HttpClient,
    sim: &str,
    base: &str,
    proc_: &Proc,
    n: usize,
) -> (u64, u64, usize) {
    let idle = proc_.rss();
    let rv = current_rv(client, sim).await;
    let ready = Arc::new(AtomicUsize::new(0));
    let events = Arc::new(AtomicUsize::new(0));
    let url = format!("{base}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600");
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, url, ready, events) =
                (client.clone(), url.clone(), ready.clone(), events.clone());
            tokio::spawn(async move {
                let resp = client
                    .request(get(&url))
                    .await
                    .unwrap_or_else(|e| panic!("watch {url}: {e}"));
                assert!(resp.status().is_success(), "watch {url}: {}", resp.status());
                ready.fetch_add(1, Ordering::SeqCst);
                let mut body = resp.into_body();
                while let Some(Ok(frame)) = body.frame().await {
                    if let Some(d) = frame.data_ref() {
                        events.fetch_add(
                            d.iter().filter(|b| **b == b'\n').count(),
                            Ordering::Relaxed,
                        );
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while ready.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} watches opened through {base} within 120 s",
            ready.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let peak = peak_rss_while_churning(client, sim, proc_).await;
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    // let both ends notice the closed connections
    tokio::time::sleep(Duration::from_millis(500)).await;
    (peak, idle, events.load(Ordering::Relaxed))
}

async fn rss_with_watches(
    client: &HttpClient,
    sim: &str,
    serve: (&Proc, &str),
    kubectl: Option<(&Proc, &str)>,
    n: usize,
) -> Vec<Figure> {
    let (ours, ours_idle, ours_events) = rss_under_watches(client, sim, serve.1, serve.0, n).await;
    let (reference, ref_name, ref_note) = match kubectl {
        Some((p, base)) => {
            let (r, idle, ev) = rss_under_watches(client, sim, base, p, n).await;
            (
                r,
                "kubectl proxy with the same watches",
                format!(
                    "; kubectl proxy idle {:.1} MB, {ev} events delivered",
                    idle as f64 / 1e6
                ),
            )
        }
        None => (50_000_000, "the goal", String::new()),
    };
    let mb = |b: u64| b as f64 / 1024.0 / 1024.0;
    vec![Figure {
        id: "proxy.rss.watches".into(),
        figure: format!("proxy RSS with {n} open watches (VmRSS of deltascope serve)"),
        unit: "MiB",
        ours: mb(ours),
        reference: mb(reference),
        reference_name: ref_name.into(),
        ratio: ours as f64 / reference as f64,
        goal: "≤ 50 MB".into(),
        met: mb(ours) <= 50.0,
        note: format!(
            "serve idle {:.1} MiB before opening them, {ours_events} events delivered{ref_note}",
            mb(ours_idle)
        ),
    }]
}

fn main() {
    let opts = Options::parse("proxy");
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let figures = runtime.block_on(run(&opts));
    write("proxy", &opts.out, opts.quick, started, &figures);
}

async fn run(opts: &Options) -> Vec<Figure> {
    let (pods, samples, latency_secs, watches) = if opts.quick {
        (6_500, 9, 8, 1_000)
    } else {
        (21_000, 21, 20, 1_000)
    };
    let (sim_proc, sim) = start_sim(&opts.bin, pods);
    let (serve_proc, serve) = start_serve(&opts.bin, &sim);
    let kubectl = start_kubectl_proxy(&sim);
    let mut paths = vec![
        Path {
            name: "direct",
            base: sim.clone(),
        },
        Path {
            name: "deltascope serve",
            base: serve.clone(),
        },
    ];
    if let Some((_, url, _)) = &kubectl {
        paths.push(Path {
            name: "kubectl proxy",
            base: url.clone(),
        });
    } else {
        eprintln!("proxy: /usr/bin/kubectl not found; kubectl proxy figures skipped");
    }
    let client = client();
    let mut figures = list_throughput(&client, &paths, samples).await;
    for f in &figures {
        f.print();
    }
    let lat = latency(&client, &sim, &paths, latency_secs).await;
    for f in &lat {
        f.print();
    }
    figures.extend(lat);
    let rss = rss_with_watches(
        &client,
        &sim,
        (&serve_proc, &serve),
        kubectl.as_ref().map(|(p, url, _)| (p, url.as_str())),
        watches,
    )
    .await;
    for f in &rss {
        f.print();
    }
    figures.extend(rss);
    drop(kubectl);
    drop(serve_proc);
    drop(sim_proc);
    figures
}
