//! `deltascope serve` as installed (issue 19, "one file to install"): with no
//! `--dist` it serves the page built into the binary (in a debug build,
//! `dist/` at the workspace root read from disk, which `cargo xtask test`
//! builds first); and `serve` without `--demo` refuses the simulated
//! cluster's flags instead of ignoring them.

mod serve_support;

use std::path::PathBuf;

use serve_support::started;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_deltascope");
const TOKEN: &str = "built-in-page-token-0123456789abcdef0123";

fn workspace_dist() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist");
    assert!(
        dist.join("index.html").is_file(),
        "{}/index.html is missing: build the page first (cargo xtask test does)",
        dist.display()
    );
    dist
}

/// `GET path` with the bearer token: (status line, body).
async fn get(addr: &str, path: &str) -> (String, Vec<u8>) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await.expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, raw[split + 4..].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_dist_serves_the_built_in_page() {
    let dist = workspace_dist();
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--churn", "0"])
        .env("DELTASCOPE_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .current_dir(std::env::temp_dir());
    let (_child, addr) = started(command).await;
    let addr = addr.to_string();

    let (status, body) = get(&addr, "/").await;
    assert!(status.contains(" 200 "), "{status}");
    let index = std::fs::read(dist.join("index.html")).expect("index.html");
    assert_eq!(body, index, "/ is the built page's index.html");
    let wasm = std::fs::read_dir(&dist)
        .expect("dist")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with(".wasm"))
        .expect("a wasm file in dist");
    let (status, body) = get(&addr, &format!("/{wasm}")).await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(
        body.len() as u64,
        dist.join(&wasm).metadata().expect("size").len()
    );
    let (status, _) = get(&addr, "/no-such-file.js").await;
    assert!(status.contains(" 404 "), "{status}");
}

#[tokio::test]
async fn serve_upstream_refuses_the_sims_flags() {
    let out = Command::new(BIN)
        .args([
            "serve",
            "--upstream",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
            "--pods",
            "5",
            "--no-watch-list",
        ])
        .output()
        .await
        .expect("deltascope runs");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--pods, --no-watch-list") && stderr.contains("--demo"),
        "{stderr}"
    );
}
