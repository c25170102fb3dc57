//! `deltascope sim` as a process: the one-line listening announcement, the
//! CLI flags reaching the cluster, loopback-only binding, and the `restart`
//! fault dropping every connection while resourceVersions continue.

// The simulated cluster's own test helpers (an HTTP client and watch reader).
use crate::sim_support as support;

use std::process::Stdio;
use std::time::Duration;

use support::*;
use tokio::io::AsyncBufReadExt;

const BIN: &str = env!("CARGO_BIN_EXE_deltascope");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_announces_serves_and_restarts() {
    let mut child = tokio::process::Command::new(BIN)
        .args([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--pods",
            "30",
            "--churn",
            "0",
            "--seed",
            "3",
            "--rv-prefix",
            "r",
            "--minor-version",
            "31",
            "--event-ttl",
            "7",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("deltascope sim starts");
    let mut out = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), out.next_line())
        .await
        .expect("announcement in time")
        .expect("read")
        .expect("a line");
    let base = line
        .strip_prefix("deltascope sim: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    assert!(
        base.starts_with("http://127.0.0.1:") && !base.ends_with(":0"),
        "{base}"
    );

    let probe = start(quiet(1)).await; // only for its HTTP client
    let t = TestSim::through(&probe, &base);
    assert_eq!(t.get_json("/version").await["minor"], "31");
    assert_eq!(t.get_json("/_sim/events").await["events"]["ttl_secs"], 7);
    let (rv, pods) = t.list_all("/api/v1/pods").await;
    assert_eq!(pods.len(), 30);
    assert!(rv.starts_with('r'));

    let mut w = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    let answer = t.post("/_sim/fault", r#"{"kind": "restart"}"#).await;
    assert_eq!(answer.status, 200);
    loop {
        match w.next(Duration::from_secs(5)).await {
            Next::Line(_) => continue,
            Next::Broken | Next::End => break,
            Next::Garbage(g) => panic!("garbage {g}"),
            Next::Timeout => panic!("the watch survived a restart"),
        }
    }
    // Reconnects work and resourceVersions carry on from where they were.
    let mut after = None;
    for _ in 0..50 {
        // the pooled connection from before the restart may be reset
        if let Some(r) = t.try_get("/api/v1/pods?limit=1").await {
            if r.status == 200 {
                after = Some(rv_of(&r.json()));
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = after.expect("serving again after the restart");
    let num = |s: &str| s.trim_start_matches('r').parse::<u64>().unwrap_or(0);
    assert!(num(&after) >= num(&rv), "{after} < {rv}");
    let _ = child.kill().await;
}

#[tokio::test]
async fn an_event_ttl_out_of_range_is_a_usage_error() {
    for ttl in ["0", "86401", "soon"] {
        let out = tokio::process::Command::new(BIN)
            .args(["sim", "--listen", "127.0.0.1:0", "--event-ttl", ttl])
            .output()
            .await
            .expect("deltascope runs");
        assert_eq!(
            out.status.code(),
            Some(2),
            "--event-ttl {ttl}: a usage error"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--event-ttl"), "{stderr}");
    }
}

#[tokio::test]
async fn standalone_refuses_a_public_address() {
    let out = tokio::process::Command::new(BIN)
        .args(["sim", "--listen", "0.0.0.0:18999"])
        .output()
        .await
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("loopback") && err.contains("0.0.0.0:18999"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing announced");
}
