//! Pod logs in the page, in headless Chromium against `serve
//! --upstream` in front of `deltascope sim`, each after more than six
//! resources are open (so the log streams share the page's channel with
//! their watches, never a connection each), judged by the real `kubectl
//! logs` pointed at the same sim (kubectl sends no bearer token over plain
//! HTTP, so it cannot be pointed at serve itself):
//! - `l` on the pods table opens the selected pod's logs; a followed
//!   container shows exactly the lines `kubectl logs --timestamps` prints
//!   for the same range, and new ones as they are written; a search
//!   counts, marks and steps to its matches; Esc leaves the search field,
//!   then goes back; an unknown
//!   container is said in the apiserver's words;
//! - a Deployment's pods interleave by timestamp, each pod's lines equal to
//!   its own `kubectl logs`, and a pod added by scaling joins while followed;
//! - `previous` shows the crashed run's lines (as `kubectl logs --previous`),
//!   and a container with no previous run says so;
//! - the memory bound evicts and says so;
//! - the channel cut mid-follow (a relay in front of serve drops every
//!   connection): the break is marked and no line is lost or doubled.
//!
//! The view is virtualised, so tests read ranges small enough to be drawn
//! whole (a tall window, `tail=N`). Screenshots are saved as test artefacts.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use support::chain::{kubectl, start_serve_upstream, start_sim};
use support::live::{Cluster, SYNC};
use support::logs::{log_attr, open_more_than_six};
use support::relay::Relay;
use support::sign_in::link_through;
use support::{Browser, ChildGuard};

const LINES: Duration = Duration::from_secs(40);

/// What a test runs against: the sim, serve in front of it, and the
/// kubectl that judges.
struct Setup {
    _sim: ChildGuard,
    _serve: ChildGuard,
    kubectl: Kubectl,
}

/// `deltascope sim` with 30 calm pods, `serve --upstream` in front of it,
/// and a tall browser signed in through `base` (serve itself, or a relay
/// given its address). The cluster is read and controlled at the sim.
async fn demo(relay: Option<&Relay>) -> (Setup, Browser, Cluster, String) {
    let (sim, sim_addr) = start_sim(&["--pods", "30", "--churn", "0"]);
    let allow = relay.map(|r| r.addr.to_string());
    let mut args = Vec::new();
    if let Some(allow) = &allow {
        args.extend(["--allow-host", allow.as_str()]);
    }
    let (serve, login_url) = start_serve_upstream(&format!("http://{sim_addr}"), &args);
    let rest = login_url
        .strip_prefix("http://")
        .expect("serve's URL is http");
    let (serve_addr, _) = rest.split_once('/').expect("serve's URL has a path");
    let serve_addr: SocketAddr = serve_addr.parse().expect("serve's address");
    let base = match relay {
        Some(relay) => {
            relay.point_at(serve_addr);
            format!("http://{}/", relay.addr)
        }
        None => format!("http://{serve_addr}/"),
    };
    let browser = Browser::start().await;
    browser
        .client
        .set_window_size(1400, 2400)
        .await
        .expect("a tall window");
    browser
        .client
        .goto(&link_through(&base, &login_url))
        .await
        .expect("sign in");
    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    let setup = Setup {
        _sim: sim,
        _serve: serve,
        kubectl: Kubectl::new(sim_addr),
    };
    (setup, browser, cluster, base)
}

/// The real kubectl against the sim, with a config directory of its own.
struct Kubectl {
    server: String,
    home: PathBuf,
}

impl Kubectl {
    fn new(sim: SocketAddr) -> Kubectl {
        let home = std::env::temp_dir().join(format!(
            "deltascope-logs-kubectl-{}-{}",
            std::process::id(),
            sim.port()
        ));
        std::fs::create_dir_all(&home).expect("kubectl's home");
        Kubectl {
            server: format!("http://{sim}"),
            home,
        }
    }

    /// `kubectl logs ARGS --timestamps` as (timestamp, text) lines.
    fn logs(&self, args: &[&str]) -> Vec<(String, String)> {
        let out = std::process::Command::new(kubectl())
            .arg(format!("--server={}", self.server))
            .arg("logs")
            .args(args)
            .arg("--timestamps")
            .env("HOME", &self.home)
            .env("KUBECONFIG", self.home.join("config"))
            .output()
            .expect("run kubectl");
        assert!(
            out.status.success(),
            "kubectl logs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let (ts, text) = l.split_once(' ').unwrap_or((l, ""));
                (ts.to_string(), text.to_string())
            })
            .collect()
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// One drawn row: (source, timestamp, text), or ("break", source, text).
async fn drawn(browser: &Browser) -> Vec<(String, String, String)> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=log-line], [data-testid=log-break]'))\
             .map(l => l.dataset.testid === 'log-break' ? ['break', l.dataset.source, l.textContent]\
                  : [l.dataset.source, l.dataset.ts, l.textContent]);",
        )
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

/// The (timestamp, text) lines drawn for `source`.
async fn lines_of(browser: &Browser, source: &str) -> Vec<(String, String)> {
    drawn(browser)
        .await
        .into_iter()
        .filter(|(s, _, _)| s == source)
        .map(|(_, ts, text)| (ts, text))
        .collect()
}

async fn wait_lines(browser: &Browser, at_least: usize) -> usize {
    browser
        .wait_for(&format!("at least {at_least} log lines"), LINES, || async {
            let held: usize = log_attr(browser, "data-lines").await?.parse().ok()?;
            (held >= at_least).then_some(held)
        })
        .await
}

/// `kubectl`'s lines between the first and last of `shown` (inclusive)
/// equal `shown`: none lost, none doubled, none added.
/// The text of the first element `selector` finds, once there is one.
async fn wait_text(browser: &Browser, what: &str, selector: &str) -> String {
    let script = format!(
        "const e = document.querySelector({}); return e ? e.textContent : null;",
        serde_json::to_string(selector).unwrap_or_default()
    );
    browser
        .wait_for(what, SYNC, || async {
            let text = browser.script(&script).await;
            text.as_str().map(str::to_owned)
        })
        .await
}

fn same_as_kubectl(shown: &[(String, String)], kubectl: &[(String, String)], what: &str) {
    assert!(!shown.is_empty(), "{what}: the page shows lines");
    let (first, last) = (&shown[0].0, &shown[shown.len() - 1].0);
    let range: Vec<_> = kubectl
        .iter()
        .filter(|(ts, _)| ts >= first && ts <= last)
        .cloned()
        .collect();
    assert_eq!(
        shown,
        range.as_slice(),
        "{what}: the page's lines against kubectl logs"
    );
}

/// A running pod of a ReplicaSet whose containers never restarted: (namespace, name, containers).
fn calm_pod(cluster: &Cluster) -> (String, String, Vec<String>) {
    let pods = cluster.get("/api/v1/pods");
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            p["status"]["phase"] == "Running"
                && p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
                && p["status"]["containerStatuses"]
                    .as_array()
                    .is_some_and(|cs| {
                        cs.iter()
                            .all(|c| c["restartCount"] == 0 && c["ready"] == true)
                    })
        })
        .map(|p| {
            let names = p["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect();
            (
                p["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                p["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                names,
            )
        })
        .expect("a calm running pod in the demo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_pod_shows_what_kubectl_logs_prints() {
    let (setup, browser, cluster, base) = demo(None).await;
    let kubectl = &setup.kubectl;
    open_more_than_six(&browser, &base, &cluster).await;

    // `l` on the selected row opens its logs.
    let first = browser
        .wait_for("a pod row", SYNC, || async {
            browser.attr("tr[data-key]", "data-key").await
        })
        .await;
    browser
        .script(
            "document.querySelector('tr[data-key]').dispatchEvent(new MouseEvent('click', {bubbles: true}));\
             document.dispatchEvent(new KeyboardEvent('keydown', {key: 'l', bubbles: true}));",
        )
        .await;
    browser
        .wait_for("the logs address", SYNC, || async {
            let hash = browser.script("return location.hash;").await;
            hash.as_str()
                .filter(|h| *h == format!("#/core/v1/pods/{first}/log"))
                .map(|_| ())
        })
        .await;
    browser
        .wait_for("a stream per container", SYNC, || async {
            log_attr(&browser, "data-sources")
                .await
                .filter(|n| n != "0")
        })
        .await;

    // One container, followed: the same lines as kubectl, and new ones.
    let (namespace, pod, containers) = calm_pod(&cluster);
    let container = &containers[0];
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods/{namespace}/{pod}/log?container={container}&tail=20"
        ))
        .await
        .expect("open one container's logs");
    let held = wait_lines(&browser, 20).await;
    wait_lines(&browser, held + 3).await;
    assert_eq!(
        log_attr(&browser, "data-following").await.as_deref(),
        Some("true")
    );
    let source = format!("{pod}/{container}");
    let shown = lines_of(&browser, &source).await;
    let printed = kubectl.logs(&["-n", &namespace, &pod, "-c", container, "--tail=200"]);
    same_as_kubectl(&shown, &printed, "one followed container");
    browser.screenshot("logs-followed-container.png").await;

    // Search: every held line containing a word is counted, marked, and
    // stepped to (all held lines are drawn here).
    let word = shown[shown.len() / 2]
        .1
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|w| w.len())
        .unwrap_or_default()
        .to_string();
    browser.type_into("[data-testid=log-search]", &word).await;
    browser
        .wait_for("the matches counted", SYNC, || async {
            // Lines keep arriving: count them again each time.
            let want = lines_of(&browser, &source)
                .await
                .iter()
                .filter(|(_, text)| text.to_lowercase().contains(&word.to_lowercase()))
                .count();
            let count = browser
                .attr("[data-testid=log-matches]", "data-count")
                .await?;
            (want > 0 && count == want.to_string()).then_some(())
        })
        .await;
    browser.click("[data-testid=log-next-match]").await;
    let current = browser
        .script(
            "const c = document.querySelector('.log-line.current');\
             return c ? [c.textContent, c.querySelectorAll('mark').length] : null;",
        )
        .await;
    assert!(
        current[0]
            .as_str()
            .is_some_and(|t| t.to_lowercase().contains(&word.to_lowercase()))
            && current[1].as_u64().is_some_and(|n| n >= 1),
        "the current match shows {word:?} marked: {current}"
    );

    // Esc leaves the search field, then goes back to the logs `l` opened.
    let escape = "const e = document.activeElement || document.body;\
                  e.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}));\
                  return [location.hash, document.activeElement.tagName];";
    browser.click("[data-testid=log-search]").await;
    let left_field = browser.script(escape).await;
    assert_eq!(
        left_field[1], "BODY",
        "Esc leaves the search field: {left_field}"
    );
    assert!(
        left_field[0].as_str().is_some_and(|h| h.contains(&pod)),
        "{left_field}"
    );
    browser.script(escape).await;
    browser
        .wait_for("Esc going back", SYNC, || async {
            let hash = browser.script("return location.hash;").await;
            (hash.as_str() == Some(&format!("#/core/v1/pods/{first}/log"))).then_some(())
        })
        .await;

    // An unknown container: the apiserver's words, not an empty log.
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods/{namespace}/{pod}/log?container=no-such-container"
        ))
        .await
        .expect("open an unknown container's logs");
    let error = wait_text(
        &browser,
        "the unknown container's error",
        "[data-testid=log-error][data-state=error]",
    )
    .await;
    browser.screenshot("logs-unknown-container.png").await;
    assert!(
        error.contains("no container") && error.contains("is not valid for pod"),
        "the error names the container in the apiserver's words: {error}"
    );
    assert_eq!(
        log_attr(&browser, "data-following").await.as_deref(),
        Some("false")
    );

    // A pod that is not in the cluster (a kept link to a deleted pod, a
    // mistyped name): said so, not an empty "no lines".
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods/{namespace}/no-such-pod/log"))
        .await
        .expect("open a missing pod's logs");
    let said = wait_text(
        &browser,
        "the missing pod said so",
        "[data-testid=log-no-pods]",
    )
    .await;
    browser.screenshot("logs-missing-pod.png").await;
    assert!(
        said.contains(&format!(
            "pod {namespace}/no-such-pod is not in the cluster"
        )),
        "the view names the pod and says it is not there: {said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployments_pods_interleave_and_a_new_pod_joins() {
    let (setup, browser, cluster, base) = demo(None).await;
    let kubectl = &setup.kubectl;
    open_more_than_six(&browser, &base, &cluster).await;
    let deployments = cluster.get("/apis/apps/v1/deployments");
    // Of two to four replicas, all running (a container still being
    // created has no logs yet: kubectl says so and fails).
    let all_running = |d: &Value| {
        let namespace = d["metadata"]["namespace"].as_str().unwrap_or_default();
        let app = d["spec"]["selector"]["matchLabels"]["app"]
            .as_str()
            .unwrap_or_default();
        let pods = cluster.get(&format!(
            "/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}"
        ));
        pods["items"].as_array().is_some_and(|pods| {
            !pods.is_empty()
                && pods.iter().all(|p| {
                    p["status"]["phase"] == "Running"
                        && p["status"]["containerStatuses"]
                            .as_array()
                            .is_some_and(|cs| cs.iter().all(|c| c["state"]["running"].is_object()))
                })
        })
    };
    let deployment = deployments["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| {
            d["spec"]["replicas"]
                .as_u64()
                .is_some_and(|n| (2..=4).contains(&n))
                && all_running(d)
        })
        .expect("a deployment of two to four replicas, all running")
        .clone();
    let namespace = deployment["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = deployment["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let replicas = deployment["spec"]["replicas"].as_u64().unwrap_or(0) as usize;
    let selector: Vec<String> = deployment["spec"]["selector"]["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    let selector = selector.join(",");
    let pods_of = |cluster: &Cluster| -> Vec<Value> {
        let path = format!(
            "/api/v1/namespaces/{namespace}/pods?labelSelector={}",
            selector.replace('=', "%3D").replace(',', "%2C")
        );
        cluster.get(&path)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let pods = pods_of(&cluster);
    let streams: usize = pods
        .iter()
        .map(|p| {
            p["spec"]["initContainers"].as_array().map_or(0, Vec::len)
                + p["spec"]["containers"].as_array().map_or(0, Vec::len)
        })
        .sum();
    assert!(pods.len() >= replicas, "{name}'s pods: {}", pods.len());

    browser
        .client
        .goto(&format!(
            "{base}#/apps/v1/deployments/{namespace}/{name}/log?tail=5"
        ))
        .await
        .expect("open the deployment's logs");
    browser
        .wait_for("a stream per pod and container", SYNC, || async {
            log_attr(&browser, "data-sources")
                .await
                .filter(|n| *n == streams.to_string())
        })
        .await;
    let held = wait_lines(&browser, 5).await;
    wait_lines(&browser, held + 2 * pods.len()).await;
    let rows = drawn(&browser).await;
    let stamps: Vec<&String> = rows
        .iter()
        .filter(|r| r.0 != "break")
        .map(|r| &r.1)
        .collect();
    assert!(
        stamps.windows(2).all(|w| w[0] <= w[1]),
        "interleaved by timestamp: {stamps:?}"
    );
    for pod in &pods {
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        for container in pod["spec"]["containers"].as_array().into_iter().flatten() {
            let container = container["name"].as_str().unwrap_or_default();
            let shown = lines_of(&browser, &format!("{pod_name}/{container}")).await;
            let printed =
                kubectl.logs(&["-n", &namespace, pod_name, "-c", container, "--tail=100"]);
            same_as_kubectl(&shown, &printed, &format!("{pod_name}/{container}"));
        }
    }
    browser.screenshot("logs-deployment.png").await;

    // More pods (the sim adds them to random workloads) until this one has a
    // new one: it joins the followed view.
    let mut total = 30;
    while pods_of(&cluster).len() == pods.len() {
        total += 10;
        assert!(total <= 200, "{name} never got another pod");
        cluster.post("/_sim/scale", json!({"pods": total}));
    }
    browser
        .wait_for("the new pod's streams", SYNC, || async {
            let now: usize = log_attr(&browser, "data-sources").await?.parse().ok()?;
            (now > streams).then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previous_runs_and_the_memory_bound() {
    let (setup, browser, cluster, base) = demo(None).await;
    let kubectl = &setup.kubectl;
    open_more_than_six(&browser, &base, &cluster).await;
    let pods = cluster.get("/api/v1/pods");
    let restarted = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|p| {
            let status = p["status"]["containerStatuses"]
                .as_array()?
                .iter()
                .find(|c| {
                    c["restartCount"].as_u64().is_some_and(|n| n > 0)
                        && c["lastState"]["terminated"].is_object()
                })?;
            Some((
                p["metadata"]["namespace"].as_str()?.to_string(),
                p["metadata"]["name"].as_str()?.to_string(),
                status["name"].as_str()?.to_string(),
            ))
        })
        .expect("a restarted container in the demo");
    let (namespace, pod, container) = restarted;
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods/{namespace}/{pod}/log?container={container}&previous=true&tail=40"))
        .await
        .expect("open the previous run's logs");
    browser
        .wait_for("the previous run read to its end", LINES, || async {
            (log_attr(&browser, "data-following").await? == "false"
                && log_attr(&browser, "data-lines").await? != "0")
                .then_some(())
        })
        .await;
    let shown = lines_of(&browser, &format!("{pod}/{container}")).await;
    let printed = kubectl.logs(&[
        "-n",
        &namespace,
        &pod,
        "-c",
        &container,
        "--previous",
        "--tail=40",
    ]);
    assert_eq!(
        shown, printed,
        "the previous run's last 40 lines against kubectl logs --previous"
    );
    browser.screenshot("logs-previous.png").await;

    // A container that never restarted has no previous run, and says so.
    let (namespace, pod, containers) = calm_pod(&cluster);
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods/{namespace}/{pod}/log?container={}&previous=true",
            containers[0]
        ))
        .await
        .expect("open a previous run that is not there");
    let error = browser
        .wait_for("the no-previous-run error", SYNC, || async {
            let text = browser
                .script("const e = document.querySelector('[data-testid=log-error]'); return e ? e.textContent : null;")
                .await;
            text.as_str().map(str::to_owned)
        })
        .await;
    assert!(error.contains("no previous run"), "{error}");

    // The memory bound: 50 lines at most, the rest counted and said.
    cluster.post("/_sim/logs", json!({"lines_per_sec": 400}));
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods/{namespace}/{pod}/log?tail=10"
        ))
        .await
        .expect("follow all of a pod's containers");
    wait_lines(&browser, 10).await;
    browser.choose("[data-testid=log-bound]", "50").await;
    browser
        .wait_for("lines evicted by the bound", LINES, || async {
            let dropped: u64 = log_attr(&browser, "data-dropped").await?.parse().ok()?;
            (dropped > 0).then_some(())
        })
        .await;
    let held: usize = log_attr(&browser, "data-lines")
        .await
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    assert!(held <= 50, "at most 50 lines held: {held}");
    let said = browser
        .script("const e = document.querySelector('[data-testid=log-evicted]'); return e ? e.textContent : '';")
        .await;
    assert!(
        said.as_str()
            .is_some_and(|t| t.contains("dropped by the bound")),
        "{said}"
    );
    browser.screenshot("logs-bound.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_break_mid_follow_loses_and_doubles_nothing() {
    let relay = Relay::start().await;
    let (setup, browser, cluster, base) = demo(Some(&relay)).await;
    let kubectl = &setup.kubectl;
    open_more_than_six(&browser, &base, &cluster).await;
    cluster.post("/_sim/logs", json!({"lines_per_sec": 120}));
    let (namespace, pod, containers) = calm_pod(&cluster);
    let container = &containers[0];
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods/{namespace}/{pod}/log?container={container}&tail=5"
        ))
        .await
        .expect("follow one container");
    let held = wait_lines(&browser, 5).await;
    wait_lines(&browser, held + 5).await;
    assert!(relay.cut() > 0, "the relay carried the page's connections");
    browser
        .wait_for("the break marked", SYNC, || async {
            browser.attr("[data-testid=log-break]", "data-source").await
        })
        .await;
    let held = wait_lines(&browser, 0).await;
    wait_lines(&browser, held + 10).await;
    let source = format!("{pod}/{container}");
    let shown = lines_of(&browser, &source).await;
    let stamps: Vec<&String> = shown.iter().map(|(ts, _)| ts).collect();
    assert!(
        stamps.windows(2).all(|w| w[0] < w[1]),
        "no line twice: {stamps:?}"
    );
    let printed = kubectl.logs(&["-n", &namespace, &pod, "-c", container, "--tail=2000"]);
    same_as_kubectl(&shown, &printed, "across the break");
    browser.screenshot("logs-break.png").await;
}
