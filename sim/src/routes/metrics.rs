//! The metrics API's paths, answered as metrics-server (behind the
//! apiserver's aggregator) answers them: `GET /apis/metrics.k8s.io/v1beta1/`
//! `pods`, `namespaces/NS/pods`, `namespaces/NS/pods/NAME`, `nodes` and
//! `nodes/NAME`, with `labelSelector` and `fieldSelector` (`metadata.name`,
//! `metadata.namespace`). Lists are whole (no paging), sorted by namespace
//! and name, and their items carry no kind; a get's object does.
//!
//! metrics-server's storage is a getter and a lister, no watcher, so the
//! apiserver answers a watch of a list (`?watch=1`) 405 MethodNotAllowed
//! (`watch is not supported on resources of kind "pods.metrics.k8s.io"`),
//! serves no `/watch/` paths (404) and answers a get of one object with the
//! object even when it asks to watch. A pod that does not exist is
//! `pods "NAME" not found`, one without metrics (not Running)
//! `podmetrics.metrics.k8s.io "NS/NAME" not found`, a node that does not
//! exist `node "NAME" not found` — the listers' and metrics-server's words.
//! A Table (`Accept: …;as=Table`) has metrics-server's columns: Name, cpu,
//! memory, Window.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;
use deltascope_facts::StatusDetails;
use serde_json::{json, Value};

use super::target::unknown_resource;
use crate::cluster::Inner;
use crate::metrics::model::Usage;
use crate::metrics::{quantity, Measured, Metrics};
use crate::objects;
use crate::query::flag;
use crate::resources::{METRICS_GROUP, METRICS_VERSION, NODES, PODS};
use crate::selectors::{FieldSelector, LabelSelector, Selector};
use crate::status::{json_response, ApiError};
use crate::store::key_of;
use crate::table::{self, IncludeObject};

/// What a metrics path asks for.
enum Ask<'a> {
    Pods { namespace: Option<&'a str> },
    Pod { namespace: &'a str, name: &'a str },
    Nodes,
    Node { name: &'a str },
}

impl Ask<'_> {
    fn plural(&self) -> &'static str {
        match self {
            Ask::Pods { .. } | Ask::Pod { .. } => "pods",
            Ask::Nodes | Ask::Node { .. } => "nodes",
        }
    }

    fn namespace(&self) -> Option<&str> {
        match self {
            Ask::Pods { namespace } => *namespace,
            Ask::Pod { namespace, .. } => Some(namespace),
            Ask::Nodes | Ask::Node { .. } => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Ask::Pods { .. } | Ask::Pod { .. } => "PodMetrics",
            Ask::Nodes | Ask::Node { .. } => "NodeMetrics",
        }
    }

    fn is_list(&self) -> bool {
        matches!(self, Ask::Pods { .. } | Ask::Nodes)
    }
}

/// The first segments a metrics path may start with.
const KNOWN: [&str; 4] = ["pods", "nodes", "namespaces", "watch"];

fn parse_path<'a>(rest: &[&'a str]) -> Result<Ask<'a>, ApiError> {
    Ok(match rest {
        ["pods"] => Ask::Pods { namespace: None },
        ["namespaces", ns, "pods"] => Ask::Pods {
            namespace: Some(ns),
        },
        ["namespaces", ns, "pods", name] => Ask::Pod {
            namespace: ns,
            name,
        },
        ["nodes"] => Ask::Nodes,
        ["nodes", name] => Ask::Node { name },
        [plural, ..] if !KNOWN.contains(plural) => {
            return Err(unknown_resource(METRICS_GROUP, METRICS_VERSION, plural))
        }
        ["namespaces", _, plural, ..] if !KNOWN.contains(plural) => {
            return Err(unknown_resource(METRICS_GROUP, METRICS_VERSION, plural))
        }
        _ => {
            return Err(ApiError::not_found(
                "the server could not find the requested resource",
            ))
        }
    })
}

/// `GET /apis/metrics.k8s.io/v1beta1/{rest}`.
pub(super) fn serve(
    inner: &Inner,
    metrics: &Metrics,
    rest: &[&str],
    query: &HashMap<String, String>,
    accept: &str,
) -> Result<Response, ApiError> {
    let ask = parse_path(rest)?;
    let plural = ask.plural();
    let watch = flag(query, "watch").unwrap_or(false);
    if inner.config.forbids(plural, METRICS_GROUP) {
        let verb = match (watch, ask.is_list()) {
            (true, true) => "watch",
            (false, true) => "list",
            (_, false) => "get",
        };
        return Err(ApiError::forbidden(
            verb,
            plural,
            METRICS_GROUP,
            ask.namespace(),
        ));
    }
    let label = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let field = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        plural,
        &[],
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    if watch && ask.is_list() {
        return Err(watch_not_supported(plural));
    }
    let table_mode = table::asked_mode(accept, query.get("includeObject").map(String::as_str))
        .map_err(ApiError::bad_request)?;
    let selector = Selector { label, field };
    let window = metrics.window_now();
    let items = match ask {
        Ask::Pods { namespace } => pods(inner, metrics, namespace, &selector, window),
        Ask::Pod { namespace, name } => vec![pod(inner, metrics, namespace, name, window)?],
        Ask::Nodes => nodes(inner, metrics, &selector, window),
        Ask::Node { name } => vec![node(inner, metrics, name, window)?],
    };
    let kind = ask.kind();
    let body = match table_mode {
        Some(include) => table(kind, items, metrics, include),
        None if ask.is_list() => list(kind, items),
        None => items
            .into_iter()
            .next()
            .map(|item| one(kind, item.value))
            .unwrap_or_default(),
    };
    Ok(json_response(serde_json::to_vec(&body).unwrap_or_default()))
}

/// 405, as the apiserver answers a watch of a resource whose storage
/// cannot watch.
fn watch_not_supported(plural: &str) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("watch is not supported on resources of kind \"{plural}.{METRICS_GROUP}\""),
    );
    e.details = Some(Box::new(StatusDetails {
        group: METRICS_GROUP.to_string(),
        kind: plural.to_string(),
        ..StatusDetails::default()
    }));
    e
}

/// One measured object and its total usage (a pod's containers' summed).
struct Item {
    value: Value,
    total: Usage,
}

fn list(kind: &str, items: Vec<Item>) -> Value {
    let items: Vec<Value> = items.into_iter().map(|i| i.value).collect();
    json!({
        "kind": format!("{kind}List"), "apiVersion": format!("{METRICS_GROUP}/{METRICS_VERSION}"),
        "metadata": {}, "items": items
    })
}

fn one(kind: &str, mut item: Value) -> Value {
    item["kind"] = json!(kind);
    item["apiVersion"] = json!(format!("{METRICS_GROUP}/{METRICS_VERSION}"));
    item
}

/// The objects as a Table, with metrics-server's columns: Name, the usage
/// of each resource (summed over a pod's containers) and Window.
fn table(kind: &str, items: Vec<Item>, metrics: &Metrics, include: IncludeObject) -> Value {
    let rows: Vec<Value> = items
        .into_iter()
        .map(|item| {
            let cells = vec![
                item.value["metadata"]["name"].clone(),
                json!(quantity::cpu(item.total.cpu_nanocores)),
                json!(quantity::memory(item.total.memory_bytes)),
                json!(metrics.window_text()),
            ];
            table::row_of(cells, &one(kind, item.value), include)
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
            {"name": "cpu", "type": "string", "format": "quantity", "description": "", "priority": 0},
            {"name": "memory", "type": "string", "format": "quantity", "description": "", "priority": 0},
            {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0}
        ],
        "rows": rows
    })
}

/// An item's metadata: metrics-server stamps `creationTimestamp` with the
/// time of the read.
fn metadata(source: &Value) -> Value {
    let meta = &source["metadata"];
    let mut out = json!({"name": meta["name"], "creationTimestamp": objects::rfc3339_now()});
    if let Some(ns) = meta["namespace"].as_str() {
        out["namespace"] = json!(ns);
    }
    if meta["labels"].is_object() {
        out["labels"] = meta["labels"].clone();
    }
    out
}

fn pod_item(metrics: &Metrics, pod: &Value, containers: &[Measured], window: u64) -> Item {
    let total = containers.iter().fold(Usage::default(), |t, c| t + c.usage);
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c.name, "usage": Metrics::usage_json(c.usage)}))
        .collect();
    let value = json!({
        "metadata": metadata(pod),
        "timestamp": metrics.timestamp(window),
        "window": metrics.window_text(),
        "containers": containers
    });
    Item { value, total }
}

fn pods(
    inner: &Inner,
    metrics: &Metrics,
    namespace: Option<&str>,
    selector: &Selector,
    window: u64,
) -> Vec<Item> {
    let leaker = metrics.leak.current();
    let mut items: Vec<((String, String), Item)> = Vec::new();
    let _ = inner
        .store
        .snapshot(PODS, namespace, None, None, &mut |obj| {
            if !selector.matches(&obj.sel) || obj.sel["status"]["phase"] != "Running" {
                return true;
            }
            let pod = obj.value();
            if let Some(containers) = metrics.pod(&pod, window, leaker.as_ref()) {
                let meta = &pod["metadata"];
                let order = (
                    meta["namespace"].as_str().unwrap_or_default().to_string(),
                    meta["name"].as_str().unwrap_or_default().to_string(),
                );
                items.push((order, pod_item(metrics, &pod, &containers, window)));
            }
            true
        });
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items.into_iter().map(|(_, item)| item).collect()
}

fn pod(
    inner: &Inner,
    metrics: &Metrics,
    namespace: &str,
    name: &str,
    window: u64,
) -> Result<Item, ApiError> {
    let key = key_of(Some(namespace), name);
    let pod = inner
        .store
        .get(PODS, &key)
        .ok_or_else(|| ApiError::object_not_found("pods", "", name))?
        .value();
    let containers = metrics
        .pod(&pod, window, metrics.leak.current().as_ref())
        .ok_or_else(|| ApiError::object_not_found("podmetrics", METRICS_GROUP, &key))?;
    Ok(pod_item(metrics, &pod, &containers, window))
}

fn node_item(metrics: &Metrics, node: &Value, pods: Usage, window: u64) -> Item {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let total = metrics.node(name, pods, window);
    let value = json!({
        "metadata": metadata(node),
        "timestamp": metrics.timestamp(window),
        "window": metrics.window_text(),
        "usage": Metrics::usage_json(total)
    });
    Item { value, total }
}

fn nodes(inner: &Inner, metrics: &Metrics, selector: &Selector, window: u64) -> Vec<Item> {
    let by_node = metrics.pods_by_node(&inner.store, window);
    let mut items = Vec::new();
    let _ = inner.store.snapshot(NODES, None, None, None, &mut |obj| {
        if selector.matches(&obj.sel) {
            let pods = by_node.get(&obj.key).copied().unwrap_or_default();
            items.push(node_item(metrics, &obj.value(), pods, window));
        }
        true
    });
    items
}

fn node(inner: &Inner, metrics: &Metrics, name: &str, window: u64) -> Result<Item, ApiError> {
    let node = inner
        .store
        .get(NODES, name)
        .ok_or_else(|| ApiError::object_not_found("node", "", name))?
        .value();
    let pods = metrics
        .pods_by_node(&inner.store, window)
        .get(name)
        .copied()
        .unwrap_or_default();
    Ok(node_item(metrics, &node, pods, window))
}
