//! Shared by the page benchmarks (`browser_page_bench.rs`,
//! `browser_kept_bench.rs`): a benchmark Chromium (precise memory, no timer
//! throttling, long script timeouts), scripts that time frames and read the
//! page's own figures, and frame statistics.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};

use super::{DemoServer, DriverGuard};

/// One 60 Hz frame.
pub const FRAME_BUDGET_MS: f64 = 1000.0 / 60.0;

pub struct Chromium {
    pub client: Client,
    _driver: DriverGuard,
    /// Its profile (the page's IndexedDB may hold hundreds of MB): removed
    /// when it goes.
    profile: std::path::PathBuf,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

pub async fn chromium() -> Chromium {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let driver = DriverGuard::start(port);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let profile =
        std::env::temp_dir().join(format!("deltascope-bench-{}-{port}", std::process::id()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,900",
                "--enable-precise-memory-info", "--js-flags=--expose-gc",
                "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
                format!("--user-data-dir={}", profile.display()),
            ]
        }),
    );
    // WebDriver's default script timeout is 30 s; the full run times 60 s of frames.
    capabilities.insert(
        "timeouts".into(),
        json!({"script": 300_000, "pageLoad": 300_000}),
    );
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("open a Chromium session");
    Chromium {
        client,
        _driver: driver,
        profile,
    }
}

pub async fn run(client: &Client, script: &str, args: Vec<Value>) -> Value {
    client
        .execute(script, args)
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

pub async fn run_async(client: &Client, script: &str, args: Vec<Value>) -> Value {
    client
        .execute_async(script, args)
        .await
        .unwrap_or_else(|e| panic!("async script failed: {e}\n{script}"))
}

pub fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// Frame intervals (ms) for `millis`, while `step` (JS, may be empty) runs every frame.
pub const FRAMES: &str = r#"
const [millis, step] = [arguments[0], arguments[1]];
const done = arguments[arguments.length - 1];
const scroller = document.querySelector('[data-testid=table-scroll]');
const tick = step ? new Function('scroller', 't', step) : null;
const frames = [];
let last = null, start = null;
function frame(t) {
  if (start === null) start = t;
  if (last !== null) frames.push(t - last);
  last = t;
  if (tick) tick(scroller, t - start);
  if (t - start < millis) requestAnimationFrame(frame); else done(frames);
}
requestAnimationFrame(frame);
"#;

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

pub fn frame_stats(value: &Value) -> (f64, f64, f64, usize) {
    let mut frames: Vec<f64> = value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    frames.sort_by(f64::total_cmp);
    (
        percentile(&frames, 0.5),
        percentile(&frames, 0.95),
        frames.last().copied().unwrap_or(f64::NAN),
        frames.len(),
    )
}

/// The page's marks, store-stats, counters and `window.__deltascope.metrics()`.
pub const PAGE_STATE: &str = r#"
const mark = n => { const e = performance.getEntriesByName('deltascope:' + n); return e.length ? e[0].startTime : null; };
const stats = document.querySelector('[data-testid=store-stats]');
const counters = document.querySelector('.status-bar .counters');
return {
  listStart: mark('list-start'), synced: mark('synced'), tableSynced: mark('table-synced'),
  count: stats ? Number(stats.dataset.count) : -1, digest: stats ? stats.dataset.digest : '',
  state: stats ? stats.dataset.state : '', counters: counters ? counters.textContent : '',
  metrics: window.__deltascope ? window.__deltascope.metrics(arguments[0]) : null,
  heap: performance.memory ? performance.memory.usedJSHeapSize : null,
  rows: document.querySelectorAll('tr[data-key]').length,
};
"#;

/// Installed before the page loads (DevTools `addScriptToEvaluateOnNewDocument`):
/// every long task (> 50 ms) and every gap between animation frames, from
/// navigation on, read back by [`JANK`].
pub const JANK_OBSERVER: &str = "window.__jank = {tasks: [], gaps: []};\
    new PerformanceObserver(l => { for (const e of l.getEntries()) window.__jank.tasks.push([e.startTime, e.duration]); })\
      .observe({type: 'longtask', buffered: true});\
    let last = performance.now();\
    const frame = t => { window.__jank.gaps.push([t, t - last]); last = t; requestAnimationFrame(frame); };\
    requestAnimationFrame(frame);";

/// The long tasks and frame gaps between `arguments[0]` and `arguments[1]`
/// (ms since navigation): count, blocked time (the part over 50 ms),
/// longest task, frame p95 and the longest gap.
pub const JANK: &str = "const [from, to] = [arguments[0], arguments[1]]; const j = window.__jank;\
    const tasks = j.tasks.filter(([at]) => at >= from && at <= to).map(([, d]) => d);\
    const gaps = j.gaps.filter(([at]) => at >= from && at <= to).map(([, d]) => d).sort((a, b) => a - b);\
    return {count: tasks.length, blocked: tasks.reduce((s, d) => s + d - 50, 0), longest: Math.max(0, ...tasks),\
      p95: gaps.length ? gaps[Math.floor(gaps.length * 0.95)] : 0, longestGap: gaps.length ? gaps[gaps.length - 1] : 0,\
      frames: gaps.length};";

/// Signs this browser in with a new sign-in link (a link signs in one
/// browser, once; every fresh browser gets its own).
pub async fn sign_in(client: &Client, server: &DemoServer) {
    client.goto(&server.sign_in_link()).await.expect("login");
}

/// Signs in, stores one `localStorage` setting, and leaves the browser on a
/// blank page with [`JANK_OBSERVER`] installed for every later load.
pub async fn sign_in_observed(client: &Client, server: &DemoServer, setting: (&str, &str)) {
    sign_in(client, server).await;
    run(
        client,
        "localStorage.setItem(arguments[0], arguments[1]); return true;",
        vec![json!(setting.0), json!(setting.1)],
    )
    .await;
    observe_jank(client).await;
}

/// Leaves the browser on a blank page with [`JANK_OBSERVER`] installed for
/// every later load.
pub async fn observe_jank(client: &Client) {
    client.goto("about:blank").await.expect("blank");
    super::devtools_of(
        client,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": JANK_OBSERVER }),
    )
    .await;
}

/// `[data-testid=store-stats]`'s `data-{name}` now (empty without it).
pub async fn store_stat(client: &Client, name: &str) -> String {
    let value = run(
        client,
        "const s = document.querySelector('[data-testid=store-stats]'); return s ? (s.dataset[arguments[0]] || '') : '';",
        vec![json!(name)],
    )
    .await;
    value.as_str().unwrap_or_default().to_string()
}
