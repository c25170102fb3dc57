//! The built-in Kubernetes resource types deltascope knows without asking
//! discovery: their group, version, plural, singular, kind, scope, short
//! names and categories, as `kubectl api-resources` lists them. The command
//! bar resolves `:deploy` with it, the resource picker offers it before
//! discovery answers, owner references (`kind: ReplicaSet`) become links
//! with it, and the simulated cluster serves exactly these (plus its CRD).

/// One resource type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinResource {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Offered in the resource picker before discovery answers.
    pub everyday: bool,
}

/// `v1` or `apps/v1`: a group and version as an object's `apiVersion`.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `pods` or `deployments.apps`: a plural qualified by its group (a CRD's name).
pub fn qualified(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

/// Whether `name` (lowercase) is a resource's plural, singular or one of its
/// short names, as kubectl and k9s accept them.
pub fn is_called(name: &str, plural: &str, singular: &str, short_names: &[&str]) -> bool {
    plural == name || singular == name || short_names.contains(&name)
}

impl BuiltinResource {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        api_version(self.group, self.version)
    }

    /// `pods` or `deployments.apps`: the plural qualified by its group.
    pub fn qualified(&self) -> String {
        qualified(self.plural, self.group)
    }

    /// The list kind: `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Whether `name` (lowercase) is this resource's plural, singular or a
    /// short name, as kubectl and k9s accept them.
    pub fn is_called(&self, name: &str) -> bool {
        is_called(name, self.plural, self.singular, self.short_names)
    }
}

const ALL: &[&str] = &["all"];

/// A namespaced, everyday resource of `group`/v1, refined by the methods below.
const fn builtin(
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
) -> BuiltinResource {
    BuiltinResource {
        group,
        version: "v1",
        plural,
        singular,
        kind,
        namespaced: true,
        short_names: &[],
        categories: &[],
        everyday: true,
    }
}

impl BuiltinResource {
    const fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }

    const fn in_categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }

    /// Not offered in the picker before discovery answers.
    const fn rare(mut self) -> Self {
        self.everyday = false;
        self
    }
}

/// The built-in types, in the order the picker offers them (workloads first).
pub const BUILTIN_RESOURCES: &[BuiltinResource] = &[
    builtin("", "pods", "pod", "Pod")
        .short(&["po"])
        .in_categories(ALL),
    builtin("apps", "deployments", "deployment", "Deployment")
        .short(&["deploy"])
        .in_categories(ALL),
    builtin("apps", "replicasets", "replicaset", "ReplicaSet")
        .short(&["rs"])
        .in_categories(ALL),
    builtin("apps", "statefulsets", "statefulset", "StatefulSet")
        .short(&["sts"])
        .in_categories(ALL),
    builtin("apps", "daemonsets", "daemonset", "DaemonSet")
        .short(&["ds"])
        .in_categories(ALL),
    builtin("batch", "jobs", "job", "Job").in_categories(ALL),
    builtin("", "services", "service", "Service")
        .short(&["svc"])
        .in_categories(ALL),
    builtin("", "configmaps", "configmap", "ConfigMap").short(&["cm"]),
    builtin("", "secrets", "secret", "Secret"),
    builtin("", "nodes", "node", "Node")
        .short(&["no"])
        .cluster_scoped(),
    builtin("", "namespaces", "namespace", "Namespace")
        .short(&["ns"])
        .cluster_scoped(),
    builtin("", "events", "event", "Event").short(&["ev"]),
    builtin(
        "discovery.k8s.io",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
    )
    .rare(),
    builtin(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
    )
    .short(&["crd", "crds"])
    .in_categories(&["api-extensions"])
    .cluster_scoped()
    .rare(),
];

/// The API groups with a dot that Kubernetes serves itself (kube-apiserver's
/// own, and metrics-server's aggregated `metrics.k8s.io`): never a
/// CustomResourceDefinition's, so there is no CRD to read their printer
/// columns from. Groups under `k8s.io` that are CRDs (`gateway.networking.k8s.io`,
/// `snapshot.storage.k8s.io`) are not in it.
pub const KUBERNETES_GROUPS: &[&str] = &[
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "metrics.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Whether `group` may be a CustomResourceDefinition's: it has a dot (the
/// core group and `apps`, `batch`, `policy`… have none) and is not one of
/// [`KUBERNETES_GROUPS`].
pub fn may_be_custom(group: &str) -> bool {
    group.contains('.') && !KUBERNETES_GROUPS.contains(&group)
}

/// The type served at `/api{s}/{group}/{version}/{plural}`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static BuiltinResource> {
    BUILTIN_RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// `pods`, `pod`, `po`, `deployments.apps`, `deploy` → the type
/// (case-insensitive; a `.group` suffix must match the group).
pub fn by_name(name: &str) -> Option<&'static BuiltinResource> {
    let name = name.to_ascii_lowercase();
    let (base, group) = match name.split_once('.') {
        Some((base, group)) => (base, Some(group)),
        None => (name.as_str(), None),
    };
    BUILTIN_RESOURCES
        .iter()
        .find(|r| group.is_none_or(|g| g == r.group) && r.is_called(base))
}

/// The type of an object of `kind` in `group` (as an owner reference's
/// `apiVersion` and `kind` name it).
pub fn by_kind(group: &str, kind: &str) -> Option<&'static BuiltinResource> {
    BUILTIN_RESOURCES
        .iter()
        .find(|r| r.group == group && r.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_kubectl_resolves_them() {
        assert_eq!(by_name("po").map(|r| r.plural), Some("pods"));
        assert_eq!(by_name("Deploy").map(|r| r.kind), Some("Deployment"));
        assert_eq!(by_name("deployments.apps").map(|r| r.group), Some("apps"));
        assert_eq!(by_name("deployments.batch"), None);
        assert_eq!(
            by_name("crds").map(|r| r.kind),
            Some("CustomResourceDefinition")
        );
        assert_eq!(by_name("nosuch"), None);
    }

    #[test]
    fn kinds_and_paths() {
        assert_eq!(
            by_kind("apps", "ReplicaSet").map(|r| r.plural),
            Some("replicasets")
        );
        assert_eq!(by_kind("", "ReplicaSet"), None);
        assert_eq!(find("", "v1", "nodes").map(|r| r.namespaced), Some(false));
        let deployments = by_name("deploy").map(|r| (r.api_version(), r.qualified()));
        assert_eq!(
            deployments,
            Some(("apps/v1".to_string(), "deployments.apps".to_string()))
        );
    }

    #[test]
    fn names_are_unambiguous() {
        for (i, a) in BUILTIN_RESOURCES.iter().enumerate() {
            for b in &BUILTIN_RESOURCES[i + 1..] {
                let names = |r: &BuiltinResource| {
                    let mut all = vec![r.plural, r.singular];
                    all.extend(r.short_names);
                    all
                };
                for name in names(a) {
                    assert!(
                        !b.is_called(name),
                        "{name} names both {} and {}",
                        a.kind,
                        b.kind
                    );
                }
            }
        }
    }

    #[test]
    fn only_a_dotted_group_kubernetes_does_not_serve_itself_may_be_a_crd() {
        for group in [
            "",
            "apps",
            "batch",
            "policy",
            "discovery.k8s.io",
            "metrics.k8s.io",
        ] {
            assert!(!may_be_custom(group), "{group:?}");
        }
        for group in [
            "demo.deltascope.dev",
            "gateway.networking.k8s.io",
            "snapshot.storage.k8s.io",
        ] {
            assert!(may_be_custom(group), "{group:?}");
        }
        // every built-in resource with a dotted group is in the list
        for r in BUILTIN_RESOURCES {
            assert!(!may_be_custom(r.group), "{}", r.kind);
        }
    }
}
