//! What a resource view reads from the informers' histories rather than
//! its store: the timeline's buckets for the range and lanes the user
//! picked (rebuilt when a history grew, at most every 500 ms), the delta
//! list's selection across the tracked histories (cached per query and
//! histories), and the store as it was at a moment (time travel, rebuilt a
//! step per frame). The recording's history alone while one plays, else
//! every kept informer's.

use std::cell::Ref;
use std::rc::Rc;

use crate::informer::{Informer, Millis};
use crate::model::delta_select::{merge_newest_first, select_deltas_across, DeltaQuery};
use crate::model::past::{PastBuilder, PastSource, PastState, PAST_STEP};
use crate::model::timeline::{HistorySource, LaneMode, TimelineData, Viewport};
use crate::transport::Driver;

use super::{LiveView, REPLAY_ID};
use crate::service::kept_informers::{KeptInformers, Source};

const TIMELINE_INTERVAL_MS: f64 = 500.0;

/// One delta the list shows: the kept informer whose history holds it,
/// and its sequence number there; or, `recorded`, its place in serve's
/// record of that informer's lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldDelta {
    pub source: u64,
    pub seq: u64,
    pub recorded: bool,
}

/// How far one tracked history has come: what a cached selection was read
/// from, compared to tell whether it is still current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HistoryMark {
    source: u64,
    recorded: u64,
    held: usize,
}

/// What a timeline was built from, compared to tell whether it is current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TimelineBuilt {
    /// (source, deltas recorded) per tracked history.
    histories: Vec<(u64, u64)>,
    /// The kept set's generation.
    kept: u64,
    /// serve's marks' generation (an answer came).
    marks: u64,
}

/// The deltas matching `query` across the tracked histories as they were
/// at `marks`, newest first.
pub(super) struct DeltaCache {
    query: DeltaQuery,
    marks: Vec<HistoryMark>,
    /// serve's answers applied (its records joined).
    answered: u64,
    deltas: Rc<Vec<HeldDelta>>,
}

impl LiveView {
    /// The informer of source `id`: this view's own, or a kept one.
    pub fn driver_for(&self, id: u64, kept: &KeptInformers) -> Option<Driver> {
        if id == self.source_id {
            Some(self.driver.clone())
        } else {
            kept.get(id).map(|source| source.driver.clone())
        }
    }

    /// The histories the timeline and the delta list read: the recording's
    /// alone while one plays, else every kept informer's in the order they
    /// were opened.
    pub(super) fn tracked<'a>(&'a self, kept: &'a KeptInformers) -> Vec<(u64, &'a Source)> {
        match &self.replay {
            Some(replay) => vec![(REPLAY_ID, replay)],
            None => kept.by_age(),
        }
    }

    /// (source id, lane name) of every history the timeline and the delta list cover.
    pub fn source_labels(&self, kept: &KeptInformers) -> Vec<(u64, String)> {
        self.tracked(kept)
            .iter()
            .map(|(id, source)| (*id, source.label.clone()))
            .collect()
    }

    /// The clusters the lanes are of (`""`: the default one), each once,
    /// in lane order.
    pub fn source_clusters(&self, kept: &KeptInformers) -> Vec<String> {
        let mut clusters: Vec<String> = Vec::new();
        for (_, source) in self.tracked(kept) {
            let cluster = source.route.cluster.clone().unwrap_or_default();
            if !clusters.contains(&cluster) {
                clusters.push(cluster);
            }
        }
        clusters
    }

    /// Travel to `at`, or back to live with `None`: the past store is
    /// rebuilt from the page's own history a step per call (see
    /// [`PastBuilder`]), so call it every frame while
    /// [`LiveView::past_is_stale`] (`LiveView::travel` does, and reads
    /// serve's record when this history does not cover the moment).
    pub fn set_past(&mut self, at: Option<Millis>) {
        let Some(at) = at else {
            self.past = None;
            self.past_job = None;
            return;
        };
        let filter = self.spec.filter.clone();
        if !self
            .past_job
            .as_ref()
            .is_some_and(|job| job.builds(at, &filter) && *job.source() == PastSource::Page)
        {
            let job = self
                .driver
                .with_informer(|informer| PastBuilder::new(informer.history(), at, &filter));
            self.past_job = Some(job);
        }
        self.step_past_job();
    }

    /// One budgeted step of the past being built (the page's own or
    /// serve's record); the past is shown once it is done.
    pub(super) fn step_past_job(&mut self) {
        let Some(job) = self.past_job.as_mut() else {
            return;
        };
        let done = self
            .driver
            .with_informer(|informer| job.step(informer.history(), PAST_STEP));
        if let Some(past) = done {
            self.past = Some(past);
            self.past_job = None;
        }
    }

    /// True when the page's own past must be rebuilt (another moment,
    /// another text filter, or another past shown).
    pub fn past_is_stale(&self, at: Option<Millis>) -> bool {
        match (&self.past, at) {
            (None, None) => false,
            (Some(past), Some(at)) => {
                !past.shows(at, &self.spec.filter) || past.source != PastSource::Page
            }
            _ => true,
        }
    }

    pub fn past(&self) -> Option<&PastState> {
        self.past.as_ref()
    }

    pub fn timeline(&self) -> Rc<TimelineData> {
        self.timeline.clone()
    }

    /// The range and lanes the timeline shows; a change rebuilds it on the next refresh.
    pub fn set_timeline_view(&mut self, viewport: Viewport, mode: LaneMode) {
        if viewport != self.viewport || mode != self.lane_mode {
            self.viewport = viewport;
            self.lane_mode = mode;
            self.timeline_built = None;
            self.timeline_at = f64::NEG_INFINITY;
        }
    }

    /// The held deltas matching `query` across the tracked histories,
    /// newest first (recomputed only when the query or a history changed).
    pub fn deltas(&mut self, query: &DeltaQuery, kept: &KeptInformers) -> Rc<Vec<HeldDelta>> {
        let tracked = self.tracked(kept);
        let guards: Vec<Ref<'_, Informer>> =
            tracked.iter().map(|(_, s)| s.driver.informer()).collect();
        let marks: Vec<HistoryMark> = tracked
            .iter()
            .zip(&guards)
            .map(|((id, _), informer)| {
                let history = informer.history();
                HistoryMark {
                    source: *id,
                    recorded: history.recorded(),
                    held: history.len(),
                }
            })
            .collect();
        let answered = self.recorded_deltas.borrow().answered_count();
        if let Some(cache) = &self.delta_cache {
            if cache.query == *query && cache.marks == marks && cache.answered == answered {
                return cache.deltas.clone();
            }
        }
        let sources: Vec<HistorySource<'_>> = tracked
            .iter()
            .zip(&guards)
            .map(|((_, source), informer)| HistorySource {
                name: &source.label,
                cluster: source.route.cluster.as_deref().unwrap_or(""),
                history: informer.history(),
                gaps: &[],
                relists: &[],
            })
            .collect();
        let held: Vec<(HeldDelta, Millis)> = select_deltas_across(&sources, query)
            .into_iter()
            .filter_map(|r| {
                let at = sources[r.source].history.get(r.seq)?.at;
                let held = HeldDelta {
                    source: tracked[r.source].0,
                    seq: r.seq,
                    recorded: false,
                };
                Some((held, at))
            })
            .collect();
        let recorded = self.recorded_held(&tracked, &sources, query);
        let deltas = merge_newest_first(held, recorded);
        drop(sources);
        drop(guards);
        let deltas = Rc::new(deltas);
        self.delta_cache = Some(DeltaCache {
            query: query.clone(),
            marks,
            answered,
            deltas: deltas.clone(),
        });
        deltas
    }

    /// Observes the informers (blind spans, relists) and rebuilds the
    /// timeline when it is stale, at most every 500 ms.
    pub(super) fn refresh_timeline(&mut self, now: Millis, kept: &mut KeptInformers) {
        let mut spans_changed = match &mut self.replay {
            Some(replay) => replay.observe(now),
            None => false,
        };
        spans_changed |= kept.observe(now);
        if spans_changed {
            self.timeline_built = None;
        }
        let tracked = self.tracked(kept);
        let guards: Vec<Ref<'_, Informer>> =
            tracked.iter().map(|(_, s)| s.driver.informer()).collect();
        let built = TimelineBuilt {
            histories: tracked
                .iter()
                .zip(&guards)
                .map(|((id, _), informer)| (*id, informer.history().recorded()))
                .collect(),
            kept: kept.generation(),
            marks: self.marks.borrow().generation(),
        };
        // A live view's axis moves with time even when nothing arrives.
        let stale = self.timeline_built.as_ref() != Some(&built)
            || tracked.iter().any(|(_, s)| s.spans.is_blind())
            || self.viewport.is_live();
        // serve's marks, once answered, are drawn at once (an answer comes
        // once per zoom or pan, not per event as the page's own deltas do).
        let marks_answered = self
            .timeline_built
            .as_ref()
            .is_some_and(|before| before.marks != built.marks);
        if !stale || (!marks_answered && (now as f64) - self.timeline_at < TIMELINE_INTERVAL_MS) {
            return;
        }
        // Blind spans of this page load, and gaps its history recorded
        // (a resume that had to relist: nothing was watched in between).
        let gaps: Vec<Vec<(Millis, Millis)>> = tracked
            .iter()
            .zip(&guards)
            .map(|((_, s), informer)| {
                let mut gaps: Vec<(Millis, Millis)> =
                    informer.history().gaps().map(|g| (g.from, g.to)).collect();
                gaps.extend(s.spans.gaps_until(now));
                crate::informer::compact_sort::sort(&mut gaps);
                gaps
            })
            .collect();
        let sources: Vec<HistorySource<'_>> = tracked
            .iter()
            .zip(&guards)
            .zip(&gaps)
            .map(|(((_, source), informer), gaps)| HistorySource {
                name: &source.label,
                cluster: source.route.cluster.as_deref().unwrap_or(""),
                history: informer.history(),
                gaps,
                relists: source.spans.relists(),
            })
            .collect();
        let first = sources
            .iter()
            .filter_map(|s| s.history.iter().next().map(|e| e.at))
            .min();
        let range = self.viewport.resolve(first, now);
        let mut data = TimelineData::build_sources(&sources, range, self.lane_mode);
        let lanes = self.lane_reach(&tracked, &sources);
        drop(sources);
        drop(guards);
        self.reach_back(&mut data, &lanes);
        self.timeline = Rc::new(data);
        self.timeline_built = Some(built);
        self.timeline_at = now as f64;
    }
}
