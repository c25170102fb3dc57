//! What the object view shows for one key, from the store and the history:
//! its YAML and JSON (managedFields folded), labels, owners as links to
//! their object views, and every version held with what changed since the
//! one before.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::address::object_route::ObjectRoute;
use crate::informer::{HistoryEntry, Informer, KubeObject, Millis, ObjectRef};
use crate::model::object_story::{EventRow, RelatedLink, StoryRow};
use crate::model::object_text::{diff_lines, fold_managed_fields, to_yaml, DiffLine};
use crate::model::who_changed::{who_changed, WhoChanged};
use deltascope_facts::time::format_age;

/// A version's object, compared by identity (the history shares it, never copies it).
#[derive(Clone, Debug)]
pub struct VersionObject(pub ObjectRef);

impl PartialEq for VersionObject {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct VersionRow {
    pub seq: u64,
    pub when: String,
    /// Seconds since the page saw it (to place events among the versions).
    pub ago_secs: i64,
    pub kind: String,
    pub resource_version: String,
    pub tombstone: bool,
    pub changes: Vec<DiffLine>,
    /// The field managers that made it (an update's; empty otherwise).
    pub who: WhoChanged,
    pub object: VersionObject,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OwnerLink {
    pub kind: String,
    pub name: String,
    pub href: Option<String>,
}

/// Everything the object view shows for one object.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectDetails {
    pub object_key: String,
    /// False once the object was deleted while the view was open.
    pub present: bool,
    /// Its view is being restored from the browser's database: what is
    /// shown may be its stored row (its face: `informer::persist`), not the
    /// whole object.
    pub restoring: bool,
    pub yaml: Rc<String>,
    pub json: Rc<String>,
    pub folded_managed_fields: usize,
    pub labels: Rc<Vec<(String, String)>>,
    pub owners: Rc<Vec<OwnerLink>>,
    pub versions: Rc<Vec<VersionRow>>,
    /// Versions whose changes are still being read (a slice per frame).
    pub pending_versions: usize,
    /// Whether an events informer is kept (else the events are unknown).
    pub events_kept: bool,
    /// It has read the cluster's events (else they are still loading).
    pub events_synced: bool,
    pub events: Rc<Vec<EventRow>>,
    pub related: Rc<Vec<RelatedLink>>,
    /// This object and everything it owns, with their events, newest first.
    pub story: Rc<Vec<StoryRow>>,
}

/// What each version changed and who changed it, computed once per
/// version and kept while its object is shown: a 50 KB object's diff and
/// attribution take about a millisecond (BENCHMARKS.md), so an object
/// with a thousand versions is read once, a slice per frame, not per render.
#[derive(Debug, Default)]
pub struct VersionCache {
    key: String,
    by_seq: HashMap<u64, (Vec<DiffLine>, WhoChanged)>,
}

/// Everything the object view shows for `key`, from the store and the
/// history. Versions not yet in `cache` are read newest first, at least
/// one and then while `more_time()` says so; the rest are counted in
/// `pending` (shown as still being read), for the next frame.
pub fn object_details(
    informer: &Informer,
    key: &str,
    now_ms: Millis,
    cache: &mut VersionCache,
    more_time: &dyn Fn() -> bool,
) -> ObjectDetails {
    let history = informer.history();
    let current = informer.store().get_by_key(key).cloned();
    let last_seen = current
        .clone()
        .or_else(|| history.versions(key).last().map(|e| e.object.clone()));
    let text = last_seen.as_deref().map(ObjectText::of).unwrap_or_default();
    let entries: Vec<&HistoryEntry> = history.versions(key).collect();
    let pending = cache.read(key, &entries, more_time);
    let versions: Vec<VersionRow> = entries
        .iter()
        .map(|entry| cache.row(entry, now_ms))
        .collect();
    ObjectDetails {
        object_key: key.to_string(),
        pending_versions: pending,
        present: current.is_some(),
        restoring: informer.faces_as_of().is_some(),
        yaml: Rc::new(text.yaml),
        json: Rc::new(text.json),
        folded_managed_fields: text.folded,
        labels: Rc::new(text.labels),
        owners: Rc::new(text.owners),
        versions: Rc::new(versions),
        events_kept: false,
        events_synced: false,
        events: Rc::default(),
        related: Rc::default(),
        story: Rc::default(),
    }
}

/// The object as text: YAML and JSON with managedFields folded away (how
/// many), its labels and its owners.
#[derive(Debug, Default)]
struct ObjectText {
    yaml: String,
    json: String,
    folded: usize,
    labels: Vec<(String, String)>,
    owners: Vec<OwnerLink>,
}

impl ObjectText {
    fn of(object: &KubeObject) -> ObjectText {
        let value = object.value.to_json();
        let (clean, folded) = fold_managed_fields(&value);
        ObjectText {
            yaml: to_yaml(&clean),
            json: serde_json::to_string_pretty(&clean).unwrap_or_default(),
            folded,
            labels: object
                .labels()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            owners: owner_links(&value, object.namespace()),
        }
    }
}

impl VersionCache {
    /// Reads what the versions `entries` of `key` changed and who changed
    /// them, newest first: the newest unread one always (so each frame
    /// moves on), then while `more_time()` says so. Forgets versions no
    /// longer held; returns how many are left unread.
    fn read(
        &mut self,
        key: &str,
        entries: &[&HistoryEntry],
        more_time: &dyn Fn() -> bool,
    ) -> usize {
        if self.key != key {
            *self = VersionCache {
                key: key.to_string(),
                by_seq: HashMap::new(),
            };
        }
        let mut pending = 0;
        let mut read_now = 0;
        for (index, entry) in entries.iter().enumerate().rev() {
            if self.by_seq.contains_key(&entry.seq) {
                continue;
            }
            if read_now > 0 && !more_time() {
                pending += 1;
                continue;
            }
            read_now += 1;
            let read = match index.checked_sub(1).and_then(|i| entries.get(i)) {
                Some(before) => {
                    let (old, new) = (before.object.value.to_json(), entry.object.value.to_json());
                    (
                        diff_lines(&old, &json_patch::diff(&old, &new)),
                        who_changed(before.object.value.root(), entry.object.value.root()),
                    )
                }
                None => (Vec::new(), WhoChanged::default()),
            };
            self.by_seq.insert(entry.seq, read);
        }
        let held: HashSet<u64> = entries.iter().map(|e| e.seq).collect();
        self.by_seq.retain(|seq, _| held.contains(seq));
        pending
    }

    /// The version row of `entry` (its changes empty while unread).
    fn row(&self, entry: &HistoryEntry, now_ms: Millis) -> VersionRow {
        let (changes, who) = self.by_seq.get(&entry.seq).cloned().unwrap_or_default();
        let seconds_ago = (now_ms.saturating_sub(entry.at) / 1000) as i64;
        VersionRow {
            seq: entry.seq,
            when: format!("{} ago", format_age(seconds_ago)),
            ago_secs: seconds_ago,
            kind: format!("{:?}", entry.kind),
            resource_version: entry.resource_version().to_string(),
            tombstone: entry.tombstone,
            changes,
            who,
            object: VersionObject(entry.object.clone()),
        }
    }
}

fn owner_links(value: &serde_json::Value, namespace: Option<&str>) -> Vec<OwnerLink> {
    let Some(owners) = value
        .pointer("/metadata/ownerReferences")
        .and_then(|o| o.as_array())
    else {
        return Vec::new();
    };
    owners
        .iter()
        .map(|owner| {
            let kind = owner
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or("")
                .to_string();
            let name = owner
                .get("name")
                .and_then(|k| k.as_str())
                .unwrap_or("")
                .to_string();
            // the owner's group from its apiVersion (`apps/v1`), if it says
            let group = owner
                .get("apiVersion")
                .and_then(|v| v.as_str())
                .map(|v| v.rsplit_once('/').map_or("", |(group, _)| group));
            let target = deltascope_facts::BUILTIN_RESOURCES
                .iter()
                .find(|r| r.kind == kind && group.is_none_or(|g| g == r.group));
            let href = target.map(|r| {
                let key = match namespace.filter(|_| r.namespaced) {
                    Some(namespace) => format!("{namespace}/{name}"),
                    None => name.clone(),
                };
                ObjectRoute::of_key(r.group, r.version, r.plural, &key).to_string()
            });
            OwnerLink { kind, name, href }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{InformerConfig, KubeObject, ResourceRef};
    use serde_json::json;

    #[test]
    fn an_object_shown_while_its_view_is_restored_says_so() {
        let mut informer = Informer::new(InformerConfig::new(ResourceRef::new(
            "", "v1", "pods", true,
        )));
        let face = KubeObject::from_value(
            json!({"metadata": {"name": "p", "namespace": "n", "resourceVersion": "3"}}),
        )
        .expect("an object");
        let details = |informer: &Informer| {
            object_details(informer, "n/p", 0, &mut VersionCache::default(), &|| true)
        };
        assert!(!details(&informer).restoring);
        informer.restore_faces(vec![std::sync::Arc::new(face)], 0, None);
        let shown = details(&informer);
        assert!(shown.present && shown.restoring, "{shown:?}");
    }

    #[test]
    fn owners_link_to_their_object_views_when_the_kind_is_known() {
        let pod = json!({"metadata": {"ownerReferences": [
            {"kind": "ReplicaSet", "name": "web-7d9"},
            {"kind": "Widget", "name": "w"},
        ]}});
        let links = owner_links(&pod, Some("default"));
        assert_eq!(
            links[0].href.as_deref(),
            Some("#/apps/v1/replicasets/default/web-7d9")
        );
        assert_eq!(
            (links[1].kind.as_str(), links[1].href.as_deref()),
            ("Widget", None)
        );
    }
}
