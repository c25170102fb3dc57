//! Direct HTTP tests of the simulated cluster: pagination and continue,
//! watches (initial events, resume, bookmarks, timeouts, streaming lists),
//! selector transitions, compaction → 410, faults, errors and the digest.

use crate::support;

use std::time::{Duration, Instant};

use deltascope_sim::{run_standalone, SimConfig, SimError};
use serde_json::Value;
use support::*;

const SEC: Duration = Duration::from_secs(1);

#[tokio::test]
async fn list_pages_form_one_consistent_snapshot_under_churn() {
    let t = start(SimConfig {
        churn_per_sec: 400.0,
        ..quiet(300)
    })
    .await;
    let first = t.get_json("/api/v1/pods?limit=40").await;
    let rv = rv_of(&first);
    let mut items: Vec<Value> = first["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 40);
    assert!(first["metadata"]["remainingItemCount"].as_u64().is_some());
    let mut token = first["metadata"]["continue"].as_str().map(str::to_string);
    let mut pages = 1;
    while let Some(c) = token {
        tokio::time::sleep(Duration::from_millis(30)).await; // let the store move on
        let page = t
            .get_json(&format!("/api/v1/pods?limit=40&continue={c}"))
            .await;
        assert_eq!(
            rv_of(&page),
            rv,
            "every page reports the first page's resourceVersion"
        );
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        token = page["metadata"]["continue"].as_str().map(str::to_string);
        pages += 1;
    }
    assert!(pages >= 7, "300 pods in pages of 40");
    // The same snapshot, read in one go at that exact resourceVersion.
    let exact = t
        .get_json(&format!(
            "/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .await;
    let exact_items = exact["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(digest_of(&items), digest_of(&exact_items));
    let keys: Vec<String> = items.iter().map(key_of).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted, "pages are in key order without duplicates");
    assert_ne!(
        rv_of(&t.get_json("/api/v1/pods?limit=1").await),
        rv,
        "the store moved on meanwhile"
    );
}

#[tokio::test]
async fn digest_matches_a_full_list_and_the_control_api() {
    let t = start(quiet(120)).await;
    let (_, pods) = t.list_all("/api/v1/pods").await;
    assert_eq!(pods.len(), 120);
    let d = t.get_json("/_sim/digest?resource=pods").await;
    assert_eq!(d["count"], 120);
    assert_eq!(d["digest"].as_str(), Some(digest_of(&pods).as_str()));
    assert_eq!(t.sim.digest("pods"), digest_of(&pods));
    let (_, deploys) = t.list_all("/apis/apps/v1/deployments").await;
    assert_eq!(t.sim.digest("deployments.apps"), digest_of(&deploys));
    let (_, nodes) = t.list_all("/api/v1/nodes").await;
    assert_eq!(
        t.sim.digest("nodes"),
        digest_of(&nodes),
        "cluster-scoped keys are bare names"
    );
    let stats = t.get_json("/_sim/stats").await;
    assert_eq!(stats["objects"]["pods"], 120);
}

#[tokio::test]
async fn watch_without_rv_sends_current_state_then_changes_and_bookmarks() {
    let t = start(quiet(30)).await;
    let mut w = t
        .watch("/api/v1/pods?watch=true&allowWatchBookmarks=true")
        .await;
    let mut added = 0;
    while added < 30 {
        let e = w.event(5 * SEC).await;
        assert_eq!(e["type"], "ADDED");
        added += 1;
    }
    // Quiet cluster: the next thing is a bookmark carrying a resourceVersion.
    let b = w.event(3 * SEC).await;
    assert_eq!(b["type"], "BOOKMARK");
    let bookmark_rv = rv_of(&b["object"]);
    assert!(!bookmark_rv.is_empty());
    t.post("/_sim/scale", r#"{"pods": 31}"#).await;
    let mut saw_added = false;
    for _ in 0..10 {
        let e = w.event(3 * SEC).await;
        if e["type"] == "ADDED" {
            saw_added = true;
            break;
        }
    }
    assert!(saw_added, "the scaled-up pod arrives as ADDED");
    assert_eq!(t.sim.open_watches(), 1);
}

#[tokio::test]
async fn watch_from_rv_replays_history_and_honours_timeout() {
    let t = start(quiet(50)).await;
    let list = t.get_json("/api/v1/pods").await;
    let rv = rv_of(&list);
    t.post("/_sim/scale", r#"{"pods": 45}"#).await; // 5 deletes
    let started = Instant::now();
    let mut w = t
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1"
        ))
        .await;
    let (events, how) = w.until_end(5 * SEC).await;
    assert_eq!(how, "end", "timeoutSeconds closes cleanly");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < 3 * SEC,
        "closed after {elapsed:?}"
    );
    let deleted = events.iter().filter(|e| e["type"] == "DELETED").count();
    assert_eq!(deleted, 5, "{events:?}");
    assert!(
        events.iter().all(|e| e["type"] != "ADDED"),
        "no initial state when resuming"
    );
    eventually("watch count drops", 2 * SEC, || t.sim.open_watches() == 0).await;
}

#[tokio::test]
async fn streaming_list_ends_with_annotated_bookmark() {
    let t = start(quiet(25)).await;
    let mut w = t
        .watch("/api/v1/namespaces/shop/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
        .await;
    let (_, shop_pods) = t.list_all("/api/v1/namespaces/shop/pods").await;
    let mut added = Vec::new();
    loop {
        let e = w.event(3 * SEC).await;
        match e["type"].as_str() {
            Some("ADDED") => added.push(e["object"].clone()),
            Some("BOOKMARK") => {
                assert_eq!(
                    e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
                    "true"
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(digest_of(&added), digest_of(&shop_pods));
    let bad = t
        .get("/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true")
        .await;
    assert_eq!(
        bad.status, 400,
        "sendInitialEvents needs resourceVersionMatch=NotOlderThan"
    );
}

/// Apply the etcd3 watcher's selector transitions to an unfiltered stream.
fn expected_filtered(
    all: &[Value],
    selector: impl Fn(&Value) -> bool,
    last: &mut std::collections::HashMap<String, Value>,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for e in all {
        let obj = &e["object"];
        let key = key_of(obj);
        let before = last.get(&key).is_some_and(&selector);
        let now = selector(obj);
        let t = e["type"].as_str().unwrap_or("");
        let kind = match (t, before, now) {
            ("ADDED", _, true) => Some("ADDED"),
            ("DELETED", true, _) => Some("DELETED"),
            ("MODIFIED", true, true) => Some("MODIFIED"),
            ("MODIFIED", false, true) => Some("ADDED"),
            ("MODIFIED", true, false) => Some("DELETED"),
            _ => None,
        };
        if let Some(k) = kind {
            out.push((k.to_string(), key.clone(), rv_of(obj)));
        }
        if t == "DELETED" {
            last.remove(&key);
        } else {
            last.insert(key, obj.clone());
        }
    }
    out
}

#[tokio::test]
async fn selector_transitions_match_the_etcd3_watcher() {
    let t = start(SimConfig {
        churn_per_sec: 300.0,
        ..quiet(60)
    })
    .await;
    let (rv, pods) = t.list_all("/api/v1/pods?resourceVersion=0").await;
    let mut all = t
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=2"
        ))
        .await;
    let mut canary = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=2&labelSelector=track%3Dcanary"))
        .await;
    let (all_events, how) = all.until_end(6 * SEC).await;
    assert_eq!(how, "end");
    let (canary_events, how) = canary.until_end(6 * SEC).await;
    assert_eq!(how, "end");
    let mut last = pods.iter().map(|p| (key_of(p), p.clone())).collect();
    let is_canary = |o: &Value| o["metadata"]["labels"]["track"] == "canary";
    let mut expected = expected_filtered(&all_events, is_canary, &mut last);
    let got: Vec<(String, String, String)> = canary_events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                key_of(&e["object"]),
                rv_of(&e["object"]),
            )
        })
        .collect();
    // The two watches may have ended a few events apart.
    let n = got.len().min(expected.len());
    expected.truncate(n);
    assert!(n > 20, "enough churn to compare ({n} events)");
    assert_eq!(&got[..n], &expected[..]);
    // Every event carries the object as it matched, deletions included.
    assert!(canary_events.iter().all(|e| is_canary(&e["object"])));
    let seen_relabels = canary_events.iter().any(|e| e["type"] == "DELETED")
        && canary_events.iter().any(|e| e["type"] == "ADDED");
    assert!(seen_relabels, "label changes produced both transitions");
}

#[tokio::test]
async fn compaction_expires_watches_continue_tokens_and_old_rvs() {
    let t = start(quiet(40)).await;
    let page = t.get_json("/api/v1/pods?limit=10").await;
    let rv = rv_of(&page);
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("continue token")
        .to_string();
    let mut open = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    eventually("watch registered", 2 * SEC, || t.sim.open_watches() == 1).await;
    let answer = t.post("/_sim/fault", r#"{"kind": "compact"}"#).await;
    assert_eq!(answer.status, 200);
    assert!(answer.json()["effect"]
        .as_str()
        .unwrap_or("")
        .contains("compacted"));

    let e = open.event(3 * SEC).await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(matches!(open.next(3 * SEC).await, Next::End));

    let cont = t
        .get(&format!("/api/v1/pods?limit=10&continue={token}"))
        .await;
    assert_eq!(cont.status, 410);
    assert_eq!(cont.json()["reason"], "Expired");

    let mut again = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    let e = again.event(3 * SEC).await;
    assert_eq!(e["object"]["code"], 410);

    let exact = t
        .get(&format!(
            "/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(exact.status, 410);
    // A fresh list works and is watchable.
    let fresh = t.get_json("/api/v1/pods").await;
    let mut w = t
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={}&allowWatchBookmarks=1",
            rv_of(&fresh)
        ))
        .await;
    assert_eq!(w.event(3 * SEC).await["type"], "BOOKMARK");
}

#[tokio::test]
async fn history_window_expires_old_resource_versions() {
    let t = start(SimConfig {
        history: 50,
        ..quiet(20)
    })
    .await;
    let rv = rv_of(&t.get_json("/api/v1/pods").await);
    t.post("/_sim/scale", r#"{"pods": 120}"#).await;
    let mut w = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    let e = w.event(3 * SEC).await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
}

#[tokio::test]
async fn errors_are_status_objects_with_the_right_codes() {
    let t = start(quiet(10)).await;
    let cases = [
        ("GET", "/api/v1/pandas", 404, "NotFound"),
        (
            "GET",
            "/apis/apps/v1/namespaces/shop/deployments/nope",
            404,
            "NotFound",
        ),
        (
            "GET",
            "/api/v1/pods?labelSelector=app%20in%20web",
            400,
            "BadRequest",
        ),
        (
            "GET",
            "/api/v1/pods?fieldSelector=spec.color%3Dred",
            400,
            "BadRequest",
        ),
        ("GET", "/api/v1/pods?limit=ten", 400, "BadRequest"),
        ("GET", "/api/v1/pods?continue=garbage", 400, "BadRequest"),
        (
            "GET",
            "/api/v1/pods?resourceVersion=abc&resourceVersionMatch=Exact",
            400,
            "BadRequest",
        ),
        (
            "DELETE",
            "/api/v1/namespaces/shop/pods/x",
            405,
            "MethodNotAllowed",
        ),
        (
            "POST",
            "/api/v1/namespaces/shop/pods",
            405,
            "MethodNotAllowed",
        ),
    ];
    for (method, path, code, reason) in cases {
        let r = t.request(method, path, None, None).await;
        assert_eq!(r.status, code, "{method} {path}");
        let s = r.json();
        assert_eq!(s["kind"], "Status", "{method} {path}");
        assert_eq!(s["code"], code);
        assert_eq!(s["reason"], reason, "{method} {path}");
        assert!(s["message"].as_str().is_some_and(|m| m.len() > 10));
    }
    let r = t.post("/_sim/fault", r#"{"kind": "meteor"}"#).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap_or("")
        .contains("drop-watches, compact, throttle"));
    assert_eq!(t.post("/_sim/fault", "not json").await.status, 400);
    assert_eq!(
        t.post("/_sim/churn", r#"{"events_per_sec": -1}"#)
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn throttle_and_error_faults_hit_the_next_requests() {
    let t = start(quiet(10)).await;
    let a = t
        .post("/_sim/fault", r#"{"kind": "throttle", "count": 2}"#)
        .await
        .json();
    assert!(a["effect"].as_str().unwrap_or("").contains("429"));
    for _ in 0..2 {
        let r = t.get("/api/v1/pods").await;
        assert_eq!(r.status, 429);
        assert_eq!(
            r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("1")
        );
    }
    assert_eq!(t.get("/api/v1/pods").await.status, 200);
    t.post("/_sim/fault", r#"{"kind": "error"}"#).await;
    let r = t.get("/api/v1/pods").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["reason"], "InternalError");
    assert_eq!(t.get("/api/v1/pods").await.status, 200);
    // Aimed at one path: the requests beside it pass.
    let a = t
        .post(
            "/_sim/fault",
            r#"{"kind": "throttle", "count": 1, "path": "/api/v1"}"#,
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(t.get("/version").await.status, 200);
    assert_eq!(t.get("/api/v1/pods").await.status, 200);
    assert_eq!(t.get("/api/v1").await.status, 429);
    assert_eq!(t.get("/api/v1").await.status, 200);
    t.post("/_sim/fault", r#"{"kind": "error", "path": "/apis"}"#)
        .await;
    assert_eq!(t.get("/api/v1").await.status, 200);
    assert_eq!(t.get("/apis").await.status, 500);
    for bad in [
        r#"{"kind": "drop-watches", "path": "/api/v1"}"#,
        r#"{"kind": "throttle", "path": "api/v1"}"#,
        r#"{"kind": "throttle", "path": "/api/v1", "resource": "pods"}"#,
    ] {
        assert_eq!(t.post("/_sim/fault", bad).await.status, 400, "{bad}");
    }
}

#[tokio::test]
async fn throttle_and_error_aimed_at_one_resource_spare_the_others() {
    let t = start(quiet(10)).await;
    let a = t
        .post(
            "/_sim/fault",
            r#"{"kind": "throttle", "resource": "pods", "count": 2}"#,
        )
        .await
        .json();
    assert!(a["effect"].as_str().unwrap_or("").contains("of pods"));
    assert_eq!(t.get("/apis/apps/v1/deployments").await.status, 200);
    assert_eq!(t.get("/api/v1/namespaces").await.status, 200);
    for _ in 0..2 {
        let r = t.get("/api/v1/namespaces/default/pods").await;
        assert_eq!(r.status, 429);
        assert_eq!(
            r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("1")
        );
    }
    assert_eq!(t.get("/api/v1/pods").await.status, 200);

    t.post(
        "/_sim/fault",
        r#"{"kind": "error", "resource": "deployments.apps"}"#,
    )
    .await;
    assert_eq!(t.get("/api/v1/pods").await.status, 200);
    let r = t.get("/apis/apps/v1/deployments?watch=1").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["reason"], "InternalError");
    assert_eq!(t.get("/apis/apps/v1/deployments").await.status, 200);

    let r = t
        .post("/_sim/fault", r#"{"kind": "error", "resource": "gadgets"}"#)
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn drop_watches_garbage_line_and_restart() {
    let t = start(quiet(10)).await;
    let rv = rv_of(&t.get_json("/api/v1/pods").await);
    let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}");
    let mut a = t.watch(&path).await;
    let mut b = t.watch(&path).await;
    eventually("two watches", 2 * SEC, || t.sim.open_watches() == 2).await;
    let answer = t
        .post("/_sim/fault", r#"{"kind": "drop-watches"}"#)
        .await
        .json();
    assert!(answer["effect"].as_str().unwrap_or("").contains("closed 2"));
    assert!(matches!(a.next(3 * SEC).await, Next::End));
    assert!(matches!(b.next(3 * SEC).await, Next::End));
    eventually("no watches", 2 * SEC, || t.sim.open_watches() == 0).await;

    let mut g = t.watch(&path).await;
    t.post("/_sim/fault", r#"{"kind": "garbage-line"}"#).await;
    t.post("/_sim/scale", r#"{"pods": 11}"#).await;
    assert!(matches!(g.next(3 * SEC).await, Next::Garbage(_)));

    let mut r = t.watch(&path).await;
    let before = t.get_json("/_sim/stats").await["revision"]
        .as_u64()
        .unwrap_or(0);
    t.post("/_sim/fault", r#"{"kind": "restart"}"#).await;
    loop {
        match r.next(3 * SEC).await {
            Next::Line(_) => continue,
            Next::Broken => break,
            _ => panic!("a restart breaks the connection"),
        }
    }
    let after = t.get_json("/_sim/stats").await["revision"]
        .as_u64()
        .unwrap_or(0);
    assert!(after >= before, "resourceVersions continue after a restart");
}

#[tokio::test]
async fn slow_watcher_is_closed_instead_of_buffering() {
    let t = start(SimConfig {
        watch_buffer: 8,
        watch_lag_limit: 64,
        slow_watch_timeout: Duration::from_millis(300),
        churn_per_sec: 0.0,
        ..quiet(2000)
    })
    .await;
    // The initial state (about 10 MB) overflows every buffer between the
    // server and a client that never reads.
    let _never_read = t.watch("/api/v1/pods?watch=1").await;
    eventually("slow watch closed", 10 * SEC, || t.sim.open_watches() == 0).await;
}

#[tokio::test]
async fn opaque_rv_prefix_round_trips() {
    let t = start(SimConfig {
        rv_prefix: "sim-".into(),
        ..quiet(15)
    })
    .await;
    let list = t.get_json("/api/v1/pods?limit=5").await;
    let rv = rv_of(&list);
    assert!(rv.starts_with("sim-"), "{rv}");
    assert!(list["items"]
        .as_array()
        .is_some_and(|i| i.iter().all(|p| rv_of(p).starts_with("sim-"))));
    t.post("/_sim/scale", r#"{"pods": 14}"#).await;
    let mut w = t
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    let e = w.event(3 * SEC).await;
    assert_eq!(e["type"], "DELETED");
    assert!(rv_of(&e["object"]).starts_with("sim-"));
    assert_eq!(
        t.get("/api/v1/pods?resourceVersion=12&resourceVersionMatch=Exact")
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn tables_have_kubectl_columns_and_partial_metadata_rows() {
    let t = start(quiet(20)).await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let r = t
        .request("GET", "/api/v1/pods?limit=7", Some(accept), None)
        .await;
    assert_eq!(r.status, 200);
    let table = r.json();
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| c["priority"] == 0)
                .filter_map(|c| c["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, ["Name", "Ready", "Status", "Restarts", "Age"]);
    let rows = table["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
    assert!(rows[0]["cells"][1]
        .as_str()
        .is_some_and(|s| s.contains('/')));
    assert!(table["metadata"]["continue"].is_string());
    let d = t
        .request("GET", "/apis/apps/v1/deployments", Some(accept), None)
        .await
        .json();
    let names: Vec<&str> = d["columnDefinitions"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| c["priority"] == 0)
                .filter_map(|c| c["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, ["Name", "Ready", "Up-to-date", "Available", "Age"]);
}

#[tokio::test]
async fn discovery_legacy_and_aggregated() {
    let t = start(quiet(5)).await;
    assert_eq!(t.get_json("/version").await["minor"], "32");
    assert_eq!(t.get_json("/api").await["versions"][0], "v1");
    let groups = t.get_json("/apis").await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    for g in ["apps", "batch", "demo.deltascope.dev"] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    let core = t.get_json("/api/v1").await;
    assert!(core["resources"].as_array().is_some_and(|r| r
        .iter()
        .any(|r| r["name"] == "pods" && r["namespaced"] == true)));
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let r = t.request("GET", "/apis", Some(accept), None).await;
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    let agg = r.json();
    assert_eq!(agg["kind"], "APIGroupDiscoveryList");
    assert!(agg["items"]
        .as_array()
        .is_some_and(|i| i.iter().any(|g| g["metadata"]["name"] == "apps")));
}

#[tokio::test]
async fn standalone_refuses_non_loopback() {
    let addr = "0.0.0.0:0".parse().expect("addr");
    let err = run_standalone(addr, SimConfig::default()).await;
    assert!(matches!(err, Err(SimError::NotLoopback(_))));
    if let Err(e) = err {
        assert!(e.to_string().contains("loopback"));
    }
}

#[tokio::test]
async fn objects_deserialize_into_k8s_openapi_types() {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret, Service};
    let t = start(SimConfig {
        churn_per_sec: 200.0,
        ..quiet(40)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await; // some crash loops and events
    fn check<T: serde::de::DeserializeOwned>(items: Vec<Value>, what: &str) -> usize {
        for item in &items {
            if let Err(e) = serde_json::from_value::<T>(item.clone()) {
                panic!("{what} does not deserialize: {e}\n{item}");
            }
        }
        items.len()
    }
    let pods = check::<Pod>(t.list_all("/api/v1/pods").await.1, "Pod");
    assert!(pods >= 30);
    let (_, sample) = t.list_all("/api/v1/pods?limit=1").await;
    let size = serde_json::to_vec(&sample[0]).map(|v| v.len()).unwrap_or(0);
    // A real pod's size: its managedFields are about 4 KB of it.
    assert!((6000..=11000).contains(&size), "pod is {size} bytes");
    let pod: Pod = serde_json::from_value(sample[0].clone()).expect("pod");
    assert!(pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some());
    assert_eq!(
        pod.metadata
            .owner_references
            .as_ref()
            .map(|o| o[0].kind.as_str()),
        Some("ReplicaSet")
    );
    assert!(
        check::<Deployment>(
            t.list_all("/apis/apps/v1/deployments").await.1,
            "Deployment"
        ) > 0
    );
    assert!(
        check::<ReplicaSet>(
            t.list_all("/apis/apps/v1/replicasets").await.1,
            "ReplicaSet"
        ) > 0
    );
    assert!(
        check::<StatefulSet>(
            t.list_all("/apis/apps/v1/statefulsets").await.1,
            "StatefulSet"
        ) > 0
    );
    assert!(check::<DaemonSet>(t.list_all("/apis/apps/v1/daemonsets").await.1, "DaemonSet") > 0);
    assert!(check::<Job>(t.list_all("/apis/batch/v1/jobs").await.1, "Job") > 0);
    assert!(check::<Namespace>(t.list_all("/api/v1/namespaces").await.1, "Namespace") > 0);
    assert!(check::<Node>(t.list_all("/api/v1/nodes").await.1, "Node") > 0);
    assert!(check::<Service>(t.list_all("/api/v1/services").await.1, "Service") > 0);
    assert!(check::<ConfigMap>(t.list_all("/api/v1/configmaps").await.1, "ConfigMap") > 0);
    assert!(check::<Secret>(t.list_all("/api/v1/secrets").await.1, "Secret") > 0);
    assert!(check::<Event>(t.list_all("/api/v1/events").await.1, "Event") > 0);
}

#[tokio::test]
async fn large_lists_are_gzipped_when_asked_and_watches_never() {
    use std::io::Read as _;
    let t = start(quiet(200)).await;
    let plain = t.get("/api/v1/pods").await;
    assert!(plain.headers.get("content-encoding").is_none());
    let gz = t
        .request_with("/api/v1/pods", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(
        gz.headers
            .get("content-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("gzip")
    );
    assert!(
        gz.body.len() * 4 < plain.body.len(),
        "compressed {} vs {}",
        gz.body.len(),
        plain.body.len()
    );
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut out)
        .expect("valid gzip");
    assert_eq!(out, plain.body);
    let small = t
        .request_with("/api/v1/namespaces", &[("accept-encoding", "gzip")])
        .await;
    assert!(
        small.headers.get("content-encoding").is_none(),
        "small responses stay plain"
    );
    let resp = t
        .send_with(
            "GET",
            "/api/v1/pods?watch=1&timeoutSeconds=1",
            &[("accept-encoding", "gzip")],
            None,
        )
        .await;
    assert!(resp.headers().get("content-encoding").is_none());
}

#[tokio::test]
async fn same_seed_same_cluster_and_workload() {
    let digests = |t: &TestSim| {
        (
            t.sim.digest("pods"),
            t.sim.digest("deployments.apps"),
            t.sim.digest("replicasets.apps"),
        )
    };
    let a = start(SimConfig {
        seed: 7,
        ..quiet(150)
    })
    .await;
    let b = start(SimConfig {
        seed: 7,
        ..quiet(150)
    })
    .await;
    let c = start(SimConfig {
        seed: 8,
        ..quiet(150)
    })
    .await;
    assert_eq!(digests(&a), digests(&b));
    assert_ne!(digests(&a).0, digests(&c).0);
    // Same changes in the same order: scale both, compare again.
    for t in [&a, &b] {
        t.post("/_sim/scale", r#"{"pods": 120}"#).await;
        t.post("/_sim/scale", r#"{"pods": 170}"#).await;
    }
    assert_eq!(digests(&a), digests(&b));
    let (_, pa) = a.list_all("/api/v1/pods").await;
    let (_, pb) = b.list_all("/api/v1/pods").await;
    let uids = |p: &[Value]| {
        p.iter()
            .map(|o| o["metadata"]["uid"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(uids(&pa), uids(&pb));
}

#[tokio::test]
async fn table_watches_send_one_row_tables_with_columns_first() {
    let t = start(quiet(12)).await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let resp = t
        .send_with(
            "GET",
            "/api/v1/namespaces/shop/pods?watch=1&timeoutSeconds=1",
            &[("accept", accept)],
            None,
        )
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    let events: Vec<Value> = body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("JSON line"))
        .collect();
    assert!(events.len() >= 2, "{events:?}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["type"], "ADDED");
        assert_eq!(e["object"]["kind"], "Table");
        assert_eq!(e["object"]["rows"].as_array().map(Vec::len), Some(1));
        let cols = e["object"]["columnDefinitions"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(
            cols > 0,
            i == 0,
            "column definitions only on the first event"
        );
        assert_eq!(
            e["object"]["rows"][0]["object"]["metadata"]["namespace"],
            "shop"
        );
    }
}

#[tokio::test]
async fn field_selectors_filter_lists_and_watches() {
    let t = start(quiet(60)).await;
    let (_, all) = t.list_all("/api/v1/pods").await;
    let node = all[0]["spec"]["nodeName"]
        .as_str()
        .expect("node")
        .to_string();
    let (_, on_node) = t
        .list_all(&format!(
            "/api/v1/pods?fieldSelector=spec.nodeName%3D{node}"
        ))
        .await;
    let want = all
        .iter()
        .filter(|p| p["spec"]["nodeName"] == node.as_str())
        .count();
    assert_eq!(on_node.len(), want);
    let (_, running) = t
        .list_all("/api/v1/pods?fieldSelector=status.phase%3DRunning,metadata.namespace!%3Dshop")
        .await;
    assert!(running
        .iter()
        .all(|p| p["status"]["phase"] == "Running" && p["metadata"]["namespace"] != "shop"));
    let mut w = t
        .watch(&format!(
            "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3D{node}&timeoutSeconds=1"
        ))
        .await;
    let (events, how) = w.until_end(5 * SEC).await;
    assert_eq!(how, "end");
    assert_eq!(events.len(), want);
    // Paging with a selector: continue tokens resume after the last match.
    let mut seen = 0;
    let mut token = String::new();
    loop {
        let page = t
            .get_json(&format!(
                "/api/v1/pods?limit=3&labelSelector=track%3Dstable&continue={token}"
            ))
            .await;
        seen += page["items"].as_array().map_or(0, Vec::len);
        assert!(
            page["metadata"]["remainingItemCount"].is_null(),
            "no remaining count with selectors"
        );
        match page["metadata"]["continue"].as_str() {
            Some(c) => token = c.to_string(),
            None => break,
        }
    }
    assert_eq!(
        seen,
        all.iter()
            .filter(|p| p["metadata"]["labels"]["track"] == "stable")
            .count()
    );
}

#[tokio::test]
async fn watch_from_a_future_rv_skips_everything_up_to_it() {
    let t = start(quiet(40)).await;
    let rv: u64 = rv_of(&t.get_json("/api/v1/pods?limit=1").await)
        .parse()
        .expect("numeric rv");
    let future = rv + 6;
    let mut w = t
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={future}&timeoutSeconds=1"
        ))
        .await;
    t.post("/_sim/scale", r#"{"pods": 30}"#).await; // 10 pod deletions, plus owner updates
    let (events, how) = w.until_end(5 * SEC).await;
    assert_eq!(how, "end");
    assert!(!events.is_empty());
    for e in &events {
        let erv: u64 = rv_of(&e["object"]).parse().expect("numeric rv");
        assert!(erv > future, "event at {erv} not after {future}");
    }
}
