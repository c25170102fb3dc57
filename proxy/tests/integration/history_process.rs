//! The recorder as a process of its own, as users run it: `deltascope
//! record` killed with SIGKILL and started again on the same SQLite file
//! (a `not-running` gap, nothing stored twice, every moment outside the
//! gaps the cluster's own state), and `deltascope serve` given a file that
//! is not a database (it serves live only, says why, and leaves the file
//! as it was) or a database slow to open (it serves at once, live only
//! until the database is there).

use crate::serve_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use deltascope_history::{ClusterId, HistoryQuery, HistoryStore, HistoryTarget, StateError};
use serve_support::*;
use tokio::io::AsyncBufReadExt;

/// `deltascope sim` on a free loopback port; its base URL.
async fn start_sim(churn: &str) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_deltascope"))
        .args([
            "sim",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--pods",
            "30",
            "--churn",
            churn,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("deltascope sim starts");
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the sim never listened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, url)
}

/// `deltascope record` into `db`, once it says it records.
async fn start_recorder(upstream: &str, db: &std::path::Path) -> tokio::process::Child {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_deltascope"))
        .args(["record", "--upstream", upstream, "--history"])
        .arg(format!("sqlite:{}", db.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("deltascope record starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line within 20 s")
        .unwrap()
        .unwrap_or_default();
    assert!(line.starts_with("deltascope: recording "), "{line}");
    child
}

/// The sim's `/_sim/stats`.
async fn sim_json(url: &str) -> serde_json::Value {
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    send(addr, req("GET", "/_sim/stats")).await.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_recorder_restarts_with_a_gap_and_stores_nothing_twice() {
    let dir = scratch_dir();
    let db = dir.join("history.sqlite");
    let (_sim, upstream) = start_sim("80").await;
    let sim_addr: std::net::SocketAddr = upstream.trim_start_matches("http://").parse().unwrap();
    let cluster = ClusterId(
        sim_json(&upstream).await["clusterUid"]
            .as_str()
            .unwrap()
            .to_string(),
    );

    let mut first = start_recorder(&upstream, &db).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    first.start_kill().unwrap(); // SIGKILL: no last watermark, nothing flushed
    first.wait().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut second = start_recorder(&upstream, &db).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    send(
        sim_addr,
        req("POST", "/_sim/churn").body("{\"events_per_sec\":0}"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    #[cfg(unix)]
    terminate(&second);
    tokio::time::timeout(Duration::from_secs(15), second.wait())
        .await
        .expect("record stops on SIGTERM")
        .unwrap();

    let store = std::sync::Arc::new(
        HistoryStore::open(&HistoryTarget::Sqlite(db.clone()))
            .await
            .unwrap(),
    );
    let mut receiver = store.lines(
        &cluster,
        HistoryQuery {
            resource: "pods".into(),
            namespace: None,
            name: None,
            since_ms: i64::MIN,
            until_ms: i64::MAX,
            newest: None,
        },
    );
    let mut lines = Vec::new();
    while let Some(text) = receiver.recv().await {
        for line in text.unwrap().lines() {
            lines.push(serde_json::from_str::<serde_json::Value>(line).unwrap());
        }
    }
    assert!(
        lines.iter().any(|l| l["gap"]["reason"] == "not-running"),
        "the time nothing recorded is a gap"
    );
    let mut seen = std::collections::HashSet::new();
    let mut times = Vec::new();
    for line in lines.iter().filter(|l| l.get("gap").is_none()) {
        let key = (
            line["object"]["metadata"]["uid"].to_string(),
            line["resourceVersion"].to_string(),
            line["deltaType"].to_string(),
        );
        assert!(seen.insert(key.clone()), "stored twice: {key:?}");
        times.push(
            deltascope_facts::time::parse_rfc3339_millis(line["time"].as_str().unwrap()).unwrap(),
        );
    }
    let (first_ms, last_ms) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let (mut matched, mut gaps) = (0, 0);
    for step in 0..=12 {
        let at = first_ms + (last_ms - first_ms) * step / 12;
        let past = match store.state_at(&cluster, "pods", None, at).await {
            Ok(past) => past,
            Err(StateError::InGap { .. }) => {
                gaps += 1;
                continue;
            }
            Err(other) => panic!("state at {at}: {other}"),
        };
        let mut objects = Vec::new();
        store
            .state_objects(&past, |batch| {
                for text in batch {
                    objects.push(serde_json::from_str::<serde_json::Value>(&text).unwrap());
                }
                true
            })
            .await
            .unwrap();
        let ours = digest_of_objects(objects.iter());
        let truth = send(
            sim_addr,
            req(
                "GET",
                &format!("/_sim/digest?resource=pods&rv={}", past.resource_version),
            ),
        )
        .await
        .json();
        assert_eq!(
            truth["digest"].as_str(),
            Some(ours.as_str()),
            "state at {at} (rv {})",
            past.resource_version
        );
        matched += 1;
    }
    assert!(
        matched >= 8,
        "{matched} moments matched, {gaps} fell in gaps"
    );
}

#[cfg(unix)]
fn terminate(child: &tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
}

#[tokio::test]
async fn a_file_that_is_not_a_database_leaves_serve_live_only_and_the_file_alone() {
    let dir = scratch_dir();
    let db = dir.join("history.sqlite");
    let garbage: Vec<u8> = (0..20_000u32).map(|i| (i * 31 + 7) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    let token = "corrupt-file-token-0123456789abcdef0123";
    let mut command = serve_binary(&["--demo", "--pods", "5", "--token", token, "--history"]);
    command
        .arg(format!("sqlite:{}", db.display()))
        .stderr(Stdio::piped());
    let mut served = Served::start(command).await;
    let stderr = served.child.stderr.take().unwrap();
    let mut errors = tokio::io::BufReader::new(stderr).lines();
    let said = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = errors.next_line().await {
            if line.contains("no history") {
                return line;
            }
        }
        String::new()
    })
    .await
    .expect("serve says why it keeps no history");
    assert!(
        said.contains("cannot be read") && said.contains("serving live only"),
        "{said}"
    );
    assert!(said.contains(&db.display().to_string()), "{said}");
    let pods = send(served.addr, req("GET", "/api/v1/pods").bearer(token)).await;
    assert_eq!(pods.status, 200, "the live view still works");
    let summary = send(
        served.addr,
        req("GET", "/_deltascope/history/summary").bearer(token),
    )
    .await
    .json();
    assert!(
        summary["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be read"),
        "{summary}"
    );
    send(
        served.addr,
        req("GET", "/_deltascope/history?resource=pods").bearer(token),
    )
    .await
    .assert_status(404);
    served.child.start_kill().unwrap();
    let _ = served.child.wait().await;
    assert_eq!(
        std::fs::read(&db).unwrap(),
        garbage,
        "the file is left as it was"
    );
}

/// A database that takes long to open (a large SQLite file is checked
/// whole first; here a "PostgreSQL" that accepts and never answers) does
/// not hold serve back: serve answers while the open goes on, says so, and
/// takes the open's outcome when it comes (this one fails after 5 s, and is
/// tried again).
#[tokio::test]
async fn serve_answers_while_its_database_is_still_opening() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut accepted = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            accepted.push(stream);
        }
    });
    let token = "slow-open-token-0123456789abcdef012345";
    let mut command = serve_binary(&["--demo", "--pods", "5", "--token", token, "--history"]);
    command
        .arg(format!("postgres://deltascope@127.0.0.1:{port}/history"))
        .stderr(Stdio::null());
    let served = Served::start(command).await;
    let unavailable = |summary: serde_json::Value| {
        summary["unavailable"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let summary = send(
        served.addr,
        req("GET", "/_deltascope/history/summary").bearer(token),
    )
    .await
    .json();
    let said = unavailable(summary);
    assert!(
        said.contains("opening the database") && said.contains("serving live only"),
        "serve is up while the database opens: {said}"
    );
    let pods = send(served.addr, req("GET", "/api/v1/pods").bearer(token)).await;
    assert_eq!(pods.status, 200, "the live view works meanwhile");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let summary = send(
            served.addr,
            req("GET", "/_deltascope/history/summary").bearer(token),
        )
        .await
        .json();
        if unavailable(summary).contains("trying again") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the open's failure reaches the summary"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    held.abort();
}
