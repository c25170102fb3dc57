//! The metrics API (`metrics.k8s.io/v1beta1`) as metrics-server serves it:
//! `PodMetrics` and `NodeMetrics` measured when read, never stored. Time is
//! cut into windows of `SimConfig::metrics_resolution` (15 s by default,
//! counted from the Unix epoch); within one window every read gives the same
//! numbers, computed by `model` from the seed, the container and the
//! window's index; the next window's differ. One container leaks (`leak`:
//! `shop`'s `cart`) until it is OOMKilled, which the task started here
//! writes at the start of the window after it reached its limit.
//!
//! What is measured: a pod is measured while its phase is Running, and only
//! its running containers (a pod with none has no metrics, as a Pending one
//! has none); a node is measured always, its usage the sum of its Running
//! pods' (those whose `spec.nodeName` names it) plus the system's overhead.
//!
//! The files: `quantity` (how quantities and durations are written),
//! `model` (the usage model), `leak` (the leaking container); the routes
//! are `routes::metrics`.

pub mod leak;
pub mod model;
pub mod quantity;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::config::SimConfig;
use crate::objects;
use crate::resources::PODS;
use crate::store::{key_of, Store};
use crate::workload::Workload;
use leak::{Leak, Leaker};
use model::{Limits, Usage};

/// The metrics API's state: its configuration and the leak.
#[derive(Debug)]
pub struct Metrics {
    seed: u64,
    resolution: Duration,
    leak_windows: u64,
    pub leak: Leak,
}

/// One measured container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    pub name: String,
    pub usage: Usage,
}

impl Metrics {
    /// The metrics of a cluster started with `config`; `None` with
    /// `metrics` off.
    pub fn new(config: &SimConfig) -> Option<Arc<Metrics>> {
        config.metrics.then(|| {
            Arc::new(Metrics {
                seed: config.seed,
                resolution: config.metrics_resolution.max(Duration::from_millis(1)),
                leak_windows: u64::from(config.metrics_leak_windows.max(2)),
                leak: Leak::default(),
            })
        })
    }

    fn resolution_millis(&self) -> u128 {
        self.resolution.as_millis().max(1)
    }

    fn now_millis() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    }

    /// The index of the window now.
    pub fn window_now(&self) -> u64 {
        (Self::now_millis() / self.resolution_millis()) as u64
    }

    /// `timestamp` of a window's metrics: its start, to the second.
    pub fn timestamp(&self, window: u64) -> String {
        let millis = u128::from(window) * self.resolution_millis();
        objects::rfc3339((millis / 1000) as i64)
    }

    /// `window` of the metrics: the resolution, as Go prints a duration.
    pub fn window_text(&self) -> String {
        quantity::go_duration(self.resolution)
    }

    /// Picks the leaker and starts the task that moves the leak on at the
    /// start of each window.
    pub fn start(self: &Arc<Self>, store: Arc<Store>, workload: Arc<Mutex<Workload>>) {
        self.leak.begin(&store, self.window_now());
        tokio::spawn(run(self.clone(), store, workload));
    }

    /// The running containers of a Running pod and what they use in
    /// `window`, in the pod's spec order; `None` when it has no metrics.
    pub fn pod(&self, pod: &Value, window: u64, leaker: Option<&Leaker>) -> Option<Vec<Measured>> {
        if pod["status"]["phase"] != "Running" {
            return None;
        }
        let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let key = key_of(Some(namespace), name);
        let statuses = pod["status"]["containerStatuses"].as_array()?;
        let measured: Vec<Measured> = pod["spec"]["containers"]
            .as_array()?
            .iter()
            .filter_map(|spec| {
                let cname = spec["name"].as_str()?;
                let status = statuses.iter().find(|s| s["name"] == cname)?;
                if !status["state"]["running"].is_object() {
                    return None;
                }
                let limits = &spec["resources"]["limits"];
                let limits = Limits {
                    cpu_nanocores: limits["cpu"].as_str().and_then(quantity::parse_nanocores),
                    memory_bytes: limits["memory"].as_str().and_then(quantity::parse_bytes),
                };
                let identity = model::identity(self.seed, namespace, name, cname);
                let mut usage = model::container(identity, limits, window);
                if let Some(l) = leaker.filter(|l| {
                    l.key == key
                        && l.container == cname
                        && status["containerID"] == l.container_id.as_str()
                }) {
                    usage.memory_bytes = l.memory(window, self.leak_windows);
                }
                Some(Measured {
                    name: cname.to_string(),
                    usage,
                })
            })
            .collect();
        (!measured.is_empty()).then_some(measured)
    }

    /// What every node's Running pods use in `window`, by node name.
    pub fn pods_by_node(&self, store: &Store, window: u64) -> HashMap<String, Usage> {
        let leaker = self.leak.current();
        let mut by_node: HashMap<String, Usage> = HashMap::new();
        let _ = store.snapshot(PODS, None, None, None, &mut |obj| {
            let Some(node) = obj.sel["spec"]["nodeName"].as_str() else {
                return true;
            };
            if obj.sel["status"]["phase"] != "Running" {
                return true;
            }
            if let Some(containers) = self.pod(&obj.value(), window, leaker.as_ref()) {
                let sum = containers.iter().fold(Usage::default(), |s, c| s + c.usage);
                let total = by_node.entry(node.to_string()).or_default();
                *total = *total + sum;
            }
            true
        });
        by_node
    }

    /// A node's usage in `window`: its pods' (from [`Metrics::pods_by_node`])
    /// plus its overhead.
    pub fn node(&self, node: &str, pods: Usage, window: u64) -> Usage {
        pods + model::node_overhead(self.seed, node, window)
    }

    /// `{"cpu": …, "memory": …}` as metrics-server writes a usage.
    pub fn usage_json(usage: Usage) -> Value {
        json!({
            "cpu": quantity::cpu(usage.cpu_nanocores),
            "memory": quantity::memory(usage.memory_bytes)
        })
    }
}

/// At the start of each window, moves the leak on (OOMKilling its container
/// when its climb is over).
async fn run(metrics: Arc<Metrics>, store: Arc<Store>, workload: Arc<Mutex<Workload>>) {
    loop {
        let next = u128::from(metrics.window_now() + 1) * metrics.resolution_millis();
        let wait = next.saturating_sub(Metrics::now_millis()) + 2;
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        let window = metrics.window_now();
        let mut wl = workload.lock().await;
        metrics
            .leak
            .tick(&store, &mut wl, window, metrics.leak_windows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(phase: &str, cart: Value) -> Value {
        json!({
            "metadata": {"name": "cart-1", "namespace": "shop"},
            "spec": {"containers": [
                {"name": "cart", "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "log-shipper", "resources": {"limits": {"memory": "64Mi"}}}
            ]},
            "status": {"phase": phase, "containerStatuses": [
                cart,
                {"name": "log-shipper", "state": {"running": {}}, "containerID": "containerd://b"}
            ]}
        })
    }

    fn metrics() -> Arc<Metrics> {
        Metrics::new(&SimConfig {
            metrics_leak_windows: 4,
            ..SimConfig::default()
        })
        .expect("metrics on by default")
    }

    #[test]
    fn only_running_containers_of_running_pods_are_measured() {
        let m = metrics();
        let running =
            json!({"name": "cart", "state": {"running": {}}, "containerID": "containerd://a"});
        let waiting = json!({"name": "cart", "state": {"waiting": {"reason": "CrashLoopBackOff"}}});
        assert_eq!(m.pod(&pod("Pending", running.clone()), 3, None), None);
        let both = m.pod(&pod("Running", running), 3, None).unwrap_or_default();
        assert_eq!(
            both.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["cart", "log-shipper"]
        );
        let one = m.pod(&pod("Running", waiting), 3, None).unwrap_or_default();
        assert_eq!(one.len(), 1);
        assert_eq!(
            one[0], both[1],
            "the same container, the same window, the same usage"
        );
        assert!(Metrics::new(&SimConfig {
            metrics: false,
            ..SimConfig::default()
        })
        .is_none());
    }

    #[test]
    fn the_leaking_run_reports_the_climb() {
        let m = metrics();
        let running =
            json!({"name": "cart", "state": {"running": {}}, "containerID": "containerd://a"});
        let leaker = Leaker {
            key: "shop/cart-1".to_string(),
            uid: "u".to_string(),
            container: "cart".to_string(),
            container_id: "containerd://a".to_string(),
            limit: 256 << 20,
            start: 10,
        };
        let memory = |window, leaker: &Leaker| {
            m.pod(&pod("Running", running.clone()), window, Some(leaker))
                .map(|cs| cs[0].usage.memory_bytes)
        };
        assert_eq!(memory(10, &leaker), Some(model::leak_low(256 << 20)));
        assert_eq!(memory(13, &leaker), Some(256 << 20));
        let other_run = Leaker {
            container_id: "containerd://old".to_string(),
            ..leaker.clone()
        };
        assert_ne!(
            memory(13, &other_run),
            Some(256 << 20),
            "another run does not leak"
        );
    }

    #[test]
    fn windows_are_stamped_with_their_start() {
        let m = metrics();
        assert_eq!(m.window_text(), "15s");
        assert_eq!(m.timestamp(4), "1970-01-01T00:01:00Z");
    }
}
