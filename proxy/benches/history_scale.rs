//! The recorded history at scale (`cargo xtask bench --only history-scale`,
//! or `cargo bench -p deltascope-proxy --bench history_scale -- [--deltas N]
//! [--quick] [--store DIR]`): a store filled with N recorded deltas (10 million by
//! default: 100,000 pods listed, then each pod's status changed once every
//! 1,000 s of recorded time, about 27 hours of it), then
//!
//! - one pod's last 24 hours of history, against parsing the same
//!   versions' JSON from memory;
//! - one namespace's changes in a 10-minute window, against the same;
//! - the state of every pod at a past moment through serve's route, against
//!   a LIST of exactly the same bytes through serve (serve in front of a
//!   stub upstream that answers that LIST from memory, so the reference is
//!   serve copying bytes and nothing else).
//!
//! SQLite always; PostgreSQL too when `DELTASCOPE_TEST_POSTGRES` is set
//! (`cargo xtask bench` starts a private server).
//!
//! `--store DIR` keeps the SQLite store in DIR and, on a later run with the
//! same size, reads it again instead of filling it (at 10 million deltas
//! the fill takes minutes): for working on the reads.

mod common;
mod history_common;
#[path = "../../benches/common.rs"]
mod pods;

use std::sync::Arc;
use std::time::Instant;

use common::{Figure, HttpClient, Options};
use deltascope_history::{
    ClusterId, HistoryQuery, HistoryStore, HistoryTarget, WatermarkRecord, Write,
};
use deltascope_informer::{DeltaType, JsonValue};
use history_common::{fresh_postgres, parse_ms, read_figure, record, timed_get, Batches};
use serde_json::Value;

/// The `deltascope` process's allocator, so the store's figures are its own.
#[global_allocator]
static ALLOCATOR: deltascope_proxy::allocator::ProcessAllocator =
    deltascope_proxy::allocator::ProcessAllocator;

/// Pods in the cluster recorded.
const PODS: usize = 100_000;
/// Recorded time between two changes of the store (ms).
const STEP_MS: i64 = 10;
/// The cluster the store records (the stub upstream says it is this one).
const CLUSTER: &str = "bench-scale-cluster";
const FIRST_MS: i64 = 1_790_000_000_000;
/// Placeholders in a pod's text for its resourceVersion and restart count.
const RV_MARK: u64 = 900_000_000_001;
const ROUND_MARK: usize = 777_777;

fn main() {
    let started = Instant::now();
    let options = Options::parse("history_scale");
    let args: Vec<String> = std::env::args().collect();
    let deltas = args
        .iter()
        .position(|a| a == "--deltas")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(if options.quick { 300_000 } else { 10_000_000 });
    let pods = if options.quick { 5_000 } else { PODS };
    let kept = args
        .iter()
        .position(|a| a == "--store")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let dir = kept.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("deltascope-bench-scale-{}", std::process::id()))
    });
    let reuse = kept.as_ref().map(|dir| dir.join("filled.txt"));
    // A kept store of another size is filled again from nothing.
    if reuse
        .as_deref()
        .and_then(|file| Filled::read(file, pods, deltas))
        .is_none()
    {
        let _ = std::fs::remove_dir_all(&dir);
    }
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut figures = Vec::new();
    let sqlite = HistoryTarget::Sqlite(dir.join("history.sqlite"));
    figures.extend(runtime.block_on(engine_figures(
        &options,
        "sqlite",
        &sqlite,
        (pods, deltas),
        reuse.as_deref(),
    )));
    match std::env::var("DELTASCOPE_TEST_POSTGRES") {
        Ok(server) => {
            let target = runtime.block_on(fresh_postgres(&server, "ds_bench_scale"));
            figures.extend(runtime.block_on(engine_figures(
                &options,
                "postgres",
                &target,
                (pods, deltas),
                None,
            )));
        }
        Err(_) => {
            eprintln!("history_scale: DELTASCOPE_TEST_POSTGRES is not set: no PostgreSQL figures")
        }
    }
    for figure in &figures {
        figure.print();
    }
    common::write(
        "history_scale",
        &options.out,
        options.quick,
        started,
        &figures,
    );
    if kept.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Pod `i`'s text around its placeholders: the pieces between them, and
/// which placeholder follows each piece but the last.
struct Template {
    pieces: Vec<String>,
    marks: Vec<bool>,
}

impl Template {
    fn of(i: usize) -> Template {
        let mut pod = pods::pod(i, RV_MARK);
        pod["status"]["containerStatuses"][0]["restartCount"] = Value::from(ROUND_MARK);
        let text = pod.to_string();
        let (rv, round) = (RV_MARK.to_string(), ROUND_MARK.to_string());
        let (mut pieces, mut marks) = (Vec::new(), Vec::new());
        let mut rest = text.as_str();
        loop {
            let next_rv = rest.find(&rv);
            let next_round = rest.find(&round);
            let (at, is_rv) = match (next_rv, next_round) {
                (Some(a), Some(b)) if a <= b => (a, true),
                (Some(a), None) => (a, true),
                (_, Some(b)) => (b, false),
                (None, None) => break,
            };
            pieces.push(rest[..at].to_string());
            marks.push(is_rv);
            rest = &rest[at + if is_rv { rv.len() } else { round.len() }..];
        }
        pieces.push(rest.to_string());
        Template { pieces, marks }
    }

    /// The pod at resourceVersion `rv` after `round` restarts, compact.
    fn version(&self, rv: u64, round: usize) -> JsonValue {
        let mut text = String::with_capacity(4_200);
        for (piece, is_rv) in self.pieces.iter().zip(&self.marks) {
            text.push_str(piece);
            if *is_rv {
                text.push_str(&rv.to_string());
            } else {
                text.push_str(&round.to_string());
            }
        }
        if let Some(last) = self.pieces.last() {
            text.push_str(last);
        }
        JsonValue::parse(text.as_bytes()).expect("a pod")
    }
}

async fn engine_figures(
    options: &Options,
    engine: &str,
    target: &HistoryTarget,
    (pods, deltas): (usize, usize),
    reuse: Option<&std::path::Path>,
) -> Vec<Figure> {
    let store = Arc::new(HistoryStore::open(target).await.expect("open the store"));
    let cluster = ClusterId(CLUSTER.into());
    let filled = match reuse.and_then(|file| Filled::read(file, pods, deltas)) {
        Some(filled) => filled,
        None => {
            let filled = Filled::fill(&store, &cluster, pods, deltas).await;
            if let Some(file) = reuse {
                filled.keep(file, pods);
            }
            history_common::settle(target).await;
            filled
        }
    };
    let held = filled.held(engine, &store).await;
    let at = filled.at;
    let mut figures = Vec::new();

    // One pod's last 24 hours.
    let index = pods / 2;
    let one = HistoryQuery {
        resource: "pods".into(),
        namespace: None,
        name: Some(format!("web-7d9f8c6b5-{index:05}")),
        since_ms: at - 24 * 3_600_000,
        until_ms: at,
        newest: None,
    };
    let (ours, lines, texts) = time_lines(&store, &cluster, one).await;
    figures.push(read_figure(
        format!("history-scale-object-{engine}"),
        format!("recorded history at scale: one pod's last 24 h ({lines} versions) from {engine}"),
        (ours, parse_ms(&texts)),
        20.0,
        held.clone(),
    ));

    // One namespace in a 10-minute window, in the middle of the record.
    let middle = FIRST_MS + (at - FIRST_MS) / 2;
    let window = HistoryQuery {
        resource: "pods".into(),
        namespace: Some("team-3".into()),
        name: None,
        since_ms: middle,
        until_ms: middle + 600_000,
        newest: None,
    };
    let (ours, lines, texts) = time_lines(&store, &cluster, window).await;
    figures.push(read_figure(
        format!("history-scale-namespace-{engine}"),
        format!("recorded history at scale: one namespace's changes in a 10-minute window ({lines} deltas) from {engine}"),
        (ours, parse_ms(&texts)),
        100.0,
        held.clone(),
    ));
    store.close().await;

    figures.push(state_through_serve(options, engine, target, middle, pods, &held).await);
    figures
}

/// A store filled: the deltas written, the last one's time and the
/// seconds it took.
struct Filled {
    written: usize,
    at: i64,
    secs: f64,
}

impl Filled {
    /// Fills the store with `pods` pods listed, then each pod's status
    /// changed in turn, [`STEP_MS`] apart, until it holds `deltas` deltas.
    async fn fill(store: &HistoryStore, cluster: &ClusterId, pods: usize, deltas: usize) -> Filled {
        let templates: Vec<Template> = (0..pods).map(Template::of).collect();
        let mut last: Vec<JsonValue> = Vec::with_capacity(pods);
        let mut batches = Batches::new(store, cluster);
        let mut rv = 1_000u64;
        let clock = Instant::now();
        for template in &templates {
            rv += 1;
            let pod = template.version(rv, 0);
            batches
                .push(record(pod.clone(), DeltaType::Replaced, FIRST_MS, None))
                .await;
            last.push(pod);
        }
        let mut at = FIRST_MS;
        let mut written = pods;
        let mut round = 0;
        while written < deltas {
            round += 1;
            for (i, template) in templates.iter().enumerate() {
                if written >= deltas {
                    break;
                }
                rv += 1;
                at += STEP_MS;
                let pod = template.version(rv, round);
                let previous = std::mem::replace(&mut last[i], pod.clone());
                batches
                    .push(record(pod, DeltaType::Updated, at, Some(previous)))
                    .await;
                written += 1;
            }
        }
        let watermark = Write::Watermark(WatermarkRecord {
            resource: "pods".into(),
            store_resource_version: rv.to_string(),
            through_ms: at + 1,
        });
        batches.flush_with(Some(watermark)).await;
        let secs = clock.elapsed().as_secs_f64();
        Filled { written, at, secs }
    }

    /// The fill kept in `file` by an earlier run of the same size.
    fn read(file: &std::path::Path, pods: usize, deltas: usize) -> Option<Filled> {
        let text = std::fs::read_to_string(file).ok()?;
        let fields: Vec<&str> = text.split_whitespace().collect();
        match fields.as_slice() {
            [p, w, at, secs] if p.parse() == Ok(pods) && w.parse() == Ok(deltas) => Some(Filled {
                written: deltas,
                at: at.parse().ok()?,
                secs: secs.parse().ok()?,
            }),
            _ => None,
        }
    }

    /// Writes what [`Filled::read`] reads back.
    fn keep(&self, file: &std::path::Path, pods: usize) {
        let text = format!("{pods} {} {} {}\n", self.written, self.at, self.secs);
        std::fs::write(file, text).expect("the fill's record");
    }

    /// Says how the fill went, and returns the figures' note: the deltas
    /// held, their size in `store` and the rate they were written at.
    async fn held(&self, engine: &str, store: &HistoryStore) -> String {
        let Filled { written, secs, .. } = *self;
        let bytes = store.used_bytes().await.unwrap_or(0);
        eprintln!(
            "history_scale {engine}: {written} deltas written in {secs:.0} s ({:.0}/s), {:.0} MB",
            written as f64 / secs,
            bytes as f64 / 1e6
        );
        format!(
            "{written} deltas held ({:.1} GB), written at {:.0}/s",
            bytes as f64 / 1e9,
            written as f64 / secs
        )
    }
}

/// The best of 3 reads of `query`'s lines: ms, delta lines, their objects.
async fn time_lines(
    store: &Arc<HistoryStore>,
    cluster: &ClusterId,
    query: HistoryQuery,
) -> (f64, usize, Vec<String>) {
    let mut best = f64::MAX;
    let mut objects = Vec::new();
    for _ in 0..3 {
        objects.clear();
        let clock = Instant::now();
        let mut receiver = store.lines(cluster, query.clone());
        let mut texts = Vec::new();
        while let Some(text) = receiver.recv().await {
            texts.extend(text.expect("lines").lines().map(str::to_string));
        }
        best = best.min(clock.elapsed().as_secs_f64() * 1e3);
        for text in texts {
            let line: Value = serde_json::from_str(&text).expect("a line");
            if line.get("object").is_some() {
                objects.push(line["object"].to_string());
            }
        }
    }
    let count = objects.len();
    (best, count, objects)
}

/// Serve reading the store (`--history-read-only`) in front of a stub
/// upstream that says it is [`CLUSTER`] and answers the pods LIST with the
/// bytes of the state itself.
async fn state_through_serve(
    options: &Options,
    engine: &str,
    target: &HistoryTarget,
    at_ms: i64,
    pods: usize,
    held: &str,
) -> Figure {
    let list: Arc<std::sync::Mutex<bytes::Bytes>> = Arc::default();
    let upstream = stub_upstream(Arc::clone(&list)).await;
    let history = match target {
        HistoryTarget::Sqlite(path) => format!("sqlite:{}", path.display()),
        HistoryTarget::Postgres(url) => url.clone(),
        HistoryTarget::Off => unreachable!("a store was filled"),
    };
    let (_serve, url) = common::start_serve_with(
        &options.bin,
        &upstream,
        &["--history", &history, "--history-read-only"],
    );
    let client = common::client();
    let at = deltascope_facts::time::format_rfc3339_millis(at_ms).unwrap_or_default();
    let state_url = format!("{url}/_deltascope/history/state?resource=pods&at={at}");
    let body = first_state(&client, &state_url).await;
    let items = serde_json::from_slice::<Value>(&body)
        .map(|v| v["items"].as_array().map_or(0, Vec::len))
        .unwrap_or(0);
    assert_eq!(items, pods, "every pod at the moment");
    let size = body.len();
    *list.lock().expect("the list") = body;
    let (ours, reference) =
        time_state(&client, &state_url, &format!("{url}/api/v1/pods"), size).await;
    Figure {
        id: format!("history-scale-state-{engine}"),
        figure: format!("recorded history at scale: the state of {pods} pods at a past moment through serve, from {engine}"),
        unit: "ms",
        ours,
        reference,
        reference_name: "a LIST of the same bytes through serve".into(),
        ratio: ours / reference,
        goal: "≤ 1.0×".into(),
        met: ours <= reference,
        note: format!("{:.0} MB; {held}; the moment is mid-record, each pod's version a full and up to 8 patches", size as f64 / 1e6),
    }
}

/// The first state serve answers at `state_url`: it learns the cluster's
/// identity shortly after it starts.
async fn first_state(client: &HttpClient, state_url: &str) -> bytes::Bytes {
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, body, _) = timed_get(client, state_url).await;
        if status == 200 {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "no state: {status} {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

/// The best of 3: the state at `state_url`, and the LIST of the same
/// `size` bytes at `list_url` (ms each).
async fn time_state(
    client: &HttpClient,
    state_url: &str,
    list_url: &str,
    size: usize,
) -> (f64, f64) {
    let (mut ours, mut reference) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let (status, body, ms) = timed_get(client, state_url).await;
        assert_eq!(
            body.len(),
            size,
            "{status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
        ours = ours.min(ms);
        let (_, body, ms) = timed_get(client, list_url).await;
        assert_eq!(body.len(), size);
        reference = reference.min(ms);
    }
    (ours, reference)
}

/// A loopback upstream answering the kube-system namespace (as [`CLUSTER`])
/// and the pods LIST (from `list`); its URL.
async fn stub_upstream(list: Arc<std::sync::Mutex<bytes::Bytes>>) -> String {
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/api/v1/namespaces/kube-system",
            get(|| async {
                axum::Json(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "kube-system", "uid": CLUSTER}}))
            }),
        )
        .route(
            "/api/v1/pods",
            get(move || {
                let list = Arc::clone(&list);
                async move {
                    let body = list.lock().map(|b| b.clone()).unwrap_or_default();
                    ([("content-type", "application/json")], body)
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}
