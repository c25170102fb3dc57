//! Shared helpers for the `serve_*` integration tests: a stub upstream
//! (an axum server on loopback standing in for `kubectl proxy`), a proxy
//! started in-process on 127.0.0.1:0, and a raw HTTP/1.1 client that sends
//! exactly the bytes a test writes (no client-side path cleaning).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use deltascope_proxy::serve::{bind, Running, ServeConfig, Upstream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod process;
// Each test binary uses some of these, few use all.
#[allow(unused_imports)]
pub use process::*;

/// Secret values served by the stub; none of their bytes may reach a client.
pub const SECRET_B64: &str = "c3VwZXJzZWNyZXQtdmFsdWU="; // "supersecret-value"
pub const SECRET_PLAIN: &str = "hunter2-plain-text";
pub const SECRET_DECODED: &str = "supersecret-value";

/// What the stub answers on `…/html` paths, as `text/html`.
pub const HOSTILE_HTML: &str = "<!doctype html><script>fetch('/api/v1/secrets')</script>";

/// A body the stub labels `Content-Encoding: gzip` (the proxy must not touch it).
pub const GZIP_BYTES: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not-really-gzip";

/// What the stub upstream saw.
#[derive(Default)]
pub struct StubState {
    /// Method, path-and-query and headers of every request.
    pub requests: Mutex<Vec<(String, String, http::HeaderMap)>>,
    pub open_watches: AtomicUsize,
}

impl StubState {
    pub fn paths(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, p, _)| p.clone())
            .collect()
    }
}

pub struct Stub {
    pub addr: SocketAddr,
    pub state: Arc<StubState>,
}

impl Stub {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Starts the stub upstream.
pub async fn start_stub() -> Stub {
    let state = Arc::new(StubState::default());
    let app = axum::Router::new()
        .fallback(stub_handler)
        .with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Stub { addr, state }
}

fn secret(name: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "Secret", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "7",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                format!("{{\"data\":{{\"password\":\"{SECRET_B64}\"}}}}")}},
        "type": "Opaque",
        "data": {"password": SECRET_B64},
        "stringData": {"note": SECRET_PLAIN},
    })
}

/// The stub's answer to `GET …/pods?items=N&pad=P`: a PodList of N Pods, each
/// with a P-byte annotation (served with a Content-Length, like the sim).
pub fn big_pod_list(items: u64, pad: u64) -> String {
    let pad = "x".repeat(pad as usize);
    let items: Vec<serde_json::Value> = (0..items)
        .map(|n| {
            serde_json::json!({"metadata": {"name": format!("p{n}"), "namespace": "default",
                "resourceVersion": format!("{}", 100 + n), "annotations": {"pad": pad}}})
        })
        .collect();
    serde_json::json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "7"}, "items": items})
    .to_string()
}

fn json_response(value: serde_json::Value) -> Response {
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(value.to_string()))
        .unwrap()
}

struct WatchGuard(Arc<StubState>);
impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether a real apiserver serves `query` as a watch, written independently
/// of serve's decision: Go's `url.ParseQuery` (split on `&`; a pair with `;`
/// or a malformed escape is dropped; `+` is a space) and apimachinery's
/// `Convert_Slice_string_To_bool` of the *first* `watch` value (true unless
/// `0` or `false` in any case, the empty value included).
pub fn apiserver_watches(query: &str) -> bool {
    fn unescape(s: &str) -> Option<Vec<u8>> {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'%' => {
                    let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        Some(out)
    }
    let first = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.contains(';'))
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((unescape(key)?, unescape(value)?))
        })
        .find(|(key, _)| key == b"watch")
        .map(|(_, value)| value);
    first.is_some_and(|v| !(v == b"0" || v.eq_ignore_ascii_case(b"false")))
}

/// Query parameter of the stub's own: `events` (default unbounded), `interval_ms` (default 100).
fn param(query: &str, name: &str) -> Option<u64> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
}

async fn stub_handler(State(state): State<Arc<StubState>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let accept = request
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    state.requests.lock().unwrap().push((
        request.method().to_string(),
        path_and_query,
        request.headers().clone(),
    ));
    let watch = apiserver_watches(&query);
    let is_secrets = path.contains("/secrets");

    if watch {
        state.open_watches.fetch_add(1, Ordering::SeqCst);
        let guard = WatchGuard(Arc::clone(&state));
        let total = param(&query, "events").unwrap_or(u64::MAX);
        let interval = Duration::from_millis(param(&query, "interval_ms").unwrap_or(100));
        // `pad=N`: an N-byte annotation on each Pod, for events larger than a read
        let pad = "x".repeat(param(&query, "pad").unwrap_or(0) as usize);
        let stream = futures_util::stream::unfold((0u64, guard), move |(n, guard)| {
            let pad = pad.clone();
            async move {
                if n >= total {
                    return None;
                }
                if n > 0 {
                    tokio::time::sleep(interval).await;
                }
                let object = if is_secrets {
                    secret(&format!("s{n}"))
                } else {
                    serde_json::json!({"kind": "Pod", "apiVersion": "v1",
                    "metadata": {"name": format!("p{n}"), "namespace": "default",
                        "resourceVersion": format!("{}", 100 + n),
                        "annotations": {"pad": pad}}})
                };
                let mut line = serde_json::json!({"type": "ADDED", "object": object}).to_string();
                line.push('\n');
                Some((Ok::<_, std::io::Error>(Bytes::from(line)), (n + 1, guard)))
            }
        });
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from_stream(stream))
            .unwrap();
    }
    // An aggregated API gone wrong: HTML with a script on an API path.
    if path.ends_with("/html") {
        return Response::builder()
            .header("content-type", "text/html; charset=utf-8")
            .body(Body::from(HOSTILE_HTML))
            .unwrap();
    }
    if path.ends_with("/log") {
        return Response::builder()
            .header("content-type", "text/plain")
            .body(Body::from("a log line\n"))
            .unwrap();
    }
    if path.ends_with("/cached") {
        return Response::builder()
            .header("content-type", "application/json")
            .header("cache-control", "public, max-age=3600")
            .header("expires", "Thu, 01 Dec 2094 16:00:00 GMT")
            .body(Body::from("{\"kind\":\"Cached\"}"))
            .unwrap();
    }
    if path.ends_with("/gzipped") {
        return Response::builder()
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(Body::from(GZIP_BYTES))
            .unwrap();
    }
    if is_secrets {
        let list = path.ends_with("/secrets");
        if accept.contains("as=Table") {
            return json_response(serde_json::json!({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "7"},
                "columnDefinitions": [{"name": "Name", "type": "string"}],
                "rows": [{"cells": ["s1"], "object": secret("s1")}],
            }));
        }
        if accept.contains("as=PartialObjectMetadata") {
            let mut meta = secret("s1")["metadata"].clone();
            meta["name"] = "s1".into();
            return json_response(serde_json::json!({
                "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "7"},
                "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}],
            }));
        }
        if list {
            // `items=N`: N Secrets instead of two
            let count = param(&query, "items").unwrap_or(2);
            let items: Vec<serde_json::Value> = (1..=count)
                .map(|n| {
                    let mut item = secret(&format!("s{n}"));
                    let map = item.as_object_mut().unwrap();
                    map.remove("kind");
                    map.remove("apiVersion");
                    item
                })
                .collect();
            return json_response(serde_json::json!({
                "kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                "items": items,
            }));
        }
        return json_response(secret("s1"));
    }
    if let (true, Some(items)) = (path.ends_with("/pods"), param(&query, "items")) {
        let pad = param(&query, "pad").unwrap_or(0);
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(big_pod_list(items, pad)))
            .unwrap();
    }
    Response::builder()
        .header("content-type", "application/json")
        .header("access-control-allow-origin", "*")
        .header("set-cookie", "upstream=1")
        .body(Body::from(
            serde_json::json!({"kind": "Echo", "path": path, "query": query}).to_string(),
        ))
        .unwrap()
}

/// The test page's `index.html`.
pub const PAGE_HTML: &str = "<!doctype html><title>deltascope page</title>\
    <script type=\"module\">\nimport init from '/app.js';\nawait init();\n</script>";

/// The inline script of [`PAGE_HTML`], as a browser hashes it.
pub const PAGE_INLINE_SCRIPT: &str = "\nimport init from '/app.js';\nawait init();\n";

/// A new empty temporary directory.
pub fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "deltascope-serve-test-{}-{}",
        std::process::id(),
        deltascope_proxy::auth::random_hex_256()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A temporary `dist` directory with a page.
pub fn make_dist() -> PathBuf {
    let dir = scratch_dir();
    // Like trunk's output: the wasm is loaded by an inline module script.
    std::fs::write(dir.join("index.html"), PAGE_HTML).unwrap();
    std::fs::write(dir.join("app_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.join("app.js"), "export default 1;").unwrap();
    std::fs::write(dir.join("style.css"), "body{}").unwrap();
    dir
}

pub fn config(upstream: Upstream) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        dist: Some(make_dist()),
        ..ServeConfig::new(upstream)
    }
}

/// [`config`] with this session token.
pub fn config_with_token(upstream: Upstream, token: &str) -> ServeConfig {
    ServeConfig {
        token: Some(token.to_owned()),
        ..config(upstream)
    }
}

/// Serve in front of the demo cluster (`pods` pods, `churn` changes/s),
/// with this session token, recording into `target`, started in-process.
pub async fn recording_demo(
    target: deltascope_history::HistoryTarget,
    pods: usize,
    churn: f64,
    token: &str,
) -> Running {
    let mut config = config_with_token(
        Upstream::Demo(deltascope_sim::SimConfig {
            initial_pods: pods,
            churn_per_sec: churn,
            ..deltascope_sim::SimConfig::default()
        }),
        token,
    );
    config.history = deltascope_proxy::recording::HistoryOptions {
        target,
        record: true,
        recorder: deltascope_proxy::recorder::RecorderConfig::default(),
        retention: deltascope_history::Retention::default(),
    };
    start_proxy(config).await
}

/// Starts the proxy in-process; it serves until the test's runtime ends.
pub async fn start_proxy(config: ServeConfig) -> Running {
    let (running, server) = bind(config).await.unwrap();
    tokio::spawn(server);
    running
}

/// Stub upstream plus a proxy in front of it.
pub async fn stub_and_proxy(tweak: impl FnOnce(&mut ServeConfig)) -> (Stub, Running) {
    let stub = start_stub().await;
    let mut config = config(Upstream::Url(stub.url()));
    tweak(&mut config);
    let proxy = start_proxy(config).await;
    (stub, proxy)
}

/// The `name=value` pair of a response's `Set-Cookie`.
pub fn cookie_pair(resp: &Resp) -> String {
    resp.header("set-cookie")
        .unwrap_or_else(|| panic!("no Set-Cookie in {:?}", resp.headers))
        .split(';')
        .next()
        .unwrap_or("")
        .to_owned()
}

/// The path and query of a URL (`/?code=…` of a sign-in link).
pub fn link_path(url: &str) -> String {
    url.split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_owned()))
        .unwrap_or_else(|| panic!("not an absolute URL: {url:?}"))
}

/// Signs in with a new sign-in link of `proxy`, as a browser opening it
/// would; returns the session cookie pair.
pub async fn sign_in_with_link(proxy: &Running) -> String {
    let link = link_path(&proxy.sign_in_link().expect("serve is running"));
    let resp = send(
        proxy.local_addr(),
        req("GET", &link).header("Sec-Fetch-Site", "none"),
    )
    .await;
    assert_eq!(resp.status, 303, "{}", resp.text());
    cookie_pair(&resp)
}

/// A new sign-in link from `POST /_deltascope/sign-in-link` with the token:
/// its URL and how many seconds it is valid.
pub async fn fetch_sign_in_link(addr: SocketAddr, token: &str) -> (String, u64) {
    let resp = send(addr, req("POST", "/_deltascope/sign-in-link").bearer(token)).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let json = resp.json();
    let url = json["url"].as_str().expect("a url").to_owned();
    let expires = json["expiresInSeconds"].as_u64().expect("expiresInSeconds");
    (url, expires)
}

/// Signs in with the sign-in form (`POST /`, `token=…`) as a browser's page
/// would; returns the session cookie pair.
pub async fn sign_in_with_form(proxy: &Running) -> String {
    sign_in_with_form_at(proxy.local_addr(), proxy.token()).await
}

/// [`sign_in_with_form`] on a serve at `addr` whose token is `token` (a
/// process of its own).
pub async fn sign_in_with_form_at(addr: SocketAddr, token: &str) -> String {
    let resp = send(
        addr,
        req("POST", "/")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Origin", &format!("http://{addr}"))
            .header("Sec-Fetch-Site", "same-origin")
            .body(&format!("token={token}")),
    )
    .await;
    assert_eq!(resp.status, 303, "{}", resp.text());
    cookie_pair(&resp)
}

// ---- raw HTTP client ---------------------------------------------------------

/// A request written byte for byte.
#[derive(Clone)]
pub struct Req {
    pub method: String,
    pub target: String,
    pub host: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub fn req(method: &str, target: &str) -> Req {
    Req {
        method: method.to_owned(),
        target: target.to_owned(),
        host: None,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

impl Req {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    pub fn bearer(self, token: &str) -> Self {
        self.header("Authorization", &format!("Bearer {token}"))
    }
    pub fn host(mut self, host: &str) -> Self {
        self.host = Some(host.to_owned());
        self
    }
    pub fn body(mut self, body: &str) -> Self {
        self.body = body.as_bytes().to_vec();
        self
    }
    fn bytes(&self, addr: SocketAddr) -> Vec<u8> {
        let mut text = format!("{} {} HTTP/1.1\r\n", self.method, self.target);
        let host = self.host.clone().unwrap_or_else(|| addr.to_string());
        if !host.is_empty() {
            text.push_str(&format!("Host: {host}\r\n"));
        }
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    /// Asserts a Kubernetes `Status` with this code.
    pub fn assert_status(&self, code: u16) -> serde_json::Value {
        assert_eq!(self.status, code, "body: {}", self.text());
        let json = self.json();
        assert_eq!(json["kind"], "Status", "{json}");
        assert_eq!(json["code"], code, "{json}");
        json
    }
}

/// Sends `request` and reads the whole response (the connection closes after it).
pub async fn send(addr: SocketAddr, request: Req) -> Resp {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&request.bytes(addr)).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .expect("response within 20 s")
        .unwrap();
    parse(&raw, request.method == "HEAD")
}

/// Sends `request` and returns the open connection for reading a stream.
pub async fn open(addr: SocketAddr, request: Req) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&request.bytes(addr)).await.unwrap();
    stream
}

/// Reads from `stream` into `buf` until it holds `count` occurrences of
/// `needle`, returning when each occurrence was first seen.
pub async fn read_occurrences(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    needle: &str,
    count: usize,
    within: Duration,
) -> Vec<std::time::Instant> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut chunk = [0u8; 8192];
    loop {
        let n_found = count_occurrences(buf, needle.as_bytes());
        while seen.len() < n_found {
            seen.push(std::time::Instant::now());
        }
        if seen.len() >= count {
            return seen;
        }
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {} of {count} {needle:?} within {within:?}: {}",
                    seen.len(),
                    String::from_utf8_lossy(buf)
                )
            })
            .unwrap();
        if n == 0 {
            panic!(
                "stream ended after {} of {count} {needle:?}: {}",
                seen.len(),
                String::from_utf8_lossy(buf)
            );
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads until the peer closes (EOF or reset) and returns when; `None` if it
/// is still open after `within`. Data read meanwhile is discarded.
pub async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = std::time::Instant::now();
    let deadline = tokio::time::Instant::now() + within;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

pub fn count_occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

fn parse(raw: &[u8], head: bool) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head_text = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head_text.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if head {
        Vec::new()
    } else if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size =
            usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            out.extend_from_slice(&data[..size.min(data.len())]);
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
}

/// Spellings of "watch" an apiserver streams for (the hardening tests check
/// each against the stub's independent reading).
pub const WATCH_SPELLINGS: [&str; 12] = [
    "watch=1",
    "watch=true",
    "watch",
    "watch=",
    "w%61tch=1",
    "%77atch=true",
    "watch=%31",
    "watch=tru%65",
    "watch=yes",
    "watch=TRUE",
    "watch=on",
    "wat%63h=%74",
];

/// A `/proc/PID/status` figure in KiB (`VmRSS`, `VmHWM`: the peak).
pub fn memory_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find(|l| {
            l.strip_prefix(field)
                .is_some_and(|rest| rest.starts_with(':'))
        })
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// The store digest (`deltascope_facts::digest`) of namespaced objects as
/// JSON: their `namespace/name` keys and resourceVersions.
pub fn digest_of_objects<'a>(objects: impl Iterator<Item = &'a serde_json::Value>) -> String {
    deltascope_facts::digest::digest_of(objects.map(|o| {
        let m = &o["metadata"];
        (
            format!(
                "{}/{}",
                m["namespace"].as_str().unwrap_or_default(),
                m["name"].as_str().unwrap_or_default()
            ),
            m["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }))
}
