//! The figures of the page reaching back into serve's record, in headless
//! Chromium against the release page: `deltascope sim` (200 pods, quiet)
//! behind the release `serve --upstream … --history sqlite:… --history-read-only`,
//! whose database is first filled straight through `deltascope-history` with
//! a million recorded Pod deltas (100,000 with `PAGE_BENCH_QUICK=1`) over
//! the hour before the page opens — each of the sim's pods changed in turn,
//! one of them exactly 1,000 times. Then, with the pods table open:
//!
//! - the timeline zoomed back over that hour: from the wheel to the first
//!   recorded deltas drawn in the pods lane (`data-recorded`), against the
//!   browser's own `fetch` + `JSON.parse` of the marks answer the page asked
//!   for; and the longest main-thread task until every bucket is drawn;
//! - the pod changed 1,000 times, opened from its address with its History
//!   shown: from the address to the versions on screen drawn with their
//!   changes read (and to all of the newest 100), against `fetch` +
//!   `JSON.parse` of the newest 100 versions, the page's first request, in
//!   the same page (and of the whole record, for context); and the longest
//!   main-thread task until all 100 are drawn.
//!
//! An `#[ignore]` test run by `cargo xtask bench --only page` (environment
//! as `browser_page_bench.rs`); it writes `reach.tsv` beside
//! `PAGE_BENCH_OUT`.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use deltascope_history::{
    ClusterId, DeltaRecord, HistoryStore, HistoryTarget, WatermarkRecord, Write,
};
use deltascope_informer::{DeltaType, JsonValue};
use fantoccini::Client;
use serde_json::{json, Value};
use support::bench::{chromium, num, observe_jank, run, FRAME_BUDGET_MS, JANK};
use support::chain::{start_serve_upstream, start_sim};
use support::http;
use tsv_row::{jank_rows, row, Jank};

/// Versions of the one pod whose History is opened.
const OBJECT_VERSIONS: usize = 1_000;
/// Versions the History draws at first (`model::object_details::HISTORY_PAGE`).
const HISTORY_PAGE: usize = 100;
/// The recorded hour ends this long before the page opens.
const ENDS_BEFORE_MS: i64 = 120_000;
const HOUR_MS: i64 = 3_600_000;

fn out_path() -> PathBuf {
    let page = std::env::var("PAGE_BENCH_OUT").unwrap_or_else(|_| "target/bench/page.json".into());
    PathBuf::from(page).with_file_name("reach.tsv")
}

fn quick() -> bool {
    std::env::var("PAGE_BENCH_QUICK").is_ok_and(|q| q == "1")
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn sim_get(sim: SocketAddr, path: &str) -> Value {
    let (status, body) = http(sim, "GET", path, &[], None);
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("JSON")
}

/// The recorder's delta for `pod` (a version of it), as serve would store it.
fn delta(pod: &Value, kind: DeltaType, at_ms: i64, previous: Option<JsonValue>) -> Write {
    let meta = &pod["metadata"];
    let text = |field: &str| meta[field].as_str().unwrap_or_default().to_string();
    let rv = text("resourceVersion");
    Write::Delta(DeltaRecord {
        resource: "pods".into(),
        namespace: text("namespace"),
        name: text("name"),
        uid: text("uid"),
        resource_version: rv.clone(),
        store_resource_version: rv,
        kind,
        tombstone: false,
        at_ms,
        managers: vec!["kubelet".into()],
        object: JsonValue::parse(pod.to_string().as_bytes()).expect("a pod"),
        previous,
    })
}

/// `pod` at resourceVersion `rv`, its first container restarted `round` times.
fn version_of(pod: &Value, rv: u64, round: usize) -> Value {
    let mut pod = pod.clone();
    pod["metadata"]["resourceVersion"] = json!(rv.to_string());
    if let Some(status) = pod["status"]["containerStatuses"].get_mut(0) {
        status["restartCount"] = json!(round);
    } else {
        pod["metadata"]["annotations"]["bench.deltascope.dev/round"] = json!(round.to_string());
    }
    pod
}

/// Fills `target` with `deltas` Pod deltas of the cluster `identity` over
/// the hour ending at `end_ms`: every pod listed, then changed in turn, the
/// pod at `focus` exactly [`OBJECT_VERSIONS`] times in all.
async fn fill(
    target: &HistoryTarget,
    identity: &str,
    pods: &[Value],
    focus: usize,
    deltas: usize,
    end_ms: i64,
) -> usize {
    let store = HistoryStore::open(target)
        .await
        .expect("the history database");
    let cluster = ClusterId(identity.into());
    let step = HOUR_MS / deltas as i64;
    let focus_every = deltas / OBJECT_VERSIONS;
    let mut at = end_ms - HOUR_MS;
    let mut rv = 1_000u64;
    let mut last: Vec<Option<JsonValue>> = vec![None; pods.len()];
    let mut batch = Vec::with_capacity(1_000);
    let mut focus_versions = 0;
    let clock = Instant::now();
    for i in 0..deltas {
        let which = if i < pods.len() {
            i
        } else if i % focus_every == 0 {
            focus
        } else {
            // the others in turn, never the focus pod
            let other = i % (pods.len() - 1);
            if other >= focus {
                other + 1
            } else {
                other
            }
        };
        rv += 1;
        at += step;
        if which == focus {
            focus_versions += 1;
        }
        let pod = version_of(&pods[which], rv, i);
        let kind = if last[which].is_some() {
            DeltaType::Updated
        } else {
            DeltaType::Replaced
        };
        let write = delta(&pod, kind, at, last[which].take());
        if let Write::Delta(record) = &write {
            last[which] = Some(record.object.clone());
        }
        batch.push(write);
        if batch.len() == 1_000 {
            store.write(&cluster, &batch).await.expect("write");
            batch.clear();
        }
    }
    batch.push(Write::Watermark(WatermarkRecord {
        resource: "pods".into(),
        store_resource_version: rv.to_string(),
        through_ms: at + 1,
    }));
    store.write(&cluster, &batch).await.expect("write");
    eprintln!(
        "reach bench: {deltas} deltas written in {:.0} s",
        clock.elapsed().as_secs_f64()
    );
    focus_versions
}

/// Installs the recorded-lane observer, then wheels the timeline out a
/// notch at a time (each 100×, the most one wheel zooms, in a task of its
/// own as a person's wheel is) until it shows from `first_ms` on; returns
/// (the wheel that first reached into the record, that ended before
/// `last_ms`; first recorded deltas drawn; all drawn; deltas drawn), times in
/// ms since navigation.
async fn zoom_back(client: &Client, (first_ms, last_ms): (i64, i64)) -> (f64, f64, f64, f64) {
    run(
        client,
        "window.__reach = {first: null};\
         const lane = () => document.querySelector('[data-testid=timeline-lane][data-lane^=\"pods\"]');\
         new MutationObserver(() => { const l = lane();\
           if (l && Number(l.dataset.recorded) > 0 && window.__reach.first === null) window.__reach.first = performance.now(); })\
           .observe(document, {subtree: true, childList: true, attributes: true}); return true;",
        vec![],
    )
    .await;
    let mut reached = None;
    for _ in 0..8 {
        let wheel = run(
            client,
            "const c = document.querySelector('[data-testid=timeline] canvas');\
             const r = c.getBoundingClientRect(); const at = performance.now();\
             c.dispatchEvent(new WheelEvent('wheel', {deltaY: 3000, clientX: r.right - 1,\
               clientY: r.top + 5, bubbles: true, cancelable: true})); return at;",
            vec![],
        )
        .await
        .as_f64()
        .unwrap_or(f64::NAN);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let start: i64 = run(
            client,
            "return document.querySelector('[data-testid=timeline]').dataset.start;",
            vec![],
        )
        .await
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(i64::MAX);
        if start < last_ms && reached.is_none() {
            reached = Some(wheel);
        }
        if start <= first_ms {
            break;
        }
    }
    let t0 = reached.expect("the timeline reached back into the record");
    let (mut recorded, mut stable_since, mut all) = (0.0, Instant::now(), 0.0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = run(
            client,
            "const l = document.querySelector('[data-testid=timeline-lane][data-lane^=\"pods\"]');\
             return [l ? Number(l.dataset.recorded) : 0, performance.now()];",
            vec![],
        )
        .await;
        let count = now[0].as_f64().unwrap_or(0.0);
        if count != recorded {
            recorded = count;
            stable_since = Instant::now();
            all = now[1].as_f64().unwrap_or(f64::NAN);
        }
        if recorded > 0.0 && stable_since.elapsed() > Duration::from_secs(3) {
            break;
        }
        if Instant::now() > deadline {
            let lane = run(
                client,
                "const l = document.querySelector('[data-testid=timeline-lane][data-lane^=\"pods\"]');\
                 const t = document.querySelector('[data-testid=timeline]');\
                 return [l ? l.outerHTML.slice(0, 600) : null, t ? [t.dataset.start, t.dataset.end] : null,\
                   performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('_deltascope')).slice(-5)];",
                vec![],
            )
            .await;
            panic!("the pods lane drew {recorded} recorded deltas: {lane}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = num(
        &run(client, "return window.__reach;", vec![]).await,
        "first",
    );
    (t0, first, all, recorded)
}

/// The best of three `fetch` + `JSON.parse` of `path` in the page (ms);
/// with `lines`, each line of an NDJSON body parsed.
async fn fetch_parse(client: &Client, path: &str, lines: bool) -> f64 {
    let script = "const [path, lines] = [arguments[0], arguments[1]]; const done = arguments[arguments.length - 1];\
        (async () => { let best = Infinity; for (let i = 0; i < 3; i++) { const s = performance.now();\
          const text = await (await fetch(path, {credentials: 'same-origin'})).text();\
          if (lines) { for (const line of text.split('\\n')) if (line) JSON.parse(line); } else JSON.parse(text);\
          best = Math.min(best, performance.now() - s); } done(best); })();";
    client
        .execute_async(script, vec![json!(path), json!(lines)])
        .await
        .expect("fetch")
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// The marks request the page made after `since` (ms since navigation).
async fn marks_path(client: &Client, since: f64) -> String {
    run(
        client,
        "return performance.getEntriesByType('resource').filter(e => e.startTime >= arguments[0]\
           && e.name.includes('/_deltascope/history/marks')).map(e => new URL(e.name).pathname + new URL(e.name).search)[0] || null;",
        vec![json!(since)],
    )
    .await
    .as_str()
    .expect("the page asked serve for the lane's marks")
    .to_string()
}

/// What opening an object's History took: ms from the address to the
/// versions on screen drawn with their changes, to all `want` drawn with
/// their changes, and the versions drawn then.
struct HistoryOpened {
    screen_ms: f64,
    all_ms: f64,
    versions: f64,
}

/// Opens `namespace/name` from its address with its History shown.
async fn open_history(
    client: &Client,
    (namespace, name): (&str, &str),
    want: usize,
) -> HistoryOpened {
    run(
        client,
        "const want = arguments[1];\
         window.__hist = {t0: performance.now(), screen: null, done: null, count: 0};\
         const screenFull = rows => { const view = document.querySelector('.object-view');\
           const bottom = Math.min(window.innerHeight, view ? view.getBoundingClientRect().bottom : window.innerHeight);\
           return rows.length > 0 && rows[rows.length - 1].getBoundingClientRect().bottom >= bottom; };\
         const tick = () => { const tab = Array.from(document.querySelectorAll('.object-view [role=tab]'))\
             .find(b => b.textContent.startsWith('History'));\
           if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();\
           const rows = document.querySelectorAll('[data-testid=object-delta]'); const n = rows.length;\
           if (window.__hist.screen === null && (n >= want || screenFull(rows))) window.__hist.screen = performance.now();\
           if (n >= want && !document.querySelector('[data-testid=versions-pending]') && window.__hist.done === null)\
             { window.__hist.done = performance.now(); window.__hist.count = n; } };\
         new MutationObserver(tick).observe(document, {subtree: true, childList: true, attributes: true});\
         location.hash = arguments[0]; return true;",
        vec![
            json!(format!("#/core/v1/pods/{namespace}/{name}?tab=history")),
            json!(want),
        ],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let hist = run(client, "return window.__hist;", vec![]).await;
        if hist["done"].is_number() && hist["screen"].is_number() {
            return HistoryOpened {
                screen_ms: num(&hist, "screen") - num(&hist, "t0"),
                all_ms: num(&hist, "done") - num(&hist, "t0"),
                versions: num(&hist, "count"),
            };
        }
        assert!(
            Instant::now() < deadline,
            "the History did not draw: {hist}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: cargo xtask bench --only page"]
async fn reaching_back_into_a_million_recorded_deltas() {
    // REACH_BENCH_DELTAS: another count, for trying the bench out
    let deltas = std::env::var("REACH_BENCH_DELTAS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick() { 100_000 } else { 1_000_000 });
    let (_sim, sim) = start_sim(&["--seed", "3", "--pods", "200", "--churn", "0"]);
    let identity = sim_get(sim, "/api/v1/namespaces/kube-system")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let pods: Vec<Value> = sim_get(sim, "/api/v1/pods")["items"]
        .as_array()
        .expect("pods")
        .clone();
    let focus = pods.len() / 2;
    let (namespace, name) = {
        let meta = &pods[focus]["metadata"];
        (
            meta["namespace"].as_str().expect("namespace").to_string(),
            meta["name"].as_str().expect("name").to_string(),
        )
    };
    let dir = std::env::temp_dir().join(format!("deltascope-reach-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let database = dir.join("history.sqlite");
    let end_ms = unix_ms() - ENDS_BEFORE_MS;
    let recorded = (end_ms - HOUR_MS, end_ms);
    let focus_versions = fill(
        &HistoryTarget::Sqlite(database.clone()),
        &identity,
        &pods,
        focus,
        deltas,
        end_ms,
    )
    .await;
    let history = format!("sqlite:{}", database.display());
    let (_serve, login) = start_serve_upstream(
        &format!("http://{sim}"),
        &["--history", &history, "--history-read-only"],
    );
    let origin = login.split("/?code=").next().expect("origin").to_string();

    let browser = chromium().await;
    let client = &browser.client;
    client.goto(&login).await.expect("sign in");
    observe_jank(client).await;
    client
        .goto(&format!("{origin}/#/core/v1/pods"))
        .await
        .expect("pods");
    let deadline = Instant::now() + Duration::from_secs(120);
    while run(
        client,
        "const h = document.querySelector('[data-testid=history-stats]');\
         const s = document.querySelector('[data-testid=store-stats]');\
         return !!(h && h.dataset.recordedFrom && s && s.dataset.synced === 'true');",
        vec![],
    )
    .await
        != json!(true)
    {
        assert!(
            Instant::now() < deadline,
            "pods synced and serve's record seen"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    run(client, "window.__prof = []; return 1;", vec![]).await;
    let (wheel, first, all, drawn) = zoom_back(client, recorded).await;
    let marks = marks_path(client, wheel).await;
    let marks_reference = fetch_parse(client, &marks, false).await;
    let jank = Jank::from_script(&run(client, JANK, vec![json!(wheel), json!(all)]).await);
    let first_ms = first - wheel;
    let record = format!("/_deltascope/history?resource=pods&namespace={namespace}&name={name}");
    let history_from = num(
        &run(client, "return {now: performance.now()};", vec![]).await,
        "now",
    );
    // The History shows its newest page of versions (older on demand).
    let page = focus_versions.min(HISTORY_PAGE);
    let opened = open_history(client, (&namespace, &name), page).await;
    let held_versions = run(
        client,
        "const b = document.querySelector('[data-testid=history-older]'); return b ? Number(b.dataset.held) : 0;",
        vec![],
    )
    .await
    .as_f64()
    .unwrap_or(0.0);
    let history_jank = Jank::from_script(
        &run(
            client,
            JANK,
            vec![json!(history_from), json!(history_from + opened.all_ms)],
        )
        .await,
    );
    // What the page asks first: the newest page of the record.
    let newest_page = run(
        client,
        "return performance.getEntriesByType('resource').filter(e => e.startTime >= arguments[0]\
           && e.name.includes('/_deltascope/history?') && e.name.includes('newest='))\
           .map(e => new URL(e.name).pathname + new URL(e.name).search)[0] || null;",
        vec![json!(history_from)],
    )
    .await
    .as_str()
    .expect("the page asked serve for the newest page of the record")
    .to_string();
    let history_reference = fetch_parse(client, &newest_page, true).await;
    let whole_reference = fetch_parse(client, &record, true).await;

    let held = format!("{deltas} Pod deltas recorded over an hour (200 pods, one changed {OBJECT_VERSIONS} times), SQLite");
    let mut lines = row(
        "reach.zoom.first-drawn",
        "zooming the timeline back over a million recorded deltas: the wheel → first recorded deltas drawn",
        "ms",
        first_ms,
        marks_reference,
        "fetch + JSON.parse of the marks answer the page asked for, in the page",
        "≤ 300 ms",
        first_ms <= 300.0,
        &format!("{held}; {drawn:.0} recorded deltas drawn in the lane, all {:.0} ms after the wheel", all - wheel),
    );
    lines.push_str(&jank_rows(
        "reach.zoom.jank",
        "zooming back over a million recorded deltas",
        &jank,
        FRAME_BUDGET_MS,
        "",
    ));
    lines.push_str(&row(
        "reach.object.1000-versions",
        "an object's recorded history of 1,000 versions: its address → History shown (the versions on screen drawn with their changes; the rest of the newest 100 follow, older on demand)",
        "ms",
        opened.screen_ms,
        history_reference,
        "fetch + JSON.parse of the newest 100 versions, the page's first request, in the page",
        "≤ 200 ms",
        opened.screen_ms <= 200.0,
        &format!(
            "all {:.0} drawn with their changes {:.0} ms after the address; {held_versions:.0} held; fetch + JSON.parse of the whole record {whole_reference:.0} ms; {held}",
            opened.versions, opened.all_ms
        ),
    ));
    lines.push_str(&jank_rows(
        "reach.object.jank",
        "opening an object's recorded history of 1,000 versions",
        &history_jank,
        FRAME_BUDGET_MS,
        "",
    ));
    print!("{lines}");
    std::fs::write(out_path(), lines).expect("write reach.tsv");
    let _ = std::fs::remove_dir_all(&dir);
}
