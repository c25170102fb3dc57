//! The leaking container: the `cart` container of the first running pod
//! (in name order) of the `cart` Deployment in the `shop` namespace (label
//! `app=cart`). Its memory climbs from a fifth of its limit (256Mi) to the
//! limit over `SimConfig::metrics_leak_windows` windows; in the window after
//! the one where it reached the limit the sim OOMKills it (`workload::oom`)
//! and the climb starts again from the low. A leaker whose pod goes away or
//! stops running is replaced by the next such pod, climbing from its low; one
//! restarted by the churn starts its climb again. No `cart` pod running, no
//! leak. Reads only look at the state kept here; the task at each window's
//! start (`tick`) moves it on.

use std::sync::Mutex;

use serde_json::Value;

use super::model;
use super::quantity;
use crate::resources::PODS;
use crate::store::Store;
use crate::workload::Workload;

/// Where the leaking pod lives and the label that names its Deployment.
pub const LEAK_NAMESPACE: &str = "shop";
pub const LEAK_APP: &str = "cart";

/// The container that leaks and where its climb stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaker {
    /// `shop/cart-…`
    pub key: String,
    pub uid: String,
    pub container: String,
    /// The run that leaks (`containerd://…`): another run is not this climb.
    pub container_id: String,
    pub limit: u64,
    /// The window this run's climb started in.
    pub start: u64,
}

impl Leaker {
    /// Its memory in `window` of a climb of `n` windows.
    pub fn memory(&self, window: u64, n: u64) -> u64 {
        model::leaking_memory(self.limit, window.saturating_sub(self.start), n)
    }
}

/// The leak's state, shared by the reads and the task.
#[derive(Debug, Default)]
pub struct Leak {
    current: Mutex<Option<Leaker>>,
}

impl Leak {
    pub fn current(&self) -> Option<Leaker> {
        self.current.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn set(&self, leaker: Option<Leaker>) {
        if let Ok(mut current) = self.current.lock() {
            *current = leaker;
        }
    }

    /// Picks the first leaker, its climb starting in `window`.
    pub fn begin(&self, store: &Store, window: u64) {
        self.set(choose(store, window));
    }

    /// At the start of `window`: OOMKills the leaker whose climb of `n`
    /// windows is over (its next climb starts now), follows a restart or
    /// picks another leaker.
    pub fn tick(&self, store: &Store, workload: &mut Workload, window: u64, n: u64) {
        let next = match self.current() {
            None => choose(store, window),
            Some(mut leaker) => match running_id(store, &leaker) {
                Some(id) if id == leaker.container_id => {
                    if window >= leaker.start + n {
                        match workload.oom_kill(store, &leaker.key, &leaker.container) {
                            Some(new_id) => {
                                tracing::info!(pod = %leaker.key, "metrics: the leaking container reached its memory limit and was OOMKilled");
                                leaker.container_id = new_id;
                                leaker.start = window;
                            }
                            None => return self.set(choose(store, window)),
                        }
                    }
                    Some(leaker)
                }
                Some(id) => {
                    leaker.container_id = id;
                    leaker.start = window;
                    Some(leaker)
                }
                None => choose(store, window),
            },
        };
        self.set(next);
    }
}

/// The leaker's container's running run (`containerID`), if its pod is
/// still the one it was and the container runs.
fn running_id(store: &Store, leaker: &Leaker) -> Option<String> {
    let pod = store.get(PODS, &leaker.key)?;
    if pod.sel["metadata"]["uid"] != leaker.uid.as_str() {
        return None;
    }
    let pod = pod.value();
    running_container(&pod, &leaker.container).map(|(id, _)| id)
}

/// A running container's id and memory limit.
fn running_container(pod: &Value, container: &str) -> Option<(String, Option<u64>)> {
    let status = pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == container)?;
    if !status["state"]["running"].is_object() {
        return None;
    }
    let id = status["containerID"].as_str()?.to_string();
    let limit = pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == container)
        .and_then(|c| c["resources"]["limits"]["memory"].as_str())
        .and_then(quantity::parse_bytes);
    Some((id, limit))
}

/// The first running `app=cart` pod of `shop` whose `cart` container has a
/// memory limit, its climb starting in `window`.
fn choose(store: &Store, window: u64) -> Option<Leaker> {
    let mut found = None;
    let _ = store.snapshot(PODS, Some(LEAK_NAMESPACE), None, None, &mut |obj| {
        let sel = &obj.sel;
        if sel["metadata"]["labels"]["app"] != LEAK_APP || sel["status"]["phase"] != "Running" {
            return true;
        }
        let pod = obj.value();
        let Some((container_id, Some(limit))) = running_container(&pod, LEAK_APP) else {
            return true;
        };
        found = Some(Leaker {
            key: obj.key.clone(),
            uid: sel["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            container: LEAK_APP.to_string(),
            container_id,
            limit,
            start: window,
        });
        false
    });
    found
}
