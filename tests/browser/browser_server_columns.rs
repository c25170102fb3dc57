//! The server's own columns, as a person sees them in headless
//! Chromium against `deltascope serve --demo`: the pods table shows the
//! headers the server's Table defines (READY, STATUS, RESTARTS, AGE; NAMESPACE
//! across namespaces), the Wide toggle adds the priority-1 columns (IP, NODE)
//! and puts `wide=1` in the address without reloading the data, a custom
//! resource shows its CRD's printer columns, and a pod the simulated cluster
//! churns gets its STATUS cell updated live, equal to what the server prints.
//! Screenshots are saved as test artefacts.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use support::{http, Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

/// Waits until the table's columns, less `kubectl top`'s (which follow the
/// object columns of pods and nodes once a metrics window arrives; see
/// browser_metrics_columns), are `expected`.
async fn wait_titles(browser: &Browser, what: &str, expected: &[&str]) {
    const USAGE: [&str; 6] = ["CPU", "MEMORY", "CPU%REQ", "CPU%LIM", "MEM%REQ", "MEM%LIM"];
    browser
        .wait_for(what, SYNC, || async {
            let now = browser.titles().await;
            let of_objects: Vec<&str> = now
                .iter()
                .map(String::as_str)
                .filter(|t| !USAGE.contains(t))
                .collect();
            (of_objects == expected).then_some(())
        })
        .await;
}

/// Visible rows as key → (rv, cells of the named columns).
async fn cells(browser: &Browser, columns: &[&str]) -> HashMap<String, (String, Vec<String>)> {
    let value = browser
        .client
        .execute(
            "const heads = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
             const at = arguments[0].map(c => heads.indexOf(c));\
             return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])')).map(r =>\
               [r.dataset.key, r.dataset.rv, at.map(i => i < 0 ? null : r.children[i].textContent)]);",
            vec![json!(columns)],
        )
        .await
        .expect("read cells");
    let rows: Vec<(String, String, Vec<Option<String>>)> =
        serde_json::from_value(value).unwrap_or_default();
    rows.into_iter()
        .map(|(key, rv, cells)| {
            (
                key,
                (
                    rv,
                    cells.into_iter().map(Option::unwrap_or_default).collect(),
                ),
            )
        })
        .collect()
}

/// The server's own Table for one pod: (resourceVersion, cells by column name).
fn printed_pod(server: &DemoServer, key: &str) -> Option<(String, HashMap<String, String>)> {
    let (namespace, name) = key.split_once('/')?;
    let (status, body) = http(
        server.addr,
        "GET",
        &format!("/api/v1/namespaces/{namespace}/pods/{name}"),
        &[
            ("Authorization", &format!("Bearer {}", server.token)),
            ("Accept", TABLE),
        ],
        None,
    );
    if status != 200 {
        return None;
    }
    let table: Value = serde_json::from_slice(&body).ok()?;
    let names: Vec<String> = table["columnDefinitions"]
        .as_array()?
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_uppercase())
        .collect();
    let row = &table["rows"][0];
    let cells = names
        .into_iter()
        .zip(row["cells"].as_array()?.iter())
        .map(|(n, c)| (n, c.as_str().map_or_else(|| c.to_string(), str::to_string)))
        .collect();
    let rv = row["object"]["metadata"]["resourceVersion"]
        .as_str()?
        .to_string();
    Some((rv, cells))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_show_the_servers_columns_wide_view_crd_columns_and_live_cells() {
    let server = DemoServer::start(&["--seed", "8", "--pods", "120", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", SYNC).await;

    // The server's priority-0 columns, NAMESPACE first across namespaces (kubectl -A).
    wait_titles(
        &browser,
        "the server's pod columns",
        &["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
    )
    .await;
    assert_eq!(
        browser
            .attr("table.resource-table", "data-columns")
            .await
            .as_deref(),
        Some("server")
    );
    // READY/STATUS cells are the server's own text.
    let shown = cells(&browser, &["READY", "STATUS", "AGE"]).await;
    assert!(!shown.is_empty(), "rows are shown");
    for (key, (_, row)) in shown.iter().take(5) {
        let (_, printed) = printed_pod(&server, key).expect("the server prints the pod");
        assert_eq!(row[0], printed["READY"], "READY of {key}");
        assert_eq!(row[1], printed["STATUS"], "STATUS of {key}");
        assert!(
            row[2].ends_with(['s', 'm', 'h', 'd', 'y']),
            "AGE of {key}: {:?}",
            row[2]
        );
    }
    let (_, _, _, digest_before) = browser.store_stats().await.expect("stats");
    // Each informer the page starts leaves a `deltascope:list-start` mark.
    let informers_started = "return performance.getEntriesByName('deltascope:list-start').length;";
    let started_before = browser.script(informers_started).await;
    browser.screenshot("server-columns-pods.png").await;

    // Wide: the priority-1 columns join, the address says so, the data is not reloaded.
    browser.click("[data-testid=wide-toggle]").await;
    browser
        .wait_for("the wide pod columns", SYNC, || async {
            let now = browser.titles().await;
            (now.len() > 6
                && now[..6] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
                && now.iter().any(|t| t == "IP")
                && now.iter().any(|t| t == "NODE"))
            .then_some(())
        })
        .await;
    let hash = browser.script("return location.hash;").await;
    assert!(
        hash.as_str().is_some_and(|h| h.contains("wide=1")),
        "wide is part of the link: {hash}"
    );
    assert_eq!(
        browser
            .attr("[data-testid=wide-toggle]", "aria-pressed")
            .await
            .as_deref(),
        Some("true")
    );
    let (_, synced, state, digest_wide) = browser.store_stats().await.expect("stats");
    assert_eq!((synced.as_str(), state.as_str()), ("true", "watching"));
    assert_eq!(digest_wide, digest_before, "no relist for a wider view");
    assert_eq!(
        browser.script(informers_started).await,
        started_before,
        "the wide view reuses the running informer"
    );
    let wide = cells(&browser, &["IP", "NODE"]).await;
    let (key, (_, ip_node)) = wide.iter().next().expect("a row");
    let (_, printed) = printed_pod(&server, key).expect("printed pod");
    assert_eq!(ip_node[0], printed["IP"], "IP of {key}");
    assert_eq!(ip_node[1], printed["NODE"], "NODE of {key}");
    browser.screenshot("server-columns-pods-wide.png").await;
    browser.click("[data-testid=wide-toggle]").await;
    wait_titles(
        &browser,
        "the default columns again",
        &["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
    )
    .await;

    // A custom resource: its CRD's printer columns (Color has priority 1).
    let base = format!("http://{}/", server.addr);
    browser
        .client
        .goto(&format!("{base}#/demo.deltascope.dev/v1/widgets"))
        .await
        .expect("widgets route");
    browser
        .wait_synced("widgets.demo.deltascope.dev", SYNC)
        .await;
    wait_titles(
        &browser,
        "the widget printer columns",
        &["NAMESPACE", "NAME", "SIZE", "PHASE", "AGE"],
    )
    .await;
    browser
        .client
        .goto(&format!("{base}#/demo.deltascope.dev/v1/widgets?wide=1"))
        .await
        .expect("wide widgets link");
    wait_titles(
        &browser,
        "the wide widget columns",
        &["NAMESPACE", "NAME", "SIZE", "COLOR", "PHASE", "AGE"],
    )
    .await;
    browser.screenshot("server-columns-widgets-wide.png").await;

    // Churn: a pod's STATUS cell follows the cluster, as the server prints it.
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .expect("pods route");
    browser.wait_synced("pods", SYNC).await;
    wait_titles(
        &browser,
        "the pod columns",
        &["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
    )
    .await;
    let before = cells(&browser, &["STATUS"]).await;
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 60}));
    assert_eq!(status, 200);
    let (key, from, to) = browser
        .wait_for("a pod whose STATUS changed", SYNC, || async {
            let now = cells(&browser, &["STATUS"]).await;
            now.iter().find_map(|(key, (rv, status))| {
                let (old_rv, old) = before.get(key)?;
                (old_rv != rv && old[0] != status[0])
                    .then(|| (key.clone(), old[0].clone(), status[0].clone()))
            })
        })
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    assert_ne!(from, to);
    // Once churn stops, the rows and the server agree (pods churned away are gone from both).
    let checked = browser
        .wait_for("the rows to match the server", SYNC, || async {
            let now = cells(&browser, &["STATUS"]).await;
            let mut checked = 0;
            for (key, (rv, status)) in now.iter().take(12) {
                let (server_rv, printed) = printed_pod(&server, key)?;
                if *rv != server_rv || status[0] != printed["STATUS"] {
                    return None;
                }
                checked += 1;
            }
            (checked > 0).then_some(checked)
        })
        .await;
    assert!(checked > 0, "{key}: {from} → {to}");
    browser.screenshot("server-columns-live-status.png").await;
    browser.client.close().await.expect("close");
}
