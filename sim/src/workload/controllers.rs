//! What the cluster's controllers do, as the workload plays them: the
//! replicaset controller creating and deleting pods (SuccessfulCreate,
//! SuccessfulDelete), the scheduler binding them (Scheduled), the kubelet
//! running, restarting and crash-looping them (Pulled, Created, Started,
//! BackOff, Killing), the deployment controller scaling replicasets
//! (ScalingReplicaSet), rolling out new images and writing statuses, the
//! autoscaler scaling deployments, and the endpointslice controller
//! following the ready pods. Each write names its field manager. Also the
//! reaction to `/_sim/patch`: a patched Deployment's `spec.replicas` is
//! followed through all of the above.

use std::sync::Arc;

use rand::Rng;
use serde_json::{json, Value};

use super::super::events::{
    Occurrence, DEPLOYMENT_CONTROLLER, KUBELET as KUBELET_EVENTS, REPLICASET_CONTROLLER,
    SCHEDULER as SCHEDULER_EVENTS,
};
use super::super::managed::managers::{
    AUTOSCALER, CONTROLLER, CONTROLLER_STATUS, KUBECTL_LABEL, KUBELET_STATUS,
};
use super::super::managed::Writer;
use super::super::resources::{DEPLOYMENTS, PODS, REPLICASETS};
use super::super::store::{key_of, Obj, Store};
use super::{
    endpoints, key_name, make_crashloop, make_running, next_tag, PatchError, Rollout, Workload,
    POD_AUTHORS, REPLICASET_AUTHORS,
};

/// What `scale_to` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScaleReport {
    pub before: usize,
    pub after: usize,
    pub created: usize,
    pub deleted: usize,
}

/// Most replicas a patch may ask of one deployment.
const MAX_PATCH_REPLICAS: u64 = 1000;

impl Workload {
    /// Start a rolling update of a random deployment to the next image tag:
    /// its installer changes the template, the deployment controller bumps
    /// the revision and creates the new replicaset.
    pub(super) fn start_rollout(&mut self, store: &Store) -> u64 {
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
        let installer = app.installer;
        let d_key = key_of(Some(&app.spec.namespace), &app.spec.name);
        self.pods_changed(a, -taken);
        store.update(DEPLOYMENTS, &d_key, installer, |v| {
            v["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
        });
        let mut revision = 1;
        store.update(DEPLOYMENTS, &d_key, CONTROLLER, |v| {
            revision = v["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                .as_str()
                .and_then(|r| r.parse::<u64>().ok())
                .unwrap_or(1)
                + 1;
            v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
                json!(revision.to_string());
        });
        store.update(DEPLOYMENTS, &d_key, CONTROLLER_STATUS, |v| {
            v["status"]["updatedReplicas"] = json!(0);
            v["status"]["conditions"][1]["reason"] = json!("ReplicaSetUpdated");
        });
        let app = &self.apps[a];
        let mut rs = app.spec.replicaset(&app.deploy_uid, 0);
        rs["spec"]["replicas"] = json!(0);
        rs["status"] = json!({"replicas": 0, "observedGeneration": 1});
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
            json!(revision.to_string());
        let rs = store.create(REPLICASETS, rs, REPLICASET_AUTHORS);
        self.apps[a].rs_uid = rs.sel["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.rollouts.push(Rollout {
            app: a,
            old_rs,
            old_pods,
        });
        4
    }

    /// Replace one old pod of a rollout; finish it when none is left.
    pub(super) fn rollout_step(&mut self, store: &Store, r: usize) -> u64 {
        let a = self.rollouts[r].app;
        let (_, mut writes) = self.create_pod(store, a, true);
        let ns = self.apps[a].spec.namespace.clone();
        let old_key = key_of(Some(&ns), &self.rollouts[r].old_rs);
        if let Some(old) = self.rollouts[r].old_pods.pop() {
            store.delete(PODS, &old);
            writes += 1;
            let what = Occurrence::normal(
                REPLICASET_CONTROLLER,
                "SuccessfulDelete",
                format!("Deleted pod: {}", key_name(&old)),
            );
            writes += self.events.record(store, REPLICASETS, &old_key, what);
        }
        let old_left = self.rollouts[r].old_pods.len();
        store.update(REPLICASETS, &old_key, CONTROLLER, |v| {
            v["spec"]["replicas"] = json!(old_left);
        });
        store.update(REPLICASETS, &old_key, CONTROLLER_STATUS, |v| {
            v["status"]["replicas"] = json!(old_left);
            v["status"]["readyReplicas"] = json!(old_left);
            v["status"]["availableReplicas"] = json!(old_left);
            v["status"]["fullyLabeledReplicas"] = json!(old_left);
        });
        writes += 2;
        let new_count = self.apps[a].pods.len();
        self.apps[a].spec.replicas = (new_count + old_left) as u32;
        let d_key = key_of(Some(&ns), &self.apps[a].spec.name);
        let rs_name = self.apps[a].spec.rs_name();
        let done = old_left == 0;
        if done {
            self.rollouts.swap_remove(r);
        }
        store.update(DEPLOYMENTS, &d_key, CONTROLLER_STATUS, |v| {
            v["status"]["updatedReplicas"] = json!(new_count);
            if done {
                v["status"]["conditions"][1]["reason"] = json!("NewReplicaSetAvailable");
                v["status"]["conditions"][1]["message"] = json!(format!(
                    "ReplicaSet \"{rs_name}\" has successfully progressed."
                ));
            }
        });
        writes += 1;
        writes + self.sync_app_spec(store, a, AUTOSCALER)
    }

    /// A new pod of app `a` (running at once when `running`): created by the
    /// replicaset controller, bound by the scheduler. Its key and the writes.
    fn create_pod(&mut self, store: &Store, a: usize, running: bool) -> (String, u64) {
        let mut pod = self.new_pod(a);
        if running {
            let cid = self.random_name(12);
            make_running(&mut pod, 0, &cid);
        }
        let node = pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let obj = store.create(PODS, pod, POD_AUTHORS);
        let key = obj.key.clone();
        self.push_pod(a, key.clone());
        let rs_key = key_of(
            Some(&self.apps[a].spec.namespace),
            &self.apps[a].spec.rs_name(),
        );
        let created = Occurrence::normal(
            REPLICASET_CONTROLLER,
            "SuccessfulCreate",
            format!("Created pod: {}", key_name(&key)),
        );
        let mut writes = 1 + self.events.record(store, REPLICASETS, &rs_key, created);
        let scheduled = Occurrence::normal(
            SCHEDULER_EVENTS,
            "Scheduled",
            format!("Successfully assigned {key} to {node}"),
        );
        writes += self.events.record(store, PODS, &key, scheduled);
        (key, writes)
    }

    /// The kubelet starts a pending pod's containers.
    fn start_pod(&mut self, store: &Store, a: usize, key: &str) -> u64 {
        let cid = self.random_name(12);
        let Some(pod) = store.update(PODS, key, KUBELET_STATUS, |v| make_running(v, 0, &cid))
        else {
            return 0;
        };
        let container = self.apps[a].spec.name.clone();
        let image = self.apps[a].spec.image.clone();
        1 + self.started_events(store, &pod.key, &container, &image)
    }

    /// The kubelet's events for a container it started (again): Pulled,
    /// Created, Started. Returns the writes.
    pub(super) fn started_events(
        &mut self,
        store: &Store,
        pod_key: &str,
        container: &str,
        image: &str,
    ) -> u64 {
        let mut writes = 0;
        for (reason, message) in [
            (
                "Pulled",
                format!("Container image \"{image}\" already present on machine"),
            ),
            ("Created", format!("Created container: {container}")),
            ("Started", format!("Started container {container}")),
        ] {
            let what = Occurrence::normal(KUBELET_EVENTS, reason, message).in_container(container);
            writes += self.events.record(store, PODS, pod_key, what);
        }
        writes
    }

    /// The replicaset controller deletes pod `p` of app `a` (the kubelet
    /// stops its containers first).
    fn delete_pod(&mut self, store: &Store, a: usize, p: usize) -> u64 {
        let key = self.swap_remove_pod(a, p);
        let container = self.apps[a].spec.name.clone();
        let killing = Occurrence::normal(
            KUBELET_EVENTS,
            "Killing",
            format!("Stopping container {container}"),
        )
        .in_container(&container);
        let mut writes = self.events.record(store, PODS, &key, killing);
        store.delete(PODS, &key);
        let rs_key = key_of(
            Some(&self.apps[a].spec.namespace),
            &self.apps[a].spec.rs_name(),
        );
        let deleted = Occurrence::normal(
            REPLICASET_CONTROLLER,
            "SuccessfulDelete",
            format!("Deleted pod: {}", key_name(&key)),
        );
        writes += 1 + self.events.record(store, REPLICASETS, &rs_key, deleted);
        writes
    }

    /// The deployment controller scaled app `a`'s replicaset from `from` to `to`.
    fn scaled_event(&mut self, store: &Store, a: usize, from: usize, to: usize) -> u64 {
        if from == to {
            return 0;
        }
        let app = &self.apps[a];
        let d_key = key_of(Some(&app.spec.namespace), &app.spec.name);
        let what = Occurrence::normal(
            DEPLOYMENT_CONTROLLER,
            "ScalingReplicaSet",
            format!(
                "Scaled {} replica set {} from {from} to {to}",
                if to > from { "up" } else { "down" },
                app.spec.rs_name()
            ),
        );
        self.events.record(store, DEPLOYMENTS, &d_key, what)
    }

    pub(super) fn status_change(&mut self, store: &Store) -> u64 {
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
        let container = self.apps[a].spec.name.clone();
        let pod_name = key_name(&key).to_string();
        let namespace = self.apps[a].spec.namespace.clone();
        let uid = cur["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut event = None;
        store.update(PODS, &key, KUBELET_STATUS, |v| {
            if phase == "Pending" || waiting == "CrashLoopBackOff" {
                make_running(v, restarts + u64::from(waiting == "CrashLoopBackOff"), &cid);
                event = Some(Occurrence::normal(
                    KUBELET_EVENTS,
                    "Started",
                    format!("Started container {container}"),
                ));
            } else if crash {
                make_crashloop(v, restarts + 1);
                event = Some(Occurrence::warning(
                    KUBELET_EVENTS,
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {container} in pod {pod_name}_{namespace}({uid})"
                    ),
                ));
            } else {
                // A container restart that came back by itself.
                make_running(v, restarts + 1, &cid);
                event = Some(Occurrence::normal(
                    KUBELET_EVENTS,
                    "Pulled",
                    "Container image already present on machine".to_string(),
                ));
            }
        });
        let mut writes = 1;
        if let Some(what) = event {
            writes += self
                .events
                .record(store, PODS, &key, what.in_container(&container));
        }
        writes + self.sync_app_status(store, a)
    }

    /// Someone runs `kubectl label pod … track=…`.
    pub(super) fn relabel(&mut self, store: &Store) -> u64 {
        let Some((a, p)) = self.pick_pod() else {
            return 0;
        };
        let key = self.apps[a].pods[p].clone();
        store.update(PODS, &key, KUBECTL_LABEL, |v| {
            let next = if v["metadata"]["labels"]["track"] == "canary" {
                "stable"
            } else {
                "canary"
            };
            v["metadata"]["labels"]["track"] = json!(next);
        });
        1
    }

    pub(super) fn replace_pod(&mut self, store: &Store) -> u64 {
        let Some((a, p)) = self.pick_pod() else {
            return 0;
        };
        let writes = self.delete_pod(store, a, p);
        let (_, created) = self.create_pod(store, a, false);
        writes + created + self.sync_app_status(store, a)
    }

    /// The autoscaler adds or removes one replica of an app.
    pub(super) fn scale_one(&mut self, store: &Store, up: bool) -> u64 {
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
        let before = self.apps[a].pods.len();
        let mut writes =
            self.scaled_event(store, a, before, if up { before + 1 } else { before - 1 });
        if up {
            writes += self.create_pod(store, a, false).1;
            self.apps[a].spec.replicas += 1;
        } else {
            let p = self.rng.gen_range(0..self.apps[a].pods.len());
            writes += self.delete_pod(store, a, p);
            self.apps[a].spec.replicas = self.apps[a].spec.replicas.saturating_sub(1);
        }
        writes + self.sync_app_spec(store, a, AUTOSCALER)
    }

    /// Set the total number of pods, growing or shrinking deployments (in
    /// bulk, for tests and benchmarks: no per-pod events).
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
            let obj = store.create(PODS, pod, POD_AUTHORS);
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
            self.sync_app_spec(store, a, AUTOSCALER);
        }
        ScaleReport {
            before,
            after: self.pod_count(),
            created,
            deleted,
        }
    }

    /// App `a`'s pods, an ongoing rollout's old ones included.
    fn all_pods(&self, a: usize) -> Vec<String> {
        let mut pods = self.apps[a].pods.clone();
        for r in self.rollouts.iter().filter(|r| r.app == a) {
            pods.extend(r.old_pods.iter().cloned());
        }
        pods
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

    /// The endpointslice controller follows app `a`'s ready pods.
    pub(super) fn sync_endpoints(&mut self, store: &Store, a: usize) -> u64 {
        let selector = json!({"app": self.apps[a].spec.name});
        let endpoints = endpoints::endpoints(store, &self.all_pods(a), &selector);
        endpoints::sync(store, &self.apps[a].slice, endpoints)
    }

    /// The controllers write app `a`'s deployment and replicaset status.
    pub(super) fn sync_app_status(&mut self, store: &Store, a: usize) -> u64 {
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
            let after = store.update(res, &key, CONTROLLER_STATUS, |v| {
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
        writes + self.sync_endpoints(store, a)
    }

    /// App `a`'s replica count written to its deployment (by `by`) and its
    /// replicaset (by the deployment controller), then the statuses.
    pub(super) fn sync_app_spec(&mut self, store: &Store, a: usize, by: Writer<'_>) -> u64 {
        let app = &self.apps[a];
        let replicas = app.spec.replicas;
        let d_key = key_of(Some(&app.spec.namespace), &app.spec.name);
        let rs_key = key_of(Some(&app.spec.namespace), &app.spec.rs_name());
        store.update(DEPLOYMENTS, &d_key, by, |v| {
            v["spec"]["replicas"] = json!(replicas)
        });
        store.update(REPLICASETS, &rs_key, CONTROLLER, |v| {
            v["spec"]["replicas"] = json!(replicas);
            v["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] =
                json!(replicas.to_string());
        });
        2 + self.sync_app_status(store, a)
    }

    /// `/_sim/patch`: a JSON merge patch of `res`/`key` written by `manager`
    /// (operation Update); the controllers then react as a cluster's would.
    /// Returns the patched object (as the patch left it) and the writes made.
    pub fn patch(
        &mut self,
        store: &Store,
        res: usize,
        key: &str,
        patch: &Value,
        manager: &str,
    ) -> Result<(Arc<Obj>, u64), PatchError> {
        let current = store.get(res, key).ok_or(PatchError::NotFound)?.value();
        let mut next = current.clone();
        json_patch::merge(&mut next, patch);
        for (what, path) in [
            ("apiVersion", "/apiVersion"),
            ("kind", "/kind"),
            ("metadata.name", "/metadata/name"),
            ("metadata.namespace", "/metadata/namespace"),
        ] {
            if next.pointer(path) != current.pointer(path) {
                return Err(PatchError::BadRequest(format!(
                    "a patch may not change {what} (it names the object)"
                )));
            }
        }
        let app = match res {
            DEPLOYMENTS => self
                .apps
                .iter()
                .position(|app| key_of(Some(&app.spec.namespace), &app.spec.name) == key),
            _ => None,
        };
        let replicas = &next["spec"]["replicas"];
        if res == DEPLOYMENTS && replicas.as_u64().is_none_or(|n| n > MAX_PATCH_REPLICAS) {
            return Err(PatchError::Invalid(format!(
                "spec.replicas: Invalid value: {replicas}: must be an integer from 0 to {MAX_PATCH_REPLICAS}"
            )));
        }
        let desired = replicas.as_u64().unwrap_or(0) as usize;
        let obj = store
            .update(res, key, Writer::update(manager), |v| *v = next)
            .ok_or(PatchError::NotFound)?;
        let mut writes = 1;
        if let Some(a) = app {
            writes += self.scale_app(store, a, desired);
        }
        Ok((obj, writes))
    }

    /// The deployment controller scales app `a` to `desired` replicas: its
    /// replicaset follows, pods are created (and started by the kubelet) or
    /// deleted, the statuses and endpoints follow.
    fn scale_app(&mut self, store: &Store, a: usize, desired: usize) -> u64 {
        let old_left: usize = self
            .rollouts
            .iter()
            .filter(|r| r.app == a)
            .map(|r| r.old_pods.len())
            .sum();
        let before = self.apps[a].pods.len();
        let want = desired.saturating_sub(old_left);
        if before + old_left == desired {
            return 0;
        }
        self.apps[a].spec.replicas = (want + old_left) as u32;
        let app = &self.apps[a];
        let rs_key = key_of(Some(&app.spec.namespace), &app.spec.rs_name());
        store.update(REPLICASETS, &rs_key, CONTROLLER, |v| {
            v["spec"]["replicas"] = json!(want);
            v["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] =
                json!(desired.to_string());
        });
        let mut writes = 1 + self.scaled_event(store, a, before, want);
        let mut created = Vec::new();
        while self.apps[a].pods.len() < want {
            let (key, w) = self.create_pod(store, a, false);
            created.push(key);
            writes += w;
        }
        while self.apps[a].pods.len() > want {
            let last = self.apps[a].pods.len() - 1;
            writes += self.delete_pod(store, a, last);
        }
        writes += self.sync_app_status(store, a);
        for key in &created {
            writes += self.start_pod(store, a, key);
        }
        // The churn's scaling keeps to the total the patch left.
        self.target_pods = (self.target_pods + want).saturating_sub(before);
        writes + self.sync_app_status(store, a)
    }
}
