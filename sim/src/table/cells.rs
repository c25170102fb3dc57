//! The cells of each kind's Table row, in `columns` order, as the
//! apiserver's printers write them (READY as `1/2`, RESTARTS with the last
//! restart's age, a job's DURATION, a selector as `k=v,…`). Split from
//! `table` so that each kind's cells stay short.

use deltascope_facts::time::{format_age, parse_rfc3339};
use serde_json::{json, Value};

use super::super::objects::now_secs;
use super::text::{age_of, s};
use super::{crd_columns, events, json_path};

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

/// A map of strings as `k=v,…` (`<none>` when empty or absent): a
/// selector, a node selector.
fn pairs(map: &Value) -> String {
    map.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".to_string())
}

fn match_labels(sel: &Value) -> String {
    pairs(&sel["matchLabels"])
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
    let st = &o["status"];
    match plural {
        "pods" => pod_cells(o, now),
        "deployments" | "replicasets" | "statefulsets" | "daemonsets" => {
            workload_cells(plural, o, name, age)
        }
        "jobs" => job_cells(o, name, age, now),
        "namespaces" => vec![name, json!(s(&st["phase"])), age],
        "nodes" => node_cells(o, name, age),
        "services" => service_cells(o, name, age),
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
        "widgets" => widget_cells(o, name, now),
        "customresourcedefinitions" => vec![name, json!(o["metadata"]["creationTimestamp"])],
        _ => vec![name, age],
    }
}

/// Deployments, replicasets, statefulsets and daemonsets: counts, then
/// the template's containers, images and selector.
fn workload_cells(plural: &str, o: &Value, name: Value, age: Value) -> Vec<Value> {
    let spec = &o["spec"];
    let st = &o["status"];
    let tpl = &spec["template"]["spec"]["containers"];
    match plural {
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
        _ => vec![
            name,
            int(&st["desiredNumberScheduled"]),
            int(&st["currentNumberScheduled"]),
            int(&st["numberReady"]),
            int(&st["updatedNumberScheduled"]),
            int(&st["numberAvailable"]),
            json!(pairs(&spec["template"]["spec"]["nodeSelector"])),
            age,
            json!(joined(tpl, "name")),
            json!(joined(tpl, "image")),
            json!(match_labels(&spec["selector"])),
        ],
    }
}

fn job_cells(o: &Value, name: Value, age: Value, now: i64) -> Vec<Value> {
    let spec = &o["spec"];
    let st = &o["status"];
    let tpl = &spec["template"]["spec"]["containers"];
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

fn node_cells(o: &Value, name: Value, age: Value) -> Vec<Value> {
    let st = &o["status"];
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

fn service_cells(o: &Value, name: Value, age: Value) -> Vec<Value> {
    let spec = &o["spec"];
    let ports = spec["ports"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let sel = pairs(&spec["selector"]);
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

/// Name, then the widget CRD's additionalPrinterColumns (a date as an age).
fn widget_cells(o: &Value, name: Value, now: i64) -> Vec<Value> {
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
