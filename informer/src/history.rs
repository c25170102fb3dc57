//! History: every delta the informer popped, in order, for the timeline.
//! Each entry has a sequence number, the caller's time, the delta type and
//! the (shared, never copied) object, whose key and resourceVersion it reads.
//! An object's versions are found by a scan (asked for one object at a time)
//! and any two can be diffed (RFC 6902 JSON Patch via the `json-patch` crate). Retention is
//! bounded by entry count and by the heap bytes the entries hold, limits the
//! user may change while it runs (`set_config`); evicted entries are
//! counted (`dropped`) for the `history-stats` DOM hook.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::delta_fifo::DeltaType;
use super::object::ObjectRef;
use crate::clock::Millis;

/// Retention limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryConfig {
    pub max_deltas: usize,
    /// Heap bytes the recorded objects hold (real memory, not JSON text).
    pub max_bytes: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            max_deltas: 50_000,
            max_bytes: 64 * 1024 * 1024,
        }
    }
}

/// One recorded delta.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    /// Position in the history, starting at 0; never reused.
    pub seq: u64,
    pub at: Millis,
    pub kind: DeltaType,
    pub object: ObjectRef,
    /// The delta was a `DeletedFinalStateUnknown` tombstone (the object is
    /// the last state known, not the final one).
    pub tombstone: bool,
    /// Bytes charged to retention: what the recorded object holds in memory
    /// (see [`JsonValue::held_bytes`](super::JsonValue::held_bytes)).
    pub bytes: usize,
    /// The field managers that wrote this version
    /// ([`field_managers::writers`](super::field_managers::writers)); none
    /// for a deletion or a resync.
    pub writers: Arc<[Arc<str>]>,
}

impl HistoryEntry {
    /// The object's key (`namespace/name` or `name`).
    pub fn key(&self) -> &str {
        &self.object.key
    }

    /// The recorded object's resourceVersion.
    pub fn resource_version(&self) -> &str {
        &self.object.resource_version
    }
}

#[derive(Debug, Default)]
pub struct History {
    config: HistoryConfig,
    entries: VecDeque<HistoryEntry>,
    /// seq of `entries[0]`
    first_seq: u64,
    bytes: usize,
    recorded: u64,
    dropped: u64,
    /// Field manager names, shared by the entries they wrote.
    managers: HashSet<Arc<str>>,
    /// Lists of writers, each held once for the entries that name it (a
    /// Pod's versions and a ReplicaSet's Pods have the same few).
    writer_lists: HashSet<Arc<[Arc<str>]>>,
    /// Times nothing was watched and changes may be missing, oldest first.
    gaps: VecDeque<Gap>,
}

/// A time the informer was not watching, so changes made then may be
/// missing from the history: a page closed longer than the server keeps
/// its changes, relisted on its return (the history says so instead of
/// pretending continuity).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Gap {
    /// The last moment the store was known current (on the caller's clock).
    pub from: Millis,
    /// When the relist that followed was applied.
    pub to: Millis,
}

/// Gaps kept at most (the oldest go first).
pub const MAX_GAPS: usize = 64;

/// Bytes one entry is charged to retention: its object and itself (its
/// list of writers is held once for every entry that names it).
fn entry_bytes(object: &ObjectRef) -> usize {
    object.held_bytes() + std::mem::size_of::<HistoryEntry>()
}

/// Why a stored history cannot be taken back ([`History::restore`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("the stored history skips from sequence number {expected} to {found}")]
    NotConsecutive { expected: u64, found: u64 },
    #[error("the stored history holds {held} deltas and says {dropped} were evicted, but only {recorded} were recorded")]
    Counters {
        recorded: u64,
        dropped: u64,
        held: u64,
    },
}

/// A history as stored in the browser's database, to be taken back with
/// [`History::restore`].
#[derive(Debug, Default)]
pub struct StoredHistory {
    /// Oldest first, with consecutive sequence numbers from `first_seq`.
    pub entries: Vec<HistoryEntry>,
    pub first_seq: u64,
    /// Deltas recorded in all (held and evicted).
    pub recorded: u64,
    /// Deltas evicted by retention.
    pub dropped: u64,
    pub gaps: Vec<Gap>,
}

/// Approximate serialized size of a JSON value, without serializing it.
pub fn approx_json_size(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| approx_json_size(x) + 1).sum::<usize>(),
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, x)| k.len() + 4 + approx_json_size(x))
                .sum::<usize>()
        }
    }
}

impl History {
    pub fn new(config: HistoryConfig) -> History {
        History {
            config,
            ..History::default()
        }
    }

    pub fn config(&self) -> &HistoryConfig {
        &self.config
    }

    /// New retention limits, applied at once: lower ones evict the oldest
    /// entries now (counted in [`History::dropped`]), higher ones only let
    /// the history grow further. Nothing evicted comes back.
    pub fn set_config(&mut self, config: HistoryConfig) {
        self.config = config;
        self.evict();
    }

    /// Records one delta and applies retention.
    pub fn record(
        &mut self,
        at: Millis,
        kind: DeltaType,
        object: ObjectRef,
        tombstone: bool,
        key: &str,
    ) -> u64 {
        self.record_written(at, kind, object, tombstone, key, Vec::new())
    }

    /// [`History::record`] with the field managers that wrote it (their
    /// names are shared across entries).
    pub fn record_written(
        &mut self,
        at: Millis,
        kind: DeltaType,
        object: ObjectRef,
        tombstone: bool,
        key: &str,
        writers: Vec<String>,
    ) -> u64 {
        let writers = self.shared_writers(writers.iter().map(String::as_str));
        let seq = self.next_seq();
        // Times never go back, even when the clock does between page loads
        // (restored entries keep the times they were recorded at).
        let at = self.entries.back().map_or(at, |last| at.max(last.at));
        debug_assert_eq!(key, object.key, "a delta's key is its object's key");
        let bytes = entry_bytes(&object);
        self.entries.push_back(HistoryEntry {
            seq,
            at,
            kind,
            object,
            tombstone,
            bytes,
            writers,
        });
        self.bytes += bytes;
        self.recorded += 1;
        self.evict();
        seq
    }

    fn evict(&mut self) {
        while self.entries.len() > self.config.max_deltas
            || (self.bytes > self.config.max_bytes && !self.entries.is_empty())
        {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.first_seq += 1;
            self.bytes -= e.bytes;
            self.dropped += 1;
        }
    }

    /// Deltas recorded since creation (including evicted ones).
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// The gaps in what was watched, oldest first.
    pub fn gaps(&self) -> impl ExactSizeIterator<Item = &Gap> {
        self.gaps.iter()
    }

    /// Records a time nothing was watched (see [`Gap`]).
    pub fn record_gap(&mut self, gap: Gap) {
        self.gaps.push_back(gap);
        while self.gaps.len() > MAX_GAPS {
            self.gaps.pop_front();
        }
    }

    /// The sequence number the next recorded delta gets.
    pub fn next_seq(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    /// The sequence number of the oldest held entry (== [`History::next_seq`]
    /// when none is held).
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// A history as it was stored ([`StoredHistory`]). Retention applies at
    /// once, as to any recorded delta. Fails when the sequence numbers are
    /// not consecutive from `first_seq` or the counters cannot be true
    /// (more held than recorded).
    pub fn restore(config: HistoryConfig, stored: StoredHistory) -> Result<History, RestoreError> {
        let mut history = History::new(config);
        history.first_seq = stored.first_seq;
        for (i, mut entry) in stored.entries.into_iter().enumerate() {
            let want = stored.first_seq + i as u64;
            if entry.seq != want {
                return Err(RestoreError::NotConsecutive {
                    expected: want,
                    found: entry.seq,
                });
            }
            entry.writers = history.shared_writers(entry.writers.iter().map(|name| &**name));
            entry.bytes = entry_bytes(&entry.object);
            history.bytes += entry.bytes;
            history.entries.push_back(entry);
        }
        let held = history.entries.len() as u64;
        if stored.recorded < held || stored.dropped > stored.recorded - held {
            return Err(RestoreError::Counters {
                recorded: stored.recorded,
                dropped: stored.dropped,
                held,
            });
        }
        history.recorded = stored.recorded;
        history.dropped = stored.dropped;
        for gap in stored.gaps {
            history.record_gap(gap);
        }
        history.evict();
        Ok(history)
    }

    /// The one list of `names`, each name shared too.
    fn shared_writers<'n>(&mut self, names: impl Iterator<Item = &'n str>) -> Arc<[Arc<str>]> {
        let list: Vec<Arc<str>> = names.map(|name| self.shared_manager(name)).collect();
        if let Some(shared) = self.writer_lists.get(list.as_slice()) {
            return shared.clone();
        }
        let shared: Arc<[Arc<str>]> = Arc::from(list);
        self.writer_lists.insert(shared.clone());
        shared
    }

    fn shared_manager(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.managers.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        self.managers.insert(shared.clone());
        shared
    }

    /// Deltas evicted by retention.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Entries currently held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Approximate bytes currently held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// All held entries, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &HistoryEntry> + ExactSizeIterator {
        self.entries.iter()
    }

    pub fn get(&self, seq: u64) -> Option<&HistoryEntry> {
        let i = seq.checked_sub(self.first_seq)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    /// Entries with `from <= at < to`, oldest first (times are
    /// non-decreasing because the caller's clock is monotonic).
    pub fn range(
        &self,
        from: Millis,
        to: Millis,
    ) -> impl DoubleEndedIterator<Item = &HistoryEntry> {
        let lo = self.entries.partition_point(|e| e.at < from);
        let hi = self.entries.partition_point(|e| e.at < to).max(lo);
        self.entries.range(lo..hi)
    }

    /// The held versions of one object, oldest first. A scan of the held
    /// entries: asked for one object at a time (the object view), it costs
    /// less than keeping a per-key index up to date on every delta.
    pub fn versions<'a>(
        &'a self,
        key: &'a str,
    ) -> impl DoubleEndedIterator<Item = &'a HistoryEntry> + 'a {
        self.entries.iter().filter(move |e| e.key() == key)
    }

    /// JSON Patch turning entry `from` into entry `to` (`None` if either has
    /// been evicted).
    pub fn diff(&self, from: u64, to: u64) -> Option<json_patch::Patch> {
        let a = self.get(from)?;
        let b = self.get(to)?;
        Some(json_patch::diff(
            &a.object.value.to_json(),
            &b.object.value.to_json(),
        ))
    }

    /// Diff of an entry against the previous held version of the same key
    /// (`None` if it is the first held version).
    pub fn diff_with_previous(&self, seq: u64) -> Option<json_patch::Patch> {
        let e = self.get(seq)?;
        let index = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        let prev = self
            .entries
            .range(..index)
            .rev()
            .find(|p| p.key() == e.key())?;
        self.diff(prev.seq, seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::KubeObject;
    use serde_json::json;
    use std::sync::Arc;

    fn obj(name: &str, rv: &str, data: &str) -> ObjectRef {
        Arc::new(
            KubeObject::from_value(
                json!({"metadata":{"name":name,"resourceVersion":rv},"data":{"k":data}}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn records_versions_and_diffs() {
        let mut h = History::new(HistoryConfig::default());
        let a = h.record(10, DeltaType::Added, obj("a", "1", "x"), false, "a");
        h.record(11, DeltaType::Added, obj("b", "2", "x"), false, "b");
        let c = h.record(12, DeltaType::Updated, obj("a", "3", "y"), false, "a");
        assert_eq!(
            h.versions("a")
                .map(|e| e.resource_version())
                .collect::<Vec<_>>(),
            vec!["1", "3"]
        );
        let patch = serde_json::to_value(h.diff(a, c).unwrap()).unwrap();
        let ops: Vec<&str> = patch
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["path"].as_str().unwrap())
            .collect();
        assert!(ops.contains(&"/data/k"));
        assert!(ops.contains(&"/metadata/resourceVersion"));
        assert!(h.diff_with_previous(a).is_none());
        assert!(h.diff_with_previous(c).is_some());
        assert_eq!(
            h.range(11, 12).map(|e| e.key()).collect::<Vec<_>>(),
            vec!["b"]
        );
        assert_eq!(h.range(0, 100).count(), 3);
        assert_eq!(h.range(13, 100).count(), 0);
    }

    #[test]
    fn entries_written_by_the_same_managers_share_one_list() {
        let mut h = History::new(HistoryConfig::default());
        let written = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        let kubelet = ["kube-controller-manager", "kubelet"];
        h.record_written(
            1,
            DeltaType::Added,
            obj("a", "1", "x"),
            false,
            "a",
            written(&kubelet),
        );
        h.record_written(
            2,
            DeltaType::Added,
            obj("b", "2", "x"),
            false,
            "b",
            written(&kubelet),
        );
        h.record_written(
            3,
            DeltaType::Updated,
            obj("a", "3", "y"),
            false,
            "a",
            written(&["kubectl"]),
        );
        let kubectl = h.shared_manager("kubectl");
        let entries: Vec<&HistoryEntry> = h.range(0, 10).collect();
        assert!(Arc::ptr_eq(&entries[0].writers, &entries[1].writers));
        assert_eq!(&*entries[0].writers[1], "kubelet");
        assert_eq!(entries[2].writers.len(), 1);
        assert!(Arc::ptr_eq(&entries[2].writers[0], &kubectl));
        // a restored history (each entry's list read on its own) shares
        // them again
        let apart = |entry: &HistoryEntry| HistoryEntry {
            writers: entry.writers.iter().map(|w| Arc::from(&**w)).collect(),
            ..entry.clone()
        };
        let stored = StoredHistory {
            entries: h.iter().map(apart).collect(),
            first_seq: h.first_seq(),
            recorded: h.recorded(),
            dropped: h.dropped(),
            gaps: Vec::new(),
        };
        let back = History::restore(HistoryConfig::default(), stored).unwrap();
        let entries: Vec<&HistoryEntry> = back.range(0, 10).collect();
        assert!(Arc::ptr_eq(&entries[0].writers, &entries[1].writers));
    }

    #[test]
    fn retention_by_count_counts_evictions() {
        let mut h = History::new(HistoryConfig {
            max_deltas: 2,
            max_bytes: usize::MAX,
        });
        for i in 0..5 {
            h.record(
                i,
                DeltaType::Updated,
                obj("a", &i.to_string(), "x"),
                false,
                "a",
            );
        }
        assert_eq!(h.len(), 2);
        assert_eq!(h.recorded(), 5);
        assert_eq!(h.dropped(), 3);
        assert_eq!(
            h.versions("a")
                .map(|e| e.resource_version())
                .collect::<Vec<_>>(),
            vec!["3", "4"]
        );
        assert!(h.get(0).is_none());
        assert_eq!(h.get(4).unwrap().resource_version(), "4");
    }

    #[test]
    fn set_config_evicts_at_once_when_the_bounds_go_down() {
        let mut h = History::new(HistoryConfig::default());
        for i in 0..10 {
            h.record(
                i,
                DeltaType::Updated,
                obj("a", &i.to_string(), "x"),
                false,
                "a",
            );
        }
        let per_entry = h.bytes() / 10;
        // Raising the bounds keeps everything.
        h.set_config(HistoryConfig {
            max_deltas: 100,
            max_bytes: usize::MAX,
        });
        assert_eq!((h.len(), h.dropped()), (10, 0));
        // Fewer deltas: the oldest go now, not at the next record.
        h.set_config(HistoryConfig {
            max_deltas: 4,
            max_bytes: usize::MAX,
        });
        assert_eq!((h.len(), h.dropped(), h.recorded()), (4, 6, 10));
        assert_eq!(h.iter().next().map(|e| e.seq), Some(6));
        assert!(h.get(5).is_none() && h.get(6).is_some());
        // Fewer bytes: as many as fit stay.
        h.set_config(HistoryConfig {
            max_deltas: 4,
            max_bytes: per_entry * 2 + per_entry / 2,
        });
        assert_eq!((h.len(), h.dropped()), (2, 8));
        assert!(h.bytes() <= per_entry * 2 + per_entry / 2);
        // The new bounds hold for what is recorded next.
        for i in 10..15 {
            h.record(
                i,
                DeltaType::Updated,
                obj("a", &i.to_string(), "x"),
                false,
                "a",
            );
        }
        assert_eq!((h.len(), h.dropped(), h.recorded()), (2, 13, 15));
        assert_eq!(
            h.versions("a")
                .map(|e| e.resource_version())
                .collect::<Vec<_>>(),
            vec!["13", "14"]
        );
        // Growing again does not bring evicted entries back.
        h.set_config(HistoryConfig::default());
        assert_eq!((h.len(), h.dropped()), (2, 13));
    }

    #[test]
    fn retention_by_bytes() {
        let big = "x".repeat(1000);
        let mut probe = History::new(HistoryConfig::default());
        probe.record(0, DeltaType::Updated, obj("o0", "1", &big), false, "o0");
        let per_entry = probe.bytes();
        // the real held size: the 1000-byte string, the tree around it, the entry
        assert!((1000..1600).contains(&per_entry), "{per_entry}");
        let budget = per_entry * 5 / 2;
        let mut h = History::new(HistoryConfig {
            max_deltas: 1000,
            max_bytes: budget,
        });
        for i in 0..10 {
            h.record(
                i,
                DeltaType::Updated,
                obj(&format!("o{i}"), "1", &big),
                false,
                &format!("o{i}"),
            );
        }
        assert!(h.bytes() <= budget);
        assert_eq!(h.len(), 2);
        assert_eq!(h.dropped(), 8);
    }
}
