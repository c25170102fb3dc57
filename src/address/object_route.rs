//! One object's address (a contract, like every hash route):
//! `#/[{cluster}/]{group}/{version}/{resource}/{namespace}/{name}[?tab=TAB]`,
//! with `core` for the core API group, `_` as the namespace of a
//! cluster-scoped object, the cluster as in a table's address
//! (`super::route`), and the tab shown when it is not the YAML, so
//! "this pod's story" is a link that can be shared and reopened, and the browser's back button returns to the table
//! it was opened from. Which table shows behind the object is decided here
//! too: the one the user came from when it holds the object's resource and
//! namespace, else the object's namespace of its resource. Pure parsing
//! and formatting, tested natively.

use std::fmt;

use deltascope_facts::percent::{decode_query_value, encode_query_value};

use super::route::{group_of_segment, group_segment, split_cluster, write_start, Route};

/// The namespace segment of a cluster-scoped object.
const CLUSTER_SCOPED: &str = "_";

/// The object view's tabs, as its address names them (`?tab=history`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ObjectTab {
    #[default]
    Yaml,
    Json,
    History,
    Story,
    Events,
    Related,
    Usage,
}

impl ObjectTab {
    const ALL: [ObjectTab; 7] = [
        ObjectTab::Yaml,
        ObjectTab::Json,
        ObjectTab::History,
        ObjectTab::Story,
        ObjectTab::Events,
        ObjectTab::Related,
        ObjectTab::Usage,
    ];

    /// How the address writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectTab::Yaml => "yaml",
            ObjectTab::Json => "json",
            ObjectTab::History => "history",
            ObjectTab::Story => "story",
            ObjectTab::Events => "events",
            ObjectTab::Related => "related",
            ObjectTab::Usage => "usage",
        }
    }

    /// The tab `word` names; `None` for any other word.
    pub fn parse(word: &str) -> Option<ObjectTab> {
        ObjectTab::ALL.into_iter().find(|tab| tab.as_str() == word)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRoute {
    /// serve's name of the object's cluster; `None`: the default one.
    pub cluster: Option<String>,
    /// `""` for the core group (written `core` in the URL).
    pub group: String,
    pub version: String,
    pub resource: String,
    /// `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    pub name: String,
    /// The tab the address names (`?tab=`; an unknown one is ignored, as
    /// old links must keep working): `None` for the view's default.
    pub tab: Option<ObjectTab>,
}

impl ObjectRoute {
    /// The object of store key `key` (`namespace/name`, or `name` when
    /// cluster-scoped) of `group/version/resource`.
    pub fn of_key(group: &str, version: &str, resource: &str, key: &str) -> ObjectRoute {
        let (namespace, name) = match key.split_once('/') {
            Some((namespace, name)) => (Some(namespace.to_string()), name),
            None => (None, key),
        };
        ObjectRoute {
            cluster: None,
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            namespace,
            name: name.to_string(),
            tab: None,
        }
    }

    /// The object of store key `key` of the table `route` shows (its
    /// resource, in its cluster).
    pub fn in_table(route: &Route, key: &str) -> ObjectRoute {
        ObjectRoute::of_key(&route.group, &route.version, &route.resource, key)
            .in_cluster(route.cluster.clone())
    }

    /// The same address in `cluster` (`None`: the default one).
    pub fn in_cluster(self, cluster: Option<String>) -> ObjectRoute {
        ObjectRoute { cluster, ..self }
    }

    /// The same object's address showing `tab` (the YAML needs no word).
    pub fn with_tab(&self, tab: ObjectTab) -> ObjectRoute {
        ObjectRoute {
            tab: (tab != ObjectTab::Yaml).then_some(tab),
            ..self.clone()
        }
    }

    /// Parses `location.hash`; `None` when it is not one object's address.
    pub fn parse(hash: &str) -> Option<ObjectRoute> {
        let hash = hash.strip_prefix('#').unwrap_or(hash);
        let (path, query) = hash.split_once('?').unwrap_or((hash, ""));
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (cluster, segments) = split_cluster(&segments).ok()?;
        let [group, version, resource, namespace, name] = segments else {
            return None;
        };
        let name = decode_query_value(name)?;
        let kubernetes_name = |s: &str| {
            !s.is_empty()
                && s.len() <= 253
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'))
        };
        let api_name = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        if ![*group, *version, *resource].iter().all(|s| api_name(s))
            || !kubernetes_name(&name)
            || !(kubernetes_name(namespace) || *namespace == CLUSTER_SCOPED)
        {
            return None;
        }
        Some(ObjectRoute {
            cluster,
            group: group_of_segment(group).to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            namespace: (*namespace != CLUSTER_SCOPED).then(|| namespace.to_string()),
            name,
            tab: query
                .split('&')
                .find_map(|pair| pair.strip_prefix("tab="))
                .and_then(ObjectTab::parse)
                .filter(|tab| *tab != ObjectTab::Yaml),
        })
    }

    /// The object's store key: `namespace/name`, or `name`.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The table shown behind the object: `last` (the table the user was
    /// on) when it is of the same cluster and resource and holds the
    /// object's namespace, else `holding` (a kept view known to hold the
    /// object), else the object's namespace of its resource in its cluster.
    pub fn table_behind(&self, last: Option<&Route>, holding: Option<Route>) -> Route {
        let same_resource = |r: &Route| {
            r.cluster == self.cluster && r.group == self.group && r.resource == self.resource
        };
        if let Some(last) = last.filter(|r| {
            same_resource(r)
                && r.label_selector.is_none()
                && r.field_selector.is_none()
                && (r.namespace.is_none() || r.namespace == self.namespace)
        }) {
            return last.clone();
        }
        if let Some(holding) = holding.filter(same_resource) {
            return holding;
        }
        Route {
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            ..Route::new(&self.group, &self.version, &self.resource)
        }
    }
}

impl fmt::Display for ObjectRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = group_segment(&self.group);
        write_start(f, self.cluster.as_deref())?;
        write!(
            f,
            "{group}/{}/{}/{}/{}",
            self.version,
            self.resource,
            self.namespace.as_deref().unwrap_or(CLUSTER_SCOPED),
            encode_query_value(&self.name)
        )?;
        match self.tab {
            Some(tab) => write!(f, "?tab={}", tab.as_str()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_of_another_cluster_names_it_first() {
        let hash = "#/b/apps/v1/deployments/shop/cart?tab=story";
        let object = ObjectRoute::parse(hash).unwrap();
        assert_eq!(object.cluster.as_deref(), Some("b"));
        assert_eq!(
            (object.resource.as_str(), object.key()),
            ("deployments", "shop/cart".into())
        );
        assert_eq!(object.to_string(), hash);
        // The table behind it is its cluster's, never the default one's.
        let default_table = Route::new("apps", "v1", "deployments");
        let behind = object.table_behind(Some(&default_table), None);
        assert_eq!(behind.to_string(), "#/b/apps/v1/deployments?namespace=shop");
        let table_b = Route::new("apps", "v1", "deployments").in_cluster(Some("b".into()));
        assert_eq!(object.table_behind(Some(&table_b), None), table_b);
        assert_eq!(
            ObjectRoute::in_table(&table_b, "shop/cart"),
            object.with_tab(ObjectTab::Yaml)
        );
        // Without a cluster, the same five segments as ever.
        let plain = ObjectRoute::parse("#/core/v1/pods/shop/web-1").unwrap();
        assert_eq!((plain.cluster, plain.name.as_str()), (None, "web-1"));
        assert_eq!(ObjectRoute::parse("#/%zz/core/v1/pods/shop/web-1"), None);
    }

    #[test]
    fn an_object_address_round_trips_for_namespaced_and_cluster_scoped_objects() {
        for (hash, key) in [
            ("#/core/v1/pods/default/web-1", "default/web-1"),
            ("#/apps/v1/deployments/shop/web", "shop/web"),
            ("#/core/v1/nodes/_/node-1", "node-1"),
            (
                "#/rbac.authorization.k8s.io/v1/clusterroles/_/system:controller:job",
                "system:controller:job",
            ),
        ] {
            let route = ObjectRoute::parse(hash).expect(hash);
            assert_eq!(route.key(), key, "{hash}");
            let again = ObjectRoute::of_key(&route.group, &route.version, &route.resource, key);
            assert_eq!(again, route);
            assert_eq!(
                ObjectRoute::parse(&route.to_string()).as_ref(),
                Some(&route),
                "{hash} → {route}"
            );
        }
        assert_eq!(
            ObjectRoute::parse("#/core/v1/nodes/_/node-1").map(|r| r.namespace),
            Some(None)
        );
    }

    #[test]
    fn an_address_names_the_tab_shown() {
        let history =
            ObjectRoute::parse("#/core/v1/pods/default/web-1?tab=history").expect("an object");
        assert_eq!(history.tab, Some(ObjectTab::History));
        assert_eq!(history.key(), "default/web-1");
        assert_eq!(
            history.to_string(),
            "#/core/v1/pods/default/web-1?tab=history"
        );
        let plain = ObjectRoute::of_key("", "v1", "pods", "default/web-1");
        assert_eq!(
            plain.with_tab(ObjectTab::Story).to_string(),
            "#/core/v1/pods/default/web-1?tab=story"
        );
        // The YAML is the default: no word; an unknown tab is the default.
        assert_eq!(
            plain.with_tab(ObjectTab::Yaml).to_string(),
            "#/core/v1/pods/default/web-1"
        );
        for hash in [
            "#/core/v1/pods/default/web-1?tab=yaml",
            "#/core/v1/pods/default/web-1?tab=diary",
        ] {
            assert_eq!(
                ObjectRoute::parse(hash).map(|r| r.tab),
                Some(None),
                "{hash}"
            );
        }
        for tab in ObjectTab::ALL {
            assert_eq!(ObjectTab::parse(tab.as_str()), Some(tab));
        }
    }

    #[test]
    fn other_addresses_are_not_objects() {
        for hash in [
            "",
            "#/core/v1/pods",
            "#/core/v1/pods?namespace=default",
            "#/core/v1/pods/default/web-1/log",
            "#/core/v1/pods/default/",
            "#/core/v1/pods//web",
            "#/Core/v1/pods/default/web",
            "#/core/v1/pods/default/web%zz",
            "#/core/v1/pods/def ault/web",
        ] {
            assert_eq!(ObjectRoute::parse(hash), None, "{hash:?}");
        }
    }

    #[test]
    fn the_table_behind_is_where_the_user_was_when_it_holds_the_object() {
        let object = ObjectRoute::parse("#/core/v1/pods/shop/web-1").expect("route");
        let everywhere = Route::new("", "v1", "pods");
        assert_eq!(object.table_behind(Some(&everywhere), None), everywhere);
        let shop = Route::parse("#/core/v1/pods?namespace=shop").expect("route");
        assert_eq!(object.table_behind(Some(&shop), None), shop);
        // another namespace, another resource, or a selector: not that table
        let kept = Route::parse("#/core/v1/pods?labelSelector=app%3Dweb").expect("route");
        for last in [
            "#/core/v1/pods?namespace=default",
            "#/apps/v1/deployments",
            "#/core/v1/pods?labelSelector=app%3Dweb",
        ] {
            let last = Route::parse(last).expect("route");
            assert_eq!(object.table_behind(Some(&last), None), shop, "{last}");
            assert_eq!(
                object.table_behind(Some(&last), Some(kept.clone())),
                kept,
                "a kept view holding the object wins over a new one"
            );
        }
        let node = ObjectRoute::parse("#/core/v1/nodes/_/n1").expect("route");
        assert_eq!(node.table_behind(None, None), Route::new("", "v1", "nodes"));
    }
}
