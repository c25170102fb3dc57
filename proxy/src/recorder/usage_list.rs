//! A metrics API answer (`PodMetricsList` or `NodeMetricsList`, as
//! metrics-server writes it) read for the usage sampler, with no I/O: each
//! object's CPU (nanocores) and memory (bytes), a pod's containers apart
//! and summed as `kubectl top` sums them, and the window the answer
//! measured (its newest `timestamp` and that item's `window`). Quantities
//! are read by `deltascope_facts::quantity`, as the page reads them; the
//! strings are borrowed from the body while it is read, so a list of 100k
//! pods is not held twice as owned text.

use std::borrow::Cow;

use deltascope_facts::quantity::{parse_quantity, Quantity};
use deltascope_facts::time::parse_rfc3339_millis;
use deltascope_history::ContainerUsage;
use serde::Deserialize;

/// One measured object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// Empty for a node.
    pub namespace: String,
    pub name: String,
    pub cpu_nanocores: i64,
    pub memory_bytes: i64,
    /// A pod's.
    pub containers: Vec<ContainerUsage>,
}

/// One answer: its window and what it measured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsWindow {
    /// The newest item's `timestamp`, ms since the Unix epoch (`None`: it
    /// measured nothing).
    pub at_ms: Option<i64>,
    /// That item's `window`, ms.
    pub window_ms: Option<i64>,
    pub objects: Vec<Measured>,
    /// Items left out: a quantity or time that could not be read.
    pub unreadable: usize,
}

/// Why an answer is not a metrics list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the metrics API's answer is not a metrics list: {0}")]
pub struct NotAList(pub String);

#[derive(Deserialize)]
struct ListBody<'a> {
    #[serde(borrow, default)]
    items: Vec<ItemBody<'a>>,
}

#[derive(Deserialize)]
struct ItemBody<'a> {
    #[serde(borrow)]
    metadata: MetadataBody<'a>,
    #[serde(borrow, default)]
    timestamp: Cow<'a, str>,
    #[serde(borrow, default)]
    window: Cow<'a, str>,
    #[serde(borrow, default)]
    containers: Vec<ContainerBody<'a>>,
    #[serde(borrow, default)]
    usage: Option<UsageBody<'a>>,
}

#[derive(Deserialize)]
struct MetadataBody<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ContainerBody<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    usage: UsageBody<'a>,
}

#[derive(Deserialize, Default)]
struct UsageBody<'a> {
    #[serde(borrow, default)]
    cpu: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    memory: Option<Cow<'a, str>>,
}

fn amount(text: Option<&Cow<'_, str>>, of: fn(Quantity) -> i128) -> Option<i64> {
    match text {
        None => Some(0),
        Some(text) => parse_quantity(text)
            .ok()
            .map(|q| i64::try_from(of(q).max(0)).unwrap_or(i64::MAX)),
    }
}

/// CPU as nanocores, memory as bytes (rounded up, as `Value()`).
fn usage_of(body: &UsageBody<'_>) -> Option<(i64, i64)> {
    Some((
        amount(body.cpu.as_ref(), Quantity::nanos)?,
        amount(body.memory.as_ref(), Quantity::value)?,
    ))
}

fn measured(item: &ItemBody<'_>) -> Option<Measured> {
    let (mut cpu, mut memory) = item.usage.as_ref().map_or(Some((0, 0)), usage_of)?;
    let mut containers = Vec::with_capacity(item.containers.len());
    for container in &item.containers {
        let (c, m) = usage_of(&container.usage)?;
        cpu = cpu.saturating_add(c);
        memory = memory.saturating_add(m);
        containers.push(ContainerUsage {
            name: container.name.to_string(),
            cpu_nanocores: c,
            memory_bytes: m,
        });
    }
    Some(Measured {
        namespace: item
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .to_string(),
        name: item.metadata.name.to_string(),
        cpu_nanocores: cpu,
        memory_bytes: memory,
        containers,
    })
}

/// Reads a metrics list `body`.
pub fn parse_metrics_list(body: &[u8]) -> Result<MetricsWindow, NotAList> {
    let list: ListBody<'_> = serde_json::from_slice(body).map_err(|e| NotAList(e.to_string()))?;
    let mut window = MetricsWindow {
        objects: Vec::with_capacity(list.items.len()),
        ..MetricsWindow::default()
    };
    for item in &list.items {
        let (Some(at_ms), Some(object)) = (parse_rfc3339_millis(&item.timestamp), measured(item))
        else {
            window.unreadable += 1;
            continue;
        };
        if window.at_ms.is_none_or(|newest| at_ms > newest) {
            window.at_ms = Some(at_ms);
            window.window_ms = deltascope_facts::time::parse_go_duration_ms(&item.window);
        }
        window.objects.push(object);
    }
    Ok(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_list_is_read_with_its_containers_and_newest_window() {
        let body = br#"{"kind":"PodMetricsList","items":[
          {"metadata":{"name":"web-0","namespace":"shop"},"timestamp":"2026-01-01T00:00:10Z","window":"15s",
           "containers":[{"name":"main","usage":{"cpu":"12345678n","memory":"80Mi"}},
                         {"name":"proxy","usage":{"cpu":"1m","memory":"1Ki"}}]},
          {"metadata":{"name":"web-1","namespace":"shop"},"timestamp":"2026-01-01T00:00:25Z","window":"1m0s",
           "containers":[{"name":"main","usage":{"cpu":"2","memory":"1.5Gi"}}]},
          {"metadata":{"name":"bad","namespace":"shop"},"timestamp":"2026-01-01T00:00:25Z","window":"15s",
           "containers":[{"name":"main","usage":{"cpu":"lots","memory":"1Ki"}}]}]}"#;
        let window = parse_metrics_list(body).unwrap();
        assert_eq!(window.unreadable, 1);
        assert_eq!(window.window_ms, Some(60_000));
        let newest = parse_rfc3339_millis("2026-01-01T00:00:25Z");
        assert_eq!(window.at_ms, newest);
        let web0 = &window.objects[0];
        assert_eq!(web0.cpu_nanocores, 12_345_678 + 1_000_000);
        assert_eq!(web0.memory_bytes, (80 << 20) + 1024);
        assert_eq!(web0.containers[1].name, "proxy");
        assert_eq!(window.objects[1].memory_bytes, 3 << 29);
        let nodes = br#"{"items":[{"metadata":{"name":"node-1"},"timestamp":"2026-01-01T00:00:10Z",
          "window":"10s","usage":{"cpu":"250m","memory":"2Gi"}}]}"#;
        let window = parse_metrics_list(nodes).unwrap();
        assert_eq!(window.objects[0].namespace, "");
        assert_eq!(window.objects[0].cpu_nanocores, 250_000_000);
        assert!(window.objects[0].containers.is_empty());
        assert!(parse_metrics_list(b"<html>").is_err());
        assert_eq!(parse_metrics_list(b"{}").unwrap().at_ms, None);
    }
}
