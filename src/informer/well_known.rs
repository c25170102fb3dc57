//! Strings every Kubernetes object repeats: long field names
//! (`lastTransitionTime`, `terminationMessagePolicy`), well-known label and
//! annotation keys, and common values (`IfNotPresent`, `/dev/termination-log`).
//! [`well_known`] finds one in a fixed table so a [`super::JsonStr`] can point
//! at the program's copy instead of allocating its own: in the page a Pod
//! repeats about fifty of them.
//!
//! The table is built once (open addressing over a hash of the length and the
//! first and last eight bytes), so a lookup is two loads, a multiply and
//! usually one comparison; strings of 10 bytes or fewer never get here (they
//! are stored inline).

use std::sync::OnceLock;

/// Longer than the inline limit of a `JsonStr` in wasm32 (10 bytes); shorter
/// ones are listed anyway only if they are harmless.
static STRINGS: &[&str] = &[
    // metadata
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "resourceVersion",
    "generateName",
    "ownerReferences",
    "blockOwnerDeletion",
    "annotations",
    "managedFields",
    "fieldsType",
    "subresource",
    "apiVersion",
    // managedFields
    "f:metadata",
    "f:annotations",
    "f:labels",
    "f:ownerReferences",
    "f:spec",
    "f:status",
    "f:conditions",
    "f:containers",
    "f:containerStatuses",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl-client-side-apply",
    "kubectl-create",
    "kubectl-edit",
    "kubectl-patch",
    // Pod spec
    "containers",
    "initContainers",
    "ephemeralContainers",
    "imagePullPolicy",
    "imagePullSecrets",
    "containerPort",
    "volumeMounts",
    "volumeDevices",
    "mountPath",
    "readOnly",
    "subPath",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "httpGet",
    "tcpSocket",
    "securityContext",
    "runAsNonRoot",
    "runAsUser",
    "runAsGroup",
    "readOnlyRootFilesystem",
    "allowPrivilegeEscalation",
    "seccompProfile",
    "capabilities",
    "restartPolicy",
    "dnsPolicy",
    "schedulerName",
    "serviceAccount",
    "serviceAccountName",
    "automountServiceAccountToken",
    "enableServiceLinks",
    "preemptionPolicy",
    "priorityClassName",
    "tolerations",
    "tolerationSeconds",
    "nodeSelector",
    "affinity",
    "nodeAffinity",
    "podAntiAffinity",
    "topologySpreadConstraints",
    "topologyKey",
    "labelSelector",
    "matchLabels",
    "matchExpressions",
    "secretKeyRef",
    "configMapKeyRef",
    "fieldRef",
    "fieldPath",
    "resourceFieldRef",
    "valueFrom",
    "envFrom",
    "defaultMode",
    "serviceAccountToken",
    "expirationSeconds",
    "downwardAPI",
    "configMap",
    "persistentVolumeClaim",
    "claimName",
    "emptyDir",
    "projected",
    "ephemeral-storage",
    // Pod status
    "conditions",
    "lastProbeTime",
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastUpdateTime",
    "containerStatuses",
    "initContainerStatuses",
    "containerID",
    "restartCount",
    "lastState",
    "startedAt",
    "finishedAt",
    "exitCode",
    "allocatedResources",
    "recursiveReadOnly",
    "startTime",
    "hostIPs",
    "qosClass",
    "nominatedNodeName",
    // apps
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "updatedReplicas",
    "unavailableReplicas",
    "fullyLabeledReplicas",
    "observedGeneration",
    "collisionCount",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "minReadySeconds",
    "rollingUpdate",
    "maxUnavailable",
    "maxSurge",
    "RollingUpdate",
    "currentReplicas",
    "currentRevision",
    "updateRevision",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "volumeClaimTemplates",
    "currentNumberScheduled",
    "desiredNumberScheduled",
    "numberAvailable",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    // Service, Node, Event
    "clusterIP",
    "clusterIPs",
    "internalTrafficPolicy",
    "externalTrafficPolicy",
    "ipFamilies",
    "ipFamilyPolicy",
    "sessionAffinity",
    "loadBalancer",
    "targetPort",
    "SingleStack",
    "ClusterIP",
    "LoadBalancer",
    "allocatable",
    "architecture",
    "bootID",
    "containerRuntimeVersion",
    "kernelVersion",
    "kubeProxyVersion",
    "kubeletVersion",
    "machineID",
    "operatingSystem",
    "osImage",
    "systemUUID",
    "daemonEndpoints",
    "kubeletEndpoint",
    "involvedObject",
    "reportingComponent",
    "reportingInstance",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    // common values
    "IfNotPresent",
    "/dev/termination-log",
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "kube-root-ca.crt",
    "ClusterFirst",
    "PreemptLowerPriority",
    "default-scheduler",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "metadata.name",
    "metadata.namespace",
    "metadata.labels",
    "metadata.annotations",
    "status.podIP",
    "status.hostIP",
    "spec.nodeName",
    "spec.serviceAccountName",
    "Initialized",
    "ContainersReady",
    "PodScheduled",
    "PodReadyToStartContainers",
    "CrashLoopBackOff",
    "ContainerCreating",
    "ImagePullBackOff",
    "ErrImagePull",
    "PodInitializing",
    "RuntimeDefault",
    "FallbackToLogsOnError",
    "BestEffort",
    "Guaranteed",
    "Progressing",
    "MinimumReplicasAvailable",
    "NewReplicaSetAvailable",
    "ReplicaSetUpdated",
    "Deployment has minimum availability.",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Deployment",
    "ServiceAccount",
    "PersistentVolumeClaim",
    "kube-system",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
    "KubeletReady",
    "KubeletHasSufficientMemory",
    "KubeletHasNoDiskPressure",
    "KubeletHasSufficientPID",
    "kubelet has sufficient memory available",
    "kubelet has no disk pressure",
    "kubelet has sufficient PID available",
    "kubelet is posting ready status",
    // well-known label and annotation keys
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "helm.sh/chart",
    "pod-template-hash",
    "pod-template-generation",
    "controller-revision-hash",
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
    "controller-uid",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "kubernetes.io/metadata.name",
    "kubernetes.io/service-account.name",
    "kubernetes.io/service-account.uid",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "node-role.kubernetes.io/control-plane",
    "node.kubernetes.io/exclude-from-external-load-balancers",
    "node.alpha.kubernetes.io/ttl",
    "volumes.kubernetes.io/controller-managed-attach-detach",
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "kubectl.kubernetes.io/default-container",
    "kubectl.kubernetes.io/last-applied-configuration",
    "kubectl.kubernetes.io/restartedAt",
    "prometheus.io/scrape",
    "prometheus.io/port",
    "prometheus.io/path",
];

const SLOTS: usize = 1024;

struct Table {
    slots: Vec<Option<&'static str>>,
}

fn slot_of(text: &[u8]) -> usize {
    let len = text.len();
    let mut head = [0u8; 8];
    let mut tail = [0u8; 8];
    let n = len.min(8);
    head[..n].copy_from_slice(&text[..n]);
    tail[..n].copy_from_slice(&text[len - n..]);
    let mixed = (u64::from_le_bytes(head) ^ u64::from_le_bytes(tail).rotate_left(29))
        .wrapping_add(len as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 54) as usize % SLOTS
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut slots = vec![None; SLOTS];
        for &text in STRINGS {
            let mut slot = slot_of(text.as_bytes());
            loop {
                match slots[slot] {
                    None => {
                        slots[slot] = Some(text);
                        break;
                    }
                    Some(present) if present == text => break,
                    Some(_) => slot = (slot + 1) % SLOTS,
                }
            }
        }
        Table { slots }
    })
}

/// The program's copy of `text` if it is one of the well-known strings.
pub fn well_known(text: &str) -> Option<&'static str> {
    let slots = &table().slots;
    let mut slot = slot_of(text.as_bytes());
    loop {
        match slots[slot] {
            None => return None,
            Some(known) if known == text => return Some(known),
            Some(_) => slot = (slot + 1) % SLOTS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_listed_string_and_nothing_else() {
        for &text in STRINGS {
            assert_eq!(well_known(text), Some(text));
            let owned = text.to_string();
            // the program's copy, not the caller's
            assert!(std::ptr::eq(
                well_known(&owned).expect("listed").as_ptr(),
                text.as_ptr()
            ));
        }
        for text in [
            "",
            "lastTransitionTimes",
            "astTransitionTime",
            "LastTransitionTime",
            "nginx:1.27.2",
            "2026-11-23T22:15:08Z",
            "x",
        ] {
            assert_eq!(well_known(text), None, "{text:?}");
        }
    }

    #[test]
    fn each_string_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for text in STRINGS {
            assert!(seen.insert(text), "{text:?} is listed twice");
        }
    }

    #[test]
    fn the_table_leaves_room_for_short_probes() {
        assert!(
            STRINGS.len() * 3 < SLOTS,
            "keep the table at most a third full"
        );
    }
}
