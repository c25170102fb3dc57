//! How Kubernetes objects point at each other, read from the objects
//! themselves: owner references (Pod → ReplicaSet → Deployment, Job →
//! CronJob, and back down by the owner's uid), label selectors (a Service
//! or a workload selects Pods), and the named links Pod → Node
//! (`spec.nodeName`), PVC → PV (`spec.volumeName`), Pod → PVC (its
//! volumes' `persistentVolumeClaim.claimName`) and EndpointSlice → Service
//! (label `kubernetes.io/service-name`). Finding the objects these name is
//! the caller's job (it holds the stores); the rules live here, once.

use crate::compact_sort;
use crate::json::{JsonKind, JsonRef};

/// One `metadata.ownerReferences` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerReference {
    /// `apps/v1`.
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// The managing controller (at most one owner has it).
    pub controller: bool,
}

impl OwnerReference {
    /// The owner's API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }
}

/// The owners an object names, the controller first.
pub fn owner_references(object: JsonRef<'_>) -> Vec<OwnerReference> {
    let Some(owners) = object
        .pointer("/metadata/ownerReferences")
        .and_then(JsonRef::as_array)
    else {
        return Vec::new();
    };
    let text = |owner: JsonRef<'_>, key: &str| {
        owner
            .get(key)
            .and_then(JsonRef::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut out: Vec<OwnerReference> = owners
        .iter()
        .map(|owner| OwnerReference {
            api_version: text(owner, "apiVersion"),
            kind: text(owner, "kind"),
            name: text(owner, "name"),
            uid: text(owner, "uid"),
            controller: owner
                .get("controller")
                .and_then(JsonRef::as_bool)
                .unwrap_or(false),
        })
        .filter(|owner| !owner.kind.is_empty() && !owner.name.is_empty())
        .collect();
    compact_sort::sort_by_key(&mut out, |owner| !owner.controller);
    out
}

/// Whether `object` names an owner with `uid`.
pub fn is_owned_by(object: JsonRef<'_>, uid: &str) -> bool {
    !uid.is_empty()
        && object
            .pointer("/metadata/ownerReferences")
            .and_then(JsonRef::as_array)
            .is_some_and(|owners| {
                owners
                    .iter()
                    .any(|o| o.get("uid").and_then(JsonRef::as_str) == Some(uid))
            })
}

/// A label selector: a Service's `spec.selector` (a plain map) or a
/// workload's `spec.selector` (`matchLabels` and `matchExpressions`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    pub match_labels: Vec<(String, String)>,
    pub expressions: Vec<Requirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Reads a selector; `None` when there is none or it is empty (an
    /// empty Service selector selects nothing: its endpoints are managed
    /// by hand).
    pub fn from_selector(selector: JsonRef<'_>) -> Option<LabelSelector> {
        let strings = |map: JsonRef<'_>| -> Vec<(String, String)> {
            map.as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.to_owned(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let structured =
            selector.get("matchLabels").is_some() || selector.get("matchExpressions").is_some();
        let out = if structured {
            LabelSelector {
                match_labels: selector.get("matchLabels").map(strings).unwrap_or_default(),
                expressions: selector
                    .get("matchExpressions")
                    .and_then(JsonRef::as_array)
                    .map(|list| list.iter().filter_map(Requirement::from_json).collect())
                    .unwrap_or_default(),
            }
        } else {
            LabelSelector {
                match_labels: strings(selector),
                expressions: Vec::new(),
            }
        };
        (!out.match_labels.is_empty() || !out.expressions.is_empty()).then_some(out)
    }

    /// The selector as a list's `labelSelector` parameter writes it
    /// (`app=web,tier in (a,b),!canary`); `None` when an operator has no
    /// such form (the list would select other objects than this).
    pub fn to_query(&self) -> Option<String> {
        let mut terms: Vec<String> = self
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for r in &self.expressions {
            terms.push(match r.operator.as_str() {
                "In" => format!("{} in ({})", r.key, r.values.join(",")),
                "NotIn" => format!("{} notin ({})", r.key, r.values.join(",")),
                "Exists" => r.key.clone(),
                "DoesNotExist" => format!("!{}", r.key),
                _ => return None,
            });
        }
        Some(terms.join(","))
    }

    /// Whether an object with `labels` (its `metadata.labels`) is selected.
    pub fn matches(&self, labels: Option<JsonRef<'_>>) -> bool {
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(JsonRef::as_str);
        self.match_labels
            .iter()
            .all(|(k, v)| label(k) == Some(v.as_str()))
            && self.expressions.iter().all(|r| {
                let value = label(&r.key);
                match r.operator.as_str() {
                    "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                    "NotIn" => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

impl Requirement {
    fn from_json(entry: JsonRef<'_>) -> Option<Requirement> {
        Some(Requirement {
            key: entry.get("key")?.as_str()?.to_owned(),
            operator: entry.get("operator")?.as_str()?.to_owned(),
            values: entry
                .get("values")
                .and_then(JsonRef::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// An object another one names outright.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedLink {
    /// Why they are related: `node`, `volume`, `claim`, `service`.
    pub relation: &'static str,
    pub group: &'static str,
    pub plural: &'static str,
    /// `""` for cluster-scoped targets.
    pub namespace: String,
    pub name: String,
}

/// The objects `object` (of `kind`, in `namespace`) names by name.
pub fn named_links(kind: &str, namespace: &str, object: JsonRef<'_>) -> Vec<NamedLink> {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(JsonRef::as_str)
            .filter(|s| !s.is_empty())
    };
    let link = |relation, group, plural, namespace: &str, name: &str| NamedLink {
        relation,
        group,
        plural,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    };
    let mut out = Vec::new();
    match kind {
        "Pod" => {
            if let Some(node) = text("/spec/nodeName") {
                out.push(link("node", "", "nodes", "", node));
            }
            let volumes = object.pointer("/spec/volumes").and_then(JsonRef::as_array);
            for volume in volumes.iter().flat_map(|v| v.iter()) {
                let claim = volume.pointer("/persistentVolumeClaim/claimName");
                if let Some(JsonKind::String(claim)) = claim.map(JsonRef::kind) {
                    out.push(link(
                        "claim",
                        "",
                        "persistentvolumeclaims",
                        namespace,
                        claim,
                    ));
                }
            }
        }
        "PersistentVolumeClaim" => {
            if let Some(volume) = text("/spec/volumeName") {
                out.push(link("volume", "", "persistentvolumes", "", volume));
            }
        }
        "EndpointSlice" => {
            if let Some(service) = text("/metadata/labels/kubernetes.io~1service-name") {
                out.push(link("service", "", "services", namespace, service));
            }
        }
        _ => {}
    }
    out
}

/// The selector `object` (of `kind`) selects Pods with, if it is one that does.
pub fn pod_selector(kind: &str, object: JsonRef<'_>) -> Option<LabelSelector> {
    match kind {
        "Service"
        | "ReplicaSet"
        | "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => {
            LabelSelector::from_selector(object.pointer("/spec/selector")?)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::JsonValue;
    use serde_json::json;

    fn value(v: serde_json::Value) -> JsonValue {
        JsonValue::from(v)
    }

    #[test]
    fn a_selector_as_a_lists_label_selector() {
        let selector = |v: serde_json::Value| LabelSelector::from_selector(value(v).root());
        let structured = selector(json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "track", "operator": "NotIn", "values": ["canary"]},
            {"key": "zone", "operator": "Exists"},
            {"key": "old", "operator": "DoesNotExist"}]}))
        .expect("a selector");
        assert_eq!(
            structured.to_query().as_deref(),
            Some("app=web,tier in (a,b),track notin (canary),zone,!old")
        );
        let odd = selector(
            json!({"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["1"]}]}),
        )
        .expect("a selector");
        assert_eq!(odd.to_query(), None);
    }

    #[test]
    fn owners_controller_first_with_their_group() {
        let pod = value(json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "n"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d", "uid": "rs1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "", "name": "broken"}
        ]}}));
        let owners = owner_references(pod.root());
        assert_eq!(owners.len(), 2, "an owner without a kind is dropped");
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].group()),
            ("ReplicaSet", "apps")
        );
        assert_eq!(owners[1].group(), "");
        assert!(is_owned_by(pod.root(), "rs1"));
        assert!(!is_owned_by(pod.root(), "rs2"));
        assert!(!is_owned_by(pod.root(), ""));
        assert!(owner_references(value(json!({"metadata": {}})).root()).is_empty());
    }

    #[test]
    fn selectors_plain_and_structured() {
        let labels = value(json!({"app": "web", "tier": "front"}));
        let service = value(json!({"spec": {"selector": {"app": "web"}}}));
        let selector = pod_selector("Service", service.root()).expect("a selector");
        assert!(selector.matches(Some(labels.root())));
        assert!(!selector.matches(None));

        let deployment = value(json!({"spec": {"selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]}}}));
        let selector = pod_selector("Deployment", deployment.root()).expect("a selector");
        assert!(selector.matches(Some(labels.root())));
        let canary = value(json!({"app": "web", "tier": "front", "canary": "yes"}));
        assert!(!selector.matches(Some(canary.root())));
        let not_in = LabelSelector {
            match_labels: Vec::new(),
            expressions: vec![Requirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: vec!["back".into()],
            }],
        };
        assert!(not_in.matches(Some(labels.root())));
        assert!(not_in.matches(None));

        let empty = value(json!({"spec": {"selector": {}}}));
        assert_eq!(
            pod_selector("Service", empty.root()),
            None,
            "selects nothing"
        );
        assert_eq!(pod_selector("ConfigMap", service.root()), None);
    }

    #[test]
    fn named_links_of_pods_claims_and_slices() {
        let pod = value(json!({"spec": {"nodeName": "node-1", "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
            {"name": "cfg", "configMap": {"name": "cfg"}}]}}));
        let links = named_links("Pod", "shop", pod.root());
        assert_eq!(links.len(), 2);
        assert_eq!(
            (
                links[0].plural,
                links[0].name.as_str(),
                links[0].namespace.as_str()
            ),
            ("nodes", "node-1", "")
        );
        assert_eq!(
            (links[1].plural, links[1].namespace.as_str()),
            ("persistentvolumeclaims", "shop")
        );

        let claim = value(json!({"spec": {"volumeName": "pv-1"}}));
        assert_eq!(
            named_links("PersistentVolumeClaim", "shop", claim.root())[0].name,
            "pv-1"
        );
        let slice = value(json!({"metadata": {"labels": {"kubernetes.io/service-name": "web"}}}));
        assert_eq!(
            named_links("EndpointSlice", "shop", slice.root())[0].plural,
            "services"
        );
        let unscheduled = value(json!({"spec": {"nodeName": ""}}));
        assert!(named_links("Pod", "shop", unscheduled.root()).is_empty());
    }
}
