//! The seeded workload generator: builds the initial cluster (namespaces,
//! nodes, deployments with their replicasets, pods, services and their
//! EndpointSlices, configmaps, secrets, widgets) and then keeps changing it —
//! pods start, crash-loop, recover, get relabelled, replaced and scaled — at
//! a configurable rate. Given a seed, the sequence of changes is the same on
//! every run. Every write names its field manager, as the cluster's
//! components would (`managed`); the initial cluster is built in `setup`,
//! the controllers' reactions live in `controllers`, the events in
//! `events`, the EndpointSlices in `endpoints`, the churn loop and the
//! events' expiry in `tasks`, the OOM kill the metrics' leak causes in
//! `oom`.

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::Value;

use super::managed::managers::{
    APISERVER_STATUS, CLIENT_SIDE_APPLY, CONTROLLER, CONTROLLER_STATUS, HELM, KUBELET_STATUS,
    SCHEDULER, SERVER_SIDE_APPLY, WIDGET_OPERATOR,
};
use super::managed::{Authors, Writer};
use super::objects::AppSpec;
use super::store::Store;

mod controllers;
mod endpoints;
pub mod events;
mod oom;
mod pod_counts;
mod pod_status;
mod setup;
pub mod tasks;

use pod_counts::PodCounts;
use pod_status::{make_crashloop, make_running};
pub use setup::seed_widgets;

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
