//! What the object view reads so that Related and Story can name an
//! object's relatives from the current objects without the user keeping
//! their resources first: for the kind shown, the resources its relatives
//! are in (a Deployment's ReplicaSets and pods, a pod's owners, node,
//! claims and the services that select it, a node's pods), each read as
//! narrowly as the relation allows — the object's namespace, or a node's
//! pods by `spec.nodeName` — and none that a kept resource already covers.
//! The service starts these as informers of the page's own (as it does
//! for events) while the object is shown. Decisions only, tested natively.

use crate::address::route::Route;

/// Resources read at most for one object.
pub const MAX_RELATED_READS: usize = 8;

/// The resources (group, plural) the relatives of an object of `group`,
/// `plural` live in.
fn relatives_of(group: &str, plural: &str) -> &'static [(&'static str, &'static str)] {
    match (group, plural) {
        ("", "pods") => &[
            ("apps", "replicasets"),
            ("apps", "deployments"),
            ("apps", "statefulsets"),
            ("apps", "daemonsets"),
            ("batch", "jobs"),
            ("", "services"),
            ("", "persistentvolumeclaims"),
            ("", "nodes"),
        ],
        ("apps", "deployments") => &[("apps", "replicasets"), ("", "pods")],
        ("apps", "replicasets") => &[("apps", "deployments"), ("", "pods")],
        ("apps", "statefulsets" | "daemonsets") => &[("", "pods")],
        ("batch", "jobs") => &[("batch", "cronjobs"), ("", "pods")],
        ("batch", "cronjobs") => &[("batch", "jobs"), ("", "pods")],
        ("", "services") => &[("", "pods"), ("discovery.k8s.io", "endpointslices")],
        ("discovery.k8s.io", "endpointslices") => &[("", "services"), ("", "pods")],
        ("", "persistentvolumeclaims" | "configmaps") => &[("", "pods")],
        ("", "nodes") => &[("", "pods")],
        _ => &[],
    }
}

/// Whether the kept `route` holds every object `wanted` would read.
fn covers(route: &Route, wanted: &Route) -> bool {
    route.cluster == wanted.cluster
        && route.group == wanted.group
        && route.resource == wanted.resource
        && route.label_selector.is_none()
        && (route.field_selector.is_none() || route.field_selector == wanted.field_selector)
        && (route.namespace.is_none() || route.namespace == wanted.namespace)
}

/// The reads the object `key` of `shown` (a kept view's route) wants, with
/// the routes already kept (`kept`); at most [`MAX_RELATED_READS`].
pub fn related_reads(shown: &Route, key: &str, kept: &[Route]) -> Vec<Route> {
    let (namespace, name) = match key.split_once('/') {
        Some((namespace, name)) => (Some(namespace), name),
        None => (None, key),
    };
    let mut reads = Vec::new();
    for (group, plural) in relatives_of(&shown.group, &shown.resource) {
        let Some(builtin) = deltascope_facts::BUILTIN_RESOURCES
            .iter()
            .find(|r| r.group == *group && r.plural == *plural)
        else {
            continue;
        };
        let mut route = Route::new(builtin.group, builtin.version, builtin.plural)
            .in_cluster(shown.cluster.clone());
        if builtin.namespaced {
            match namespace {
                Some(namespace) => route.namespace = Some(namespace.to_string()),
                // a cluster-scoped object: only a node's pods, by node
                None if shown.group.is_empty() && shown.resource == "nodes" => {
                    route.field_selector = Some(format!("spec.nodeName={name}"));
                }
                None => continue,
            }
        }
        if kept.iter().any(|kept| covers(kept, &route)) {
            continue;
        }
        reads.push(route);
    }
    reads.truncate(MAX_RELATED_READS);
    reads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(group: &str, version: &str, resource: &str) -> Route {
        Route::new(group, version, resource)
    }

    #[test]
    fn a_deployment_reads_its_namespace_replicasets_and_pods() {
        let reads = related_reads(&route("apps", "v1", "deployments"), "shop/cart", &[]);
        let names: Vec<String> = reads.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            names,
            [
                "#/apps/v1/replicasets?namespace=shop",
                "#/core/v1/pods?namespace=shop"
            ]
        );
    }

    #[test]
    fn what_a_kept_resource_covers_is_not_read_again() {
        let all_pods = route("", "v1", "pods");
        let mut other_namespace = route("apps", "v1", "replicasets");
        other_namespace.namespace = Some("payments".into());
        let reads = related_reads(
            &route("apps", "v1", "deployments"),
            "shop/cart",
            &[all_pods, other_namespace],
        );
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].resource, "replicasets");
        assert_eq!(reads[0].namespace.as_deref(), Some("shop"));
        // pods kept with a selector do not hold every pod
        let mut selected = route("", "v1", "pods");
        selected.label_selector = Some("app=cart".into());
        let reads = related_reads(&route("apps", "v1", "replicasets"), "shop/x", &[selected]);
        assert!(reads.iter().any(|r| r.resource == "pods"));
    }

    #[test]
    fn a_node_reads_only_its_own_pods_and_a_pod_its_owners_node_and_claims() {
        let reads = related_reads(&route("", "v1", "nodes"), "node-3", &[]);
        assert_eq!(reads.len(), 1);
        assert_eq!(
            reads[0].field_selector.as_deref(),
            Some("spec.nodeName=node-3")
        );
        assert_eq!(reads[0].namespace, None);
        let reads = related_reads(&route("", "v1", "pods"), "shop/cart-1", &[]);
        assert!(reads.len() <= MAX_RELATED_READS);
        assert!(reads
            .iter()
            .any(|r| r.resource == "nodes" && r.namespace.is_none()));
        assert!(reads
            .iter()
            .any(|r| r.resource == "replicasets" && r.namespace.as_deref() == Some("shop")));
    }

    #[test]
    fn a_kind_without_known_relatives_reads_nothing() {
        assert!(related_reads(&route("", "v1", "secrets"), "shop/s", &[]).is_empty());
        assert!(related_reads(&route("example.com", "v1", "widgets"), "a/b", &[]).is_empty());
    }
}
