//! What the object view shows for one key, from the store and the history:
//! its YAML and JSON (managedFields folded), labels, owners as links to
//! their object views, and every version held — serve's recorded ones
//! before the page's own (`object_versions`), each marked with its source
//! and time, the first one saying how it began (`first_seen`) — with what
//! changed since the one before, and the record's gaps among them.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::address::object_route::ObjectRoute;
use crate::informer::{DeltaType, HistoryEntry, Informer, KubeObject, Millis, ObjectRef};
use crate::model::first_seen::{beginning, Observed};
use crate::model::object_related::RelatedLink;
use crate::model::object_story::{EventRow, StoryRow};
use crate::model::object_text::{diff_lines, fold_managed_fields, to_yaml, DiffLine};
use crate::model::object_versions::{
    gap_words, gaps_from, join, reach_note, Reach, Version, VersionId, VersionSource,
};
use crate::model::who_changed::{who_changed, WhoChanged};
use deltascope_facts::time::{format_age, format_rfc3339_millis};

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
    /// The page's history sequence number (`data-seq`); none for a version
    /// from serve's record.
    pub seq: Option<u64>,
    /// Where it comes from (`data-source`).
    pub source: VersionSource,
    /// When it was seen or recorded, ms since the Unix epoch, and as
    /// RFC 3339 (`data-time`).
    pub at_ms: i64,
    pub time: String,
    pub when: String,
    /// Seconds since the page saw it (to place events among the versions).
    pub ago_secs: i64,
    pub kind: String,
    /// The first version known: "created", or "first seen 14:02 (created
    /// 20d ago)" (`crate::model::first_seen`).
    pub beginning: Option<String>,
    pub resource_version: String,
    pub tombstone: bool,
    pub changes: Vec<DiffLine>,
    /// Its changes are read (the History draws it only then; they are read
    /// newest first, a few per frame).
    pub read: bool,
    /// The field managers that made it (an update's; empty otherwise).
    pub who: WhoChanged,
    pub object: VersionObject,
}

/// A span serve's recorder did not watch, among the versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GapRow {
    pub from: String,
    pub to: String,
    pub to_ms: i64,
    pub reason: String,
    pub words: String,
}

/// What the object view says about serve's record of the object
/// (`[data-testid=object-reach]`): `reading`, `read`, `error`; nothing
/// without a recorder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReachNote {
    pub state: &'static str,
    pub text: String,
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
    /// The page's versions with serve's recorded ones before them, oldest first.
    pub versions: Rc<Vec<VersionRow>>,
    /// The record's gaps from the first version on, newest first.
    pub gaps: Rc<Vec<GapRow>>,
    /// Serve's record of the object: being read, read, or why not.
    pub reach: Option<ReachNote>,
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
    /// serve's record of what the object owns, as the story reads it:
    /// `data-family` (`reading`/`read`/`error`) and why it failed; `None`
    /// when nothing was asked.
    pub family: Option<(&'static str, Option<String>)>,
    /// Its CPU and memory over time, for a pod, node or workload.
    pub usage: Option<Rc<crate::model::usage_chart::UsagePanel>>,
}

impl ObjectDetails {
    /// Its links to other objects (owners, related) point into `cluster`,
    /// the object's own (the models write them for the default cluster).
    pub fn links_in_cluster(&mut self, cluster: &str) {
        let retarget = |href: &mut Option<String>| {
            if let Some(object) = href.as_deref().and_then(ObjectRoute::parse) {
                *href = Some(object.in_cluster(Some(cluster.to_string())).to_string());
            }
        };
        let mut owners = self.owners.as_ref().clone();
        owners
            .iter_mut()
            .for_each(|owner| retarget(&mut owner.href));
        self.owners = Rc::new(owners);
        let mut related = self.related.as_ref().clone();
        related.iter_mut().for_each(|link| retarget(&mut link.href));
        self.related = Rc::new(related);
    }
}

/// What each version changed and who changed it, computed once per
/// version (and the version before it) and kept while its object is
/// shown: a 50 KB object's diff and attribution take about a millisecond
/// (BENCHMARKS.md), so an object with a thousand versions is read once, a
/// slice per frame, not per render.
#[derive(Debug, Default)]
pub struct VersionCache {
    key: String,
    by_id: HashMap<VersionId, (Option<VersionId>, Vec<DiffLine>, WhoChanged)>,
    /// The shown version as text, by its resourceVersion: written once per
    /// version, not per frame (a pod's YAML and JSON take milliseconds).
    text: Option<(String, Rc<ObjectText>)>,
    /// How many of the newest versions are read (the History shows those);
    /// `None`: all.
    window: Option<usize>,
}

/// Versions the History shows at first, and more each time the user asks
/// for older ones: drawing a thousand versions with their changes held
/// the page for seconds (`reach.object.1000-versions` in BENCHMARKS.md).
pub const HISTORY_PAGE: usize = 100;

/// Everything the object view shows for `key`, from the store, the
/// history and serve's record (`reach`). Versions not yet in `cache` are
/// read newest first, at least one and then while `more_time()` says so;
/// the rest are counted in `pending` (shown as still being read), for the
/// next frame.
pub fn object_details(
    informer: &Informer,
    key: &str,
    now_ms: Millis,
    reach: &Reach<'_>,
    cache: &mut VersionCache,
    more_time: &dyn Fn() -> bool,
) -> ObjectDetails {
    let history = informer.history();
    let current = informer.store().get_by_key(key).cloned();
    let last_seen = current
        .clone()
        .or_else(|| history.versions(key).last().map(|e| e.object.clone()));
    let text = cache.text_of(key, last_seen.as_deref());
    let entries: Vec<&HistoryEntry> = history.versions(key).collect();
    let joined = join(&entries, reach.recorded());
    let pending = cache.read(key, &joined, more_time);
    let observed = Observed::of_history(history).and(reach.recorder.clone());
    let now_unix = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    let versions: Vec<VersionRow> = joined
        .iter()
        .enumerate()
        .map(|(index, version)| {
            let mut row = cache.row(version, now_ms);
            if index == 0 && version.kind != DeltaType::Deleted && reach.complete() {
                let began = beginning(version.kind, version.at_ms, version.object, &observed);
                row.beginning = Some(began.words(&reach.clock, now_unix));
            }
            row
        })
        .collect();
    let gaps = gaps_from(reach.record, joined.first().map(|v| v.at_ms))
        .iter()
        .map(|gap| GapRow {
            from: format_rfc3339_millis(gap.from_ms).unwrap_or_default(),
            to: format_rfc3339_millis(gap.to_ms).unwrap_or_default(),
            to_ms: gap.to_ms,
            reason: gap.reason.clone(),
            words: gap_words(gap, &reach.clock),
        })
        .collect();
    let recorded_shown = joined
        .iter()
        .filter(|v| v.source == VersionSource::Recorder)
        .count();
    let recorded_from = reach.recorder.as_ref().map(|w| w.from_ms);
    let note = reach.phase.as_ref().and_then(|phase| {
        reach_note(phase, recorded_shown, &reach.clock, recorded_from)
            .map(|(state, text)| ReachNote { state, text })
    });
    ObjectDetails {
        object_key: key.to_string(),
        pending_versions: pending,
        present: current.is_some(),
        restoring: informer.faces_as_of().is_some(),
        yaml: text.yaml.clone(),
        json: text.json.clone(),
        folded_managed_fields: text.folded,
        labels: text.labels.clone(),
        owners: text.owners.clone(),
        versions: Rc::new(versions),
        gaps: Rc::new(gaps),
        reach: note,
        events_kept: false,
        events_synced: false,
        events: Rc::default(),
        related: Rc::default(),
        story: Rc::default(),
        family: None,
        usage: None,
    }
}

/// The object as text: YAML and JSON with managedFields folded away (how
/// many), its labels and its owners.
#[derive(Debug, Default)]
struct ObjectText {
    yaml: Rc<String>,
    json: Rc<String>,
    folded: usize,
    labels: Rc<Vec<(String, String)>>,
    owners: Rc<Vec<OwnerLink>>,
}

impl ObjectText {
    fn of(object: &KubeObject) -> ObjectText {
        let value = object.value.to_json();
        let (clean, folded) = fold_managed_fields(&value);
        ObjectText {
            yaml: Rc::new(to_yaml(&clean)),
            json: Rc::new(serde_json::to_string_pretty(&clean).unwrap_or_default()),
            folded,
            labels: Rc::new(
                object
                    .labels()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            owners: Rc::new(owner_links(&value, object.namespace())),
        }
    }
}

impl VersionCache {
    /// Reads only the newest `window` versions from now on.
    pub fn set_window(&mut self, window: usize) {
        self.window = Some(window);
    }

    /// `object` (the version of `key` shown) as text, written again only
    /// for another object: another resourceVersion, or the same one held
    /// anew (a restored row's stand-in replaced by the whole object).
    fn text_of(&mut self, key: &str, object: Option<&KubeObject>) -> Rc<ObjectText> {
        let Some(object) = object else {
            return Rc::default();
        };
        let id = format!(
            "{key}@{}@{:p}",
            object.resource_version, object as *const KubeObject
        );
        match &self.text {
            Some((cached, text)) if *cached == id => text.clone(),
            _ => {
                let text = Rc::new(ObjectText::of(object));
                self.text = Some((id, text.clone()));
                text
            }
        }
    }

    /// Reads what the versions `joined` of `key` changed and who changed
    /// them, newest first: the newest unread one always (so each frame
    /// moves on), then while `more_time()` says so. A version read against
    /// another one before it (serve's record arrived meanwhile) is read
    /// again. Forgets versions no longer held; returns how many are left
    /// unread.
    fn read(&mut self, key: &str, joined: &[Version<'_>], more_time: &dyn Fn() -> bool) -> usize {
        if self.key != key {
            *self = VersionCache {
                key: key.to_string(),
                by_id: HashMap::new(),
                text: self.text.take(),
                window: self.window,
            };
        }
        let mut pending = 0;
        let mut read_now = 0;
        let mut carried: Option<(VersionId, serde_json::Value)> = None;
        let window = self.window.unwrap_or(usize::MAX);
        for (index, version) in joined.iter().enumerate().rev().take(window) {
            let before = index.checked_sub(1).and_then(|i| joined.get(i));
            let before_id = before.map(|b| b.id);
            if self
                .by_id
                .get(&version.id)
                .is_some_and(|(read_after, _, _)| *read_after == before_id)
            {
                continue;
            }
            if read_now > 0 && !more_time() {
                pending += 1;
                continue;
            }
            read_now += 1;
            let (changes, who) = match before {
                Some(before) => {
                    // Read newest first: this version's JSON was the one
                    // before the version read last (made once, not twice).
                    let new = match carried.take() {
                        Some((id, json)) if id == version.id => json,
                        _ => version.object.value.to_json(),
                    };
                    let old = before.object.value.to_json();
                    let changes = diff_lines(&old, &json_patch::diff(&old, &new));
                    carried = Some((before.id, old));
                    (
                        changes,
                        who_changed(before.object.value.root(), version.object.value.root()),
                    )
                }
                None => (Vec::new(), WhoChanged::default()),
            };
            self.by_id.insert(version.id, (before_id, changes, who));
        }
        let held: HashSet<VersionId> = joined.iter().map(|v| v.id).collect();
        self.by_id.retain(|id, _| held.contains(id));
        pending
    }

    /// The version row of `version` (its changes empty while unread). Who
    /// made a recorded version whose managedFields say nobody is what
    /// serve recorded.
    fn row(&self, version: &Version<'_>, now_ms: Millis) -> VersionRow {
        let read = self.by_id.get(&version.id);
        let (changes, mut who) = read
            .map(|(_, changes, who)| (changes.clone(), who.clone()))
            .unwrap_or_default();
        let read = read.is_some();
        if who.managers.is_empty() && !version.recorded_managers.is_empty() {
            who.managers = version.recorded_managers.to_vec();
        }
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let seconds_ago = now.saturating_sub(version.at_ms).max(0) / 1000;
        VersionRow {
            seq: match version.id {
                VersionId::Page(seq) => Some(seq),
                VersionId::Recorded(_) => None,
            },
            source: version.source,
            at_ms: version.at_ms,
            time: format_rfc3339_millis(version.at_ms).unwrap_or_default(),
            when: format!("{} ago", format_age(seconds_ago)),
            ago_secs: seconds_ago,
            kind: format!("{:?}", version.kind),
            beginning: None,
            resource_version: version.resource_version().to_string(),
            tombstone: version.tombstone,
            changes,
            read,
            who,
            object: VersionObject(version.object.clone()),
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
            object_details(
                informer,
                "n/p",
                0,
                &Reach::default(),
                &mut VersionCache::default(),
                &|| true,
            )
        };
        assert!(!details(&informer).restoring);
        informer.restore_faces(vec![std::sync::Arc::new(face)], 0, None);
        let shown = details(&informer);
        assert!(shown.present && shown.restoring, "{shown:?}");
    }

    /// An informer of deployments that listed `web` (created 20 days
    /// before) at `now` (Unix ms), at resourceVersion 30 with 3 replicas.
    fn listed_deployment(now: Millis) -> Informer {
        use crate::informer::{Action, Input};
        let mut config = InformerConfig::new(ResourceRef::new("apps", "v1", "deployments", true));
        config.streaming_list = false;
        config.resync_period = None;
        let mut informer = Informer::new(config);
        informer.start(now);
        let id = std::iter::from_fn(|| informer.poll_action())
            .find_map(|action| match action {
                Action::Send { id, .. } => Some(id),
                Action::Cancel { .. } => None,
            })
            .expect("a list request");
        let body = json!({"kind": "DeploymentList", "metadata": {"resourceVersion": "30"},
            "items": [deployment("30", 3, "2026-11-28T13:59:00Z")]})
        .to_string();
        let status = 200;
        informer.handle(
            Input::ResponseStarted {
                id,
                status,
                retry_after_secs: None,
            },
            now,
        );
        informer.handle(
            Input::BodyChunk {
                id,
                bytes: body.as_bytes(),
            },
            now,
        );
        informer.handle(Input::BodyEnd { id }, now);
        informer.drain(now);
        informer
    }

    fn deployment(rv: &str, replicas: u64, managed_at: &str) -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
            "name": "web", "namespace": "shop", "uid": "d1", "resourceVersion": rv,
            "creationTimestamp": "2026-11-08T14:02:00Z",
            "managedFields": [{"manager": "ops-cli", "operation": "Update", "apiVersion": "apps/v1",
                "time": managed_at, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": replicas}})
    }

    #[test]
    fn serve_s_record_reaches_back_before_the_page_s_first_list() {
        use crate::api::object_record::{ObjectRecord, RecordGap, RecordedVersion};
        use crate::model::first_seen::{WallClock, Watched};
        use crate::model::object_versions::ReachPhase;
        const OPENED: Millis = 1_795_874_520_000; // 2026-11-28T14:02:00Z
        let informer = listed_deployment(OPENED);
        let now = OPENED + 8_000;
        let mut cache = VersionCache::default();
        let own = object_details(
            informer_ref(&informer),
            "shop/web",
            now,
            &Reach::default(),
            &mut cache,
            &|| true,
        );
        // Without a recorder: the page's list, which is no creation.
        let only: Vec<_> = own
            .versions
            .iter()
            .map(|v| (v.source, v.beginning.clone()))
            .collect();
        assert_eq!(
            only,
            [(
                VersionSource::Page,
                Some("first seen 14:02 (created 20d ago)".to_string())
            )]
        );
        assert_eq!(own.versions[0].time, "2026-11-28T14:02:00.000Z");
        assert_eq!(own.versions[0].when, "8s ago");
        assert_eq!(own.reach, None);

        let version = |time_ms: i64, kind, rv: &str, replicas, managers: &[&str]| RecordedVersion {
            time_ms,
            kind,
            tombstone: false,
            managers: managers.iter().map(|m| m.to_string()).collect(),
            object: KubeObject::from_value(deployment(
                rv,
                replicas,
                &format!("2026-11-28T13:{rv}:00Z"),
            ))
            .expect("object")
            .into_ref(),
        };
        let opened = OPENED as i64;
        let record = ObjectRecord {
            versions: vec![
                version(opened - 3_600_000, DeltaType::Replaced, "10", 1, &[]),
                version(
                    opened - 1_800_000,
                    DeltaType::Updated,
                    "20",
                    2,
                    &["ops-cli"],
                ),
                version(opened - 10, DeltaType::Updated, "30", 3, &["ops-cli"]),
            ],
            gaps: vec![RecordGap {
                from_ms: opened - 3_000_000,
                to_ms: opened - 2_000_000,
                reason: "not-running".into(),
            }],
        };
        let reach = Reach {
            phase: Some(ReachPhase::Read),
            record: Some(&record),
            recorder: Some(Watched {
                from_ms: opened - 3_600_000,
                gaps: Vec::new(),
            }),
            family: Vec::new(),
            clock: WallClock::default(),
        };
        let both = object_details(
            informer_ref(&informer),
            "shop/web",
            now,
            &reach,
            &mut cache,
            &|| true,
        );
        let rows: Vec<_> = both
            .versions
            .iter()
            .map(|v| {
                (
                    v.source.as_str(),
                    v.resource_version.as_str(),
                    v.seq.is_some(),
                    v.who.managers_attr(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("recorder", "10", false, String::new()),
                ("recorder", "20", false, "ops-cli".to_string()),
                ("page", "30", true, "ops-cli".to_string()),
            ],
            "the record's rv 30 is the page's own list: one delta, the page's"
        );
        assert_eq!(
            both.versions[0].beginning.as_deref(),
            Some("first seen 13:02 (created 20d ago)")
        );
        assert_eq!(both.versions[2].beginning, None);
        // The page's first version is read again against the record's last.
        let changed: Vec<&str> = both.versions[2]
            .changes
            .iter()
            .filter(|c| !c.noisy)
            .map(|c| c.path.as_str())
            .collect();
        assert_eq!(changed, ["/spec/replicas"]);
        assert_eq!(both.versions[0].time, "2026-11-28T13:02:00.000Z");
        assert_eq!(both.gaps.len(), 1);
        assert_eq!(both.gaps[0].reason, "not-running");
        assert_eq!(
            both.reach.as_ref().map(|n| (n.state, n.text.as_str())),
            Some((
                "read",
                "recorded by serve, since 13:02:00: 2 versions before the page's own"
            ))
        );
    }

    fn informer_ref(informer: &Informer) -> &Informer {
        informer
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
