//! What one resource's informer leads the recorder to write, with no I/O:
//! after each input the driver asks the [`Tracker`] for the gap to write
//! first (a relist after a break), then each new delta as a
//! [`DeltaRecord`] (read from the informer's history by sequence number),
//! then the gap a restored store closes by catching up; on a timer, a
//! watermark. The informer's own history is emptied after each step: it
//! holds only what one input produced, until the driver has taken it.
//!
//! The rules:
//! - A relist's Replaced deltas are written only for objects whose
//!   resourceVersion (or uid) differs from the version last recorded — the
//!   store restored from the record, or what this recorder wrote since —
//!   and Deleted tombstones for objects that vanished; both carry the
//!   list's resourceVersion as `store_resource_version`, watch events their
//!   object's own.
//! - Gaps: a relist that follows a watch writes one from the last moment the
//!   record was known complete to the moment the list is applied (reason
//!   Unreachable when requests failed to connect meanwhile, else Expired
//!   after a 410, else Unreachable); a restored store writes one at once
//!   from the recorded `through_ms` to the restore, and another from there
//!   to when it is current again (caught up, or relisted), with the reason
//!   the driver gives (NotRunning, DatabaseUnavailable). A watch that resumes from its resourceVersion
//!   loses nothing and writes none.
//! - Watermarks while the watch is healthy: every 5 s when something was
//!   written, else every 30 s, and one when the recorder stops.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use deltascope_history::{
    DeltaRecord, GapReason, GapRecord, RecordedState, WatermarkRecord, Write,
};
use deltascope_informer::{
    DeltaType, HistoryConfig, Informer, JsonValue, KubeObject, Millis, ObjectRef, ReflectorError,
    Resume,
};

use super::clock::Clock;
use super::gap_causes::GapCauses;
use super::status::Health;

/// How often watermarks are written (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatermarkTiming {
    /// After a change, at most this often (ms).
    pub changed: i64,
    /// With no change, at least this often (ms).
    pub quiet: i64,
}

impl Default for WatermarkTiming {
    /// Every 5 s either way: the state of a moment is answered only up to
    /// the last watermark, and a quiet resource is as current as a busy
    /// one (a row per resource every 5 s costs the database nothing).
    fn default() -> Self {
        WatermarkTiming {
            changed: 5_000,
            quiet: 5_000,
        }
    }
}

/// The informer history's retention while one input is processed: nothing
/// is evicted before the tracker reads it; [`Tracker::finish_step`] empties it.
pub fn unbounded_history() -> HistoryConfig {
    HistoryConfig {
        max_deltas: usize::MAX,
        max_bytes: usize::MAX,
    }
}

/// The version of an object last recorded, found by the object's own key:
/// the set keeps no copy of it (at 220k objects a copy of every key cost
/// 10 MB, and a map entry 24 bytes more).
struct Known {
    object: ObjectRef,
    /// This recorder handed it in a `DeltaRecord` (not only restored).
    handed: bool,
}

impl PartialEq for Known {
    fn eq(&self, other: &Known) -> bool {
        self.object.key == other.object.key
    }
}

impl Eq for Known {}

impl Hash for Known {
    /// As its key's `str`, so the set is searched by key.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.object.key.as_str().hash(state);
    }
}

impl Borrow<str> for Known {
    fn borrow(&self) -> &str {
        &self.object.key
    }
}

/// Why restoring a recorded state failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("the informer refused the restored state: {0}")]
    Informer(#[from] deltascope_informer::RestoreError),
}

/// One resource's bookkeeping (see the module doc).
pub struct Tracker {
    resource: String,
    clock: Clock,
    timing: WatermarkTiming,
    known: HashSet<Known>,
    /// The next history sequence number to read.
    cursor: u64,
    /// A list was sent and its result not applied yet.
    listing: bool,
    /// Why that list was needed (read when it was sent).
    relist_cause: GapReason,
    /// Requests failed to reach the upstream since the record was last
    /// complete: a relist then is an Unreachable gap, even after a 410.
    cut_off: bool,
    /// A list was applied or a state restored: a later relist is a gap.
    has_base: bool,
    /// The last moment (wall ms) the record was known complete, and the
    /// resourceVersion it was complete at.
    complete: Option<(i64, String)>,
    /// A restored store not current yet: the gap's reason.
    restore_reason: Option<GapReason>,
    last_mark: Option<i64>,
    changed_since_mark: bool,
    health: Health,
    /// Objects of the recorded state that could not be read back.
    pub unreadable: usize,
}

impl Tracker {
    pub fn new(resource: String, clock: Clock, timing: WatermarkTiming) -> Tracker {
        Tracker {
            resource,
            clock,
            timing,
            known: HashSet::new(),
            cursor: 0,
            listing: false,
            relist_cause: GapReason::Unreachable,
            cut_off: false,
            has_base: false,
            complete: None,
            restore_reason: None,
            last_mark: None,
            changed_since_mark: false,
            health: Health::Ok,
            unreadable: 0,
        }
    }

    /// Starts `informer` from what was recorded: the objects become its
    /// known store and it watches from the recorded resourceVersion (a 410
    /// relists, and the differences are written). `causes` give the gap's
    /// reasons.
    ///
    /// Returns the gap to write at once, before anything the catch-up
    /// brings: from the record's `through_ms` to now, in one part per
    /// cause (see [`GapCauses::spans`]). The catch-up's deltas
    /// move the record's end on, so a gap written only once caught up would
    /// be lost with a recorder stopped before (killed, or its database
    /// failing), leaving the time nobody watched looking complete. The rest,
    /// from now until caught up, follows as a second gap of the same reason
    /// (the store joins the two).
    pub fn restore(
        &mut self,
        informer: &mut Informer,
        state: RecordedState,
        causes: &GapCauses,
        now: Millis,
    ) -> Result<Vec<Write>, RestoreError> {
        let mut objects = Vec::with_capacity(state.objects.len());
        for text in state.objects {
            let object = JsonValue::parse(text.as_bytes())
                .ok()
                .and_then(|value| KubeObject::from_json(value).ok());
            match object {
                Some(object) => objects.push(ObjectRef::new(object)),
                None => self.unreadable += 1,
            }
        }
        for object in &objects {
            self.known.replace(Known {
                object: object.clone(),
                handed: false,
            });
        }
        informer.restore_objects(objects);
        informer.resume(
            Resume {
                resource_version: state.store_resource_version.clone(),
                as_of: now,
                history: Default::default(),
                columns: None,
            },
            now,
        )?;
        self.cursor = informer.history().next_seq();
        self.has_base = true;
        let restored_at = self.clock.wall_now().max(state.through_ms);
        let gaps = causes
            .spans(state.through_ms, restored_at)
            .into_iter()
            .map(|(reason, from, to)| self.gap(reason, from, to))
            .collect();
        self.complete = Some((restored_at, state.store_resource_version));
        self.restore_reason = Some(causes.current());
        Ok(gaps)
    }

    /// The informer sent a request: a list, or a watch (which, after a
    /// list, means the list was applied by the input just handled).
    /// Returns whether a list was applied.
    pub fn saw_send(&mut self, informer: &Informer, list: bool) -> bool {
        if list && !self.listing {
            self.relist_cause = if self.cut_off {
                GapReason::Unreachable
            } else {
                relist_reason(informer.status().last_error.as_ref())
            };
        }
        let applied = self.listing && !list;
        self.listing = list;
        applied
    }

    /// The gap to write before this step's deltas: a list was applied
    /// after an earlier list or a restore.
    pub fn gap_before(&mut self, informer: &Informer, list_applied: bool) -> Option<Write> {
        if !list_applied {
            return None;
        }
        let now = self.clock.wall_now();
        let had_base = std::mem::replace(&mut self.has_base, true);
        let from = self.complete.as_ref().map(|(at, _)| *at);
        let reason = self.restore_reason.take().unwrap_or(self.relist_cause);
        self.complete = Some((now, informer.status().last_resource_version.clone()));
        // a watermark at the list's resourceVersion soon, even if nothing
        // differed: a restart resumes from there, not from before the list
        self.last_mark = None;
        match (had_base, from) {
            (true, Some(from)) => Some(self.gap(reason, from, now)),
            _ => None,
        }
    }

    fn gap(&self, reason: GapReason, from_ms: i64, to_ms: i64) -> Write {
        Write::Gap(GapRecord {
            resource: self.resource.clone(),
            from_ms: from_ms.min(to_ms),
            to_ms,
            reason,
        })
    }

    /// The next delta of this step to write, if any.
    pub fn next_delta(&mut self, informer: &Informer) -> Option<Write> {
        let history = informer.history();
        if self.cursor < history.first_seq() {
            tracing::error!(resource = %self.resource, "recorder: informer history evicted unread deltas");
            self.cursor = history.first_seq();
        }
        loop {
            let entry = history.get(self.cursor)?;
            self.cursor += 1;
            let object = &entry.object;
            let relisted = entry.kind == DeltaType::Replaced || entry.tombstone;
            if entry.kind == DeltaType::Sync {
                continue;
            }
            if entry.kind == DeltaType::Replaced {
                if let Some(known) = self.known.get(object.key.as_str()) {
                    if known.object.resource_version == object.resource_version
                        && known.object.uid == object.uid
                    {
                        // unchanged since recorded: share the store's copy
                        let handed = known.handed;
                        self.known.replace(Known {
                            object: object.clone(),
                            handed,
                        });
                        continue;
                    }
                }
            }
            let previous = match self.known.get(object.key.as_str()) {
                Some(known) if known.handed && known.object.uid == object.uid => {
                    Some(known.object.value.clone())
                }
                _ => None,
            };
            if entry.kind == DeltaType::Deleted {
                self.known.remove(object.key.as_str());
            } else {
                self.known.replace(Known {
                    object: object.clone(),
                    handed: true,
                });
            }
            let (namespace, name) = match object.key.split_once('/') {
                Some((namespace, name)) => (namespace.to_owned(), name.to_owned()),
                None => (String::new(), object.key.clone()),
            };
            let store_resource_version = if relisted {
                informer.status().last_resource_version.clone()
            } else {
                object.resource_version.clone()
            };
            self.changed_since_mark = true;
            return Some(Write::Delta(DeltaRecord {
                resource: self.resource.clone(),
                namespace,
                name,
                uid: object.uid.clone(),
                resource_version: object.resource_version.clone(),
                store_resource_version,
                kind: entry.kind,
                tombstone: entry.tombstone,
                at_ms: self.clock.wall(entry.at),
                managers: entry.writers.iter().map(|w| w.to_string()).collect(),
                object: object.value.clone(),
                previous,
            }));
        }
    }

    /// Ends a step: empties the informer's history, notes whether the
    /// record is complete now, and returns the gap a restored store closes
    /// by catching up (written after the deltas it caught up with).
    pub fn finish_step(&mut self, informer: &mut Informer, was_warm: bool) -> Option<Write> {
        informer.set_history_config(HistoryConfig {
            max_deltas: 0,
            max_bytes: 0,
        });
        informer.set_history_config(unbounded_history());
        self.cursor = informer.history().next_seq();
        let now = self.clock.wall_now();
        let mut gap = None;
        if was_warm && !informer.is_warm() {
            self.last_mark = None;
            if let (Some(reason), Some((from, _))) = (self.restore_reason.take(), &self.complete) {
                gap = Some(self.gap(reason, *from, now));
            }
        }
        if self.healthy(informer) {
            self.complete = Some((now, informer.status().last_resource_version.clone()));
            self.cut_off = false;
        } else if informer.status().phase.is_failing()
            && matches!(
                informer.status().last_error,
                Some(ReflectorError::Network { .. })
            )
        {
            self.cut_off = true;
        }
        gap
    }

    /// Whether every version last recorded is the very object the
    /// informer's store holds (shared, not a copy), one for each of them.
    #[cfg(test)]
    pub fn shares_the_store(&self, informer: &Informer) -> bool {
        let store = informer.store();
        self.known.len() == store.len()
            && self.known.iter().all(|known| {
                store
                    .get_by_key(&known.object.key)
                    .is_some_and(|held| std::sync::Arc::ptr_eq(held, &known.object))
            })
    }

    /// Listing done, watching, current: what is recorded is complete now.
    pub fn healthy(&self, informer: &Informer) -> bool {
        !self.listing && informer.has_synced() && !informer.is_warm() && informer.is_watch_open()
    }

    /// A watermark, when one is due (see [`WatermarkTiming`]).
    pub fn watermark_due(&mut self, informer: &Informer) -> Option<Write> {
        if !self.healthy(informer) {
            return None;
        }
        let now = self.clock.wall_now();
        let since = self.last_mark.map_or(i64::MAX, |at| now - at);
        let due =
            since >= self.timing.quiet || (self.changed_since_mark && since >= self.timing.changed);
        if !due {
            return None;
        }
        self.complete = Some((now, informer.status().last_resource_version.clone()));
        self.mark(now)
    }

    /// The watermark written when recording stops: as of now while the
    /// watch is healthy, else as of the last moment it was.
    pub fn final_watermark(&mut self, informer: &Informer) -> Option<Write> {
        if self.healthy(informer) {
            let now = self.clock.wall_now();
            self.complete = Some((now, informer.status().last_resource_version.clone()));
        }
        let (at, _) = self.complete.as_ref()?;
        if self.restore_reason.is_some() || self.last_mark.is_some_and(|last| last >= *at) {
            // a restored store not current yet: the record holds its mark
            return None;
        }
        self.mark(*at)
    }

    fn mark(&mut self, at: i64) -> Option<Write> {
        let (_, rv) = self.complete.as_ref()?;
        if rv.is_empty() {
            return None;
        }
        self.last_mark = Some(at);
        self.changed_since_mark = false;
        Some(Write::Watermark(WatermarkRecord {
            resource: self.resource.clone(),
            store_resource_version: rv.clone(),
            through_ms: at,
        }))
    }

    /// The informer's health, when it changed since last asked.
    pub fn health_change(&mut self, informer: &Informer) -> Option<Health> {
        let status = informer.status();
        let health = if status.phase.is_failing() {
            let error = status.last_error.as_ref();
            Health::Failing {
                reason: error.map_or_else(|| status.phase.as_str().to_owned(), |e| e.to_string()),
                network: matches!(error, Some(ReflectorError::Network { .. })),
            }
        } else {
            Health::Ok
        };
        (health != self.health).then(|| {
            self.health = health.clone();
            health
        })
    }
}

/// Why a relist after a watch was needed: the server no longer had the
/// resourceVersion (410), or it could not be reached or refused.
fn relist_reason(error: Option<&ReflectorError>) -> GapReason {
    match error.and_then(ReflectorError::status) {
        Some(410) => GapReason::Expired,
        _ => GapReason::Unreachable,
    }
}
