//! The catalogue of resource types the simulated cluster serves: group,
//! version, plural, kind, scope, short names. Discovery, routing and the store
//! all index resources by their position in [`RESOURCES`].

/// One served resource type.
#[derive(Debug)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
}

impl ResourceType {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`: the name used by the digest and the control API.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

/// Index into [`RESOURCES`].
pub type ResIdx = usize;

const ALL: &[&str] = &["all"];

macro_rules! res {
    ($g:expr, $v:expr, $p:expr, $s:expr, $k:expr, $ns:expr, $short:expr, $cat:expr) => {
        ResourceType {
            group: $g,
            version: $v,
            plural: $p,
            singular: $s,
            kind: $k,
            namespaced: $ns,
            short_names: $short,
            categories: $cat,
        }
    };
}

/// The group of the one custom resource the simulated cluster serves.
pub const CRD_GROUP: &str = "demo.deltascope.dev";

pub const RESOURCES: &[ResourceType] = &[
    res!(
        "",
        "v1",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &[]
    ),
    res!("", "v1", "nodes", "node", "Node", false, &["no"], &[]),
    res!("", "v1", "pods", "pod", "Pod", true, &["po"], ALL),
    res!(
        "",
        "v1",
        "services",
        "service",
        "Service",
        true,
        &["svc"],
        ALL
    ),
    res!(
        "",
        "v1",
        "configmaps",
        "configmap",
        "ConfigMap",
        true,
        &["cm"],
        &[]
    ),
    res!("", "v1", "secrets", "secret", "Secret", true, &[], &[]),
    res!("", "v1", "events", "event", "Event", true, &["ev"], &[]),
    res!(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
        &["deploy"],
        ALL
    ),
    res!(
        "apps",
        "v1",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        true,
        &["rs"],
        ALL
    ),
    res!(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        true,
        &["sts"],
        ALL
    ),
    res!(
        "apps",
        "v1",
        "daemonsets",
        "daemonset",
        "DaemonSet",
        true,
        &["ds"],
        ALL
    ),
    res!("batch", "v1", "jobs", "job", "Job", true, &[], ALL),
    res!(
        CRD_GROUP,
        "v1",
        "widgets",
        "widget",
        "Widget",
        true,
        &["wg"],
        &[]
    ),
    res!(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["api-extensions"]
    ),
];

pub const NAMESPACES: ResIdx = 0;
pub const NODES: ResIdx = 1;
pub const PODS: ResIdx = 2;
pub const SERVICES: ResIdx = 3;
pub const CONFIGMAPS: ResIdx = 4;
pub const SECRETS: ResIdx = 5;
pub const EVENTS: ResIdx = 6;
pub const DEPLOYMENTS: ResIdx = 7;
pub const REPLICASETS: ResIdx = 8;
pub const STATEFULSETS: ResIdx = 9;
pub const DAEMONSETS: ResIdx = 10;
pub const JOBS: ResIdx = 11;
pub const WIDGETS: ResIdx = 12;
pub const CRDS: ResIdx = 13;

/// The resource at `/api{s}/{group}/{version}/{plural}`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<ResIdx> {
    RESOURCES
        .iter()
        .position(|r| r.group == group && r.version == version && r.plural == plural)
}

/// `pods`, `deployments.apps`, `deployment`, `deploy` → the resource.
pub fn by_name(name: &str) -> Option<ResIdx> {
    let (base, group) = match name.split_once('.') {
        Some((b, g)) => (b, Some(g)),
        None => (name, None),
    };
    RESOURCES.iter().position(|r| {
        group.is_none_or(|g| g == r.group)
            && (r.plural == base || r.singular == base || r.short_names.contains(&base))
    })
}

/// Which resources are served right now (all but the demo CRD's resource
/// while it is uninstalled, see `crd`).
pub type Serves<'a> = &'a dyn Fn(&ResourceType) -> bool;

/// The resources served now, in catalogue order.
pub fn served<'a>(serves: Serves<'a>) -> impl Iterator<Item = &'static ResourceType> + 'a {
    RESOURCES.iter().filter(move |r| serves(r))
}

/// The API groups served (besides the core group), in discovery order.
pub fn groups(serves: Serves<'_>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in served(serves) {
        if !r.group.is_empty() && !out.contains(&r.group) {
            out.push(r.group);
        }
    }
    out
}

/// Versions served for a group (every group here serves exactly `v1`).
pub fn versions(group: &str, serves: Serves<'_>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in served(serves).filter(|r| r.group == group) {
        if !out.contains(&r.version) {
            out.push(r.version);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_constants_name_their_resources() {
        let named = [
            (NAMESPACES, "namespaces"),
            (NODES, "nodes"),
            (PODS, "pods"),
            (SERVICES, "services"),
            (CONFIGMAPS, "configmaps"),
            (SECRETS, "secrets"),
            (EVENTS, "events"),
            (DEPLOYMENTS, "deployments"),
            (REPLICASETS, "replicasets"),
            (STATEFULSETS, "statefulsets"),
            (DAEMONSETS, "daemonsets"),
            (JOBS, "jobs"),
            (WIDGETS, "widgets"),
            (CRDS, "customresourcedefinitions"),
        ];
        for (idx, plural) in named {
            assert_eq!(RESOURCES[idx].plural, plural);
        }
        assert_eq!(named.len(), RESOURCES.len());
        assert_eq!(by_name("deployments.apps"), Some(DEPLOYMENTS));
        assert_eq!(by_name("deploy"), Some(DEPLOYMENTS));
        assert_eq!(by_name("pods"), Some(PODS));
    }
}
