//! The delta list's selection over the histories the timeline draws: the
//! filters ([`DeltaQuery`]: range, resource, namespace, name, types,
//! field manager) and the held deltas that pass them, one history's
//! ([`select_deltas`]) or every tracked one's merged by time
//! ([`select_deltas_across`]), newest first; and the versions of serve's
//! record of a lane that pass them ([`select_recorded`]).

use crate::api::object_record::{ObjectRecord, RecordedVersion};
use crate::informer::{DeltaType, History, HistoryEntry, Millis};

use super::timeline::{namespace_of, type_index, HistorySource};

/// The delta list's filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaQuery {
    /// Time range `[from, to)`.
    pub from: Millis,
    pub to: Millis,
    /// Exact resource (a source's name, e.g. `deployments.apps`), or any.
    pub resource: Option<String>,
    /// Exact cluster (a source's, `""` for the default one), or any.
    pub cluster: Option<String>,
    /// Exact namespace (`""` = cluster-scoped), or any.
    pub namespace: Option<String>,
    /// Case-insensitive substring of the key.
    pub text: String,
    /// Which delta types pass, indexed like
    /// [`DELTA_TYPES`](super::timeline::DELTA_TYPES).
    pub types: [bool; 5],
    /// Case-insensitive substring of a field manager that wrote the delta
    /// (`HistoryEntry::writers`); empty: any.
    pub manager: String,
}

impl Default for DeltaQuery {
    fn default() -> Self {
        DeltaQuery {
            from: 0,
            to: Millis::MAX,
            resource: None,
            cluster: None,
            namespace: None,
            text: String::new(),
            types: [true; 5],
            manager: String::new(),
        }
    }
}

impl DeltaQuery {
    pub fn matches(&self, entry: &HistoryEntry) -> bool {
        self.passes(entry.kind, entry.key(), entry.writers.iter().map(|w| &**w))
    }

    /// A version of serve's record passes the filters (its time is the
    /// range's business: [`select_recorded`]).
    pub fn matches_recorded(&self, version: &RecordedVersion) -> bool {
        self.passes(
            version.kind,
            &version.object.key,
            version.managers.iter().map(String::as_str),
        )
    }

    fn passes<'a>(
        &self,
        kind: DeltaType,
        key: &str,
        mut writers: impl Iterator<Item = &'a str>,
    ) -> bool {
        self.types[type_index(kind)]
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| namespace_of(key) == ns)
            && (self.text.is_empty() || contains_ignoring_case(key, &self.text))
            && (self.manager.is_empty()
                || writers.any(|writer| contains_ignoring_case(writer, &self.manager)))
    }
}

/// The versions of serve's `record` of one lane in the query's range that
/// pass its filters and that the lane's own `history` does not hold (the
/// same key and resourceVersion), newest first: each one's index in the
/// record and its time (ms since the Unix epoch, the page's clock).
pub fn select_recorded(
    record: &ObjectRecord,
    history: Option<&History>,
    query: &DeltaQuery,
) -> Vec<(usize, Millis)> {
    let (from, to) = (query.from as i64, query.to.min(i64::MAX as Millis) as i64);
    record
        .versions
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, v)| v.time_ms >= from && v.time_ms < to && query.matches_recorded(v))
        .filter(|(_, v)| {
            history.is_none_or(|h| {
                !h.versions(&v.object.key).any(|e| {
                    e.resource_version() == v.resource_version()
                        && (e.kind == DeltaType::Deleted) == (v.kind == DeltaType::Deleted)
                })
            })
        })
        .map(|(index, v)| (index, v.time_ms.max(0) as Millis))
        .collect()
}

/// Ignoring the case of ASCII letters only (see `table::filter_needle`).
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    if haystack.is_ascii() && needle.is_ascii() {
        haystack
            .as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    } else {
        haystack
            .to_ascii_lowercase()
            .contains(&needle.to_ascii_lowercase())
    }
}

/// The sequence numbers of the held deltas matching `query`, newest first
/// (one history; `query.resource` is not consulted).
pub fn select_deltas(history: &History, query: &DeltaQuery) -> Vec<u64> {
    history
        .range(query.from, query.to)
        .rev()
        .filter(|e| query.matches(e))
        .map(|e| e.seq)
        .collect()
}

/// The list's own deltas (`held`, newest first) and serve's recorded ones
/// (`recorded`, newest first per lane, lanes one after another) as one
/// list, newest first; at equal times the page's own comes first.
pub fn merge_newest_first<T>(held: Vec<(T, Millis)>, mut recorded: Vec<(T, Millis)>) -> Vec<T> {
    crate::informer::compact_sort::sort_by_key(&mut recorded, |(_, at)| std::cmp::Reverse(*at));
    let mut out = Vec::with_capacity(held.len() + recorded.len());
    let mut recorded = recorded.into_iter().peekable();
    for (delta, at) in held {
        while let Some((r, _)) = recorded.next_if(|(_, r_at)| *r_at > at) {
            out.push(r);
        }
        out.push(delta);
    }
    out.extend(recorded.map(|(r, _)| r));
    out
}

/// One delta of one source: `sources[source]`'s entry `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaRef {
    pub source: usize,
    pub seq: u64,
}

/// The held deltas of every source matching `query` (its resource filter
/// included), merged by time, newest first. Each source's deltas keep their
/// own order; at equal times the earlier source comes first.
pub fn select_deltas_across(sources: &[HistorySource<'_>], query: &DeltaQuery) -> Vec<DeltaRef> {
    let mut streams: Vec<_> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| query.resource.as_deref().is_none_or(|r| r == s.name))
        .filter(|(_, s)| query.cluster.as_deref().is_none_or(|c| c == s.cluster))
        .map(|(index, s)| {
            let matching = s
                .history
                .range(query.from, query.to)
                .rev()
                .filter(|e| query.matches(e));
            (index, matching.peekable())
        })
        .collect();
    let mut merged = Vec::new();
    loop {
        // At most a handful of sources: a scan beats a heap.
        let mut newest: Option<(usize, Millis)> = None;
        for (slot, (_, stream)) in streams.iter_mut().enumerate() {
            if let Some(entry) = stream.peek() {
                if newest.is_none_or(|(_, at)| entry.at > at) {
                    newest = Some((slot, entry.at));
                }
            }
        }
        let Some((slot, _)) = newest else { break };
        let (source, stream) = &mut streams[slot];
        if let Some(entry) = stream.next() {
            merged.push(DeltaRef {
                source: *source,
                seq: entry.seq,
            });
        }
    }
    merged
}
