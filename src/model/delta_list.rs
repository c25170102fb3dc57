//! The delta list's rows: what one held delta is drawn as (its resource,
//! kind, key, resourceVersion, field managers and how long ago it was).
//! Which deltas the list shows is the timeline's selection
//! (`delta_select::select_deltas_across`, over the same histories); this is
//! only their drawing, apart so the timeline's model stays one read. No
//! web dependency; tested natively (in `timeline_tests.rs`).

use crate::api::object_record::RecordedVersion;
use crate::informer::{HistoryEntry, Millis};

/// One row of the delta list.
#[derive(Clone, Debug, PartialEq)]
pub struct DeltaRow {
    /// The kept informer whose history holds it.
    pub source: u64,
    /// That informer's lane name.
    pub resource: String,
    pub seq: u64,
    pub when: String,
    pub kind: String,
    pub key: String,
    pub resource_version: String,
    pub tombstone: bool,
    /// The field managers that wrote it, comma-separated (`data-managers`).
    pub managers: String,
    /// From serve's record, before the page's own history (`data-recorded`;
    /// `seq` is then its place in the record).
    pub recorded: bool,
}

impl DeltaRow {
    /// The row of `entry`, held by the kept informer `source` whose lane is
    /// `resource`, `now` on the histories' clock.
    pub fn of(source: u64, resource: String, entry: &HistoryEntry, now: Millis) -> DeltaRow {
        DeltaRow {
            source,
            resource,
            seq: entry.seq,
            when: delta_age(now, entry.at),
            kind: format!("{:?}", entry.kind),
            key: entry.key().to_string(),
            resource_version: entry.resource_version().to_string(),
            tombstone: entry.tombstone,
            managers: entry.writers.join(","),
            recorded: false,
        }
    }

    /// The row of serve's recorded `version` (the `index`th of its record
    /// of the lane of `source`, named `resource`).
    pub fn of_recorded(
        source: u64,
        resource: String,
        (index, version): (usize, &RecordedVersion),
        now: Millis,
    ) -> DeltaRow {
        DeltaRow {
            source,
            resource,
            seq: index as u64,
            when: delta_age(now, version.time_ms.max(0) as Millis),
            kind: format!("{:?}", version.kind),
            key: version.object.key.clone(),
            resource_version: version.resource_version().to_string(),
            tombstone: version.tombstone,
            managers: version.managers.join(","),
            recorded: true,
        }
    }
}

/// How long before `now` a delta at `at` was, to the tenth of a second.
pub fn delta_age(now: Millis, at: Millis) -> String {
    let ms = now.saturating_sub(at);
    if ms < 60_000 {
        format!(
            "{} s ago",
            crate::model::decimal::fixed(ms as f64 / 1000.0, 1)
        )
    } else {
        format!(
            "{} ago",
            deltascope_facts::time::format_age((ms / 1000) as i64)
        )
    }
}
