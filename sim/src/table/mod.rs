//! Server-side printing: `meta.k8s.io/v1` Table responses for
//! `Accept: application/json;as=Table;...`, with the columns `kubectl get`
//! shows for each kind (a CRD added at runtime gets a custom resource's
//! default ones, Name and Age) and rows carrying PartialObjectMetadata.

use serde_json::{json, Value};

use super::objects::now_secs;

mod events;
mod text;

use self::text::{age_of, s};
use deltascope_facts::time::{format_age, parse_rfc3339};

/// What each row's `object` holds (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: Option<&str>) -> Result<IncludeObject, String> {
        match s {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!(
                "invalid includeObject {other:?}: use None, Metadata or Object"
            )),
        }
    }
}

/// Does this Accept header ask for a Table?
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

fn col(name: &str, type_: &str, priority: u8, description: &str) -> Value {
    let mut c = json!({"name": name, "type": type_, "format": "", "description": description, "priority": priority});
    if name == "Name" {
        c["format"] = json!("name");
    }
    c
}

pub fn columns(plural: &str) -> Value {
    let name = col(
        "Name",
        "string",
        0,
        "Name must be unique within a namespace.",
    );
    let age = col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created.");
    let containers = col(
        "Containers",
        "string",
        1,
        "Names of each container in the template.",
    );
    let images = col(
        "Images",
        "string",
        1,
        "Images referenced by each container in the template.",
    );
    let selector = col("Selector", "string", 1, "Label selector for pods.");
    let cols = match plural {
        "pods" => vec![
            name,
            col("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
            col("Status", "string", 0, "The aggregate status of the containers in this pod."),
            col("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            age,
            col("IP", "string", 1, "IP address allocated to the pod. Routable at least within the cluster."),
            col("Node", "string", 1, "NodeName is a request to schedule this pod onto a specific node."),
            col("Nominated Node", "string", 1, "nominatedNodeName is set only when this pod preempts other pods on the node."),
            col("Readiness Gates", "string", 1, "If specified, all readiness gates will be evaluated for pod readiness."),
        ],
        "deployments" => vec![
            name,
            col("Ready", "string", 0, "Number of the pod with ready state"),
            col("Up-to-date", "integer", 0, "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
            col("Available", "integer", 0, "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
            age,
            containers,
            images,
            selector,
        ],
        "replicasets" => vec![
            name,
            col("Desired", "integer", 0, "Replicas is the number of desired replicas."),
            col("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
            col("Ready", "integer", 0, "The number of ready replicas for this replica set."),
            age,
            containers,
            images,
            selector,
        ],
        "statefulsets" => vec![name, col("Ready", "string", 0, "Number of the pod with ready state"), age, containers, images],
        "daemonsets" => vec![
            name,
            col("Desired", "integer", 0, "The total number of nodes that should be running the daemon pod."),
            col("Current", "integer", 0, "The number of nodes that are running at least 1 daemon pod."),
            col("Ready", "integer", 0, "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
            col("Up-to-date", "integer", 0, "The total number of nodes that are running updated daemon pod"),
            col("Available", "integer", 0, "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
            col("Node Selector", "string", 0, "NodeSelector is a selector which must be true for the pod to fit on a node."),
            age,
            containers,
            images,
            selector,
        ],
        "jobs" => vec![
            name,
            col("Status", "string", 0, "Status of the job."),
            col("Completions", "string", 0, "The desired number of successfully finished pods the job should be run with."),
            col("Duration", "string", 0, "Time required to complete the job."),
            age,
            containers,
            images,
            selector,
        ],
        "namespaces" => vec![name, col("Status", "string", 0, "The status of the namespace"), age],
        "nodes" => vec![
            name,
            col("Status", "string", 0, "The status of the node"),
            col("Roles", "string", 0, "The roles of the node"),
            age,
            col("Version", "string", 0, "Kubelet Version reported by the node."),
            col("Internal-IP", "string", 1, "List of internal IPs in the node"),
            col("External-IP", "string", 1, "List of external IPs in the node"),
            col("OS-Image", "string", 1, "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
            col("Kernel-Version", "string", 1, "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
            col("Container-Runtime", "string", 1, "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
        ],
        "services" => vec![
            name,
            col("Type", "string", 0, "type determines how the Service is exposed."),
            col("Cluster-IP", "string", 0, "clusterIP is the IP address of the service and is usually assigned randomly."),
            col("External-IP", "string", 0, "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
            col("Port(s)", "string", 0, "The list of ports that are exposed by this service."),
            age,
            col("Selector", "string", 1, "Route service traffic to pods with label keys and values matching this selector."),
        ],
        "configmaps" => vec![name, col("Data", "string", 0, "Data contains the configuration data."), age],
        "secrets" => vec![
            name,
            col("Type", "string", 0, "Used to facilitate programmatic handling of secret data."),
            col("Data", "string", 0, "Data contains the secret data."),
            age,
        ],
        "events" => vec![
            col("Last Seen", "string", 0, "The last time this event was observed."),
            col("Type", "string", 0, "Type of this event (Normal, Warning), new types could be added in the future."),
            col("Reason", "string", 0, "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
            col("Object", "string", 0, "The object that this event is about."),
            col("Subobject", "string", 1, "The field path of the object this event is about."),
            col("Source", "string", 1, "The component reporting this event."),
            col("Message", "string", 0, "A human-readable description of the status of this operation."),
            col("First Seen", "string", 1, "The first time this event was observed."),
            col("Count", "string", 1, "The number of times this event has occurred."),
            col("Name", "string", 1, "Name must be unique within a namespace."),
        ],
        "widgets" => {
            let mut cols = vec![name];
            for c in crd_columns() {
                let mut d = col(
                    c["name"].as_str().unwrap_or(""),
                    c["type"].as_str().unwrap_or("string"),
                    c["priority"].as_u64().unwrap_or(0) as u8,
                    c["description"].as_str().unwrap_or(""),
                );
                if d["type"] == "date" {
                    d["type"] = json!("string");
                    d["format"] = json!("date");
                }
                cols.push(d);
            }
            cols
        }
        "customresourcedefinitions" => vec![name, col("Created At", "date", 0, "")],
        "endpointslices" => vec![
            name,
            col("AddressType", "string", 0, "The IP protocol for this slice"),
            col("Ports", "string", 0, "The ports defined on this slice"),
            col("Endpoints", "string", 0, "Endpoints in this slice"),
            age,
        ],
        _ => vec![name, age],
    };
    Value::Array(cols)
}

fn int(v: &Value) -> Value {
    json!(v.as_i64().unwrap_or(0))
}

fn joined(containers: &Value, field: &str) -> String {
    containers
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c[field].as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn match_labels(sel: &Value) -> String {
    sel["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".to_string())
}

fn pod_cells(o: &Value, now: i64) -> Vec<Value> {
    let st = &o["status"];
    let statuses = st["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let mut reason = st["reason"]
        .as_str()
        .or(st["phase"].as_str())
        .unwrap_or("Unknown")
        .to_string();
    let mut restarts = 0;
    let mut last_restart: Option<i64> = None;
    for c in &statuses {
        restarts += c["restartCount"].as_i64().unwrap_or(0);
        if let Some(t) = c["lastState"]["terminated"]["finishedAt"]
            .as_str()
            .and_then(parse_rfc3339)
        {
            last_restart = Some(last_restart.map_or(t, |l: i64| l.max(t)));
        }
    }
    for c in statuses.iter().rev() {
        if let Some(r) = c["state"]["waiting"]["reason"].as_str() {
            reason = r.to_string();
        } else if let Some(r) = c["state"]["terminated"]["reason"].as_str() {
            reason = r.to_string();
        }
    }
    if reason == "Running"
        && ready < total
        && st["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
    {
        reason = "Running".to_string();
    }
    if !o["metadata"]["deletionTimestamp"].is_null() {
        reason = "Terminating".to_string();
    }
    let restarts = match last_restart {
        Some(t) if restarts > 0 => format!("{restarts} ({} ago)", format_age(now - t)),
        _ => restarts.to_string(),
    };
    vec![
        json!(o["metadata"]["name"]),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(age_of(&o["metadata"]["creationTimestamp"], now)),
        json!(s(&st["podIP"])),
        json!(s(&o["spec"]["nodeName"])),
        json!(s(&st["nominatedNodeName"])),
        json!("<none>"),
    ]
}

/// The cells of one row, in `columns` order.
pub fn cells(plural: &str, o: &Value) -> Vec<Value> {
    let now = now_secs();
    let name = json!(o["metadata"]["name"]);
    let age = json!(age_of(&o["metadata"]["creationTimestamp"], now));
    let spec = &o["spec"];
    let st = &o["status"];
    let tpl = &spec["template"]["spec"]["containers"];
    match plural {
        "pods" => pod_cells(o, now),
        "deployments" => vec![
            name,
            json!(format!(
                "{}/{}",
                st["readyReplicas"].as_i64().unwrap_or(0),
                spec["replicas"].as_i64().unwrap_or(0)
            )),
            int(&st["updatedReplicas"]),
            int(&st["availableReplicas"]),
            age,
            json!(joined(tpl, "name")),
            json!(joined(tpl, "image")),
            json!(match_labels(&spec["selector"])),
        ],
        "replicasets" => vec![
            name,
            int(&spec["replicas"]),
            int(&st["replicas"]),
            int(&st["readyReplicas"]),
            age,
            json!(joined(tpl, "name")),
            json!(joined(tpl, "image")),
            json!(match_labels(&spec["selector"])),
        ],
        "statefulsets" => vec![
            name,
            json!(format!(
                "{}/{}",
                st["readyReplicas"].as_i64().unwrap_or(0),
                spec["replicas"].as_i64().unwrap_or(0)
            )),
            age,
            json!(joined(tpl, "name")),
            json!(joined(tpl, "image")),
        ],
        "daemonsets" => vec![
            name,
            int(&st["desiredNumberScheduled"]),
            int(&st["currentNumberScheduled"]),
            int(&st["numberReady"]),
            int(&st["updatedNumberScheduled"]),
            int(&st["numberAvailable"]),
            json!(spec["template"]["spec"]["nodeSelector"]
                .as_object()
                .map(|m| m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(","))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "<none>".into())),
            age,
            json!(joined(tpl, "name")),
            json!(joined(tpl, "image")),
            json!(match_labels(&spec["selector"])),
        ],
        "jobs" => {
            let done = st["succeeded"].as_i64().unwrap_or(0);
            let want = spec["completions"].as_i64().unwrap_or(1);
            let status = if done >= want {
                "Complete"
            } else if st["failed"].as_i64().unwrap_or(0) > 0 {
                "Failed"
            } else {
                "Running"
            };
            let start = st["startTime"].as_str().and_then(parse_rfc3339);
            let end = st["completionTime"]
                .as_str()
                .and_then(parse_rfc3339)
                .unwrap_or(now);
            vec![
                name,
                json!(status),
                json!(format!("{done}/{want}")),
                json!(start.map(|s| format_age(end - s)).unwrap_or_default()),
                age,
                json!(joined(tpl, "name")),
                json!(joined(tpl, "image")),
                json!(match_labels(&spec["selector"])),
            ]
        }
        "namespaces" => vec![name, json!(s(&st["phase"])), age],
        "nodes" => {
            let ready = st["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .is_some_and(|c| c["status"] == "True");
            let addr = |t: &str| {
                st["addresses"]
                    .as_array()
                    .and_then(|a| a.iter().find(|x| x["type"] == t))
                    .map(|x| s(&x["address"]))
                    .unwrap_or_else(|| "<none>".into())
            };
            let info = &st["nodeInfo"];
            vec![
                name,
                json!(if ready { "Ready" } else { "NotReady" }),
                json!("<none>"),
                age,
                json!(s(&info["kubeletVersion"])),
                json!(addr("InternalIP")),
                json!(addr("ExternalIP")),
                json!(s(&info["osImage"])),
                json!(s(&info["kernelVersion"])),
                json!(s(&info["containerRuntimeVersion"])),
            ]
        }
        "services" => {
            let ports = spec["ports"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP"))
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            let sel = spec["selector"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                json!(s(&spec["type"])),
                json!(s(&spec["clusterIP"])),
                json!("<none>"),
                json!(ports),
                age,
                json!(sel),
            ]
        }
        "configmaps" => vec![
            name,
            json!(
                o["data"].as_object().map_or(0, |m| m.len())
                    + o["binaryData"].as_object().map_or(0, |m| m.len())
            ),
            age,
        ],
        "secrets" => vec![
            name,
            json!(s(&o["type"])),
            json!(o["data"].as_object().map_or(0, |m| m.len())),
            age,
        ],
        "events" => events::event_cells(o, now),
        "endpointslices" => events::endpointslice_cells(o, now),
        "widgets" => {
            let mut cells = vec![name];
            for c in crd_columns() {
                let v = json_path(o, c["jsonPath"].as_str().unwrap_or(""));
                cells.push(if c["type"] == "date" {
                    json!(age_of(v, now))
                } else {
                    v.clone()
                });
            }
            cells
        }
        "customresourcedefinitions" => vec![name, json!(o["metadata"]["creationTimestamp"])],
        _ => vec![name, age],
    }
}

/// The additionalPrinterColumns of the served version of the widget CRD.
fn crd_columns() -> Vec<Value> {
    super::objects::widget_crd()["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The simple `.a.b.c` JSONPaths printer columns use.
fn json_path<'a>(o: &'a Value, path: &str) -> &'a Value {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .fold(o, |v, part| &v[part])
}

/// One table row for an object.
pub fn row(plural: &str, obj: &Value, include: IncludeObject) -> Value {
    let mut r = json!({"cells": cells(plural, obj)});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]});
        }
        IncludeObject::Object => r["object"] = obj.clone(),
    }
    r
}

/// One row as JSON bytes. With `includeObject=Object` the object is spliced
/// in from its stored bytes (`json`) instead of being cloned and serialised
/// again: printing 10k objects as Tables then costs a parse for the cells
/// rather than a parse, a deep clone and a serialisation.
pub fn row_json(plural: &str, value: &Value, json: &[u8], include: IncludeObject) -> Vec<u8> {
    if include != IncludeObject::Object {
        return serde_json::to_vec(&row(plural, value, include)).unwrap_or_default();
    }
    let cells = serde_json::to_vec(&cells(plural, value)).unwrap_or_default();
    let mut out = Vec::with_capacity(cells.len() + json.len() + 24);
    out.extend_from_slice(b"{\"cells\":");
    out.extend_from_slice(&cells);
    out.extend_from_slice(b",\"object\":");
    out.extend_from_slice(json);
    out.push(b'}');
    out
}

/// [`table`] as JSON bytes, from rows already serialised by [`row_json`].
pub fn table_json(
    plural: &str,
    rows: &[Vec<u8>],
    list_meta: &Value,
    with_columns: bool,
) -> Vec<u8> {
    let columns = if with_columns {
        columns(plural)
    } else {
        json!([])
    };
    let mut out = Vec::with_capacity(rows.iter().map(|r| r.len() + 1).sum::<usize>() + 512);
    out.extend_from_slice(b"{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
    out.extend_from_slice(&serde_json::to_vec(list_meta).unwrap_or_default());
    out.extend_from_slice(b",\"columnDefinitions\":");
    out.extend_from_slice(&serde_json::to_vec(&columns).unwrap_or_default());
    out.extend_from_slice(b",\"rows\":[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r);
    }
    out.extend_from_slice(b"]}");
    out
}

/// A Table of rows; `with_columns` false for watch events after the first.
pub fn table(plural: &str, rows: Vec<Value>, list_meta: Value, with_columns: bool) -> Value {
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": if with_columns { columns(plural) } else { json!([]) },
        "rows": rows
    })
}

#[cfg(test)]
mod tests {
    use super::super::resources::RESOURCES;
    use super::*;

    #[test]
    fn spliced_tables_equal_built_ones() {
        let obj = json!({"metadata": {"name": "x", "namespace": "n", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
        let bytes = serde_json::to_vec(&obj).unwrap();
        for include in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            let rows = vec![row_json("pods", &obj, &bytes, include)];
            let meta = json!({"resourceVersion": "5"});
            for with_columns in [true, false] {
                let spliced: Value =
                    serde_json::from_slice(&table_json("pods", &rows, &meta, with_columns))
                        .unwrap();
                let built = table(
                    "pods",
                    vec![row("pods", &obj, include)],
                    meta.clone(),
                    with_columns,
                );
                assert_eq!(spliced, built);
            }
        }
    }

    #[test]
    fn every_resource_has_matching_cells() {
        for r in RESOURCES {
            let cols = columns(&r.plural);
            let n = cols.as_array().map_or(0, Vec::len);
            assert_eq!(
                cells(&r.plural, &json!({"metadata": {"name": "x"}})).len(),
                n,
                "{}",
                r.plural
            );
        }
    }
}
