//! What bounds the recorder's memory, seen from outside: it lists in pages
//! of `LIST_PAGE` objects (never a whole resource in one body: 100k pods are
//! about 900 MB of JSON), and the record still replays to the cluster; it
//! reads one resource's recorded state at a time (each comes whole).

use crate::recorder_support;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use deltascope_history::{ClusterId, RecordedState, Write};
use deltascope_proxy::forward::{Forwarder, SessionLimits};
use deltascope_proxy::recorder::{self, RecordStore, StoreUnavailable, LIST_PAGE};
use recorder_support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_read_a_page_at_a_time() {
    let pods = 2 * LIST_PAGE as usize + 100;
    let sim = sim(pods, 0.0);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let noted = seen.clone();
    let api = sim.api_router().layer(tower::util::MapRequestLayer::new(
        move |request: http::Request<Body>| {
            noted.lock().unwrap().push(request.uri().to_string());
            request
        },
    ));
    let store = MemoryStore::new();
    let handle = recorder::spawn(
        Forwarder::sim(api, false, SessionLimits::default()),
        store.clone(),
        config(&["pods"]),
        CancellationToken::new(),
    );
    wait_for("the pods recorded", Duration::from_secs(20), || {
        store.deltas("pods").len() >= pods
    })
    .await;
    wait_replay_matches(&sim, &store, "pods").await;

    let lists: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|uri| uri.starts_with("/api/v1/pods?") && !uri.contains("watch="))
        .cloned()
        .collect();
    let limit = format!("limit={LIST_PAGE}");
    assert_eq!(lists.len(), 3, "three pages of {LIST_PAGE}: {lists:?}");
    assert!(lists.iter().all(|uri| uri.contains(&limit)), "{lists:?}");
    assert_eq!(
        lists.iter().filter(|uri| uri.contains("continue=")).count(),
        2,
        "the second and third pages continue the first: {lists:?}"
    );
    handle.shutdown();
    handle.stopped().await.unwrap();
}

/// The test's store, noting how many recorded states are read at once
/// (each read takes a while, as a large one does).
struct Watched {
    inner: Arc<MemoryStore>,
    reading: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl RecordStore for Watched {
    fn write(
        &self,
        cluster: &ClusterId,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<(), StoreUnavailable>> + Send {
        self.inner.write(cluster, writes)
    }

    fn recorded_state(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> impl Future<Output = Result<Option<RecordedState>, StoreUnavailable>> + Send {
        let state = self.inner.recorded_state(cluster, resource);
        let (reading, most) = (self.reading.clone(), self.most.clone());
        async move {
            let now = reading.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            reading.fetch_sub(1, Ordering::SeqCst);
            state.await
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_states_are_read_one_at_a_time() {
    let resources = [
        "pods",
        "services",
        "configmaps",
        "deployments.apps",
        "replicasets.apps",
    ];
    let sim = sim(50, 0.0);
    let store = MemoryStore::new();
    let first = start(&sim, &store, config(&resources));
    for resource in resources {
        wait_replay_matches(&sim, &store, resource).await;
    }
    first.shutdown();
    first.stopped().await.unwrap();

    let most = Arc::new(AtomicUsize::new(0));
    let watched = Arc::new(Watched {
        inner: store.clone(),
        reading: Arc::new(AtomicUsize::new(0)),
        most: most.clone(),
    });
    let second = recorder::spawn(
        forwarder(&sim, false),
        watched,
        config(&resources),
        CancellationToken::new(),
    );
    wait_for("every resource resumed", Duration::from_secs(20), || {
        resources
            .iter()
            .all(|r| gap_reasons(&store, r).contains(&deltascope_history::GapReason::NotRunning))
    })
    .await;
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "recorded states read at once"
    );
    for resource in resources {
        wait_replay_matches(&sim, &store, resource).await;
    }
    second.shutdown();
    second.stopped().await.unwrap();
}
