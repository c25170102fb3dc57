//! `kubectl top`'s columns in the page's tables, in headless Chromium
//! against `deltascope serve --demo` (the simulated cluster serves
//! `metrics.k8s.io` as metrics-server does, a new window every 15 s): the
//! pods table's CPU and MEMORY cells equal what `GET
//! /apis/metrics.k8s.io/v1beta1/pods` says for the window the page shows
//! (`[data-testid=metrics-state]` `data-window`), written as kubectl writes
//! them — worked out here from the API's quantities, apart from the page's
//! code; sorting by CPU orders the rows as numbers; the wide view adds the
//! usage of the containers' requests and limits; the nodes table's CPU%
//! and MEMORY% are the usage against `status.allocatable`; the page asks
//! the metrics list about once a window, never per pod, and stops asking
//! when another resource is shown. With `--no-metrics` the page says one
//! quiet line, shows no CPU column and no error.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);
/// Long enough for the page's window and the API's to meet (a window is 15 s).
const WINDOWS: Duration = Duration::from_secs(90);

/// A CPU quantity as the sim writes it (`12345678n`, `250m`, `2`) in nanocores.
fn nanocores(text: &str) -> u128 {
    let (digits, scale) = match text.char_indices().last() {
        Some((at, 'n')) => (&text[..at], 1),
        Some((at, 'u')) => (&text[..at], 1_000),
        Some((at, 'm')) => (&text[..at], 1_000_000),
        _ => (text, 1_000_000_000),
    };
    digits.parse::<u128>().expect("a whole CPU quantity") * scale
}

/// A memory quantity as the sim writes it (`123456Ki`, `256Mi`, `512`, `1k`) in bytes.
fn bytes(text: &str) -> u128 {
    let suffixes = [
        ("Ki", 1u128 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1_000),
    ];
    let (digits, scale) = suffixes
        .iter()
        .find_map(|(suffix, scale)| Some((text.strip_suffix(suffix)?, *scale)))
        .unwrap_or((text, 1));
    digits.parse::<u128>().expect("a whole memory quantity") * scale
}

/// kubectl's `MilliValue()`: rounded up.
fn millicores(nanos: u128) -> u128 {
    nanos.div_ceil(1_000_000)
}

/// One object's usage as `kubectl top` prints it: (CPU, MEMORY), plus the
/// exact millicores and bytes.
struct Top {
    cpu: String,
    memory: String,
    milli: u128,
    bytes: u128,
}

/// `GET /apis/metrics.k8s.io/v1beta1/{resource}`: each object's usage
/// (a pod's containers summed) by store key, and the newest `timestamp`.
fn metrics(server: &DemoServer, resource: &str) -> (HashMap<String, Top>, String) {
    let (status, body) = server.get(&format!("/apis/metrics.k8s.io/v1beta1/{resource}"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).expect("a metrics list");
    let mut newest = String::new();
    let mut usage = HashMap::new();
    for item in list["items"].as_array().expect("items") {
        let name = item["metadata"]["name"].as_str().expect("name");
        let key = match item["metadata"]["namespace"].as_str() {
            Some(namespace) => format!("{namespace}/{name}"),
            None => name.to_string(),
        };
        let measured: Vec<&Value> = match item["containers"].as_array() {
            Some(containers) => containers.iter().map(|c| &c["usage"]).collect(),
            None => vec![&item["usage"]],
        };
        let nanos: u128 = measured
            .iter()
            .map(|u| nanocores(u["cpu"].as_str().expect("cpu")))
            .sum();
        let total: u128 = measured
            .iter()
            .map(|u| bytes(u["memory"].as_str().expect("memory")))
            .sum();
        let timestamp = item["timestamp"].as_str().expect("timestamp").to_string();
        newest = newest.max(timestamp);
        let milli = millicores(nanos);
        usage.insert(
            key,
            Top {
                cpu: format!("{milli}m"),
                memory: format!("{}Mi", total / (1 << 20)),
                milli,
                bytes: total,
            },
        );
    }
    (usage, newest)
}

/// The drawn rows' keys and their cells under `titles`, and the window the
/// page says it shows, read in one script (one render).
async fn table_cells(browser: &Browser, titles: &[&str]) -> (Vec<(String, Vec<String>)>, String) {
    let script = "const heads = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
                  const at = arguments[0].map(t => heads.indexOf(t));\
                  if (at.some(i => i < 0)) return null;\
                  const state = document.querySelector('[data-testid=metrics-state]');\
                  const rows = Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])'))\
                      .map(r => [r.dataset.key, at.map(i => r.children[i].textContent)]);\
                  return [rows, state ? state.getAttribute('data-window') : null];";
    let value = browser
        .client
        .execute(script, vec![json!(titles)])
        .await
        .expect("read the table");
    if value.is_null() {
        return (Vec::new(), String::new());
    }
    serde_json::from_value(value).expect("rows and a window")
}

/// Waits until the metrics hook says `state`; its `data-window`.
async fn metrics_state(browser: &Browser, state: &str) -> String {
    browser
        .wait_for(&format!("metrics-state {state}"), WINDOWS, || async {
            let now = browser
                .attr("[data-testid=metrics-state]", "data-state")
                .await?;
            (now == state).then_some(())?;
            browser
                .attr("[data-testid=metrics-state]", "data-window")
                .await
        })
        .await
}

/// How many answers of the metrics API the tables' polls took so far (each
/// request's answer is measured once, as `deltascope:metrics-window`).
async fn metrics_requests(browser: &Browser) -> u64 {
    browser
        .script("return performance.getEntriesByName('deltascope:metrics-window').length;")
        .await
        .as_u64()
        .expect("a count")
}

/// How many lists of the metrics API the page asked for on connections of
/// their own, not on its channel (its discovery, `/apis/metrics.k8s.io/v1beta1`,
/// is a GET of its own like every group's).
async fn metrics_fetches(browser: &Browser) -> u64 {
    browser
        .script("return performance.getEntriesByType('resource').filter(e => e.name.includes('/apis/metrics.k8s.io/v1beta1/')).length;")
        .await
        .as_u64()
        .expect("a count")
}

/// Reads the API, the table, the API again until the three speak of the
/// same window; checks each drawn row against `expected` (the API's
/// objects, and `allocatable` for nodes). Returns how many rows had metrics.
async fn cells_match_the_api(
    browser: &Browser,
    server: &DemoServer,
    resource: &str,
    titles: &[&str],
    expected: impl Fn(&Top, &str) -> Vec<String>,
) -> usize {
    browser
        .wait_for(
            &format!("{resource} cells of the API's window"),
            WINDOWS,
            || async {
                let (before, window) = metrics(server, resource);
                let (rows, shown_window) = table_cells(browser, titles).await;
                let (_, after) = metrics(server, resource);
                if window != after || window != shown_window || rows.is_empty() {
                    return None;
                }
                let mut measured = 0;
                for (key, cells) in &rows {
                    match before.get(key) {
                        Some(top) => {
                            assert_eq!(cells, &expected(top, key), "{resource} {key} in {window}");
                            measured += 1;
                        }
                        None => assert!(
                            cells.iter().all(String::is_empty),
                            "{key} has no metrics in {window}, yet shows {cells:?}"
                        ),
                    }
                }
                Some(measured)
            },
        )
        .await
}

/// Each node's allocatable (millicores, bytes).
fn allocatable(server: &DemoServer) -> HashMap<String, (u128, u128)> {
    let (status, body) = server.get("/api/v1/nodes");
    assert_eq!(status, 200);
    let nodes: Value = serde_json::from_slice(&body).expect("nodes");
    nodes["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|node| {
            let allocatable = &node["status"]["allocatable"];
            let cpu = millicores(nanocores(allocatable["cpu"].as_str().expect("cpu")));
            let memory = bytes(allocatable["memory"].as_str().expect("memory"));
            let name = node["metadata"]["name"].as_str().expect("name");
            (name.to_string(), (cpu, memory))
        })
        .collect()
}

/// Each pod's containers' (CPU requests, CPU limits, memory requests,
/// memory limits) in milli: requests summed over the containers that set
/// one, limits only when every container sets one.
fn pod_bounds(server: &DemoServer) -> HashMap<String, [Option<u128>; 4]> {
    let (status, body) = server.get("/api/v1/pods");
    assert_eq!(status, 200);
    let pods: Value = serde_json::from_slice(&body).expect("pods");
    let total = |containers: &[Value], field: &str, resource: &str, every: bool| {
        let set: Vec<u128> = containers
            .iter()
            .filter_map(|c| c["resources"][field][resource].as_str())
            .map(|text| match resource {
                "cpu" => millicores(nanocores(text)),
                _ => bytes(text) * 1000,
            })
            .collect();
        let unbounded = every && set.len() < containers.len();
        (!set.is_empty() && !unbounded).then(|| set.iter().sum())
    };
    pods["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|pod| {
            let meta = &pod["metadata"];
            let key = format!(
                "{}/{}",
                meta["namespace"].as_str().expect("ns"),
                meta["name"].as_str().expect("name")
            );
            let containers = pod["spec"]["containers"].as_array().expect("containers");
            let bounds = [
                total(containers, "requests", "cpu", false),
                total(containers, "limits", "cpu", true),
                total(containers, "requests", "memory", false),
                total(containers, "limits", "memory", true),
            ];
            (key, bounds)
        })
        .collect()
}

/// kubectl's `int64(float64(used) / float64(available) * 100)`, in milli.
fn percent(used_milli: u128, available_milli: u128) -> String {
    format!(
        "{}%",
        (used_milli as f64 / available_milli as f64 * 100.0) as i64
    )
}

/// Opens `hash` and waits until it is synced and its usage columns show.
async fn open_measured(browser: &Browser, base: &str, hash: &str, resource: &str) {
    browser
        .client
        .goto(&format!("{base}{hash}"))
        .await
        .unwrap_or_else(|e| panic!("open {hash}: {e}"));
    browser.wait_synced(resource, SYNC).await;
    metrics_state(browser, "shown").await;
    let line = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=metrics-state]"))
        .await
        .expect("the metrics hook");
    assert!(
        !line.is_displayed().await.expect("displayed"),
        "the hook is hidden while the columns show"
    );
}

/// The pods table's CPU and MEMORY are the API's; sorting by CPU orders
/// the rows as numbers.
async fn pods_match_the_api(browser: &Browser, server: &DemoServer, base: &str) {
    open_measured(browser, base, "#/core/v1/pods", "pods").await;
    let titles = browser.titles().await;
    assert!(
        titles.ends_with(&["CPU".to_string(), "MEMORY".to_string()]),
        "{titles:?}"
    );
    let measured = cells_match_the_api(browser, server, "pods", &["CPU", "MEMORY"], |top, _| {
        vec![top.cpu.clone(), top.memory.clone()]
    })
    .await;
    assert!(measured >= 5, "only {measured} drawn pods had metrics");

    browser
        .client
        .find(fantoccini::Locator::XPath(
            "//th[starts-with(normalize-space(.), 'CPU')]",
        ))
        .await
        .expect("the CPU title")
        .click()
        .await
        .expect("sort by CPU");
    browser
        .wait_for("rows sorted by CPU", WINDOWS, || async {
            let (rows, _) = table_cells(browser, &["CPU"]).await;
            let numbers: Vec<Option<u64>> = rows
                .iter()
                .map(|(_, cells)| cells[0].strip_suffix('m')?.parse().ok())
                .collect();
            let with_metrics = numbers.iter().flatten().count();
            let sorted = numbers.windows(2).all(|pair| pair[0] <= pair[1]);
            let distinct = numbers.first() != numbers.last();
            (with_metrics >= 5 && sorted && distinct).then_some(())
        })
        .await;
}

/// The wide view of pods adds the usage of the containers' requests and
/// limits.
async fn wide_pods_match_requests_and_limits(browser: &Browser, server: &DemoServer, base: &str) {
    open_measured(browser, base, "#/core/v1/pods?wide=1", "pods").await;
    let bounds = pod_bounds(server);
    let of = |used: u128, bound: Option<u128>| match bound {
        Some(bound) if bound > 0 => percent(used, bound),
        _ => String::new(),
    };
    let wide = ["CPU%REQ", "CPU%LIM", "MEM%REQ", "MEM%LIM"];
    let measured = cells_match_the_api(browser, server, "pods", &wide, |top, key| {
        let [cpu_requests, cpu_limits, memory_requests, memory_limits] = bounds[key];
        let memory = top.bytes * 1000;
        vec![
            of(top.milli, cpu_requests),
            of(top.milli, cpu_limits),
            of(memory, memory_requests),
            of(memory, memory_limits),
        ]
    })
    .await;
    assert!(measured >= 5, "only {measured} drawn pods had metrics");
    let (rows, _) = table_cells(browser, &wide).await;
    assert!(
        rows.iter()
            .any(|(_, cells)| cells[0].ends_with('%') && cells[3].ends_with('%')),
        "some pod's CPU request and memory limits are set: {rows:?}"
    );
}

/// The nodes table's CPU, CPU%, MEMORY, MEMORY% against allocatable.
async fn nodes_match_allocatable(browser: &Browser, server: &DemoServer, base: &str) {
    open_measured(browser, base, "#/core/v1/nodes", "nodes").await;
    let titles = browser.titles().await;
    let columns = ["CPU", "CPU%", "MEMORY", "MEMORY%"];
    assert!(titles.ends_with(&columns.map(String::from)), "{titles:?}");
    let allocatable = allocatable(server);
    let nodes = cells_match_the_api(browser, server, "nodes", &columns, |top, name| {
        let (cpu, memory) = allocatable[name];
        vec![
            top.cpu.clone(),
            percent(top.milli, cpu),
            top.memory.clone(),
            percent(top.bytes * 1000, memory * 1000),
        ]
    })
    .await;
    assert_eq!(nodes, allocatable.len(), "every node measured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_and_nodes_show_kubectl_top_columns() {
    let server = DemoServer::start(&["--seed", "23", "--pods", "30", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let base = format!("http://{}/", server.addr);
    let started = std::time::Instant::now();
    pods_match_the_api(&browser, &server, &base).await;
    wide_pods_match_requests_and_limits(&browser, &server, &base).await;
    nodes_match_allocatable(&browser, &server, &base).await;

    // About one list a window, never one per pod; none once the view changes.
    let asked = metrics_requests(&browser).await;
    let windows = started.elapsed().as_secs() / 15;
    assert!(
        asked >= 2 && asked <= windows + 8,
        "{asked} metrics requests for three views over {windows} windows"
    );
    // Each list rides the page's channel beside the watches.
    assert_eq!(
        metrics_fetches(&browser).await,
        0,
        "metrics lists off the channel"
    );
    browser
        .client
        .goto(&format!("{base}#/core/v1/configmaps"))
        .await
        .expect("configmaps");
    browser.wait_synced("configmaps", SYNC).await;
    assert!(browser
        .attr("[data-testid=metrics-state]", "data-state")
        .await
        .is_none());
    let left = metrics_requests(&browser).await;
    tokio::time::sleep(Duration::from_secs(17)).await;
    assert_eq!(
        metrics_requests(&browser).await,
        left,
        "no metrics request once configmaps are shown"
    );
}

/// The table shows no usage column and the page one quiet line (`state`,
/// `words`), and no error notice.
async fn one_quiet_line(browser: &Browser, state: &str, words: &str) {
    metrics_state(browser, state).await;
    let line = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=metrics-state]"))
        .await
        .expect("the metrics line");
    assert_eq!(line.text().await.expect("its text"), words);
    assert!(line.is_displayed().await.expect("shown"));
    let class = line.attr("class").await.expect("class").unwrap_or_default();
    assert!(
        !class.contains("error"),
        "a quiet line, not an error: {class}"
    );
    let titles = browser.titles().await;
    assert!(
        !titles
            .iter()
            .any(|t| t.starts_with("CPU") || t.starts_with("MEMORY")),
        "{titles:?}"
    );
    let errors = browser
        .script("return document.querySelectorAll('.notice.error, [data-testid=plain-error], [role=alert]').length;")
        .await;
    assert_eq!(errors.as_u64(), Some(0), "no error notice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_metrics_api_the_page_says_one_quiet_line() {
    let server = DemoServer::start(&["--seed", "23", "--pods", "30", "--no-metrics"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    one_quiet_line(
        &browser,
        "none",
        "this cluster serves no metrics API (metrics-server)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_metrics_api_names_the_permission() {
    let server = DemoServer::start(&[
        "--seed",
        "23",
        "--pods",
        "30",
        "--forbid",
        "pods.metrics.k8s.io",
    ]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;
    one_quiet_line(
        &browser,
        "forbidden",
        "cannot list pods.metrics.k8s.io: ask for the get/list verbs on pods.metrics.k8s.io",
    )
    .await;
    // Nodes' metrics are not forbidden: their columns show.
    browser.script("location.hash = '#/core/v1/nodes';").await;
    browser.wait_synced("nodes", SYNC).await;
    metrics_state(&browser, "shown").await;
    assert!(browser.titles().await.contains(&"CPU%".to_string()));
}
