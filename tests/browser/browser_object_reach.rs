//! The object view reaches back into serve's record, in headless Chromium
//! against `deltascope serve --demo`:
//! - recording into a SQLite file, with churn and a Deployment scaled by
//!   field manager `reach-test` through `POST /_sim/patch`, for ~20 s
//!   before any page opens; then a fresh browser opens the Deployment's own
//!   address: its History lists versions with `data-source=recorder` older
//!   than the page (`data-time`), the scale among them with its manager,
//!   then the page's own (`data-source=page`), no resourceVersion twice;
//!   the oldest says "first seen … (created … ago)", not "created"; the
//!   record's line says it was read; the Story holds the recorded versions
//!   too, and what the Deployment owns from the record (its ReplicaSet
//!   and pods, neither kept; `data-family=read`); its Events hold the
//!   scale's event, expired from the cluster (`--event-ttl 8`) before the
//!   page opened, from serve's record (`data-source=recorder`,
//!   `data-expired=true`); `history-stats` says
//!   "recorded since … by serve" with
//!   `data-recorded-from` before the page opened;
//!   the marks route counts the range as the lines route lists it, and the
//!   timeline, zoomed out past the page's own history, draws serve's
//!   record in the deployments lane (`data-recorded`), and the Deltas
//!   list of that range holds the record's deltas (`data-recorded=true`)
//!   among the page's own, the manager filter passing the scale; *Export recording*
//!   writes the record's versions from before the page opened (the scale
//!   among them) before the page's own, each once, and no note;
//! - with `--history off`: nothing is asked, the versions are the page's
//!   own, the first still "first seen", `history-stats` says the
//!   history starts when the page opened (`data-recorded-from` empty), and
//!   the zoomed-out timeline draws nothing recorded.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use support::scratch::{unix_ms, Scratch};
use support::{timeline, Browser, DemoServer};

const WAIT: Duration = Duration::from_secs(60);

fn rfc3339_ms(text: &str) -> i64 {
    deltascope_facts::time::parse_rfc3339_millis(text)
        .unwrap_or_else(|| panic!("{text:?} is not RFC 3339"))
}

/// The first Deployment with replicas: (namespace, name, replicas).
fn first_deployment(server: &DemoServer) -> (String, String, u64) {
    let (status, body) = server.get("/apis/apps/v1/deployments");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).expect("deployments");
    let deployment = list["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|d| d["spec"]["replicas"].as_u64().is_some_and(|r| r >= 1))
        })
        .expect("a deployment with replicas");
    let text = |pointer: &str| {
        deployment
            .pointer(pointer)
            .and_then(Value::as_str)
            .expect(pointer)
            .to_string()
    };
    (
        text("/metadata/namespace"),
        text("/metadata/name"),
        deployment["spec"]["replicas"].as_u64().expect("replicas"),
    )
}

/// One `[data-testid=object-delta]` as the page draws it.
#[derive(Debug, Clone)]
struct Row {
    source: String,
    time: String,
    managers: String,
    rv: String,
    kind: String,
    beginning: String,
}

async fn history_rows(browser: &Browser) -> Option<Vec<Row>> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=object-delta]')).map(d => [\
               d.dataset.source || '', d.dataset.time || '', d.dataset.managers || '', d.dataset.rv || '',\
               d.dataset.deltaType || '',\
               (d.querySelector('[data-testid=object-beginning]') || {}).textContent || '']);",
        )
        .await;
    let rows: Vec<Vec<String>> = serde_json::from_value(value).ok()?;
    Some(
        rows.into_iter()
            .map(|r| Row {
                source: r[0].clone(),
                time: r[1].clone(),
                managers: r[2].clone(),
                rv: r[3].clone(),
                kind: r[4].clone(),
                beginning: r[5].clone(),
            })
            .collect(),
    )
}

async fn open_tab(browser: &Browser, label: &str) {
    browser
        .script(&format!(
            "Array.from(document.querySelectorAll('.object-view [role=tab]'))\
               .find(b => b.textContent.startsWith('{label}')).click();"
        ))
        .await;
}

/// Signs in and opens the object view of `namespace/name` from its address.
async fn open_deployment(server: &DemoServer, browser: &Browser, namespace: &str, name: &str) {
    browser.client.goto(&server.login_url).await.expect("login");
    browser
        .client
        .goto(&format!(
            "http://{}/#/apps/v1/deployments/{namespace}/{name}",
            server.addr
        ))
        .await
        .expect("the deployment's address");
    let key = format!("{namespace}/{name}");
    browser
        .wait_for("the deployment's object view", WAIT, || async {
            let shown = browser
                .attr("[data-testid=object-view]", "data-key")
                .await?;
            (shown == key).then_some(())
        })
        .await;
    open_tab(browser, "History").await;
}

/// `history-stats`: its text and `data-recorded-from`.
async fn history_stats(browser: &Browser) -> Option<(String, String)> {
    let value = browser
        .script(
            "const e = document.querySelector('[data-testid=history-stats]');\
             return e ? [e.textContent.trim(), e.getAttribute('data-recorded-from')] : null;",
        )
        .await;
    serde_json::from_value(value).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_object_view_reaches_back_into_serve_s_record() {
    let scratch = Scratch::new("object-reach", "recording");
    let history = format!("sqlite:{}", scratch.0.join("h.sqlite").display());
    let server = DemoServer::start(&[
        "--seed",
        "11",
        "--pods",
        "40",
        "--churn",
        "5",
        "--history",
        &history,
        // the scale's event expires before the page opens: only serve's
        // record keeps it
        "--event-ttl",
        "8",
    ]);
    let (namespace, name, replicas) = first_deployment(&server);
    let key = format!("{namespace}/{name}");
    // Let the recorder list first, then scale it: an update recorded
    // before any page opens.
    std::thread::sleep(Duration::from_secs(3));
    let (status, body) = server.post_json(
        "/_sim/patch",
        &json!({"resource": "deployments.apps", "key": key,
                "patch": {"spec": {"replicas": replicas + 1}}, "manager": "reach-test"}),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // Churn with no page open.
    std::thread::sleep(Duration::from_secs(17));
    let record_path =
        format!("/_deltascope/history?resource=deployments.apps&namespace={namespace}&name={name}");
    let (status, body) = server.get(&record_path);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let record = String::from_utf8(body).expect("NDJSON");
    assert!(
        record.contains("\"reach-test\""),
        "serve recorded the scale:\n{record}"
    );

    let browser = Browser::start().await;
    let page_opened_ms = unix_ms();
    open_deployment(&server, &browser, &namespace, &name).await;
    let rows = browser
        .wait_for("recorded versions before the page's own", WAIT, || async {
            let rows = history_rows(&browser).await?;
            let recorded = rows.iter().any(|r| r.source == "recorder");
            let own = rows.iter().any(|r| r.source == "page");
            (recorded && own).then_some(rows)
        })
        .await;
    browser.screenshot("object-reach-history.png").await;
    // Newest first: the page's own on top, the record's below.
    let first_recorded = rows
        .iter()
        .position(|r| r.source == "recorder")
        .expect("a recorded row");
    assert!(
        rows[first_recorded..]
            .iter()
            .all(|r| r.source == "recorder"),
        "the record before the page's own: {rows:?}"
    );
    for row in &rows {
        assert!(row.source == "page" || row.source == "recorder", "{row:?}");
        rfc3339_ms(&row.time);
    }
    assert!(
        rows.iter()
            .filter(|r| r.source == "recorder")
            .all(|r| rfc3339_ms(&r.time) < page_opened_ms),
        "recorded versions are older than the page: {rows:?}"
    );
    let scaled = rows
        .iter()
        .find(|r| r.source == "recorder" && r.managers.split(',').any(|m| m == "reach-test"))
        .unwrap_or_else(|| panic!("the recorded scale, with its manager: {rows:?}"));
    assert_eq!(scaled.kind, "Updated", "{scaled:?}");
    let mut seen = HashSet::new();
    for row in &rows {
        assert!(
            seen.insert((row.rv.clone(), row.kind == "Deleted")),
            "a version shown twice: {row:?} in {rows:?}"
        );
    }
    let oldest = rows.last().expect("rows");
    assert!(
        oldest.beginning.starts_with("first seen ") && oldest.beginning.contains("(created "),
        "the demo's deployment existed before the recorder: {oldest:?}"
    );
    assert!(
        !rows.iter().any(|r| r.beginning == "created"),
        "no creation was observed: {rows:?}"
    );
    let reach = browser
        .attr("[data-testid=object-reach]", "data-state")
        .await;
    assert_eq!(reach.as_deref(), Some("read"));

    // The status line: recorded since when, by serve.
    let (text, from) = browser
        .wait_for("history-stats to say serve records", WAIT, || async {
            history_stats(&browser)
                .await
                .filter(|(_, from)| !from.is_empty())
        })
        .await;
    assert!(text.starts_with("recorded since "), "{text}");
    assert!(text.contains(" by serve"), "{text}");
    assert!(rfc3339_ms(&from) < page_opened_ms, "{from}");

    // The Story holds the recorded versions too.
    open_tab(&browser, "Story").await;
    browser
        .wait_for("recorded versions in the story", WAIT, || async {
            let sources = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=story-row]'))\
                       .map(r => [r.dataset.source, r.dataset.managers]);",
                )
                .await;
            let rows: Vec<Vec<String>> = serde_json::from_value(sources).ok()?;
            rows.iter()
                .any(|r| r[0] == "recorder" && r[1].split(',').any(|m| m == "reach-test"))
                .then_some(())
        })
        .await;
    // ... and what the Deployment owns, from serve's record: its
    // ReplicaSet and its pods, though the page keeps neither.
    let family = browser
        .wait_for(
            "the story to read what the deployment owns",
            WAIT,
            || async {
                browser
                    .attr("[data-testid=object-story]", "data-family")
                    .await
                    .filter(|state| state != "reading")
            },
        )
        .await;
    assert_eq!(family, "read");
    let owned: Vec<Vec<String>> = serde_json::from_value(
        browser
            .script(
                "return Array.from(document.querySelectorAll('[data-testid=story-row]'))\
                   .map(r => [r.dataset.resource, r.dataset.source, r.dataset.key]);",
            )
            .await,
    )
    .expect("story rows");
    for resource in ["replicasets.apps", "pods"] {
        assert!(
            owned.iter().any(|r| r[0] == resource
                && r[1] == "recorder"
                && r[2].starts_with(&format!("{namespace}/{name}-"))),
            "the story holds the deployment's {resource} from serve's record: {owned:?}"
        );
    }
    // Its Events: the scale's, expired from the cluster before the page
    // opened, from serve's record of the namespace's events.
    open_tab(&browser, "Events").await;
    browser
        .wait_for(
            "the scale's expired event from serve's record",
            WAIT,
            || async {
                let events = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=object-event]'))\
                       .map(e => [e.dataset.reason, e.dataset.source, e.dataset.expired]);",
                )
                .await;
                let events: Vec<Vec<String>> = serde_json::from_value(events).ok()?;
                events
                    .iter()
                    .any(|e| e[0] == "ScalingReplicaSet" && e[1] == "recorder" && e[2] == "true")
                    .then_some(())
            },
        )
        .await;
    browser.screenshot("object-reach-events.png").await;
    let kept: Vec<String> = serde_json::from_value(
        browser
            .script(
                "return Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
                   .map(k => k.dataset.resource);",
            )
            .await,
    )
    .expect("kept resources");
    assert!(
        !kept.iter().any(|r| r == "pods" || r == "replicasets.apps"),
        "neither is kept: {kept:?}"
    );
    browser.screenshot("object-reach-story.png").await;

    // serve's counted record agrees with its lines over the same range.
    let (since, until) = (page_opened_ms - 60_000, page_opened_ms);
    assert_eq!(
        recorded_in_marks(&server, since, until + 1),
        recorded_in_lines(&server, since, until),
        "the marks count every recorded delta of the range once"
    );
    // Live, the timeline shows the page's own history: nothing from serve.
    assert_eq!(
        timeline::recorded_lane(&browser, "deployments.apps")
            .await
            .map(|lane| lane.0),
        Some(0)
    );
    // Zoomed out past the page's own history, the lane reaches back.
    timeline::zoom_out(&browser, 1500).await;
    let drawn = browser
        .wait_for(
            "the deployments lane to draw serve's record",
            WAIT,
            || async {
                timeline::recorded_lane(&browser, "deployments.apps")
                    .await
                    .map(|lane| lane.0)
                    .filter(|n| *n > 0)
            },
        )
        .await;
    let held = recorded_in_lines(&server, 0, page_opened_ms);
    assert!(
        drawn <= held,
        "the lane draws {drawn} recorded deltas; serve held {held} before the page"
    );
    browser.screenshot("object-reach-timeline.png").await;

    // The Deltas list lists serve's record among the page's own, the scale
    // with its manager, and filters it like its own. Following live again
    // (a zoom that ended short of now paused the view): the list then
    // covers everything, not the paused range, which may miss the scale.
    if browser
        .attr("[data-testid=resume-live]", "data-testid")
        .await
        .is_some()
    {
        browser.click("[data-testid=resume-live]").await;
    }
    browser.click("[data-testid=toggle-deltas]").await;
    let delta_rows = || async {
        let rows = browser
            .script(
                "return Array.from(document.querySelectorAll('[data-testid=delta-list] tr[data-delta-key]'))\
                   .map(r => [r.dataset.deltaKey, r.dataset.recorded, r.dataset.managers, r.dataset.rv]);",
            )
            .await;
        serde_json::from_value::<Vec<Vec<String>>>(rows).ok()
    };
    let listed = browser
        .wait_for("the delta list to hold serve's record", WAIT, || async {
            let state = browser
                .attr("[data-testid=delta-list]", "data-recorded")
                .await;
            let rows = delta_rows().await?;
            (state.as_deref() == Some("read") && rows.iter().any(|r| r[1] == "true"))
                .then_some(rows)
        })
        .await;
    assert!(
        listed.iter().any(|r| r[1] == "false"),
        "the page's own deltas stay: {listed:?}"
    );
    browser
        .type_into("[data-testid=delta-manager]", "reach-test")
        .await;
    let filtered = browser
        .wait_for("the manager filter over recorded deltas", WAIT, || async {
            let rows = delta_rows().await?;
            (!rows.is_empty() && rows.iter().all(|r| r[2].contains("reach-test"))).then_some(rows)
        })
        .await;
    assert!(
        filtered.iter().any(|r| r[0] == key && r[1] == "true"),
        "the recorded scale passes the filter: {filtered:?}"
    );
    browser.screenshot("object-reach-deltas.png").await;
    browser.click("[data-testid=toggle-deltas]").await;

    // Export recording holds serve's record from before the page opened,
    // the scale among it, then the page's own: each version once.
    let scaled_rv = record
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["managers"].to_string().contains("reach-test"))
        .and_then(|line| line["resourceVersion"].as_str().map(str::to_string))
        .expect("the recorded scale's resourceVersion");
    let exported = browser
        .download_by_clicking("[data-testid=export]", "the exported recording")
        .await;
    let lines: Vec<Value> = exported
        .lines()
        .map(|line| serde_json::from_str(line).expect("an NDJSON line"))
        .collect();
    let versions: Vec<(String, String, String)> = lines
        .iter()
        .filter(|line| line.get("object").is_some())
        .map(|line| {
            let meta = &line["object"]["metadata"];
            (
                format!(
                    "{}/{}",
                    meta["namespace"].as_str().unwrap_or(""),
                    meta["name"].as_str().unwrap_or("")
                ),
                meta["resourceVersion"].as_str().unwrap_or("").to_string(),
                line["type"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        versions
            .iter()
            .any(|(k, rv, _)| *k == key && *rv == scaled_rv),
        "the export holds the scale recorded before the page opened (rv {scaled_rv}): {versions:?}"
    );
    let mut once = HashSet::new();
    for version in &versions {
        assert!(once.insert(version.clone()), "written twice: {version:?}");
    }
    assert_eq!(
        browser.attr("[data-testid=export-note]", "class").await,
        None,
        "serve's record was read: no note"
    );
}

/// Recorded deployments deltas in `[since, until)` as the marks route counts them.
fn recorded_in_marks(server: &DemoServer, since: i64, until: i64) -> u64 {
    let time = |ms| deltascope_facts::time::format_rfc3339_millis(ms).expect("a time");
    let (status, body) = server.get(&format!(
        "/_deltascope/history/marks?resource=deployments.apps&since={}&until={}&buckets=60",
        time(since),
        time(until)
    ));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let marks: Value = serde_json::from_slice(&body).expect("marks JSON");
    marks["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .flat_map(|row| row.as_array().expect("a row").iter().skip(1))
        .map(|n| n.as_u64().expect("a count"))
        .sum()
}

/// Recorded deployments deltas in `[since, until]` as the lines route gives them.
fn recorded_in_lines(server: &DemoServer, since: i64, until: i64) -> u64 {
    let time = |ms| deltascope_facts::time::format_rfc3339_millis(ms).expect("a time");
    let (status, body) = server.get(&format!(
        "/_deltascope/history?resource=deployments.apps&since={}&until={}",
        time(since),
        time(until)
    ));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    String::from_utf8(body)
        .expect("NDJSON")
        .lines()
        .filter(|line| line.contains("\"deltaType\""))
        .count() as u64
}
