//! A document with shared subtrees reads, compares, prints, patches and
//! stores exactly as the same document without them.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::super::patch::tests::json_value;
use super::super::{patch_between, JsonValue};

/// A Pod-like object holding `fields` as its managers' sets and
/// `containers` as its containers (each padded past `MIN_SHARED`).
fn object_with(fields: &Value, containers: &Value, status: &Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": "7c9d8f6b5", "tier": "frontend", "team": "payments", "version": "1.2.3-release", "x": fields},
            "annotations": {"kubectl.kubernetes.io/default-container": "web", "team.example/owner": "payments-platform-oncall"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7c9d8f6b5",
                                 "uid": "5f1c2a9e-4b7d-4f0e-9a61-3c2b8d7e6f10", "controller": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}}, "f:x": fields}},
                {"manager": "kubelet", "operation": "Update", "subresource": "status",
                 "fieldsV1": {"f:status": {
                    "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                    "f:phase": {},
                    "f:podIPs": {"k:{\"ip\":\"10.64.15.65\"}": {".": {}, "f:ip": {}}}},
                  "f:y": status}},
                {"manager": "tiny", "fieldsV1": {}}
            ]
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "web", "image": "registry.example/team/web:1.2.3", "imagePullPolicy": "IfNotPresent", "x": containers}],
            "tolerations": [{"key": "example.com/dedicated", "operator": "Equal", "value": "payments-platform", "effect": "NoSchedule"}],
            "securityContext": {"runAsNonRoot": true}
        },
        "status": {"phase": "Running", "x": status, "containerStatuses": [{
            "name": "web", "containerID": "containerd://4f0e9a613c2b",
            "imageID": "registry.example/team/web:1.2.3@sha256:3c2b8d7e6f105f1c2a9e4b7d4f0e9a613c2b8d7e6f105f1c2a9e4b7d4f0e9a61"}]}
    })
}

fn shared(value: &Value) -> JsonValue {
    let shared = JsonValue::from(value).with_shared_subtrees();
    assert!(shared.holds_shared(), "{value}");
    shared
}

#[test]
fn a_pods_sets_and_template_parts_are_held_once_for_every_copy() {
    let value = object_with(&json!(1), &json!("a"), &json!(null));
    // another Pod of the same template, with its own IP
    let mut other = value.clone();
    other["metadata"]["managedFields"][1]["fieldsV1"]["f:status"]["f:podIPs"] =
        json!({"k:{\"ip\":\"10.64.15.66\"}": {".": {}, "f:ip": {}}});
    other["status"]["containerStatuses"][0]["containerID"] = json!("containerd://9a613c2b4f0e");
    let (a, b) = (shared(&value), shared(&other));
    let plain = JsonValue::from(&value);
    let pointers = [
        "/metadata/labels",
        "/metadata/annotations",
        "/metadata/ownerReferences",
        "/metadata/managedFields/0/fieldsV1",
        "/metadata/managedFields/1/fieldsV1/f:status/f:conditions",
        "/spec/containers",
        "/spec/tolerations",
        "/status/containerStatuses/0/imageID",
    ];
    for pointer in pointers {
        let (x, y) = (a.pointer(pointer).unwrap(), b.pointer(pointer).unwrap());
        assert!(std::ptr::eq(x.bytes, y.bytes), "{pointer} is one buffer");
        assert_eq!(x.bytes, plain.pointer(pointer).unwrap().bytes, "{pointer}");
    }
    // too small to be worth a reference: left in place
    let security = a.pointer("/spec/securityContext").unwrap();
    assert!(!std::ptr::eq(
        security.bytes,
        b.pointer("/spec/securityContext").unwrap().bytes
    ));
    assert_eq!(
        a.pointer("/metadata/managedFields/2/fieldsV1")
            .unwrap()
            .to_json(),
        json!({})
    );
    let saved: usize = pointers
        .iter()
        .map(|p| plain.pointer(p).unwrap().bytes.len() - super::super::reference::SHARED_LEN)
        .sum();
    // (and the lengths of the containers around them may take a byte less)
    assert!(plain.compact_len() - a.compact_len() >= saved);
    assert!(a.held_bytes() < plain.held_bytes());
    // the Pod's own part of the status set stays in its tape
    assert_eq!(
        b.pointer("/metadata/managedFields/1/fieldsV1/f:status/f:podIPs")
            .unwrap()
            .to_json(),
        other["metadata"]["managedFields"][1]["fieldsV1"]["f:status"]["f:podIPs"]
    );
    assert_eq!(b.to_json(), other);
}

#[test]
fn an_object_without_such_subtrees_is_kept_as_it_is() {
    for value in [
        json!({"metadata": {"name": "cm"}, "data": {"a": "b"}}),
        json!([1, 2]),
        json!("text"),
        json!({"spec": {"containers": "not an array"}}),
        json!({"spec": {"small": {"a": 1}, "nodeName": "a string however long it may be, of many bytes"}}),
    ] {
        let kept = JsonValue::from(&value).with_shared_subtrees();
        assert!(!kept.holds_shared());
        assert_eq!(kept.to_json(), value);
    }
}

#[test]
fn a_part_copied_out_outlives_the_document_it_came_from() {
    let value = object_with(&json!({"f:z": {}}), &json!([1, 2, 3]), &json!(true));
    let document = shared(&value);
    let metadata = document.get("metadata").unwrap().to_owned_value();
    let whole = document.root().to_owned_value();
    drop(document);
    assert!(!metadata.holds_shared() && !whole.holds_shared());
    assert_eq!(metadata.to_json(), value["metadata"]);
    assert_eq!(whole.to_json(), value);
}

#[test]
fn a_stored_document_is_the_plain_tape_and_reads_back() {
    let value = object_with(&json!("é"), &json!({"deep": [{"a": 1.5}]}), &json!(-4));
    let document = shared(&value);
    let plain = JsonValue::from(&value);
    assert_eq!(&*document.compact_bytes(), &*plain.compact_bytes());
    let back = JsonValue::from_compact_slice(&document.compact_bytes()).unwrap();
    assert!(!back.holds_shared());
    assert_eq!(back, document);
    // a shared tape as held is refused as stored bytes: its references
    // would be addresses in another process
    assert!(JsonValue::from_compact_slice(&document.tape).is_err());
}

proptest! {
    /// Every reader sees a document with shared subtrees as the plain one:
    /// its value, text, equality, the patch to another document and the
    /// patch applied to it.
    #[test]
    fn shared_and_plain_documents_read_the_same(
        fields in json_value(), containers in json_value(), status in json_value(),
        other_fields in json_value(), other_status in json_value(),
    ) {
        let before = object_with(&fields, &containers, &status);
        let after = object_with(&other_fields, &containers, &other_status);
        let (plain_before, plain_after) = (JsonValue::from(&before), JsonValue::from(&after));
        let (shared_before, shared_after) = (shared(&before), shared(&after));

        prop_assert_eq!(shared_before.to_json(), before.clone());
        prop_assert_eq!(shared_before.to_string(), plain_before.to_string());
        prop_assert!(shared_before == plain_before);
        prop_assert_eq!(shared_before == shared_after, before == after);
        prop_assert_eq!(&*shared_before.compact_bytes(), &*plain_before.compact_bytes());

        let patch = patch_between(shared_before.root(), shared_after.root());
        prop_assert_eq!(
            &patch,
            &patch_between(plain_before.root(), plain_after.root()),
            "the same patch"
        );
        let patch = JsonValue::parse(&patch).unwrap();
        let applied = shared_before.apply_patch(&patch).unwrap();
        prop_assert_eq!(applied.to_json(), after);
        // (an added member goes last: the text is the plain document's
        // with the same patch applied)
        prop_assert_eq!(
            applied.to_string(),
            plain_before.apply_patch(&patch).unwrap().to_string()
        );
    }
}
