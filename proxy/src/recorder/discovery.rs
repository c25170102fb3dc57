//! Which resources the recorder records: every resource discovery lists
//! that supports `list` and `watch` (`/api`, `/api/v1`, `/apis` and each
//! group's preferred version; subresources such as `pods/log` skipped),
//! named as the page's `data-resource` (`pods`, `deployments.apps`), then
//! `--record` / `--no-record` applied ([`Filter`]).
//!
//! The documents are read by `deltascope_facts::discovery`, as the page
//! reads them.

use std::collections::BTreeSet;

use deltascope_facts::discovery;
use deltascope_facts::resources::qualified;
use deltascope_informer::ResourceRef;

use super::upstream::{get_document, GetError, Upstream};

/// One resource to record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DiscoveredResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespaced: bool,
}

impl DiscoveredResource {
    /// As in `data-resource`: `pods`, `deployments.apps`.
    pub fn name(&self) -> String {
        qualified(&self.plural, &self.group)
    }

    /// What the informer lists and watches (all namespaces).
    pub fn resource_ref(&self) -> ResourceRef {
        ResourceRef::new(&self.group, &self.version, &self.plural, self.namespaced)
    }
}

/// What one discovery run found.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// Sorted by name.
    pub resources: Vec<DiscoveredResource>,
    /// Group versions whose documents could not be read this time (an
    /// aggregated API that is down, say), with why: resources recorded from
    /// them keep running rather than being stopped.
    pub failed: Vec<(String, String)>,
    /// `/apis` lists the metrics API (`metrics.k8s.io`): its pods' and
    /// nodes' usage can be sampled (see `usage`).
    pub metrics: bool,
}

impl Discovered {
    /// Whether the group version `group`/`version` was read this time.
    pub fn read(&self, group: &str, version: &str) -> bool {
        let gv = deltascope_facts::resources::api_version(group, version);
        !self.failed.iter().any(|(failed, _)| *failed == gv)
    }
}

/// Why discovery failed as a whole (`/api` or `/apis` unreadable).
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("API discovery: {0}")]
    Get(#[from] GetError),
    #[error("API discovery: {path} is not the document expected: {message}")]
    Malformed { path: String, message: String },
}

impl DiscoveryError {
    /// The upstream could not be reached (worth retrying soon).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, DiscoveryError::Get(e) if e.is_unreachable())
    }
}

fn malformed(error: deltascope_facts::discovery::DiscoveryError) -> DiscoveryError {
    let deltascope_facts::discovery::DiscoveryError::Malformed { path, message } = error;
    DiscoveryError::Malformed { path, message }
}

/// An `APIResourceList` → its resources that can be listed and watched.
pub fn watchable_resources(
    path: &str,
    body: &[u8],
) -> Result<Vec<DiscoveredResource>, DiscoveryError> {
    let listed = discovery::listable_resources(path, body).map_err(malformed)?;
    Ok(listed
        .into_iter()
        .map(|r| DiscoveredResource {
            group: r.group,
            version: r.version,
            plural: r.plural,
            namespaced: r.namespaced,
        })
        .collect())
}

/// `/apis` → the preferred `group/version` of every group.
pub fn preferred_group_versions(body: &[u8]) -> Result<Vec<String>, DiscoveryError> {
    discovery::preferred_group_versions(body).map_err(malformed)
}

/// Reads every discovery document (one at a time: they are small, and the
/// recorder is in no hurry).
pub async fn discover(upstream: &Upstream) -> Result<Discovered, DiscoveryError> {
    let core = get_document(upstream, "/api").await?;
    let mut group_versions = discovery::core_versions(&core).map_err(malformed)?;
    let groups = get_document(upstream, "/apis").await?;
    group_versions.extend(preferred_group_versions(&groups)?);
    let mut found = Discovered {
        metrics: group_versions.iter().any(|gv| {
            gv.split_once('/')
                .is_some_and(|(group, _)| group == super::usage::METRICS_GROUP)
        }),
        ..Discovered::default()
    };
    for gv in group_versions {
        let path = if gv.contains('/') {
            format!("/apis/{gv}")
        } else {
            format!("/api/{gv}")
        };
        let listed = match get_document(upstream, &path).await {
            Ok(body) => watchable_resources(&path, &body),
            Err(e) => Err(DiscoveryError::Get(e)),
        };
        match listed {
            Ok(resources) => found.resources.extend(resources),
            Err(e) => {
                tracing::warn!(%gv, error = %e, "recorder: a group version's discovery failed");
                found.failed.push((gv, e.to_string()));
            }
        }
    }
    found.resources.sort_by_key(DiscoveredResource::name);
    found.resources.dedup_by_key(|r| r.name());
    Ok(found)
}

/// `--record RES,…` (only these) and `--no-record RES,…` (all but these),
/// names as in `data-resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    only: Option<BTreeSet<String>>,
    except: BTreeSet<String>,
}

fn names(list: &[String]) -> BTreeSet<String> {
    list.iter()
        .flat_map(|item| item.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

impl Filter {
    /// `record`: `None` records everything (but `no_record`).
    pub fn new(record: Option<&[String]>, no_record: &[String]) -> Filter {
        Filter {
            only: record.map(names),
            except: names(no_record),
        }
    }

    /// Whether the resource named `name` (`pods`, `deployments.apps`) is recorded.
    pub fn wants(&self, name: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(name)) && !self.except.contains(name)
    }

    /// Warnings for names the filter gives that `discovered` does not list:
    /// a misspelling, or a CRD not installed (yet — it is recorded once it is).
    pub fn unknown_names(&self, discovered: &Discovered) -> Vec<String> {
        let known: BTreeSet<String> = discovered.resources.iter().map(|r| r.name()).collect();
        let mut warnings = Vec::new();
        for (flag, set) in [
            ("--record", self.only.as_ref()),
            ("--no-record", Some(&self.except)),
        ] {
            for name in set.into_iter().flatten() {
                if !known.contains(name) {
                    let hint = known
                        .iter()
                        .find(|k| k.split('.').next() == Some(name.as_str()))
                        .map(|k| format!(" (did you mean {k}?)"))
                        .unwrap_or_default();
                    warnings.push(format!(
                        "{flag} {name}: the cluster serves no such resource{hint}; \
                         resources are named as in `kubectl api-resources` NAME.APIGROUP \
                         (pods, deployments.apps); a CRD is recorded once it is installed"
                    ));
                }
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listable_and_watchable_resources_without_subresources() {
        let body = br#"{"groupVersion":"apps/v1","resources":[
            {"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["get","list","watch"]},
            {"name":"deployments/scale","namespaced":true,"verbs":["get","list","watch"]},
            {"name":"controllerrevisions","namespaced":true,"verbs":["get","list"]}]}"#;
        let found = watchable_resources("/apis/apps/v1", body).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name(), "deployments.apps");
        assert_eq!(
            found[0].resource_ref().api_path(None),
            "/apis/apps/v1/deployments"
        );
        let core = br#"{"groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"verbs":["list","watch"]}]}"#;
        assert_eq!(
            watchable_resources("/api/v1", core).unwrap()[0].name(),
            "pods"
        );
        assert!(watchable_resources("/api/v1", b"<html>").is_err());
    }

    #[test]
    fn preferred_versions_else_the_first() {
        let body = br#"{"groups":[
            {"name":"apps","versions":[{"groupVersion":"apps/v1"}],"preferredVersion":{"groupVersion":"apps/v1"}},
            {"name":"x.io","versions":[{"groupVersion":"x.io/v2"},{"groupVersion":"x.io/v1"}]}]}"#;
        assert_eq!(
            preferred_group_versions(body).unwrap(),
            vec!["apps/v1".to_owned(), "x.io/v2".to_owned()]
        );
    }

    #[test]
    fn filters_and_their_warnings() {
        let all = Filter::new(None, &["events".into()]);
        assert!(all.wants("pods") && !all.wants("events") && all.wants("events.events.k8s.io"));
        let only = Filter::new(
            Some(&["pods, Deployments.apps".into(), "deployments".into()]),
            &[],
        );
        assert!(only.wants("pods") && only.wants("deployments.apps") && !only.wants("secrets"));
        let discovered = Discovered {
            resources: vec![
                DiscoveredResource {
                    group: String::new(),
                    version: "v1".into(),
                    plural: "pods".into(),
                    namespaced: true,
                },
                DiscoveredResource {
                    group: "apps".into(),
                    version: "v1".into(),
                    plural: "deployments".into(),
                    namespaced: true,
                },
            ],
            failed: Vec::new(),
            metrics: false,
        };
        let warnings = only.unknown_names(&discovered);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("--record deployments:"),
            "{}",
            warnings[0]
        );
        assert!(warnings[0].contains("did you mean deployments.apps?"));
    }
}
