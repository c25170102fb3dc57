//! Which cluster a forwarded request goes to: serve forwards to one or
//! several clusters, each through its own [`Forwarder`]. The first is the
//! default and answers at the paths a single-cluster serve always had
//! (`/api/…`, `/apis/…`); every cluster also answers under
//! `/clusters/{name}/…`. The browser's requests and the channel's streams
//! are routed here alike, after the path was normalised and classified (the
//! prefix changes nothing of the rules: see [`crate::paths::classify`]).

use axum::response::Response;
use http::StatusCode;

use crate::forward::Forwarder;
use crate::paths::{split_cluster, NormalPath};
use crate::status::status;

/// The clusters' forwarders, the default first.
pub struct Upstreams {
    default: Forwarder,
    by_name: Vec<(String, Forwarder)>,
}

impl Upstreams {
    /// One cluster, reached at the default paths only.
    pub fn single(forwarder: Forwarder) -> Self {
        Upstreams {
            default: forwarder,
            by_name: Vec::new(),
        }
    }

    /// Several clusters by name; the first is the default. `None` when empty.
    pub fn named(by_name: Vec<(String, Forwarder)>) -> Option<Self> {
        let default = by_name.first()?.1.clone();
        Some(Upstreams { default, by_name })
    }

    /// The default cluster's forwarder.
    pub fn default_forwarder(&self) -> &Forwarder {
        &self.default
    }

    /// Every cluster, the default first, by name (`None`: the one
    /// cluster of a serve given a plain `--upstream URL`, which has none).
    pub fn all(&self) -> Vec<(Option<String>, Forwarder)> {
        if self.by_name.is_empty() {
            return vec![(None, self.default.clone())];
        }
        let named = self.by_name.iter();
        named
            .map(|(name, f)| (Some(name.clone()), f.clone()))
            .collect()
    }

    /// The forwarder for an API `path` and the path it is sent:
    /// `/clusters/{name}/rest` goes to that cluster as `/rest`, anything
    /// else to the default cluster unchanged.
    pub fn route(&self, path: &NormalPath) -> Result<(Forwarder, NormalPath), UnknownCluster> {
        let Some((name, rest)) = split_cluster(path) else {
            return Ok((self.default.clone(), path.clone()));
        };
        match self.by_name.iter().find(|(known, _)| known == name) {
            Some((_, forwarder)) => Ok((forwarder.clone(), rest)),
            None => Err(UnknownCluster {
                name: name.to_owned(),
                known: self.by_name.iter().map(|(n, _)| n.clone()).collect(),
            }),
        }
    }
}

/// A `/clusters/{name}/…` path whose name serve does not know.
#[derive(Debug, thiserror::Error)]
#[error("this deltascope serve has no cluster named {name:?} (it serves: {})",
    if known.is_empty() { "one cluster, at /api and /apis".to_owned() } else { known.join(", ") })]
pub struct UnknownCluster {
    pub name: String,
    pub known: Vec<String>,
}

impl UnknownCluster {
    /// 404 with a Status.
    pub fn into_response(self) -> Response {
        status(StatusCode::NOT_FOUND, "NotFound", self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::SessionLimits;
    use crate::paths::normalise;

    #[test]
    fn a_prefixed_path_goes_to_its_cluster_unprefixed_and_an_unknown_name_is_404() {
        let sim = || Forwarder::sim(axum::Router::new(), false, SessionLimits::default());
        let upstreams = Upstreams::named(vec![("a".into(), sim()), ("b".into(), sim())]).unwrap();
        let route = |p: &str| upstreams.route(&normalise(p).unwrap());
        assert_eq!(
            route("/api/v1/pods").ok().unwrap().1.as_str(),
            "/api/v1/pods"
        );
        assert_eq!(
            route("/clusters/b/apis/apps/v1/deployments")
                .ok()
                .unwrap()
                .1
                .as_str(),
            "/apis/apps/v1/deployments"
        );
        let unknown = route("/clusters/c/api/v1/pods").err().unwrap();
        assert_eq!(
            unknown.to_string(),
            "this deltascope serve has no cluster named \"c\" (it serves: a, b)"
        );
        assert_eq!(unknown.into_response().status(), StatusCode::NOT_FOUND);
        assert!(Upstreams::named(Vec::new()).is_none());
    }
}
