//! Another cluster behind the same upstream is never recorded under the
//! first one's identity, and an identity that cannot be read holds the
//! record and says why.
//!
//! The switch: the recorder reads through a relay that is
//! switched from one simulated cluster to another (its connections cut, as
//! when `kubectl proxy` is restarted on another context), with the periodic
//! identity check a minute apart, so only the identity gate (a failed
//! request puts the identity in doubt; nothing is sent until it is read
//! again) keeps the second cluster's pods out of the first one's record.

use crate::recorder_support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deltascope_history::ClusterId;
use deltascope_proxy::forward::{Forwarder, SessionLimits};
use deltascope_proxy::recorder::{self, RecorderConfig, RecorderState};
use deltascope_sim::{Sim, SimConfig};
use recorder_support::*;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The sim's API over real HTTP on loopback.
async fn serve_sim(sim: &Sim) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let addr = listener.local_addr().expect("its address");
    let app = sim.api_router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// The uids of the sim's pods now.
async fn pod_uids(sim: &Sim) -> HashSet<String> {
    api_get(sim, "/api/v1/pods").await["items"]
        .as_array()
        .expect("a pod list")
        .iter()
        .filter_map(|pod| pod["metadata"]["uid"].as_str().map(str::to_owned))
        .collect()
}

/// A TCP relay to one backend at a time; switching cuts every connection.
struct Relay {
    addr: SocketAddr,
    backend: Arc<Mutex<SocketAddr>>,
    cut: watch::Sender<u64>,
}

impl Relay {
    async fn start(backend: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("its address");
        let backend = Arc::new(Mutex::new(backend));
        let (cut, _) = watch::channel(0u64);
        let (to, cuts) = (backend.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = *to.lock().expect("the backend");
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Relay { addr, backend, cut }
    }

    /// From now on to `backend`; every open connection is cut.
    fn switch(&self, backend: SocketAddr) {
        *self.backend.lock().expect("the backend") = backend;
        self.cut.send_modify(|n| *n += 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_switched_in_behind_the_upstream_is_not_recorded_under_the_old_identity() {
    // Another seed: other pods, other uids (the same seed makes the same pods).
    let second = Sim::start(SimConfig {
        initial_pods: 20,
        churn_per_sec: 20.0,
        seed: 7,
        ..SimConfig::default()
    });
    let first = sim(30, 20.0);
    let (first_id, second_id) = (
        ClusterId(first.cluster_uid()),
        ClusterId(second.cluster_uid()),
    );
    assert_ne!(first_id, second_id, "two sims, two identities");
    let relay = Relay::start(serve_sim(&first).await).await;
    let second_addr = serve_sim(&second).await;

    let store = MemoryStore::new();
    let upstream = Forwarder::http(
        &format!("http://{}", relay.addr),
        false,
        SessionLimits::default(),
    )
    .expect("the relay's URL");
    let config = RecorderConfig {
        // the periodic check alone would notice the switch only after the
        // drivers relisted the second cluster into the first one's record
        identity_check_every: Duration::from_secs(60),
        ..config(&["pods"])
    };
    let handle = recorder::spawn(upstream, store.clone(), config, CancellationToken::new());
    wait_for("recording", Duration::from_secs(15), || {
        is_recording(&handle) && store.deltas_of(&first_id, "pods").len() >= 30
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let second_pods = pod_uids(&second).await;
    relay.switch(second_addr);
    // The second cluster's pods reach the record (under whichever identity).
    let recorded = |cluster: &ClusterId| -> Vec<String> {
        store
            .deltas_of(cluster, "pods")
            .iter()
            .filter(|d| second_pods.contains(&d.uid))
            .map(|d| format!("{:?} {}/{} {}", d.kind, d.namespace, d.name, d.uid))
            .collect()
    };
    wait_for(
        "the second cluster's pods recorded",
        Duration::from_secs(20),
        || !recorded(&first_id).is_empty() || recorded(&second_id).len() >= 20,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mixed = recorded(&first_id);
    assert!(
        mixed.is_empty(),
        "the second cluster's pods were recorded under the first one's identity: {mixed:?}"
    );
    // The first record has no relist against the second cluster (no
    // tombstone of its own pods), and the second is recorded apart.
    let tombstones = store
        .deltas_of(&first_id, "pods")
        .iter()
        .filter(|d| d.tombstone)
        .count();
    assert_eq!(
        tombstones, 0,
        "the first record was relisted against the second cluster"
    );
    assert_eq!(handle.status().cluster.as_ref(), Some(&second_id));
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    handle.shutdown();
    handle.stopped().await.expect("stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_that_cannot_be_read_holds_the_record_says_why_and_loses_nothing() {
    let sim = sim(20, 0.0);
    let store = MemoryStore::new();
    let handle = recording(&sim, &store, "pods").await;

    // The identity read is refused four times (RBAC taken away, then given
    // back); a dropped watch puts the identity in doubt.
    control(
        &sim,
        "/_sim/fault",
        serde_json::json!({"kind": "forbid", "resource": "namespaces", "count": 4}),
    )
    .await;
    control(
        &sim,
        "/_sim/fault",
        serde_json::json!({"kind": "drop-watches"}),
    )
    .await;
    let refused = |handle: &recorder::RecorderHandle| match &handle.status().state {
        RecorderState::UpstreamUnreachable { reason } => reason.contains("identity"),
        _ => false,
    };
    wait_for(
        "the status says the identity cannot be read",
        Duration::from_secs(5),
        || refused(&handle),
    )
    .await;
    let summary = handle.status().summary();
    assert!(
        summary.contains("kube-system") && summary.contains("nothing is recorded"),
        "{summary}"
    );
    // Nothing is recorded while it cannot be read, though the pods change.
    let held = store.deltas("pods").len();
    churn(&sim, 100.0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    churn(&sim, 0.0).await;
    if refused(&handle) {
        assert_eq!(
            store.deltas("pods").len(),
            held,
            "recorded while the identity was in doubt"
        );
    }
    // Readable again: recording goes on from where it was, nothing lost.
    wait_for("recording again", Duration::from_secs(15), || {
        is_recording(&handle)
    })
    .await;
    wait_replay_matches(&sim, &store, "pods").await;
    assert!(store.deltas("pods").len() > held);
    assert_eq!(store.clusters().len(), 1);
    assert!(store.duplicates().is_empty(), "{:?}", store.duplicates());
    handle.shutdown();
    handle.stopped().await.expect("stopped");
}
