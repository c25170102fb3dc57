//! The foundation slice end to end in headless Chromium: `deltascope serve
//! --demo` with a fixed seed, the login URL, a pods table that fills from
//! its initial list, a digest equal to a direct list's, rows whose
//! resourceVersion changes live under churn, and equal digests again once
//! churn stops. Run twice: once as the demo serves by default (a streaming
//! list, `sendInitialEvents`), once with `--no-watch-list`, where the page
//! must page through `limit`/`continue` (1,200 pods are three pages of 500:
//! a page that stopped after the first would hold 500). Saves `slice.png`
//! and `slice-paginated.png` as test artefacts.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{Browser, DemoServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_table_streams_its_list_then_follows_churn_with_a_correct_digest() {
    lists_then_follows_churn(&[], "slice.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_table_pages_its_list_then_follows_churn_with_a_correct_digest() {
    lists_then_follows_churn(&["--no-watch-list"], "slice-paginated.png").await;
}

/// The slice against a demo started with `extra` flags.
async fn lists_then_follows_churn(extra: &[&str], screenshot: &str) {
    // 1,200 pods: more than two list pages of 500 when the list is paged.
    let mut args = vec!["--seed", "7", "--pods", "1200", "--churn", "0"];
    args.extend_from_slice(extra);
    let server = DemoServer::start(&args);
    let browser = Browser::start().await;
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("open the login URL");

    // The token left the address bar: the cookie carries the session.
    let url = browser.client.current_url().await.expect("current url");
    assert!(
        !url.as_str().contains("token="),
        "the token should leave the address bar, got {url}"
    );
    assert!(
        !url.as_str().contains("code="),
        "the link's one-time code should leave the address bar, got {url}"
    );

    let synced_digest = browser
        .wait_for(
            "the pods table to sync",
            Duration::from_secs(60),
            || async {
                let (count, synced, state, digest) = browser.store_stats().await?;
                (synced == "true" && state == "watching" && count == "1200" && digest.len() == 64)
                    .then_some(digest)
            },
        )
        .await;
    assert_eq!(
        browser
            .attr("[data-testid=store-stats]", "data-resource")
            .await
            .as_deref(),
        Some("pods")
    );
    let listed = server.listed_digest("/api/v1/pods");
    assert_eq!(
        synced_digest, listed,
        "page digest after sync must equal a direct list's digest"
    );
    assert_eq!(
        listed,
        server.sim_digest("pods"),
        "direct list and the simulator agree"
    );

    let rows_before = browser.rows().await;
    assert!(!rows_before.is_empty(), "the table shows rows");
    assert!(
        rows_before.len() < 200,
        "only the visible rows are in the DOM (virtualised), got {}",
        rows_before.len()
    );
    let mut sorted = rows_before.clone();
    sorted.sort();
    assert_eq!(sorted, rows_before, "rows are in key order");

    // Churn: at least one visible row's resourceVersion changes live.
    let (status, body) = server.post_json("/_sim/churn", &json!({"events_per_sec": 200}));
    assert_eq!(
        status,
        200,
        "raise churn: {}",
        String::from_utf8_lossy(&body)
    );
    browser
        .wait_for(
            "a visible row's data-rv to change",
            Duration::from_secs(30),
            || async {
                let now = browser.rows().await;
                now.iter()
                    .any(|(key, rv)| rows_before.iter().any(|(k, old)| k == key && old != rv))
                    .then_some(())
            },
        )
        .await;
    browser.screenshot(screenshot).await;

    // Quiesce and converge.
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let expected = server.sim_digest("pods");
    browser
        .wait_for(
            "the page digest to equal the simulator's after churn",
            Duration::from_secs(30),
            || async {
                let (_, synced, state, digest) = browser.store_stats().await?;
                (synced == "true" && state == "watching" && digest == expected).then_some(())
            },
        )
        .await;
    assert_eq!(server.listed_digest("/api/v1/pods"), expected);
    let history_deltas: u64 = browser
        .attr("[data-testid=history-stats]", "data-deltas")
        .await
        .and_then(|d| d.parse().ok())
        .expect("history-stats data-deltas");
    assert!(
        history_deltas > 1200,
        "history recorded the list and the churn, got {history_deltas}"
    );
    browser.client.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_session_the_page_asks_to_sign_in() {
    let server = DemoServer::start(&["--seed", "3", "--pods", "10", "--churn", "0"]);
    let (status, body) = support::http(server.addr, "GET", "/api/v1/pods", &[], None);
    assert_eq!(
        status,
        401,
        "API without a session: {}",
        String::from_utf8_lossy(&body)
    );
    let status_json: serde_json::Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(status_json["kind"], "Status");
    assert_eq!(status_json["code"], 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_tells_the_user_how_to_sign_in_again() {
    let first = DemoServer::start(&["--seed", "4", "--pods", "20", "--churn", "0"]);
    let addr = first.addr.to_string();
    let browser = Browser::start().await;
    browser.client.goto(&first.login_url).await.expect("login");
    browser
        .wait_for("the table to sync", Duration::from_secs(60), || async {
            let (_, synced, state, _) = browser.store_stats().await?;
            (synced == "true" && state == "watching").then_some(())
        })
        .await;
    // The server restarts on the same address with a new token: the cookie is no longer valid.
    drop(first);
    let _second = DemoServer::start_on(&addr, &["--seed", "4", "--pods", "20", "--churn", "0"]);
    let text = browser
        .wait_for("the sign-in notice", Duration::from_secs(60), || async {
            let notice = browser
                .client
                .find(fantoccini::Locator::Css("[data-testid=sign-in]"))
                .await
                .ok()?;
            notice.text().await.ok()
        })
        .await;
    assert!(
        text.contains("deltascope serve") && text.contains("?code="),
        "says what to do: {text}"
    );
    let (_, _, state, _) = browser.store_stats().await.expect("stats");
    assert!(state == "error" || state == "backoff", "state is {state}");
    browser.client.close().await.expect("close");
}
