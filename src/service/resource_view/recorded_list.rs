//! The delta list reaching back into serve's record: for each lane the
//! list covers, `crate::app::recorded_deltas` decides whether the range
//! needs serve's record of what came before the page's own history,
//! `crate::service::read_record_bounded` asks (bounded), and the
//! recorded versions that pass the list's filters join its own deltas,
//! merged newest first (`crate::model::delta_select::select_recorded`). An
//! answer asks for a frame; the list is rebuilt with it (its cache holds
//! the answers' count).

use crate::app::recorded_deltas::{ListLane, RECORDED_DELTAS_MAX_BYTES};
use crate::informer::Millis;
use crate::model::delta_select::{select_recorded, DeltaQuery};
use crate::model::timeline::HistorySource;
use crate::service::kept_informers::{KeptInformers, Source};

use super::histories::HeldDelta;
use super::LiveView;

impl LiveView {
    /// Asks serve for what the delta list's `range` needs of its record
    /// (not while a recording plays: it is not the cluster's).
    pub fn reach_deltas(&mut self, range: (Millis, Millis), kept: &KeptInformers, now: Millis) {
        if self.replay.is_some() {
            return;
        }
        let lanes: Vec<ListLane> = self
            .tracked(kept)
            .iter()
            .map(|(id, source)| ListLane {
                source: *id,
                resource: source.route.stats_name(),
                namespace: source.route.namespace.clone(),
                cluster: source.route.cluster.clone(),
                selected: source.route.label_selector.is_some()
                    || source.route.field_selector.is_some(),
                page_first: source
                    .driver
                    .informer()
                    .history()
                    .iter()
                    .next()
                    .map(|e| e.at),
            })
            .collect();
        let asks = self
            .recorded_deltas
            .borrow_mut()
            .want(&lanes, range, self.serve.as_ref(), now);
        for (source, path) in asks {
            let (recorded, on_change) = (self.recorded_deltas.clone(), self.on_change.clone());
            wasm_bindgen_futures::spawn_local(async move {
                crate::service::read_record_bounded(&path, RECORDED_DELTAS_MAX_BYTES, |answer| {
                    recorded.borrow_mut().answered(source, &path, answer);
                })
                .await;
                on_change();
            });
        }
    }

    /// The recorded versions of the tracked lanes that pass `query` and
    /// that their histories do not hold, newest first per lane, with times.
    pub(super) fn recorded_held(
        &self,
        tracked: &[(u64, &Source)],
        sources: &[HistorySource<'_>],
        query: &DeltaQuery,
    ) -> Vec<(HeldDelta, Millis)> {
        let recorded = self.recorded_deltas.borrow();
        let mut out = Vec::new();
        for (source, record) in recorded.records() {
            let Some(slot) = tracked.iter().position(|(id, _)| *id == source) else {
                continue;
            };
            let (_, kept) = tracked[slot];
            if query.resource.as_deref().is_some_and(|r| r != kept.label) {
                continue;
            }
            let history = sources.get(slot).map(|s| s.history);
            for (index, at) in select_recorded(record, history, query) {
                let held = HeldDelta {
                    source,
                    seq: index as u64,
                    recorded: true,
                };
                out.push((held, at));
            }
        }
        out
    }

    /// The delta list's words about serve's record: `data-recorded` and why
    /// it could not be read.
    pub fn recorded_deltas_state(&self) -> Option<(&'static str, Option<String>)> {
        self.recorded_deltas.borrow().state()
    }

    /// The row of a recorded delta of lane `source` (its `index`th version).
    pub fn recorded_row(
        &self,
        source: u64,
        index: usize,
        resource: String,
        now: Millis,
    ) -> Option<crate::model::delta_list::DeltaRow> {
        let recorded = self.recorded_deltas.borrow();
        let (_, record) = recorded.records().into_iter().find(|(s, _)| *s == source)?;
        let version = record.versions.get(index)?;
        Some(crate::model::delta_list::DeltaRow::of_recorded(
            source,
            resource,
            (index, version),
            now,
        ))
    }
}
