//! The logs view's address (a contract, like every hash route):
//! `#/[{cluster}/]core/v1/pods/NS/NAME/log` (the cluster as in a table's
//! address, `super::route`) for a
//! pod (`?container=C` for one container, none for all of them, init
//! containers included) and `#/apps/v1/deployments/NS/NAME/log` for every
//! pod of a workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job),
//! with the reading options in the query: `previous=true`, `tail=N`,
//! `since=S` (seconds). Pure parsing and formatting, tested natively, so a
//! logs view is a link like any other.

use std::fmt;

use super::route::{group_of_segment, group_segment, split_cluster, write_start, Route};
use deltascope_facts::percent::{decode_query_value, encode_query_value};

/// Whose logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// One pod: one container, or all of them (`None`).
    Pod { container: Option<String> },
    /// Every pod a workload selects (`kind` as in the object: `Deployment`…).
    Workload { kind: &'static str },
}

/// A logs view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRoute {
    /// serve's name of the pods' cluster; `None`: the default one.
    pub cluster: Option<String>,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub target: LogTarget,
    /// The crashed container's last run.
    pub previous: bool,
    /// Start with the last N lines of each container.
    pub tail: Option<u64>,
    /// Start with the lines of the last N seconds.
    pub since: Option<u64>,
}

/// The workloads that own pods through `spec.selector`: (group, plural,
/// kind). A logs view follows their pods; a usage chart and a workloads
/// table sum them (`crate::model::usage_series`).
pub const WORKLOADS: [(&str, &str, &str); 5] = [
    ("apps", "deployments", "Deployment"),
    ("apps", "replicasets", "ReplicaSet"),
    ("apps", "statefulsets", "StatefulSet"),
    ("apps", "daemonsets", "DaemonSet"),
    ("batch", "jobs", "Job"),
];

/// The kind of a resource whose logs a view can show (`Pod` or a workload).
pub fn loggable_kind(group: &str, resource: &str) -> Option<&'static str> {
    if group.is_empty() && resource == "pods" {
        return Some("Pod");
    }
    WORKLOADS
        .iter()
        .find(|(g, plural, _)| *g == group && *plural == resource)
        .map(|(_, _, kind)| *kind)
}

impl LogRoute {
    /// A pod's logs (all containers when `container` is `None`).
    pub fn pod(namespace: &str, name: &str, container: Option<&str>) -> LogRoute {
        LogRoute {
            cluster: None,
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            namespace: namespace.into(),
            name: name.into(),
            target: LogTarget::Pod {
                container: container.map(str::to_owned),
            },
            previous: false,
            tail: None,
            since: None,
        }
    }

    /// The logs of `name` of `group/version/resource` if it has any.
    pub fn of(
        group: &str,
        version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<LogRoute> {
        let kind = loggable_kind(group, resource)?;
        let mut route = LogRoute::pod(namespace, name, None);
        route.group = group.into();
        route.version = version.into();
        route.resource = resource.into();
        if kind != "Pod" {
            route.target = LogTarget::Workload { kind };
        }
        Some(route)
    }

    /// The logs view of the object of store key `key` (`namespace/name`)
    /// of `route`'s resource, if it has logs (a cluster-scoped key has none).
    pub fn of_key(route: &Route, key: &str) -> Option<LogRoute> {
        let (namespace, name) = key.split_once('/')?;
        let logs = LogRoute::of(
            &route.group,
            &route.version,
            &route.resource,
            namespace,
            name,
        )?;
        Some(LogRoute {
            cluster: route.cluster.clone(),
            ..logs
        })
    }

    /// The pods table of the logs' namespace, in their cluster (what the
    /// logs view's header names).
    pub fn pods_route(&self) -> Route {
        self.table_of(Route::default())
    }

    /// The table of the logs' resource (the pods, or the workload's kind)
    /// in their namespace and cluster.
    pub fn resource_route(&self) -> Route {
        self.table_of(Route::new(&self.group, &self.version, &self.resource))
    }

    fn table_of(&self, resource: Route) -> Route {
        Route {
            cluster: self.cluster.clone(),
            namespace: Some(self.namespace.clone()),
            ..resource
        }
    }

    /// Parses `location.hash`; `None` when it is not a logs address.
    pub fn parse(hash: &str) -> Option<LogRoute> {
        let hash = hash.strip_prefix('#').unwrap_or(hash);
        let (path, query) = hash.split_once('?').unwrap_or((hash, ""));
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (cluster, segments) = split_cluster(&segments).ok()?;
        let [group, version, resource, namespace, name, "log"] = segments else {
            return None;
        };
        let group = group_of_segment(group);
        let valid = |s: &str| {
            !s.is_empty()
                && s.len() <= 253
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        };
        if ![*version, *namespace, *name].iter().all(|s| valid(s)) {
            return None;
        }
        let mut route = LogRoute::of(group, version, resource, namespace, name)?;
        route.cluster = cluster;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let Some(value) = decode_query_value(value).filter(|v| !v.is_empty()) else {
                continue;
            };
            match key {
                "container" => {
                    if let LogTarget::Pod { container } = &mut route.target {
                        *container = Some(value);
                    }
                }
                "previous" => route.previous = matches!(value.as_str(), "1" | "true"),
                "tail" | "tailLines" => route.tail = value.parse().ok(),
                "since" | "sinceSeconds" => route.since = value.parse().ok(),
                _ => {} // unknown options are ignored so old links keep working
            }
        }
        Some(route)
    }

    /// `pod web-1` or `deployment web`, for titles.
    pub fn title(&self) -> String {
        let kind = match &self.target {
            LogTarget::Pod { .. } => "pod",
            LogTarget::Workload { kind } => kind,
        };
        format!(
            "{} {}/{}",
            kind.to_ascii_lowercase(),
            self.namespace,
            self.name
        )
    }

    /// The same view with other reading options.
    pub fn with(&self, change: impl FnOnce(&mut LogRoute)) -> LogRoute {
        let mut route = self.clone();
        change(&mut route);
        route
    }
}

impl fmt::Display for LogRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = group_segment(&self.group);
        write_start(f, self.cluster.as_deref())?;
        write!(
            f,
            "{group}/{}/{}/{}/{}/log",
            self.version, self.resource, self.namespace, self.name
        )?;
        let mut query = Vec::new();
        if let LogTarget::Pod {
            container: Some(container),
        } = &self.target
        {
            query.push(format!("container={}", encode_query_value(container)));
        }
        if self.previous {
            query.push("previous=true".into());
        }
        if let Some(n) = self.tail {
            query.push(format!("tail={n}"));
        }
        if let Some(n) = self.since {
            query.push(format!("since={n}"));
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_routes_round_trip_with_options() {
        let route = LogRoute::parse(
            "#/core/v1/pods/shop/web-1/log?container=nginx&previous=true&tail=50&since=300",
        )
        .unwrap();
        assert_eq!(
            route.target,
            LogTarget::Pod {
                container: Some("nginx".into())
            }
        );
        assert!(route.previous);
        assert_eq!((route.tail, route.since), (Some(50), Some(300)));
        assert_eq!(
            route.to_string(),
            "#/core/v1/pods/shop/web-1/log?container=nginx&previous=true&tail=50&since=300"
        );
        let all = LogRoute::parse("/core/v1/pods/shop/web-1/log").unwrap();
        assert_eq!(all.target, LogTarget::Pod { container: None });
        assert_eq!(all.to_string(), "#/core/v1/pods/shop/web-1/log");
    }

    #[test]
    fn logs_of_another_cluster_name_it_first() {
        let hash = "#/b/core/v1/pods/shop/web-1/log?container=nginx";
        let logs = LogRoute::parse(hash).unwrap();
        assert_eq!(logs.cluster.as_deref(), Some("b"));
        assert_eq!(logs.to_string(), hash);
        assert_eq!(
            logs.pods_route().to_string(),
            "#/b/core/v1/pods?namespace=shop"
        );
        let workload = LogRoute::parse("#/b/apps/v1/deployments/shop/web/log").unwrap();
        assert_eq!(
            workload.resource_route().to_string(),
            "#/b/apps/v1/deployments?namespace=shop"
        );
        let table = Route::default().in_cluster(Some("b".into()));
        let of_row = LogRoute::of_key(&table, "shop/web-1").unwrap();
        assert_eq!(of_row.to_string(), "#/b/core/v1/pods/shop/web-1/log");
        // A pod named `log` of another cluster is an object, not logs.
        assert_eq!(LogRoute::parse("#/b/core/v1/pods/shop/log"), None);
    }

    #[test]
    fn workloads_and_refusals() {
        let route = LogRoute::parse("#/apps/v1/deployments/shop/web/log?container=x").unwrap();
        assert_eq!(route.target, LogTarget::Workload { kind: "Deployment" });
        assert_eq!(route.to_string(), "#/apps/v1/deployments/shop/web/log");
        assert_eq!(route.title(), "deployment shop/web");
        assert!(LogRoute::parse("#/batch/v1/jobs/ns/j/log").is_some());
        assert!(LogRoute::parse("#/core/v1/services/shop/web/log").is_none());
        assert!(LogRoute::parse("#/core/v1/pods/shop/web-1").is_none());
        assert!(LogRoute::parse("#/core/v1/pods").is_none());
        assert!(LogRoute::parse("#/core/v1/pods/sh op/web/log").is_none());
        let odd =
            LogRoute::parse("#/core/v1/pods/a/b/log?tail=x&previous=no&container=%ZZ").unwrap();
        assert_eq!((odd.tail, odd.previous), (None, false));
        assert_eq!(odd.target, LogTarget::Pod { container: None });
    }

    #[test]
    fn a_table_rows_logs_are_its_objects_when_its_resource_has_any() {
        let pods = Route::new("", "v1", "pods");
        assert_eq!(
            LogRoute::of_key(&pods, "shop/web-1").map(|r| r.to_string()),
            Some("#/core/v1/pods/shop/web-1/log".to_string())
        );
        let jobs = Route::new("batch", "v1", "jobs");
        assert_eq!(
            LogRoute::of_key(&jobs, "ns/j").map(|r| r.target),
            Some(LogTarget::Workload { kind: "Job" })
        );
        assert_eq!(LogRoute::of_key(&pods, "cluster-scoped"), None);
        assert_eq!(
            LogRoute::of_key(&Route::new("", "v1", "services"), "ns/s"),
            None
        );
    }
}
