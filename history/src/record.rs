//! What the recorder hands the store: one [`Write`] per delta or gap, each
//! for one cluster ([`ClusterId`]) and one resource (written as in the
//! page's `data-resource`: `pods`, `deployments.apps`).
//!
//! Times are absolute milliseconds since the Unix epoch (UTC): the record
//! outlives the process, so no process-relative clock may leak into it.

use deltascope_informer::json::JsonValue;
use deltascope_informer::DeltaType;

use crate::usage::UsageRecord;

/// The identity of a cluster: the `kube-system` namespace's `metadata.uid`,
/// which stays for the cluster's life and differs between clusters, so the
/// records of two clusters in one database never mix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterId(pub String);

impl std::fmt::Display for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One delta as the informer produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaRecord {
    /// As in `data-resource`: `pods`, `deployments.apps`.
    pub resource: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// `metadata.uid` (empty if the server sent none).
    pub uid: String,
    /// The object's `metadata.resourceVersion`.
    pub resource_version: String,
    /// The resource's resourceVersion once this delta is applied: the
    /// object's own for a watch event, the list's for the deltas of a relist.
    /// The state at a moment is stated as of the last one at or before it.
    pub store_resource_version: String,
    /// client-go's delta type.
    pub kind: DeltaType,
    /// A deletion found by a relist (`DeletedFinalStateUnknown`): the object
    /// is the last state known, not the final one.
    pub tombstone: bool,
    /// When the delta arrived, ms since the Unix epoch.
    pub at_ms: i64,
    /// The field managers that wrote this version (none for a deletion, a
    /// resync, or an object first seen in a list).
    pub managers: Vec<String>,
    /// The object, Secrets already redacted, in the informer's compact
    /// form: the recorder hands over what its store holds, and the store
    /// diffs two versions on their tapes (`JsonValue::patch_to`) and writes
    /// JSON text only for a full version.
    pub object: JsonValue,
    /// The same object's (same uid's) previous version exactly as this
    /// recorder last handed it in a `DeltaRecord` since it (re)started;
    /// `None` when it handed none (first seen, or first since a restart).
    /// The store writes a patch against it instead of the whole object when
    /// it can; it must be the object of that earlier record.
    pub previous: Option<JsonValue>,
}

/// Why a span of time has no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GapReason {
    /// Nothing was recording: serve or the recorder was not running.
    NotRunning,
    /// The upstream could not be reached or refused the watch.
    Unreachable,
    /// The server no longer had the watched resourceVersion (410 Gone); a
    /// relist followed.
    Expired,
    /// The database could not be written.
    DatabaseUnavailable,
    /// Retention evicted what was recorded then.
    NotKept,
}

impl GapReason {
    /// The word stored and sent in gap lines.
    pub fn as_str(self) -> &'static str {
        match self {
            GapReason::NotRunning => "not-running",
            GapReason::Unreachable => "unreachable",
            GapReason::Expired => "expired",
            GapReason::DatabaseUnavailable => "database-unavailable",
            GapReason::NotKept => "not-kept",
        }
    }

    /// The reason a stored word names; `None` for a word no version wrote.
    pub fn parse(word: &str) -> Option<GapReason> {
        [
            GapReason::NotRunning,
            GapReason::Unreachable,
            GapReason::Expired,
            GapReason::DatabaseUnavailable,
            GapReason::NotKept,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == word)
    }
}

/// A span of one resource's time with no record: changes made then may be
/// missing. `from` is the last moment the record was known complete, `to`
/// the moment it was again (ms since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapRecord {
    pub resource: String,
    pub from_ms: i64,
    pub to_ms: i64,
    pub reason: GapReason,
}

/// How far one resource's record is known complete: everything up to
/// `through_ms` was recorded, and the resource then stood at
/// `store_resource_version`. The recorder writes one every few seconds while
/// it watches, so that a stop leaves a gap from the last one (not from the
/// last change, which may be hours older).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkRecord {
    pub resource: String,
    pub store_resource_version: String,
    pub through_ms: i64,
}

/// One thing the recorder writes, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Delta(DeltaRecord),
    Gap(GapRecord),
    Watermark(WatermarkRecord),
    /// Resource usage of one metrics window (not a resource's deltas:
    /// stored in a table of its own, see [`crate::usage`]).
    Usage(UsageRecord),
}

impl Write {
    /// The resource it is about (for usage, the metrics API's resource:
    /// `pods.metrics.k8s.io`, never a recorded resource's name).
    pub fn resource(&self) -> &str {
        match self {
            Write::Delta(delta) => &delta.resource,
            Write::Gap(gap) => &gap.resource,
            Write::Watermark(mark) => &mark.resource,
            Write::Usage(usage) => usage.resource.api_name(),
        }
    }
}

/// A resource as last recorded, for a recorder that starts again (or
/// finds the database back): it resumes from `store_resource_version`, or
/// relists and records the differences against `objects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedState {
    /// The last watermark's (or, if later, the last delta's) resourceVersion.
    pub store_resource_version: String,
    /// The last moment the record was known complete.
    pub through_ms: i64,
    /// Every object the resource held then, as JSON text.
    pub objects: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gap_reason_reads_back_from_its_word() {
        for reason in [
            GapReason::NotRunning,
            GapReason::Unreachable,
            GapReason::Expired,
            GapReason::DatabaseUnavailable,
            GapReason::NotKept,
        ] {
            assert_eq!(GapReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(GapReason::parse("weather"), None);
    }
}
