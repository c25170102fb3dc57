//! API discovery documents, read once for the page (its resource picker
//! and command bar) and the recorder (what it lists and watches): which
//! resources a cluster serves (core, groups, CRDs), whether each is
//! namespaced, its kind and short names, and whether it can be listed and
//! watched. Pure parsing of `/api`, `/api/v1`, `/apis` and
//! `/apis/{group}/{version}` bodies; the callers fetch them.

use serde::Deserialize;

use crate::resources::qualified;

/// One resource that can be listed and watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// Plural name, e.g. `pods`.
    pub plural: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
}

impl ApiResource {
    /// `pods`, `deployments.apps`: the resource's name as the page's
    /// `data-resource` and the recorder write it.
    pub fn display_name(&self) -> String {
        qualified(&self.plural, &self.group)
    }

    /// True when `word` names this resource: plural, singular kind, short name, or `plural.group`.
    pub fn is_named(&self, word: &str) -> bool {
        let word = word.to_ascii_lowercase();
        word == self.plural
            || word == self.kind.to_ascii_lowercase()
            || word == self.display_name()
            || self.short_names.contains(&word)
    }
}

/// A discovery document that is not what its path should answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryError {
    Malformed { path: String, message: String },
}

impl std::fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiscoveryError::Malformed { path, message } => write!(
                f,
                "the discovery document from {path} is not valid JSON of the expected shape: {message}"
            ),
        }
    }
}

impl std::error::Error for DiscoveryError {}

#[derive(Deserialize)]
struct ApiVersions {
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceList {
    group_version: String,
    #[serde(default)]
    resources: Vec<RawResource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResource {
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    #[serde(default)]
    groups: Vec<Group>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Group {
    preferred_version: Option<GroupVersion>,
    #[serde(default)]
    versions: Vec<GroupVersion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupVersion {
    group_version: String,
}

fn parse<'a, T: Deserialize<'a>>(path: &str, body: &'a [u8]) -> Result<T, DiscoveryError> {
    serde_json::from_slice(body).map_err(|e| DiscoveryError::Malformed {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// `/api` → the core group's versions (`v1`).
pub fn core_versions(body: &[u8]) -> Result<Vec<String>, DiscoveryError> {
    Ok(parse::<ApiVersions>("/api", body)?.versions)
}

/// `/apis` → the preferred `group/version` of every group.
pub fn preferred_group_versions(body: &[u8]) -> Result<Vec<String>, DiscoveryError> {
    let list: GroupList = parse("/apis", body)?;
    Ok(list
        .groups
        .into_iter()
        .filter_map(|g| {
            g.preferred_version
                .or_else(|| g.versions.into_iter().next())
                .map(|v| v.group_version)
        })
        .collect())
}

/// An `APIResourceList` body → its resources that support list and watch
/// (subresources such as `pods/log` are skipped).
pub fn listable_resources(path: &str, body: &[u8]) -> Result<Vec<ApiResource>, DiscoveryError> {
    let list: ResourceList = parse(path, body)?;
    let (group, version) = match list.group_version.split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), list.group_version.clone()),
    };
    let can = |r: &RawResource, verb: &str| r.verbs.iter().any(|v| v == verb);
    Ok(list
        .resources
        .into_iter()
        .filter(|r| !r.name.contains('/') && can(r, "list") && can(r, "watch"))
        .map(|r| ApiResource {
            group: group.clone(),
            version: version.clone(),
            plural: r.name,
            kind: r.kind,
            namespaced: r.namespaced,
            short_names: r.short_names,
        })
        .collect())
}

/// Finds a resource by any of its names; ties go to the core group, then to
/// the first group discovered (as kubectl prefers).
pub fn find<'a>(resources: &'a [ApiResource], word: &str) -> Option<&'a ApiResource> {
    resources
        .iter()
        .filter(|r| r.is_named(word))
        .min_by_key(|r| !r.group.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: &str = r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[
        {"name":"pods","namespaced":true,"kind":"Pod","shortNames":["po"],"verbs":["get","list","watch"]},
        {"name":"pods/log","namespaced":true,"kind":"Pod","verbs":["get"]},
        {"name":"nodes","namespaced":false,"kind":"Node","shortNames":["no"],"verbs":["get","list","watch"]},
        {"name":"bindings","namespaced":true,"kind":"Binding","verbs":["create"]}]}"#;
    const WIDGETS: &str = r#"{"kind":"APIResourceList","groupVersion":"demo.deltascope.dev/v1","resources":[
        {"name":"widgets","namespaced":true,"kind":"Widget","shortNames":["wg"],"verbs":["get","list","watch"]}]}"#;

    #[test]
    fn resource_lists_keep_listable_top_level_resources() {
        let core = listable_resources("/api/v1", CORE.as_bytes()).unwrap();
        let names: Vec<&str> = core.iter().map(|r| r.plural.as_str()).collect();
        assert_eq!(
            names,
            ["pods", "nodes"],
            "no subresources, no create-only resources"
        );
        assert!(core[0].namespaced && !core[1].namespaced);
        let widgets =
            listable_resources("/apis/demo.deltascope.dev/v1", WIDGETS.as_bytes()).unwrap();
        assert_eq!(widgets[0].display_name(), "widgets.demo.deltascope.dev");
        assert_eq!(
            (widgets[0].group.as_str(), widgets[0].version.as_str()),
            ("demo.deltascope.dev", "v1")
        );
    }

    #[test]
    fn resources_are_found_by_any_name() {
        let mut all = listable_resources("/api/v1", CORE.as_bytes()).unwrap();
        all.extend(listable_resources("/apis/x/v1", WIDGETS.as_bytes()).unwrap());
        for word in ["pods", "po", "pod", "Pod"] {
            assert_eq!(
                find(&all, word).map(|r| r.plural.as_str()),
                Some("pods"),
                "{word}"
            );
        }
        assert_eq!(find(&all, "wg").map(|r| r.kind.as_str()), Some("Widget"));
        assert_eq!(
            find(&all, "widgets.demo.deltascope.dev").map(|r| r.kind.as_str()),
            Some("Widget")
        );
        assert!(find(&all, "gadgets").is_none());
    }

    #[test]
    fn group_lists_give_preferred_versions() {
        let body = r#"{"kind":"APIGroupList","groups":[
            {"name":"apps","preferredVersion":{"groupVersion":"apps/v1","version":"v1"},"versions":[{"groupVersion":"apps/v1","version":"v1"}]},
            {"name":"old","versions":[{"groupVersion":"old/v1beta1","version":"v1beta1"}]}]}"#;
        assert_eq!(
            preferred_group_versions(body.as_bytes()).unwrap(),
            ["apps/v1", "old/v1beta1"]
        );
        assert!(matches!(
            preferred_group_versions(b"not json"),
            Err(DiscoveryError::Malformed { .. })
        ));
    }
}
