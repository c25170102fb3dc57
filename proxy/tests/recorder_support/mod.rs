//! Shared by the recorder's tests: an in-memory [`RecordStore`] (which can
//! be told to fail, and replays what it holds), the simulated cluster and
//! its controls called in-process, and waiting for a condition.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use deltascope_history::{ClusterId, DeltaRecord, GapReason, GapRecord, RecordedState, Write};
use deltascope_informer::DeltaType;
use deltascope_proxy::forward::{Forwarder, SessionLimits};
use deltascope_proxy::recorder::{
    self, RecordStore, RecorderConfig, RecorderHandle, RecorderState, StoreUnavailable,
};
use deltascope_sim::{Sim, SimConfig};
use http_body_util::BodyExt;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Everything written, in order, and a switch that makes it fail.
#[derive(Default)]
pub struct MemoryStore {
    writes: Mutex<Vec<(ClusterId, Write)>>,
    failing: AtomicBool,
}

impl MemoryStore {
    pub fn new() -> Arc<MemoryStore> {
        Arc::new(MemoryStore::default())
    }

    /// From now on every call fails (`true`) or works again.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    pub fn writes(&self) -> Vec<Write> {
        self.writes
            .lock()
            .unwrap()
            .iter()
            .map(|(_, w)| w.clone())
            .collect()
    }

    pub fn clusters(&self) -> HashSet<ClusterId> {
        self.writes
            .lock()
            .unwrap()
            .iter()
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// The deltas of `resource` stored under `cluster`.
    pub fn deltas_of(&self, cluster: &ClusterId, resource: &str) -> Vec<DeltaRecord> {
        self.writes
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(c, w)| match w {
                Write::Delta(d) if c == cluster && d.resource == resource => Some(d.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn deltas(&self, resource: &str) -> Vec<DeltaRecord> {
        self.writes()
            .into_iter()
            .filter_map(|w| match w {
                Write::Delta(d) if d.resource == resource => Some(d),
                _ => None,
            })
            .collect()
    }

    pub fn gaps(&self, resource: &str) -> Vec<GapRecord> {
        self.writes()
            .into_iter()
            .filter_map(|w| match w {
                Write::Gap(g) if g.resource == resource => Some(g),
                _ => None,
            })
            .collect()
    }

    pub fn watermarks(&self, resource: &str) -> usize {
        self.writes()
            .iter()
            .filter(|w| matches!(w, Write::Watermark(m) if m.resource == resource))
            .count()
    }

    /// The resource's objects (key → object JSON text) after every delta.
    pub fn replay(&self, resource: &str) -> BTreeMap<String, String> {
        let mut objects = BTreeMap::new();
        for delta in self.deltas(resource) {
            let key = if delta.namespace.is_empty() {
                delta.name.clone()
            } else {
                format!("{}/{}", delta.namespace, delta.name)
            };
            if delta.kind == DeltaType::Deleted {
                objects.remove(&key);
            } else {
                objects.insert(key, delta.object.to_string());
            }
        }
        objects
    }

    /// The digest of the replayed store (`deltascope_facts::digest`).
    pub fn replay_digest(&self, resource: &str) -> String {
        let store = self.replay(resource);
        let pairs: Vec<(String, String)> = store
            .iter()
            .map(|(key, text)| {
                let value: serde_json::Value = serde_json::from_str(text).unwrap();
                let rv = value["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                (key.clone(), rv)
            })
            .collect();
        deltascope_facts::digest_of(pairs.into_iter())
    }

    /// Every (resource, uid, resourceVersion, kind) written more than once.
    pub fn duplicates(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut twice = Vec::new();
        for w in self.writes() {
            if let Write::Delta(d) = w {
                let id = format!(
                    "{} {} {} {:?}",
                    d.resource, d.uid, d.resource_version, d.kind
                );
                if !seen.insert(id.clone()) {
                    twice.push(id);
                }
            }
        }
        twice
    }
}

impl RecordStore for MemoryStore {
    fn write(
        &self,
        cluster: &ClusterId,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<(), StoreUnavailable>> + Send {
        let result = if self.failing.load(Ordering::SeqCst) {
            Err(StoreUnavailable("the test's database is down".into()))
        } else {
            let mut held = self.writes.lock().unwrap();
            held.extend(writes.into_iter().map(|w| (cluster.clone(), w)));
            Ok(())
        };
        std::future::ready(result)
    }

    fn recorded_state(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> impl Future<Output = Result<Option<RecordedState>, StoreUnavailable>> + Send {
        if self.failing.load(Ordering::SeqCst) {
            return std::future::ready(Err(StoreUnavailable("the test's database is down".into())));
        }
        let held = self.writes.lock().unwrap();
        let mut any = false;
        let mut objects: BTreeMap<String, String> = BTreeMap::new();
        let mut rv = String::new();
        let mut through = 0;
        for (c, w) in held.iter() {
            if c != cluster || w.resource() != resource {
                continue;
            }
            any = true;
            match w {
                Write::Delta(d) => {
                    let key = format!("{}/{}", d.namespace, d.name);
                    if d.kind == DeltaType::Deleted {
                        objects.remove(&key);
                    } else {
                        objects.insert(key, d.object.to_string());
                    }
                    rv = d.store_resource_version.clone();
                    through = through.max(d.at_ms);
                }
                Write::Watermark(m) => {
                    rv = m.store_resource_version.clone();
                    through = through.max(m.through_ms);
                }
                Write::Gap(g) => through = through.max(g.to_ms),
                Write::Usage(_) => {}
            }
        }
        std::future::ready(Ok(any.then(|| RecordedState {
            store_resource_version: rv,
            through_ms: through,
            objects: objects.into_values().collect(),
        })))
    }
}

/// A simulated cluster of `pods` pods, churning `churn` changes a second.
pub fn sim(pods: usize, churn: f64) -> Sim {
    Sim::start(SimConfig {
        initial_pods: pods,
        churn_per_sec: churn,
        ..SimConfig::default()
    })
}

/// serve's forwarder to `sim` (`show_secrets` as `--show-secrets`).
pub fn forwarder(sim: &Sim, show_secrets: bool) -> Forwarder {
    Forwarder::sim(sim.api_router(), show_secrets, SessionLimits::default())
}

/// Only `resources`, quick watermarks.
pub fn config(resources: &[&str]) -> RecorderConfig {
    RecorderConfig {
        record: Some(resources.iter().map(|r| r.to_string()).collect()),
        watermarks: recorder::WatermarkTiming {
            changed: 500,
            quiet: 2_000,
        },
        ..RecorderConfig::default()
    }
}

pub fn start(sim: &Sim, store: &Arc<MemoryStore>, config: RecorderConfig) -> RecorderHandle {
    recorder::spawn(
        forwarder(sim, false),
        store.clone(),
        config,
        CancellationToken::new(),
    )
}

/// POST a `/_sim/*` control with a JSON body; the answer's JSON.
pub async fn control(sim: &Sim, path: &str, body: serde_json::Value) -> serde_json::Value {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = sim.control_router().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "{path}: {status} {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap()
}

/// GET an API path of the sim, unredacted.
pub async fn api_get(sim: &Sim, path: &str) -> serde_json::Value {
    let request = http::Request::get(path).body(Body::empty()).unwrap();
    let response = sim.api_router().oneshot(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

pub async fn churn(sim: &Sim, per_sec: f64) {
    control(
        sim,
        "/_sim/churn",
        serde_json::json!({ "events_per_sec": per_sec }),
    )
    .await;
}

/// Waits until `check` holds, failing with `what` after `limit`.
pub async fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the record of `resource` replays to the sim's state.
pub async fn wait_replay_matches(sim: &Sim, store: &MemoryStore, resource: &str) {
    let limit = Duration::from_secs(10);
    let start = Instant::now();
    loop {
        let (want, got) = (sim.digest(resource), store.replay_digest(resource));
        if want == got {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "the record of {resource} does not replay to the sim's state: {got} != {want}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A recorder of `resource` on `sim` into `store`, once it records and its
/// record replays to the sim's state.
pub async fn recording(sim: &Sim, store: &Arc<MemoryStore>, resource: &str) -> RecorderHandle {
    let handle = start(sim, store, config(&[resource]));
    wait_for("recording", Duration::from_secs(10), || {
        is_recording(&handle)
    })
    .await;
    wait_replay_matches(sim, store, resource).await;
    handle
}

pub fn is_recording(handle: &RecorderHandle) -> bool {
    handle.status().state == RecorderState::Recording
}

pub fn gap_reasons(store: &MemoryStore, resource: &str) -> Vec<GapReason> {
    store.gaps(resource).iter().map(|g| g.reason).collect()
}
