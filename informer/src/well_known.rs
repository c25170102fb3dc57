//! Strings every Kubernetes object repeats: field names (`name`,
//! `lastTransitionTime`, `terminationMessagePolicy`), well-known label and
//! annotation keys, and common values (`True`, `IfNotPresent`,
//! `/dev/termination-log`). [`id_of`] gives each a small number so the
//! compact JSON form ([`super::json`]) stores it in one or two bytes instead
//! of its text: a Pod repeats about two hundred of them.
//!
//! The table is built once (open addressing over a hash of the length and the
//! first and last eight bytes), so a lookup is two loads, a multiply and
//! usually one comparison.
//!
//! A stored compact tape means something only to a build with the same
//! table: [`fingerprint`] tells the tables apart.

use std::hash::Hasher;
use std::sync::OnceLock;

use crate::key_hash::KeyHasher;

/// Strings many objects repeat, stored by the compact form in two bytes.
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

/// The strings nearly every object repeats many times, short or not; the
/// first [`ONE_BYTE_IDS`] ids, which the compact form stores in one byte.
static FREQUENT: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "labels",
    "metadata",
    "spec",
    "status",
    "kind",
    "apiVersion",
    "type",
    "True",
    "False",
    "true",
    "false",
    "v1",
    "key",
    "value",
    "image",
    "imageID",
    "memory",
    "cpu",
    "path",
    "port",
    "ports",
    "http",
    "https",
    "scheme",
    "HTTP",
    "protocol",
    "TCP",
    "resources",
    "limits",
    "requests",
    "effect",
    "operator",
    "Exists",
    "NoExecute",
    "items",
    "ready",
    "started",
    "state",
    "running",
    "ip",
    "Pod",
    "app",
    "env",
    "args",
    "nodeName",
    "priority",
    "generation",
    "reason",
    "message",
    "Running",
    "Ready",
    "phase",
    "containers",
    "conditions",
    "Manager",
    "Update",
    "manager",
    "operation",
    "time",
    "default",
    "Always",
];

/// Ids below this are stored in one byte by the compact form.
pub const ONE_BYTE_IDS: u16 = 64;

const SLOTS: usize = 1024;

struct Table {
    /// Index into [`FREQUENT`] followed by [`STRINGS`].
    slots: Vec<Option<u16>>,
    all: Vec<&'static str>,
    /// Longer text is never well known (most of an object's long strings).
    longest: usize,
    /// See [`fingerprint`].
    fingerprint: u64,
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
        let all: Vec<&'static str> = FREQUENT.iter().chain(STRINGS).copied().collect();
        let mut slots = vec![None; SLOTS];
        for (id, &text) in all.iter().enumerate() {
            let mut slot = slot_of(text.as_bytes());
            loop {
                match slots[slot] {
                    None => {
                        slots[slot] = u16::try_from(id).ok();
                        break;
                    }
                    Some(present) if all[usize::from(present)] == text => break,
                    Some(_) => slot = (slot + 1) % SLOTS,
                }
            }
        }
        let longest = all.iter().map(|s| s.len()).max().unwrap_or(0);
        let fingerprint = fingerprint_of(&all);
        Table {
            slots,
            all,
            longest,
            fingerprint,
        }
    })
}

/// The id of `text` if it is one of the well-known strings.
pub fn id_of(text: &[u8]) -> Option<u16> {
    let table = table();
    if text.len() > table.longest {
        return None;
    }
    let mut slot = slot_of(text);
    loop {
        match table.slots[slot] {
            None => return None,
            Some(id) if table.all[usize::from(id)].as_bytes() == text => return Some(id),
            Some(_) => slot = (slot + 1) % SLOTS,
        }
    }
}

/// The string with this id.
pub fn by_id(id: u16) -> Option<&'static str> {
    table().all.get(usize::from(id)).copied()
}

/// How many strings the table has: ids are `0..count()`.
pub fn count() -> usize {
    table().all.len()
}

/// A hash of the table's strings in id order. Compact tapes refer to these
/// strings by id, so a tape stored by a build with another fingerprint is in
/// another format: drop it rather than read it.
pub fn fingerprint() -> u64 {
    table().fingerprint
}

/// The crate's own hasher ([`KeyHasher`]: little-endian words, the same on
/// wasm32 and natively) over the count, then each string's length and bytes.
/// (A change to that hasher changes the fingerprint too: stored tapes are
/// then dropped once, as after a change to the table.)
fn fingerprint_of(all: &[&str]) -> u64 {
    let mut hasher = KeyHasher::default();
    hasher.write(&(all.len() as u64).to_le_bytes());
    for text in all {
        hasher.write(&(text.len() as u64).to_le_bytes());
        hasher.write(text.as_bytes());
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_listed_string_and_nothing_else() {
        for &text in FREQUENT.iter().chain(STRINGS) {
            let id = id_of(text.as_bytes()).expect("listed");
            assert_eq!(by_id(id), Some(text));
        }
        for text in [
            "",
            "lastTransitionTimes",
            "astTransitionTime",
            "LastTransitionTime",
            "nginx:1.27.2",
            "2026-11-23T22:15:08Z",
            "x",
            "nam",
        ] {
            assert_eq!(id_of(text.as_bytes()), None, "{text:?}");
        }
        assert_eq!(by_id(u16::MAX), None);
    }

    #[test]
    fn each_string_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for text in FREQUENT.iter().chain(STRINGS) {
            assert!(seen.insert(text), "{text:?} is listed twice");
        }
    }

    #[test]
    fn the_frequent_strings_fit_the_one_byte_ids() {
        assert!(FREQUENT.len() <= usize::from(ONE_BYTE_IDS));
        assert_eq!(id_of(b"name"), Some(0));
    }

    #[test]
    fn the_fingerprint_follows_the_strings_and_their_order() {
        let all: Vec<&str> = FREQUENT.iter().chain(STRINGS).copied().collect();
        assert_eq!(fingerprint(), fingerprint_of(&all));
        assert_eq!(count(), all.len());
        let mut swapped = all.clone();
        swapped.swap(3, 4);
        let mut fewer = all.clone();
        fewer.pop();
        let mut renamed = all.clone();
        renamed[7] = "kinds";
        for other in [swapped, fewer, renamed] {
            assert_ne!(fingerprint_of(&other), fingerprint(), "{:?}", &other[..8]);
        }
        // where one string ends and the next starts counts too
        assert_ne!(fingerprint_of(&["ab", "c"]), fingerprint_of(&["a", "bc"]));
    }

    #[test]
    fn the_table_leaves_room_for_short_probes() {
        assert!(
            (FREQUENT.len() + STRINGS.len()) * 3 < SLOTS,
            "keep the table at most a third full"
        );
        assert!(
            FREQUENT.len() + STRINGS.len() < 8 * 256,
            "ids fit the two-byte form"
        );
    }
}
