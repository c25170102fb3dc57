//! Who owns each pod, for the usage sampler: a pod's controller
//! (`ReplicaSet/web-7d9`, from its `ownerReferences` entry with
//! `controller: true`) and its top workload (`Deployment/web` when that
//! ReplicaSet's controller is a Deployment, `CronJob/x` when a Job's is a
//! CronJob, else the controller itself), learnt from what the recorder's own
//! informers hold: the pods', ReplicaSets' and Jobs' drivers note every
//! object they restore and every delta they hand on ([`OwnerFeed`]), so no
//! request of its own is made and nothing is read twice.
//!
//! The drivers and the sampler are local tasks on the recorder's thread,
//! so the index is shared as `Rc<RefCell<…>>` and never held across an
//! await. It stays small at 100k pods: an object is held by a 64-bit hash
//! of its key (a collision, about one in 10^10 at that size, could only
//! name a wrong owner), and each owner's name once, shared by its pods
//! (about 32 bytes a pod).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;

use deltascope_history::DeltaRecord;
use deltascope_informer::{DeltaType, JsonValue};

/// The index, shared by the drivers that feed it and the sampler.
pub type SharedOwners = Rc<RefCell<Owners>>;

/// Pods' controllers, and the controllers' own (see the module doc).
#[derive(Default)]
pub struct Owners {
    /// hash of `NS/NAME` → the pod's controller.
    pods: HashMap<u64, Rc<str>>,
    /// hash of `NS/Kind/NAME` → that ReplicaSet's or Job's controller.
    controllers: HashMap<u64, Rc<str>>,
    /// Every name held, once.
    names: HashSet<Rc<str>>,
    /// Names held when unused ones are dropped next.
    prune_at: usize,
    /// The kinds a driver feeds (`Pod`, `ReplicaSet`, `Job`), and those
    /// whose driver has listed (or resumed) all its objects: until then a
    /// pod's owner may not be known yet.
    fed: HashSet<&'static str>,
    listed: HashSet<&'static str>,
}

/// What one driver feeds the index.
#[derive(Clone)]
pub struct OwnerFeed {
    pub owners: SharedOwners,
    /// `Pod`, `ReplicaSet` or `Job`.
    pub kind: &'static str,
}

impl OwnerFeed {
    /// The feed of the resource recorded as `resource`, if it has one.
    pub fn of(resource: &str, owners: &SharedOwners) -> Option<OwnerFeed> {
        let kind = match resource {
            "pods" => "Pod",
            "replicasets.apps" => "ReplicaSet",
            "jobs.batch" => "Job",
            _ => return None,
        };
        owners.borrow_mut().fed.insert(kind);
        Some(OwnerFeed {
            owners: owners.clone(),
            kind,
        })
    }

    /// The driver holds every object of its resource (listed or resumed).
    pub fn listed(&self) {
        self.owners.borrow_mut().listed.insert(self.kind);
    }

    /// Notes a delta the driver hands on.
    pub fn note_delta(&self, delta: &DeltaRecord) {
        let mut owners = self.owners.borrow_mut();
        if delta.kind == DeltaType::Deleted {
            owners.forget(self.kind, &delta.namespace, &delta.name);
        } else {
            owners.note(self.kind, &delta.namespace, &delta.name, &delta.object);
        }
    }

    /// Notes an object the driver restored (`NS/NAME` as its key).
    pub fn note_object(&self, key: &str, object: &JsonValue) {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        self.owners
            .borrow_mut()
            .note(self.kind, namespace, name, object);
    }
}

fn key_hash(parts: &[&str]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for part in parts {
        part.hash(&mut hasher);
    }
    hasher.finish()
}

/// `Kind/name` of `object`'s controller, if it has one.
pub fn controller_of(object: &JsonValue) -> Option<String> {
    let references = object.pointer("/metadata/ownerReferences")?.as_array()?;
    references.iter().find_map(|reference| {
        if reference.get("controller")?.as_bool() != Some(true) {
            return None;
        }
        let kind = reference.get("kind")?.as_str()?;
        let name = reference.get("name")?.as_str()?;
        Some(format!("{kind}/{name}"))
    })
}

impl Owners {
    pub fn shared() -> SharedOwners {
        Rc::new(RefCell::new(Owners::default()))
    }

    fn slot(&mut self, kind: &str, namespace: &str, name: &str) -> (bool, u64) {
        match kind {
            "Pod" => (true, key_hash(&[namespace, name])),
            _ => (false, key_hash(&[namespace, kind, name])),
        }
    }

    /// Notes the controller of the `kind` object `namespace/name`.
    pub fn note(&mut self, kind: &str, namespace: &str, name: &str, object: &JsonValue) {
        let (pod, hash) = self.slot(kind, namespace, name);
        let Some(controller) = controller_of(object) else {
            self.forget(kind, namespace, name);
            return;
        };
        let controller = self.intern(controller);
        let map = if pod {
            &mut self.pods
        } else {
            &mut self.controllers
        };
        map.insert(hash, controller);
        self.prune_if_due();
    }

    /// Forgets the `kind` object `namespace/name`.
    pub fn forget(&mut self, kind: &str, namespace: &str, name: &str) {
        let (pod, hash) = self.slot(kind, namespace, name);
        if pod {
            self.pods.remove(&hash);
        } else {
            self.controllers.remove(&hash);
        }
    }

    fn intern(&mut self, name: String) -> Rc<str> {
        if let Some(held) = self.names.get(name.as_str()) {
            return held.clone();
        }
        let held: Rc<str> = Rc::from(name);
        self.names.insert(held.clone());
        held
    }

    /// Drops the names no object holds any more, once they have doubled.
    fn prune_if_due(&mut self) {
        if self.names.len() <= self.prune_at.max(1024) {
            return;
        }
        self.names.retain(|name| Rc::strong_count(name) > 1);
        self.prune_at = self.names.len() * 2;
    }

    /// The controller and top workload of pod `namespace/name` (both empty
    /// when it is not known or has no controller).
    pub fn of_pod(&self, namespace: &str, name: &str) -> (Rc<str>, Rc<str>) {
        let Some(controller) = self.pods.get(&key_hash(&[namespace, name])) else {
            return (Rc::from(""), Rc::from(""));
        };
        let top = controller.split_once('/').and_then(|(kind, owner_name)| {
            let wanted = match kind {
                "ReplicaSet" => "Deployment",
                "Job" => "CronJob",
                _ => return None,
            };
            let above = self
                .controllers
                .get(&key_hash(&[namespace, kind, owner_name]))?;
            above
                .starts_with(&format!("{wanted}/"))
                .then(|| above.clone())
        });
        (
            controller.clone(),
            top.unwrap_or_else(|| controller.clone()),
        )
    }

    /// Whether every fed kind's driver has listed: a pod's owner, if it
    /// has one, is known (the sampler waits for this before it stores a
    /// window of pods, so no owner's sum misses the first windows).
    pub fn ready(&self) -> bool {
        self.fed.iter().all(|kind| self.listed.contains(kind))
    }

    /// Pods held.
    #[cfg(test)]
    pub fn pods(&self) -> usize {
        self.pods.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(kind: &str, name: &str) -> JsonValue {
        let text = format!(
            r#"{{"metadata":{{"ownerReferences":[{{"kind":"Other","name":"x"}},{{"kind":"{kind}","name":"{name}","controller":true}}]}}}}"#
        );
        JsonValue::parse(text.as_bytes()).expect("JSON")
    }

    #[test]
    fn owners_are_ready_once_every_fed_kind_has_listed() {
        let owners = Owners::shared();
        assert!(owners.borrow().ready(), "nothing fed: nothing to wait for");
        let pods = OwnerFeed::of("pods", &owners).expect("pods feed");
        let replicasets = OwnerFeed::of("replicasets.apps", &owners).expect("replicasets feed");
        assert!(OwnerFeed::of("configmaps", &owners).is_none());
        assert!(!owners.borrow().ready());
        pods.listed();
        assert!(
            !owners.borrow().ready(),
            "the ReplicaSets are not listed yet"
        );
        replicasets.listed();
        replicasets.listed();
        assert!(owners.borrow().ready());
    }

    #[test]
    fn a_pod_is_owned_by_its_controller_and_its_top_workload() {
        let mut owners = Owners::default();
        owners.note("Pod", "shop", "web-7d9-a", &owned("ReplicaSet", "web-7d9"));
        owners.note("Pod", "shop", "nightly-1-x", &owned("Job", "nightly-1"));
        owners.note("Pod", "shop", "db-0", &owned("StatefulSet", "db"));
        let (controller, top) = owners.of_pod("shop", "web-7d9-a");
        assert_eq!(
            (&*controller, &*top),
            ("ReplicaSet/web-7d9", "ReplicaSet/web-7d9")
        );
        owners.note("ReplicaSet", "shop", "web-7d9", &owned("Deployment", "web"));
        owners.note("Job", "shop", "nightly-1", &owned("CronJob", "nightly"));
        assert_eq!(&*owners.of_pod("shop", "web-7d9-a").1, "Deployment/web");
        assert_eq!(&*owners.of_pod("shop", "nightly-1-x").1, "CronJob/nightly");
        assert_eq!(&*owners.of_pod("shop", "db-0").1, "StatefulSet/db");
        // another namespace's ReplicaSet of that name is not this one's
        assert_eq!(&*owners.of_pod("other", "web-7d9-a").0, "");
        owners.forget("ReplicaSet", "shop", "web-7d9");
        assert_eq!(&*owners.of_pod("shop", "web-7d9-a").1, "ReplicaSet/web-7d9");
        owners.forget("Pod", "shop", "web-7d9-a");
        assert_eq!(&*owners.of_pod("shop", "web-7d9-a").0, "");
        let bare = JsonValue::parse(br#"{"metadata":{}}"#).expect("JSON");
        owners.note("Pod", "shop", "db-0", &bare);
        assert_eq!(owners.pods(), 1);
    }

    #[test]
    fn owners_names_are_held_once_and_dropped_when_unused() {
        let mut owners = Owners::default();
        for i in 0..3000 {
            owners.note("Pod", "shop", &format!("p{i}"), &owned("ReplicaSet", "rs"));
        }
        assert_eq!(owners.names.len(), 1);
        for i in 0..3000 {
            let rs = format!("rs-{i}");
            owners.note("Pod", "shop", "moving", &owned("ReplicaSet", &rs));
        }
        assert!(owners.names.len() <= 2049, "{}", owners.names.len());
    }
}
