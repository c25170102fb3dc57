//! The page's hash routes (a contract: shared links and the browser tests
//! use them): `#/{group}/{version}/{resource}?namespace=NS&labelSelector=SEL&fieldSelector=SEL&wide=1`,
//! with `core` standing for the core API group and `wide=1` showing the
//! server's columns of every priority (kubectl `-o wide`). Pure parsing and
//! formatting, so a view is a link and the same code is tested natively.

use deltascope_facts::percent::{decode_query_value, encode_query_value};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `""` for the core group (written `core` in the URL).
    pub group: String,
    pub version: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Show every column of the server's Table, not only priority 0.
    pub wide: bool,
}

/// How an API group is written in the page's addresses: `core` for the
/// core group (`""`), else its name.
pub fn group_segment(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group
    }
}

/// The API group an address's group segment names (`core` → `""`).
pub fn group_of_segment(segment: &str) -> &str {
    if segment == "core" {
        ""
    } else {
        segment
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("the address {0:?} is not a resource view; expected #/GROUP/VERSION/RESOURCE, e.g. #/core/v1/pods")]
    Shape(String),
    #[error("{0:?} is not a valid {1}: use lowercase letters, digits, '-' and '.'")]
    Name(String, &'static str),
    #[error("the query {0:?} is not valid percent-encoding")]
    Encoding(String),
}

impl Default for Route {
    fn default() -> Self {
        Route::new("", "v1", "pods")
    }
}

impl Route {
    pub fn new(group: &str, version: &str, resource: &str) -> Route {
        Route {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            namespace: None,
            label_selector: None,
            field_selector: None,
            wide: false,
        }
    }

    /// The same view without what only changes how it is shown (`wide`):
    /// two routes with the same data key share one informer.
    pub fn data_key(&self) -> Route {
        Route {
            wide: false,
            ..self.clone()
        }
    }

    /// Parses `location.hash` (with or without the leading `#`). An empty hash is the default view (pods).
    pub fn parse(hash: &str) -> Result<Route, RouteError> {
        let hash = hash.strip_prefix('#').unwrap_or(hash);
        if hash.is_empty() || hash == "/" {
            return Ok(Route::default());
        }
        let (path, query) = hash.split_once('?').unwrap_or((hash, ""));
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let [group, version, resource] = segments.as_slice() else {
            return Err(RouteError::Shape(hash.to_string()));
        };
        check_name(group, "API group")?;
        check_name(version, "API version")?;
        check_name(resource, "resource name")?;
        let mut route = Route::new(group_of_segment(group), version, resource);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value =
                decode_query_value(value).ok_or_else(|| RouteError::Encoding(pair.to_string()))?;
            let value = Some(value).filter(|v| !v.is_empty());
            match key {
                "namespace" => route.namespace = value,
                "labelSelector" => route.label_selector = value,
                "fieldSelector" => route.field_selector = value,
                "wide" => route.wide = matches!(value.as_deref(), Some("1" | "true")),
                _ => {} // unknown parameters are ignored so old links keep working
            }
        }
        if let Some(namespace) = &route.namespace {
            check_name(namespace, "namespace")?;
        }
        Ok(route)
    }

    /// The resource's name as the `data-resource` hooks say it (the browser
    /// tests read it): plural, with `.group` for non-core groups.
    pub fn stats_name(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// The name of this view's informer where several are shown together
    /// (timeline lanes, the kept list): the `stats_name`, with the namespace
    /// and selectors that make it a different informer, e.g.
    /// `pods (ns=shop, app=web)`: what tells two informers of one resource apart.
    pub fn lane_label(&self) -> String {
        let parts: Vec<String> = [
            self.namespace.as_ref().map(|ns| format!("ns={ns}")),
            self.label_selector.clone(),
            self.field_selector.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            self.stats_name()
        } else {
            format!("{} ({})", self.stats_name(), parts.join(", "))
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = group_segment(&self.group);
        write!(f, "#/{group}/{}/{}", self.version, self.resource)?;
        let mut separator = '?';
        for (key, value) in [
            ("namespace", &self.namespace),
            ("labelSelector", &self.label_selector),
            ("fieldSelector", &self.field_selector),
        ] {
            if let Some(value) = value {
                write!(f, "{separator}{key}={}", encode_query_value(value))?;
                separator = '&';
            }
        }
        if self.wide {
            write!(f, "{separator}wide=1")?;
        }
        Ok(())
    }
}

fn check_name(name: &str, what: &'static str) -> Result<(), RouteError> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if valid {
        Ok(())
    } else {
        Err(RouteError::Name(name.to_string(), what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_hash_is_the_pods_view() {
        assert_eq!(Route::parse("").unwrap(), Route::default());
        assert_eq!(Route::parse("#/").unwrap().resource, "pods");
    }

    #[test]
    fn core_group_and_named_groups() {
        let pods = Route::parse("#/core/v1/pods").unwrap();
        assert_eq!(
            (pods.group.as_str(), pods.stats_name().as_str()),
            ("", "pods")
        );
        let deployments = Route::parse("#/apps/v1/deployments?namespace=default").unwrap();
        assert_eq!(deployments.group, "apps");
        assert_eq!(deployments.namespace.as_deref(), Some("default"));
        assert_eq!(deployments.stats_name(), "deployments.apps");
    }

    #[test]
    fn selectors_round_trip_through_the_url() {
        let mut route = Route::new("", "v1", "pods");
        route.namespace = Some("kube-system".into());
        route.label_selector = Some("app in (web, db),tier!=cache".into());
        route.field_selector = Some("status.phase=Running".into());
        let text = route.to_string();
        assert!(!text.contains(' '), "{text}");
        assert_eq!(Route::parse(&text).unwrap(), route);
    }

    #[test]
    fn wide_is_a_link_and_not_part_of_the_data() {
        let route = Route::parse("#/core/v1/pods?namespace=shop&wide=1").unwrap();
        assert!(route.wide);
        assert_eq!(route.to_string(), "#/core/v1/pods?namespace=shop&wide=1");
        let mut plain = Route::new("", "v1", "pods");
        plain.wide = true;
        assert_eq!(plain.to_string(), "#/core/v1/pods?wide=1");
        assert_eq!(Route::parse(&plain.to_string()).unwrap(), plain);
        assert!(!Route::parse("#/core/v1/pods?wide=0").unwrap().wide);
        assert!(!Route::parse("#/core/v1/pods?wide").unwrap().wide);
        assert_eq!(
            route.data_key(),
            Route::parse("#/core/v1/pods?namespace=shop").unwrap()
        );
    }

    #[test]
    fn lane_labels_name_the_informer() {
        assert_eq!(Route::parse("#/core/v1/pods").unwrap().lane_label(), "pods");
        assert_eq!(
            Route::parse("#/apps/v1/deployments?wide=1")
                .unwrap()
                .lane_label(),
            "deployments.apps"
        );
        assert_eq!(
            Route::parse("#/core/v1/pods?namespace=shop&labelSelector=app%3Dweb")
                .unwrap()
                .lane_label(),
            "pods (ns=shop, app=web)"
        );
    }

    #[test]
    fn malformed_routes_are_errors_not_panics() {
        assert!(matches!(Route::parse("#/pods"), Err(RouteError::Shape(_))));
        assert!(matches!(
            Route::parse("#/core/v1/Pods"),
            Err(RouteError::Name(..))
        ));
        assert!(matches!(
            Route::parse("#/core/v1/pods?labelSelector=%zz"),
            Err(RouteError::Encoding(_))
        ));
        assert!(matches!(
            Route::parse("#/core/v1/pods?labelSelector=%e2"),
            Err(RouteError::Encoding(_))
        ));
        assert!(matches!(
            Route::parse("#/core/v1/pods?namespace=a/b"),
            Err(RouteError::Name(..))
        ));
    }
}
