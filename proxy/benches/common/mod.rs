//! Shared pieces of the proxy and simulator benches: starting the built
//! `deltascope` binary (and `kubectl proxy`) as child processes and reading
//! the address they print, a small streaming HTTP client, statistics, and
//! writing figures as `target/bench/NAME.{json,tsv}` for `cargo xtask bench`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

/// Command-line options every bench binary takes.
pub struct Options {
    pub quick: bool,
    pub out: PathBuf,
    pub bin: PathBuf,
}

impl Options {
    pub fn parse(name: &str) -> Options {
        let args: Vec<String> = std::env::args().collect();
        let value = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1).cloned())
        };
        let target = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the proxy crate has a parent directory")
            .join("target");
        Options {
            quick: args.iter().any(|a| a == "--quick")
                || std::env::var_os("DELTASCOPE_BENCH_QUICK").is_some(),
            out: value("--out")
                .map(PathBuf::from)
                .unwrap_or_else(|| target.join("bench").join(format!("{name}.json"))),
            bin: value("--bin")
                .map(PathBuf::from)
                .unwrap_or_else(|| target.join("release").join("deltascope")),
        }
    }
}

/// A child process killed (by its own id) when dropped.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    /// Starts `program args…` and waits for a stdout line containing
    /// `marker`; returns the process and that line.
    pub fn start(name: &str, program: &PathBuf, args: &[&str], marker: &str) -> (Proc, String) {
        let mut child = Command::new(program)
            .args(args)
            .env("RUST_LOG", "warn")
            // benchmarks measure serve, not its recorder
            .env("DELTASCOPE_HISTORY", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {}: {e}", program.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        let wanted = marker.to_owned();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let mut sent = false;
            // keep draining stdout so the child never blocks on a full pipe
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                if !sent && line.contains(&wanted) {
                    let _ = tx.send(line.trim().to_owned());
                    sent = true;
                }
                line.clear();
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("{name}: no {:?} line on stdout within 120 s", marker));
        (
            Proc {
                child,
                name: name.to_owned(),
            },
            line,
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `VmRSS` of the process, in bytes.
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .unwrap_or_else(|e| panic!("{}: cannot read /proc status: {e}", self.name));
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `http://HOST:PORT` in a line such as `deltascope sim: listening on http://…`.
pub fn url_in(line: &str) -> String {
    let start = line.find("http://").expect("a URL in the line");
    let rest = &line[start..];
    let end = rest[7..]
        .find(['/', ' '])
        .map(|i| i + 7)
        .unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// `deltascope sim` on a free loopback port, idle (no churn).
pub fn start_sim(bin: &PathBuf, pods: usize) -> (Proc, String) {
    let pods = pods.to_string();
    let (p, line) = Proc::start(
        "deltascope sim",
        bin,
        &[
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--pods",
            &pods,
            "--churn",
            "0",
        ],
        "listening on",
    );
    (p, url_in(&line))
}

pub const TOKEN: &str = "bench-token-0123456789abcdef0123456789";

/// `deltascope serve --upstream URL` on a free loopback port, with room for
/// the figures' many watches and connections.
pub fn start_serve(bin: &PathBuf, upstream: &str) -> (Proc, String) {
    // the RSS figure opens 1,000 watches, each on its own connection
    let room = ["--max-watches", "100000", "--max-connections", "4000"];
    start_serve_with(bin, upstream, &room)
}

/// `deltascope serve --upstream URL` on a free loopback port with `flags`
/// (none: the defaults a user runs).
pub fn start_serve_with(bin: &PathBuf, upstream: &str, flags: &[&str]) -> (Proc, String) {
    let mut args = vec![
        "serve",
        "--upstream",
        upstream,
        "--listen",
        "127.0.0.1:0",
        "--token",
        TOKEN,
        "--dist",
        "/nonexistent-deltascope-bench-dist",
    ];
    args.extend_from_slice(flags);
    let (p, line) = Proc::start("deltascope serve", bin, &args, "deltascope: open");
    (p, url_in(&line))
}

/// The real `kubectl proxy` in front of `upstream`, with a scratch kubeconfig.
pub fn start_kubectl_proxy(upstream: &str) -> Option<(Proc, String, tempdir::Dir)> {
    let kubectl = PathBuf::from("/usr/bin/kubectl");
    if !kubectl.exists() {
        return None;
    }
    let dir = tempdir::Dir::new("deltascope-bench-kubeconfig");
    let config = dir.path.join("config");
    std::fs::write(
        &config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {upstream}\n\
             contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: sim\n\
             users:\n- name: sim\n  user: {{}}\n"
        ),
    )
    .expect("write the kubeconfig");
    let kubeconfig = format!("--kubeconfig={}", config.display());
    let (p, line) = Proc::start(
        "kubectl proxy",
        &kubectl,
        &["proxy", "--port=0", &kubeconfig],
        "Starting to serve on",
    );
    // "Starting to serve on 127.0.0.1:PORT"
    let addr = line
        .rsplit(' ')
        .next()
        .expect("an address after 'Starting to serve on'")
        .to_owned();
    Some((p, format!("http://{addr}"), dir))
}

/// A scratch directory removed when dropped.
pub mod tempdir {
    use std::path::PathBuf;

    pub struct Dir {
        pub path: PathBuf,
    }

    impl Dir {
        pub fn new(prefix: &str) -> Dir {
            let path = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
            std::fs::create_dir_all(&path).expect("create a scratch directory");
            Dir { path }
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(2048)
        .build(connector)
}

/// A GET with the bench token (ignored by the sim and kubectl proxy).
pub fn get(url: &str) -> hyper::Request<Full<Bytes>> {
    hyper::Request::get(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

pub fn post_json(url: &str, body: Value) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request")
}

/// GETs `url` and reads the whole body; returns its size.
pub async fn fetch_len(client: &HttpClient, url: &str) -> u64 {
    let resp = client
        .request(get(url))
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert!(resp.status().is_success(), "GET {url}: {}", resp.status());
    let mut body = resp.into_body();
    let mut n = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap_or_else(|e| panic!("GET {url}: body: {e}"));
        if let Some(data) = frame.data_ref() {
            n += data.len() as u64;
        }
    }
    n
}

/// GETs `url` and parses the body as JSON.
pub async fn fetch_json(client: &HttpClient, url: &str) -> Value {
    let resp = client
        .request(get(url))
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: body: {e}"))
        .to_bytes();
    assert!(
        status.is_success(),
        "GET {url}: {status}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"))
}

pub async fn post(client: &HttpClient, url: &str, body: Value) -> Value {
    let resp = client
        .request(post_json(url, body))
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: body: {e}"))
        .to_bytes();
    assert!(
        status.is_success(),
        "POST {url}: {status}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("POST {url}: not JSON: {e}"))
}

/// The list's `metadata.resourceVersion` of `/api/v1/pods?limit=1`.
pub async fn current_rv(client: &HttpClient, base: &str) -> String {
    let list = fetch_json(client, &format!("{base}/api/v1/pods?limit=1")).await;
    list["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list resourceVersion")
        .to_owned()
}

/// Milliseconds from `b` to `a`, negative when `a` came first.
pub fn signed_ms(a: Instant, b: Instant) -> f64 {
    if a >= b {
        (a - b).as_secs_f64() * 1e3
    } else {
        -(b - a).as_secs_f64() * 1e3
    }
}

/// Lets the sim at `sim` churn at `rate` events/s for `seconds`, then stops
/// it and waits 1.5 s for the last events to reach every watcher.
pub async fn churn_for(client: &HttpClient, sim: &str, rate: u32, seconds: u64) {
    let url = format!("{sim}/_sim/churn");
    post(client, &url, json!({"events_per_sec": rate})).await;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    post(client, &url, json!({"events_per_sec": 0})).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// The peak `VmRSS` of `proc_` over 3 s while the sim at `sim` churns slowly
/// (5 events/s), with whatever watches the caller holds open.
pub async fn peak_rss_while_churning(client: &HttpClient, sim: &str, proc_: &Proc) -> u64 {
    let url = format!("{sim}/_sim/churn");
    let churn = |rate: u32| post(client, &url, json!({"events_per_sec": rate}));
    churn(5).await;
    let mut peak = proc_.rss();
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(proc_.rss());
    }
    churn(0).await;
    peak
}

/// Empty body type for requests that need none.
pub fn empty() -> Empty<Bytes> {
    Empty::new()
}

pub fn median(v: &[f64]) -> f64 {
    percentile(v, 0.5)
}

/// Nearest-rank percentile of `v` (unsorted), `p` in [0, 1].
pub fn percentile(v: &[f64], p: f64) -> f64 {
    assert!(!v.is_empty(), "percentile of nothing");
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

/// One row of `BENCHMARKS.md`.
pub struct Figure {
    pub id: String,
    pub figure: String,
    pub unit: &'static str,
    pub ours: f64,
    pub reference: f64,
    pub reference_name: String,
    pub ratio: f64,
    pub goal: String,
    pub met: bool,
    pub note: String,
}

impl Figure {
    pub fn print(&self) {
        eprintln!(
            "{}: ours {:.3} {}, reference {:.3} ({}), ratio {:.3}, goal {} {} — {}",
            self.id,
            self.ours,
            self.unit,
            self.reference,
            self.reference_name,
            self.ratio,
            self.goal,
            if self.met { "met" } else { "NOT met" },
            self.note
        );
    }
}

/// Writes `out` (JSON) and `out` with extension `tsv` (the table lines).
pub fn write(name: &str, out: &PathBuf, quick: bool, started: Instant, figures: &[Figure]) {
    let doc = json!({
        "bench": name,
        "quick": quick,
        "seconds": started.elapsed().as_secs_f64(),
        "figures": figures.iter().map(|f| json!({
            "id": f.id, "figure": f.figure, "unit": f.unit, "ours": f.ours,
            "reference": f.reference, "reference_name": f.reference_name,
            "ratio": f.ratio, "goal": f.goal, "met": f.met, "note": f.note,
        })).collect::<Vec<_>>(),
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).expect("create the output directory");
    }
    std::fs::write(out, serde_json::to_vec_pretty(&doc).expect("serialize"))
        .expect("write the results");
    let clean = |s: &str| s.replace(['\t', '\n'], " ");
    let tsv: String = figures
        .iter()
        .map(|f| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                clean(&f.id),
                clean(&f.figure),
                f.unit,
                f.ours,
                f.reference,
                clean(&f.reference_name),
                f.ratio,
                clean(&f.goal),
                f.met,
                clean(&f.note)
            )
        })
        .collect();
    std::fs::write(out.with_extension("tsv"), tsv).expect("write the results table");
    eprintln!("{name}: wrote {}", out.display());
}
