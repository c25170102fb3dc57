//! Recorded watch streams shared by the benches: ConfigMaps (~300 B each)
//! and realistic Pods (~4 KB each, with managedFields, containers and
//! status), as the API server sends them (one JSON event per line).

#![allow(dead_code)]

use serde_json::{json, Value};

pub fn configmap(i: usize, rv: u64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm-{i}"), "namespace": format!("ns-{}", i % 10),
            "uid": format!("3f0c2c7e-8a51-4b7f-9d7e-{:012}", i),
            "resourceVersion": rv.to_string(), "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "bench", "shard": (i % 4).to_string()}
        },
        "data": {"key": format!("value-{rv}"), "config.yaml": "replicas: 3\nmode: fast\n"}
    })
}

pub fn pod(i: usize, rv: u64) -> Value {
    let name = format!("web-7d9f8c6b5-{i:05}");
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": "web-7d9f8c6b5-", "namespace": format!("team-{}", i % 20),
            "uid": format!("a1b2c3d4-e5f6-4a5b-8c9d-{:012}", i), "resourceVersion": rv.to_string(),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5", "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8c6b5",
                "uid": format!("rs-{}", i % 50), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                   "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {}, "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:05Z", "subresource": "status",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "containers": [{
                "name": "web", "image": "registry.example.com/team/web:1.27.3", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "nodeName": format!("node-{}", i % 30), "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": "default",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}]
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.12", "podIP": format!("10.244.{}.{}", i % 250, i % 200), "podIPs": [{"ip": "10.244.1.7"}],
            "qosClass": "Burstable", "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:04Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:04Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/team/web:1.27.3", "imageID": "registry.example.com/team/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "containerID": "containerd://fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
                "lastState": {}, "state": {"running": {"startedAt": "2026-01-01T00:00:03Z"}}}]
        }
    })
}

/// `n` objects ADDED, then each MODIFIED twice, then a quarter DELETED.
pub fn stream(n: usize, make: fn(usize, u64) -> Value) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut rv = 1000u64;
    let mut lines = 0;
    let push = |kind: &str, v: Value, out: &mut Vec<u8>| {
        serde_json::to_writer(&mut *out, &json!({"type": kind, "object": v})).unwrap_or_default();
        out.push(b'\n');
    };
    for i in 0..n {
        rv += 1;
        push("ADDED", make(i, rv), &mut out);
        lines += 1;
    }
    for _ in 0..2 {
        for i in 0..n {
            rv += 1;
            push("MODIFIED", make(i, rv), &mut out);
            lines += 1;
        }
    }
    for i in (0..n).step_by(4) {
        rv += 1;
        push("DELETED", make(i, rv), &mut out);
        lines += 1;
    }
    (out, lines)
}
