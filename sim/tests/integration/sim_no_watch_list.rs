//! `SimConfig::watch_list = false` (`--no-watch-list`): the simulated cluster
//! behaves like an apiserver without the WatchList feature — a streaming list
//! (`sendInitialEvents=true`) is refused with 422 Invalid and a Status saying
//! what to do instead, while paginated lists and plain watches keep working.

use crate::support;

use std::time::Duration;

use deltascope_sim::SimConfig;
use support::*;

#[tokio::test]
async fn streaming_lists_are_refused_but_paged_lists_and_watches_work() {
    let t = start(SimConfig {
        watch_list: false,
        ..quiet(30)
    })
    .await;
    let refused = t
        .get("/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
        .await;
    assert_eq!(
        refused.status,
        422,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    let status = refused.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Invalid");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("sendInitialEvents") && m.contains("list with limit")),
        "the message says what to do: {status}"
    );

    let page = t.get_json("/api/v1/pods?limit=7").await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(7));
    assert!(
        page["metadata"]["continue"].as_str().is_some(),
        "a limited list pages: {}",
        page["metadata"]
    );
    let (rv, items) = t.list_all("/api/v1/pods").await;
    assert!(items.len() >= 30, "the list returns every pod");
    let mut watch = t
        .watch(&format!("/api/v1/pods?watch=true&resourceVersion={rv}"))
        .await;
    let scaled = t.post("/_sim/scale", r#"{"pods": 31}"#).await;
    assert_eq!(scaled.status, 200);
    let event = watch.event(Duration::from_secs(10)).await;
    assert_eq!(
        event["type"], "ADDED",
        "a plain watch still streams: {event}"
    );
}

#[tokio::test]
async fn streaming_lists_are_served_by_default() {
    let t = start(quiet(5)).await;
    let mut watch = t
        .watch("/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
        .await;
    let event = watch.event(Duration::from_secs(10)).await;
    assert_eq!(event["type"], "ADDED", "{event}");
}
