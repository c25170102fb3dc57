//! The k9s-style command bar: `:pods`, `:deploy`, `:svc`, `:ns kube-system`,
//! `:ns` (all namespaces), `:widgets` (any resource discovery found, by
//! plural, kind, short name or `plural.group`). Turns what the user typed into
//! a route change, or an error that says what is accepted.

use crate::address::route::Route;
use crate::api::resources::{self, ApiResource};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("unknown command {0:?}: try :pods, :deploy, :rs, :svc, :cm, :secrets, :nodes, :events, or :ns NAME")]
    Unknown(String),
    #[error("{0:?} is not a namespace name (lowercase letters, digits and '-')")]
    BadNamespace(String),
}

/// Applies a command (with or without the leading `:`) to the current route.
/// `discovered` is what the cluster serves; well-known names work without it.
pub fn apply(
    command: &str,
    current: &Route,
    discovered: &[ApiResource],
) -> Result<Route, CommandError> {
    let command = command.trim().trim_start_matches(':').trim();
    let mut words = command.split_whitespace();
    let Some(verb) = words.next() else {
        return Ok(current.clone());
    };
    let argument = words.next();
    let verb = verb.to_ascii_lowercase();
    if verb == "ns" {
        let mut next = current.clone();
        next.namespace = match argument {
            None | Some("all") | Some("-A") => None,
            Some(ns) if is_dns_label(ns) => Some(ns.to_string()),
            Some(ns) => return Err(CommandError::BadNamespace(ns.to_string())),
        };
        return Ok(next);
    }
    let mut next = match resources::find(discovered, &verb) {
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
        let deploy = apply(":deploy", &pods, &[]).unwrap();
        assert_eq!(
            (deploy.group.as_str(), deploy.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!(deploy.namespace.as_deref(), Some("shop"));
        assert_eq!(
            apply("svc kube-system", &pods, &[])
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
            apply(":ns kube-system", &pods, &[])
                .unwrap()
                .namespace
                .as_deref(),
            Some("kube-system")
        );
        assert_eq!(apply(":ns", &pods, &[]).unwrap().namespace, None);
        assert_eq!(apply(":ns all", &pods, &[]).unwrap().namespace, None);
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
            let next = apply(word, &pods, std::slice::from_ref(&widgets)).unwrap();
            assert_eq!(
                (next.group.as_str(), next.resource.as_str()),
                ("demo.deltascope.dev", "widgets"),
                "{word}"
            );
        }
        assert!(
            apply(":widgets", &pods, &[]).is_err(),
            "unknown without discovery"
        );
    }

    #[test]
    fn bad_commands_say_what_is_accepted() {
        let pods = Route::default();
        assert!(matches!(
            apply(":frobnicate", &pods, &[]),
            Err(CommandError::Unknown(_))
        ));
        assert!(matches!(
            apply(":ns Bad_NS", &pods, &[]),
            Err(CommandError::BadNamespace(_))
        ));
        assert!(apply(":frobnicate", &pods, &[])
            .unwrap_err()
            .to_string()
            .contains(":deploy"));
        assert_eq!(apply("   ", &pods, &[]).unwrap(), pods);
    }
}
