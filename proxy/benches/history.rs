//! Figures for the recorded history (`cargo xtask bench --only history`):
//!
//! - ingest: deltas/s the history store takes on one runtime thread while
//!   pods churn (their status changing), into SQLite and into PostgreSQL,
//!   against appending the same watch events' raw bytes to a file;
//! - bytes on disk per recorded status change, against the JSON of the
//!   object it changed;
//! - reading back: one object's whole history, and one namespace's changes
//!   in a 10-minute window, against parsing the same versions' JSON from
//!   memory (the least any reader of them must do);
//! - the state of every pod at a past moment through serve's route, against
//!   a live LIST of them through serve (both over HTTP, bodies read whole);
//! - serve's memory while it records the pods, against the same serve
//!   without a recorder.
//!
//! `cargo bench -p deltascope-proxy --bench history -- [--quick] [--out F] [--bin B]`;
//! PostgreSQL figures need `DELTASCOPE_TEST_POSTGRES` (`cargo xtask bench`
//! starts a private server).

mod common;
mod history_common;
#[path = "../../benches/common.rs"]
mod pods;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use common::{Figure, Options};
use deltascope_history::{
    ClusterId, HistoryQuery, HistoryStore, HistoryTarget, MarksQuery, WatermarkRecord, Write,
};
use deltascope_informer::{DeltaType, JsonValue};
use history_common::{fresh_postgres, parse_ms, record};
use serde_json::Value;

/// Minutes of churn the updates stand for: every pod's status changes
/// about once in this span, as a busy cluster's do.
const CHURN_ROUNDS: usize = 3;

fn main() {
    let started = Instant::now();
    let options = Options::parse("history");
    let pods = if options.quick { 5_000 } else { 50_000 };
    let mut figures = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = scratch("deltascope-bench-history");
    let sqlite = HistoryTarget::Sqlite(dir.join("history.sqlite"));
    figures.extend(runtime.block_on(store_figures("sqlite", &sqlite, pods, &dir, 20_000.0)));
    match std::env::var("DELTASCOPE_TEST_POSTGRES") {
        Ok(server) => {
            let target = runtime.block_on(fresh_postgres(&server, "ds_bench"));
            figures
                .extend(runtime.block_on(store_figures("postgres", &target, pods, &dir, 10_000.0)));
        }
        Err(_) => eprintln!("history: DELTASCOPE_TEST_POSTGRES is not set: no PostgreSQL figures"),
    }
    figures.extend(serve_figures(
        &options,
        if options.quick { 5_000 } else { 100_000 },
        &dir,
    ));
    for figure in &figures {
        figure.print();
    }
    common::write("history", &options.out, options.quick, started, &figures);
    let _ = std::fs::remove_dir_all(&dir);
}

fn scratch(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Pod `i`'s status after its `round`th change: a restart, a probe's
/// transition and a new start time, as the kubelet writes them.
fn churned(i: usize, rv: u64, round: usize) -> Value {
    let mut pod = pods::pod(i, rv);
    let status = &mut pod["status"];
    status["containerStatuses"][0]["restartCount"] = Value::from(round);
    status["containerStatuses"][0]["state"]["running"]["startedAt"] =
        Value::from(format!("2026-01-01T01:{:02}:{:02}Z", round % 60, i % 60));
    status["conditions"][1]["lastTransitionTime"] = Value::from(format!(
        "2026-01-01T01:{:02}:{:02}Z",
        round % 60,
        (i + 7) % 60
    ));
    pod
}

/// A watch event line's object, parsed as the recorder's informer parses
/// it.
fn event_object(line: &[u8]) -> JsonValue {
    let event = JsonValue::parse(line).expect("a watch event");
    event
        .root()
        .get("object")
        .expect("an object")
        .to_owned_value()
}

async fn store_figures(
    engine: &str,
    target: &HistoryTarget,
    pods: usize,
    dir: &std::path::Path,
    ingest_goal: f64,
) -> Vec<Figure> {
    let store = std::sync::Arc::new(HistoryStore::open(target).await.expect("open the store"));
    let cluster = ClusterId("bench-cluster".into());
    let mut rv = 1_000u64;
    let start_ms = 1_790_000_000_000i64;
    // The initial list.
    let mut last: Vec<JsonValue> = Vec::with_capacity(pods);
    let mut batch = Vec::with_capacity(1_000);
    for i in 0..pods {
        rv += 1;
        let pod = JsonValue::parse(pods::pod(i, rv).to_string().as_bytes()).expect("JSON");
        batch.push(record(pod.clone(), DeltaType::Replaced, start_ms, None));
        last.push(pod);
        if batch.len() == 1_000 {
            store.write(&cluster, &batch).await.expect("write");
            batch.clear();
        }
    }
    store.write(&cluster, &batch).await.expect("write");
    batch.clear();
    let before = store.used_bytes().await.expect("size");

    // The churn: every pod's status changes CHURN_ROUNDS times, 10 ms apart
    // in recorded time, as watch event lines made before the clock starts.
    // Timed: each line parsed into the compact form (as the recorder's
    // informer does), handed with the version before it, written in
    // batches of 1,000.
    let mut wire = Vec::new();
    // (pod index, time, the object's text) of each event, in order.
    let mut events: Vec<(usize, i64, String)> = Vec::with_capacity(pods * CHURN_ROUNDS);
    let mut at = start_ms + 1_000;
    for round in 1..=CHURN_ROUNDS {
        for i in 0..pods {
            rv += 1;
            at += 10;
            let text = churned(i, rv, round).to_string();
            wire.extend_from_slice(b"{\"type\":\"MODIFIED\",\"object\":");
            wire.extend_from_slice(text.as_bytes());
            wire.extend_from_slice(b"}\n");
            events.push((i, at, text));
        }
    }
    let object_bytes = wire.len() as f64 / events.len() as f64;
    let clock = Instant::now();
    for (line, (i, at, _)) in wire.split(|b| *b == b'\n').zip(&events) {
        let pod = event_object(line);
        let previous = std::mem::replace(&mut last[*i], pod.clone());
        batch.push(record(pod, DeltaType::Updated, *at, Some(previous)));
        if batch.len() == 1_000 {
            store.write(&cluster, &batch).await.expect("write");
            batch.clear();
        }
    }
    store.write(&cluster, &batch).await.expect("write");
    let ours_secs = clock.elapsed().as_secs_f64();
    store
        .write(
            &cluster,
            &[Write::Watermark(WatermarkRecord {
                resource: "pods".into(),
                store_resource_version: rv.to_string(),
                through_ms: at + 1,
            })],
        )
        .await
        .expect("write");
    let after = store.used_bytes().await.expect("size");
    let raw_path = dir.join(format!("raw-{engine}.ndjson"));
    let clock = Instant::now();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&raw_path).expect("a file"));
        for line in wire.split_inclusive(|b| *b == b'\n') {
            file.write_all(line).expect("append");
        }
        file.flush().expect("flush");
        file.get_ref().sync_data().expect("sync");
    }
    let reference_secs = clock.elapsed().as_secs_f64();
    let n = events.len() as f64;
    let (ours_rate, reference_rate) = (n / ours_secs, n / reference_secs);
    let per_delta = (after.saturating_sub(before)) as f64 / n;
    let mut figures = vec![
        Figure {
            id: format!("history-ingest-{engine}"),
            figure: format!("deltas/s the {engine} history takes while {pods} pods churn (status changes, one runtime thread)"),
            unit: "deltas/s",
            ours: ours_rate,
            reference: reference_rate,
            reference_name: "appending the same watch events' bytes to a file".into(),
            ratio: ours_rate / reference_rate,
            goal: format!("≥ {ingest_goal:.0}/s"),
            met: ours_rate >= ingest_goal,
            note: format!("{n:.0} watch events, each parsed into the compact form, diffed on its tape against the version before (a full every 8), written in batches of 1,000"),
        },
        Figure {
            id: format!("history-bytes-{engine}"),
            figure: format!("bytes on disk per recorded pod status change ({engine})"),
            unit: "bytes",
            ours: per_delta,
            reference: object_bytes,
            reference_name: "the JSON of the changed pod".into(),
            ratio: per_delta / object_bytes,
            goal: "≤ 0.1×".into(),
            met: per_delta / object_bytes <= 0.1,
            note: format!("growth of the database over {n:.0} changes, indexes included"),
        },
    ];

    // Reading back: one object's history; one namespace in 10 minutes.
    let name = format!("web-7d9f8c6b5-{:05}", pods / 2);
    let one = HistoryQuery {
        resource: "pods".into(),
        namespace: None,
        name: Some(name.clone()),
        since_ms: i64::MIN,
        until_ms: i64::MAX,
    };
    let (ours_ms, lines) = time_lines(&store, &cluster, one).await;
    let index = pods / 2;
    let versions: Vec<&str> = events
        .iter()
        .filter(|(i, _, _)| *i == index)
        .map(|(_, _, text)| text.as_str())
        .collect();
    let reference_ms = parse_ms(&versions);
    figures.push(Figure {
        id: format!("history-object-{engine}"),
        figure: format!("one pod's whole history ({lines} versions) from {engine}"),
        unit: "ms",
        ours: ours_ms,
        reference: reference_ms,
        reference_name: "parsing those versions' JSON from memory".into(),
        ratio: ours_ms / reference_ms,
        goal: "≤ 20 ms".into(),
        met: ours_ms <= 20.0,
        note: format!(
            "{} deltas held; the goal is at 10 million",
            pods * (CHURN_ROUNDS + 1)
        ),
    });
    let window = HistoryQuery {
        resource: "pods".into(),
        namespace: Some("team-3".into()),
        name: None,
        since_ms: start_ms + 1_000 + 10 * pods as i64,
        until_ms: start_ms + 1_000 + 10 * pods as i64 + 600_000,
    };
    let (ours_ms, lines) = time_lines(&store, &cluster, window.clone()).await;
    // Pods in namespace team-N are those with index % 20 == N.
    let in_window: Vec<&str> = events
        .iter()
        .filter(|(i, at, _)| i % 20 == 3 && *at >= window.since_ms && *at <= window.until_ms)
        .map(|(_, _, text)| text.as_str())
        .collect();
    let reference_ms = parse_ms(&in_window);
    figures.push(Figure {
        id: format!("history-namespace-{engine}"),
        figure: format!(
            "one namespace's changes in a 10-minute window ({lines} deltas) from {engine}"
        ),
        unit: "ms",
        ours: ours_ms,
        reference: reference_ms,
        reference_name: "parsing those versions' JSON from memory".into(),
        ratio: ours_ms / reference_ms,
        goal: "≤ 100 ms".into(),
        met: ours_ms <= 100.0,
        note: format!(
            "{} deltas held; the goal is at 10 million",
            pods * (CHURN_ROUNDS + 1)
        ),
    });
    figures.push(marks_figure(&store, &cluster, engine, (start_ms, at + 1)).await);
    store.close().await;
    figures
}

/// The timeline's marks over the whole record (600 buckets, as one view's
/// pixel columns), against the database counting the same rows ungrouped.
async fn marks_figure(
    store: &HistoryStore,
    cluster: &ClusterId,
    engine: &str,
    (since_ms, until_ms): (i64, i64),
) -> Figure {
    let query = MarksQuery {
        resource: "pods".into(),
        namespace: None,
        since_ms,
        until_ms,
        buckets: 600,
    };
    let (mut ours_ms, mut reference_ms, mut counted) = (f64::MAX, f64::MAX, 0);
    for _ in 0..5 {
        let clock = Instant::now();
        let marks = store
            .marks(cluster, &query)
            .await
            .expect("marks")
            .expect("pods");
        ours_ms = ours_ms.min(clock.elapsed().as_secs_f64() * 1e3);
        counted = marks.buckets.iter().map(|(_, c)| c.total()).sum::<u64>();
        let clock = Instant::now();
        let bare = store
            .count_deltas(cluster, "pods", (since_ms, until_ms))
            .await
            .expect("count");
        reference_ms = reference_ms.min(clock.elapsed().as_secs_f64() * 1e3);
        assert_eq!(bare, counted, "the marks count every delta once");
    }
    Figure {
        id: format!("history-marks-{engine}"),
        figure: format!(
            "the timeline's marks of {counted} recorded deltas in 600 buckets from {engine}"
        ),
        unit: "ms",
        ours: ours_ms,
        reference: reference_ms,
        reference_name: "the database counting the same rows, ungrouped".into(),
        ratio: ours_ms / reference_ms,
        goal: "≤ 300 ms".into(),
        met: ours_ms <= 300.0,
        note: "GET /_deltascope/history/marks's query; the page's goal is at 1 million deltas"
            .into(),
    }
}

async fn time_lines(
    store: &std::sync::Arc<HistoryStore>,
    cluster: &ClusterId,
    query: HistoryQuery,
) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..5 {
        let clock = Instant::now();
        let mut receiver = store.lines(cluster, query.clone());
        count = 0;
        while let Some(line) = receiver.recv().await {
            line.expect("a line");
            count += 1;
        }
        best = best.min(clock.elapsed().as_secs_f64() * 1e3);
    }
    (best, count)
}

/// The state of `pods` pods at a past moment through serve, against a live
/// LIST through serve; and serve's memory recording them.
fn serve_figures(options: &Options, pods: usize, dir: &std::path::Path) -> Vec<Figure> {
    let (_sim, upstream) = common::start_sim(&options.bin, pods);
    let db = format!("sqlite:{}", dir.join("serve.sqlite").display());
    let (recording, url) = common::start_serve_with(&options.bin, &upstream, &["--history", &db]);
    let (plain, plain_url) =
        common::start_serve_with(&options.bin, &upstream, &["--history", "off"]);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let client = common::client();
        let fetch = |target: String| {
            let client = client.clone();
            async move {
                let clock = Instant::now();
                let response = client.request(common::get(&target)).await.expect("a response");
                let status = response.status();
                let body = http_body_util::BodyExt::collect(response.into_body())
                    .await
                    .expect("a body")
                    .to_bytes();
                (status.as_u16(), body, clock.elapsed().as_secs_f64() * 1e3)
            }
        };
        // Wait until the recorder holds every object of the (quiet) sim, so
        // that its memory is read once recording is steady; the moment asked
        // for is when the pods' list was recorded.
        let (_, body, _) = fetch(format!("{upstream}/_sim/stats")).await;
        let sim_stats: Value = serde_json::from_slice(&body).unwrap_or_default();
        let deadline = Instant::now() + std::time::Duration::from_secs(600);
        let listed_ms = loop {
            let (_, body, _) = fetch(format!("{url}/_deltascope/history/summary")).await;
            let summary: Value = serde_json::from_slice(&body).unwrap_or_default();
            let row = |name: &str| {
                summary["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|r| r["resource"] == name)
                    .cloned()
                    .unwrap_or_default()
            };
            let pods_row = row("pods");
            let all_held = sim_stats["objects"].as_object().is_some_and(|objects| {
                objects.iter().all(|(name, count)| {
                    row(name)["deltas"].as_u64().unwrap_or(0) >= count.as_u64().unwrap_or(0)
                })
            });
            if pods_row["deltas"].as_u64().unwrap_or(0) as usize >= pods && all_held {
                break pods_row["lastMs"].as_i64().unwrap_or_default();
            }
            assert!(Instant::now() < deadline, "the recorder never held {pods} pods: {summary}");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        };
        let at = deltascope_facts::time::format_rfc3339_millis(listed_ms).unwrap_or_default();
        let (mut ours, mut reference) = (f64::MAX, f64::MAX);
        let mut items = 0;
        for _ in 0..3 {
            let (status, body, ms) =
                fetch(format!("{url}/_deltascope/history/state?resource=pods&at={at}")).await;
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body[..body.len().min(300)]));
            items = serde_json::from_slice::<Value>(&body).map(|v| v["items"].as_array().map_or(0, Vec::len)).unwrap_or(0);
            ours = ours.min(ms);
            let (_, _, ms) = fetch(format!("{url}/api/v1/pods")).await;
            reference = reference.min(ms);
        }
        let (rss_recording, rss_plain) = (recording.rss() as f64, plain.rss() as f64);
        // the most serve held at once (VmHWM): the first lists included
        let hwm_recording = std::fs::read_to_string(format!("/proc/{}/status", recording.pid()))
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
                line.split_whitespace().nth(1)?.parse::<f64>().ok()
            })
            .map_or(0.0, |kb| kb * 1024.0);
        // everything the recorder holds: the sim has other objects than pods
        // (ReplicaSets, Deployments, Services, … about 1.2 a pod), all recorded
        let (_, body, _) = fetch(format!("{url}/_deltascope/history/summary")).await;
        let objects: u64 = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|summary| {
                let rows = summary["resources"].as_array()?;
                Some(rows.iter().map(|r| r["deltas"].as_u64().unwrap_or(0)).sum())
            })
            .unwrap_or(0)
            .max(1);
        let _ = plain_url;
        vec![
            Figure {
                id: "history-state".into(),
                figure: format!("the state of {items} pods at a past moment through serve"),
                unit: "ms",
                ours,
                reference,
                reference_name: "a live LIST of them through serve".into(),
                ratio: ours / reference,
                goal: "≤ 1.0×".into(),
                met: ours <= reference,
                note: "both over HTTP, bodies read whole; the state rebuilt from fulls and patches".into(),
            },
            Figure {
                id: "history-serve-memory".into(),
                figure: format!("serve's memory while recording {pods} pods"),
                unit: "MiB",
                ours: rss_recording / 1_048_576.0,
                reference: rss_plain / 1_048_576.0,
                reference_name: "the same serve with --history off".into(),
                ratio: rss_recording / rss_plain,
                goal: "—".into(),
                met: true,
                note: format!(
                    "{:.0} bytes per recorded pod over the plain serve; {objects} objects recorded \
                     (the pods and the sim's other objects), {:.0} bytes each: the recorder's \
                     informers hold each as a compact tape, with their stores' indexes",
                    (rss_recording - rss_plain) / pods as f64,
                    (rss_recording - rss_plain) / objects as f64
                ),
            },
            Figure {
                id: "history-serve-memory-peak".into(),
                figure: format!("serve's peak memory while recording {pods} pods (VmHWM, the first lists included)"),
                unit: "MiB",
                ours: hwm_recording / 1_048_576.0,
                reference: rss_recording / 1_048_576.0,
                reference_name: "its memory once recording (VmRSS)".into(),
                ratio: hwm_recording / rss_recording,
                goal: "—".into(),
                met: true,
                note: "the lists run 4 at a time, in pages of 500; the writer's queue holds at most 16 MiB of objects".into(),
            },
        ]
    })
}
