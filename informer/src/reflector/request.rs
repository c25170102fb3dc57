//! The requests a reflector sends, built in one place: the path and query
//! of a list page, a watch and a streaming list, and the `Accept` header.
//! [`ListFrom`] is client-go's choice of resourceVersion for a (re)list;
//! [`Printing`] is whether the server is asked for `meta.k8s.io/v1` Tables.

use deltascope_facts::percent::encode_query_value;

use crate::config::InformerConfig;
use crate::table::TABLE_ACCEPT;

/// Which resourceVersion a list asks for (client-go's
/// `relistResourceVersion`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListFrom {
    /// The very first list: `resourceVersion=0`, any cached state will do.
    Any,
    /// A relist: data at least as fresh as what was last seen.
    NotOlderThan(String),
    /// After the server said the last resourceVersion is expired or too
    /// large: no resourceVersion, the most recent state.
    Latest,
}

impl ListFrom {
    /// Relisting after having seen `rv` (`Any` if nothing was seen).
    pub(crate) fn after(rv: &str) -> ListFrom {
        if rv.is_empty() {
            ListFrom::Any
        } else {
            ListFrom::NotOlderThan(rv.to_owned())
        }
    }

    /// The `resourceVersion` of a paginated list (`""`: leave it out).
    fn for_list(&self) -> &str {
        match self {
            ListFrom::Any => "0",
            ListFrom::NotOlderThan(rv) => rv,
            ListFrom::Latest => "",
        }
    }

    /// The `resourceVersion` of a streaming list (`""`: leave it out, which
    /// the server reads as "from the most recent state").
    fn for_streaming(&self) -> &str {
        match self {
            ListFrom::NotOlderThan(rv) => rv,
            ListFrom::Any | ListFrom::Latest => "",
        }
    }
}

/// Plain JSON objects, or server-side printing (Tables with the object
/// included, so every object carries the cells the server printed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Printing {
    Plain,
    Table,
}

/// One request to send: its path and query, and its `Accept` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub path_and_query: String,
    pub accept: Option<&'static str>,
}

/// Builds the requests of one informer.
#[derive(Debug, Clone)]
pub(crate) struct Requests {
    base_path: String,
    /// `&labelSelector=…&fieldSelector=…`, encoded once.
    selectors: String,
    page_size: u32,
    printing: Printing,
}

impl Requests {
    pub(crate) fn new(config: &InformerConfig) -> Requests {
        let mut selectors = String::new();
        for (name, value) in [
            ("labelSelector", &config.label_selector),
            ("fieldSelector", &config.field_selector),
        ] {
            if let Some(value) = value.as_deref().filter(|s| !s.is_empty()) {
                selectors.push_str(&format!("&{name}={}", encode_query_value(value)));
            }
        }
        Requests {
            base_path: format!(
                "{}{}",
                config.api_root.trim_end_matches('/'),
                config.resource.api_path(config.namespace.as_deref())
            ),
            selectors,
            page_size: config.page_size.max(1),
            printing: if config.server_table {
                Printing::Table
            } else {
                Printing::Plain
            },
        }
    }

    /// `/api/v1/namespaces/shop/pods`.
    pub(crate) fn base_path(&self) -> &str {
        &self.base_path
    }

    /// One page of a paginated list: the first (at `from`) or the one a
    /// `continue` token names.
    pub(crate) fn list_page(&self, from: &ListFrom, continue_token: Option<&str>) -> Request {
        let mut query = format!("{}?limit={}", self.base_path, self.page_size);
        match continue_token {
            Some(token) => push_param(&mut query, "continue", token),
            None => push_param(&mut query, "resourceVersion", from.for_list()),
        }
        self.finish(query)
    }

    /// A watch from `resource_version`, closed by the server after
    /// `timeout_secs`.
    pub(crate) fn watch(&self, resource_version: &str, timeout_secs: u64) -> Request {
        let mut query = format!("{}?watch=true&allowWatchBookmarks=true", self.base_path);
        query.push_str("&resourceVersion=");
        query.push_str(&encode_query_value(resource_version));
        query.push_str(&format!("&timeoutSeconds={timeout_secs}"));
        self.finish(query)
    }

    /// A streaming list: a watch that first sends every object
    /// (`sendInitialEvents`) and a bookmark marking the end.
    pub(crate) fn streaming_list(&self, from: &ListFrom, timeout_secs: u64) -> Request {
        let mut query = format!("{}?watch=true&allowWatchBookmarks=true", self.base_path);
        query.push_str("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
        push_param(&mut query, "resourceVersion", from.for_streaming());
        query.push_str(&format!("&timeoutSeconds={timeout_secs}"));
        self.finish(query)
    }

    fn finish(&self, mut query: String) -> Request {
        query.push_str(&self.selectors);
        let accept = match self.printing {
            Printing::Plain => None,
            Printing::Table => {
                query.push_str("&includeObject=Object");
                Some(TABLE_ACCEPT)
            }
        };
        Request {
            path_and_query: query,
            accept,
        }
    }
}

/// Appends `&name=value` unless `value` is empty.
fn push_param(query: &mut String, name: &str, value: &str) {
    if !value.is_empty() {
        query.push_str(&format!("&{name}={}", encode_query_value(value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ResourceRef;

    fn requests(edit: impl FnOnce(&mut InformerConfig)) -> Requests {
        let mut config = InformerConfig::new(ResourceRef::new("", "v1", "pods", true));
        edit(&mut config);
        Requests::new(&config)
    }

    #[test]
    fn list_pages_ask_for_client_gos_resource_versions() {
        let r = requests(|c| c.namespace = Some("shop".into()));
        let page = |from: &ListFrom, token| r.list_page(from, token).path_and_query;
        assert_eq!(
            page(&ListFrom::Any, None),
            "/api/v1/namespaces/shop/pods?limit=500&resourceVersion=0"
        );
        assert_eq!(
            page(&ListFrom::after("42"), None),
            "/api/v1/namespaces/shop/pods?limit=500&resourceVersion=42"
        );
        assert_eq!(
            page(&ListFrom::Latest, None),
            "/api/v1/namespaces/shop/pods?limit=500"
        );
        assert_eq!(
            page(&ListFrom::Any, Some("a/b=")),
            "/api/v1/namespaces/shop/pods?limit=500&continue=a%2Fb%3D"
        );
        assert_eq!(ListFrom::after(""), ListFrom::Any);
    }

    #[test]
    fn another_clusters_requests_go_under_its_api_root() {
        let r = requests(|c| {
            c.api_root = "/clusters/b/".into();
            c.namespace = Some("shop".into());
        });
        assert_eq!(
            r.list_page(&ListFrom::Any, None).path_and_query,
            "/clusters/b/api/v1/namespaces/shop/pods?limit=500&resourceVersion=0"
        );
        assert!(r
            .watch("7", 300)
            .path_and_query
            .starts_with("/clusters/b/api/v1/namespaces/shop/pods?watch=true"));
        // Two clusters' pods are two informers; the same root is one.
        let pods = || InformerConfig::new(ResourceRef::new("", "v1", "pods", true));
        assert_ne!(
            pods().share_key(),
            pods().api_root("/clusters/b").share_key()
        );
        assert_eq!(
            pods().api_root("/clusters/b").share_key(),
            pods().api_root("/clusters/b/").share_key()
        );
    }

    #[test]
    fn watches_and_streaming_lists() {
        let r = requests(|c| c.label_selector = Some("app in (a, b)".into()));
        assert_eq!(
            r.watch("7", 300).path_and_query,
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=7\
             &timeoutSeconds=300&labelSelector=app%20in%20%28a%2C%20b%29"
        );
        let streaming = r.streaming_list(&ListFrom::Any, 400).path_and_query;
        assert!(streaming.contains(
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=400"
        ));
        assert!(r
            .streaming_list(&ListFrom::after("9"), 400)
            .path_and_query
            .contains("NotOlderThan&resourceVersion=9&"));
        assert_eq!(r.watch("7", 300).accept, None);
    }

    #[test]
    fn table_printing_asks_for_tables_with_objects() {
        let r = requests(|c| {
            c.server_table = true;
            c.field_selector = Some("spec.nodeName=n1".into());
        });
        let request = r.list_page(&ListFrom::Any, None);
        assert_eq!(request.accept, Some(TABLE_ACCEPT));
        assert!(request
            .path_and_query
            .ends_with("&fieldSelector=spec.nodeName%3Dn1&includeObject=Object"));
    }
}
