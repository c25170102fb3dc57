//! What server-side table mode costs the informer itself, natively and
//! deterministically: the same 5,000 pods streamed as plain watch events and
//! as Table events (one row each, nine cells, `includeObject=Object`) through
//! a streaming list, with a counting global allocator. The heap the informer
//! keeps after sync (store, history, cells) may grow by the cells and little
//! else, and decoding may cost a bounded factor more. Page figures (wasm
//! memory, page open) come from `cargo xtask bench --only page`.
#![cfg(not(target_arch = "wasm32"))]

use std::time::Instant;

use deltascope::informer::{Action, Informer, InformerConfig, Input, RequestId, ResourceRef};
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: deltascope::metrics::heap::CountingAllocator =
    deltascope::metrics::heap::CountingAllocator;

const PODS: usize = 5_000;

fn pod(i: usize) -> Value {
    let name = format!("web-{i:05}-7d9c8b6f5-x{:04x}", i * 7919 % 65_536);
    json!({"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": name, "namespace": format!("ns-{}", i % 7), "uid": format!("0000-{i:08}"),
        "resourceVersion": (100 + i).to_string(), "creationTimestamp": "2024-01-01T00:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "7d9c8b6f5"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c8b6f5", "uid": "rs-1", "controller": true}]},
      "spec": {"nodeName": format!("node-{}", i % 5), "containers": [
        {"name": "app", "image": "registry.example/web:1.2.3", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}, "env": [{"name": "MODE", "value": "production"}]},
        {"name": "sidecar", "image": "registry.example/proxy:4.5", "args": ["--port", "15001"]}]},
      "status": {"phase": "Running", "podIP": format!("10.1.{}.{}", i / 250, i % 250), "hostIP": "10.0.0.1",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:01:00Z"}],
        "containerStatuses": [{"name": "app", "ready": true, "restartCount": i % 3, "image": "registry.example/web:1.2.3",
          "state": {"running": {"startedAt": "2024-01-01T00:00:30Z"}}},
          {"name": "sidecar", "ready": true, "restartCount": 0, "image": "registry.example/proxy:4.5",
          "state": {"running": {"startedAt": "2024-01-01T00:00:31Z"}}}]}})
}

fn table_event(o: &Value, first: bool) -> Value {
    let columns = if first {
        json!([{"name": "Name", "type": "string", "format": "name", "priority": 0, "description": ""},
               {"name": "Ready", "type": "string", "format": "", "priority": 0, "description": ""},
               {"name": "Status", "type": "string", "format": "", "priority": 0, "description": ""},
               {"name": "Restarts", "type": "string", "format": "", "priority": 0, "description": ""},
               {"name": "Age", "type": "string", "format": "", "priority": 0, "description": ""},
               {"name": "IP", "type": "string", "format": "", "priority": 1, "description": ""},
               {"name": "Node", "type": "string", "format": "", "priority": 1, "description": ""},
               {"name": "Nominated Node", "type": "string", "format": "", "priority": 1, "description": ""},
               {"name": "Readiness Gates", "type": "string", "format": "", "priority": 1, "description": ""}])
    } else {
        json!([])
    };
    let cells = json!([
        o["metadata"]["name"],
        "2/2",
        "Running",
        "0",
        "5m",
        o["status"]["podIP"],
        o["spec"]["nodeName"],
        "<none>",
        "<none>"
    ]);
    json!({"type": "ADDED", "object": {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": o["metadata"]["resourceVersion"]},
        "columnDefinitions": columns, "rows": [{"cells": cells, "object": o}]}})
}

/// The whole streaming list as one body, in 64 KiB chunks.
fn stream(table: bool) -> Vec<u8> {
    let mut body = Vec::new();
    for i in 0..PODS {
        let o = pod(i);
        let event = if table {
            table_event(&o, i == 0)
        } else {
            json!({"type": "ADDED", "object": o})
        };
        serde_json::to_writer(&mut body, &event).expect("serialise");
        body.push(b'\n');
    }
    let end = json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "resourceVersion": (100 + PODS).to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}}});
    serde_json::to_writer(&mut body, &end).expect("serialise");
    body.push(b'\n');
    body
}

/// (bytes the informer holds after sync, ms to feed the stream)
fn run(table: bool, body: &[u8]) -> (usize, f64) {
    let before = deltascope::metrics::heap::live_bytes();
    let config = InformerConfig::new(ResourceRef::new("", "v1", "pods", true)).server_table(table);
    let mut informer = Informer::new(config);
    informer.start(0);
    let mut watch = None;
    while let Some(action) = informer.poll_action() {
        if let Action::Send { id, .. } = action {
            watch = Some(id);
        }
    }
    let id: RequestId = watch.expect("a streaming watch");
    let started = Instant::now();
    informer.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        1,
    );
    for chunk in body.chunks(64 * 1024) {
        informer.handle(Input::BodyChunk { id, bytes: chunk }, 2);
    }
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    assert!(informer.has_synced(), "synced");
    assert_eq!(informer.store().len(), PODS);
    assert_eq!(informer.server_columns().is_some(), table);
    while informer.poll_action().is_some() {}
    let held = deltascope::metrics::heap::live_bytes().saturating_sub(before);
    drop(informer);
    (held, millis)
}

#[test]
fn table_mode_keeps_little_more_than_the_cells() {
    let plain_body = stream(false);
    let table_body = stream(true);
    // warm up, then measure each mode
    run(false, &plain_body);
    let (plain_bytes, plain_ms) = run(false, &plain_body);
    let (table_bytes, table_ms) = run(true, &table_body);
    let per_pod = (table_bytes as f64 - plain_bytes as f64) / PODS as f64;
    eprintln!(
        "native, {PODS} pods streamed: plain {:.1} MB held, {plain_ms:.0} ms to feed ({:.1} MB); \
         table {:.1} MB held, {table_ms:.0} ms to feed ({:.1} MB); table mode holds {per_pod:.0} bytes/pod more",
        plain_bytes as f64 / 1e6,
        plain_body.len() as f64 / 1e6,
        table_bytes as f64 / 1e6,
        table_body.len() as f64 / 1e6,
    );
    // nine short cells and the slot for them: well under 200 bytes a pod
    assert!(
        per_pod < 200.0,
        "table mode holds {per_pod:.0} bytes/pod more"
    );
    // (the cells are the same few bytes; the objects beside them are
    // smaller since their repeating subtrees are held once: 76 B of
    // cells are 5.3% of a Pod now, where they were about 3%)
    assert!(
        table_bytes as f64 <= plain_bytes as f64 * 1.10,
        "table {table_bytes} vs plain {plain_bytes}"
    );
}
