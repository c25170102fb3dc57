//! The delta list reaching back into serve's record: when the range the
//! *Deltas* panel lists starts before the page's own history of a kept
//! resource that serve records, the page asks serve for that part
//! (`GET /_deltascope/history?resource=R[&namespace=NS]&since=T&until=T`,
//! the span `crate::app::recorded_export` decides, read up to
//! [`RECORDED_DELTAS_MAX_BYTES`]) and the list shows the recorded deltas
//! among its own, filtered alike (`crate::model::delta_select`). One answer
//! is held per lane and range: a new range asks again, the same one never.
//! A lane with a label or field selector is not asked (the record cannot
//! select); a failure is said in the list's words and its own deltas stay.

use crate::api::object_record::ObjectRecord;
use crate::app::object_reach::{read_outcome, records_state, RecordAnswer};
use crate::app::recorded_export::record_span;
use crate::informer::Millis;
use crate::model::object_versions::ReachPhase;
use crate::model::serve_history::ServeHistories;

/// The most of one lane's record the list reads (parsed in one task).
pub const RECORDED_DELTAS_MAX_BYTES: usize = 8 << 20;

/// One lane of the list: its kept informer, resource (as in
/// `data-resource`), namespace and where the page's own history begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListLane {
    pub source: u64,
    pub resource: String,
    pub namespace: Option<String>,
    /// serve's name of its cluster (`None`: the default one).
    pub cluster: Option<String>,
    /// A label or field selector narrows it: serve's record cannot answer
    /// for it.
    pub selected: bool,
    pub page_first: Option<Millis>,
}

/// One lane's record for one span.
#[derive(Debug)]
struct LaneRecord {
    source: u64,
    resource: String,
    path: String,
    phase: ReachPhase,
    record: Option<ObjectRecord>,
}

/// What serve recorded of the lanes before the page's own histories.
#[derive(Debug, Default)]
pub struct RecordedDeltas {
    lanes: Vec<LaneRecord>,
    answered: u64,
}

impl RecordedDeltas {
    /// The list covers `range` of `lanes` now: what to ask serve (each
    /// lane's source and path), once per lane and span; lanes no longer
    /// listed, or whose span changed, are let go.
    pub fn want(
        &mut self,
        lanes: &[ListLane],
        range: (Millis, Millis),
        serve: Option<&ServeHistories>,
        now: Millis,
    ) -> Vec<(u64, String)> {
        // A lane with no history of its own is read up to now: to the
        // minute, or every frame would be a new span to ask for.
        let now = now - now % 60_000;
        let wanted: Vec<(&ListLane, String)> = lanes
            .iter()
            .filter(|lane| !lane.selected)
            .filter_map(|lane| {
                let serve = serve.and_then(|s| s.of_cluster(lane.cluster.as_deref()));
                let span = record_span(
                    serve.filter(|s| s.keeps_history()),
                    (&lane.resource, lane.namespace.as_deref()),
                    range,
                    lane.page_first,
                    now,
                )?;
                Some((lane, span.path))
            })
            .collect();
        self.lanes.retain(|held| {
            wanted
                .iter()
                .any(|(lane, path)| lane.source == held.source && *path == held.path)
        });
        let mut asks = Vec::new();
        for (lane, path) in wanted {
            if self.lanes.iter().any(|held| held.source == lane.source) {
                continue;
            }
            self.lanes.push(LaneRecord {
                source: lane.source,
                resource: lane.resource.clone(),
                path: path.clone(),
                phase: ReachPhase::Reading,
                record: None,
            });
            asks.push((lane.source, path));
        }
        asks
    }

    /// The answer to `path` for lane `source` came; one for a span no
    /// longer wanted is dropped.
    pub fn answered(&mut self, source: u64, path: &str, answer: RecordAnswer<'_>) {
        self.answered += 1;
        let Some(lane) = self
            .lanes
            .iter_mut()
            .find(|l| l.source == source && l.path == path)
        else {
            return;
        };
        let resource = &lane.resource;
        (lane.phase, lane.record) = read_outcome(answer, || {
            format!(
                "serve's record of {resource} in this range is over {} MiB; narrow the selection",
                RECORDED_DELTAS_MAX_BYTES >> 20
            )
        });
    }

    /// Each lane's record read so far: its source and the record.
    pub fn records(&self) -> Vec<(u64, &ObjectRecord)> {
        self.lanes
            .iter()
            .filter_map(|lane| Some((lane.source, lane.record.as_ref()?)))
            .collect()
    }

    /// The list's `data-recorded`: `reading`, `read` or `error` (with why);
    /// `None` when nothing was asked.
    pub fn state(&self) -> Option<(&'static str, Option<String>)> {
        let phases = self.lanes.iter().map(|l| (l.resource.as_str(), &l.phase));
        records_state(phases, |failed| {
            format!("serve's record of this range could not be read ({failed}); the list holds the page's own deltas")
        })
    }

    /// Answers applied so far (the list built before one is stale).
    pub fn answered_count(&self) -> u64 {
        self.answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::serve_history::{recording_in, recording_since, ServeHistory};

    fn only(serve: ServeHistory) -> ServeHistories {
        ServeHistories::only(serve)
    }

    const NOW: Millis = 1_800_000_000_000;

    fn lane(source: u64, resource: &str, page_first: Option<Millis>) -> ListLane {
        ListLane {
            source,
            resource: resource.into(),
            namespace: None,
            cluster: None,
            selected: false,
            page_first,
        }
    }

    const POD: &[u8] = br#"{"at":0,"time":"2027-01-15T07:55:00.000Z","type":"MODIFIED","deltaType":"Updated","resource":"pods","resourceVersion":"3","managers":["kubelet"],"object":{"metadata":{"name":"web-1","namespace":"shop","resourceVersion":"3"}}}"#;

    #[test]
    fn asks_each_recorded_lane_once_per_span_before_its_own_history() {
        let serve = only(recording_since(&[("pods", NOW as i64 - 600_000)]));
        let lanes = [
            lane(1, "pods", Some(NOW - 60_000)),
            lane(2, "configmaps", Some(NOW - 60_000)),
        ];
        let mut list = RecordedDeltas::default();
        let asks = list.want(&lanes, (0, Millis::MAX), Some(&serve), NOW);
        assert_eq!(asks.len(), 1, "configmaps are not recorded: {asks:?}");
        let (source, path) = asks[0].clone();
        assert_eq!(source, 1);
        assert!(
            path.starts_with("/_deltascope/history?resource=pods&since="),
            "{path}"
        );
        assert_eq!(list.state(), Some(("reading", None)));
        assert!(
            list.want(&lanes, (0, Millis::MAX), Some(&serve), NOW)
                .is_empty(),
            "once"
        );
        list.answered(1, &path, RecordAnswer::Answered(Some((200, POD))));
        assert_eq!(list.state(), Some(("read", None)));
        assert_eq!(list.records().len(), 1);
        // another range: asked again, the old record let go
        let brushed = (NOW - 300_000, NOW - 200_000);
        let asks = list.want(&lanes, brushed, Some(&serve), NOW);
        assert_eq!(asks.len(), 1);
        assert!(list.records().is_empty());
        // a lane with no history of its own: up to now, to the minute
        let empty = [lane(3, "pods", None)];
        let asks = list.want(&empty, (0, Millis::MAX), Some(&serve), NOW + 1_000);
        assert_eq!(asks.len(), 1);
        assert!(list
            .want(&empty, (0, Millis::MAX), Some(&serve), NOW + 2_000)
            .is_empty());
        // a range inside the page's own history asks nothing
        let recent = (NOW - 10_000, NOW);
        assert!(list.want(&lanes, recent, Some(&serve), NOW).is_empty());
        assert_eq!(list.state(), None);
    }

    #[test]
    fn a_selected_lane_or_no_recorder_asks_nothing_and_failures_are_said() {
        let serve = only(recording_since(&[("pods", 1)]));
        let mut selected = lane(1, "pods", None);
        selected.selected = true;
        let mut list = RecordedDeltas::default();
        assert!(list
            .want(&[selected], (0, Millis::MAX), Some(&serve), NOW)
            .is_empty());
        assert!(list
            .want(&[lane(1, "pods", None)], (0, Millis::MAX), None, NOW)
            .is_empty());
        let asks = list.want(
            &[lane(1, "pods", None)],
            (0, Millis::MAX),
            Some(&serve),
            NOW,
        );
        list.answered(1, &asks[0].1, RecordAnswer::TooLarge);
        let (state, words) = list.state().expect("asked");
        assert_eq!(state, "error");
        assert!(words.expect("why").contains("over 8 MiB"));
    }

    #[test]
    fn a_lane_of_another_cluster_asks_that_clusters_record() {
        let staging = recording_in(Some("staging"), &[("pods", 1)]);
        let serve = ServeHistories {
            default: ServeHistory::Off,
            others: vec![("staging".into(), staging)],
        };
        let lanes = [
            lane(1, "pods", None),
            ListLane {
                cluster: Some("staging".into()),
                ..lane(2, "pods", None)
            },
        ];
        let mut list = RecordedDeltas::default();
        let asks = list.want(&lanes, (0, Millis::MAX), Some(&serve), NOW);
        assert_eq!(asks.len(), 1, "the default keeps none: {asks:?}");
        assert_eq!(asks[0].0, 2);
        assert!(asks[0].1.ends_with("&cluster=staging"), "{}", asks[0].1);
    }
}
