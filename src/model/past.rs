//! Time travel: the store as it was at a moment, rebuilt from the history
//! (for each key, its last delta at or before the moment; a Deleted delta
//! means absent), at once ([`store_at`]) or a step per frame
//! ([`PastBuilder`], what the page uses). A state read from serve's
//! record (`crate::model::recorded_past`) is shown the same way
//! ([`PastBuilder::from_objects`]); each past carries its digest (the one
//! `data-digest` shows while it is on screen) and where it came from
//! ([`PastSource`]). Tested against a model of the store and with the
//! recordings of `crate::api::recording` (`past_tests.rs`).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::informer::{DeltaType, History, HistoryEntry, Millis, ObjectRef};
use crate::model::table::{filter_needle, SortedKeys};
use deltascope_facts::digest::DigestBuilder;

/// The objects present at `at`, by key (sorted). Complete only when the
/// history has evicted nothing (`history.dropped() == 0`).
pub fn store_at(history: &History, at: Millis) -> BTreeMap<&str, &HistoryEntry> {
    let mut state: BTreeMap<&str, &HistoryEntry> = BTreeMap::new();
    for entry in history.iter().take_while(|e| e.at <= at) {
        match entry.kind {
            DeltaType::Deleted => {
                state.remove(entry.key());
            }
            _ => {
                state.insert(entry.key(), entry);
            }
        }
    }
    state
}

/// Keys or deltas one [`PastBuilder::step`] handles (a few milliseconds'
/// work in the page).
pub const PAST_STEP: usize = 10_000;

/// Where a past state comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PastSource {
    /// Rebuilt from the page's own history.
    Page,
    /// serve's record, as it stood at this resourceVersion.
    Recorded { resource_version: String },
    /// No state is known (the moment falls in a gap of serve's record):
    /// nothing is shown rather than a wrong table.
    Unknown,
}

/// The store at a moment, as a view shows it: the keys present then that
/// match the view's text filter, and every object present then.
pub struct PastState {
    pub at: Millis,
    /// The text filter the keys were matched with (trimmed, lowercase).
    pub filter: String,
    pub keys: SortedKeys,
    pub objects: BTreeMap<String, ObjectRef>,
    /// False when the history had evicted deltas the moment needed, so
    /// objects may be missing.
    pub complete: bool,
    /// The store digest of every object present then (empty when
    /// [`PastSource::Unknown`]).
    pub digest: String,
    pub source: PastSource,
}

impl PastState {
    /// A moment no state is known of: no rows, no digest.
    pub fn unknown(at: Millis, filter: &str) -> PastState {
        PastState {
            at,
            filter: filter_needle(filter),
            keys: SortedKeys::from_sorted(Vec::new()),
            objects: BTreeMap::new(),
            complete: false,
            digest: String::new(),
            source: PastSource::Unknown,
        }
    }

    /// It is the past at `at` as the text filter `filter` shows it.
    pub fn shows(&self, at: Millis, filter: &str) -> bool {
        self.at == at && self.filter == filter_needle(filter)
    }
}

/// [`store_at`] built a step at a time across frames: rebuilding 100k
/// deltas at once held the page for about 75 ms. It reads the
/// history by sequence number, so deltas recorded meanwhile do not disturb
/// it, and it notices deltas evicted meanwhile (the past is then marked
/// incomplete).
pub struct PastBuilder {
    at: Millis,
    filter: String,
    next_seq: u64,
    evicted: bool,
    state: BTreeMap<String, ObjectRef>,
    /// Once every delta up to `at` is applied: the keys matched so far.
    collecting: Option<Collecting>,
    source: PastSource,
}

struct Collecting {
    keys: Vec<Arc<str>>,
    /// The last key looked at.
    after: Option<String>,
    /// Every key looked at, with its resourceVersion.
    digest: DigestBuilder,
}

impl Collecting {
    fn new() -> Collecting {
        Collecting {
            keys: Vec::new(),
            after: None,
            digest: DigestBuilder::default(),
        }
    }
}

impl PastBuilder {
    pub fn new(history: &History, at: Millis, filter: &str) -> PastBuilder {
        PastBuilder {
            at,
            filter: filter_needle(filter),
            next_seq: history.first_seq(),
            evicted: history.dropped() > 0,
            state: BTreeMap::new(),
            collecting: None,
            source: PastSource::Page,
        }
    }

    /// The past at `at` from a state already known (serve's record, read
    /// whole): only its keys are collected, a step at a time. The
    /// `history` given to [`PastBuilder::step`] is not read.
    pub fn from_objects(
        at: Millis,
        filter: &str,
        objects: BTreeMap<String, ObjectRef>,
        source: PastSource,
    ) -> PastBuilder {
        PastBuilder {
            at,
            filter: filter_needle(filter),
            next_seq: 0,
            evicted: false,
            state: objects,
            collecting: Some(Collecting::new()),
            source,
        }
    }

    /// Where the past it builds comes from.
    pub fn source(&self) -> &PastSource {
        &self.source
    }

    /// The moment and filter it builds for.
    pub fn builds(&self, at: Millis, filter: &str) -> bool {
        self.at == at && self.filter == filter_needle(filter)
    }

    /// Handles up to `budget` deltas or keys; the state once it is built.
    pub fn step(&mut self, history: &History, budget: usize) -> Option<PastState> {
        let mut budget = budget.max(1);
        if self.collecting.is_none() {
            self.apply(history, &mut budget);
        }
        let collecting = self.collecting.as_mut()?;
        let rest = match &collecting.after {
            Some(last) => self
                .state
                .range::<str, _>((Bound::Excluded(last.as_str()), Bound::Unbounded)),
            None => self.state.range::<str, _>(..),
        };
        let mut looked = 0;
        let mut last = None;
        for (key, object) in rest.take(budget) {
            looked += 1;
            last = Some(key);
            collecting.digest.push(key, &object.resource_version);
            if self.filter.is_empty() || key.to_ascii_lowercase().contains(&self.filter) {
                collecting.keys.push(Arc::from(key.as_str()));
            }
        }
        if looked == budget {
            collecting.after = last.cloned();
            return None;
        }
        let keys = std::mem::take(&mut collecting.keys);
        let digest = std::mem::take(&mut collecting.digest).finish();
        Some(PastState {
            at: self.at,
            filter: std::mem::take(&mut self.filter),
            keys: SortedKeys::from_sorted(keys),
            objects: std::mem::take(&mut self.state),
            complete: !self.evicted,
            digest,
            source: self.source.clone(),
        })
    }

    /// Applies the next deltas up to the moment; once there are none, the
    /// keys are collected.
    fn apply(&mut self, history: &History, budget: &mut usize) {
        if self.next_seq < history.first_seq() {
            // evicted between two steps
            self.evicted = true;
            self.next_seq = history.first_seq();
        }
        while *budget > 0 {
            let Some(entry) = history.get(self.next_seq).filter(|e| e.at <= self.at) else {
                self.collecting = Some(Collecting::new());
                return;
            };
            *budget -= 1;
            self.next_seq += 1;
            let key = entry.key();
            match (entry.kind, self.state.get_mut(key)) {
                (DeltaType::Deleted, _) => {
                    self.state.remove(key);
                }
                (_, Some(object)) => *object = entry.object.clone(),
                (_, None) => {
                    self.state.insert(key.to_owned(), entry.object.clone());
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "past_tests.rs"]
mod tests;
