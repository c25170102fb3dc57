//! The objects related to the one the object view shows: up and down its
//! owner chain, the objects it names outright (node, volumes, claims, a
//! slice's service) and those its selector picks or whose selectors pick
//! it — found in the stores the page holds (owned objects through each
//! store's owner index, never a rescan). The rules (owner references,
//! selectors, named links) live in the informer core's `relations`; the
//! story beside it is `crate::model::object_story`.

use crate::address::object_route::ObjectRoute;
use crate::informer::relations::{named_links, owner_references, pod_selector};
use crate::informer::store::{LABEL_INDEX, NAMESPACE_INDEX, OWNER_INDEX};
use crate::informer::KubeObject;
use crate::model::object_story::{StorySource, Subject, OWNER_DEPTH};

/// An object related to the one shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedLink {
    /// `owner`, `owns`, `node`, `volume`, `claim`, `service`,
    /// `selects`, `selected by`, `endpoints`.
    pub relation: &'static str,
    pub kind: String,
    /// As `data-resource` names a resource: `replicasets.apps`.
    pub resource: String,
    pub key: String,
    /// Its object view's address, when its resource is known.
    pub href: Option<String>,
    /// A kept informer holds it now.
    pub held: bool,
}

/// The objects related to `object` (of `source`'s resource): up and down
/// its owner chain, the objects it names outright, and those its selector
/// picks or whose selectors pick it.
pub fn related(
    sources: &[StorySource<'_>],
    source: &StorySource<'_>,
    object: &KubeObject,
) -> Vec<RelatedLink> {
    let subject = Subject::of(source, object);
    let mut links = Links::default();
    owners_up(sources, object, &mut links);
    owned_down(sources, object, &mut links);
    // Named outright: node, volumes, claims, the service of a slice.
    for link in named_links(&subject.kind, &subject.namespace, object.value.root()) {
        let key = key_in(&link.namespace, &link.name);
        links.push(named_link(
            sources,
            link.relation,
            link.group,
            "",
            Some(link.plural),
            key,
        ));
    }
    selected(sources, &subject, object, &mut links);
    links.0
}

/// Related links, each object once (the first relation found wins).
#[derive(Default)]
struct Links(Vec<RelatedLink>);

impl Links {
    fn push(&mut self, link: RelatedLink) {
        if !self
            .0
            .iter()
            .any(|l| l.resource == link.resource && l.key == link.key)
        {
            self.0.push(link);
        }
    }
}

/// The store key of `name` in namespace `ns` (`""`: cluster-scoped).
fn key_in(ns: &str, name: &str) -> String {
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    }
}

/// A link to `o`, which the kept informer `s` holds.
fn held_link(relation: &'static str, s: &StorySource<'_>, o: &KubeObject) -> RelatedLink {
    RelatedLink {
        relation,
        kind: Subject::of(s, o).kind,
        resource: s.stats_name(),
        key: o.key.clone(),
        href: Some(ObjectRoute::of_key(s.group, s.version, s.resource, &o.key).to_string()),
        held: true,
    }
}

/// A link to the object `key` of a resource known by its group and plural
/// (or, without a plural, its kind), held or not.
fn named_link(
    sources: &[StorySource<'_>],
    relation: &'static str,
    group: &str,
    kind: &str,
    plural: Option<&str>,
    key: String,
) -> RelatedLink {
    let builtin = match plural {
        Some(plural) => deltascope_facts::BUILTIN_RESOURCES
            .iter()
            .find(|r| r.group == group && r.plural == plural),
        None => deltascope_facts::resources::by_kind(group, kind),
    };
    let held = sources.iter().any(|s| {
        builtin.is_some_and(|b| s.group == b.group && s.resource == b.plural)
            && s.store.get_by_key(&key).is_some()
    });
    RelatedLink {
        relation,
        kind: builtin.map_or(kind, |b| b.kind).to_string(),
        resource: builtin.map_or_else(
            || kind.to_ascii_lowercase(),
            |b| match b.group {
                "" => b.plural.to_string(),
                group => format!("{}.{group}", b.plural),
            },
        ),
        href: builtin.map(|b| ObjectRoute::of_key(b.group, b.version, b.plural, &key).to_string()),
        key,
        held,
    }
}

/// Up the owner chain, through the owners the page holds.
fn owners_up(sources: &[StorySource<'_>], object: &KubeObject, links: &mut Links) {
    let mut current: Vec<KubeObject> = vec![object.clone()];
    for _ in 0..OWNER_DEPTH {
        let mut next = Vec::new();
        for child in &current {
            for owner in owner_references(child.value.root()) {
                let key = key_in(child.namespace().unwrap_or(""), &owner.name);
                links.push(named_link(
                    sources,
                    "owner",
                    owner.group(),
                    &owner.kind,
                    None,
                    key.clone(),
                ));
                let builtin = deltascope_facts::resources::by_kind(owner.group(), &owner.kind);
                let held = sources.iter().find_map(|s| {
                    let b = builtin?;
                    (s.group == b.group && s.resource == b.plural)
                        .then(|| s.store.get_by_key(&key))
                        .flatten()
                });
                if let Some(held) = held {
                    next.push((**held).clone());
                }
            }
        }
        current = next;
    }
}

/// Down: what it owns, and what those own, from the owner indexes.
fn owned_down(sources: &[StorySource<'_>], object: &KubeObject, links: &mut Links) {
    let mut uids = vec![object.uid.clone()];
    for _ in 0..OWNER_DEPTH {
        let mut next = Vec::new();
        for uid in uids.iter().filter(|u| !u.is_empty()) {
            for s in sources {
                for owned in s.store.by_index(OWNER_INDEX, uid) {
                    links.push(held_link("owns", s, &owned));
                    next.push(owned.uid.clone());
                }
            }
        }
        uids = next;
    }
}

/// Selectors: a Service's pods and slices; the services selecting a pod.
fn selected(
    sources: &[StorySource<'_>],
    subject: &Subject,
    object: &KubeObject,
    links: &mut Links,
) {
    let namespace = &subject.namespace;
    if let Some(selector) = pod_selector(&subject.kind, object.value.root()) {
        if subject.kind == "Service" {
            for s in sources
                .iter()
                .filter(|s| s.group.is_empty() && s.resource == "pods")
            {
                for pod in s.store.by_index(NAMESPACE_INDEX, namespace) {
                    if selector.matches(pod.value.get("metadata").and_then(|m| m.get("labels"))) {
                        links.push(held_link("selects", s, &pod));
                    }
                }
            }
            let label = format!("kubernetes.io/service-name={}", subject.name);
            for s in sources.iter().filter(|s| s.resource == "endpointslices") {
                for slice in s.store.by_index(LABEL_INDEX, &label) {
                    if slice.namespace() == Some(namespace.as_str()) {
                        links.push(held_link("endpoints", s, &slice));
                    }
                }
            }
        }
    }
    if subject.kind == "Pod" {
        let labels = object.value.get("metadata").and_then(|m| m.get("labels"));
        for s in sources
            .iter()
            .filter(|s| s.group.is_empty() && s.resource == "services")
        {
            for service in s.store.by_index(NAMESPACE_INDEX, namespace) {
                let selects = pod_selector("Service", service.value.root())
                    .is_some_and(|selector| selector.matches(labels));
                if selects {
                    links.push(held_link("selected by", s, &service));
                }
            }
        }
    }
}
