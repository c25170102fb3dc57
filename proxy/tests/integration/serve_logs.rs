//! Pod logs judged by the real `kubectl logs`: the same lines straight from
//! `deltascope sim` and through the real `kubectl proxy`; `deltascope serve`
//! in front of the sim answers kubectl's requests with the same bytes
//! (sent with the bearer token, which kubectl sends to no plain-http server) — `-c`, `--timestamps`,
//! `--since-time`, `--previous`, `--tail`, `-l` for many pods, `-f` — and
//! every refusal with the apiserver's words. `serve --demo` streams a
//! followed log chunked, as `text/plain`, unredacted.

use crate::kubectl;
use crate::serve_support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use deltascope_proxy::serve::Upstream;
use deltascope_sim::{Sim, SimConfig};
use kubectl::{kubectl, kubectl_proxy};
use serde_json::Value;
use serve_support::*;
use tokio::io::AsyncBufReadExt;

const TOKEN: &str = "logs-token-0123456789abcdef0123456789abcdef";
/// One way to reach the cluster: a server URL and maybe a token.
struct Path {
    name: &'static str,
    server: String,
    token: Option<&'static str>,
    home: PathBuf,
}

impl Path {
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(kubectl());
        c.arg(format!("--server={}", self.server));
        if let Some(token) = self.token {
            c.arg(format!("--token={token}"));
        }
        c.args(args)
            .env("HOME", &self.home)
            .env("KUBECONFIG", self.home.join("config"))
            .kill_on_drop(true);
        c
    }

    /// (success, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().await.expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn lines(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args).await;
        assert!(ok, "{}: kubectl {args:?} failed: {err}", self.name);
        out
    }
}

/// Lines stamped before `cutoff` (RFC 3339 strings of equal length compare as times).
fn before(text: &str, cutoff: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.split(' ').next().is_some_and(|t| t < cutoff))
        .map(str::to_string)
        .collect()
}

/// `kubectl logs -l --prefix` lines stamped before `cutoff`, sorted: kubectl
/// reads the selected pods concurrently and prints lines as they arrive, so
/// pods interleave differently from run to run (sorted: by prefix, then
/// timestamp).
fn prefixed_before(text: &str, cutoff: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|t| t < cutoff))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

fn stamp_now() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let secs = nanos / 1_000_000_000;
    let whole = deltascope_facts::time::format_rfc3339(secs).unwrap_or_default();
    format!(
        "{}.{:09}Z",
        whole.trim_end_matches('Z'),
        nanos % 1_000_000_000
    )
}

async fn start_sim() -> (Sim, String) {
    let sim = Sim::start(SimConfig {
        initial_pods: 24,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    });
    let app = sim.api_router().merge(sim.control_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (sim, format!("http://{addr}"))
}

fn pods(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_reads_the_same_lines_on_every_path() {
    let home = std::env::temp_dir().join(format!("deltascope-logs-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("temp home");
    let (_sim, sim_url) = start_sim().await;
    let (_proxy_child, proxy_url) = kubectl_proxy(&sim_url, &home).await;
    let serve = start_proxy(config_with_token(Upstream::Url(sim_url.clone()), TOKEN)).await;
    let direct = Path {
        name: "sim",
        server: sim_url.clone(),
        token: None,
        home: home.clone(),
    };
    // kubectl sends no bearer token to a plain-http server, so serve is
    // judged with the requests kubectl makes, sent with the token.
    let paths = [Path {
        name: "kubectl proxy",
        server: proxy_url,
        token: None,
        home: home.clone(),
    }];
    let serve_addr = serve.local_addr();
    let via_serve = |path: String| async move {
        let resp = send(serve_addr, req("GET", &path).bearer(TOKEN)).await;
        assert_eq!(resp.status, 200, "serve {path}: {}", resp.text());
        assert_eq!(resp.header("content-type"), Some("text/plain"));
        resp.text()
    };

    // 40 lines a second per container for a while.
    let (ok, _, err) = direct.run(&["get", "--raw", "/version"]).await;
    assert!(ok, "{err}");
    let rate = reqwest_post(&sim_url, "/_sim/logs", r#"{"lines_per_sec": 1920}"#).await;
    assert!(rate.contains("per_container_per_sec"), "{rate}");
    let from = stamp_now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cutoff = stamp_now();
    let since = format!("{}Z", &from[..19]);

    let list: Value =
        serde_json::from_str(&direct.lines(&["get", "pods", "-A", "-o", "json"]).await)
            .expect("pod list");
    let all = pods(&list);
    let running = all
        .iter()
        .find(|p| {
            p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                && p["status"]["containerStatuses"][0]["lastState"]["terminated"].is_object()
        })
        .or_else(|| {
            all.iter()
                .find(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
        })
        .expect("a running pod");
    let ns = running["metadata"]["namespace"]
        .as_str()
        .expect("ns")
        .to_string();
    let pod = running["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    let container = running["spec"]["containers"][0]["name"]
        .as_str()
        .expect("container")
        .to_string();
    let app = running["metadata"]["labels"]["app"]
        .as_str()
        .expect("app")
        .to_string();

    let timed = [
        "logs",
        "-n",
        &ns,
        &pod,
        "-c",
        &container,
        "--timestamps",
        "--since-time",
        &since,
    ];
    let want = before(&direct.lines(&timed).await, &cutoff);
    assert!(
        want.len() >= 20,
        "{} lines since {since}: {want:?}",
        want.len()
    );
    let shipper = [
        "logs",
        "-n",
        &ns,
        &pod,
        "-c",
        "log-shipper",
        "--timestamps",
        "--since-time",
        &since,
    ];
    let want_shipper = before(&direct.lines(&shipper).await, &cutoff);
    let selector = format!("app={app}");
    let by_label = [
        "logs",
        "-n",
        &ns,
        "-l",
        &selector,
        "--timestamps",
        "--since-time",
        &since,
        "--prefix",
        "--tail=-1",
    ];
    let want_label = prefixed_before(&direct.lines(&by_label).await, &cutoff);
    assert!(!want_label.is_empty());
    for path in &paths {
        assert_eq!(
            before(&path.lines(&timed).await, &cutoff),
            want,
            "{}",
            path.name
        );
        assert_eq!(
            before(&path.lines(&shipper).await, &cutoff),
            want_shipper,
            "{}",
            path.name
        );
        let got = prefixed_before(&path.lines(&by_label).await, &cutoff);
        assert_eq!(got, want_label, "{} -l", path.name);
    }

    let served = via_serve(format!(
        "/api/v1/namespaces/{ns}/pods/{pod}/log?container={container}&timestamps=true&sinceTime={since}"
    ))
    .await;
    assert_eq!(before(&served, &cutoff), want, "serve");

    // --tail and --since on every path: counts and order.
    for path in std::iter::once(&direct).chain(&paths) {
        let tail = path
            .lines(&["logs", "-n", &ns, &pod, "-c", &container, "--tail=7"])
            .await;
        assert_eq!(tail.lines().count(), 7, "{}", path.name);
        let recent = path
            .lines(&[
                "logs",
                "-n",
                &ns,
                &pod,
                "-c",
                &container,
                "--since=1s",
                "--timestamps",
            ])
            .await;
        let stamps: Vec<&str> = recent.lines().filter_map(|l| l.split(' ').next()).collect();
        assert!(
            stamps.windows(2).all(|w| w[0] < w[1]),
            "{}: in order",
            path.name
        );
        assert!(
            stamps.len() <= 60,
            "{}: --since=1s gave {}",
            path.name,
            stamps.len()
        );
    }

    // --previous: the last run, identical everywhere; never for a container that did not restart.
    let restarted = all.iter().find(|p| {
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["containerID"].is_string()
    });
    if let Some(p) = restarted {
        let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        let c = p["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap_or_default();
        let args = [
            "logs",
            "-n",
            ns,
            name,
            "-c",
            c,
            "--previous",
            "--timestamps",
        ];
        let want = direct.lines(&args).await;
        assert!(!want.is_empty(), "the previous run of {name} has lines");
        let served = via_serve(format!(
            "/api/v1/namespaces/{ns}/pods/{name}/log?container={c}&previous=true&timestamps=true"
        ))
        .await;
        assert_eq!(served, want, "serve --previous");
        for path in &paths {
            assert_eq!(path.lines(&args).await, want, "{} --previous", path.name);
        }
    } else {
        panic!("the demo has no restarted container: {}", all.len());
    }
    let never = all
        .iter()
        .find(|p| p["status"]["containerStatuses"][1]["restartCount"] == 0)
        .expect("a sidecar that never restarted");
    let never_name = never["metadata"]["name"].as_str().unwrap_or_default();
    let never_ns = never["metadata"]["namespace"].as_str().unwrap_or_default();
    for path in std::iter::once(&direct).chain(&paths) {
        let (ok, _, err) = path
            .run(&[
                "logs",
                "-n",
                never_ns,
                never_name,
                "-c",
                "log-shipper",
                "--previous",
            ])
            .await;
        assert!(!ok);
        assert!(
            err.contains(&format!(
                "previous terminated container \"log-shipper\" in pod \"{never_name}\" not found"
            )),
            "{}: {err}",
            path.name
        );
        let (ok, _, err) = path
            .run(&["logs", "-n", never_ns, never_name, "-c", "nosuch"])
            .await;
        assert!(!ok);
        assert!(
            err.contains(&format!(
                "container nosuch is not valid for pod {never_name}"
            )),
            "{}: {err}",
            path.name
        );
        let (ok, _, err) = path.run(&["logs", "-n", never_ns, "gone-pod"]).await;
        assert!(!ok);
        assert!(
            err.contains("pods \"gone-pod\" not found"),
            "{}: {err}",
            path.name
        );
    }

    // -f streams new lines as they are written, on every path.
    for path in std::iter::once(&direct).chain(&paths) {
        let mut child = path
            .command(&[
                "logs",
                "-f",
                "-n",
                &ns,
                &pod,
                "-c",
                &container,
                "--timestamps",
                "--tail=1",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl logs -f");
        let started = stamp_now();
        let mut out = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut newer = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while newer < 10 && tokio::time::Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_secs(2), out.next_line()).await {
                Ok(Ok(Some(line))) if line.as_str() > started.as_str() => newer += 1,
                Ok(Ok(Some(_))) => {}
                _ => break,
            }
        }
        assert!(newer >= 10, "{}: {newer} lines followed", path.name);
        let _ = child.kill().await;
    }
}

/// A crash-looping or pending pod's refusals, and a followed log through
/// `serve --demo`: chunked `text/plain`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_demo_streams_a_followed_log_and_passes_refusals() {
    let mut config = config(Upstream::Demo(SimConfig {
        initial_pods: 12,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    }));
    config.token = Some(TOKEN.into());
    let proxy = start_proxy(config).await;
    let addr = proxy.local_addr();
    let list = send(addr, req("GET", "/api/v1/pods").bearer(TOKEN))
        .await
        .json();
    let pod = &pods(&list)[0];
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let base = format!("/api/v1/namespaces/{ns}/pods/{name}/log");

    let many = send(addr, req("GET", &base).bearer(TOKEN)).await;
    let status = many.assert_status(400);
    let c0 = pod["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        status["message"],
        format!(
            "a container name must be specified for pod {name}, choose one of: [{c0} log-shipper]"
        )
    );

    let mut stream = open(
        addr,
        req(
            "GET",
            &format!("{base}?container=log-shipper&follow=true&timestamps=true"),
        )
        .bearer(TOKEN),
    )
    .await;
    let mut head = Vec::new();
    read_occurrences(&mut stream, &mut head, "Z ", 3, Duration::from_secs(8)).await;
    let text = String::from_utf8_lossy(&head).to_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(text.contains("content-type: text/plain"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
}

async fn reqwest_post(base: &str, path: &str, body: &str) -> String {
    let url: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("addr");
    send(url, req("POST", path).body(body)).await.text()
}
