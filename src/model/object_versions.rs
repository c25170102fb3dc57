//! One object's versions as the object view shows them: those serve's
//! recorder holds from before the page's own (`crate::api::object_record`)
//! joined to the page's history, each marked with where it comes from, in
//! time order, never doubled — the same resourceVersion is one delta, and
//! the page's own wins (a relist's deletion carries the last version's
//! resourceVersion, so a deletion counts apart from the update before
//! it). What the recorder says it did not watch (its gaps) is kept beside
//! them, the part that concerns the object: from its first version on.
//! The History, Compare, Story and who-changed all read this one list.

use std::collections::HashSet;

use crate::api::object_record::{ObjectRecord, RecordGap};
use crate::informer::{compact_sort, DeltaType, HistoryEntry, ObjectRef};
use crate::model::first_seen::{WallClock, Watched};

/// Where a version comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionSource {
    /// The page saw it.
    Page,
    /// serve's recorder recorded it (before the page's own history).
    Recorder,
}

impl VersionSource {
    /// `data-source`: `page` or `recorder`.
    pub fn as_str(&self) -> &'static str {
        match self {
            VersionSource::Page => "page",
            VersionSource::Recorder => "recorder",
        }
    }
}

/// A version's identity while its object is shown: the page's history
/// sequence number, or its place in serve's record counted from its newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionId {
    Page(u64),
    Recorded(usize),
}

/// One version of the joined history.
#[derive(Debug, Clone)]
pub struct Version<'a> {
    pub id: VersionId,
    pub source: VersionSource,
    /// When it was seen or recorded (ms since the Unix epoch).
    pub at_ms: i64,
    pub kind: DeltaType,
    pub tombstone: bool,
    pub object: &'a ObjectRef,
    /// The managers serve recorded for it (a page version's are read from
    /// its object when needed).
    pub recorded_managers: &'a [String],
}

impl<'a> Version<'a> {
    /// The `index`th version of serve's record as a version.
    pub fn of_recorded(index: usize, v: &'a crate::api::object_record::RecordedVersion) -> Self {
        Version {
            id: VersionId::Recorded(index),
            source: VersionSource::Recorder,
            at_ms: v.time_ms,
            kind: v.kind,
            tombstone: v.tombstone,
            object: &v.object,
            recorded_managers: &v.managers,
        }
    }

    /// A delta of the page's own history as a version.
    pub fn of_page(entry: &'a HistoryEntry) -> Self {
        Version {
            id: VersionId::Page(entry.seq),
            source: VersionSource::Page,
            at_ms: i64::try_from(entry.at).unwrap_or(i64::MAX),
            kind: entry.kind,
            tombstone: entry.tombstone,
            object: &entry.object,
            recorded_managers: &[],
        }
    }

    pub fn resource_version(&self) -> &'a str {
        &self.object.resource_version
    }

    /// The identity that makes two deltas one: resourceVersion, and
    /// whether it is a deletion.
    pub fn identity(&self) -> (&'a str, bool) {
        (self.resource_version(), self.kind == DeltaType::Deleted)
    }
}

/// Where the page is with serve's record of the object on screen (the
/// decisions are `crate::app::object_reach`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReachPhase {
    /// Being read.
    Reading,
    /// Read (the record is in [`Reach::record`]).
    Read,
    /// Its newest versions are read (in [`Reach::record`]); older ones are
    /// being read, a page at a time.
    ReadingOlder,
    /// Its newest versions are read, older ones could not be: why.
    OlderFailed(String),
    /// serve holds none of it; its words, or nothing to say.
    NoRecord(Option<String>),
    /// The request failed, or its answer is no record: why.
    Failed(String),
}

/// What the object view says about serve's record of the object
/// (`[data-testid=object-reach]`), given how many recorded versions it
/// shows beside the page's own.
pub fn reach_note(
    phase: &ReachPhase,
    recorded_shown: usize,
    clock: &WallClock,
    first_ms: Option<i64>,
) -> Option<(&'static str, String)> {
    Some(match phase {
        ReachPhase::Reading => ("reading", "reading serve's record of this object…".to_string()),
        ReachPhase::Read => {
            let since = first_ms
                .map(|ms| format!(", since {}", clock.hh_mm_ss(ms)))
                .unwrap_or_default();
            let versions = match recorded_shown {
                0 => "no version before the page's own".to_string(),
                1 => "1 version before the page's own".to_string(),
                n => format!("{n} versions before the page's own"),
            };
            ("read", format!("recorded by serve{since}: {versions}"))
        }
        ReachPhase::ReadingOlder => (
            "reading",
            format!("recorded by serve: {recorded_shown} versions before the page's own read so far, reading older ones…"),
        ),
        ReachPhase::OlderFailed(why) => (
            "error",
            format!("serve's older record of this object could not be read ({why}); showing the {recorded_shown} newest versions it recorded"),
        ),
        ReachPhase::NoRecord(words) => ("none", words.clone()?),
        ReachPhase::Failed(why) => (
            "error",
            format!("serve's record of this object could not be read ({why}); showing what the page saw"),
        ),
    })
}

/// What the page knows of serve's record of the object on screen.
#[derive(Debug, Clone, Default)]
pub struct Reach<'a> {
    /// Where the page is with it; `None` without a recorder.
    pub phase: Option<ReachPhase>,
    /// The object's record, once read.
    pub record: Option<&'a ObjectRecord>,
    /// What serve's recorder watched of the object's resource (from its
    /// first record, except the record's gaps).
    pub recorder: Option<Watched>,
    pub clock: WallClock,
    /// serve's records of what the object owns (`crate::app::family_reach`):
    /// each owned resource (as in `data-resource`), its record in the
    /// object's namespace, and what the recorder watched of it.
    pub family: Vec<FamilyRecord<'a>>,
}

/// Events, as `data-resource` names them (core/v1 or events.k8s.io/v1).
pub fn is_events_resource(resource: &str) -> bool {
    matches!(resource, "events" | "events.events.k8s.io")
}

/// One owned resource's record, as the story reads it.
pub type FamilyRecord<'a> = (&'a str, &'a ObjectRecord, Option<Watched>);

impl<'a> Reach<'a> {
    /// serve's records of events in the object's namespace, as read.
    pub fn recorded_events(&self) -> Vec<&'a ObjectRecord> {
        self.family
            .iter()
            .filter(|(resource, _, _)| is_events_resource(resource))
            .map(|(_, record, _)| *record)
            .collect()
    }

    /// Whether the record reaches back to the object's first recorded
    /// version (not while older pages are read, or after one failed): only
    /// then is the first version held the one that says how it began.
    pub fn complete(&self) -> bool {
        !matches!(
            self.phase,
            Some(ReachPhase::ReadingOlder | ReachPhase::OlderFailed(_))
        )
    }

    /// The record's versions (none before it is read).
    pub fn recorded(&self) -> &'a [crate::api::object_record::RecordedVersion] {
        self.record.map_or(&[], |r| r.versions.as_slice())
    }
}

/// `page` (the page's history of one key, oldest first) and the recorded
/// versions before it, joined in time order; a recorded version the page
/// holds too (the same resourceVersion) is left out, and the page's takes
/// its time when the recorder saw it first (the page's first list of an
/// object serve recorded a minute before was first seen then).
pub fn join<'a>(
    page: &[&'a HistoryEntry],
    recorded: &'a [crate::api::object_record::RecordedVersion],
) -> Vec<Version<'a>> {
    let mut first_recorded: std::collections::HashMap<(&str, bool), i64> =
        std::collections::HashMap::new();
    for (index, v) in recorded.iter().enumerate() {
        let version = Version::of_recorded(index, v);
        first_recorded
            .entry(version.identity())
            .and_modify(|at| *at = (*at).min(version.at_ms))
            .or_insert(version.at_ms);
    }
    let mut page: Vec<Version<'a>> = page
        .iter()
        .map(|entry| {
            let mut version = Version::of_page(entry);
            if let Some(at) = first_recorded.get(&version.identity()) {
                version.at_ms = version.at_ms.min(*at);
            }
            version
        })
        .collect();
    compact_sort::sort_by_key(&mut page, |v| v.at_ms);
    let held: HashSet<(&str, bool)> = page.iter().map(Version::identity).collect();
    let mut seen: HashSet<(&str, bool)> = HashSet::new();
    // Counted from the record's newest: older pages read later are put
    // before the ones held, which keep their ids (and their read changes).
    let newest = recorded.len().saturating_sub(1);
    let recorded = recorded.iter().enumerate().filter_map(|(index, v)| {
        let version = Version::of_recorded(newest - index, v);
        let fresh = !held.contains(&version.identity()) && seen.insert(version.identity());
        fresh.then_some(version)
    });
    // Both are in time order: merged, each keeping its own order (the
    // recorder's first at equal times).
    let mut out = Vec::with_capacity(page.len());
    let mut page = page.into_iter().peekable();
    for version in recorded {
        while let Some(own) = page.next_if(|own| own.at_ms < version.at_ms) {
            out.push(own);
        }
        out.push(version);
    }
    out.extend(page);
    out
}

/// The record's gaps that concern versions from `first_ms` on, newest
/// first.
pub fn gaps_from(record: Option<&ObjectRecord>, first_ms: Option<i64>) -> Vec<RecordGap> {
    let mut gaps: Vec<RecordGap> = record
        .map(|r| r.gaps.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|gap| first_ms.is_none_or(|first| gap.to_ms >= first))
        .collect();
    compact_sort::sort_by_key(&mut gaps, |gap| std::cmp::Reverse(gap.to_ms));
    gaps
}

/// "not recorded from 03:12:40 to 03:14:02 (serve was not running)".
pub fn gap_words(gap: &RecordGap, clock: &WallClock) -> String {
    let why = match gap.reason.as_str() {
        "not-running" => "serve's recorder was not running",
        "unreachable" => "the cluster was unreachable",
        "expired" => "the watch expired; relisted after",
        "database-unavailable" => "the history database was unavailable",
        "not-kept" => "evicted by serve's retention",
        "" => "no reason given",
        other => other,
    };
    format!(
        "not recorded from {} to {} ({why})",
        clock.hh_mm_ss(gap.from_ms),
        clock.hh_mm_ss(gap.to_ms)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::object_record::RecordedVersion;
    use crate::informer::{History, HistoryConfig, KubeObject};
    use serde_json::json;
    use std::sync::Arc;

    fn object(rv: &str) -> ObjectRef {
        Arc::new(
            KubeObject::from_value(json!({"metadata": {"name": "web", "namespace": "shop",
                "resourceVersion": rv}}))
            .expect("object"),
        )
    }

    fn recorded(time_ms: i64, kind: DeltaType, rv: &str) -> RecordedVersion {
        RecordedVersion {
            time_ms,
            kind,
            tombstone: false,
            managers: vec!["ops-cli".into()],
            object: object(rv),
        }
    }

    fn ids(versions: &[Version<'_>]) -> Vec<(VersionSource, String)> {
        versions
            .iter()
            .map(|v| (v.source, v.resource_version().to_string()))
            .collect()
    }

    #[test]
    fn the_record_comes_before_the_page_and_one_version_is_one_delta() {
        let mut history = History::new(HistoryConfig::default());
        history.record(10_000, DeltaType::Replaced, object("30"), false, "shop/web");
        history.record(12_000, DeltaType::Updated, object("31"), false, "shop/web");
        let page: Vec<&HistoryEntry> = history.versions("shop/web").collect();
        let record = vec![
            recorded(1_000, DeltaType::Replaced, "10"),
            recorded(5_000, DeltaType::Updated, "20"),
            recorded(5_000, DeltaType::Updated, "20"), // sent twice: once
            recorded(9_900, DeltaType::Updated, "30"), // the page's first list: the page's
        ];
        let joined = join(&page, &record);
        use VersionSource::{Page, Recorder};
        assert_eq!(
            ids(&joined),
            [
                (Recorder, "10".to_string()),
                (Recorder, "20".to_string()),
                (Page, "30".to_string()),
                (Page, "31".to_string())
            ]
        );
        assert_eq!(joined[1].recorded_managers, ["ops-cli".to_string()]);
        assert_eq!(joined[2].id, VersionId::Page(0));
        // the record's second of four, counted from its newest
        assert_eq!(joined[1].id, VersionId::Recorded(2));
        // rv 30: the page's list, first seen when the recorder saw it.
        assert_eq!(joined[2].at_ms, 9_900);
        // Without a record, the page's own alone.
        assert_eq!(ids(&join(&page, &[])), ids(&joined[2..]));
    }

    #[test]
    fn versions_the_page_missed_fall_in_time_order_and_a_deletion_counts_apart() {
        let mut history = History::new(HistoryConfig::default());
        history.record(10_000, DeltaType::Replaced, object("30"), false, "shop/web");
        history.record(20_000, DeltaType::Updated, object("50"), false, "shop/web");
        let page: Vec<&HistoryEntry> = history.versions("shop/web").collect();
        let mut deletion = recorded(15_000, DeltaType::Deleted, "30");
        deletion.tombstone = true;
        let record = vec![recorded(12_000, DeltaType::Updated, "40"), deletion];
        let joined = join(&page, &record);
        let kinds: Vec<(&str, DeltaType)> = joined
            .iter()
            .map(|v| (v.resource_version(), v.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("30", DeltaType::Replaced),
                ("40", DeltaType::Updated),
                ("30", DeltaType::Deleted),
                ("50", DeltaType::Updated)
            ]
        );
    }

    #[test]
    fn gaps_from_the_first_version_on_newest_first_in_words() {
        let gap = |from_ms, to_ms, reason: &str| RecordGap {
            from_ms,
            to_ms,
            reason: reason.into(),
        };
        let record = ObjectRecord {
            versions: Vec::new(),
            gaps: vec![
                gap(0, 1_000, "not-running"),
                gap(5_000, 9_000, "expired"),
                gap(20_000, 30_000, "unreachable"),
            ],
        };
        let kept = gaps_from(Some(&record), Some(9_000));
        assert_eq!(
            kept.iter().map(|g| g.to_ms).collect::<Vec<_>>(),
            [30_000, 9_000]
        );
        assert!(gaps_from(None, Some(0)).is_empty());
        let utc = WallClock::default();
        assert_eq!(
            reach_note(&ReachPhase::Read, 2, &utc, Some(3_000)),
            Some((
                "read",
                "recorded by serve, since 00:00:03: 2 versions before the page's own".into()
            ))
        );
        assert_eq!(reach_note(&ReachPhase::NoRecord(None), 0, &utc, None), None);
        let failed = reach_note(&ReachPhase::Failed("403".into()), 0, &utc, None);
        assert_eq!(failed.map(|(state, _)| state), Some("error"));
        assert_eq!(
            gap_words(&kept[1], &WallClock::default()),
            "not recorded from 00:00:05 to 00:00:09 (the watch expired; relisted after)"
        );
    }
}
