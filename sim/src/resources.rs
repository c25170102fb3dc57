//! The catalogue of resource types the simulated cluster serves: group,
//! version, plural, kind, scope, short names. It starts as
//! `deltascope_facts`'s built-in table plus the demo CRD's `widgets`
//! ([`RESOURCES`], whose positions the index constants below name), and
//! grows when a CustomResourceDefinition is added at runtime
//! (`POST /_sim/crd`). Discovery, routing and the store all index resources
//! by their position in the [`Catalogue`]; a position is never reused for
//! another resource, and a resource that stops being served (its CRD
//! removed) keeps its position, so a CRD added again gets it back. The
//! metrics API's types ([`METRICS`]) are not in the catalogue: they are
//! measured when read (`metrics`), and discovery adds them while they are
//! served.

use std::borrow::Cow;
use std::sync::Arc;

use deltascope_facts::{resources, BuiltinResource, BUILTIN_RESOURCES};

/// Index into the [`Catalogue`] (the first ones are [`RESOURCES`]).
pub type ResIdx = usize;

/// The group of the demo CustomResourceDefinition the cluster starts with.
pub const CRD_GROUP: &str = "demo.deltascope.dev";

/// One served resource type. The built-in ones borrow the facts table's
/// names; a CRD added at runtime owns its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: Cow<'static, str>,
    pub version: Cow<'static, str>,
    pub plural: Cow<'static, str>,
    pub singular: Cow<'static, str>,
    pub kind: Cow<'static, str>,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Printed with its own Table columns (`table`); a CRD added at runtime
    /// gets a custom resource's default ones, Name and Age.
    own_columns: bool,
    /// Measured when read (the metrics API, `metrics`), never stored: get
    /// and list only, no storage version.
    pub measured: bool,
}

impl ResourceType {
    /// A type of the facts crate's table (the demo's `widgets` is written the
    /// same way).
    const fn from_builtin(b: BuiltinResource) -> ResourceType {
        ResourceType {
            group: Cow::Borrowed(b.group),
            version: Cow::Borrowed(b.version),
            plural: Cow::Borrowed(b.plural),
            singular: Cow::Borrowed(b.singular),
            kind: Cow::Borrowed(b.kind),
            namespaced: b.namespaced,
            short_names: b.short_names,
            categories: b.categories,
            own_columns: true,
            measured: false,
        }
    }

    /// The resource a CustomResourceDefinition added at runtime serves
    /// (its singular is its kind in lower case, as the apiserver defaults it).
    pub fn custom(
        group: String,
        version: String,
        plural: String,
        kind: String,
        namespaced: bool,
    ) -> ResourceType {
        ResourceType {
            singular: Cow::Owned(kind.to_ascii_lowercase()),
            group: Cow::Owned(group),
            version: Cow::Owned(version),
            plural: Cow::Owned(plural),
            kind: Cow::Owned(kind),
            namespaced,
            short_names: &[],
            categories: &[],
            own_columns: false,
            measured: false,
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        resources::api_version(&self.group, &self.version)
    }

    /// `pods` or `deployments.apps`: the plural qualified by its group (a
    /// CRD's name).
    pub fn qualified(&self) -> String {
        resources::qualified(&self.plural, &self.group)
    }

    /// The list kind: `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The verbs discovery lists: get, list and watch for a stored type;
    /// get and list for a measured one (metrics-server serves no watch).
    pub fn verbs(&self) -> &'static [&'static str] {
        if self.measured {
            &["get", "list"]
        } else {
            &["get", "list", "watch"]
        }
    }

    /// Whether `name` (lowercase) is its plural, singular or a short name,
    /// as kubectl accepts them.
    pub fn is_called(&self, name: &str) -> bool {
        resources::is_called(name, &self.plural, &self.singular, self.short_names)
    }

    /// What `table` prints it as: its plural, or `""` (Name and Age) for a
    /// CRD added at runtime, whose plural may be a built-in's.
    pub fn printed_as(&self) -> &str {
        if self.own_columns {
            &self.plural
        } else {
            ""
        }
    }
}

/// The built-in type called `plural` (checked when the crate compiles).
const fn builtin(plural: &str) -> ResourceType {
    let mut i = 0;
    while i < BUILTIN_RESOURCES.len() {
        if same(BUILTIN_RESOURCES[i].plural, plural) {
            return ResourceType::from_builtin(BUILTIN_RESOURCES[i]);
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

/// The types the cluster starts with, in its discovery order (the index
/// constants below name the positions): the built-in types, and the demo
/// CRD's.
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
        group: Cow::Borrowed(CRD_GROUP),
        version: Cow::Borrowed("v1"),
        plural: Cow::Borrowed("widgets"),
        singular: Cow::Borrowed("widget"),
        kind: Cow::Borrowed("Widget"),
        namespaced: true,
        short_names: &["wg"],
        categories: &[],
        own_columns: true,
        measured: false,
    },
    builtin("customresourcedefinitions"),
    builtin("endpointslices"),
    // The same Events as core/v1 `events`, served by events.k8s.io (see
    // `store`'s views); not in the facts table, whose names must be unique.
    ResourceType {
        group: Cow::Borrowed("events.k8s.io"),
        version: Cow::Borrowed("v1"),
        plural: Cow::Borrowed("events"),
        singular: Cow::Borrowed("event"),
        kind: Cow::Borrowed("Event"),
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        own_columns: true,
        measured: false,
    },
];

/// The metrics API's types as metrics-server registers them (nodes, then
/// pods; no singular name, no short names): served only while
/// `SimConfig::metrics` is on, from what `metrics` measures, never stored.
pub const METRICS: &[ResourceType] = &[
    measured("nodes", "NodeMetrics", false),
    measured("pods", "PodMetrics", true),
];

const fn measured(plural: &'static str, kind: &'static str, namespaced: bool) -> ResourceType {
    ResourceType {
        group: Cow::Borrowed(METRICS_GROUP),
        version: Cow::Borrowed(METRICS_VERSION),
        plural: Cow::Borrowed(plural),
        singular: Cow::Borrowed(""),
        kind: Cow::Borrowed(kind),
        namespaced,
        short_names: &[],
        categories: &[],
        own_columns: false,
        measured: true,
    }
}

/// The metrics API's group and version (`metrics.k8s.io/v1beta1`).
pub const METRICS_GROUP: &str = "metrics.k8s.io";
pub const METRICS_VERSION: &str = "v1beta1";

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

/// Every resource type the cluster knows, served or not: [`RESOURCES`] first,
/// then the CRDs added at runtime.
#[derive(Debug, Clone)]
pub struct Catalogue {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    def: Arc<ResourceType>,
    served: bool,
}

impl Default for Catalogue {
    /// [`RESOURCES`], all served (the demo CRD starts installed).
    fn default() -> Catalogue {
        Catalogue {
            entries: RESOURCES
                .iter()
                .map(|r| Entry {
                    def: Arc::new(r.clone()),
                    served: true,
                })
                .collect(),
        }
    }
}

impl Catalogue {
    /// How many positions it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn get(&self, res: ResIdx) -> Option<&Arc<ResourceType>> {
        self.entries.get(res).map(|e| &e.def)
    }

    /// Is `res` served now? Every built-in is; a CRD's resource while its CRD
    /// exists.
    pub fn serves(&self, res: ResIdx) -> bool {
        self.entries.get(res).is_some_and(|e| e.served)
    }

    pub fn set_served(&mut self, res: ResIdx, served: bool) {
        if let Some(e) = self.entries.get_mut(res) {
            e.served = served;
        }
    }

    /// The resource served at `/api{s}/{group}/{version}/{plural}`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<ResIdx> {
        self.entries.iter().position(|e| {
            e.served && e.def.group == group && e.def.version == version && e.def.plural == plural
        })
    }

    /// `pods`, `deployments.apps`, `deployment`, `deploy` → the resource,
    /// served or not (the first in catalogue order).
    pub fn by_name(&self, name: &str) -> Option<ResIdx> {
        let (base, group) = match name.split_once('.') {
            Some((b, g)) => (b, Some(g)),
            None => (name, None),
        };
        self.entries
            .iter()
            .position(|e| group.is_none_or(|g| g == e.def.group) && e.def.is_called(base))
    }

    /// The position of the resource called `plural.group`, served or not.
    pub fn by_qualified(&self, qualified: &str) -> Option<ResIdx> {
        self.entries
            .iter()
            .position(|e| e.def.qualified() == qualified)
    }

    /// Serves `def` (a CRD just added) and returns its position: the one it
    /// had if it was served before, else a new one.
    pub fn define(&mut self, def: ResourceType) -> ResIdx {
        let entry = Entry {
            def: Arc::new(def),
            served: true,
        };
        match self.by_qualified(&entry.def.qualified()) {
            Some(res) => {
                self.entries[res] = entry;
                res
            }
            None => {
                self.entries.push(entry);
                self.entries.len() - 1
            }
        }
    }

    /// The resources served now, in catalogue order.
    pub fn served(&self) -> Vec<Arc<ResourceType>> {
        self.entries
            .iter()
            .filter(|e| e.served)
            .map(|e| e.def.clone())
            .collect()
    }

    /// Every resource's qualified name with its position, served or not.
    pub fn names(&self) -> impl Iterator<Item = (ResIdx, String)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, e.def.qualified()))
    }
}

/// The API groups among `served` (besides the core group), in discovery order.
pub fn groups(served: &[Arc<ResourceType>]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in served {
        if !r.group.is_empty() && !out.contains(&&*r.group) {
            out.push(&r.group);
        }
    }
    out
}

/// The versions `served` has of a group, in discovery order.
pub fn versions<'a>(group: &str, served: &'a [Arc<ResourceType>]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for r in served.iter().filter(|r| r.group == group) {
        if !out.contains(&&*r.version) {
            out.push(&r.version);
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
        let catalogue = Catalogue::default();
        let by_name = |name| catalogue.by_name(name);
        assert_eq!(by_name("deployments.apps"), Some(DEPLOYMENTS));
        assert_eq!(by_name("deploy"), Some(DEPLOYMENTS));
        assert_eq!(by_name("pods"), Some(PODS));
        assert_eq!(by_name("events"), Some(EVENTS));
        assert_eq!(by_name("events.events.k8s.io"), Some(EVENTS_V1));
        assert_eq!(RESOURCES[EVENTS_V1].group, "events.k8s.io");
    }

    #[test]
    fn a_crd_added_again_gets_its_position_back() {
        let mut catalogue = Catalogue::default();
        let gadgets = || {
            ResourceType::custom(
                "example.com".into(),
                "v1".into(),
                "gadgets".into(),
                "Gadget".into(),
                true,
            )
        };
        let res = catalogue.define(gadgets());
        assert_eq!(res, RESOURCES.len());
        assert_eq!(catalogue.find("example.com", "v1", "gadgets"), Some(res));
        assert_eq!(catalogue.by_name("gadget.example.com"), Some(res));
        assert_eq!(catalogue.get(res).map(|r| r.printed_as()), Some(""));
        catalogue.set_served(res, false);
        assert_eq!(catalogue.find("example.com", "v1", "gadgets"), None);
        assert_eq!(catalogue.by_qualified("gadgets.example.com"), Some(res));
        assert_eq!(catalogue.define(gadgets()), res);
        assert_eq!(catalogue.len(), RESOURCES.len() + 1);
        assert!(catalogue.serves(res));
    }
}
