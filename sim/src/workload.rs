//! The seeded workload generator: builds the initial cluster (namespaces,
//! nodes, deployments with their replicasets, pods, services, configmaps,
//! secrets, widgets) and then keeps changing it — pods start, crash-loop,
//! recover, get relabelled, replaced and scaled — at a configurable rate.
//! Given a seed, the sequence of changes is the same on every run.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::{watch, Mutex};

use super::objects::{self, AppSpec};
use super::resources::{
    CONFIGMAPS, CRDS, DAEMONSETS, DEPLOYMENTS, EVENTS, JOBS, NAMESPACES, NODES, PODS, REPLICASETS,
    SECRETS, SERVICES, STATEFULSETS, WIDGETS,
};
use super::store::{key_of, Store};

mod pod_counts;
mod pod_status;

use pod_counts::PodCounts;
use pod_status::{make_crashloop, make_running};

const NAMESPACES_LIST: &[&str] = &[
    "default",
    "kube-system",
    "shop",
    "payments",
    "monitoring",
    "data",
];

const APPS: &[(&str, &str, &str, &str, u16)] = &[
    (
        "shop",
        "frontend",
        "ghcr.io/deltascope/frontend:2.4.1",
        "web",
        8080,
    ),
    (
        "shop",
        "cart",
        "ghcr.io/deltascope/cart:1.9.0",
        "backend",
        7070,
    ),
    (
        "shop",
        "checkout",
        "ghcr.io/deltascope/checkout:3.0.2",
        "backend",
        5050,
    ),
    (
        "shop",
        "catalog",
        "ghcr.io/deltascope/catalog:1.2.7",
        "backend",
        3550,
    ),
    (
        "shop",
        "search",
        "ghcr.io/deltascope/search:0.8.3",
        "backend",
        9200,
    ),
    (
        "payments",
        "payments-api",
        "ghcr.io/deltascope/payments:4.1.0",
        "backend",
        8443,
    ),
    (
        "payments",
        "ledger",
        "ghcr.io/deltascope/ledger:2.0.0",
        "data",
        5432,
    ),
    (
        "payments",
        "fraud-check",
        "ghcr.io/deltascope/fraud:1.0.4",
        "backend",
        8000,
    ),
    (
        "monitoring",
        "grafana",
        "grafana/grafana:11.2.0",
        "web",
        3000,
    ),
    (
        "monitoring",
        "alertmanager",
        "prom/alertmanager:v0.27.0",
        "backend",
        9093,
    ),
    (
        "data",
        "kafka-connect",
        "confluentinc/cp-kafka-connect:7.7.1",
        "data",
        8083,
    ),
    (
        "data",
        "etl-runner",
        "ghcr.io/deltascope/etl:0.3.1",
        "data",
        8081,
    ),
    (
        "kube-system",
        "coredns",
        "registry.k8s.io/coredns/coredns:v1.11.3",
        "system",
        53,
    ),
    (
        "kube-system",
        "metrics-server",
        "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
        "system",
        10250,
    ),
    ("default", "hello-web", "nginx:1.27.2", "web", 80),
];

const MAX_EVENTS: usize = 300;
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

struct App {
    spec: AppSpec,
    #[allow(dead_code)]
    deploy_uid: String,
    rs_uid: String,
    pods: Vec<String>,
}

/// The generator's own bookkeeping; the objects themselves live in the store.
pub struct Workload {
    rng: StdRng,
    apps: Vec<App>,
    nodes: Vec<String>,
    events: std::collections::VecDeque<String>,
    event_counter: u64,
    target_pods: usize,
    rollouts: Vec<Rollout>,
    /// How many pods each app has, summed in a Fenwick tree: picking a pod
    /// and counting them were scans of every app (20k at 100k pods) on
    /// each write.
    pod_counts: PodCounts,
}

/// A rolling update in progress: pods of the old replicaset are replaced
/// one at a time by pods of the new one.
struct Rollout {
    app: usize,
    old_rs: String,
    old_pods: Vec<String>,
}

/// What `scale_to` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScaleReport {
    pub before: usize,
    pub after: usize,
    pub created: usize,
    pub deleted: usize,
}

impl Workload {
    /// Build the initial cluster into `store`.
    pub fn setup(store: &Store, seed: u64, initial_pods: usize) -> Workload {
        let mut wl = Workload {
            rng: StdRng::seed_from_u64(seed),
            apps: Vec::new(),
            nodes: Vec::new(),
            events: Default::default(),
            event_counter: 0,
            target_pods: initial_pods,
            rollouts: Vec::new(),
            pod_counts: PodCounts::default(),
        };
        store.create(CRDS, aged(objects::widget_crd(), 60 * 86_400));
        for ns in NAMESPACES_LIST {
            store.create(NAMESPACES, aged(objects::namespace(ns), 90 * 86_400));
        }
        let node_count = (initial_pods / 20).clamp(3, 100);
        for i in 0..node_count {
            let name = format!("node-{i}");
            store.create(
                NODES,
                aged(objects::node(&name, i), 40 * 86_400 - i as i64 * 3600),
            );
            wl.nodes.push(name);
        }
        let now = objects::now_secs();
        store.create(
            STATEFULSETS,
            aged(
                objects::statefulset("payments", "postgres", "postgres:16.4", 3),
                20 * 86_400,
            ),
        );
        store.create(
            STATEFULSETS,
            aged(
                objects::statefulset("data", "kafka", "bitnami/kafka:3.8.0", 3),
                20 * 86_400,
            ),
        );
        store.create(
            DAEMONSETS,
            aged(
                objects::daemonset(
                    "monitoring",
                    "node-exporter",
                    "prom/node-exporter:v1.8.2",
                    node_count as u32,
                ),
                40 * 86_400,
            ),
        );
        store.create(
            DAEMONSETS,
            aged(
                objects::daemonset(
                    "kube-system",
                    "kube-proxy",
                    "registry.k8s.io/kube-proxy:v1.32.0",
                    node_count as u32,
                ),
                40 * 86_400,
            ),
        );
        for (i, done) in [true, true, false].iter().enumerate() {
            let started = now - 3600 * (3 - i as i64);
            store.create(
                JOBS,
                objects::job(
                    "payments",
                    &format!("db-migrate-{}", 28_000_000 + i),
                    "ghcr.io/deltascope/migrate:1.4.0",
                    *done,
                    started,
                ),
            );
        }
        // Spread the initial pods over deployments of 1–6 replicas.
        let mut remaining = initial_pods;
        let mut i = 0;
        while remaining > 0 || i < 3 {
            let replicas = if remaining == 0 {
                0
            } else {
                wl.rng.gen_range(1..=9).min(remaining)
            };
            remaining -= replicas;
            wl.add_app(store, i, replicas as u32);
            i += 1;
        }
        seed_widgets(store, true);
        wl
    }

    fn add_app(&mut self, store: &Store, index: usize, replicas: u32) {
        let (ns, base, image, tier, port) = APPS[index % APPS.len()];
        let name = if index < APPS.len() {
            base.to_string()
        } else {
            format!("{base}-{}", index / APPS.len())
        };
        let spec = AppSpec {
            namespace: ns.to_string(),
            name,
            image: image.to_string(),
            tier: tier.to_string(),
            hash: self.random_name(10),
            replicas,
            port,
        };
        let born = json!(objects::rfc3339(
            objects::now_secs() - self.rng.gen_range(5 * 86_400..30 * 86_400)
        ));
        let with_age = |mut v: Value| {
            v["metadata"]["creationTimestamp"] = born.clone();
            v
        };
        let deploy = store.create(DEPLOYMENTS, with_age(spec.deployment(replicas)));
        let deploy_uid = deploy.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let rs = store.create(
            REPLICASETS,
            with_age(spec.replicaset(&deploy_uid, replicas)),
        );
        let rs_uid = rs.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        store.create(SERVICES, with_age(spec.service()));
        store.create(CONFIGMAPS, with_age(spec.configmap()));
        store.create(SECRETS, with_age(spec.secret()));
        self.apps.push(App {
            spec,
            deploy_uid,
            rs_uid,
            pods: Vec::new(),
        });
        let a = self.apps.len() - 1;
        for _ in 0..replicas {
            let mut pod = self.new_pod(a);
            let roll = self.rng.gen_range(0..100);
            let age = self.rng.gen_range(600..5 * 86_400);
            pod["metadata"]["creationTimestamp"] =
                json!(objects::rfc3339(objects::now_secs() - age));
            if roll < 85 {
                let restarts = if self.rng.gen_bool(0.8) {
                    0
                } else {
                    self.rng.gen_range(1..4)
                };
                make_running(&mut pod, restarts, &self.random_name(12));
            } else if roll < 92 {
                make_crashloop(&mut pod, self.rng.gen_range(3..40));
            } else {
                // Still starting: it was created moments ago.
                pod["metadata"]["creationTimestamp"] = json!(objects::rfc3339(
                    objects::now_secs() - self.rng.gen_range(2..40)
                ));
            }
            let obj = store.create(PODS, pod);
            self.push_pod(a, obj.key.clone());
        }
    }

    fn random_name(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| ALPHABET[self.rng.gen_range(0..ALPHABET.len())] as char)
            .collect()
    }

    fn new_pod(&mut self, a: usize) -> Value {
        let suffix = self.random_name(5);
        let node = self.nodes[self.rng.gen_range(0..self.nodes.len())].clone();
        let track = if self.rng.gen_bool(0.2) {
            "canary"
        } else {
            "stable"
        };
        let app = &self.apps[a];
        app.spec.pod(&suffix, &app.rs_uid, &node, track)
    }

    /// Records that app `a` gained (`delta` > 0) or lost pods.
    fn pods_changed(&mut self, a: usize, delta: isize) {
        // while apps are being added the tree is stale; `counts` rebuilds it
        if self.pod_counts.apps == self.apps.len() {
            self.pod_counts.add(a, delta);
        }
    }

    fn push_pod(&mut self, a: usize, key: String) {
        self.apps[a].pods.push(key);
        self.pods_changed(a, 1);
    }

    fn swap_remove_pod(&mut self, a: usize, p: usize) -> String {
        let key = self.apps[a].pods.swap_remove(p);
        self.pods_changed(a, -1);
        key
    }

    fn counts(&mut self) -> &PodCounts {
        if self.pod_counts.apps != self.apps.len() {
            self.pod_counts = PodCounts::build(self.apps.iter().map(|app| app.pods.len()));
        }
        &self.pod_counts
    }

    pub fn pod_count(&mut self) -> usize {
        self.counts().total
            + self
                .rollouts
                .iter()
                .map(|r| r.old_pods.len())
                .sum::<usize>()
    }

    /// Start a rolling update of a random deployment to the next image tag.
    fn start_rollout(&mut self, store: &Store) -> u64 {
        if self.apps.is_empty() {
            return 0;
        }
        let a = self.rng.gen_range(0..self.apps.len());
        if self.rollouts.iter().any(|r| r.app == a) || self.apps[a].pods.is_empty() {
            return 0;
        }
        let hash = self.random_name(10);
        let app = &mut self.apps[a];
        let old_rs = app.spec.rs_name();
        let old_pods = std::mem::take(&mut app.pods);
        let taken = old_pods.len() as isize;
        app.spec.image = next_tag(&app.spec.image);
        app.spec.hash = hash;
        let image = app.spec.image.clone();
        let ns = app.spec.namespace.clone();
        let d_key = key_of(Some(&ns), &app.spec.name);
        self.pods_changed(a, -taken);
        let mut revision = 1;
        store.update(DEPLOYMENTS, &d_key, |v| {
            revision = v["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                .as_str()
                .and_then(|r| r.parse::<u64>().ok())
                .unwrap_or(1)
                + 1;
            v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
                json!(revision.to_string());
            v["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
            v["status"]["updatedReplicas"] = json!(0);
            v["status"]["conditions"][1]["reason"] = json!("ReplicaSetUpdated");
        });
        let app = &self.apps[a];
        let mut rs = app.spec.replicaset(&app.deploy_uid, 0);
        rs["spec"]["replicas"] = json!(0);
        rs["status"] = json!({"replicas": 0, "observedGeneration": 1});
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
            json!(revision.to_string());
        let rs = store.create(REPLICASETS, rs);
        self.apps[a].rs_uid = rs.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.rollouts.push(Rollout {
            app: a,
            old_rs,
            old_pods,
        });
        2
    }

    /// Replace one old pod of a rollout; finish it when none is left.
    fn rollout_step(&mut self, store: &Store, r: usize) -> u64 {
        let a = self.rollouts[r].app;
        let mut writes = 0;
        let mut pod = self.new_pod(a);
        let cid = self.random_name(12);
        make_running(&mut pod, 0, &cid);
        let obj = store.create(PODS, pod);
        self.push_pod(a, obj.key.clone());
        writes += 1;
        if let Some(old) = self.rollouts[r].old_pods.pop() {
            store.delete(PODS, &old);
            writes += 1;
        }
        let ns = self.apps[a].spec.namespace.clone();
        let old_left = self.rollouts[r].old_pods.len();
        let old_key = key_of(Some(&ns), &self.rollouts[r].old_rs);
        store.update(REPLICASETS, &old_key, |v| {
            v["spec"]["replicas"] = json!(old_left);
            v["status"]["replicas"] = json!(old_left);
            v["status"]["readyReplicas"] = json!(old_left);
            v["status"]["availableReplicas"] = json!(old_left);
            v["status"]["fullyLabeledReplicas"] = json!(old_left);
        });
        writes += 1;
        let new_count = self.apps[a].pods.len();
        self.apps[a].spec.replicas = (new_count + old_left) as u32;
        if old_left == 0 {
            self.rollouts.swap_remove(r);
            let d_key = key_of(Some(&ns), &self.apps[a].spec.name);
            let rs_name = self.apps[a].spec.rs_name();
            store.update(DEPLOYMENTS, &d_key, |v| {
                v["status"]["conditions"][1]["reason"] = json!("NewReplicaSetAvailable");
                v["status"]["conditions"][1]["message"] = json!(format!(
                    "ReplicaSet \"{rs_name}\" has successfully progressed."
                ));
            });
            writes += 1;
        }
        let updated = new_count;
        let d_key = key_of(Some(&ns), &self.apps[a].spec.name);
        store.update(DEPLOYMENTS, &d_key, |v| {
            v["status"]["updatedReplicas"] = json!(updated)
        });
        writes + self.sync_app_spec(store, a)
    }

    /// One workload change; returns how many writes it made.
    pub fn step(&mut self, store: &Store) -> u64 {
        let total = self.pod_count();
        if total == 0 {
            return self.scale_one(store, true);
        }
        if !self.rollouts.is_empty() && self.rng.gen_bool(0.3) {
            let r = self.rng.gen_range(0..self.rollouts.len());
            return self.rollout_step(store, r);
        }
        if self.rng.gen_bool(0.005) {
            return self.start_rollout(store);
        }
        let roll = self.rng.gen_range(0..100);
        match roll {
            0..=39 => self.status_change(store),
            40..=59 => self.relabel(store),
            60..=79 => self.replace_pod(store),
            _ => {
                let up = match total.cmp(&self.target_pods) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Greater => false,
                    std::cmp::Ordering::Equal => self.rng.gen_bool(0.5),
                };
                self.scale_one(store, up)
            }
        }
    }

    fn pick_pod(&mut self) -> Option<(usize, usize)> {
        let total = self.counts().total;
        if total == 0 {
            return None;
        }
        let n = self.rng.gen_range(0..total);
        self.pod_counts.find(n)
    }

    fn status_change(&mut self, store: &Store) -> u64 {
        let Some((a, p)) = self.pick_pod() else {
            return 0;
        };
        let key = self.apps[a].pods[p].clone();
        let Some(cur) = store.get(PODS, &key) else {
            return 0;
        };
        let cur = cur.value();
        let phase = cur["status"]["phase"].as_str().unwrap_or("").to_string();
        let waiting = cur["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let restarts = cur["status"]["containerStatuses"][0]["restartCount"]
            .as_u64()
            .unwrap_or(0);
        let cid = self.random_name(12);
        let crash = self.rng.gen_bool(0.3);
        let mut writes = 1;
        let mut event = None;
        store.update(PODS, &key, |v| {
            if phase == "Pending" || waiting == "CrashLoopBackOff" {
                make_running(v, restarts + u64::from(waiting == "CrashLoopBackOff"), &cid);
                event = Some((
                    "Normal",
                    "Started",
                    format!("Started container {}", key_name(&key)),
                ));
            } else if crash {
                make_crashloop(v, restarts + 1);
                event = Some((
                    "Warning",
                    "BackOff",
                    "Back-off restarting failed container".to_string(),
                ));
            } else {
                // A container restart that came back by itself.
                make_running(v, restarts + 1, &cid);
                event = Some((
                    "Normal",
                    "Pulled",
                    "Container image already present on machine".to_string(),
                ));
            }
        });
        if let Some((t, reason, msg)) = event {
            writes += self.record_event(store, &key, t, reason, &msg);
        }
        writes + self.sync_app_status(store, a)
    }

    fn relabel(&mut self, store: &Store) -> u64 {
        let Some((a, p)) = self.pick_pod() else {
            return 0;
        };
        let key = self.apps[a].pods[p].clone();
        store.update(PODS, &key, |v| {
            let next = if v["metadata"]["labels"]["track"] == "canary" {
                "stable"
            } else {
                "canary"
            };
            v["metadata"]["labels"]["track"] = json!(next);
        });
        1
    }

    fn replace_pod(&mut self, store: &Store) -> u64 {
        let Some((a, p)) = self.pick_pod() else {
            return 0;
        };
        let key = self.swap_remove_pod(a, p);
        store.delete(PODS, &key);
        let pod = self.new_pod(a);
        let obj = store.create(PODS, pod);
        self.push_pod(a, obj.key.clone());
        2 + self.sync_app_status(store, a)
    }

    fn scale_one(&mut self, store: &Store, up: bool) -> u64 {
        if self.apps.is_empty() {
            return 0;
        }
        let a = if up {
            self.rng.gen_range(0..self.apps.len())
        } else {
            match self.pick_pod() {
                Some((a, _)) => a,
                None => return 0,
            }
        };
        let mut writes = 0;
        if up {
            let pod = self.new_pod(a);
            let obj = store.create(PODS, pod);
            self.push_pod(a, obj.key.clone());
            self.apps[a].spec.replicas += 1;
        } else {
            let p = self.rng.gen_range(0..self.apps[a].pods.len());
            let key = self.swap_remove_pod(a, p);
            store.delete(PODS, &key);
            self.apps[a].spec.replicas = self.apps[a].spec.replicas.saturating_sub(1);
        }
        writes += 1;
        writes + self.sync_app_spec(store, a)
    }

    /// Set the total number of pods, growing or shrinking deployments.
    pub fn scale_to(&mut self, store: &Store, pods: usize) -> ScaleReport {
        let before = self.pod_count();
        self.target_pods = pods;
        let (mut created, mut deleted) = (0, 0);
        let mut touched = std::collections::BTreeSet::new();
        while self.pod_count() < pods {
            let a = self.rng.gen_range(0..self.apps.len().max(1));
            if self.apps.is_empty() {
                break;
            }
            let mut pod = self.new_pod(a);
            let cid = self.random_name(12);
            make_running(&mut pod, 0, &cid);
            let obj = store.create(PODS, pod);
            self.push_pod(a, obj.key.clone());
            self.apps[a].spec.replicas += 1;
            touched.insert(a);
            created += 1;
        }
        while self.pod_count() > pods {
            let Some((a, p)) = self.pick_pod() else { break };
            let key = self.swap_remove_pod(a, p);
            store.delete(PODS, &key);
            self.apps[a].spec.replicas = self.apps[a].spec.replicas.saturating_sub(1);
            touched.insert(a);
            deleted += 1;
        }
        for a in touched {
            self.sync_app_spec(store, a);
        }
        ScaleReport {
            before,
            after: self.pod_count(),
            created,
            deleted,
        }
    }

    fn ready_count(&self, store: &Store, a: usize) -> u32 {
        self.apps[a]
            .pods
            .iter()
            .filter(|k| {
                store
                    .get(PODS, k)
                    .is_some_and(|o| o.sel["status"]["containerStatuses"][0]["ready"] == true)
            })
            .count() as u32
    }

    fn sync_app_status(&mut self, store: &Store, a: usize) -> u64 {
        let ready = self.ready_count(store, a);
        let app = &self.apps[a];
        let d_key = key_of(Some(&app.spec.namespace), &app.spec.name);
        let rs_key = key_of(Some(&app.spec.namespace), &app.spec.rs_name());
        let d_status = app.spec.deploy_status(ready);
        let rs_status = app.spec.rs_status(ready);
        let mut writes = 0;
        for (res, key, status) in [
            (DEPLOYMENTS, d_key, d_status),
            (REPLICASETS, rs_key, rs_status),
        ] {
            let before = store.get(res, &key).map(|o| o.rev);
            let after = store.update(res, &key, |v| {
                // Keep condition timestamps when nothing but them would change.
                let mut status = status;
                if v["status"]["readyReplicas"] == status["readyReplicas"]
                    && v["status"]["replicas"] == status["replicas"]
                {
                    status = v["status"].clone();
                }
                v["status"] = status;
            });
            if after.map(|o| o.rev) != before {
                writes += 1;
            }
        }
        writes
    }

    fn sync_app_spec(&mut self, store: &Store, a: usize) -> u64 {
        let app = &self.apps[a];
        let replicas = app.spec.replicas;
        let d_key = key_of(Some(&app.spec.namespace), &app.spec.name);
        let rs_key = key_of(Some(&app.spec.namespace), &app.spec.rs_name());
        store.update(DEPLOYMENTS, &d_key, |v| {
            v["spec"]["replicas"] = json!(replicas)
        });
        store.update(REPLICASETS, &rs_key, |v| {
            v["spec"]["replicas"] = json!(replicas);
            v["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] =
                json!(replicas.to_string());
        });
        2 + self.sync_app_status(store, a)
    }

    fn record_event(
        &mut self,
        store: &Store,
        pod_key: &str,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> u64 {
        let Some(pod) = store.get(PODS, pod_key) else {
            return 0;
        };
        let ns = pod.sel["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        self.event_counter += 1;
        let name = format!("{}.{:016x}", key_name(pod_key), self.event_counter);
        let obj = store.create(
            EVENTS,
            objects::event(&ns, &name, &pod.value(), type_, reason, message, 1),
        );
        self.events.push_back(obj.key.clone());
        let mut writes = 1;
        while self.events.len() > MAX_EVENTS {
            if let Some(old) = self.events.pop_front() {
                store.delete(EVENTS, &old);
                writes += 1;
            }
        }
        writes
    }
}

/// `repo:1.2.3` → `repo:1.2.4` (or `-2` appended when the tag has no number).
fn next_tag(image: &str) -> String {
    let (repo, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
    let bumped = match tag.rsplit_once('.') {
        Some((head, last)) => match last.parse::<u64>() {
            Ok(n) => format!("{head}.{}", n + 1),
            Err(_) => format!("{tag}-2"),
        },
        None => format!("{tag}-2"),
    };
    format!("{repo}:{bumped}")
}

/// Backdate an object created at setup.
/// The demo's nine widgets (three in each of shop, data and default), at
/// setup (aged one to three days) and again, created now, when the CRD is
/// installed at runtime. Returns how many.
pub fn seed_widgets(store: &Store, at_setup: bool) -> usize {
    let mut created = 0;
    for (n, ns) in ["shop", "data", "default"].iter().enumerate() {
        for k in 0..3 {
            let size = (n * 3 + k) as u32 + 1;
            created += 1;
            store.create(
                WIDGETS,
                aged(
                    objects::widget(
                        ns,
                        &format!("widget-{}", n * 3 + k),
                        size,
                        if k == 2 { "Pending" } else { "Ready" },
                    ),
                    if at_setup { 86_400 * (n as i64 + 1) } else { 0 },
                ),
            );
        }
    }
    created
}

fn aged(mut v: Value, secs_ago: i64) -> Value {
    v["metadata"]["creationTimestamp"] = json!(objects::rfc3339(objects::now_secs() - secs_ago));
    v
}

fn key_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// Writes the churn loop makes between two yields to the scheduler.
const YIELD_EVERY_WRITES: u64 = 32;

/// Drive the workload at the rate in `churn` (changes per second; 0 = idle).
pub async fn run(
    store: Arc<Store>,
    workload: Arc<Mutex<Workload>>,
    mut churn: watch::Receiver<f64>,
) {
    let mut owed = 0.0f64;
    let mut last = tokio::time::Instant::now();
    loop {
        let rate = *churn.borrow_and_update();
        if rate <= 0.0 || !rate.is_finite() {
            if churn.changed().await.is_err() {
                return;
            }
            owed = 0.0;
            last = tokio::time::Instant::now();
            continue;
        }
        let tick = Duration::from_secs_f64((1.0 / rate).clamp(0.01, 1.0));
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            changed = churn.changed() => {
                if changed.is_err() { return; }
                continue;
            }
        }
        let now = tokio::time::Instant::now();
        owed = (owed + rate * (now - last).as_secs_f64()).min(rate.max(1.0));
        last = now;
        let mut wl = workload.lock().await;
        let mut since_yield = 0;
        while owed >= 1.0 {
            let writes = wl.step(&store).max(1);
            owed -= writes as f64;
            // A late tick owes a big batch: let the watch tasks drain the
            // events as they come instead of after the whole batch.
            since_yield += writes;
            if since_yield >= YIELD_EVERY_WRITES {
                since_yield = 0;
                tokio::task::yield_now().await;
            }
        }
    }
}
