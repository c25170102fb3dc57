//! Channel figures of `cargo xtask bench`: the page's multiplexed
//! channel through `deltascope serve --upstream` against a direct watch of
//! the same upstream, in one run.
//!
//! Processes: the built `deltascope sim` (the upstream) and `deltascope serve
//! --upstream SIM`; this binary is the client (hyper, tokio), reading the
//! channel with the page's own decoder (`deltascope_channel::Decoder`).
//!
//! - **added latency per event through the channel**: a direct watch of the
//!   sim and the same watch as a stream on a channel, both from the same
//!   resourceVersion; the sim churns; every event's arrival is stamped per
//!   path on this client's clock and matched by resourceVersion, so the
//!   figure is `t(channel) − t(direct)` for the very same event (p50, p99).
//!   A plain watch through serve (its own connection) is stamped too, for
//!   comparison.
//! - **RSS with 1,000 watches on channels**: `VmRSS` of the serve process
//!   with 10 channels of 100 watches each while the sim churns slowly.
//! - **RSS under the worst client**: a serve of its own, with the flags a
//!   user runs, and one session that opens 16 channels, reads none of them,
//!   and fills them with every stream the session may hold (watches up to
//!   `--max-watches`, the rest lists of every pod) while the sim churns:
//!   serve's growth against the bound ARCHITECTURE.md states
//!   ([`deltascope_proxy::limits::SessionBound`]).
//!
//! Arguments: `--quick`, `--out PATH`, `--bin PATH/TO/deltascope`.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use deltascope_channel::{Control, Decoder, Event, Open, CHANNEL_PATH};
use http_body_util::{BodyExt, Full};

/// Workload changes per second while latency is measured.
const CHURN: u32 = 500;

type Stamps = tokio::sync::mpsc::UnboundedSender<(usize, String, Instant)>;

/// Sends each complete watch line's resourceVersion with `at`.
fn stamp_lines(carry: &mut Vec<u8>, data: &[u8], index: usize, at: Instant, tx: &Stamps) -> usize {
    carry.extend_from_slice(data);
    let mut lines = 0;
    while let Some(nl) = carry.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = carry.drain(..=nl).collect();
        lines += 1;
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        if let Some(rv) = v["object"]["metadata"]["resourceVersion"].as_str() {
            let _ = tx.send((index, rv.to_owned(), at));
        }
    }
    lines
}

/// A plain watch (direct or through serve), stamped per event.
async fn plain_watch(client: HttpClient, url: String, index: usize, tx: Stamps) {
    let resp = client
        .request(get(&url))
        .await
        .unwrap_or_else(|e| panic!("watch {url}: {e}"));
    assert!(resp.status().is_success(), "watch {url}: {}", resp.status());
    let mut body = resp.into_body();
    let mut carry = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        let at = Instant::now();
        if let Some(data) = frame.data_ref() {
            stamp_lines(&mut carry, data, index, at, &tx);
        }
    }
}

/// Opens a channel on `serve`; returns its id and its body.
async fn open_channel(
    client: &HttpClient,
    serve: &str,
) -> (String, hyper::body::Incoming, Decoder) {
    let url = format!("{serve}{CHANNEL_PATH}");
    let resp = client
        .request(get(&url))
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert!(resp.status().is_success(), "GET {url}: {}", resp.status());
    let mut body = resp.into_body();
    let mut decoder = Decoder::new();
    loop {
        let frame = body
            .frame()
            .await
            .expect("the channel's hello")
            .expect("a readable channel");
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let mut hello = None;
        decoder
            .feed(data, |event| {
                if let Event::Hello { channel } = event {
                    hello = Some(channel);
                }
            })
            .expect("a channel frame");
        if let Some(id) = hello {
            return (id, body, decoder);
        }
    }
}

async fn control(client: &HttpClient, serve: &str, id: &str, control: &Control) {
    let url = format!("{serve}{CHANNEL_PATH}/{id}");
    let request = hyper::Request::post(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(control).expect("control JSON"),
        )))
        .expect("a valid request");
    let resp = client
        .request(request)
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    assert!(resp.status().is_success(), "POST {url}: {}", resp.status());
}

fn watch_open(stream: u32, rv: &str) -> Open {
    Open {
        stream,
        path: format!("/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600"),
        accept: None,
    }
}

/// Reads a channel to its end, stamping the events of every stream as `index`.
async fn read_channel(
    mut body: hyper::body::Incoming,
    mut decoder: Decoder,
    index: usize,
    tx: Stamps,
    events: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let mut carries: HashMap<u32, Vec<u8>> = HashMap::new();
    while let Some(Ok(frame)) = body.frame().await {
        let at = Instant::now();
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let mut lines = 0;
        decoder
            .feed(data, |event| {
                if let Event::Data { stream, bytes } = event {
                    let carry = carries.entry(stream).or_default();
                    lines += stamp_lines(carry, bytes, index, at, &tx);
                }
            })
            .expect("a channel frame");
        events.fetch_add(lines, std::sync::atomic::Ordering::Relaxed);
    }
}

async fn latency(client: &HttpClient, sim: &str, serve: &str, seconds: u64) -> Vec<Figure> {
    let rv = current_rv(client, sim).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watch = |base: &str| {
        format!("{base}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600")
    };
    let direct = tokio::spawn(plain_watch(client.clone(), watch(sim), 0, tx.clone()));
    let plain = tokio::spawn(plain_watch(client.clone(), watch(serve), 2, tx.clone()));
    let (id, body, decoder) = open_channel(client, serve).await;
    let reader = tokio::spawn(read_channel(
        body,
        decoder,
        1,
        tx.clone(),
        Default::default(),
    ));
    control(
        client,
        serve,
        &id,
        &Control {
            open: vec![watch_open(1, &rv)],
            close: vec![],
        },
    )
    .await;
    drop(tx);
    tokio::time::sleep(Duration::from_millis(500)).await;
    churn_for(client, sim, CHURN, seconds).await;
    for task in [&direct, &plain, &reader] {
        task.abort();
    }
    let mut seen: Vec<HashMap<String, Instant>> = vec![HashMap::new(); 3];
    while let Ok((i, rv, at)) = rx.try_recv() {
        seen[i].insert(rv, at);
    }
    let added = |i: usize| -> Vec<f64> {
        seen[0]
            .iter()
            .filter_map(|(rv, t0)| seen[i].get(rv).map(|ti| signed_ms(*ti, *t0)))
            .collect()
    };
    let (through_channel, through_serve) = (added(1), added(2));
    assert!(
        through_channel.len() > 10,
        "too few events matched between direct and the channel ({})",
        through_channel.len()
    );
    [(0.5, "p50"), (0.99, "p99")]
        .into_iter()
        .map(|(p, label)| {
            let ours = percentile(&through_channel, p);
            let plain = if through_serve.is_empty() {
                f64::NAN
            } else {
                percentile(&through_serve, p)
            };
            Figure {
                id: format!("channel.latency.{label}"),
                figure: format!(
                    "added latency per watch event through the page's channel, {label} (channel − direct, same event)"
                ),
                unit: "ms",
                ours,
                reference: plain,
                reference_name: "a plain watch through serve (its own connection)".into(),
                ratio: if plain.abs() > 1e-9 { ours / plain } else { f64::NAN },
                goal: if label == "p99" { "≤ +1 ms".into() } else { "(reported)".into() },
                met: label != "p99" || ours <= 1.0,
                note: format!(
                    "{} events matched over {seconds} s of churn at {CHURN}/s; direct {}, channel {}, plain serve watch {}",
                    through_channel.len(),
                    seen[0].len(),
                    seen[1].len(),
                    seen[2].len()
                ),
            }
        })
        .collect()
}

async fn rss_with_channels(
    client: &HttpClient,
    sim: &str,
    serve: &str,
    serve_proc: &Proc,
    channels: usize,
    per_channel: usize,
) -> Vec<Figure> {
    let idle = serve_proc.rss();
    let rv = current_rv(client, sim).await;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let events = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..channels {
        let (id, body, decoder) = open_channel(client, serve).await;
        readers.push(tokio::spawn(read_channel(
            body,
            decoder,
            0,
            tx.clone(),
            events.clone(),
        )));
        let open = (1..=per_channel as u32)
            .map(|s| watch_open(s, &rv))
            .collect();
        control(
            client,
            serve,
            &id,
            &Control {
                open,
                close: vec![],
            },
        )
        .await;
    }
    let watches = channels * per_channel;
    let sim_watches = || async {
        fetch_json(client, &format!("{sim}/_sim/stats")).await["openWatches"]
            .as_u64()
            .unwrap_or(0) as usize
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while sim_watches().await < watches {
        assert!(
            Instant::now() < deadline,
            "{watches} watches did not open within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let peak = peak_rss_while_churning(client, sim, serve_proc).await;
    readers.iter().for_each(|r| r.abort());
    let mb = |b: u64| b as f64 / 1024.0 / 1024.0;
    vec![Figure {
        id: "channel.rss.watches".into(),
        figure: format!(
            "serve RSS with {watches} watches on {channels} channels (VmRSS of deltascope serve)"
        ),
        unit: "MiB",
        ours: mb(peak),
        reference: 50_000_000.0 / 1024.0 / 1024.0,
        reference_name: "the goal".into(),
        ratio: peak as f64 / 50_000_000.0,
        goal: "≤ 50 MB".into(),
        met: peak <= 50_000_000,
        note: format!(
            "serve idle {:.1} MiB before opening them; {} event lines delivered",
            mb(idle),
            events.load(std::sync::atomic::Ordering::Relaxed)
        ),
    }]
}

async fn rss_under_the_worst_client(
    client: &HttpClient,
    bin: &std::path::PathBuf,
    sim: &str,
    seconds: u64,
) -> Figure {
    use deltascope_proxy::limits::{
        SessionBound, CONNECTION_COST, DEFAULT_MAX_WATCHES, MAX_CHANNELS_PER_SESSION,
        MAX_STREAMS_PER_SESSION,
    };
    let (serve_proc, serve) = start_serve_with(bin, sim, &[]);
    let _ = fetch_len(client, &format!("{serve}/api/v1/pods")).await;
    let idle = serve_proc.rss();
    let rv = current_rv(client, sim).await;
    let unread = open_the_worst_session(client, &serve, &rv).await;
    let peak = peak_rss_churning_for(client, sim, &serve_proc, seconds).await;
    drop(unread);
    let grown = peak.saturating_sub(idle);
    let bound = (SessionBound::default_flags().total()
        + (MAX_CHANNELS_PER_SESSION + 4) * CONNECTION_COST) as u64;
    let mb = |b: u64| b as f64 / 1024.0 / 1024.0;
    Figure {
        id: "channel.rss.worst_client".into(),
        figure: format!(
            "serve's RSS growth under one session's worst client: {MAX_CHANNELS_PER_SESSION} \
             channels never read, {MAX_STREAMS_PER_SESSION} streams ({DEFAULT_MAX_WATCHES} watches, \
             the rest lists of every pod), churn {CHURN}/s for {seconds} s"
        ),
        unit: "MiB",
        ours: mb(grown),
        reference: mb(bound),
        reference_name: "the bound ARCHITECTURE.md states (one session, its connections)".into(),
        ratio: grown as f64 / bound as f64,
        goal: "≤ 1.0×".into(),
        met: grown <= bound,
        note: format!(
            "serve with default flags; VmRSS {:.1} MiB before, peak {:.1} MiB",
            mb(idle),
            mb(peak)
        ),
    }
}

/// One session's worst client on `serve`: every channel it may open, each
/// filled with its share of the streams (watches from `rv` up to
/// `--max-watches`, the rest lists of every pod); their bodies, never read.
async fn open_the_worst_session(
    client: &HttpClient,
    serve: &str,
    rv: &str,
) -> Vec<hyper::body::Incoming> {
    use deltascope_proxy::limits::{
        DEFAULT_MAX_WATCHES, MAX_CHANNELS_PER_SESSION, MAX_STREAMS_PER_SESSION,
    };
    let per_channel = MAX_STREAMS_PER_SESSION / MAX_CHANNELS_PER_SESSION;
    let watches = DEFAULT_MAX_WATCHES / MAX_CHANNELS_PER_SESSION;
    let mut unread = Vec::new();
    let mut next = 0;
    for _ in 0..MAX_CHANNELS_PER_SESSION {
        let (id, body, _decoder) = open_channel(client, serve).await;
        unread.push(body);
        let open = (0..per_channel)
            .map(|i| {
                next += 1;
                if i < watches {
                    watch_open(next, rv)
                } else {
                    Open {
                        stream: next,
                        path: "/api/v1/pods".into(),
                        accept: None,
                    }
                }
            })
            .collect();
        control(
            client,
            serve,
            &id,
            &Control {
                open,
                close: vec![],
            },
        )
        .await;
    }
    unread
}

/// The peak `VmRSS` of `serve_proc` while the sim at `sim` churns at
/// [`CHURN`] events/s for `seconds`.
async fn peak_rss_churning_for(
    client: &HttpClient,
    sim: &str,
    serve_proc: &Proc,
    seconds: u64,
) -> u64 {
    let url = format!("{sim}/_sim/churn");
    post(client, &url, serde_json::json!({"events_per_sec": CHURN})).await;
    let mut peak = serve_proc.rss();
    let until = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(serve_proc.rss());
    }
    post(client, &url, serde_json::json!({"events_per_sec": 0})).await;
    peak
}

fn main() {
    let opts = Options::parse("channel");
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let figures = runtime.block_on(run(&opts));
    write("channel", &opts.out, opts.quick, started, &figures);
}

async fn run(opts: &Options) -> Vec<Figure> {
    let (pods, latency_secs) = if opts.quick { (2_000, 8) } else { (10_000, 20) };
    let (sim_proc, sim) = start_sim(&opts.bin, pods);
    let (serve_proc, serve) = start_serve(&opts.bin, &sim);
    let client = client();
    let mut figures = latency(&client, &sim, &serve, latency_secs).await;
    figures.extend(rss_with_channels(&client, &sim, &serve, &serve_proc, 10, 100).await);
    drop(serve_proc);
    // Seconds to hold the worst client: less than a channel may stall.
    let hold = if opts.quick { 8 } else { 16 };
    figures.push(rss_under_the_worst_client(&client, &opts.bin, &sim, hold).await);
    for figure in &figures {
        figure.print();
    }
    drop(sim_proc);
    figures
}
