//! For `history_truth.rs`: the processes of a team's recorded history as
//! users run them — `deltascope sim` ([`SimProcess`], its `/_sim/*`
//! controls), `deltascope record` ([`start_recorder`]) — and reading what
//! a read-only `deltascope serve` answers: its summary, one resource's
//! NDJSON history in windows ([`read_history`]: delta lines and [`Gap`]s)
//! and the versions stored twice in it ([`stored_twice`]).

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};
use deltascope_proxy::recorder::wall_now_ms;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use crate::serve_support::{req, send, Resp};

/// `deltascope sim` on a free loopback port (killed on drop).
pub struct SimProcess {
    _child: Child,
    pub addr: SocketAddr,
}

impl SimProcess {
    /// `deltascope sim --pods PODS --churn 0`, once it listens.
    pub async fn start(pods: usize) -> SimProcess {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_deltascope"))
            .args(["sim", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--pods", &pods.to_string(), "--churn", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("deltascope sim starts");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the sim never listened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        SimProcess {
            _child: child,
            addr,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `/_sim/*` control that must answer 200.
    pub async fn post(&self, path: &str, body: Value) -> Value {
        let resp = send(
            self.addr,
            req("POST", path)
                .header("Content-Type", "application/json")
                .body(&body.to_string()),
        )
        .await;
        assert_eq!(resp.status, 200, "{path} {body}: {}", resp.text());
        resp.json()
    }

    /// `POST /_sim/fault {"kind": KIND}`; prints what it did.
    pub async fn fault(&self, kind: &str) {
        let said = self
            .post("/_sim/fault", serde_json::json!({ "kind": kind }))
            .await;
        println!("fault {kind}: {}", said["effect"]);
    }

    /// `POST /_sim/churn`: changes a second from now on.
    pub async fn churn(&self, per_sec: f64) {
        self.post(
            "/_sim/churn",
            serde_json::json!({ "events_per_sec": per_sec }),
        )
        .await;
    }

    /// `GET /_sim/digest?resource=R&rv=RV`.
    pub async fn digest_at(&self, resource: &str, rv: &str) -> Resp {
        send(
            self.addr,
            req("GET", &format!("/_sim/digest?resource={resource}&rv={rv}")),
        )
        .await
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `deltascope record --upstream UPSTREAM --history HISTORY`, once it says
/// it records; its stderr appended to `log`, its stdout read on (so it
/// never blocks on it). Killed on drop.
pub async fn start_recorder(upstream: &str, history: &str, log: &Path) -> Child {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltascope"))
        .args(["record", "--upstream", upstream, "--history", history])
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("deltascope record starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("deltascope record says something within 20 s")
        .unwrap()
        .unwrap_or_default();
    assert!(
        line.starts_with("deltascope: recording "),
        "{line} (stderr in {})",
        log.display()
    );
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// A GET with the bearer `token`; a 503 (serve's database failing, as just
/// after an outage) is asked again for up to 20 s.
pub async fn serve_get(addr: SocketAddr, token: &str, target: &str) -> Resp {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = send(addr, req("GET", target).bearer(token)).await;
        if resp.status != 503 || Instant::now() > deadline {
            return resp;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until the record of every one of `resources` is known complete
/// through `through` (wall ms), as the summary's `throughMs` says.
pub async fn wait_complete_through(
    addr: SocketAddr,
    token: &str,
    resources: &[&str],
    through: i64,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    loop {
        let summary = serve_get(addr, token, "/_deltascope/history/summary").await;
        let summary = if summary.status == 200 {
            summary.json()
        } else {
            Value::Null
        };
        let done = resources.iter().all(|resource| {
            summary["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["resource"] == *resource)
                .and_then(|r| r["throughMs"].as_i64())
                .is_some_and(|ms| ms >= through)
        });
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the record never became complete through {}: {summary}",
            time_text(through)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Sleeps until the wall clock says `wall_ms`.
pub async fn sleep_until(wall_ms: i64) {
    let wait = wall_ms - wall_now_ms();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
}

/// RFC 3339 with ms, as the history routes take and give times.
pub fn time_text(ms: i64) -> String {
    format_rfc3339_millis(ms).unwrap()
}

/// A stored gap (wall ms).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gap {
    pub from: i64,
    pub to: i64,
    pub reason: String,
}

impl Gap {
    /// Whether `at` falls in it (edges included).
    pub fn holds(&self, at: i64) -> bool {
        self.from <= at && at <= self.to
    }
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}..{} ({} ms)",
            self.reason,
            time_text(self.from),
            time_text(self.to),
            self.to - self.from
        )
    }
}

/// A delta line's identity (uid, resourceVersion, deltaType) and time.
#[derive(Debug, Clone)]
pub struct DeltaLine {
    pub key: (String, String, String),
    pub ms: i64,
    pub tombstone: bool,
}

/// One resource's history from `since` to `until` (wall ms), read in
/// disjoint windows of `window` ms: its delta lines and its gaps (each
/// once, in time order).
pub async fn read_history(
    addr: SocketAddr,
    token: &str,
    resource: &str,
    (since, until): (i64, i64),
    window: i64,
) -> (Vec<DeltaLine>, Vec<Gap>) {
    let (mut deltas, mut gaps) = (Vec::new(), Vec::<Gap>::new());
    let mut from = since;
    while from <= until {
        let to = (from + window - 1).min(until);
        let target = format!(
            "/_deltascope/history?resource={resource}&since={}&until={}",
            time_text(from),
            time_text(to)
        );
        let resp = serve_get(addr, token, &target).await;
        assert_eq!(resp.status, 200, "{target}: {}", resp.text());
        for line in resp.text().lines() {
            let line: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{target}: a line that is not JSON ({e}): {line}"));
            if let Some(gap) = line.get("gap") {
                let ms = |edge: &str| parse_rfc3339_millis(gap[edge].as_str().unwrap()).unwrap();
                let gap = Gap {
                    from: ms("from"),
                    to: ms("to"),
                    reason: gap["reason"].as_str().unwrap().to_string(),
                };
                if !gaps.contains(&gap) {
                    gaps.push(gap);
                }
                continue;
            }
            let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
            deltas.push(DeltaLine {
                key: (
                    text(&line["object"]["metadata"]["uid"]),
                    text(&line["resourceVersion"]),
                    text(&line["deltaType"]),
                ),
                ms: parse_rfc3339_millis(line["time"].as_str().unwrap()).unwrap(),
                tombstone: line["tombstone"] == true,
            });
        }
        from = to + 1;
    }
    gaps.sort_by_key(|g| g.from);
    (deltas, gaps)
}

/// The delta lines stored more than once, with the times of each copy.
/// A version of an object (uid, resourceVersion) is stored once, whatever
/// its delta type — a relist's Replaced of an object the record already
/// holds at that version is a second copy — and so is its deletion.
pub fn stored_twice(deltas: &[DeltaLine]) -> Vec<String> {
    let mut seen: HashMap<(&str, &str, bool), Vec<&DeltaLine>> = HashMap::new();
    for delta in deltas {
        let (uid, rv, kind) = &delta.key;
        seen.entry((uid, rv, kind == "Deleted"))
            .or_default()
            .push(delta);
    }
    let mut twice: Vec<String> = seen
        .into_values()
        .filter(|copies| copies.len() > 1)
        .map(|copies| {
            let at: Vec<String> = copies
                .iter()
                .map(|d| {
                    let tombstone = if d.tombstone { " tombstone" } else { "" };
                    format!("{} {}{tombstone}", time_text(d.ms), d.key.2)
                })
                .collect();
            format!("uid {} rv {} at {at:?}", copies[0].key.0, copies[0].key.1)
        })
        .collect();
    twice.sort();
    twice
}
