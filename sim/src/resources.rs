//! The catalogue of resource types the simulated cluster serves: group,
//! version, plural, kind, scope, short names — `deltascope_facts`'s built-in
//! table, plus the demo CRD's `widgets`. Discovery, routing and the store
//! all index resources by their position in [`RESOURCES`].

use deltascope_facts::BUILTIN_RESOURCES;

/// One served resource type: the facts crate's built-in type (the sim's CRD
/// `widgets` is written the same way).
pub type ResourceType = deltascope_facts::BuiltinResource;

/// Index into [`RESOURCES`].
pub type ResIdx = usize;

/// The group of the one custom resource the simulated cluster serves.
pub const CRD_GROUP: &str = "demo.deltascope.dev";

/// The built-in type called `plural` (checked when the crate compiles).
const fn builtin(plural: &str) -> ResourceType {
    let mut i = 0;
    while i < BUILTIN_RESOURCES.len() {
        if same(BUILTIN_RESOURCES[i].plural, plural) {
            return BUILTIN_RESOURCES[i];
        }
        i += 1;
    }
    panic!("not a built-in resource");
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Every type the sim serves, in its discovery order (the index constants
/// below name the positions): the built-in types, and the demo CRD's.
pub const RESOURCES: &[ResourceType] = &[
    builtin("namespaces"),
    builtin("nodes"),
    builtin("pods"),
    builtin("services"),
    builtin("configmaps"),
    builtin("secrets"),
    builtin("events"),
    builtin("deployments"),
    builtin("replicasets"),
    builtin("statefulsets"),
    builtin("daemonsets"),
    builtin("jobs"),
    ResourceType {
        group: CRD_GROUP,
        version: "v1",
        plural: "widgets",
        singular: "widget",
        kind: "Widget",
        namespaced: true,
        short_names: &["wg"],
        categories: &[],
        everyday: false,
    },
    builtin("customresourcedefinitions"),
    builtin("endpointslices"),
    // The same Events as core/v1 `events`, served by events.k8s.io (see
    // `store`'s views); not in the facts table, whose names must be unique.
    ResourceType {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        everyday: false,
    },
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
pub const ENDPOINTSLICES: ResIdx = 14;
pub const EVENTS_V1: ResIdx = 15;

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
    RESOURCES
        .iter()
        .position(|r| group.is_none_or(|g| g == r.group) && r.is_called(base))
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
            (ENDPOINTSLICES, "endpointslices"),
            (EVENTS_V1, "events"),
        ];
        for (idx, plural) in named {
            assert_eq!(RESOURCES[idx].plural, plural);
        }
        assert_eq!(named.len(), RESOURCES.len());
        assert_eq!(by_name("deployments.apps"), Some(DEPLOYMENTS));
        assert_eq!(by_name("deploy"), Some(DEPLOYMENTS));
        assert_eq!(by_name("pods"), Some(PODS));
        assert_eq!(by_name("events"), Some(EVENTS));
        assert_eq!(by_name("events.events.k8s.io"), Some(EVENTS_V1));
        assert_eq!(RESOURCES[EVENTS_V1].group, "events.k8s.io");
    }
}
