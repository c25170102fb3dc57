//! Time travel as the view shows it: the past from the page's own history
//! (`histories`: [`LiveView::set_past`]) or, for a moment that history does
//! not cover, from serve's record — `crate::app::recorded_travel` decides
//! when to ask and what the answer means,
//! `crate::transport::serve_history::get_at_most` asks (its body bounded),
//! the answer is read a few items at a time within 8 ms a frame, and its
//! objects become the past shown (`crate::model::past::PastBuilder::from_objects`,
//! keys collected a step per frame). A moment in a gap of the record shows
//! no rows. While serve's record is shown the table has the page's own
//! columns for the resource (serve's state carries no server-printed cells).

use crate::address::route::Route;
use crate::app::recorded_travel::{
    PastFrom, StateAnswer, TravelMoment, MAX_STATE_BYTES, STATE_STEP_BYTES,
};
use crate::informer::Millis;
use crate::model::past::{PastBuilder, PastSource, PastState};
use crate::model::recorded_past::RecordNote;
use crate::model::serve_history::ServeHistories;
use crate::model::table::Column;
use crate::transport::serve_history::{get_at_most, Bounded};

use super::LiveView;

/// How long one frame may spend reading serve's answer.
const RECORD_MS_PER_FRAME: f64 = 8.0;

fn clock() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

impl LiveView {
    /// Travel to `as_of` (`None`: live) in the view of `route`, serve
    /// saying `serve` of its clusters' histories; call it every frame
    /// while travelling (it asks, reads and builds a step at a time).
    pub fn travel(&mut self, as_of: Option<Millis>, serve: Option<&ServeHistories>, route: &Route) {
        if self.serve.as_ref() != serve {
            self.serve = serve.cloned();
        }
        let serve = serve.and_then(|s| s.of_cluster(route.cluster.as_deref()));
        let moment = as_of.map(|at| self.moment(at, route));
        let ask = self.record.borrow_mut().want(moment.as_ref(), serve);
        if let Some((key, path)) = ask {
            let (record, on_change) = (self.record.clone(), self.on_change.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let answer = match get_at_most(&path, MAX_STATE_BYTES).await {
                    Ok(Bounded::Whole(answer)) => StateAnswer::Whole {
                        status: answer.status,
                        body: answer.body,
                    },
                    Ok(Bounded::TooLarge) => StateAnswer::TooLarge,
                    Err(_) => StateAnswer::None,
                };
                record.borrow_mut().answered(&key, answer);
                on_change();
            });
        }
        self.read_record();
        let Some(at) = as_of else {
            self.set_past(None);
            return;
        };
        let from = self.record.borrow().showing();
        match from {
            PastFrom::Page => {
                if self.past_is_stale(Some(at)) {
                    self.set_past(Some(at));
                }
            }
            PastFrom::Record => self.show_record(at),
            PastFrom::Nothing => {
                let filter = self.spec.filter.clone();
                let shown = self
                    .past
                    .as_ref()
                    .is_some_and(|p| p.source == PastSource::Unknown && p.shows(at, &filter));
                if !shown {
                    self.past = Some(PastState::unknown(at, &filter));
                    self.past_job = None;
                }
            }
            // The past shown stays until serve's is read.
            PastFrom::Waiting => {}
        }
    }

    /// What the page holds of `at`, for the decision.
    fn moment(&self, at: Millis, route: &Route) -> TravelMoment {
        let informer = self.driver.informer();
        let history = informer.history();
        let page_covers =
            history.dropped() == 0 && history.iter().next().is_some_and(|e| e.at <= at);
        TravelMoment {
            resource: route.stats_name(),
            namespace: route.namespace.clone(),
            at,
            selected: route.label_selector.is_some() || route.field_selector.is_some(),
            replaying: self.replay.is_some(),
            page_covers,
            live_count: informer.store().len(),
        }
    }

    /// Reads serve's answer for up to [`RECORD_MS_PER_FRAME`]; once it is
    /// all read, its objects are what the past is built from.
    fn read_record(&mut self) {
        let deadline = clock() + RECORD_MS_PER_FRAME;
        loop {
            let state = self.record.borrow_mut().step(STATE_STEP_BYTES);
            if let Some(state) = state {
                let source = PastSource::Recorded {
                    resource_version: state.resource_version,
                };
                self.past_job = Some(PastBuilder::from_objects(
                    state.at,
                    &self.spec.filter,
                    state.objects,
                    source,
                ));
                return;
            }
            if !self.record.borrow().is_building() || clock() >= deadline {
                return;
            }
        }
    }

    /// Shows serve's state at `at` for the text filter: the one built, or
    /// the shown one's objects collected again for another filter.
    fn show_record(&mut self, at: Millis) {
        let filter = self.spec.filter.clone();
        let recorded = |source: &PastSource| matches!(source, PastSource::Recorded { .. });
        if self
            .past
            .as_ref()
            .is_some_and(|p| recorded(&p.source) && p.shows(at, &filter))
        {
            self.past_job = None;
            return;
        }
        let building = self
            .past_job
            .as_ref()
            .is_some_and(|job| recorded(job.source()) && job.builds(at, &filter));
        if !building {
            let Some(past) = self
                .past
                .as_ref()
                .filter(|p| recorded(&p.source) && p.at == at)
            else {
                return;
            };
            self.past_job = Some(PastBuilder::from_objects(
                at,
                &filter,
                past.objects.clone(),
                past.source.clone(),
            ));
        }
        self.step_past_job();
    }

    /// What the page says about serve's record of the moment shown.
    pub fn record_note(&self) -> Option<RecordNote> {
        self.record.borrow().note()
    }

    /// Reading serve's answer: render again soon (an answer that arrives
    /// asks for a frame itself).
    pub(super) fn record_busy(&self) -> bool {
        self.record.borrow().is_building()
    }

    /// The columns the table shows: the page's own for the resource while
    /// serve's record is shown (its objects carry no server cells); a past
    /// moment shows no `kubectl top` column (they measure now, and come
    /// last).
    pub fn table_columns(&self) -> &[Column] {
        let recorded = self
            .past
            .as_ref()
            .is_some_and(|p| matches!(p.source, PastSource::Recorded { .. }));
        if recorded {
            &self.fallback_columns
        } else if self.past.is_some() {
            let of_the_objects = self.columns.iter().take_while(|c| !c.is_top()).count();
            &self.columns[..of_the_objects]
        } else {
            &self.columns
        }
    }

    /// The digest `data-digest` shows: the past's while one is shown.
    pub fn shown_digest(&self) -> &str {
        match &self.past {
            Some(past) => &past.digest,
            None => self.digest(),
        }
    }
}
