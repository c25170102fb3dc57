//! The timeline's lanes reaching back into serve's record: for each lane
//! (a kept resource), `crate::app::recorded_marks` decides whether the
//! range in view needs serve's count of what came before the page's own
//! history, `crate::transport::serve_history::get` asks, and what came
//! back is drawn in the lane (`crate::model::timeline_reach`). An answer
//! asks for a frame; the timeline is rebuilt with it (the cache's
//! generation is part of what the timeline was built from).

use crate::app::recorded_marks::LaneReach;
use crate::model::timeline::{HistorySource, LaneMode, TimelineData};
use crate::service::kept_informers::Source;

use super::LiveView;

impl LiveView {
    /// What each tracked source's lane shows and holds, for the decision.
    pub(super) fn lane_reach(
        &self,
        tracked: &[(u64, &Source)],
        sources: &[HistorySource<'_>],
    ) -> Vec<LaneReach> {
        tracked
            .iter()
            .zip(sources)
            .map(|((_, source), history)| LaneReach {
                resource: source.route.stats_name(),
                namespace: source.route.namespace.clone(),
                cluster: source.route.cluster.clone(),
                selected: source.route.label_selector.is_some()
                    || source.route.field_selector.is_some(),
                page_first: history.history.iter().next().map(|entry| entry.at),
            })
            .collect()
    }

    /// Asks serve for what the lanes need of its record and draws what it
    /// answered into `data` (lanes named as the tracked sources, in order).
    pub(super) fn reach_back(&mut self, data: &mut TimelineData, lanes: &[LaneReach]) {
        let range = (data.start, data.end);
        let asks = {
            let mut marks = self.marks.borrow_mut();
            marks.retain(lanes);
            marks.want(lanes, range, self.serve.as_ref(), self.replay.is_some())
        };
        for (key, path) in asks {
            let (marks, on_change) = (self.marks.clone(), self.on_change.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let answer = crate::transport::serve_history::get(&path)
                    .await
                    .map(|answer| (answer.status, answer.body))
                    .map_err(|error| error.to_string());
                marks.borrow_mut().answered(&key, answer);
                on_change();
            });
        }
        if data.mode != LaneMode::Resource {
            return;
        }
        let marks = self.marks.borrow();
        for (index, lane) in lanes.iter().enumerate().filter(|(_, l)| !l.selected) {
            if let Some(shown) = marks.shown(lane) {
                data.add_recorded(index, shown, lane.page_first.unwrap_or(data.end));
            }
            if let (Some(failure), Some(drawn)) = (marks.failure(lane), data.lanes.get_mut(index)) {
                drawn.recorded_error = Some(failure.to_string());
            }
        }
    }
}
