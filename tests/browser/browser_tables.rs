//! The live table as a user drives it, in headless Chromium against
//! `deltascope serve --demo`: server-side namespace and label filters give
//! exactly the server's rows (same digest as a direct filtered list), the
//! text filter and column sorting reorder what is shown, k9s keys move and
//! open an object whose view shows its YAML and its delta history with the
//! changed fields, the `:deploy` command switches resource, and a
//! built-in dotted group is never probed for a CRD.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);

async fn wait_synced(browser: &Browser, resource: &str) -> (String, String) {
    browser
        .wait_for(&format!("{resource} to sync"), SYNC, || async {
            let resource_now = browser
                .attr("[data-testid=store-stats]", "data-resource")
                .await?;
            let (count, synced, state, digest) = browser.store_stats().await?;
            (resource_now == resource
                && synced == "true"
                && state == "watching"
                && digest.len() == 64)
                .then_some((count, digest))
        })
        .await
}

/// Visible cells of one column (by header title), top to bottom.
async fn column_cells(browser: &Browser, title: &str) -> Vec<String> {
    let script = "const heads = Array.from(document.querySelectorAll('thead th')).map(t => t.textContent.replace(/[▲▼]/g, '').trim());\
                  const i = heads.indexOf(arguments[0]);\
                  return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])')).map(r => r.children[i].textContent);";
    let value = browser
        .client
        .execute(script, vec![json!(title)])
        .await
        .expect("read cells");
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_filters_show_exactly_the_servers_rows() {
    let server = DemoServer::start(&["--seed", "11", "--pods", "400", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    wait_synced(&browser, "pods").await;

    let base = format!("http://{}/", server.addr);
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods?namespace=shop"))
        .await
        .expect("namespace route");
    let (count, digest) = wait_synced(&browser, "pods").await;
    assert_eq!(
        digest,
        server.listed_digest("/api/v1/namespaces/shop/pods"),
        "namespace filter = server's rows"
    );
    let rows = browser.rows().await;
    assert!(
        !rows.is_empty() && rows.iter().all(|(k, _)| k.starts_with("shop/")),
        "only shop pods: {rows:?}"
    );
    assert!(count.parse::<usize>().expect("count") < 400);

    // A label selector taken from a real pod, through the URL as a user would share it.
    let (_, body) = server.get("/api/v1/namespaces/shop/pods?limit=1");
    let first: Value = serde_json::from_slice(&body).expect("list");
    let app = first["items"][0]["metadata"]["labels"]["app"]
        .as_str()
        .expect("app label")
        .to_string();
    let selector = format!("app={app}");
    let encoded = deltascope_facts::percent::encode_query_value(&selector);
    browser
        .client
        .goto(&format!(
            "{base}#/core/v1/pods?namespace=shop&labelSelector={encoded}"
        ))
        .await
        .expect("route");
    browser
        .wait_for("the label-selected rows", SYNC, || async {
            let expected = server.listed_digest(&format!(
                "/api/v1/namespaces/shop/pods?labelSelector={encoded}"
            ));
            let (_, synced, _, digest) = browser.store_stats().await?;
            (synced == "true" && digest == expected).then_some(())
        })
        .await;
    let rows = browser.rows().await;
    assert!(
        !rows.is_empty(),
        "the selector matches at least the pod it came from"
    );
    assert!(
        rows.iter()
            .all(|(k, _)| k.starts_with(&format!("shop/{app}-"))),
        "{selector}: {rows:?}"
    );
    browser.screenshot("tables-filtered.png").await;
    browser.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_filter_sorting_keys_object_view_and_commands() {
    let server = DemoServer::start(&["--seed", "5", "--pods", "300", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    wait_synced(&browser, "pods").await;

    // Text filter: every visible row mentions the text.
    let filter = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=text-filter]"))
        .await
        .expect("filter");
    filter.send_keys("payments").await.expect("type a filter");
    browser
        .wait_for(
            "rows filtered to 'payments'",
            Duration::from_secs(10),
            || async {
                let rows = browser.rows().await;
                (!rows.is_empty() && rows.iter().all(|(k, _)| k.contains("payments"))).then_some(())
            },
        )
        .await;
    filter.clear().await.expect("clear the filter");
    filter.send_keys(" ").await.expect("retype");
    filter.clear().await.expect("clear");

    // Sorting by RESTARTS is numeric and reversible. The header row is
    // drawn again when kubectl top's columns join after the first metrics
    // window: wait for them, so the two clicks land on the same header.
    browser
        .wait_for("kubectl top's columns", Duration::from_secs(30), || async {
            browser
                .titles()
                .await
                .iter()
                .any(|t| t == "CPU")
                .then_some(())
        })
        .await;
    let header = browser
        .client
        .find(fantoccini::Locator::XPath(
            "//th[starts-with(normalize-space(.), 'RESTARTS')]",
        ))
        .await
        .expect("th");
    header.click().await.expect("sort ascending");
    header.click().await.expect("sort descending");
    let restarts = browser
        .wait_for(
            "rows sorted by restarts, descending",
            Duration::from_secs(10),
            || async {
                let cells = column_cells(&browser, "RESTARTS").await;
                // The server prints kubectl's "3 (5m ago)"; the count comes first.
                let numbers: Vec<u64> = cells
                    .iter()
                    .filter_map(|c| c.split_whitespace().next()?.parse().ok())
                    .collect();
                (numbers.len() > 5 && numbers.windows(2).all(|w| w[0] >= w[1]) && numbers[0] > 0)
                    .then_some(numbers)
            },
        )
        .await;
    assert!(
        restarts.first() > restarts.last(),
        "descending: {restarts:?}"
    );
    header.click().await.expect("back to key order");

    // Keys: j, j, Enter opens the third row; its YAML and history show.
    let keys_in_order = browser
        .wait_for("key order again", Duration::from_secs(10), || async {
            let rows = browser.rows().await;
            let mut sorted = rows.clone();
            sorted.sort();
            (rows.len() > 3 && rows == sorted).then_some(rows)
        })
        .await;
    browser.press("j").await;
    browser.press("j").await;
    browser.press("Enter").await;
    let third = keys_in_order[2].0.clone();
    let opened = browser
        .wait_for("the object view", Duration::from_secs(10), || async {
            browser.attr("[data-testid=object-view]", "data-key").await
        })
        .await;
    assert_eq!(opened, third, "Enter opens the selected (third) row");
    let yaml = browser
        .client
        .find(fantoccini::Locator::Css(".object-view pre.code"))
        .await
        .expect("yaml")
        .text()
        .await
        .expect("text");
    let name = third.split('/').nth(1).expect("name");
    assert!(
        yaml.contains("kind: Pod") && yaml.contains(&format!("name: {name}")),
        "YAML of the pod:\n{yaml}"
    );

    // Make this very pod change: scale churn and wait for its rv to move, then read its history.
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 300}));
    assert_eq!(status, 200);
    let tab = browser
        .client
        .find(fantoccini::Locator::XPath(
            "//button[normalize-space(.)='History']",
        ))
        .await
        .expect("tab");
    tab.click().await.expect("history tab");
    let versions = browser
        .wait_for("a second version of some pod", Duration::from_secs(40), || async {
            // Open whichever visible row changed, then read its versions.
            let script = "return document.querySelectorAll('[data-testid=object-history] li.version').length;";
            let count = browser.client.execute(script, vec![]).await.ok()?.as_u64()?;
            // a version whose change is not only bookkeeping (folded)
            let shown = "return document.querySelectorAll('[data-testid=object-history] .change .path').length;";
            let paths = browser.client.execute(shown, vec![]).await.ok()?.as_u64()?;
            if count >= 2 && paths > 0 {
                return Some(count);
            }
            let changed = browser.client.execute("const r = document.querySelector('tr.changed'); return r ? r.dataset.key : null;", vec![]).await.ok()?;
            if let Some(key) = changed.as_str() {
                let row = browser.client.find(fantoccini::Locator::Css(&format!("tr[data-key='{key}']"))).await.ok()?;
                let _ = row.click().await;
                browser.press("Enter").await;
            }
            None
        })
        .await;
    assert!(versions >= 2, "history lists versions");
    let changes = browser
        .client
        .find(fantoccini::Locator::Css(
            "[data-testid=object-history] .change .path",
        ))
        .await;
    assert!(
        changes.is_ok(),
        "a later version lists the fields that changed"
    );
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    browser.screenshot("object-view.png").await;
    browser.press("Escape").await;
    browser
        .wait_for(
            "the object view to close on Esc",
            Duration::from_secs(10),
            || async {
                browser
                    .client
                    .find(fantoccini::Locator::Css("[data-testid=object-view]"))
                    .await
                    .err()
                    .map(|_| ())
            },
        )
        .await;

    // `:deploy` switches resource through the URL.
    browser.run_command("deploy").await;
    let (count, digest) = wait_synced(&browser, "deployments.apps").await;
    assert_eq!(
        digest,
        server.listed_digest("/apis/apps/v1/deployments"),
        "{count} deployments"
    );
    assert_ne!(count, "0", "the demo cluster has deployments");
    let url = browser.client.current_url().await.expect("url");
    assert!(url.as_str().ends_with("#/apps/v1/deployments"), "{url}");

    // A bad command says what is accepted and changes nothing.
    browser.run_command("frobnicate").await;
    let alert = browser.wait_text(".command-bar [role=alert]").await;
    assert!(alert.contains(":deploy"), "{alert}");
    browser.client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_offers_every_served_resource_including_crds() {
    let server = DemoServer::start(&["--seed", "2", "--pods", "50", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    wait_synced(&browser, "pods").await;

    // The picker lists what discovery found, CRD group included.
    let options = browser
        .wait_for("the picker to fill from discovery", Duration::from_secs(20), || async {
            let script = "return Array.from(document.querySelectorAll('[data-testid=resource-select] option')).map(o => o.value);";
            let value = browser.client.execute(script, vec![]).await.ok()?;
            let options: Vec<String> =
                value.as_array()?.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
            options.iter().any(|o| o == "widgets.demo.deltascope.dev").then_some(options)
        })
        .await;
    assert!(
        options.iter().any(|o| o == "deployments.apps"),
        "{options:?}"
    );
    assert!(
        !options.iter().any(|o| o.contains('/')),
        "no subresources: {options:?}"
    );

    // The CRD by its short name.
    browser.press(":").await;
    let input = browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=command-input]"))
        .await
        .expect("command bar");
    input
        .send_keys("wg\u{E007}")
        .await
        .expect("type :wg and Enter");
    let (count, digest) = wait_synced(&browser, "widgets.demo.deltascope.dev").await;
    assert_eq!(
        digest,
        server.listed_digest("/apis/demo.deltascope.dev/v1/widgets"),
        "{count} widgets"
    );

    // A built-in group with a dot is not a CRD's: the page asks for no
    // CustomResourceDefinition of it (that GET was a 404 in the console).
    let base = format!("http://{}/", server.addr);
    support::browser_log(&browser).await;
    browser
        .client
        .goto(&format!("{base}#/discovery.k8s.io/v1/endpointslices"))
        .await
        .expect("endpointslices route");
    wait_synced(&browser, "endpointslices.discovery.k8s.io").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let probes: Vec<String> = support::browser_log(&browser)
        .await
        .iter()
        .map(Value::to_string)
        .filter(|entry| entry.contains("customresourcedefinitions"))
        .collect();
    assert!(probes.is_empty(), "{probes:?}");

    // A resource the cluster does not serve is explained, not a blank table.
    browser
        .client
        .goto(&format!("{base}#/core/v1/gadgets"))
        .await
        .expect("unknown route");
    let notice = browser
        .wait_for(
            "the unknown-resource notice",
            Duration::from_secs(20),
            || async {
                let element = browser
                    .client
                    .find(fantoccini::Locator::Css("[data-testid=unknown-resource]"))
                    .await
                    .ok()?;
                element.text().await.ok()
            },
        )
        .await;
    assert!(notice.contains("does not serve gadgets"), "{notice}");
    browser.client.close().await.expect("close");
}
