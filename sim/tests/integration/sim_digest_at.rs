//! The simulated cluster's identity (the `kube-system` Namespace's uid:
//! random per sim, kept across its `restart` fault) and `GET
//! /_sim/digest?resource=R&rv=RV` (the digest as it was at RV), checked
//! against a client's own replay of a watch, lists at an exact
//! resourceVersion and the digest now; its 400, 404 and 410 answers.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use deltascope_sim::{DigestAtError, SimConfig};
use serde_json::Value;
use support::*;

const SEC: Duration = Duration::from_secs(1);

async fn kube_system_uid(t: &TestSim) -> String {
    let ns = t.get_json("/api/v1/namespaces/kube-system").await;
    assert_eq!(ns["kind"], "Namespace");
    ns["metadata"]["uid"]
        .as_str()
        .expect("kube-system has a uid")
        .to_string()
}

#[tokio::test]
async fn each_sim_is_a_cluster_of_its_own_for_its_whole_life() {
    let a = start(quiet(10)).await;
    let b = start(quiet(10)).await;
    let uid_a = kube_system_uid(&a).await;
    let uid_b = kube_system_uid(&b).await;
    assert_ne!(uid_a, uid_b, "two sims of one seed are two clusters");
    assert_eq!(uid_a, a.sim.cluster_uid());
    assert_eq!(a.get_json("/_sim/stats").await["clusterUid"], uid_a);
    // every other uid is still the seed's
    assert_eq!(
        a.get_json("/api/v1/namespaces/shop").await["metadata"]["uid"],
        b.get_json("/api/v1/namespaces/shop").await["metadata"]["uid"]
    );
    // the apiserver restarting is the same cluster
    let fault = a.post("/_sim/fault", r#"{"kind": "restart"}"#).await;
    assert_eq!(fault.status, 200);
    assert_eq!(kube_system_uid(&a).await, uid_a);
    // and so is one whose history was compacted, or that churned
    a.post("/_sim/fault", r#"{"kind": "compact"}"#).await;
    a.post("/_sim/scale", r#"{"pods": 40}"#).await;
    assert_eq!(kube_system_uid(&a).await, uid_a);
    let listed = a.get_json("/api/v1/namespaces").await;
    let in_list: Vec<&Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|ns| ns["metadata"]["name"] == "kube-system")
        .collect();
    assert_eq!(in_list.len(), 1);
    assert_eq!(in_list[0]["metadata"]["uid"], uid_a);
}

async fn digest_now(t: &TestSim, resource: &str) -> Value {
    t.get_json(&format!("/_sim/digest?resource={resource}"))
        .await
}

#[tokio::test]
async fn the_digest_at_the_current_resource_version_is_the_digest() {
    let t = start(quiet(60)).await;
    t.post("/_sim/scale", r#"{"pods": 90}"#).await;
    for resource in [
        "pods",
        "deployments.apps",
        "events.events.k8s.io",
        "namespaces",
    ] {
        let now = digest_now(&t, resource).await;
        let rv = now["resourceVersion"].as_str().expect("rv");
        let at = t
            .get_json(&format!("/_sim/digest?resource={resource}&rv={rv}"))
            .await;
        assert_eq!(at, now, "{resource} at {rv}");
        assert_eq!(
            t.sim.digest_at(resource, rv).as_deref(),
            Ok(t.sim.digest(resource).as_str())
        );
    }
    // the names the existing route accepts, and its default
    let deploy = t.get_json("/_sim/digest?resource=deploy").await;
    assert_eq!(deploy["resource"], "deployments.apps");
    assert_eq!(t.get_json("/_sim/digest").await["resource"], "pods");
}

/// The `(key, resourceVersion)` pairs of a resource at `at`, replayed from
/// a streaming list's initial objects and the watch events after them.
fn replay(initial: &[(String, u64)], events: &[(u64, String, bool)], at: u64) -> String {
    let mut state: BTreeMap<String, u64> = initial.iter().cloned().collect();
    for (rev, key, deleted) in events.iter().filter(|e| e.0 <= at) {
        if *deleted {
            state.remove(key);
        } else {
            state.insert(key.clone(), *rev);
        }
    }
    deltascope_facts::digest_of(state.iter().map(|(k, rv)| (k.clone(), rv.to_string())))
}

fn rev_of(obj: &Value) -> u64 {
    rv_of(obj).parse().expect("a numeric resourceVersion")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_digests_match_a_watch_replayed_under_churn() {
    let t = start(SimConfig {
        churn_per_sec: 500.0,
        ..quiet(300)
    })
    .await;
    let mut w = t
        .watch("/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
        .await;
    let mut initial = Vec::new();
    let start_rev = loop {
        let e = w.event(5 * SEC).await;
        match e["type"].as_str() {
            Some("ADDED") => initial.push((key_of(&e["object"]), rev_of(&e["object"]))),
            Some("BOOKMARK") => break rev_of(&e["object"]),
            other => panic!("unexpected {other:?} before the initial events' end"),
        }
    };
    let mut events = Vec::new();
    let until = tokio::time::Instant::now() + 3 * SEC;
    while tokio::time::Instant::now() < until {
        let e = w.event(5 * SEC).await;
        let deleted = match e["type"].as_str() {
            Some("BOOKMARK") => continue,
            Some("DELETED") => true,
            Some("ADDED" | "MODIFIED") => false,
            other => panic!("unexpected {other:?}"),
        };
        events.push((rev_of(&e["object"]), key_of(&e["object"]), deleted));
    }
    let last = events.last().expect("pods changed under churn").0;
    assert!(events.len() > 100, "{} pod changes in 3 s", events.len());
    // every revision the watch saw, those between (other resources'
    // writes) and both ends
    let mut ats: Vec<u64> = vec![start_rev, start_rev + 1, last];
    ats.extend(events.iter().step_by(events.len() / 20).map(|e| e.0));
    ats.extend(events.iter().step_by(events.len() / 10).map(|e| e.0 - 1));
    for at in ats.into_iter().filter(|at| *at >= start_rev && *at <= last) {
        let d = t
            .get_json(&format!("/_sim/digest?resource=pods&rv={at}"))
            .await;
        assert_eq!(d["resourceVersion"], at.to_string());
        assert_eq!(d["digest"], replay(&initial, &events, at), "pods at {at}");
    }
}

#[tokio::test]
async fn past_digests_survive_the_compact_fault_and_agree_with_exact_lists() {
    let t = start(quiet(30)).await;
    let mut before = Vec::new();
    for pods in [50, 35, 60] {
        t.post("/_sim/scale", &format!(r#"{{"pods": {pods}}}"#))
            .await;
        let list = t.get_json("/api/v1/pods").await;
        let rv = rv_of(&list);
        let items = list["items"].as_array().cloned().unwrap_or_default();
        before.push((rv, digest_of(&items), items.len()));
    }
    // within the watch log, a list at an exact resourceVersion agrees
    for (rv, digest, count) in &before {
        let exact = t
            .get_json(&format!(
                "/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"
            ))
            .await;
        assert_eq!(
            &digest_of(exact["items"].as_array().expect("items")),
            digest
        );
        let d = t
            .get_json(&format!("/_sim/digest?resource=pods&rv={rv}"))
            .await;
        assert_eq!(&d["digest"], digest);
        assert_eq!(d["count"], *count);
    }
    t.post("/_sim/fault", r#"{"kind": "compact"}"#).await;
    let (rv, digest, _) = &before[0];
    let gone = t
        .get(&format!(
            "/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(gone.status, 410, "lists at a compacted revision are gone");
    // the digests' history is the cluster's record, not the watch log
    for (rv, digest_then, _) in &before {
        let d = t
            .get_json(&format!("/_sim/digest?resource=pods&rv={rv}"))
            .await;
        assert_eq!(&d["digest"], digest_then, "pods at {rv} after compaction");
    }
    assert_ne!(&digest_now(&t, "pods").await["digest"], digest);
}

#[tokio::test]
async fn bad_unknown_future_and_forgotten_resource_versions_are_refused() {
    let t = start(SimConfig {
        digest_history: 200,
        ..quiet(20)
    })
    .await;
    let first = digest_now(&t, "pods").await["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let status = |r: &Reply| {
        let s = r.json();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["status"], "Failure");
        (
            s["code"].as_u64().unwrap_or_default(),
            s["reason"].as_str().unwrap_or_default().to_string(),
            s["message"].as_str().unwrap_or_default().to_string(),
        )
    };
    for bad in ["abc", "", "-3", "12.5"] {
        let r = t.get(&format!("/_sim/digest?resource=pods&rv={bad}")).await;
        assert_eq!(r.status, 400, "rv={bad:?}");
        assert_eq!(status(&r).1, "BadRequest");
    }
    let r = t.get("/_sim/digest?resource=pandas&rv=5").await;
    assert_eq!((r.status, status(&r).1.as_str()), (404, "NotFound"));
    let future: u64 = first.parse::<u64>().expect("number") + 1000;
    let r = t
        .get(&format!("/_sim/digest?resource=pods&rv={future}"))
        .await;
    assert_eq!(r.status, 400);
    assert!(
        status(&r).2.contains("newer than the current"),
        "{}",
        status(&r).2
    );
    // more than 200 changes later, the first state is forgotten
    t.post("/_sim/scale", r#"{"pods": 300}"#).await;
    let r = t
        .get(&format!("/_sim/digest?resource=pods&rv={first}"))
        .await;
    assert_eq!(r.status, 410);
    let (code, reason, message) = status(&r);
    assert_eq!((code, reason.as_str()), (410, "Expired"));
    let oldest = t.get_json("/_sim/stats").await["oldestDigestResourceVersion"]
        .as_str()
        .expect("oldest")
        .to_string();
    assert!(message.contains(&oldest), "{message} names {oldest}");
    let ok = t
        .get(&format!("/_sim/digest?resource=pods&rv={oldest}"))
        .await;
    assert_eq!(ok.status, 200, "the oldest still known answers");
    assert!(matches!(
        t.sim.digest_at("pods", &first),
        Err(DigestAtError::Expired { .. })
    ));
}

#[tokio::test]
async fn a_prefixed_cluster_reads_its_own_resource_versions_only() {
    let t = start(SimConfig {
        rv_prefix: "x-".to_string(),
        ..quiet(20)
    })
    .await;
    let now = digest_now(&t, "pods").await;
    let rv = now["resourceVersion"].as_str().expect("rv");
    assert!(rv.starts_with("x-"));
    let at = t
        .get_json(&format!("/_sim/digest?resource=pods&rv={rv}"))
        .await;
    assert_eq!(at, now);
    let bare = rv.trim_start_matches("x-");
    let r = t
        .get(&format!("/_sim/digest?resource=pods&rv={bare}"))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap_or_default()
        .contains("x-"));
}
