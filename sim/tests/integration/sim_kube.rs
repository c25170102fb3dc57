//! kube-rs (the `kube` crate's watcher and reflector) as a judge: in
//! list+watch and streaming-list modes, after churn and after every fault
//! kind, its store must equal the simulated cluster's state (same digest).

use crate::support;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, Resource};
use support::*;

/// kube's default backoff grows past the test's patience after a few
/// injected failures in a row; retry every 100 ms instead.
struct QuickBackoff;

impl Iterator for QuickBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }
}

impl kube::runtime::utils::Backoff for QuickBackoff {
    fn reset(&mut self) {}
}

fn client(t: &TestSim) -> Client {
    let config = kube::Config::new(t.base.parse().expect("url"));
    Client::try_from(config).expect("kube client")
}

fn store_digest<K: Resource + Clone>(store: &Store<K>) -> String
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    deltascope_facts::digest_of(store.state().iter().map(|o| {
        let m = o.meta();
        let name = m.name.clone().unwrap_or_default();
        let key = match &m.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        };
        (key, m.resource_version.clone().unwrap_or_default())
    }))
}

async fn converge<K: Resource + Clone>(what: &str, t: &TestSim, store: &Store<K>, resource: &str)
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(12);
    loop {
        let want = t.sim.digest(resource);
        if store_digest(store) == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: reflector store ({} objects) never matched the sim",
            store.state().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn judge(streaming: bool) {
    let t = start(quiet(80)).await;
    let api: Api<Pod> = Api::all(client(&t));
    let (reader, writer) = reflector::store();
    let mut config = watcher::Config::default().timeout(5);
    if streaming {
        config = config.streaming_lists();
    }
    let stream = reflector::reflector(writer, watcher(api, config))
        .backoff(QuickBackoff)
        .applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .expect("reflector synced")
        .expect("ready");
    converge("initial", &t, &reader, "pods").await;

    t.post("/_sim/churn", r#"{"events_per_sec": 300}"#).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    converge("after churn", &t, &reader, "pods").await;

    let mut pods = 80;
    for kind in [
        "drop-watches",
        "compact",
        "throttle",
        "error",
        "garbage-line",
        "restart",
    ] {
        let r = t
            .post(
                "/_sim/fault",
                &format!(r#"{{"kind": "{kind}", "count": 2}}"#),
            )
            .await;
        assert_eq!(r.status, 200, "{kind}");
        // Changes made while the client recovers must arrive too.
        pods += 3;
        t.post("/_sim/scale", &format!(r#"{{"pods": {pods}}}"#))
            .await;
        t.post("/_sim/churn", r#"{"events_per_sec": 200}"#).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
        converge(kind, &t, &reader, "pods").await;
    }
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_reflector_list_watch_matches_after_churn_and_faults() {
    judge(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_reflector_streaming_list_matches_after_churn_and_faults() {
    judge(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_lists_namespaced_deployments() {
    let t = start(quiet(40)).await;
    let api: Api<Deployment> = Api::namespaced(client(&t), "shop");
    let list = api
        .list(&Default::default())
        .await
        .expect("list deployments");
    assert!(!list.items.is_empty());
    assert!(list
        .items
        .iter()
        .all(|d| d.metadata.namespace.as_deref() == Some("shop")));
    let one = api
        .get(list.items[0].metadata.name.as_deref().unwrap_or_default())
        .await
        .expect("get");
    assert_eq!(one.metadata.uid, list.items[0].metadata.uid);
}
