//! The chain serve was made for, with the real `kubectl proxy`: simulated cluster ←
//! `kubectl proxy --port=0` ← `deltascope serve --upstream` ← HTTP client.
//! A list and a watch stream through, watch events arrive one by one (each
//! before the next is even produced), Secrets stay redacted, and closing the
//! client closes the watch at the sim. Fails with a clear message when no
//! `kubectl` is on PATH.

use crate::kubectl;
use crate::serve_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use deltascope_proxy::serve::Upstream;
use deltascope_sim::{Sim, SimConfig};
use kubectl::kubectl;
use serve_support::*;
use tokio::io::AsyncBufReadExt;

const ADDED: &str = "\"type\":\"ADDED\"";

async fn start_sim() -> (Sim, std::net::SocketAddr) {
    let sim = Sim::start(SimConfig {
        initial_pods: 10,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    });
    let app = sim.api_router().merge(sim.control_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (sim, addr)
}

/// Starts `kubectl proxy --port=0` against `server`; returns it and its URL.
async fn kubectl_proxy(bin: &std::path::Path, server: &str) -> (tokio::process::Child, String) {
    let home = std::env::temp_dir().join(format!(
        "deltascope-serve-chain-{}-{}",
        std::process::id(),
        deltascope_proxy::auth::random_hex_256()
    ));
    std::fs::create_dir_all(&home).unwrap();
    let mut child = tokio::process::Command::new(bin)
        .arg(format!("--server={server}"))
        .arg(format!("--cache-dir={}", home.join("cache").display()))
        .args(["proxy", "--port=0", "--address=127.0.0.1"])
        .env("HOME", &home)
        .env("KUBECONFIG", home.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("kubectl proxy starts within 30 s")
        .unwrap()
        .expect("kubectl proxy prints its address");
    let addr = line
        .rsplit(' ')
        .next()
        .unwrap_or_else(|| panic!("unexpected kubectl proxy line {line:?}"))
        .trim();
    (child, format!("http://{addr}"))
}

#[tokio::test]
async fn list_and_watch_stream_through_kubectl_proxy() {
    let bin = kubectl();
    let (sim, sim_addr) = start_sim().await;
    let (mut kubectl_proxy, upstream) = kubectl_proxy(&bin, &format!("http://{sim_addr}")).await;
    let mut config = config(Upstream::Url(upstream));
    config.token = Some("chain-token-0123456789abcdef0123456789".into());
    let proxy = start_proxy(config).await;
    let addr = proxy.local_addr();

    // List.
    let list = send(
        addr,
        req("GET", "/api/v1/pods").bearer("chain-token-0123456789abcdef0123456789"),
    )
    .await;
    assert_eq!(list.status, 200, "{}", list.text());
    let json = list.json();
    let pods = json["items"].as_array().unwrap().len();
    assert!(pods >= 10, "{pods} pods");
    let rv = json["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    // Watch from the list's RV: quiet until the sim is told to add pods.
    let watch = format!("/api/v1/pods?watch=1&resourceVersion={rv}");
    let mut stream = open(
        addr,
        req("GET", &watch).bearer("chain-token-0123456789abcdef0123456789"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sim.open_watches(), 1);
    let control = format!("http://{sim_addr}");
    let mut buf = Vec::new();
    for step in 1..=3 {
        // Produce one new pod; its ADDED must come through before the next exists.
        let body = format!("{{\"pods\":{}}}", pods + step);
        let resp = raw_post(&control, "/_sim/scale", &body).await;
        assert!(resp < 300, "scale answered {resp}");
        read_occurrences(&mut stream, &mut buf, ADDED, step, Duration::from_secs(10)).await;
    }

    // Secrets stay redacted through the whole chain.
    let secrets = send(
        addr,
        req("GET", "/api/v1/secrets").bearer("chain-token-0123456789abcdef0123456789"),
    )
    .await;
    assert_eq!(secrets.status, 200);
    let text = secrets.text();
    assert!(text.contains("<redacted: "), "{text}");
    assert!(
        !text.contains("c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"),
        "{text}"
    );

    // Closing the client closes the watch at the sim, through kubectl proxy.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim.open_watches() != 0 {
        assert!(Instant::now() < deadline, "the sim still serves the watch");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    kubectl_proxy.kill().await.unwrap();
}

/// POSTs JSON to the sim's control API (no auth there); returns the status.
async fn raw_post(base: &str, path: &str, body: &str) -> u16 {
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    send(
        addr,
        req("POST", path)
            .header("Content-Type", "application/json")
            .body(body),
    )
    .await
    .status
}
