//! The seeded workload generator: builds the initial cluster (namespaces,
//! nodes, deployments with their replicasets, pods, services and their
//! EndpointSlices, configmaps, secrets, widgets) and then keeps changing it —
//! pods start, crash-loop, recover, get relabelled, replaced and scaled — at
//! a configurable rate. Given a seed, the sequence of changes is the same on
//! every run. Every write names its field manager, as the cluster's
//! components would (`managed`); the controllers' reactions live in
//! `controllers`, the events in `events`, the EndpointSlices in `endpoints`,
//! the churn loop and the events' expiry in `tasks`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::managed::managers::{
    APISERVER, APISERVER_STATUS, CLIENT_SIDE_APPLY, CONTROLLER, CONTROLLER_STATUS, HELM,
    KUBECTL_CREATE, KUBELET, KUBELET_STATUS, SCHEDULER, SERVER_SIDE_APPLY, WIDGET_OPERATOR,
};
use super::managed::{Authors, Writer};
use super::objects::{self, AppSpec};
use super::resources::{
    CONFIGMAPS, CRDS, DAEMONSETS, DEPLOYMENTS, ENDPOINTSLICES, JOBS, NAMESPACES, NODES, PODS,
    REPLICASETS, SECRETS, SERVICES, STATEFULSETS, WIDGETS,
};
use super::store::Store;

mod controllers;
mod endpoints;
pub mod events;
mod pod_counts;
mod pod_status;
pub mod tasks;

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

/// Who owns which part of the objects the workload creates.
type Parts = &'static [(&'static [&'static str], Writer<'static>)];
const STATUS_BY_CONTROLLER: Parts = &[(&["status"], CONTROLLER_STATUS)];
const DEPLOYMENT_PARTS: Parts = &[
    (&["status"], CONTROLLER_STATUS),
    (
        &[
            "metadata",
            "annotations",
            "deployment.kubernetes.io/revision",
        ],
        CONTROLLER,
    ),
];
/// A pod: created by the replicaset controller, bound by the scheduler,
/// its status the kubelet's.
pub(crate) const POD_AUTHORS: Authors<'static> = Authors {
    main: CONTROLLER,
    parts: &[
        (&["spec", "nodeName"], SCHEDULER),
        (&["status"], KUBELET_STATUS),
    ],
};
const REPLICASET_AUTHORS: Authors<'static> = Authors {
    main: CONTROLLER,
    parts: STATUS_BY_CONTROLLER,
};
const HELM_WITH_STATUS: Authors<'static> = Authors {
    main: HELM,
    parts: STATUS_BY_CONTROLLER,
};
const CRD_AUTHORS: Authors<'static> = Authors {
    main: HELM,
    parts: &[(&["status"], APISERVER_STATUS)],
};
const WIDGET_AUTHORS: Authors<'static> = Authors {
    main: SERVER_SIDE_APPLY,
    parts: &[(&["status"], WIDGET_OPERATOR)],
};
/// Who installed each app: spread so that several managers appear.
const INSTALLERS: [Writer<'static>; 3] = [HELM, CLIENT_SIDE_APPLY, SERVER_SIDE_APPLY];

const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

struct App {
    spec: AppSpec,
    deploy_uid: String,
    rs_uid: String,
    pods: Vec<String>,
    /// Who installed it (and changes its template in a rollout).
    installer: Writer<'static>,
    /// The key of its Service's EndpointSlice.
    slice: String,
}

/// The generator's own bookkeeping; the objects themselves live in the store.
pub struct Workload {
    rng: StdRng,
    apps: Vec<App>,
    nodes: Vec<String>,
    events: events::Recorder,
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

impl Workload {
    /// Build the initial cluster into `store`.
    pub fn setup(store: &Store, seed: u64, initial_pods: usize) -> Workload {
        let mut wl = Workload {
            rng: StdRng::seed_from_u64(seed),
            apps: Vec::new(),
            nodes: Vec::new(),
            events: events::Recorder::new(events::DEFAULT_TTL),
            target_pods: initial_pods,
            rollouts: Vec::new(),
            pod_counts: PodCounts::default(),
        };
        store.create(CRDS, aged(objects::widget_crd(), 60 * 86_400), CRD_AUTHORS);
        for ns in NAMESPACES_LIST {
            let by = match *ns {
                "default" | "kube-system" => APISERVER,
                _ => KUBECTL_CREATE,
            };
            store.create(NAMESPACES, aged(objects::namespace(ns), 90 * 86_400), by);
        }
        let node_count = (initial_pods / 20).clamp(3, 100);
        for i in 0..node_count {
            let name = format!("node-{i}");
            store.create(
                NODES,
                aged(objects::node(&name, i), 40 * 86_400 - i as i64 * 3600),
                Authors {
                    main: KUBELET,
                    parts: &[(&["status"], KUBELET_STATUS), (&["spec"], CONTROLLER)],
                },
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
            HELM_WITH_STATUS,
        );
        store.create(
            STATEFULSETS,
            aged(
                objects::statefulset("data", "kafka", "bitnami/kafka:3.8.0", 3),
                20 * 86_400,
            ),
            HELM_WITH_STATUS,
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
            HELM_WITH_STATUS,
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
            HELM_WITH_STATUS,
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
                REPLICASET_AUTHORS,
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
        let installer = INSTALLERS[index % INSTALLERS.len()];
        let installed = Authors {
            main: installer,
            parts: DEPLOYMENT_PARTS,
        };
        let deploy = store.create(DEPLOYMENTS, with_age(spec.deployment(replicas)), installed);
        let deploy_uid = deploy.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let rs = store.create(
            REPLICASETS,
            with_age(spec.replicaset(&deploy_uid, replicas)),
            REPLICASET_AUTHORS,
        );
        let rs_uid = rs.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let service = store.create(SERVICES, with_age(spec.service()), installer);
        store.create(CONFIGMAPS, with_age(spec.configmap()), installer);
        store.create(SECRETS, with_age(spec.secret()), installer);
        let slice_name = format!("{}-{}", spec.name, self.random_name(5));
        let slice = store.create(
            ENDPOINTSLICES,
            with_age(endpoints::slice(
                &spec,
                &service.value(),
                &slice_name,
                json!([]),
            )),
            super::managed::managers::ENDPOINTSLICES,
        );
        self.apps.push(App {
            spec,
            deploy_uid,
            rs_uid,
            pods: Vec::new(),
            installer,
            slice: slice.key.clone(),
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
            let obj = store.create(PODS, pod, POD_AUTHORS);
            self.push_pod(a, obj.key.clone());
        }
        self.sync_endpoints(store, a);
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

    /// The event recorder (its TTL is set through `/_sim/events`).
    pub fn events(&mut self) -> &mut events::Recorder {
        &mut self.events
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
                WIDGET_AUTHORS,
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

/// Why a `/_sim/patch` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    NotFound,
    /// The patch would make the object invalid (422).
    Invalid(String),
    /// The patch may not change this (400).
    BadRequest(String),
}
