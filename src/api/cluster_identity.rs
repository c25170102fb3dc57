//! Who the cluster behind the page is, as the page reads it: the
//! `kube-system` Namespace's uid (`GET /api/v1/namespaces/kube-system`,
//! the identity the recorder and serve's `/_deltascope/clusters` use too:
//! a new cluster, or a simulated one restarted, has another), and the
//! name serve gives the cluster it serves at `/api/…` (the default entry of
//! `GET /_deltascope/clusters`; absent under `trunk serve`). Read from any
//! answer, whatever its status; what the page does with them is
//! `crate::app::cluster_identity`.

use serde::Deserialize;

/// What one answer of `GET /api/v1/namespaces/kube-system` says of the
/// cluster's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityAnswer {
    /// The namespace's uid.
    Known(String),
    /// The cluster answered but will not say (403, no such namespace, a
    /// body that is no Namespace): asking again gives the same.
    Unreadable(String),
    /// No useful answer now (5xx, 429, 401, a body cut short): ask again
    /// later.
    NoAnswer(String),
}

#[derive(Deserialize)]
struct Namespace {
    #[serde(default)]
    metadata: NamespaceMeta,
}

#[derive(Deserialize, Default)]
struct NamespaceMeta {
    #[serde(default)]
    uid: String,
}

/// The path the page asks.
pub const KUBE_SYSTEM_PATH: &str = "/api/v1/namespaces/kube-system";

/// What the answer `status`, `body` says.
pub fn identity_answer(status: u16, body: &[u8]) -> IdentityAnswer {
    match status {
        200 => match serde_json::from_slice::<Namespace>(body) {
            Ok(namespace) if !namespace.metadata.uid.is_empty() => {
                IdentityAnswer::Known(namespace.metadata.uid)
            }
            Ok(_) => IdentityAnswer::Unreadable("its kube-system namespace has no uid".into()),
            Err(_) => IdentityAnswer::Unreadable(format!(
                "{KUBE_SYSTEM_PATH} answered with something that is not a Namespace"
            )),
        },
        403 => IdentityAnswer::Unreadable(format!(
            "reading {KUBE_SYSTEM_PATH} is forbidden (403): the user may not get namespaces"
        )),
        404 => IdentityAnswer::Unreadable("it has no kube-system namespace".into()),
        401 => IdentityAnswer::NoAnswer("the session is missing or expired (401)".into()),
        other => IdentityAnswer::NoAnswer(format!("{KUBE_SYSTEM_PATH} answered HTTP {other}")),
    }
}

/// The path of serve's clusters.
pub const CLUSTERS_PATH: &str = "/_deltascope/clusters";

/// One cluster serve serves, as `GET /_deltascope/clusters` says it
/// (the fields the page reads; the contract is in docs/contracts.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServedCluster {
    pub name: String,
    /// The one at `/api/…`; every other is at `/clusters/{name}/…`.
    #[serde(default)]
    pub default: bool,
    /// The `kube-system` namespace's uid, once read.
    #[serde(default)]
    pub identity: Option<String>,
    /// `starting`, `up` or `down`.
    #[serde(default)]
    pub state: String,
    /// Why it does not answer (its `kubectl proxy`'s last words).
    #[serde(default)]
    pub error: Option<String>,
    /// The identity answering before, once another answers behind the name.
    #[serde(default)]
    pub identity_changed_from: Option<String>,
}

/// The clusters serve serves (the default first, as serve lists them), from an answer of
/// `GET /_deltascope/clusters`; `None` for any other answer (no serve:
/// `trunk serve` answers with its page or a 404).
pub fn served_clusters(status: u16, body: &[u8]) -> Option<Vec<ServedCluster>> {
    if status != 200 {
        return None;
    }
    let mut clusters: Vec<ServedCluster> = serde_json::from_slice(body).ok()?;
    clusters.retain(|cluster| !cluster.name.is_empty());
    Some(clusters)
}

/// The name serve gives the default cluster (the one at `/api/…`), from an
/// answer of `GET /_deltascope/clusters`.
pub fn default_cluster_name(status: u16, body: &[u8]) -> Option<String> {
    served_clusters(status, body)?
        .into_iter()
        .find(|cluster| cluster.default)
        .map(|cluster| cluster.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_gives_its_uid() {
        let body = br#"{"kind":"Namespace","metadata":{"name":"kube-system","uid":"4f1c"}}"#;
        assert_eq!(
            identity_answer(200, body),
            IdentityAnswer::Known("4f1c".into())
        );
    }

    #[test]
    fn a_refusal_is_unreadable_and_an_outage_is_no_answer() {
        assert!(matches!(
            identity_answer(403, b"{}"),
            IdentityAnswer::Unreadable(why) if why.contains("forbidden")
        ));
        assert!(matches!(
            identity_answer(404, b""),
            IdentityAnswer::Unreadable(_)
        ));
        assert!(matches!(
            identity_answer(200, b"<html>"),
            IdentityAnswer::Unreadable(_)
        ));
        assert!(matches!(
            identity_answer(200, br#"{"metadata":{}}"#),
            IdentityAnswer::Unreadable(_)
        ));
        assert!(matches!(
            identity_answer(502, b"bad gateway"),
            IdentityAnswer::NoAnswer(why) if why.contains("502")
        ));
        assert!(matches!(
            identity_answer(401, b""),
            IdentityAnswer::NoAnswer(_)
        ));
    }

    #[test]
    fn the_default_cluster_is_named_by_serve_only() {
        let body =
            br#"[{"name":"b","default":false},{"name":"prod","default":true,"identity":null}]"#;
        assert_eq!(default_cluster_name(200, body), Some("prod".into()));
        assert_eq!(default_cluster_name(404, body), None);
        assert_eq!(default_cluster_name(200, b"<!doctype html>"), None);
        assert_eq!(default_cluster_name(200, b"[]"), None);
    }
}
