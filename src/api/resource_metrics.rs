//! The metrics API (`metrics.k8s.io/v1beta1`, served by metrics-server):
//! the list paths the page asks (`pods` of every namespace or of one,
//! `nodes` — the whole resource at once, never an object at a time) and
//! what their answers hold: each object's usage (a pod's containers summed,
//! exactly, as `kubectl top pod` sums them) keyed as the page's stores key
//! objects (`NS/NAME`, or `NAME` for a node), with the window it was
//! measured in (read whole or as it arrives by
//! `crate::api::usage_list_reader`). Quantities are read by `crate::api::quantity`; what an
//! answer means for the table (and a 403 or 404) is
//! `crate::app::metrics_poll`'s.

use std::collections::HashMap;

use serde::Deserialize;

use crate::informer::JsonValue;
use deltascope_facts::quantity::{parse_quantity, Quantity, QuantityError};

/// The metrics API's group and version.
pub const METRICS_API: &str = "/apis/metrics.k8s.io/v1beta1";

/// The resources the metrics API measures, as the page's routes name them
/// (core `v1` pods and nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measured {
    Pods,
    Nodes,
}

impl Measured {
    /// The resource a route names, if the metrics API measures it.
    pub fn of_route(group: &str, version: &str, resource: &str) -> Option<Measured> {
        match (group, version, resource) {
            ("", "v1", "pods") => Some(Measured::Pods),
            ("", "v1", "nodes") => Some(Measured::Nodes),
            _ => None,
        }
    }

    /// Its name in the metrics API's group, as RBAC and kubectl say it.
    pub fn api_name(self) -> &'static str {
        match self {
            Measured::Pods => "pods.metrics.k8s.io",
            Measured::Nodes => "nodes.metrics.k8s.io",
        }
    }

    /// The list to ask for: every pod, or `namespace`'s (nodes have
    /// none), with the view's label selector when it has one.
    pub fn list_path(self, namespace: Option<&str>, label_selector: Option<&str>) -> String {
        let mut path = match (self, namespace) {
            (Measured::Pods, Some(namespace)) => format!(
                "{METRICS_API}/namespaces/{}/pods",
                deltascope_facts::percent::encode_query_value(namespace)
            ),
            (Measured::Pods, None) => format!("{METRICS_API}/pods"),
            (Measured::Nodes, _) => format!("{METRICS_API}/nodes"),
        };
        if let Some(selector) = label_selector.filter(|s| !s.is_empty()) {
            path.push_str("?labelSelector=");
            path.push_str(&deltascope_facts::percent::encode_query_value(selector));
        }
        path
    }
}

/// One object's usage: CPU in cores, memory in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu: Quantity,
    pub memory: Quantity,
}

/// One answer of the metrics API: every object measured, by store key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageList {
    pub usage: HashMap<String, Usage>,
    /// The newest `timestamp` of its objects, as written (metrics-server
    /// measures each object apart; the simulated cluster a window at a
    /// time); empty when it measured none.
    pub timestamp: String,
    /// The resolution it measured at (`15s`), as written.
    pub window: String,
    /// Each pod's containers and their usage, in the answer's order — read
    /// only when asked ([`Keep::containers`]: a chart's one object needs
    /// them, a table of 100,000 pods does not).
    pub containers: HashMap<String, Vec<(String, Usage)>>,
    /// Each pod's labels (metrics-server copies the pod's), read only when
    /// asked ([`Keep::labels`]: a workloads table sums the pods its rows
    /// select).
    pub labels: HashMap<String, JsonValue>,
}

/// What a list keeps besides each object's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    pub containers: bool,
    pub labels: bool,
}

/// Why an answer is not a metrics list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageListError {
    #[error("the metrics API's answer is not a metrics list: {0}")]
    NotJson(String),
    #[error("the metrics of {object} have a bad {resource} usage: {error}")]
    BadQuantity {
        object: String,
        resource: &'static str,
        error: QuantityError,
    },
}

#[derive(Deserialize)]
pub(super) struct ItemBody {
    metadata: MetadataBody,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    window: String,
    /// A pod's.
    #[serde(default)]
    containers: Vec<ContainerBody>,
    /// A node's.
    #[serde(default)]
    usage: Option<UsageBody>,
}

#[derive(Deserialize)]
struct MetadataBody {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ContainerBody {
    #[serde(default)]
    name: String,
    #[serde(default)]
    usage: UsageBody,
}

#[derive(Deserialize, Default)]
struct UsageBody {
    #[serde(default)]
    cpu: Option<String>,
    #[serde(default)]
    memory: Option<String>,
}

/// Adds one item of a metrics list (its bytes) to `list`.
pub(super) fn add_item(
    list: &mut UsageList,
    bytes: &[u8],
    keep: Keep,
) -> Result<(), UsageListError> {
    let item: ItemBody =
        serde_json::from_slice(bytes).map_err(|e| UsageListError::NotJson(e.to_string()))?;
    let key = match item
        .metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
    {
        Some(namespace) => format!("{namespace}/{}", item.metadata.name),
        None => item.metadata.name,
    };
    if let (true, Some(labels)) = (keep.labels, item.metadata.labels) {
        list.labels.insert(key.clone(), JsonValue::from(labels));
    }
    let mut usage = item
        .usage
        .as_ref()
        .map_or(Ok(Usage::default()), |usage| usage_of(usage, &key))?;
    // A pod's usage is its containers' summed (kubectl's getPodMetrics).
    let mut containers = Vec::new();
    for container in item.containers {
        let measured = usage_of(&container.usage, &key)?;
        usage.cpu = usage.cpu.saturating_add(measured.cpu);
        usage.memory = usage.memory.saturating_add(measured.memory);
        if keep.containers {
            containers.push((container.name, measured));
        }
    }
    if keep.containers && !containers.is_empty() {
        list.containers.insert(key.clone(), containers);
    }
    if newer(&item.timestamp, &list.timestamp) {
        list.timestamp = item.timestamp;
        list.window = item.window;
    }
    list.usage.insert(key, usage);
    Ok(())
}

fn usage_of(body: &UsageBody, key: &str) -> Result<Usage, UsageListError> {
    let read = |text: &Option<String>, resource: &'static str| match text.as_deref() {
        None => Ok(Quantity::default()),
        Some(text) => parse_quantity(text).map_err(|error| UsageListError::BadQuantity {
            object: key.to_string(),
            resource,
            error,
        }),
    };
    Ok(Usage {
        cpu: read(&body.cpu, "cpu")?,
        memory: read(&body.memory, "memory")?,
    })
}

/// `candidate` is a later RFC 3339 time than `than` (or `than` is none).
fn newer(candidate: &str, than: &str) -> bool {
    use deltascope_facts::time::parse_rfc3339_nanos;
    match (parse_rfc3339_nanos(candidate), parse_rfc3339_nanos(than)) {
        (Some(a), Some(b)) => a > b,
        (Some(_), None) => true,
        (None, _) => than.is_empty() && !candidate.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::usage_list_reader::{parse_usage_list, parse_usage_list_keeping};

    /// What the simulated cluster answers for pods (two of its items).
    const PODS: &str = r#"{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[
        {"metadata":{"name":"web-1","namespace":"shop","creationTimestamp":"2026-11-28T09:00:00Z"},"timestamp":"2026-11-28T09:00:00Z","window":"15s",
         "containers":[{"name":"app","usage":{"cpu":"12345678n","memory":"123456Ki"}},{"name":"sidecar","usage":{"cpu":"1000001n","memory":"1Mi"}}]},
        {"metadata":{"name":"db-0","namespace":"shop"},"timestamp":"2026-11-28T09:00:15Z","window":"15s",
         "containers":[{"name":"db","usage":{"cpu":"250m","memory":"256Mi"}}]}]}"#;

    const NODES: &str = r#"{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[
        {"metadata":{"name":"node-1"},"timestamp":"2026-11-28T09:00:00Z","window":"15s","usage":{"cpu":"1500m","memory":"2Gi"}}]}"#;

    #[test]
    fn a_pods_containers_are_summed_exactly() {
        let list = parse_usage_list(PODS.as_bytes()).expect("a list");
        let web = list.usage["shop/web-1"];
        assert_eq!(web.cpu.nanos(), 13_345_679);
        assert_eq!(web.cpu.milli_value(), 14);
        assert_eq!(web.memory.value(), (123_456 + 1024) * 1024);
        assert_eq!(list.usage["shop/db-0"].cpu.milli_value(), 250);
        assert_eq!(list.timestamp, "2026-11-28T09:00:15Z");
        assert_eq!(list.window, "15s");
        assert!(list.containers.is_empty(), "not asked for");
        let keep = Keep {
            containers: true,
            labels: false,
        };
        let list = parse_usage_list_keeping(PODS.as_bytes(), keep).expect("a list");
        let names: Vec<&str> = list.containers["shop/web-1"]
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(names, ["app", "sidecar"]);
        assert_eq!(list.containers["shop/web-1"][1].1.memory.value(), 1 << 20);
        assert_eq!(list.usage["shop/web-1"], web);
    }

    #[test]
    fn nodes_are_keyed_by_name() {
        let list = parse_usage_list(NODES.as_bytes()).expect("a list");
        assert_eq!(list.usage["node-1"].cpu.milli_value(), 1500);
        assert_eq!(list.usage["node-1"].memory.value(), 2 << 30);
    }

    #[test]
    fn an_empty_list_has_no_window() {
        let list = parse_usage_list(br#"{"kind":"PodMetricsList","items":[]}"#).expect("a list");
        assert!(list.usage.is_empty());
        assert_eq!(list.timestamp, "");
    }

    #[test]
    fn what_is_not_a_list_is_refused_with_the_object_named() {
        assert!(matches!(
            parse_usage_list(b"<html></html>"),
            Err(UsageListError::NotJson(_))
        ));
        let bad = br#"{"items":[{"metadata":{"name":"n1"},"usage":{"cpu":"lots"}}]}"#;
        let error = parse_usage_list(bad).expect_err("a bad quantity");
        assert!(matches!(
            &error,
            UsageListError::BadQuantity { object, resource: "cpu", .. } if object == "n1"
        ));
    }

    #[test]
    fn list_paths() {
        assert_eq!(
            Measured::Pods.list_path(None, None),
            "/apis/metrics.k8s.io/v1beta1/pods"
        );
        assert_eq!(
            Measured::Pods.list_path(Some("shop"), Some("app=cart")),
            "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods?labelSelector=app%3Dcart"
        );
        assert_eq!(
            Measured::Nodes.list_path(Some("ignored"), None),
            "/apis/metrics.k8s.io/v1beta1/nodes"
        );
        assert_eq!(Measured::of_route("", "v1", "pods"), Some(Measured::Pods));
        assert_eq!(Measured::of_route("", "v1", "nodes"), Some(Measured::Nodes));
        assert_eq!(Measured::of_route("apps", "v1", "pods"), None);
    }
}
