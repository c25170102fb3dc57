//! The initial cluster the workload builds (`Workload::setup`): the demo
//! CRD, namespaces, nodes, statefulsets, daemonsets, jobs, the deployments
//! of `APPS` with their replicasets, services, configmaps, secrets,
//! EndpointSlices and pods (most running, some crash-looping, some still
//! starting), and the widgets — each backdated as if it had been there
//! for a while, and written in a fixed order, so the seeded uids and names
//! are the same for a seed. Split from `workload` to keep that file to the
//! churn.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::super::managed::managers::{
    APISERVER, CONTROLLER, KUBECTL_CREATE, KUBELET, KUBELET_STATUS,
};
use super::super::managed::Authors;
use super::super::objects::{self, AppSpec};
use super::super::resources::{
    CONFIGMAPS, CRDS, DAEMONSETS, DEPLOYMENTS, ENDPOINTSLICES, JOBS, NAMESPACES, NODES, PODS,
    REPLICASETS, SECRETS, SERVICES, STATEFULSETS, WIDGETS,
};
use super::super::store::Store;
use super::pod_counts::PodCounts;
use super::pod_status::{make_crashloop, make_running};
use super::{
    endpoints, events, App, Workload, CRD_AUTHORS, DEPLOYMENT_PARTS, HELM_WITH_STATUS, INSTALLERS,
    POD_AUTHORS, REPLICASET_AUTHORS, WIDGET_AUTHORS,
};

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

impl Workload {
    /// Build the initial cluster into `store`: the demo CRD, namespaces,
    /// nodes, statefulsets, daemonsets and jobs, the deployments with their
    /// pods, the widgets (in this order: the seeded uids follow it).
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
        create_namespaces(store);
        let node_count = (initial_pods / 20).clamp(3, 100);
        wl.create_nodes(store, node_count);
        create_sets(store, node_count as u32);
        create_jobs(store);
        wl.spread_pods(store, initial_pods);
        seed_widgets(store, true);
        wl
    }

    /// Nodes `node-0`…, aged 40 days (an hour apart).
    fn create_nodes(&mut self, store: &Store, node_count: usize) {
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
            self.nodes.push(name);
        }
    }

    /// The initial pods spread over deployments of 1–9 replicas (at least
    /// three deployments, the last ones maybe empty).
    fn spread_pods(&mut self, store: &Store, initial_pods: usize) {
        let mut remaining = initial_pods;
        let mut i = 0;
        while remaining > 0 || i < 3 {
            let replicas = if remaining == 0 {
                0
            } else {
                self.rng.gen_range(1..=9).min(remaining)
            };
            remaining -= replicas;
            self.add_app(store, i, replicas as u32);
            i += 1;
        }
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
            super::super::managed::managers::ENDPOINTSLICES,
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
            self.add_initial_pod(store, a);
        }
        self.sync_endpoints(store, a);
    }

    /// One of app `a`'s pods at setup, aged: most running (a few restarted
    /// before), some crash-looping, some still starting.
    fn add_initial_pod(&mut self, store: &Store, a: usize) {
        let mut pod = self.new_pod(a);
        let roll = self.rng.gen_range(0..100);
        let age = self.rng.gen_range(600..5 * 86_400);
        pod["metadata"]["creationTimestamp"] = json!(objects::rfc3339(objects::now_secs() - age));
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
}

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

/// The namespaces, aged 90 days: the apiserver's own and kubectl's.
fn create_namespaces(store: &Store) {
    for ns in NAMESPACES_LIST {
        let by = match *ns {
            "default" | "kube-system" => APISERVER,
            _ => KUBECTL_CREATE,
        };
        store.create(NAMESPACES, aged(objects::namespace(ns), 90 * 86_400), by);
    }
}

/// The statefulsets and daemonsets (one daemon pod per node), aged.
fn create_sets(store: &Store, node_count: u32) {
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
                node_count,
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
                node_count,
            ),
            40 * 86_400,
        ),
        HELM_WITH_STATUS,
    );
}

/// Three db-migrate jobs of the last hours, the last one still running.
fn create_jobs(store: &Store) {
    let now = objects::now_secs();
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
}

/// Backdate an object created at setup.
fn aged(mut v: Value, secs_ago: i64) -> Value {
    v["metadata"]["creationTimestamp"] = json!(objects::rfc3339(objects::now_secs() - secs_ago));
    v
}
