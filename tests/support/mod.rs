//! Shared pieces of the integration and browser tests: starting the real
//! `deltascope` binary on a free port, plain HTTP/1.1 over loopback (std only,
//! chunked bodies decoded), and a headless Chromium driven by chromedriver.
//! Child processes are killed when their guard drops, even on a failed assert.
#![allow(dead_code)]

pub mod bench;
pub mod chain;
pub mod live;
pub mod logs;
pub mod relay;
pub mod scratch;
pub mod sign_in;
pub mod timeline;

use sign_in::{new_sign_in_link, random_token};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};

/// A child process killed on drop.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child in a process group of its own; on drop the whole group is killed
/// (the child and everything it started), even on a failed assert.
pub struct GroupGuard(pub Child);

impl GroupGuard {
    /// Spawns `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command, what: &str) -> GroupGuard {
        use std::os::unix::process::CommandExt;
        let child = command
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        GroupGuard(child)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // The group's id is the leader's pid; what it started stays in it.
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -9 -{}", self.0.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver in a process group of its own, with the Chromium it starts:
/// on drop the whole group is killed, so a test that ends without closing
/// its session (or panics) leaves no browser running.
pub struct DriverGuard(GroupGuard);

impl DriverGuard {
    /// Starts `chromedriver --port=PORT` (`CHROMEDRIVER` or /usr/bin/chromedriver).
    pub fn start(port: u16) -> DriverGuard {
        let chromedriver =
            std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let mut command = Command::new(&chromedriver);
        command
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        DriverGuard(GroupGuard::spawn(
            &mut command,
            &format!("{chromedriver} (cargo xtask test installs chromium-driver)"),
        ))
    }
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `deltascope` binary built by `cargo xtask test` (or `cargo build -p deltascope-proxy`).
pub fn deltascope_bin() -> PathBuf {
    let path = std::env::var_os("DELTASCOPE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/debug/deltascope"));
    assert!(
        path.exists(),
        "{} is missing: run the tests through `cargo xtask test`, which builds it",
        path.display()
    );
    path
}

/// The page built by trunk.
pub fn dist_dir() -> PathBuf {
    let path = std::env::var_os("DELTASCOPE_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("dist"));
    assert!(
        path.join("index.html").exists(),
        "{}/index.html is missing: run the tests through `cargo xtask test`, which runs trunk build",
        path.display()
    );
    path
}

pub fn artifacts_dir() -> PathBuf {
    let path = std::env::var_os("DELTASCOPE_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/test-artifacts"));
    let _ = std::fs::create_dir_all(&path);
    path
}

/// A running `deltascope serve --demo`.
pub struct DemoServer {
    pub addr: SocketAddr,
    /// The session token, for `Authorization: Bearer` (serve gets it in its
    /// environment, so it writes no token file).
    pub token: String,
    /// The sign-in link serve printed: it signs in one browser, once; for
    /// another, [`DemoServer::sign_in_link`].
    pub login_url: String,
    _child: ChildGuard,
}

impl DemoServer {
    /// Starts `deltascope serve --demo --listen 127.0.0.1:0` with `extra` flags and waits for its URL line.
    pub fn start(extra: &[&str]) -> DemoServer {
        DemoServer::start_on("127.0.0.1:0", extra)
    }

    /// Like `start`, on a given listen address (to restart a server on the same port).
    pub fn start_on(listen: &str, extra: &[&str]) -> DemoServer {
        let token = random_token();
        let mut child = Command::new(deltascope_bin())
            .args(["serve", "--demo", "--listen", listen, "--dist"])
            .arg(dist_dir())
            .args(extra)
            .env("DELTASCOPE_TOKEN", &token)
            // no recorder unless a test asks for one (--history overrides this)
            .env("DELTASCOPE_HISTORY", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start deltascope serve");
        let stdout = child.stdout.take().expect("stdout piped");
        let guard = ChildGuard(child);
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("deltascope: open ") {
                    let _ = sender.send(url.trim().to_string());
                }
            }
        });
        // The sim builds its cluster before serve listens: 100k pods (the
        // benches) take about 30 s on a 2-core machine.
        let login_url = receiver
            .recv_timeout(Duration::from_secs(120))
            .expect("deltascope serve printed `deltascope: open http://ADDR/?code=C` within 120 s");
        let rest = login_url.strip_prefix("http://").expect("http URL");
        let (addr, query) = rest.split_once('/').expect("URL has a path");
        assert!(query.starts_with("?code="), "a one-time code: {login_url}");
        DemoServer {
            addr: addr.parse().expect("socket address"),
            token,
            login_url,
            _child: guard,
        }
    }

    /// A new sign-in link (for a browser to sign in after the first).
    pub fn sign_in_link(&self) -> String {
        new_sign_in_link(self.addr, &self.token)
    }

    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        http(
            self.addr,
            "GET",
            path,
            &[("Authorization", &format!("Bearer {}", self.token))],
            None,
        )
    }

    pub fn post_json(&self, path: &str, body: &Value) -> (u16, Vec<u8>) {
        let body = body.to_string();
        http(
            self.addr,
            "POST",
            path,
            &[
                ("Authorization", &format!("Bearer {}", self.token)),
                ("Content-Type", "application/json"),
            ],
            Some(body.as_bytes()),
        )
    }

    /// The simulated cluster's own digest of a resource.
    pub fn sim_digest(&self, resource: &str) -> String {
        let (status, body) = self.get(&format!("/_sim/digest?resource={resource}"));
        assert_eq!(
            status,
            200,
            "/_sim/digest: {}",
            String::from_utf8_lossy(&body)
        );
        let value: Value = serde_json::from_slice(&body).expect("digest JSON");
        value["digest"].as_str().expect("digest field").to_string()
    }

    /// The store digest computed from a direct (paginated) list through the proxy.
    pub fn listed_digest(&self, api_path: &str) -> String {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut continue_token = String::new();
        loop {
            let separator = if api_path.contains('?') { '&' } else { '?' };
            let mut path = format!("{api_path}{separator}limit=500");
            if !continue_token.is_empty() {
                path.push_str(&format!(
                    "&continue={}",
                    deltascope_facts::percent::encode_query_value(&continue_token)
                ));
            }
            let (status, body) = self.get(&path);
            assert_eq!(
                status,
                200,
                "list {path}: {}",
                String::from_utf8_lossy(&body)
            );
            let list: Value = serde_json::from_slice(&body).expect("list JSON");
            for item in list["items"].as_array().expect("items") {
                let meta = &item["metadata"];
                let name = meta["name"].as_str().expect("name");
                let key = match meta["namespace"].as_str() {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name.to_string(),
                };
                pairs.push((
                    key,
                    meta["resourceVersion"].as_str().expect("rv").to_string(),
                ));
            }
            continue_token = list["metadata"]["continue"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if continue_token.is_empty() {
                break;
            }
        }
        deltascope::informer::digest_of(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// One HTTP/1.1 request with `Connection: close`; returns status and the (de-chunked) body.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("write request");
    if let Some(body) = body {
        stream.write_all(body).expect("write body");
    }
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let raw_body = &response[split + 4..];
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked {
        dechunk(raw_body)
    } else {
        raw_body.to_vec()
    };
    (status, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..line_end]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        raw = &raw[line_end + 2..];
        if size == 0 || raw.len() < size {
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[(size + 2).min(raw.len())..];
    }
    out
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A headless Chromium session; the driver and browser die with it.
pub struct Browser {
    pub client: Client,
    _driver: DriverGuard,
    _profile: TempDir,
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    pub async fn start() -> Browser {
        let port = free_port();
        let driver = DriverGuard::start(port);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on port {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile =
            std::env::temp_dir().join(format!("deltascope-chromium-{}-{port}", std::process::id()));
        let _ = std::fs::create_dir_all(&profile);
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,720",
                    format!("--user-data-dir={}", profile.display()),
                ]
            }),
        );
        capabilities.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("open a Chromium session through chromedriver");
        Browser {
            client,
            _driver: driver,
            _profile: TempDir(profile),
        }
    }

    /// A browser whose window is `width`×`height` (a laptop's screen, say).
    pub async fn start_sized(width: u32, height: u32) -> Browser {
        let browser = Browser::start().await;
        browser
            .client
            .set_window_size(width, height)
            .await
            .unwrap_or_else(|e| panic!("resize the window to {width}×{height}: {e}"));
        browser
    }

    /// An attribute of the first element matching `css`, or None if there is none yet.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.client.find(fantoccini::Locator::Css(css)).await.ok()?;
        element.attr(name).await.ok().flatten()
    }

    /// Presses `key` as the page's key listener hears it (a `keydown` on
    /// the document).
    pub async fn press(&self, key: &str) {
        let script = "document.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[0], bubbles: true}));";
        self.client
            .execute(script, vec![serde_json::json!(key)])
            .await
            .expect("dispatch a key");
    }

    /// Sets the control `css` (a select or an input the page reads on
    /// `change`) to `value`, as choosing it would.
    pub async fn choose(&self, css: &str, value: &str) {
        let script = "const e = document.querySelector(arguments[0]); if (!e) return false;\
                      e.value = arguments[1]; e.dispatchEvent(new Event('change', {bubbles: true})); return true;";
        let found = self
            .client
            .execute(script, vec![json!(css), json!(value)])
            .await
            .unwrap_or_else(|e| panic!("choosing {value:?} in {css}: {e}"));
        assert_eq!(found, json!(true), "{css} is missing");
    }

    /// Runs `command` (without its `:`) in the command bar, as typed.
    pub async fn run_command(&self, command: &str) {
        self.press(":").await;
        let input = self
            .client
            .find(fantoccini::Locator::Css("[data-testid=command-input]"))
            .await
            .expect("the command bar");
        input
            .send_keys(&format!("{command}\u{E007}"))
            .await
            .unwrap_or_else(|e| panic!("typing :{command} and Enter: {e}"));
    }

    /// Waits (up to a minute) for an element matching `css` and returns
    /// its text.
    pub async fn wait_text(&self, css: &str) -> String {
        let script =
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;";
        self.wait_for(
            &format!("{css} to show"),
            Duration::from_secs(60),
            || async {
                let value = self
                    .client
                    .execute(script, vec![serde_json::json!(css)])
                    .await
                    .ok()?;
                value.as_str().map(str::to_string)
            },
        )
        .await
    }

    /// Polls `check` every 100 ms until it returns Some, or panics with `what` after `timeout`.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            if Instant::now() > deadline {
                let stats = self.store_stats().await;
                panic!(
                    "timed out after {timeout:?} waiting for {what}; store-stats now: {stats:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// (count, synced, state, digest) of the `store-stats` hook, read in one
    /// script so that the four come from the same render: read one by one,
    /// a render between the reads could pair a count of 0 from before the
    /// list with the digest from after it.
    pub async fn store_stats(&self) -> Option<(String, String, String, String)> {
        let script = "const e = document.querySelector('[data-testid=store-stats]');\
                      if (!e) return null;\
                      const a = ['data-count', 'data-synced', 'data-state', 'data-digest'].map(n => e.getAttribute(n));\
                      return a.every(v => v !== null) ? a : null;";
        let value = self.client.execute(script, vec![]).await.ok()?;
        let read = |i: usize| value.get(i)?.as_str().map(str::to_string);
        Some((read(0)?, read(1)?, read(2)?, read(3)?))
    }

    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let path = artifacts_dir().join(name);
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    /// Live rows currently in the DOM: (data-key, data-rv). Deleted rows
    /// still fading out (`data-deleted`) are not in the store and not here.
    pub async fn rows(&self) -> Vec<(String, String)> {
        let script = "return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])')).map(r => [r.dataset.key, r.dataset.rv]);";
        let value = self
            .client
            .execute(script, vec![])
            .await
            .unwrap_or(Value::Null);
        value
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| Some((r[0].as_str()?.to_string(), r[1].as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Browser {
    /// Runs `code` in the page and returns what it returns.
    pub async fn script(&self, code: &str) -> Value {
        self.client
            .execute(code, vec![])
            .await
            .unwrap_or_else(|e| panic!("running a script in the page: {e}"))
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) {
        self.client
            .find(fantoccini::Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css} is missing: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
    }

    /// Replaces the text of the input `css` as a user would: emptied (with
    /// an `input` event, which WebDriver's clear does not fire), then typed.
    pub async fn type_into(&self, css: &str, text: &str) {
        let input = self
            .client
            .find(fantoccini::Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css} is missing: {e}"));
        self.client
            .execute(
                "const i = arguments[0]; i.value = ''; i.dispatchEvent(new Event('input', {bubbles: true}));",
                vec![serde_json::to_value(&input).expect("element")],
            )
            .await
            .unwrap_or_else(|e| panic!("emptying {css}: {e}"));
        if !text.is_empty() {
            input
                .send_keys(text)
                .await
                .unwrap_or_else(|e| panic!("typing into {css}: {e}"));
        }
    }

    /// Opens each resource address in turn (`(hash, its data-resource)`),
    /// waiting for it to sync, and checks that every one is kept live.
    pub async fn keep_each(&self, resources: &[(&str, String)]) {
        for (hash, name) in resources {
            self.script(&format!("location.hash = '{hash}';")).await;
            self.wait_synced(name, Duration::from_secs(60)).await;
        }
        let kept = self
            .script("return document.querySelectorAll('[data-testid=kept-resource]').length;")
            .await;
        assert_eq!(
            kept.as_u64(),
            Some(resources.len() as u64),
            "every resource kept live"
        );
    }

    /// Waits (up to `timeout`) until the table shows `resource` (its
    /// `data-resource`), synced and watching; its `data-count`.
    pub async fn wait_synced(&self, resource: &str, timeout: Duration) -> String {
        self.wait_for(&format!("{resource} to sync"), timeout, || async {
            let now = self
                .attr("[data-testid=store-stats]", "data-resource")
                .await?;
            let (count, synced, state, _) = self.store_stats().await?;
            (now == resource && synced == "true" && state == "watching").then_some(count)
        })
        .await
    }

    /// Waits (up to `timeout`) until discovery's watch of the cluster's
    /// CRDs is open (`[data-testid=discovery]`'s `data-crd-watch`): it
    /// opens on its own schedule once the channel is up, so a test that
    /// counts watches or requests waits for it first.
    pub async fn wait_crd_watch_open(&self, timeout: Duration) {
        self.wait_for("discovery's CRD watch to open", timeout, || async {
            let state = self
                .attr("[data-testid=discovery]", "data-crd-watch")
                .await?;
            (state == "open").then_some(())
        })
        .await
    }

    /// The table's column titles, without sort arrows.
    pub async fn titles(&self) -> Vec<String> {
        let value = self
            .script("return Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());")
            .await;
        serde_json::from_value(value).unwrap_or_default()
    }
}

/// One of chromedriver's own endpoints under `/session/{id}/` (browser log,
/// network emulation, DevTools commands), sent with `Client::issue_cmd`.
#[derive(Debug)]
pub struct DriverCommand {
    pub method: http::Method,
    pub path: &'static str,
    pub body: Option<Value>,
}

impl fantoccini::wd::WebDriverCompatibleCommand for DriverCommand {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            self.method.clone(),
            self.body.as_ref().map(Value::to_string),
        )
    }
}

/// Takes the browser log entries gathered since the last call (console
/// messages, uncaught exceptions, failed requests), as chromedriver reports
/// them: `{"level", "source", "message", "timestamp"}`.
pub async fn browser_log(browser: &Browser) -> Vec<Value> {
    let reply = browser
        .client
        .issue_cmd(DriverCommand {
            method: http::Method::POST,
            path: "se/log",
            body: Some(json!({ "type": "browser" })),
        })
        .await
        .expect("read the browser log through chromedriver");
    reply.as_array().cloned().unwrap_or_default()
}

/// DevTools network emulation for the tab: offline, or online with `latency_ms` added to every request.
pub async fn network_conditions(browser: &Browser, offline: bool, latency_ms: u64) {
    browser
        .client
        .issue_cmd(DriverCommand {
            method: http::Method::POST,
            path: "chromium/network_conditions",
            body: Some(json!({ "network_conditions": {
                "offline": offline,
                "latency": latency_ms,
                "download_throughput": -1,
                "upload_throughput": -1,
            }})),
        })
        .await
        .expect("set network conditions through chromedriver");
}

/// A Chrome DevTools Protocol command (e.g. `Performance.getMetrics`); its result.
pub async fn devtools(browser: &Browser, method: &str, params: Value) -> Value {
    devtools_of(&browser.client, method, params).await
}

/// [`devtools`] for any WebDriver session (the benchmarks' Chromium).
pub async fn devtools_of(client: &Client, method: &str, params: Value) -> Value {
    client
        .issue_cmd(DriverCommand {
            method: http::Method::POST,
            path: "goog/cdp/execute",
            body: Some(json!({ "cmd": method, "params": params })),
        })
        .await
        .unwrap_or_else(|e| panic!("DevTools {method}: {e}"))
}

impl Browser {
    /// Clicks `button` and returns the text of the file the page hands to the
    /// browser for download (captured at `URL.createObjectURL`).
    pub async fn download_by_clicking(&self, button: &str, what: &str) -> String {
        let capture = "window.__exported = null; URL.createObjectURL = (blob) => { blob.text().then(t => { window.__exported = t; }); return 'blob:captured'; };";
        self.client
            .execute(capture, vec![])
            .await
            .expect("install the download capture");
        self.client
            .find(fantoccini::Locator::Css(button))
            .await
            .unwrap_or_else(|e| panic!("{button} is missing: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("clicking {button}: {e}"));
        self.wait_for(what, Duration::from_secs(10), || async {
            self.client
                .execute("return window.__exported;", vec![])
                .await
                .ok()?
                .as_str()
                .map(str::to_string)
        })
        .await
    }
}
