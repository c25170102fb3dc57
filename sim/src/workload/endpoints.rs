//! The endpointslice controller of the simulated cluster: each app's
//! Service has one `discovery.k8s.io/v1` EndpointSlice (labelled
//! `kubernetes.io/service-name`, owned by the Service) whose endpoints are
//! the ready pods the Service selects — address, node, `targetRef` to the
//! pod — rewritten (as manager `endpointslice-controller`) whenever the
//! workload changes one of the app's pods. Endpoints are sorted by pod name
//! so a write happens only when the set really changed.

use serde_json::{json, Value};

use super::super::managed::managers::ENDPOINTSLICES as WRITER;
use super::super::objects::AppSpec;
use super::super::resources::ENDPOINTSLICES;
use super::super::store::Store;

/// The endpoints of the ready pods among `pods` (keys) that `selector`
/// (the Service's `spec.selector`) selects.
pub(super) fn endpoints(store: &Store, pods: &[String], selector: &Value) -> Value {
    let mut out: Vec<(String, Value)> = Vec::new();
    for key in pods {
        let Some(pod) = store.get(super::super::resources::PODS, key) else {
            continue;
        };
        let sel = &pod.sel;
        let selected = selector.as_object().is_some_and(|want| {
            want.iter()
                .all(|(k, v)| sel["metadata"]["labels"].get(k) == Some(v))
        });
        let ready = sel["status"]["containerStatuses"][0]["ready"] == true;
        let Some(ip) = sel["status"]["podIP"].as_str() else {
            continue;
        };
        if !selected || !ready {
            continue;
        }
        let meta = &sel["metadata"];
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        out.push((
            name.clone(),
            json!({
                "addresses": [ip],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": sel["spec"]["nodeName"],
                "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": name, "uid": meta["uid"]}
            }),
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(out.into_iter().map(|(_, e)| e).collect())
}

/// A new EndpointSlice `name` for the app's Service (as stored, with its uid).
pub(super) fn slice(spec: &AppSpec, service: &Value, name: &str, endpoints: Value) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": name, "generateName": format!("{}-", spec.name), "namespace": spec.namespace,
            "labels": {
                "kubernetes.io/service-name": spec.name,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                "app": spec.name
            },
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": spec.name,
                "uid": service["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": spec.port, "protocol": "TCP"}]
    })
}

/// Rewrites the slice's endpoints; 1 if that was a write.
pub(super) fn sync(store: &Store, slice_key: &str, endpoints: Value) -> u64 {
    let before = store.get(ENDPOINTSLICES, slice_key).map(|o| o.rev);
    let after = store.update(ENDPOINTSLICES, slice_key, WRITER, |v| {
        v["endpoints"] = endpoints;
    });
    u64::from(after.map(|o| o.rev) != before)
}
