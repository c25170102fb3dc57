//! Two table checks in headless Chromium against `deltascope serve
//! --demo`: a custom resource's table shows the printer columns of its CRD
//! (priority 0 only, cells as the server computes them), and a resource the
//! cluster forbids (`--forbid`, a real Kubernetes 403 Status) shows "your
//! cluster role cannot list X in Y" in plain words while other resources
//! still load. Screenshots are saved as test artefacts.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resource_shows_its_crd_printer_columns() {
    let server = DemoServer::start(&["--seed", "5", "--pods", "40", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let base = format!("http://{}/", server.addr);
    browser
        .client
        .goto(&format!("{base}#/demo.deltascope.dev/v1/widgets"))
        .await
        .expect("widgets route");
    let count = browser
        .wait_synced("widgets.demo.deltascope.dev", SYNC)
        .await;
    assert_ne!(count, "0", "the demo has widgets");

    // NAME, then the CRD's priority-0 columns in its order; Color has priority 1.
    let expected = ["NAMESPACE", "NAME", "SIZE", "PHASE", "AGE"];
    browser
        .wait_for("the CRD's printer columns", SYNC, || async {
            (browser.titles().await == expected).then_some(())
        })
        .await;

    // Cells are the objects' own fields (jsonPath .spec.size, .status.phase).
    let (status, body) = server.get("/apis/demo.deltascope.dev/v1/widgets");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).expect("widget list");
    let wanted: HashMap<String, (String, String)> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|w| {
            let key = format!(
                "{}/{}",
                w["metadata"]["namespace"].as_str().unwrap_or(""),
                w["metadata"]["name"].as_str().unwrap_or("")
            );
            let size = w["spec"]["size"].to_string();
            let phase = w["status"]["phase"].as_str().unwrap_or("").to_string();
            (key, (size, phase))
        })
        .collect();
    let rows = browser.script("return Array.from(document.querySelectorAll('tr[data-key]:not([data-deleted])')).map(r => [r.dataset.key, r.children[2].textContent, r.children[3].textContent, r.children[4].textContent]);",
    )
    .await;
    let rows: Vec<(String, String, String, String)> =
        serde_json::from_value(rows).expect("rows as arrays");
    assert!(!rows.is_empty(), "rows are shown");
    for (key, size, phase, age) in &rows {
        let (want_size, want_phase) = wanted
            .get(key)
            .unwrap_or_else(|| panic!("row {key} is a widget the server lists"));
        assert_eq!((size, phase), (want_size, want_phase), "cells of {key}");
        assert!(
            age.ends_with(['s', 'm', 'h', 'd', 'y']),
            "AGE of {key} is a kubectl age: {age:?}"
        );
    }
    browser.screenshot("crd-printer-columns.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_resource_says_which_role_is_missing() {
    let server = DemoServer::start(&[
        "--seed", "6", "--pods", "30", "--churn", "0", "--forbid", "secrets",
    ]);
    // The proxy passes the cluster's 403 Status through unchanged.
    let (status, body) = server.get("/api/v1/namespaces/shop/secrets");
    assert_eq!(status, 403);
    let denial: Value = serde_json::from_slice(&body).expect("Status JSON");
    assert_eq!(denial["reason"], "Forbidden");

    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let base = format!("http://{}/", server.addr);
    // The default view (all pods) first, so that it is kept when we move on.
    browser.wait_synced("pods", SYNC).await;
    browser
        .client
        .goto(&format!("{base}#/core/v1/secrets?namespace=shop"))
        .await
        .expect("secrets route");
    let (kind, title, text) = browser
        .wait_for("the plain-words 403 notice", SYNC, || async {
            let value = browser.script("const n = document.querySelector('[data-testid=plain-error]');\
                 return n ? [n.dataset.kind, n.querySelector('h2').textContent, n.textContent] : null;",
            )
            .await;
            serde_json::from_value::<(String, String, String)>(value).ok()
        })
        .await;
    assert_eq!(kind, "forbidden");
    assert_eq!(
        title,
        "Your cluster role cannot list secrets in namespace shop"
    );
    assert!(
        text.contains("secrets is forbidden: User"),
        "the server's own words follow: {text}"
    );
    let (_, synced, state, _) = browser.store_stats().await.expect("store stats");
    assert_eq!((synced.as_str(), state.as_str()), ("false", "error"));
    browser.screenshot("forbidden-resource.png").await;

    // Other resources are not affected, and the notice goes with the view.
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods?namespace=shop"))
        .await
        .expect("pods route");
    browser.wait_synced("pods", SYNC).await;
    let notice = browser
        .script("return document.querySelectorAll('[data-testid=plain-error]').length;")
        .await;
    assert_eq!(notice, json!(0));
    // The forbidden view's informer, which never loaded, stopped when we left it.
    let kept = browser
        .script("return Array.from(document.querySelectorAll('[data-testid=kept-resource]')).map(k => k.dataset.resource);")
        .await;
    assert_eq!(kept, json!(["pods", "pods (ns=shop)"]));
}
