//! The real kubectl (every pinned version, 1.27 to 1.33) against the simulated
//! cluster: `get pods -A` rows compared with the store, label selectors,
//! `-o json`, `api-resources`, `get --raw` of a watch and `get -w` seeing
//! ADDED/MODIFIED/DELETED under churn.

use crate::support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use deltascope_sim::SimConfig;
use serde_json::Value;
use support::*;
use tokio::io::AsyncBufReadExt;

struct Kubectl {
    bin: PathBuf,
    server: String,
    home: PathBuf,
}

impl Kubectl {
    fn new(minor: u32, t: &TestSim) -> Kubectl {
        let bin = PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}"));
        assert!(bin.exists(), "{} is not installed", bin.display());
        let home = std::env::temp_dir().join(format!(
            "deltascope-sim-kubectl-{}-{}",
            std::process::id(),
            t.addr.port()
        ));
        std::fs::create_dir_all(&home).expect("temp home");
        Kubectl {
            bin,
            server: t.base.clone(),
            home,
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.bin);
        c.arg(format!("--server={}", self.server))
            .arg(format!("--cache-dir={}", self.home.join("cache").display()))
            .args(args)
            .env("HOME", &self.home)
            .env("KUBECONFIG", self.home.join("config"))
            .kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = tokio::time::timeout(Duration::from_secs(30), self.command(args).output())
            .await
            .expect("kubectl timed out")
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn expected_status(pod: &Value) -> String {
    let mut status = pod["status"]["phase"].as_str().unwrap_or("").to_string();
    if let Some(cs) = pod["status"]["containerStatuses"].as_array() {
        for c in cs.iter().rev() {
            if let Some(r) = c["state"]["waiting"]["reason"].as_str() {
                status = r.to_string();
            }
        }
    }
    status
}

async fn check_version(minor: u32) {
    let t = start(SimConfig {
        minor_version: minor,
        ..quiet(60)
    })
    .await;
    let k = Kubectl::new(minor, &t);

    // get pods -A: every row matches the store.
    let (_, pods) = t.list_all("/api/v1/pods").await;
    let out = k.run(&["get", "pods", "-A"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "1.{minor}"
    );
    let mut rows = BTreeSet::new();
    for line in lines {
        let cols: Vec<&str> = line.split_whitespace().collect();
        rows.insert((
            cols[0].to_string(),
            cols[1].to_string(),
            cols[2].to_string(),
            cols[3].to_string(),
        ));
    }
    let expected: BTreeSet<_> = pods
        .iter()
        .map(|p| {
            let cs = p["status"]["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ready = cs.iter().filter(|c| c["ready"] == true).count();
            let total = p["spec"]["containers"].as_array().map_or(0, Vec::len);
            (
                p["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                format!("{ready}/{total}"),
                expected_status(p),
            )
        })
        .collect();
    assert_eq!(rows, expected, "kubectl 1.{minor} get pods -A");

    // Label selector in one namespace.
    let out = k
        .run(&["get", "pods", "-n", "shop", "-l", "app=cart", "-o", "name"])
        .await;
    let got: BTreeSet<&str> = out.lines().collect();
    let want: BTreeSet<String> = pods
        .iter()
        .filter(|p| {
            p["metadata"]["namespace"] == "shop" && p["metadata"]["labels"]["app"] == "cart"
        })
        .map(|p| format!("pod/{}", p["metadata"]["name"].as_str().unwrap_or("")))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(
        got,
        want.iter().map(String::as_str).collect(),
        "1.{minor} -l app=cart"
    );

    // -o json of deployments.
    let out = k.run(&["get", "deploy", "-A", "-o", "json"]).await;
    let list: Value = serde_json::from_str(&out).expect("kubectl -o json");
    let (_, deploys) = t.list_all("/apis/apps/v1/deployments").await;
    assert_eq!(
        digest_of(list["items"].as_array().map_or(&[][..], |v| v)),
        digest_of(&deploys)
    );

    // Discovery.
    let out = k.run(&["api-resources"]).await;
    for r in [
        "pods",
        "deployments",
        "replicasets",
        "jobs",
        "widgets",
        "namespaces",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{r} "))),
            "1.{minor} api-resources lacks {r}:\n{out}"
        );
    }
    let out = k.run(&["get", "widgets", "-n", "shop"]).await;
    assert!(
        out.starts_with("NAME") && out.contains("SIZE") && out.contains("PHASE"),
        "{out}"
    );

    // A raw watch.
    let out = k
        .run(&[
            "get",
            "--raw",
            "/api/v1/namespaces/shop/pods?watch=1&timeoutSeconds=1",
        ])
        .await;
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    assert!(!events.is_empty() && events.iter().all(|e| e["type"] == "ADDED"));

    // get -w under churn sees every kind of change.
    let mut child = k
        .command(&["get", "pods", "-A", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl -w");
    let stdout = child.stdout.take().expect("stdout");
    t.post("/_sim/churn", r#"{"events_per_sec": 150}"#).await;
    let mut reader = tokio::io::BufReader::new(stdout).lines();
    let mut seen = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while seen.len() < 3 {
        let line = tokio::time::timeout_at(deadline, reader.next_line())
            .await
            .unwrap_or_else(|_| panic!("1.{minor} -w saw only {seen:?}"))
            .expect("read")
            .unwrap_or_else(|| panic!("kubectl -w exited; saw {seen:?}"));
        if let Some(kind) = line.split_whitespace().next() {
            if ["ADDED", "MODIFIED", "DELETED"].contains(&kind) {
                seen.insert(kind.to_string());
            }
        }
    }
    // kubectl -w exits cleanly when the server closes the watch.
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    let drain = tokio::spawn(async move { while let Ok(Some(_)) = reader.next_line().await {} });
    t.post("/_sim/fault", r#"{"kind": "drop-watches"}"#).await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap_or_else(|_| panic!("1.{minor} get -w did not exit when the watch closed"))
        .expect("wait");
    assert!(status.success(), "1.{minor} get -w exited with {status}");
    let _ = drain.await;
    let _ = std::fs::remove_dir_all(&k.home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27() {
    check_version(27).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_28() {
    check_version(28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_29() {
    check_version(29).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_31() {
    check_version(31).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_30() {
    check_version(30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_32() {
    check_version(32).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33() {
    check_version(33).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatcher_kubectl_follows_server_version() {
    let t = start(SimConfig {
        minor_version: 30,
        ..quiet(5)
    })
    .await;
    let out = tokio::process::Command::new("/usr/bin/kubectl")
        .args([&format!("--server={}", t.base), "version", "-o", "json"])
        .env("KUBECONFIG", "/dev/null")
        .output()
        .await
        .expect("kubectl");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["serverVersion"]["minor"], "30");
}
