//! `deltascope serve` as installed ("one file to install"): with no
//! `--dist` it serves the page built into the binary (in a debug build,
//! `dist/` at the workspace root read from disk, which `cargo xtask test`
//! builds first); and `serve` without `--demo` refuses the simulated
//! cluster's flags instead of ignoring them. The page's files go out as the
//! page build's brotli, or gzip, and a reload holding their `ETag` gets 304.

use crate::serve_support;

use std::path::PathBuf;

use serve_support::{req, send, started, Resp};
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

/// `GET path` with the bearer token and `headers`.
async fn get_with(addr: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let request = headers
        .iter()
        .fold(req("GET", path).bearer(TOKEN), |r, (name, value)| {
            r.header(name, value)
        });
    send(addr.parse().expect("serve's address"), request).await
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

    let content = std::fs::read(dist.join(&wasm)).expect("the wasm");
    let built_brotli = std::fs::read(dist.join(format!("{wasm}.br"))).unwrap_or_else(|_| {
        panic!("{wasm}.br is missing in dist: build the page with cargo xtask build (cargo xtask test does)")
    });
    // What Chromium asks for: the build's brotli, byte for byte, and it
    // decodes to the wasm.
    let wasm_path = format!("/{wasm}");
    let resp = get_with(
        &addr,
        &wasm_path,
        &[("Accept-Encoding", "gzip, deflate, br, zstd")],
    )
    .await;
    assert_eq!(resp.status, 200, "{resp:?}");
    assert_eq!(resp.header("content-encoding"), Some("br"));
    assert_eq!(resp.header("vary"), Some("accept-encoding"));
    assert_eq!(resp.body, built_brotli);
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut brotli::Decompressor::new(&resp.body[..], 4096),
        &mut decoded,
    )
    .expect("brotli");
    assert!(decoded == content, "the brotli body decodes to the wasm");
    let tag = resp.header("etag").expect("an ETag").to_string();

    // A browser that takes gzip only.
    let resp = get_with(&addr, &wasm_path, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(resp.header("content-encoding"), Some("gzip"));
    let body = &resp.body;
    assert!(body.len() < content.len() / 2, "gzip: {} bytes", body.len());
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut decoded)
        .expect("gunzip");
    assert!(decoded == content, "the gzip body decodes to the wasm");
    assert_eq!(
        resp.header("etag"),
        Some(tag.as_str()),
        "one tag for every coding"
    );

    // A reload that holds the wasm: 304, no body.
    let resp = get_with(
        &addr,
        &wasm_path,
        &[("Accept-Encoding", "gzip, br"), ("If-None-Match", &tag)],
    )
    .await;
    assert_eq!(resp.status, 304, "{:?}", resp.headers);
    assert!(resp.body.is_empty());
    let resp = get_with(&addr, &wasm_path, &[("If-None-Match", "W/\"other\"")]).await;
    assert_eq!(resp.status, 200, "{:?}", resp.headers);
    assert_eq!(
        resp.header("content-encoding"),
        None,
        "no Accept-Encoding: as it is"
    );
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
