//! Server-side printing of Events of either API (the columns `kubectl get
//! events` shows, read from `involvedObject` or `regarding`, `message` or
//! `note`, …) and EndpointSlices (ADDRESSTYPE, PORTS, ENDPOINTS as kubectl
//! prints them).

use serde_json::{json, Value};

use super::text::{age_of, s};

/// The cells of an Event, core/v1 or events.k8s.io/v1: they print alike
/// (the apiserver has one internal type for both).
pub(super) fn event_cells(o: &Value, now: i64) -> Vec<Value> {
    let name = json!(o["metadata"]["name"]);
    let either = |core: &str, v1: &str| {
        if o[core].is_null() {
            o[v1].clone()
        } else {
            o[core].clone()
        }
    };
    let inv = either("involvedObject", "regarding");
    let source = either("source", "deprecatedSource");
    let last = either("lastTimestamp", "deprecatedLastTimestamp");
    let last = if last.is_null() {
        o["eventTime"].clone()
    } else {
        last
    };
    vec![
        json!(age_of(&last, now)),
        json!(s(&o["type"])),
        json!(s(&o["reason"])),
        json!(format!(
            "{}/{}",
            inv["kind"].as_str().unwrap_or("").to_lowercase(),
            inv["name"].as_str().unwrap_or("")
        )),
        json!(inv["fieldPath"].as_str().unwrap_or("")),
        json!(format!(
            "{}, {}",
            source["component"].as_str().unwrap_or(""),
            source["host"].as_str().unwrap_or("")
        )),
        json!(s(&either("message", "note"))),
        json!(age_of(
            &either("firstTimestamp", "deprecatedFirstTimestamp"),
            now
        )),
        json!(either("count", "deprecatedCount")
            .as_i64()
            .unwrap_or(1)
            .to_string()),
        name,
    ]
}

/// The cells of an EndpointSlice.
pub(super) fn endpointslice_cells(o: &Value, now: i64) -> Vec<Value> {
    vec![
        json!(o["metadata"]["name"]),
        json!(s(&o["addressType"])),
        json!(slice_ports(&o["ports"])),
        json!(slice_endpoints(&o["endpoints"])),
        json!(age_of(&o["metadata"]["creationTimestamp"], now)),
    ]
}

/// kubectl's PORTS of an EndpointSlice: the port numbers, `<unset>` for none.
fn slice_ports(ports: &Value) -> String {
    let ports: Vec<String> = ports
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| match p["port"].as_i64() {
                    Some(n) => n.to_string(),
                    None => "<unset>".to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    if ports.is_empty() {
        "<unset>".to_string()
    } else {
        ports.join(",")
    }
}

/// kubectl's ENDPOINTS of an EndpointSlice: the first three addresses and
/// how many more, `<unset>` for none.
fn slice_endpoints(endpoints: &Value) -> String {
    let addresses: Vec<&str> = endpoints
        .as_array()
        .map(|es| {
            es.iter()
                .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
                .collect()
        })
        .unwrap_or_default();
    match addresses.len() {
        0 => "<unset>".to_string(),
        n if n > 3 => format!("{} + {} more...", addresses[..3].join(","), n - 3),
        _ => addresses.join(","),
    }
}
