//! Kubernetes Events as objects: the core/v1 Event the workload records
//! (who reported it, about which object, how often) and the same Event as
//! `events.k8s.io/v1` serves it. The apiserver stores one object and serves
//! it in both APIs; the store does the same through its views, converting
//! with [`to_events_v1`] on every write, so both carry one uid and one
//! resourceVersion.

use serde_json::{json, Value};

/// Who reports an event: `source.component` (and `reportingComponent`),
/// the instance (a node for the kubelet) and the field manager it writes as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reporter {
    pub component: &'static str,
    pub manager: &'static str,
}

pub const KUBELET: Reporter = Reporter {
    component: "kubelet",
    manager: "kubelet",
};
pub const SCHEDULER: Reporter = Reporter {
    component: "default-scheduler",
    manager: "kube-scheduler",
};
pub const REPLICASET_CONTROLLER: Reporter = Reporter {
    component: "replicaset-controller",
    manager: "kube-controller-manager",
};
pub const DEPLOYMENT_CONTROLLER: Reporter = Reporter {
    component: "deployment-controller",
    manager: "kube-controller-manager",
};
/// node-problem-detector's kernel monitor (`OOMKilling` on a Node).
pub const KERNEL_MONITOR: Reporter = Reporter {
    component: "kernel-monitor",
    manager: "node-problem-detector",
};

/// What happened, to be recorded about an object.
#[derive(Debug, Clone)]
pub struct Occurrence {
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
    /// `spec.containers{web}` for a container's event.
    pub field_path: Option<String>,
    /// `events.k8s.io`'s `action`: what was done (`Binding`, `Scaling`, …).
    pub action: &'static str,
    pub reporter: Reporter,
}

impl Occurrence {
    pub fn normal(reporter: Reporter, reason: &'static str, message: String) -> Occurrence {
        Occurrence {
            type_: "Normal",
            reason,
            message,
            field_path: None,
            action: action_of(reason),
            reporter,
        }
    }

    pub fn warning(reporter: Reporter, reason: &'static str, message: String) -> Occurrence {
        Occurrence {
            type_: "Warning",
            ..Occurrence::normal(reporter, reason, message)
        }
    }

    pub fn in_container(mut self, container: &str) -> Occurrence {
        self.field_path = Some(format!("spec.containers{{{container}}}"));
        self
    }
}

/// The `action` the new-style recorders give each reason.
fn action_of(reason: &str) -> &'static str {
    match reason {
        "Scheduled" => "Binding",
        "ScalingReplicaSet" => "Scaling",
        "SuccessfulCreate" | "Created" => "Create",
        "SuccessfulDelete" | "Killing" => "Delete",
        "Pulled" => "Pulling",
        "Started" => "Start",
        "BackOff" => "Restart",
        _ => "Update",
    }
}

/// A new core/v1 Event `name` about `involved` (the object as stored), seen
/// once now (`time`: RFC 3339 seconds; `micro`: with microseconds).
pub fn core_event(
    name: &str,
    involved: &Value,
    what: &Occurrence,
    time: &str,
    micro: &str,
) -> Value {
    let meta = &involved["metadata"];
    let namespace = meta["namespace"].as_str().unwrap_or("default");
    // The node a node-local reporter (the kubelet, node-problem-detector)
    // runs on: the pod's, or the Node itself.
    let host = involved["spec"]["nodeName"].as_str().or_else(|| {
        (involved["kind"] == "Node")
            .then(|| meta["name"].as_str())
            .flatten()
    });
    let node_local = matches!(what.reporter.component, "kubelet" | "kernel-monitor");
    let instance = match (node_local, host) {
        (true, Some(node)) => node.to_string(),
        _ => format!("{}-sim-0", what.reporter.component),
    };
    let mut source = json!({"component": what.reporter.component});
    if let (Some(node), true) = (host, node_local) {
        source["host"] = json!(node);
    }
    let mut involved_ref = json!({
        "apiVersion": involved["apiVersion"], "kind": involved["kind"], "name": meta["name"],
        "namespace": namespace, "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]
    });
    if let Some(path) = &what.field_path {
        involved_ref["fieldPath"] = json!(path);
    }
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved_ref,
        "reason": what.reason, "message": what.message, "type": what.type_, "count": 1,
        "source": source, "firstTimestamp": time, "lastTimestamp": time, "eventTime": micro,
        "action": what.action, "reportingComponent": what.reporter.component, "reportingInstance": instance
    })
}

/// The event seen again: `count` and `lastTimestamp` up, and its `series`.
pub fn repeat(event: &mut Value, time: &str, micro: &str) {
    let count = event["count"].as_u64().unwrap_or(1) + 1;
    event["count"] = json!(count);
    event["lastTimestamp"] = json!(time);
    event["series"] = json!({"count": count, "lastObservedTime": micro});
}

/// A core/v1 Event as `events.k8s.io/v1` serves it (the apiserver's
/// conversion): `regarding`, `note`, `reportingController`, the deprecated
/// counters and times, `series`.
pub fn to_events_v1(core: &Value) -> Value {
    let mut v = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": core["metadata"],
        "regarding": core["involvedObject"],
        "reason": core["reason"], "note": core["message"], "type": core["type"],
        "action": core["action"],
        "eventTime": core["eventTime"],
        "reportingController": core["reportingComponent"],
        "reportingInstance": core["reportingInstance"],
        "deprecatedSource": core["source"],
        "deprecatedCount": core["count"],
        "deprecatedFirstTimestamp": core["firstTimestamp"],
        "deprecatedLastTimestamp": core["lastTimestamp"],
    });
    if !core["series"].is_null() {
        v["series"] = core["series"].clone();
    }
    if let Some(members) = v.as_object_mut() {
        members.retain(|_, value| !value.is_null());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_apis_say_the_same_thing() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1", "resourceVersion": "7"},
            "spec": {"nodeName": "node-2"}});
        let what =
            Occurrence::warning(KUBELET, "BackOff", "Back-off".to_string()).in_container("web");
        let mut core = core_event(
            "web-1.1",
            &pod,
            &what,
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.000001Z",
        );
        assert_eq!(core["involvedObject"]["fieldPath"], "spec.containers{web}");
        assert_eq!(core["source"]["host"], "node-2");
        repeat(
            &mut core,
            "2026-01-01T00:00:05Z",
            "2026-01-01T00:00:05.000002Z",
        );
        let v1 = to_events_v1(&core);
        assert_eq!(v1["regarding"]["uid"], "u1");
        assert_eq!(v1["note"], "Back-off");
        assert_eq!(v1["series"]["count"], 2);
        assert_eq!(v1["deprecatedCount"], 2);
        assert_eq!(v1["deprecatedLastTimestamp"], "2026-01-01T00:00:05Z");
        assert_eq!(v1["reportingController"], "kubelet");
        assert_eq!(v1["reportingInstance"], "node-2");
        assert_eq!(v1["action"], "Restart");
    }
}
