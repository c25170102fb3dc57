//! Twenty kept resources, as a user who opened them one after another has
//! them, at 1400×900: every one keeps its lane, but the timeline's lanes
//! scroll in a band of their own instead of pushing the table off the
//! screen (before, twenty lanes left the table two visible rows).
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use support::{Browser, DemoServer};

/// The table must keep at least this many rows in view.
const ROWS_IN_VIEW: f64 = 10.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_kept_resources_leave_the_table_room_and_every_lane_reachable() {
    let server = DemoServer::start(&["--seed", "9", "--pods", "60", "--churn", "0"]);
    let browser = Browser::start_sized(1400, 900).await;
    browser.client.goto(&server.login_url).await.expect("login");
    browser.wait_synced("pods", Duration::from_secs(60)).await;
    let mut hashes: Vec<String> = [
        "apps/v1/deployments",
        "apps/v1/replicasets",
        "core/v1/services",
        "core/v1/configmaps",
        "core/v1/events",
        "core/v1/namespaces",
        "core/v1/nodes",
        "apps/v1/statefulsets",
        "apps/v1/daemonsets",
        "batch/v1/jobs",
        "core/v1/secrets",
    ]
    .iter()
    .map(|r| format!("#/{r}"))
    .collect();
    for namespace in ["shop", "data", "kube-system", "default"] {
        for resource in ["core/v1/pods", "apps/v1/deployments"] {
            hashes.push(format!("#/{resource}?namespace={namespace}"));
        }
    }
    hashes.truncate(19);
    // the default capacity (32) keeps them all
    for hash in &hashes {
        browser.script(&format!("location.hash = '{hash}';")).await;
        browser
            .wait_for(
                &format!("{hash} to sync"),
                Duration::from_secs(60),
                || async {
                    let (_, synced, state, _) = browser.store_stats().await?;
                    (synced == "true" && state == "watching").then_some(())
                },
            )
            .await;
    }
    browser.script("location.hash = '#/core/v1/pods';").await;
    browser.wait_synced("pods", Duration::from_secs(30)).await;
    let lanes = browser
        .wait_for("twenty lanes", Duration::from_secs(10), || async {
            let lanes = browser.attr("[data-testid=timeline]", "data-lanes").await?;
            (lanes == "20").then_some(lanes)
        })
        .await;
    assert_eq!(lanes, "20");
    browser.screenshot("twenty-lanes.png").await;

    let geometry = browser
        .script(
            "const table = document.querySelector('.table-scroll').getBoundingClientRect();\
             const row = document.querySelector('tr[data-key]').getBoundingClientRect();\
             const lanes = document.querySelector('.timeline-lanes');\
             const last = Array.from(document.querySelectorAll('[data-testid=timeline-lane]')).pop();\
             lanes.scrollTop = lanes.scrollHeight;\
             const band = lanes.getBoundingClientRect(), lastBox = last.getBoundingClientRect();\
             return [table.height, row.height, lanes.scrollHeight > lanes.clientHeight,\
                     lastBox.top >= band.top - 1 && lastBox.bottom <= band.bottom + 1];",
        )
        .await;
    let table_height = geometry[0].as_f64().expect("table height");
    let row_height = geometry[1].as_f64().expect("row height");
    assert!(
        table_height >= ROWS_IN_VIEW * row_height,
        "with twenty lanes the table shows {:.1} rows (≥ {ROWS_IN_VIEW} wanted): {table_height}px of {row_height}px rows",
        table_height / row_height
    );
    assert_eq!(
        geometry[2].as_bool(),
        Some(true),
        "the lanes scroll in their band"
    );
    assert_eq!(
        geometry[3].as_bool(),
        Some(true),
        "the last lane scrolls into view"
    );
}
