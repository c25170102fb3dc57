//! Builders for realistic Kubernetes objects (pods with containers, statuses
//! and conditions, deployments, replicasets, services, nodes, …) as JSON that
//! deserializes into the k8s-openapi types, and the clock (timestamps are
//! written by `deltascope_facts::time`).

use std::time::{SystemTime, UNIX_EPOCH};

use deltascope_facts::time::format_rfc3339;
use serde_json::{json, Value};

/// `2026-11-23T00:45:27Z` for a unix time in seconds (the sim's times are
/// always within the years RFC 3339 can write).
pub fn rfc3339(secs: i64) -> String {
    format_rfc3339(secs).unwrap_or_default()
}

pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub fn rfc3339_now() -> String {
    rfc3339(now_secs())
}

pub fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    })
}

pub fn node(name: &str, index: usize) -> Value {
    let ip = format!("10.0.{}.{}", index / 200, 10 + index % 200);
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "e2-standard-4",
                "topology.kubernetes.io/zone": format!("europe-west1-{}", ["b", "c", "d"][index % 3]),
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
        },
        "spec": {"podCIDR": format!("10.64.{index}.0/24"), "podCIDRs": [format!("10.64.{index}.0/24")], "providerID": format!("gce://deltascope/europe-west1-b/{name}")},
        "status": {
            "capacity": {"cpu": "4", "memory": "16393244Ki", "pods": "110", "ephemeral-storage": "98831908Ki"},
            "allocatable": {"cpu": "3920m", "memory": "13252124Ki", "pods": "110", "ephemeral-storage": "47060071478"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available", "lastHeartbeatTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure", "lastHeartbeatTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available", "lastHeartbeatTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()},
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()}
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": format!("{:032x}", index + 1), "systemUUID": format!("{:08x}-0000-4000-8000-{:012x}", index, index),
                "bootID": format!("{:08x}-1111-4000-8000-{:012x}", index, index), "kernelVersion": "6.1.100+",
                "osImage": "Container-Optimized OS from Google", "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0", "operatingSystem": "linux", "architecture": "amd64"
            }
        }
    })
}

/// A deployment of the simulated workload and what its objects share.
#[derive(Debug, Clone)]
pub struct AppSpec {
    pub namespace: String,
    pub name: String,
    pub image: String,
    pub tier: String,
    pub hash: String,
    pub replicas: u32,
    pub port: u16,
}

impl AppSpec {
    pub fn rs_name(&self) -> String {
        format!("{}-{}", self.name, self.hash)
    }

    fn template_labels(&self) -> Value {
        json!({"app": self.name, "tier": self.tier, "pod-template-hash": self.hash})
    }

    fn containers(&self) -> Value {
        json!([
            {
                "name": self.name, "image": self.image, "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "http", "containerPort": self.port, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "env": [
                    {"name": "LOG_LEVEL", "value": "info"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{}-credentials", self.name), "key": "password"}}}
                ],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                    {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
                ],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
            },
            {
                "name": "log-shipper", "image": "fluent/fluent-bit:3.1.9", "imagePullPolicy": "IfNotPresent",
                "args": ["--config=/fluent-bit/etc/fluent-bit.conf"],
                "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
            }
        ])
    }

    fn pod_spec(&self) -> Value {
        json!({
            "containers": self.containers(),
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{}-config", self.name), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]}}
            ],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
            "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        })
    }

    pub fn deployment(&self, ready: u32) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": self.name, "namespace": self.namespace,
                "labels": {"app": self.name, "tier": self.tier},
                "annotations": {"deployment.kubernetes.io/revision": "1"}
            },
            "spec": {
                "replicas": self.replicas, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "selector": {"matchLabels": {"app": self.name}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "template": {"metadata": {"labels": {"app": self.name, "tier": self.tier}}, "spec": self.pod_spec()}
            },
            "status": self.deploy_status(ready)
        })
    }

    pub fn deploy_status(&self, ready: u32) -> Value {
        let mut s = json!({
            "observedGeneration": 1, "replicas": self.replicas, "updatedReplicas": self.replicas,
            "readyReplicas": ready, "availableReplicas": ready,
            "conditions": [
                {"type": "Available", "status": if ready >= self.replicas.saturating_sub(self.replicas / 4) { "True" } else { "False" },
                 "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.",
                 "lastUpdateTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": format!("ReplicaSet \"{}\" has successfully progressed.", self.rs_name()),
                 "lastUpdateTime": rfc3339_now(), "lastTransitionTime": rfc3339_now()}
            ]
        });
        if ready < self.replicas {
            s["unavailableReplicas"] = json!(self.replicas - ready);
        }
        s
    }

    pub fn replicaset(&self, deploy_uid: &str, ready: u32) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": self.rs_name(), "namespace": self.namespace,
                "labels": self.template_labels(),
                "annotations": {"deployment.kubernetes.io/desired-replicas": self.replicas.to_string(), "deployment.kubernetes.io/max-replicas": (self.replicas + 1).to_string(), "deployment.kubernetes.io/revision": "1"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": self.name, "uid": deploy_uid, "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": {"app": self.name, "pod-template-hash": self.hash}},
                "template": {"metadata": {"labels": self.template_labels()}, "spec": self.pod_spec()}
            },
            "status": self.rs_status(ready)
        })
    }

    pub fn rs_status(&self, ready: u32) -> Value {
        json!({"replicas": self.replicas, "fullyLabeledReplicas": self.replicas, "readyReplicas": ready, "availableReplicas": ready, "observedGeneration": 1})
    }

    /// A freshly scheduled pod, not yet running.
    pub fn pod(&self, suffix: &str, rs_uid: &str, node: &str, track: &str) -> Value {
        let mut labels = self.template_labels();
        labels["track"] = json!(track);
        let mut spec = self.pod_spec();
        spec["nodeName"] = json!(node);
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("{}-{}", self.rs_name(), suffix), "generateName": format!("{}-", self.rs_name()),
                "namespace": self.namespace, "labels": labels,
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/default-container": self.name},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": self.rs_name(), "uid": rs_uid, "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": spec,
            "status": {
                "phase": "Pending", "qosClass": "Burstable",
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": rfc3339_now()},
                    {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": rfc3339_now()},
                    {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [app log-shipper]", "lastProbeTime": null, "lastTransitionTime": rfc3339_now()},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [app log-shipper]", "lastProbeTime": null, "lastTransitionTime": rfc3339_now()}
                ],
                "hostIP": node_ip(node), "hostIPs": [{"ip": node_ip(node)}],
                "startTime": rfc3339_now(),
                "containerStatuses": [
                    waiting_status(&self.name, &self.image, "ContainerCreating", 0),
                    waiting_status("log-shipper", "fluent/fluent-bit:3.1.9", "ContainerCreating", 0)
                ]
            }
        })
    }

    pub fn service(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {"app": self.name}},
            "spec": {
                "type": "ClusterIP", "selector": {"app": self.name},
                "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
                "clusterIP": format!("10.96.{}.{}", self.port % 250, self.name.len() * 7 % 250),
                "clusterIPs": [format!("10.96.{}.{}", self.port % 250, self.name.len() * 7 % 250)],
                "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"
            },
            "status": {"loadBalancer": {}}
        })
    }

    pub fn configmap(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{}-config", self.name), "namespace": self.namespace, "labels": {"app": self.name}},
            "data": {"app.yaml": format!("name: {}\nport: {}\nlogLevel: info\n", self.name, self.port), "FEATURE_FLAGS": "search,checkout-v2"}
        })
    }

    pub fn secret(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": format!("{}-credentials", self.name), "namespace": self.namespace, "labels": {"app": self.name}},
            "data": {"username": "ZGVsdGFzY29wZQ==", "password": "c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"}
        })
    }
}

pub fn node_ip(node: &str) -> String {
    let n: usize = node
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    format!("10.0.{}.{}", n / 200, 10 + n % 200)
}

pub fn waiting_status(name: &str, image: &str, reason: &str, restarts: u64) -> Value {
    json!({
        "name": name, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": restarts,
        "state": {"waiting": {"reason": reason}}, "lastState": {}
    })
}

pub fn running_status(name: &str, image: &str, restarts: u64, container_id: &str) -> Value {
    json!({
        "name": name, "image": image, "ready": true, "started": true, "restartCount": restarts,
        "imageID": format!("{image}@sha256:{:064x}", image.len() * 7919),
        "containerID": format!("containerd://{container_id}"),
        "state": {"running": {"startedAt": rfc3339_now()}}, "lastState": {}
    })
}

pub fn condition(type_: &str, ok: bool) -> Value {
    json!({"type": type_, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": rfc3339_now()})
}

pub fn widget(namespace: &str, name: &str, size: u32, phase: &str) -> Value {
    let color = ["red", "green", "blue"][size as usize % 3];
    json!({
        "apiVersion": format!("{}/v1", super::resources::CRD_GROUP), "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "widgets"}},
        "spec": {"size": size, "color": color},
        "status": {"phase": phase}
    })
}

fn simple_template(app: &str, image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": app, "image": image, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30}
    })
}

pub fn statefulset(namespace: &str, name: &str, image: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}}, "template": simple_template(name, image),
                 "podManagementPolicy": "OrderedReady", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, "revisionHistoryLimit": 10},
        "status": {"replicas": replicas, "readyReplicas": replicas, "currentReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas, "observedGeneration": 1,
                   "currentRevision": format!("{name}-7d9f8b6c5d"), "updateRevision": format!("{name}-7d9f8b6c5d"), "collisionCount": 0}
    })
}

pub fn daemonset(namespace: &str, name: &str, image: &str, nodes: u32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": simple_template(name, image)["spec"]["containers"], "restartPolicy": "Always"}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}, "revisionHistoryLimit": 10},
        "status": {"desiredNumberScheduled": nodes, "currentNumberScheduled": nodes, "numberReady": nodes, "updatedNumberScheduled": nodes,
                   "numberAvailable": nodes, "numberMisscheduled": 0, "observedGeneration": 1}
    })
}

pub fn job(namespace: &str, name: &str, image: &str, done: bool, started: i64) -> Value {
    let mut tpl = simple_template(name, image);
    tpl["spec"]["restartPolicy"] = json!("Never");
    let mut status = json!({"startTime": rfc3339(started), "active": if done { 0 } else { 1 }, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}});
    if done {
        status["succeeded"] = json!(1);
        status["completionTime"] = json!(rfc3339(started + 42));
        status["conditions"] = json!([{"type": "Complete", "status": "True", "lastProbeTime": rfc3339(started + 42), "lastTransitionTime": rfc3339(started + 42)}]);
    }
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}, "creationTimestamp": rfc3339(started)},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": false,
                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "0"}}, "template": tpl},
        "status": status
    })
}

/// The CustomResourceDefinition of `widgets`; its additionalPrinterColumns
/// drive the widget Table columns.
pub fn widget_crd() -> Value {
    let group = super::resources::CRD_GROUP;
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wg"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                }}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "description": "How big the widget is", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "priority": 1, "description": "Its colour", "jsonPath": ".spec.color"},
                    {"name": "Phase", "type": "string", "description": "Lifecycle phase", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]
            }],
            "conversion": {"strategy": "None"}
        },
        "status": {
            "acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wg"]},
            "storedVersions": ["v1"],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": rfc3339_now()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": rfc3339_now()}
            ]
        }
    })
}

/// The CustomResourceDefinition of a resource added at runtime
/// (`POST /_sim/crd`): one served, stored version with an open schema, its
/// names accepted and the CRD established.
pub fn custom_resource_definition(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
) -> Value {
    let names = json!({
        "plural": plural, "singular": kind.to_ascii_lowercase(), "kind": kind,
        "listKind": format!("{kind}List")
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": names,
            "versions": [{
                "name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }],
            "conversion": {"strategy": "None"}
        },
        "status": {
            "acceptedNames": names,
            "storedVersions": [version],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": rfc3339_now()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": rfc3339_now()}
            ]
        }
    })
}
