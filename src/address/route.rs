//! The page's hash routes (a contract: shared links and the browser tests
//! use them): `#/[{cluster}/]{group}/{version}/{resource}?namespace=NS&labelSelector=SEL&fieldSelector=SEL&wide=1`,
//! with `core` standing for the core API group, `wide=1` showing the
//! server's columns of every priority (kubectl `-o wide`), and the cluster
//! (serve's name for it, percent-encoded) before the group for any but the
//! default one. The cluster is told from the group by the segment after
//! it: a version (`v1`, `v1beta2`) follows a group, never a cluster. Pure parsing and
//! formatting, so a view is a link and the same code is tested natively.

use deltascope_facts::percent::{decode_query_value, encode_query_value};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The cluster by serve's name for it; `None`: the default cluster
    /// (at `/api/…`).
    pub cluster: Option<String>,
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
    #[error("{0:?} is not a cluster name serve could give (percent-encoded, at most 253 characters, no control characters)")]
    Cluster(String),
}

/// Whether `segment` is an API version (`v1`, `v2beta1`, `v1alpha3`): what
/// follows a group in an address, and never a cluster.
pub fn is_api_version(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let tail = &rest[digits..];
    tail.is_empty()
        || ["alpha", "beta"].iter().any(|stage| {
            tail.strip_prefix(stage)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// The cluster a leading address segment names (percent-decoded), or why
/// it names none.
pub fn cluster_of_segment(segment: &str) -> Result<String, RouteError> {
    let name = decode_query_value(segment).ok_or_else(|| RouteError::Cluster(segment.into()))?;
    if name.is_empty() || name.len() > 253 || name.chars().any(char::is_control) {
        return Err(RouteError::Cluster(segment.into()));
    }
    Ok(name)
}

/// How a cluster is written as an address's first segment.
pub fn cluster_segment(cluster: &str) -> String {
    encode_query_value(cluster)
}

/// An address's segments with the cluster it names first taken off: a
/// leading segment is a cluster when the one after it is a group and the
/// one after that a version (a version follows a group, never a cluster).
pub fn split_cluster<'a, 'b>(
    segments: &'b [&'a str],
) -> Result<(Option<String>, &'b [&'a str]), RouteError> {
    match segments {
        [cluster, group, version, ..] if !is_api_version(group) && is_api_version(version) => {
            Ok((Some(cluster_of_segment(cluster)?), &segments[1..]))
        }
        _ => Ok((None, segments)),
    }
}

/// Writes `#/` and, for any cluster but the default one, its segment.
pub fn write_start(f: &mut fmt::Formatter<'_>, cluster: Option<&str>) -> fmt::Result {
    f.write_str("#/")?;
    match cluster {
        Some(cluster) => write!(f, "{}/", cluster_segment(cluster)),
        None => Ok(()),
    }
}

/// Where a cluster's API is under serve: `""` for the default one, else
/// `/clusters/{name}` (`/clusters/{name}/api/v1/pods`).
pub fn api_root(cluster: Option<&str>) -> String {
    cluster.map_or_else(String::new, |name| {
        format!("/clusters/{}", encode_query_value(name))
    })
}

impl Default for Route {
    fn default() -> Self {
        Route::new("", "v1", "pods")
    }
}

impl Route {
    pub fn new(group: &str, version: &str, resource: &str) -> Route {
        Route {
            cluster: None,
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
        let (cluster, segments) = split_cluster(&segments)?;
        let [group, version, resource] = segments else {
            return Err(RouteError::Shape(hash.to_string()));
        };
        check_name(group, "API group")?;
        check_name(version, "API version")?;
        check_name(resource, "resource name")?;
        let mut route = Route::new(group_of_segment(group), version, resource);
        route.cluster = cluster;
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
        match &self.cluster {
            Some(cluster) => format!("{cluster}: {}", self.lane_label_in_cluster()),
            None => self.lane_label_in_cluster(),
        }
    }

    /// Where this view's cluster's API is under serve ([`api_root`]).
    pub fn api_root(&self) -> String {
        api_root(self.cluster.as_deref())
    }

    /// The same view in `cluster` (`None`: the default one).
    pub fn in_cluster(&self, cluster: Option<String>) -> Route {
        Route {
            cluster,
            ..self.clone()
        }
    }

    fn lane_label_in_cluster(&self) -> String {
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
        write_start(f, self.cluster.as_deref())?;
        write!(f, "{group}/{}/{}", self.version, self.resource)?;
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
    fn a_cluster_before_the_group_names_another_cluster() {
        let route = Route::parse("#/prod/apps/v1/deployments?namespace=shop").unwrap();
        assert_eq!(route.cluster.as_deref(), Some("prod"));
        assert_eq!(
            (route.group.as_str(), route.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!(
            route.to_string(),
            "#/prod/apps/v1/deployments?namespace=shop"
        );
        assert_eq!(route.api_root(), "/clusters/prod");
        assert_eq!(route.lane_label(), "prod: deployments.apps (ns=shop)");
        // The default cluster has no segment; another is a different view.
        let default = Route::parse("#/core/v1/pods").unwrap();
        assert_eq!(
            (default.cluster.as_deref(), default.api_root()),
            (None, String::new())
        );
        let other = Route::parse("#/b/core/v1/pods").unwrap();
        assert_eq!(other.cluster.as_deref(), Some("b"));
        assert_ne!(other.data_key(), Route::default().data_key());
        assert_eq!(Route::default().in_cluster(Some("b".into())), other);
        // A context name with any character round-trips, percent-encoded.
        let eks = Route::default().in_cluster(Some("arn:aws:eks:eu-west-1:1:cluster/prod".into()));
        assert_eq!(Route::parse(&eks.to_string()).unwrap(), eks);
        assert_eq!(
            eks.api_root(),
            "/clusters/arn%3Aaws%3Aeks%3Aeu-west-1%3A1%3Acluster%2Fprod"
        );
        // A cluster named like a version is still a cluster before a group.
        assert_eq!(
            Route::parse("#/v1/core/v1/pods")
                .unwrap()
                .cluster
                .as_deref(),
            Some("v1")
        );
        assert!(matches!(
            Route::parse("#/%zz/core/v1/pods"),
            Err(RouteError::Cluster(_))
        ));
        assert!(matches!(
            Route::parse("#/a/b/c/d"),
            Err(RouteError::Shape(_))
        ));
        for version in ["v1", "v2beta1", "v1alpha3", "v10"] {
            assert!(is_api_version(version), "{version}");
        }
        for other in ["core", "apps", "v", "vbeta1", "v1beta", "v1gamma1", "1"] {
            assert!(!is_api_version(other), "{other}");
        }
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
