//! What the top bar's resource picker offers: the resources discovery found
//! (or the everyday built-in ones until it answers), grouped by API group in
//! the order they came, and — when the route names a resource the picker
//! does not offer (a typo, a resource the cluster does not serve) — that
//! resource, shown as such and selected, so the picker never claims
//! another resource is on screen. The view only draws it and turns a
//! choice into an address.

use crate::address::route::{group_segment, Route};
use crate::api::resources::ApiResource;

/// One resource the picker offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceChoice {
    /// What the option says, and its value: `pods`, `deployments.apps`.
    pub label: String,
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl ResourceChoice {
    /// Whether `route` shows this resource.
    pub fn is_shown_by(&self, route: &Route) -> bool {
        self.group == route.group && self.plural == route.resource
    }

    /// The table of this resource, in the cluster and namespace `route` shows.
    pub fn route_from(&self, route: &Route) -> Route {
        let mut next = Route::new(&self.group, &self.version, &self.plural);
        next.namespace = route.namespace.clone();
        next.cluster = route.cluster.clone();
        next
    }
}

/// The options of one API group (`core` for the core group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceGroup {
    pub label: String,
    pub choices: Vec<ResourceChoice>,
}

/// Everything the picker shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePicker {
    pub groups: Vec<ChoiceGroup>,
    /// The route's resource when no option is it: what the picker says instead.
    pub unlisted: Option<String>,
}

impl ResourcePicker {
    /// The picker for `route`, from `discovered` (empty until discovery answers).
    pub fn new(discovered: &[ApiResource], route: &Route) -> ResourcePicker {
        let choices = choices(discovered);
        let listed = choices.iter().any(|c| c.is_shown_by(route));
        let unlisted = (!listed).then(|| {
            if discovered.is_empty() {
                route.stats_name() // discovery has not answered yet
            } else {
                format!("{} (not served)", route.stats_name())
            }
        });
        let mut groups: Vec<ChoiceGroup> = Vec::new();
        for choice in choices {
            let label = group_segment(&choice.group);
            match groups.iter_mut().find(|g| g.label == label) {
                Some(group) => group.choices.push(choice),
                None => groups.push(ChoiceGroup {
                    label: label.to_string(),
                    choices: vec![choice],
                }),
            }
        }
        ResourcePicker { groups, unlisted }
    }

    /// The option whose value is `label`.
    pub fn find(&self, label: &str) -> Option<&ResourceChoice> {
        self.groups
            .iter()
            .flat_map(|g| &g.choices)
            .find(|c| c.label == label)
    }
}

/// The resources offered, in discovery order; the everyday built-in ones
/// before discovery answers.
fn choices(discovered: &[ApiResource]) -> Vec<ResourceChoice> {
    if discovered.is_empty() {
        deltascope_facts::BUILTIN_RESOURCES
            .iter()
            .filter(|r| r.everyday)
            .map(|r| ResourceChoice {
                label: r.plural.to_string(),
                group: r.group.to_string(),
                version: r.version.to_string(),
                plural: r.plural.to_string(),
            })
            .collect()
    } else {
        discovered
            .iter()
            .map(|r| ResourceChoice {
                label: r.display_name(),
                group: r.group.clone(),
                version: r.version.clone(),
                plural: r.plural.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(group: &str, version: &str, plural: &str) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: String::new(),
            namespaced: true,
            short_names: Vec::new(),
        }
    }

    #[test]
    fn discovered_resources_are_grouped_in_the_order_they_came() {
        let discovered = [
            resource("", "v1", "pods"),
            resource("apps", "v1", "deployments"),
            resource("", "v1", "services"),
            resource("apps", "v1", "replicasets"),
        ];
        let picker = ResourcePicker::new(&discovered, &Route::new("", "v1", "pods"));
        let groups: Vec<(&str, Vec<&str>)> = picker
            .groups
            .iter()
            .map(|g| {
                let labels = g.choices.iter().map(|c| c.label.as_str()).collect();
                (g.label.as_str(), labels)
            })
            .collect();
        assert_eq!(
            groups,
            [
                ("core", vec!["pods", "services"]),
                ("apps", vec!["deployments.apps", "replicasets.apps"])
            ]
        );
        assert_eq!(picker.unlisted, None);
    }

    #[test]
    fn a_choice_keeps_the_namespace_and_names_its_resource() {
        let discovered = [resource("apps", "v1", "deployments")];
        let mut route = Route::new("", "v1", "pods");
        route.namespace = Some("shop".into());
        route.label_selector = Some("app=web".into());
        let picker = ResourcePicker::new(&discovered, &route);
        let choice = picker.find("deployments.apps").expect("offered");
        assert!(!choice.is_shown_by(&route));
        assert_eq!(
            choice.route_from(&route).to_string(),
            "#/apps/v1/deployments?namespace=shop"
        );
        assert_eq!(picker.find("pods"), None);
    }

    #[test]
    fn a_route_the_picker_does_not_offer_is_shown_as_such() {
        let discovered = [resource("", "v1", "pods")];
        let typo = Route::new("", "v1", "podz");
        assert_eq!(
            ResourcePicker::new(&discovered, &typo).unlisted.as_deref(),
            Some("podz (not served)")
        );
        // before discovery answers, the everyday list is offered and an
        // unknown resource is only named
        let before = ResourcePicker::new(&[], &Route::new("demo.io", "v1", "widgets"));
        assert_eq!(before.unlisted.as_deref(), Some("widgets.demo.io"));
        assert!(before.find("pods").is_some());
        assert_eq!(
            ResourcePicker::new(&[], &Route::new("", "v1", "pods")).unlisted,
            None
        );
    }
}
