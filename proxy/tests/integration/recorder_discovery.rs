//! What the recorder records: every resource discovery lists (Events of
//! both APIs included), CRDs picked up as they come and dropped as they go,
//! `--record` names the cluster does not serve warned about; and how it
//! fails: a cluster whose identity cannot be read stops it with why, an
//! unreachable upstream is retried and said so.

use crate::recorder_support;

use std::time::Duration;

use deltascope_proxy::forward::{Forwarder, SessionLimits};
use deltascope_proxy::recorder::{
    self, IdentityError, RecorderConfig, RecorderError, RecorderState,
};
use deltascope_sim::{Sim, SimConfig};
use recorder_support::*;
use tokio_util::sync::CancellationToken;

const GADGETS: &str = "gadgets.test.example.com";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_every_resource_and_picks_up_crds_as_they_come_and_go() {
    let sim = sim(20, 0.0);
    let store = MemoryStore::new();
    let config = RecorderConfig {
        record: None,
        ..config(&[])
    };
    let handle = start(&sim, &store, config);
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    let resources = handle.status().resources;
    assert!(resources >= 15, "{resources} resources");
    churn(&sim, 100.0).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    churn(&sim, 0.0).await;
    for name in [
        "pods",
        "events",
        "events.events.k8s.io",
        "deployments.apps",
        "secrets",
    ] {
        wait_for(name, Duration::from_secs(5), || store.watermarks(name) > 0).await;
        wait_replay_matches(&sim, &store, name).await;
    }
    assert!(!store.deltas("events").is_empty());
    assert!(!store.deltas("events.events.k8s.io").is_empty());

    control(
        &sim,
        "/_sim/crd",
        serde_json::json!({"group": "test.example.com", "version": "v1", "kind": "Gadget",
            "plural": "gadgets", "namespaced": true,
            "objects": [{"metadata": {"name": "g1"}}, {"metadata": {"name": "g2"}}]}),
    )
    .await;
    // the CRDs' watch sees it: discovery runs again at once, not in a minute
    wait_for("the new CRD recorded", Duration::from_secs(8), || {
        store.replay(GADGETS).len() == 2
    })
    .await;
    wait_replay_matches(&sim, &store, GADGETS).await;
    wait_for("one more resource", Duration::from_secs(3), || {
        handle.status().resources == resources + 1
    })
    .await;

    control(&sim, "/_sim/crd", serde_json::json!({"remove": GADGETS})).await;
    wait_for("the CRD's objects deleted", Duration::from_secs(8), || {
        store.replay(GADGETS).is_empty()
    })
    .await;
    wait_for("the CRD no longer recorded", Duration::from_secs(8), || {
        handle.status().resources == resources
    })
    .await;
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    handle.shutdown();
    handle.stopped().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_names_the_cluster_does_not_serve_are_warned_about() {
    let sim = sim(5, 0.0);
    let store = MemoryStore::new();
    let mut config = config(&["pods", "nosuch.example.com", "deployments"]);
    config.no_record = vec!["events".into()];
    let handle = start(&sim, &store, config);
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    let status = handle.status();
    assert_eq!(status.resources, 1, "only pods");
    assert_eq!(status.warnings.len(), 2, "{:?}", status.warnings);
    assert!(status.warnings[0].contains("--record deployments: "));
    assert!(status.warnings[0].contains("did you mean deployments.apps?"));
    assert!(status.warnings[1].contains("--record nosuch.example.com: "));
    handle.shutdown();
    handle.stopped().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_whose_identity_cannot_be_read_stops_the_recorder_with_why() {
    let sim = Sim::start(SimConfig {
        initial_pods: 1,
        churn_per_sec: 0.0,
        forbidden: vec!["namespaces".into()],
        ..SimConfig::default()
    });
    let store = MemoryStore::new();
    let handle = start(&sim, &store, config(&["pods"]));
    let mut status = handle.subscribe();
    match handle.stopped().await {
        Err(RecorderError::Identity(IdentityError::Refused { status: 403, .. })) => {}
        other => panic!("{other:?}"),
    }
    let state = status.borrow_and_update().state.clone();
    match state {
        RecorderState::Stopped { error: Some(why) } => {
            assert!(why.contains("kube-system"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert!(store.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_is_retried_and_said_so() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let forwarder = Forwarder::http(&url, false, SessionLimits::default()).unwrap();
    let store = MemoryStore::new();
    let handle = recorder::spawn(
        forwarder,
        store.clone(),
        RecorderConfig::default(),
        CancellationToken::new(),
    );
    wait_for("unreachable", Duration::from_secs(5), || {
        matches!(
            handle.status().state,
            RecorderState::UpstreamUnreachable { .. }
        )
    })
    .await;
    assert!(
        handle.status().summary().contains("cannot be reached"),
        "{}",
        handle.status().summary()
    );
    handle.shutdown();
    handle.stopped().await.unwrap();
    assert!(store.writes().is_empty());
}
