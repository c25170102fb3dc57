//! An object's story beyond its own versions, read from every kept
//! informer's store and history: its events (the events informers'
//! objects about it, and those the cluster has since deleted, kept as
//! "expired"), the objects related to it (owners up the chain, what it
//! owns, the node, volumes, services and EndpointSlices it names or that
//! select it), and "this object and everything it owns" as one history —
//! a Deployment's rollout as one list: the Deployment's update and who
//! made it, the new ReplicaSet, the pods replaced, the events between.
//!
//! The rules (what an event is about, owner references, selectors, named
//! links, who changed a field) live in the informer core
//! (`object_events`, `relations`, `field_managers`); this module finds the
//! objects they name in the stores the page holds. Owned objects come from
//! each store's incrementally kept owner index, never a rescan of a store.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::api::object_record::ObjectRecord;
use crate::informer::compact_sort;
use crate::informer::field_managers::writers;
use crate::informer::history::HistoryEntry;
use crate::informer::object_events::{newest_first, ObjectEvent};
use crate::informer::{DeltaType, History, Indexer, KubeObject, Millis};
use crate::model::first_seen::{beginning, Observed, WallClock};
use crate::model::object_versions::{
    is_events_resource, join, FamilyRecord, Reach, Version, VersionSource,
};
use crate::model::story_who::StoryWho;
use crate::model::who_changed::WhoChanged;
use deltascope_facts::time::{format_age, parse_rfc3339};

/// One kept informer, as this module reads it.
pub struct StorySource<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub store: &'a Indexer,
    pub history: &'a History,
}

impl StorySource<'_> {
    pub fn kind(&self) -> &'static str {
        deltascope_facts::resources::find(self.group, self.version, self.resource)
            .map_or("", |r| r.kind)
    }

    fn is_events(&self) -> bool {
        is_events_resource(&self.stats_name())
    }

    /// `plural` or `plural.group`, as `data-resource` names it.
    pub fn stats_name(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// The object a story is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl Subject {
    /// `object` as kept by an informer of `source`'s resource.
    pub fn of(source: &StorySource<'_>, object: &KubeObject) -> Subject {
        Subject::named(source.kind(), object)
    }

    /// `object`, of kind `kind` unless it says its own.
    pub fn named(kind: &str, object: &KubeObject) -> Subject {
        let declared = object.value.get("kind").and_then(|k| k.as_str());
        Subject {
            kind: declared.unwrap_or(kind).to_string(),
            namespace: object.namespace().unwrap_or("").to_string(),
            name: object.name().to_string(),
            uid: object.uid.clone(),
        }
    }

    fn is_about(&self, event: &ObjectEvent) -> bool {
        event
            .involved
            .is_about(&self.kind, &self.namespace, &self.name, &self.uid)
    }
}

/// One event in the object view.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub event: ObjectEvent,
    /// The cluster deleted it (its TTL passed); deltascope still has it.
    pub expired: bool,
    /// Read from serve's record (the page never held it): `data-source`.
    pub recorded: bool,
    /// `3m ago`, from its last time seen.
    pub last_seen: String,
    pub first_seen: String,
    /// Seconds since it was last seen (to place it among the versions).
    pub ago_secs: i64,
}

/// The events about `subject`: those the events informers hold, then those
/// their histories saw deleted, then those only serve's records of events
/// hold (`recorded`: each Event's last recorded version; a recorded
/// deletion is an expired one); one row per Event object (the same Event
/// served by `core/v1` and `events.k8s.io/v1` is one), newest first.
pub fn events_about(
    sources: &[StorySource<'_>],
    subjects: &[Subject],
    recorded: &[&ObjectRecord],
    now_unix: i64,
) -> Vec<EventRow> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut rows: Vec<(ObjectEvent, bool)> = Vec::new();
    let about = |event: &ObjectEvent| subjects.iter().any(|s| s.is_about(event));
    for source in sources.iter().filter(|s| s.is_events()) {
        for object in source.store.list() {
            let Some(event) = ObjectEvent::from_object(&object.key, object.value.root()) else {
                continue;
            };
            if about(&event) && seen.insert(event.key.clone()) {
                rows.push((event, false));
            }
        }
    }
    for source in sources.iter().filter(|s| s.is_events()) {
        for entry in source.history.iter().rev() {
            if entry.kind != DeltaType::Deleted || seen.contains(entry.key()) {
                continue;
            }
            let Some(event) = ObjectEvent::from_object(entry.key(), entry.object.value.root())
            else {
                continue;
            };
            if about(&event) {
                seen.insert(event.key.clone());
                rows.push((event, true));
            }
        }
    }
    let mut from_record: HashSet<String> = HashSet::new();
    for version in recorded.iter().flat_map(|r| r.versions.iter().rev()) {
        let key = version.object.key.as_str();
        if seen.contains(key) || from_record.contains(key) {
            continue;
        }
        let Some(event) = ObjectEvent::from_object(key, version.object.value.root()) else {
            continue;
        };
        from_record.insert(event.key.clone());
        if about(&event) {
            let gone = version.kind == DeltaType::Deleted || version.tombstone;
            rows.push((event, gone));
        }
    }
    let expired: HashSet<String> = rows
        .iter()
        .filter(|(_, expired)| *expired)
        .map(|(e, _)| e.key.clone())
        .collect();
    let mut events: Vec<ObjectEvent> = rows.into_iter().map(|(e, _)| e).collect();
    newest_first(&mut events);
    let ago = |text: &str| {
        parse_rfc3339(text).map_or_else(String::new, |at| {
            format!("{} ago", format_age(now_unix.saturating_sub(at)))
        })
    };
    events
        .into_iter()
        .map(|event| EventRow {
            expired: expired.contains(&event.key),
            recorded: from_record.contains(&event.key),
            last_seen: ago(&event.last_seen),
            first_seen: ago(&event.first_seen),
            ago_secs: parse_rfc3339(&event.last_seen)
                .map_or(i64::MAX, |at| now_unix.saturating_sub(at)),
            event,
        })
        .collect()
}

/// How far up and down the owner chain the story and the related panel go.
pub const OWNER_DEPTH: usize = 3;

/// One line of "this object and everything it owns".
#[derive(Debug, Clone, PartialEq)]
pub struct StoryRow {
    /// When, in Unix milliseconds (events carry cluster times, deltas the
    /// page's clock; both are put on the wall clock to interleave).
    pub at: i64,
    pub when: String,
    /// `deployments.apps`, or `events` for an event.
    pub resource: String,
    pub kind: String,
    pub key: String,
    /// `Added`, `Updated`, `Deleted`, or the event's type (`Warning`).
    pub what: String,
    /// What changed, or the event's reason and message.
    pub summary: String,
    pub who: WhoChanged,
    pub expired: bool,
    /// The page's own delta or serve's record (`data-source`; an event
    /// too: the page's events informers, or serve's record of events).
    pub source: VersionSource,
}

/// The most rows the story keeps (newest).
pub const STORY_ROWS: usize = 500;

/// `object` and everything it owns (down the owner references, deleted
/// objects included, as far as the histories reach), with the events about
/// any of them, newest first; the object's own versions from serve's
/// record (`reach`) too. The first version of each says how it began
/// (`first_seen`).
pub fn story(
    sources: &[StorySource<'_>],
    source: &StorySource<'_>,
    object: &KubeObject,
    reach: &Reach<'_>,
    now_ms: Millis,
    now_unix: i64,
) -> Vec<StoryRow> {
    let mut who = StoryWho::unbounded();
    story_with(sources, source, object, reach, (now_ms, now_unix), &mut who)
}

/// [`story`], with the attributions kept in `who` across builds (read
/// within its budget; the rows left unread say so).
pub fn story_with(
    sources: &[StorySource<'_>],
    source: &StorySource<'_>,
    object: &KubeObject,
    reach: &Reach<'_>,
    (now_ms, now_unix): (Millis, i64),
    who: &mut StoryWho,
) -> Vec<StoryRow> {
    who.begin(&object.uid);
    // The family's uids: the object's, then whatever names one of them as
    // owner, in a store or a history (a replaced pod is only in the latter).
    let mut family: HashSet<String> = HashSet::from([object.uid.clone()]);
    let mut members: HashSet<(usize, String)> = HashSet::new();
    let source_index = sources
        .iter()
        .position(|s| s.group == source.group && s.resource == source.resource)
        .unwrap_or(usize::MAX);
    members.insert((source_index, object.key.clone()));
    let mut subjects = vec![Subject::of(source, object)];
    // Down the owner references, through the page's stores and histories
    // and serve's records of what it owns, in turn (a pod the page keeps
    // may be owned by a ReplicaSet only the record holds).
    for _ in 0..OWNER_DEPTH {
        let from_pages = grow_from_pages(sources, &mut family, &mut members, &mut subjects);
        let from_record = grow_from_record(&reach.family, &mut family, &mut subjects);
        if !from_pages && !from_record {
            break;
        }
    }
    let clock = Clock {
        wall: reach.clock,
        now_ms,
        now_unix,
    };
    // The newest deltas only are told, and only they are attributed.
    let mut told = delta_rows(sources, source_index, &members, object, reach, &clock);
    told.extend(recorded_rows(
        sources,
        &reach.family,
        &family,
        object,
        &clock,
    ));
    compact_sort::sort_by_key(&mut told, |row| std::cmp::Reverse(row.at));
    told.truncate(STORY_ROWS);
    let mut rows: Vec<StoryRow> = told.iter().map(|row| story_row(row, &clock, who)).collect();
    for row in events_about(sources, &subjects, &reach.recorded_events(), now_unix) {
        let at = parse_rfc3339(&row.event.last_seen).map_or(0, |s| s.saturating_mul(1000));
        rows.push(StoryRow {
            at,
            when: row.last_seen.clone(),
            resource: "events".into(),
            kind: row.event.involved.kind.clone(),
            key: involved_key(&row.event),
            what: row.event.event_type.clone(),
            summary: format!(
                "{}: {}{}",
                row.event.reason,
                row.event.message,
                if row.event.count > 1 {
                    format!(" (×{})", row.event.count)
                } else {
                    String::new()
                }
            ),
            who: WhoChanged {
                managers: vec![row.event.reporter.clone()],
                lines: Vec::new(),
                unattributed: Vec::new(),
            },
            expired: row.expired,
            source: if row.recorded {
                VersionSource::Recorder
            } else {
                VersionSource::Page
            },
        });
    }
    compact_sort::sort_by_key(&mut rows, |row| std::cmp::Reverse(row.at));
    rows.truncate(STORY_ROWS);
    rows
}

/// The family's deltas as story rows: each member's page history, the
/// object's own joined to serve's record (`reach`).
fn delta_rows<'a>(
    sources: &[StorySource<'a>],
    source_index: usize,
    members: &HashSet<(usize, String)>,
    object: &'a KubeObject,
    reach: &Reach<'a>,
    clock: &Clock,
) -> Vec<Told<'a>> {
    let mut rows: Vec<Told<'a>> = Vec::new();
    for (index, s) in sources.iter().enumerate().filter(|(_, s)| !s.is_events()) {
        let observed = Rc::new(Observed::of_history(s.history));
        let naming = Rc::new(Naming::of(s));
        let told =
            |version: Version<'a>, before: Option<Version<'a>>, observed: &Rc<Observed>| Told {
                at: row_at(&version, clock),
                naming: naming.clone(),
                observed: observed.clone(),
                version,
                before,
            };
        if index == source_index {
            // The object itself: serve's record before the page's own.
            let own: Vec<&HistoryEntry> = s.history.versions(&object.key).collect();
            let observed = Rc::new((*observed).clone().and(reach.recorder.clone()));
            let joined = join(&own, reach.recorded());
            // While older pages of the record are read, its oldest version
            // held is not the first: told once the one before it is known.
            let unknown_start = usize::from(!reach.complete());
            for (at, version) in joined.iter().enumerate().skip(unknown_start) {
                let before = at.checked_sub(1).and_then(|i| joined.get(i)).cloned();
                rows.push(told(version.clone(), before, &observed));
            }
        }
        let mut previous: HashMap<&str, Version<'_>> = HashMap::new();
        for entry in s.history.iter() {
            let key = entry.key();
            if !members.contains(&(index, key.to_string()))
                || (index == source_index && key == object.key)
            {
                continue;
            }
            let version = Version::of_page(entry);
            let before = previous.insert(key, version.clone());
            rows.push(told(version, before, &observed));
        }
    }
    rows
}

/// A delta the story may tell: when, and what it needs to be told.
struct Told<'a> {
    at: i64,
    naming: Rc<Naming>,
    observed: Rc<Observed>,
    version: Version<'a>,
    before: Option<Version<'a>>,
}

/// When `version` happened on the wall clock (ms since the Unix epoch).
fn row_at(version: &Version<'_>, clock: &Clock) -> i64 {
    let now_wall_ms = clock.now_unix.saturating_mul(1000);
    match version.source {
        // The page's deltas are placed by how long ago its clock saw them.
        VersionSource::Page => {
            let ago_ms = clock
                .now_ms
                .saturating_sub(Millis::try_from(version.at_ms).unwrap_or(0));
            now_wall_ms.saturating_sub(i64::try_from(ago_ms).unwrap_or(i64::MAX))
        }
        VersionSource::Recorder => version.at_ms,
    }
}

/// The family grown one step down the owner references through the kept
/// stores and histories (a replaced pod is only in the latter); whether it
/// grew.
fn grow_from_pages(
    sources: &[StorySource<'_>],
    family: &mut HashSet<String>,
    members: &mut HashSet<(usize, String)>,
    subjects: &mut Vec<Subject>,
) -> bool {
    let mut grew = false;
    for (index, s) in sources.iter().enumerate() {
        let owned = s.history.iter().map(|e| e.object.clone());
        let held = s.store.list().cloned();
        for candidate in owned.chain(held) {
            if family.contains(&candidate.uid) {
                // known already, perhaps only from serve's record
                members.insert((index, candidate.key.clone()));
                continue;
            }
            if candidate.owner_uids().any(|uid| family.contains(uid)) {
                family.insert(candidate.uid.clone());
                members.insert((index, candidate.key.clone()));
                subjects.push(Subject::of(s, &candidate));
                grew = true;
            }
        }
    }
    grew
}

/// The family grown one step down the owner references through serve's
/// records of what the object owns (a ReplicaSet the page never kept, a
/// pod replaced before the page opened); whether it grew.
fn grow_from_record(
    records: &[FamilyRecord<'_>],
    family: &mut HashSet<String>,
    subjects: &mut Vec<Subject>,
) -> bool {
    let mut grew = false;
    for (resource, record, _) in records.iter().filter(|(r, _, _)| !is_events_resource(r)) {
        let kind = kind_of_resource(resource);
        for version in &record.versions {
            let object = &version.object;
            if !family.contains(&object.uid) && object.owner_uids().any(|uid| family.contains(uid))
            {
                family.insert(object.uid.clone());
                subjects.push(Subject::named(kind, object));
                grew = true;
            }
        }
    }
    grew
}

/// The kind of `resource`'s objects (as in `data-resource`) when they do
/// not say.
fn kind_of_resource(resource: &str) -> &'static str {
    deltascope_facts::resources::by_name(resource).map_or("", |r| r.kind)
}

/// The family's versions from serve's records of what the object owns
/// that the page's own histories do not hold, as story rows: only the
/// newest [`STORY_ROWS`] are told (each is a diff with its previous one).
fn recorded_rows<'a>(
    sources: &[StorySource<'_>],
    records: &[FamilyRecord<'a>],
    family: &HashSet<String>,
    object: &KubeObject,
    clock: &Clock,
) -> Vec<Told<'a>> {
    // Each member's recorded versions, in the record's (time) order.
    let mut chains: Vec<(usize, Vec<Version<'a>>)> = Vec::new();
    for (index, (resource, record, _)) in records.iter().enumerate() {
        if is_events_resource(resource) {
            continue; // told as events
        }
        let kept = sources.iter().find(|s| s.stats_name() == *resource);
        let mut by_key: HashMap<&str, Vec<Version<'a>>> = HashMap::new();
        for (at, v) in record.versions.iter().enumerate() {
            if v.object.uid == object.uid || !family.contains(&v.object.uid) {
                continue;
            }
            let version = Version::of_recorded(at, v);
            let held = kept.is_some_and(|s| {
                s.history
                    .versions(&v.object.key)
                    .any(|e| Version::of_page(e).identity() == version.identity())
            });
            if !held {
                by_key
                    .entry(v.object.key.as_str())
                    .or_default()
                    .push(version);
            }
        }
        chains.extend(by_key.into_values().map(|chain| (index, chain)));
    }
    // Only the newest rows are shown: the time of the last one told.
    let mut times: Vec<i64> = chains
        .iter()
        .flat_map(|(_, chain)| chain.iter().map(|v| v.at_ms))
        .collect();
    let oldest_told = if times.len() > STORY_ROWS {
        let (_, nth, _) =
            times.select_nth_unstable_by_key(STORY_ROWS - 1, |t| std::cmp::Reverse(*t));
        *nth
    } else {
        i64::MIN
    };
    let mut rows = Vec::new();
    for (index, chain) in &chains {
        let (resource, _, watched) = &records[*index];
        let naming = Rc::new(Naming {
            resource: resource.to_string(),
            kind: kind_of_resource(resource),
        });
        let observed = Rc::new(Observed(watched.iter().cloned().collect()));
        for (at, version) in chain
            .iter()
            .enumerate()
            .filter(|(_, v)| v.at_ms >= oldest_told)
        {
            let before = at.checked_sub(1).and_then(|i| chain.get(i)).cloned();
            rows.push(Told {
                at: row_at(version, clock),
                naming: naming.clone(),
                observed: observed.clone(),
                version: version.clone(),
                before,
            });
        }
    }
    rows
}

fn involved_key(event: &ObjectEvent) -> String {
    if event.involved.namespace.is_empty() {
        event.involved.name.clone()
    } else {
        format!("{}/{}", event.involved.namespace, event.involved.name)
    }
}

/// The clocks a story is told by.
struct Clock {
    wall: WallClock,
    now_ms: Millis,
    now_unix: i64,
}

/// A resource as a story row names it: `data-resource`, and the kind of
/// its objects when they do not say.
struct Naming {
    resource: String,
    kind: &'static str,
}

impl Naming {
    fn of(s: &StorySource<'_>) -> Naming {
        Naming {
            resource: s.stats_name(),
            kind: s.kind(),
        }
    }
}

fn story_row(told: &Told<'_>, clock: &Clock, attributions: &mut StoryWho) -> StoryRow {
    let Told {
        at,
        naming,
        observed,
        version,
        before,
    } = told;
    let object = version.object;
    let (summary, mut who) = match (version.kind, before) {
        (DeltaType::Updated | DeltaType::Replaced | DeltaType::Sync, Some(before)) => {
            match attributions.who(before.object, object) {
                Some(who) => (who.summary(), who),
                None => ("reading what changed…".to_string(), WhoChanged::default()),
            }
        }
        (DeltaType::Deleted, _) => ("deleted".to_string(), WhoChanged::default()),
        // Its first version: a creation only when observed (`first_seen`);
        // every manager of the object wrote it.
        (kind, _) => (
            beginning(kind, version.at_ms, object, observed).words(&clock.wall, clock.now_unix),
            WhoChanged {
                managers: writers(None, object.value.root()),
                ..WhoChanged::default()
            },
        ),
    };
    if who.managers.is_empty() {
        who.managers = version.recorded_managers.to_vec();
    }
    let now_wall_ms = clock.now_unix.saturating_mul(1000);
    StoryRow {
        at: *at,
        when: format!(
            "{} ago",
            format_age(now_wall_ms.saturating_sub(*at).max(0) / 1000)
        ),
        resource: naming.resource.clone(),
        kind: Subject::named(naming.kind, object).kind,
        key: object.key.clone(),
        what: format!("{:?}", version.kind),
        summary,
        who,
        expired: false,
        source: version.source,
    }
}

#[cfg(test)]
#[path = "object_story_tests.rs"]
mod tests;
