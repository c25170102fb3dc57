//! The status bar says what `deltascope serve` does with the cluster's
//! history, in headless Chromium against `serve --demo`:
//! recording into a SQLite file in a scratch directory ("serve: recording
//! 16 resources", as serve's own summary counts them) — and serve's record
//! of the pods (`GET /_deltascope/history`, with a gap made by expiring
//! their watches), imported, replays to the state it ends at and says how
//! many gaps it has —, and, for a
//! `--history` file that is not a database, serve's sentence on why it
//! keeps none, shown as a warning, while the table stays live — and the
//! file is left as it was; and "serve keeps no history (--history off)" for a serve that keeps none.
//! The hook is `.status-bar [data-history-status]`
//! (`recording`/`reading`/`unavailable`/`off`) with `data-warning`.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use fantoccini::Locator;
use serde_json::{json, Value};
use support::scratch::Scratch;
use support::{Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);
/// The page asks serve every 30 s; a recorder still starting at load says
/// "recording" by the next time.
const SAID: Duration = Duration::from_secs(75);

/// The status bar's history item, read in one script: its state word,
/// text, `data-warning`, and whether it is drawn in another colour than
/// the rest of the status bar.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    state: String,
    text: String,
    warning: String,
    coloured: bool,
}

async fn history_item(browser: &Browser) -> Option<Item> {
    let script = "const e = document.querySelector('.status-bar [data-history-status]');\
                  if (!e) return null;\
                  const bar = getComputedStyle(e.closest('.status-bar')).color;\
                  return [e.getAttribute('data-history-status'), e.textContent.trim(),\
                          e.getAttribute('data-warning'), getComputedStyle(e).color !== bar];";
    let value = browser.script(script).await;
    let read = |i: usize| value.get(i)?.as_str().map(str::to_string);
    Some(Item {
        state: read(0)?,
        text: read(1)?,
        warning: read(2)?,
        coloured: value.get(3)?.as_bool()?,
    })
}

/// Signs in to `server` and shows its pods, synced; their count.
async fn pods_shown(server: &DemoServer, browser: &Browser) -> u64 {
    browser.client.goto(&server.login_url).await.expect("login");
    browser
        .client
        .goto(&format!("http://{}/#/core/v1/pods", server.addr))
        .await
        .expect("the pods table");
    let count = browser.wait_synced("pods", SYNC).await;
    count.parse().expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_bar_says_serve_records_the_history() {
    let scratch = Scratch::new("serve-history", "recording");
    let history = format!("sqlite:{}", scratch.0.join("h.sqlite").display());
    let server = DemoServer::start(&[
        "--seed",
        "5",
        "--pods",
        "40",
        "--churn",
        "5",
        "--history",
        &history,
    ]);
    let browser = Browser::start().await;
    assert!(pods_shown(&server, &browser).await > 0, "the demo has pods");
    let item = browser
        .wait_for("the status bar to say serve records", SAID, || async {
            let item = history_item(&browser).await?;
            (item.state == "recording" && item.text.starts_with("serve: recording "))
                .then_some(item)
        })
        .await;
    // The same count serve's summary gives.
    let (status, body) = server.get("/_deltascope/history/summary");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let summary: Value = serde_json::from_slice(&body).expect("summary JSON");
    assert_eq!(summary["history"].as_str(), Some(history.as_str()));
    let resources = summary["recording"]["resources"]
        .as_u64()
        .expect("recording.resources");
    assert!(resources > 1, "{summary}");
    assert_eq!(item.text, format!("serve: recording {resources} resources"));
    assert_eq!((item.warning.as_str(), item.coloured), ("false", false));
    browser.screenshot("serve-history-recording.png").await;

    // serve's record of the pods, with a gap in it (their watches expire),
    // imported into the page: it replays to the state the record ends at
    // and says how many gaps the record has.
    let (status, body) = server.post_json(
        "/_sim/fault",
        &json!({"kind": "expire-watches", "resource": "pods"}),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    browser
        .wait_for("serve to record the gap", SYNC, || async {
            let (_, body) = server.get("/_deltascope/history/summary");
            let summary: Value = serde_json::from_slice(&body).ok()?;
            let pods = summary["resources"]
                .as_array()?
                .iter()
                .find(|r| r["resource"] == "pods")?
                .clone();
            (pods["gaps"].as_i64()? >= 1).then_some(())
        })
        .await;
    let (status, body) = server.get("/_deltascope/history?resource=pods");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let record = String::from_utf8(body).expect("NDJSON");
    let (gaps, expected) = record_end(&record);
    assert!(gaps >= 1, "the record states its gap:\n{record}");
    let file = scratch.0.join("pods-record.ndjson");
    std::fs::write(&file, &record).expect("write the record");
    browser
        .client
        .find(Locator::Css("[data-testid=replay-speed]"))
        .await
        .expect("speed")
        .select_by_value("100")
        .await
        .expect("100×");
    browser
        .client
        .find(Locator::Css("[data-testid=import]"))
        .await
        .expect("import")
        .send_keys(&file.display().to_string())
        .await
        .expect("choose the file");
    let words = browser
        .wait_for(
            "the record to replay to the state it ends at",
            SYNC,
            || async {
                let said = browser.attr("[data-testid=replay]", "data-gaps").await?;
                let (_, synced, _, digest) = browser.store_stats().await?;
                let words = browser
                    .script("const e = document.querySelector('[data-testid=replay-gaps]'); return e ? e.textContent : null;")
                    .await;
                (said == gaps.to_string() && synced == "true" && digest == expected)
                    .then(|| words.as_str().map(str::to_string))
                    .flatten()
            },
        )
        .await;
    let plural = if gaps == 1 { "gap" } else { "gaps" };
    assert!(
        words.contains(&format!("{gaps} {plural} in the record")),
        "{words}"
    );
    browser
        .screenshot("serve-history-record-replayed.png")
        .await;
}

/// The gap lines of a record from `GET /_deltascope/history`, and the
/// digest of the objects it ends with (its lines applied in order: a
/// relist's Replaced lines are changes too, its tombstones deletions).
fn record_end(record: &str) -> (usize, String) {
    let mut gaps = 0;
    let mut objects: BTreeMap<String, String> = BTreeMap::new();
    for line in record.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).expect("a JSON line");
        if value.get("gap").is_some() {
            gaps += 1;
            continue;
        }
        let meta = &value["object"]["metadata"];
        let key = format!(
            "{}/{}",
            meta["namespace"].as_str().expect("namespace"),
            meta["name"].as_str().expect("name")
        );
        if value["type"] == "DELETED" {
            objects.remove(&key);
        } else {
            let rv = meta["resourceVersion"].as_str().expect("resourceVersion");
            objects.insert(key, rv.to_string());
        }
    }
    let digest =
        deltascope::informer::digest_of(objects.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    (gaps, digest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_file_that_is_no_database_is_a_warning_and_the_page_stays_live() {
    let scratch = Scratch::new("serve-history", "garbage");
    let file = scratch.0.join("garbage.sqlite");
    // Bytes no SQLite file starts with.
    let garbage: Vec<u8> = (0..16_384_u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &garbage).expect("write the garbage file");
    let history = format!("sqlite:{}", file.display());
    let server = DemoServer::start(&[
        "--seed",
        "6",
        "--pods",
        "40",
        "--churn",
        "5",
        "--history",
        &history,
    ]);
    let browser = Browser::start().await;
    let pods = pods_shown(&server, &browser).await;
    let item = browser
        .wait_for(
            "the status bar to say why there is no history",
            SAID,
            || async {
                let item = history_item(&browser).await?;
                (item.state == "unavailable").then_some(item)
            },
        )
        .await;
    assert!(item.text.starts_with("no history: "), "{item:?}");
    assert!(item.text.contains(&history), "names the database: {item:?}");
    assert!(item.text.contains("serving live only"), "{item:?}");
    assert_eq!(item.warning, "true", "{item:?}");
    assert!(item.coloured, "drawn as a warning: {item:?}");
    // serve's own words, as its summary says them
    let (status, body) = server.get("/_deltascope/history/summary");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let summary: Value = serde_json::from_slice(&body).expect("summary JSON");
    assert_eq!(summary["unavailable"].as_str(), Some(item.text.as_str()));
    // Live all the same: the table shows the cluster's pods, still watching.
    assert!(pods > 0, "the demo has pods");
    assert!(!browser.rows().await.is_empty(), "rows are shown");
    browser.wait_synced("pods", SYNC).await;
    browser.screenshot("serve-history-unavailable.png").await;
    drop(browser);
    drop(server);
    assert!(
        std::fs::read(&file).expect("the file is still there") == garbage,
        "serve left the file as it was"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_that_keeps_no_history_says_off() {
    // tests/support starts serve with DELTASCOPE_HISTORY=off
    let server = DemoServer::start(&["--seed", "7", "--pods", "20", "--churn", "0"]);
    let browser = Browser::start().await;
    assert!(pods_shown(&server, &browser).await > 0, "the demo has pods");
    let item = browser
        .wait_for(
            "the status bar to say serve keeps no history",
            SAID,
            || async {
                history_item(&browser)
                    .await
                    .filter(|item| item.state == "off")
            },
        )
        .await;
    assert_eq!(item.text, "serve keeps no history (--history off)");
    assert_eq!((item.warning.as_str(), item.coloured), ("false", false));
}
