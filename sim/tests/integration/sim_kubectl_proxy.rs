//! `kubectl proxy --port 0` in front of the simulated cluster: lists pass
//! through whole and watches stream through it event by event.

use crate::kubectl;
use crate::support;

use std::time::{Duration, Instant};

use deltascope_sim::SimConfig;
use kubectl::kubectl_proxy;
use serde_json::Value;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_proxy_passes_lists_and_streams_watches() {
    let t = start(SimConfig {
        minor_version: 32,
        ..quiet(50)
    })
    .await;
    let home = std::env::temp_dir().join(format!(
        "deltascope-sim-proxy-{}-{}",
        std::process::id(),
        t.addr.port()
    ));
    std::fs::create_dir_all(&home).expect("temp home");
    // kubectl picks its version from the server's /version (1.32 here)
    let (mut child, proxy_url) = kubectl_proxy(&t.base, &home).await;
    let via = TestSim::through(&t, &proxy_url);

    let (_, direct) = t.list_all("/api/v1/pods").await;
    let (_, proxied) = via.list_all("/api/v1/pods").await;
    assert_eq!(digest_of(&proxied), digest_of(&direct));

    let rv = rv_of(&via.get_json("/api/v1/pods?limit=1").await);
    let mut w = via
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
        ))
        .await;
    let started = Instant::now();
    let first = w.event(Duration::from_secs(5)).await;
    assert_eq!(
        first["type"], "BOOKMARK",
        "a quiet cluster's first event is a bookmark"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "events are flushed through the proxy"
    );
    t.post("/_sim/scale", r#"{"pods": 49}"#).await;
    let mut deleted: Option<Value> = None;
    for _ in 0..20 {
        let e = w.event(Duration::from_secs(3)).await;
        if e["type"] == "DELETED" {
            deleted = Some(e);
            break;
        }
    }
    assert!(
        deleted.is_some(),
        "the deletion streamed through kubectl proxy"
    );
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&home);
}
