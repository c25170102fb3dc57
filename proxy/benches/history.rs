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
use std::sync::Arc;
use std::time::Instant;

use common::{Figure, HttpClient, Options, Proc};
use deltascope_history::{
    ClusterId, HistoryQuery, HistoryStore, HistoryTarget, MarksQuery, WatermarkRecord, Write,
};
use deltascope_informer::{DeltaType, JsonValue};
use history_common::{fresh_postgres, parse_ms, read_figure, record, timed_get, Batches};
use serde_json::Value;

/// The `deltascope` process's allocator, so the store's figures are its own.
#[global_allocator]
static ALLOCATOR: deltascope_proxy::allocator::ProcessAllocator =
    deltascope_proxy::allocator::ProcessAllocator;

/// Minutes of churn the updates stand for: every pod's status changes
/// about once in this span, as a busy cluster's do.
const CHURN_ROUNDS: usize = 3;
/// When the initial list is recorded (ms).
const START_MS: i64 = 1_790_000_000_000;

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

/// The figures of one store (`engine`) filled with `pods` pods and their
/// churn: ingest, bytes per change, reads back and the timeline's marks.
async fn store_figures(
    engine: &str,
    target: &HistoryTarget,
    pods: usize,
    dir: &std::path::Path,
    ingest_goal: f64,
) -> Vec<Figure> {
    let store = Arc::new(HistoryStore::open(target).await.expect("open the store"));
    let cluster = ClusterId("bench-cluster".into());
    let mut rv = 1_000u64;
    let mut last = list_pods(&store, &cluster, pods, &mut rv).await;
    let before = store.used_bytes().await.expect("size");
    let churn = Churn::make(pods, rv);
    let ours_secs = ingest(&store, &cluster, &churn, &mut last).await;
    store
        .write(
            &cluster,
            &[Write::Watermark(WatermarkRecord {
                resource: "pods".into(),
                store_resource_version: churn.rv.to_string(),
                through_ms: churn.at + 1,
            })],
        )
        .await
        .expect("write");
    let after = store.used_bytes().await.expect("size");
    let reference_secs = append_secs(&dir.join(format!("raw-{engine}.ndjson")), &churn.wire);
    let grown = after.saturating_sub(before);
    let mut figures = Vec::from(ingest_figures(
        engine,
        pods,
        &churn,
        (ours_secs, reference_secs),
        grown,
        ingest_goal,
    ));
    history_common::settle(target).await;
    let reads = Reads {
        store: &store,
        cluster: &cluster,
        engine,
        pods,
        events: &churn.events,
    };
    figures.push(reads.object_figure().await);
    figures.push(reads.namespace_figure().await);
    figures.push(marks_figure(&store, &cluster, engine, (START_MS, churn.at + 1)).await);
    store.close().await;
    figures
}

/// The initial list of `pods` pods, written at [`START_MS`] from
/// resourceVersion `rv` on; the pods as listed.
async fn list_pods(
    store: &HistoryStore,
    cluster: &ClusterId,
    pods: usize,
    rv: &mut u64,
) -> Vec<JsonValue> {
    let mut last: Vec<JsonValue> = Vec::with_capacity(pods);
    let mut batches = Batches::new(store, cluster);
    for i in 0..pods {
        *rv += 1;
        let pod = JsonValue::parse(pods::pod(i, *rv).to_string().as_bytes()).expect("JSON");
        batches
            .push(record(pod.clone(), DeltaType::Replaced, START_MS, None))
            .await;
        last.push(pod);
    }
    batches.flush_with(None).await;
    last
}

/// The churn: every pod's status changes [`CHURN_ROUNDS`] times, 10 ms
/// apart in recorded time, as watch event lines made before the clock
/// starts.
struct Churn {
    /// The watch event lines.
    wire: Vec<u8>,
    /// (pod index, time, the object's text) of each event, in order.
    events: Vec<(usize, i64, String)>,
    /// The last event's resourceVersion and time.
    rv: u64,
    at: i64,
}

impl Churn {
    /// The churn of `pods` pods listed up to resourceVersion `rv`.
    fn make(pods: usize, mut rv: u64) -> Churn {
        let mut wire = Vec::new();
        let mut events = Vec::with_capacity(pods * CHURN_ROUNDS);
        let mut at = START_MS + 1_000;
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
        Churn {
            wire,
            events,
            rv,
            at,
        }
    }
}

/// Seconds the store takes the churn: each line parsed into the compact
/// form (as the recorder's informer does), handed with the version before
/// it (`last`, each pod's), written in batches of 1,000.
async fn ingest(
    store: &HistoryStore,
    cluster: &ClusterId,
    churn: &Churn,
    last: &mut [JsonValue],
) -> f64 {
    let mut batches = Batches::new(store, cluster);
    let clock = Instant::now();
    for (line, (i, at, _)) in churn.wire.split(|b| *b == b'\n').zip(&churn.events) {
        let pod = event_object(line);
        let previous = std::mem::replace(&mut last[*i], pod.clone());
        batches
            .push(record(pod, DeltaType::Updated, *at, Some(previous)))
            .await;
    }
    batches.flush_with(None).await;
    clock.elapsed().as_secs_f64()
}

/// Seconds appending the watch event lines `wire` to a file at `path`
/// takes, synced.
fn append_secs(path: &std::path::Path, wire: &[u8]) -> f64 {
    let clock = Instant::now();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("a file"));
        for line in wire.split_inclusive(|b| *b == b'\n') {
            file.write_all(line).expect("append");
        }
        file.flush().expect("flush");
        file.get_ref().sync_data().expect("sync");
    }
    clock.elapsed().as_secs_f64()
}

/// The ingest rate (from the seconds the store and the file took the
/// churn) and the bytes on disk per change (the store `grown` by them).
fn ingest_figures(
    engine: &str,
    pods: usize,
    churn: &Churn,
    (ours_secs, reference_secs): (f64, f64),
    grown: u64,
    ingest_goal: f64,
) -> [Figure; 2] {
    let n = churn.events.len() as f64;
    let object_bytes = churn.wire.len() as f64 / n;
    let (ours_rate, reference_rate) = (n / ours_secs, n / reference_secs);
    let per_delta = grown as f64 / n;
    [
        Figure {
            id: format!("history-ingest-{engine}"),
            figure: format!("recorded history: deltas/s the {engine} history takes while {pods} pods churn (status changes, one runtime thread)"),
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
            figure: format!("recorded history: bytes on disk per recorded pod status change ({engine})"),
            unit: "bytes",
            ours: per_delta,
            reference: object_bytes,
            reference_name: "the JSON of the changed pod".into(),
            ratio: per_delta / object_bytes,
            goal: "≤ 0.1×".into(),
            met: per_delta / object_bytes <= 0.1,
            note: format!("growth of the database over {n:.0} changes, indexes included"),
        },
    ]
}

/// The store filled by the list and the churn's `events`, for the read
/// figures.
struct Reads<'a> {
    store: &'a Arc<HistoryStore>,
    cluster: &'a ClusterId,
    engine: &'a str,
    pods: usize,
    events: &'a [(usize, i64, String)],
}

impl Reads<'_> {
    /// The best of 5 reads of `query` (ms) and the lines read; then the
    /// best of 5 parses of the versions among the events (pod index, time)
    /// `wanted` picks (ms).
    async fn time(
        &self,
        query: HistoryQuery,
        wanted: impl Fn(usize, i64) -> bool,
    ) -> (f64, usize, f64) {
        let (ours_ms, lines) = time_lines(self.store, self.cluster, query).await;
        let versions: Vec<&str> = self
            .events
            .iter()
            .filter(|(i, at, _)| wanted(*i, *at))
            .map(|(_, _, text)| text.as_str())
            .collect();
        (ours_ms, lines, parse_ms(&versions))
    }

    /// The note of the read figures: the deltas the store holds.
    fn held(&self) -> String {
        format!(
            "{} deltas held; the goal is at 10 million",
            self.pods * (CHURN_ROUNDS + 1)
        )
    }

    /// One pod's whole history.
    async fn object_figure(&self) -> Figure {
        let index = self.pods / 2;
        let one = HistoryQuery {
            resource: "pods".into(),
            namespace: None,
            name: Some(format!("web-7d9f8c6b5-{index:05}")),
            since_ms: i64::MIN,
            until_ms: i64::MAX,
            newest: None,
        };
        let (ours_ms, lines, reference_ms) = self.time(one, |i, _| i == index).await;
        let engine = self.engine;
        read_figure(
            format!("history-object-{engine}"),
            format!("recorded history: one pod's whole history ({lines} versions) from {engine}"),
            (ours_ms, reference_ms),
            20.0,
            self.held(),
        )
    }

    /// One namespace's changes in a 10-minute window, from the second
    /// round's start.
    async fn namespace_figure(&self) -> Figure {
        let since_ms = START_MS + 1_000 + 10 * self.pods as i64;
        let until_ms = since_ms + 600_000;
        let window = HistoryQuery {
            resource: "pods".into(),
            namespace: Some("team-3".into()),
            name: None,
            since_ms,
            until_ms,
            newest: None,
        };
        // Pods in namespace team-N are those with index % 20 == N.
        let in_window = |i: usize, at: i64| i % 20 == 3 && at >= since_ms && at <= until_ms;
        let (ours_ms, lines, reference_ms) = self.time(window, in_window).await;
        let engine = self.engine;
        read_figure(
            format!("history-namespace-{engine}"),
            format!("recorded history: one namespace's changes in a 10-minute window ({lines} deltas) from {engine}"),
            (ours_ms, reference_ms),
            100.0,
            self.held(),
        )
    }
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
    store: &Arc<HistoryStore>,
    cluster: &ClusterId,
    query: HistoryQuery,
) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..5 {
        let clock = Instant::now();
        let mut receiver = store.lines(cluster, query.clone());
        count = 0;
        while let Some(text) = receiver.recv().await {
            count += text.expect("lines").lines().count();
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
    let (plain, _) = common::start_serve_with(&options.bin, &upstream, &["--history", "off"]);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let client = common::client();
        let listed_ms = recorded_moment(&client, &upstream, &url, pods).await;
        // Held is not yet idle: the last batches are still written then, and
        // a LIST timed beside them took 10 s instead of 1.2 s.
        until_quiet(&recording).await;
        let (ours, reference, items) = time_state(&client, &url, listed_ms).await;
        let (rss_recording, rss_plain) = (recording.rss() as f64, plain.rss() as f64);
        let hwm_recording = peak_memory(&recording);
        let objects = recorded_objects(&client, &url).await;
        let mut figures = vec![Figure {
            id: "history-state".into(),
            figure: format!(
                "recorded history: the state of {items} pods at a past moment through serve"
            ),
            unit: "ms",
            ours,
            reference,
            reference_name: "a live LIST of them through serve".into(),
            ratio: ours / reference,
            goal: "≤ 1.0×".into(),
            met: ours <= reference,
            note: "both over HTTP, bodies read whole; the state rebuilt from fulls and patches"
                .into(),
        }];
        figures.extend(memory_figures(
            pods,
            objects,
            (rss_recording, rss_plain),
            hwm_recording,
        ));
        figures
    })
}

/// Waits until the recorder at serve `url` holds every object of the
/// (quiet) sim at `upstream`, so that its memory is read once recording is
/// steady; the moment the pods' list was recorded (ms), the moment asked
/// for.
async fn recorded_moment(client: &HttpClient, upstream: &str, url: &str, pods: usize) -> i64 {
    let (_, body, _) = timed_get(client, &format!("{upstream}/_sim/stats")).await;
    let sim_stats: Value = serde_json::from_slice(&body).unwrap_or_default();
    let deadline = Instant::now() + std::time::Duration::from_secs(600);
    loop {
        let (_, body, _) = timed_get(client, &format!("{url}/_deltascope/history/summary")).await;
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
            return pods_row["lastMs"].as_i64().unwrap_or_default();
        }
        assert!(
            Instant::now() < deadline,
            "the recorder never held {pods} pods: {summary}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Waits (at most 2 minutes) until `serve` uses under a tenth of a core
/// over a second: both figures are then timed against an idle recorder.
async fn until_quiet(serve: &Proc) {
    let cpu_ticks = || {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", serve.pid())).unwrap_or_default();
        // utime and stime are fields 14 and 15; after `(comm)` the state
        // (field 3) comes first.
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        field(14).unwrap_or(0) + field(15).unwrap_or(0)
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    while Instant::now() < deadline {
        let before = cpu_ticks();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        // 100 ticks a second: under 10 is under a tenth of a core.
        if cpu_ticks().saturating_sub(before) < 10 {
            return;
        }
    }
    eprintln!("history: serve was still busy after 2 minutes; timing it anyway");
}

/// The best of 3: the pods' state at `listed_ms` through serve `url`, and
/// a live LIST of them (ms each); the pods in that state.
async fn time_state(client: &HttpClient, url: &str, listed_ms: i64) -> (f64, f64, usize) {
    let at = deltascope_facts::time::format_rfc3339_millis(listed_ms).unwrap_or_default();
    let (mut ours, mut reference) = (f64::MAX, f64::MAX);
    let mut items = 0;
    for _ in 0..3 {
        let (status, body, ms) = timed_get(
            client,
            &format!("{url}/_deltascope/history/state?resource=pods&at={at}"),
        )
        .await;
        assert_eq!(
            status,
            200,
            "{}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
        items = serde_json::from_slice::<Value>(&body)
            .map(|v| v["items"].as_array().map_or(0, Vec::len))
            .unwrap_or(0);
        ours = ours.min(ms);
        let (_, _, ms) = timed_get(client, &format!("{url}/api/v1/pods")).await;
        reference = reference.min(ms);
    }
    (ours, reference, items)
}

/// The most `serve` held at once (VmHWM, bytes): the first lists included.
fn peak_memory(serve: &Proc) -> f64 {
    std::fs::read_to_string(format!("/proc/{}/status", serve.pid()))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kb| kb * 1024.0)
}

/// Everything the recorder at serve `url` holds: the sim has other objects
/// than pods (ReplicaSets, Deployments, Services, … about 1.2 a pod), all
/// recorded.
async fn recorded_objects(client: &HttpClient, url: &str) -> u64 {
    let (_, body, _) = timed_get(client, &format!("{url}/_deltascope/history/summary")).await;
    serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|summary| {
            let rows = summary["resources"].as_array()?;
            Some(rows.iter().map(|r| r["deltas"].as_u64().unwrap_or(0)).sum())
        })
        .unwrap_or(0)
        .max(1)
}

/// Serve's memory recording `pods` pods (`objects` in all), against the
/// same serve without a recorder (VmRSS, bytes), and its peak (VmHWM).
fn memory_figures(
    pods: usize,
    objects: u64,
    (rss_recording, rss_plain): (f64, f64),
    hwm_recording: f64,
) -> [Figure; 2] {
    [
        Figure {
            id: "history-serve-memory".into(),
            figure: format!("recorded history: serve's memory while recording {pods} pods"),
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
            figure: format!("recorded history: serve's peak memory while recording {pods} pods (VmHWM, the first lists included)"),
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
}
