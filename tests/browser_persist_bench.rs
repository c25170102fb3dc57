//! The figures of history that survives a reload, in headless
//! Chromium against the release `serve --demo` and release page, in one run
//! per size: a cold open of N pods (navigation → synced table), then — once
//! the page has stored them — a warm reopen of the same tab: when the
//! stored table is shown (all N rows, warm) and when it has synced, against
//! the cold open; the long tasks and frames of that reopen; the bytes stored
//! per object; and, while 2,000 Pod events/s arrive, the frames (the page
//! persists as it goes) and the bytes stored per delta.
//!
//! An `#[ignore]` test run by `cargo xtask bench --only page` (environment
//! as `browser_page_bench.rs`); it writes `persist.tsv` beside
//! `PAGE_BENCH_OUT`.
#![cfg(not(target_arch = "wasm32"))]

mod support;
#[path = "../benches/tsv_row.rs"]
mod tsv_row;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::Client;
use serde_json::{json, Value};
use support::bench::{
    chromium, frame_stats, num, run, run_async, sign_in, FRAMES, FRAME_BUDGET_MS, JANK,
    JANK_OBSERVER,
};
use support::{devtools_of, DemoServer};
use tsv_row::{frame_row, row};

/// Writes per second asked of the sim for about 2,000 Pod events/s (see
/// `browser_page_bench.rs`).
const CHURN_WRITES_PER_S: f64 = 6_000.0;

/// Installed before each load: when the table first shows all `N` rows
/// (warm or not) and when it has synced, in ms since navigation.
fn open_observer(pods: usize) -> String {
    format!(
        "window.__open = {{shown: null, synced: null, warmSeen: false}};\
         const check = () => {{ const e = document.querySelector('[data-testid=store-stats]'); if (!e) return;\
           const full = e.dataset.resource === 'pods' && Number(e.dataset.count) === {pods};\
           if (e.dataset.warm === 'true') window.__open.warmSeen = true;\
           if (full && window.__open.shown === null) window.__open.shown = performance.now();\
           if (full && e.dataset.synced === 'true' && e.dataset.warm === 'false' && window.__open.synced === null)\
             window.__open.synced = performance.now(); }};\
         new MutationObserver(check).observe(document, {{subtree: true, childList: true, attributes: true}});"
    )
}

/// What the database holds for pods: the meta record's figures, or null.
const STORED: &str = "const done = arguments[arguments.length - 1];\
    const open = indexedDB.open('deltascope');\
    open.onerror = () => done(null);\
    open.onsuccess = () => { const db = open.result;\
      if (!db.objectStoreNames.contains('meta')) { db.close(); return done(null); }\
      const get = db.transaction('meta').objectStore('meta').get('#/core/v1/pods');\
      get.onsuccess = () => { db.close(); const text = get.result; if (!text) return done(null); const m = JSON.parse(text);\
        const logBytes = m.blocks.reduce((s, b) => s + b.bytes, 0);\
        const deltas = m.blocks.length ? m.blocks[m.blocks.length - 1].end_seq - m.blocks[0].first_seq : 0;\
        done({objects: m.base_objects, baseBytes: m.base_bytes, logBytes, deltas, generation: m.generation,\
              nextSeq: m.blocks.length ? m.blocks[m.blocks.length - 1].end_seq : m.base_seq}); };\
      get.onerror = () => { db.close(); done(null); }; };";

async fn stored(client: &Client) -> Value {
    run_async(client, STORED, vec![]).await
}

/// Navigates to the pods table with the observers installed; (shown ms,
/// synced ms, warm seen, long tasks and frames up to synced).
async fn open_pods(client: &Client, server: &DemoServer, pods: usize) -> (f64, f64, bool, Value) {
    client.goto("about:blank").await.expect("blank");
    let mut ids = Vec::new();
    for source in [JANK_OBSERVER.to_string(), open_observer(pods)] {
        let added = devtools_of(
            client,
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
        )
        .await;
        ids.push(added["identifier"].clone());
    }
    client
        .goto(&format!("http://{}/#/core/v1/pods", server.addr))
        .await
        .expect("open the pods table");
    let deadline = Instant::now() + Duration::from_secs(900);
    let open = loop {
        let open = run(client, "return window.__open;", vec![]).await;
        if open["synced"].is_number() {
            break open;
        }
        assert!(
            Instant::now() < deadline,
            "the pods table did not sync: {open}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for id in ids {
        devtools_of(
            client,
            "Page.removeScriptToEvaluateOnNewDocument",
            json!({ "identifier": id }),
        )
        .await;
    }
    let synced = num(&open, "synced");
    let jank = run(client, JANK, vec![json!(0), json!(synced)]).await;
    (
        num(&open, "shown"),
        synced,
        open["warmSeen"] == json!(true),
        jank,
    )
}

/// Waits until the stored record satisfies `ready`; it, and how long that took.
async fn wait_stored(client: &Client, what: &str, ready: impl Fn(&Value) -> bool) -> (Value, f64) {
    let started = Instant::now();
    loop {
        let value = stored(client).await;
        if ready(&value) {
            return (value, started.elapsed().as_secs_f64() * 1000.0);
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "{what}: stored now {value}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The average JSON size of a pod (a page of 500 from the server).
fn json_bytes_per_pod(server: &DemoServer) -> f64 {
    let (status, body) = server.get("/api/v1/pods?limit=500");
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("a pod list");
    let items = list["items"].as_array().map_or(1, Vec::len).max(1);
    body.len() as f64 / items as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by `cargo xtask bench --only page`"]
async fn persist_figures() {
    let quick = std::env::var("PAGE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let sizes: Vec<usize> = match std::env::var("PERSIST_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) if quick => vec![30_000],
        Err(_) => vec![100_000],
    };
    let churn_ms = if quick { 10_000.0 } else { 30_000.0 };
    let mut tsv = String::new();
    let mut raw = Vec::new();
    for pods in sizes {
        let k = pods / 1000;
        let count = pods.to_string();
        let server = DemoServer::start(&["--seed", "3", "--pods", &count, "--churn", "0"]);
        let browser = chromium().await;
        let client = &browser.client;
        sign_in(client, &server).await;
        let (_, cold_ms, _, cold_jank) = open_pods(client, &server, pods).await;
        eprintln!("persist bench: {k}k pods, cold open → synced {cold_ms:.0} ms");
        let (stored_now, store_ms) = wait_stored(client, "the pods' snapshot", |v| {
            num(v, "objects") == pods as f64
        })
        .await;
        let per_object = num(&stored_now, "baseBytes") / pods as f64;
        let json_per_pod = json_bytes_per_pod(&server);
        let (shown_ms, warm_ms, warm_seen, warm_jank) = open_pods(client, &server, pods).await;
        assert!(warm_seen, "the reopen showed the stored table warm");
        eprintln!(
            "persist bench: {k}k pods, warm reopen: shown {shown_ms:.0} ms, synced {warm_ms:.0} ms"
        );
        tsv.push_str(&row(
            &format!("persist.warm.shown.{k}k"),
            &format!("warm reopen of {k}k pods: the stored table shown (every row)"),
            "ms",
            shown_ms,
            1000.0,
            "the goal (1 s)",
            "≤ 1 s",
            shown_ms <= 1000.0,
            &format!("navigation → all {pods} rows in the table, warm; the cold open took {cold_ms:.0} ms"),
        ));
        tsv.push_str(&row(
            &format!("persist.warm.synced.{k}k"),
            &format!("warm reopen of {k}k pods → synced, against a cold open"),
            "ms",
            warm_ms,
            cold_ms,
            "a cold open of the same pods, same tab, same run",
            "≤ 0.3×",
            warm_ms <= 0.3 * cold_ms,
            &format!(
                "the resumed watch caught up at its first bookmark; reopen: {} long tasks (longest {:.0} ms), frame p95 {:.1} ms; cold: {} long tasks (longest {:.0} ms)",
                num(&warm_jank, "count"),
                num(&warm_jank, "longest"),
                num(&warm_jank, "p95"),
                num(&cold_jank, "count"),
                num(&cold_jank, "longest"),
            ),
        ));
        tsv.push_str(&row(
            &format!("persist.bytes.object.{k}k"),
            &format!("bytes stored per object ({k}k pods' snapshot)"),
            "B",
            per_object,
            json_per_pod,
            "a pod's JSON",
            "(reported)",
            true,
            &format!(
                "{:.0} MB stored for {pods} pods; written {store_ms:.0} ms after the cold open synced",
                num(&stored_now, "baseBytes") / 1e6
            ),
        ));
        raw.push(json!({"id": format!("persist.{k}k"), "cold_ms": cold_ms, "shown_ms": shown_ms,
            "warm_ms": warm_ms, "stored": stored_now, "cold_jank": cold_jank, "warm_jank": warm_jank}));

        // 2,000 Pod events/s while the page stores them.
        let before = stored(client).await;
        let (status, body) = server.post_json(
            "/_sim/churn",
            &json!({ "events_per_sec": CHURN_WRITES_PER_S }),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let frames = run_async(client, FRAMES, vec![json!(churn_ms), json!("")]).await;
        let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
        assert_eq!(status, 200);
        let history_end: f64 = run(
            client,
            "return Number(document.querySelector('[data-testid=history-stats]').dataset.deltas);",
            vec![],
        )
        .await
        .as_f64()
        .unwrap_or(f64::NAN);
        let (after, _) = wait_stored(client, "the churn's deltas", |v| {
            num(v, "nextSeq") >= history_end
        })
        .await;
        tsv.push_str(&frame_row(
            &format!("persist.frames.churn.{k}k"),
            &format!(
                "frame p95 while about 2,000 Pod events/s arrive over {k}k pods and are stored"
            ),
            FRAME_BUDGET_MS,
            frame_stats(&frames),
            churn_ms / 1000.0,
        ));
        let same_base = after["generation"] == before["generation"];
        let deltas = num(&after, "nextSeq") - num(&before, "nextSeq");
        let bytes = if same_base {
            num(&after, "logBytes") - num(&before, "logBytes")
        } else {
            // a new base was written meanwhile: count what the log holds now
            num(&after, "logBytes")
        };
        let per_delta = if same_base {
            bytes / deltas
        } else {
            bytes / num(&after, "deltas")
        };
        tsv.push_str(&row(
            &format!("persist.bytes.delta.{k}k"),
            &format!("bytes stored per delta (Pod updates over {k}k pods)"),
            "B",
            per_delta,
            json_per_pod,
            "a pod's JSON",
            "(reported)",
            true,
            &format!(
                "{deltas:.0} deltas stored during the churn; {}",
                if same_base {
                    "same base"
                } else {
                    "a new base was written meanwhile"
                }
            ),
        ));
        raw.push(json!({"id": format!("persist.churn.{k}k"), "frames": frames, "before": before, "after": after}));
        drop(browser);
    }
    let out = std::env::var_os("PAGE_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/page.json")
        });
    let tsv_path = out.with_file_name("persist.tsv");
    if let Some(dir) = tsv_path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(
        out.with_file_name("persist.json"),
        format!("{}\n", json!({"figures": raw})),
    )
    .expect("write the JSON");
    std::fs::write(&tsv_path, &tsv).expect("write the TSV");
    print!("{tsv}");
}
