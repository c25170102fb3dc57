//! The k9s-style command bar: `:pods`, `:deploy`, `:svc`, `:ns kube-system`,
//! `:ns` (all namespaces), `:widgets` (any resource discovery found, by
//! plural, kind, short name or `plural.group`), `:ctx NAME` (the same view
//! in another of serve's clusters). Turns what the user typed into
//! a route change, or an error that says what is accepted.

use crate::address::route::Route;
use crate::api::cluster_identity::ServedCluster;
use crate::api::resources::{self, ApiResource};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("unknown command {0:?}: try :pods, :deploy, :rs, :svc, :cm, :secrets, :nodes, :events, or :ns NAME")]
    Unknown(String),
    #[error("{0:?} is not a namespace name (lowercase letters, digits and '-')")]
    BadNamespace(String),
    #[error("{0}")]
    Cluster(String),
}

/// What the commands may name beyond the route: the resources discovery
/// found (well-known names work without them) and serve's clusters.
#[derive(Clone, Copy, Default)]
pub struct Known<'a> {
    pub resources: &'a [ApiResource],
    pub clusters: &'a [ServedCluster],
}

/// `:ctx NAME`: the same view in the cluster serve calls `NAME`.
fn switch_cluster(
    current: &Route,
    name: Option<&str>,
    clusters: &[ServedCluster],
) -> Result<Route, CommandError> {
    let names: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    if clusters.len() < 2 {
        return Err(CommandError::Cluster(
            "this page shows one cluster: start serve with more (deltascope serve --context A --context B)".into(),
        ));
    }
    let Some(name) = name else {
        return Err(CommandError::Cluster(format!(
            ":ctx NAME: one of {}",
            names.join(", ")
        )));
    };
    match clusters.iter().find(|c| c.name == name) {
        Some(found) => Ok(current.in_cluster((!found.default).then(|| found.name.clone()))),
        None => Err(CommandError::Cluster(format!(
            "serve has no cluster {name:?}: it has {}",
            names.join(", ")
        ))),
    }
}

/// Applies a command (with or without the leading `:`) to the current route;
/// a new resource is shown in the same cluster.
pub fn apply(command: &str, current: &Route, known: Known<'_>) -> Result<Route, CommandError> {
    let command = command.trim().trim_start_matches(':').trim();
    let mut words = command.split_whitespace();
    let Some(verb) = words.next() else {
        return Ok(current.clone());
    };
    let argument = words.next();
    let verb = verb.to_ascii_lowercase();
    if matches!(verb.as_str(), "ctx" | "context") {
        return switch_cluster(current, argument, known.clusters);
    }
    if verb == "ns" {
        let mut next = current.clone();
        next.namespace = match argument {
            None | Some("all") | Some("-A") => None,
            Some(ns) if is_dns_label(ns) => Some(ns.to_string()),
            Some(ns) => return Err(CommandError::BadNamespace(ns.to_string())),
        };
        return Ok(next);
    }
    let mut next = match resources::find(known.resources, &verb) {
        Some(found) => Route::new(&found.group, &found.version, &found.plural),
        None => {
            let builtin = deltascope_facts::resources::by_name(&verb)
                .ok_or_else(|| CommandError::Unknown(command.to_string()))?;
            Route::new(builtin.group, builtin.version, builtin.plural)
        }
    };
    next.namespace = match argument {
        Some(ns) if is_dns_label(ns) => Some(ns.to_string()),
        Some(ns) => return Err(CommandError::BadNamespace(ns.to_string())),
        None => current.namespace.clone(),
    };
    next.cluster = current.cluster.clone();
    Ok(next)
}

fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_commands_switch_and_keep_the_namespace() {
        let pods = Route {
            namespace: Some("shop".into()),
            ..Route::default()
        };
        let deploy = apply(":deploy", &pods, Known::default()).unwrap();
        assert_eq!(
            (deploy.group.as_str(), deploy.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!(deploy.namespace.as_deref(), Some("shop"));
        assert_eq!(
            apply("svc kube-system", &pods, Known::default())
                .unwrap()
                .namespace
                .as_deref(),
            Some("kube-system")
        );
    }

    #[test]
    fn namespace_command_sets_and_clears() {
        let pods = Route::default();
        assert_eq!(
            apply(":ns kube-system", &pods, Known::default())
                .unwrap()
                .namespace
                .as_deref(),
            Some("kube-system")
        );
        assert_eq!(
            apply(":ns", &pods, Known::default()).unwrap().namespace,
            None
        );
        assert_eq!(
            apply(":ns all", &pods, Known::default()).unwrap().namespace,
            None
        );
    }

    #[test]
    fn discovered_resources_are_reachable_by_any_name() {
        let widgets = ApiResource {
            group: "demo.deltascope.dev".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            kind: "Widget".into(),
            namespaced: true,
            short_names: vec!["wg".into()],
        };
        let pods = Route::default();
        for word in [":widgets", ":wg", ":widget", ":widgets.demo.deltascope.dev"] {
            let next = apply(
                word,
                &pods,
                Known {
                    resources: std::slice::from_ref(&widgets),
                    ..Known::default()
                },
            )
            .unwrap();
            assert_eq!(
                (next.group.as_str(), next.resource.as_str()),
                ("demo.deltascope.dev", "widgets"),
                "{word}"
            );
        }
        assert!(
            apply(":widgets", &pods, Known::default()).is_err(),
            "unknown without discovery"
        );
    }

    #[test]
    fn ctx_shows_the_same_view_in_another_cluster() {
        let cluster = |name: &str, default: bool| ServedCluster {
            name: name.into(),
            default,
            identity: None,
            state: "up".into(),
            error: None,
            identity_changed_from: None,
        };
        let clusters = [cluster("a", true), cluster("b", false)];
        let known = Known {
            clusters: &clusters,
            ..Known::default()
        };
        let deploy = Route {
            namespace: Some("shop".into()),
            ..Route::new("apps", "v1", "deployments")
        };
        let in_b = apply(":ctx b", &deploy, known).unwrap();
        assert_eq!(in_b, deploy.in_cluster(Some("b".into())));
        // Another resource stays in the cluster; the default one has no name.
        let pods = apply(":pods", &in_b, known).unwrap();
        assert_eq!(pods.to_string(), "#/b/core/v1/pods?namespace=shop");
        assert_eq!(apply(":ctx a", &pods, known).unwrap().cluster, None);
        let unknown = apply(":ctx c", &pods, known).unwrap_err().to_string();
        assert!(
            unknown.contains("\"c\"") && unknown.contains("a, b"),
            "{unknown}"
        );
        assert!(apply(":ctx", &pods, known)
            .unwrap_err()
            .to_string()
            .contains("a, b"));
        let alone = apply(":ctx b", &deploy, Known::default()).unwrap_err();
        assert!(alone.to_string().contains("--context"), "{alone}");
    }

    #[test]
    fn bad_commands_say_what_is_accepted() {
        let pods = Route::default();
        assert!(matches!(
            apply(":frobnicate", &pods, Known::default()),
            Err(CommandError::Unknown(_))
        ));
        assert!(matches!(
            apply(":ns Bad_NS", &pods, Known::default()),
            Err(CommandError::BadNamespace(_))
        ));
        assert!(apply(":frobnicate", &pods, Known::default())
            .unwrap_err()
            .to_string()
            .contains(":deploy"));
        assert_eq!(apply("   ", &pods, Known::default()).unwrap(), pods);
    }
}
