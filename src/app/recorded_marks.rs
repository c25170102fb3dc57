//! When the timeline asks serve for a lane's record counted per bucket
//! (`GET /_deltascope/history/marks?…`, `crate::api::history_marks`) and
//! what it keeps of the answers — a small cache, tested natively.
//!
//! A lane asks only when the range in view starts before the page's own
//! first delta of its resource, serve's summary says it keeps a history
//! holding the resource (from before that delta), the lane's view has no
//! label or field selector (serve counts a whole resource, or a namespace
//! of it) and no recording plays. It asks for the part of the range before
//! the page's own history, in buckets of a width that is a power of two
//! milliseconds giving at least one bucket per pixel column, aligned to
//! that width — so panning within what was asked, or a live view whose
//! start moves forward, asks nothing new, and a zoom asks once. Each lane
//! holds one answer (the one being asked keeps the last drawn until it
//! arrives): what is fetched is bounded by the kept resources. A failed
//! answer is said in the lane's title and not asked again for the same
//! range.

use std::collections::HashMap;

use crate::api::history_marks::{marks_path, parse_marks, RecordedMarks, MAX_BUCKETS};
use crate::api::history_summary::status_message;
use crate::informer::Millis;
use crate::model::serve_history::ServeHistories;
use crate::model::timeline::COLUMNS;

/// What a lane shows and holds, for the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneReach {
    /// As in `data-resource`.
    pub resource: String,
    pub namespace: Option<String>,
    /// serve's name of its cluster (`None`: the default one).
    pub cluster: Option<String>,
    /// serve's record cannot answer for it: its view has a label or field
    /// selector.
    pub selected: bool,
    /// The page's own first delta of it.
    pub page_first: Option<Millis>,
}

/// One request: which lane's resource, over which aligned range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MarksKey {
    pub cluster: Option<String>,
    pub resource: String,
    pub namespace: Option<String>,
    pub since: Millis,
    pub until: Millis,
    pub buckets: usize,
}

/// Which lane an answer is held for: its cluster, resource and namespace.
type LaneId = (Option<String>, String, Option<String>);

fn lane_id(lane: &LaneReach) -> LaneId {
    (
        lane.cluster.clone(),
        lane.resource.clone(),
        lane.namespace.clone(),
    )
}

impl MarksKey {
    fn lane(&self) -> LaneId {
        (
            self.cluster.clone(),
            self.resource.clone(),
            self.namespace.clone(),
        )
    }

    fn width(&self) -> Millis {
        (self.until - self.since) / self.buckets.max(1) as Millis
    }

    /// Same bucket width and covering `since..until`.
    fn covers(&self, other: &MarksKey) -> bool {
        self.width() == other.width() && self.since <= other.since && self.until >= other.until
    }
}

#[derive(Debug, Clone)]
enum Entry {
    Asking {
        key: MarksKey,
        shown: Option<RecordedMarks>,
    },
    Got {
        key: MarksKey,
        marks: RecordedMarks,
    },
    Failed {
        key: MarksKey,
        message: String,
    },
}

impl Entry {
    fn key(&self) -> &MarksKey {
        match self {
            Entry::Asking { key, .. } | Entry::Got { key, .. } | Entry::Failed { key, .. } => key,
        }
    }

    fn shown(&self) -> Option<&RecordedMarks> {
        match self {
            Entry::Asking { shown, .. } => shown.as_ref(),
            Entry::Got { marks, .. } => Some(marks),
            Entry::Failed { .. } => None,
        }
    }
}

/// The lanes' answers.
#[derive(Debug, Default)]
pub struct RecordedMarksCache {
    lanes: HashMap<LaneId, Entry>,
    /// Grows whenever what is shown changes.
    generation: u64,
}

/// The aligned range and bucket count to ask for `lane` while `range` is
/// in view and serve's record of it begins at `recorded_from`; `None`
/// when the page's own history covers the view.
pub fn reach_key(
    lane: &LaneReach,
    range: (Millis, Millis),
    recorded_from: Millis,
) -> Option<MarksKey> {
    let before = lane.page_first.unwrap_or(range.1).min(range.1);
    let wanted_from = range.0.max(recorded_from);
    if wanted_from >= before {
        return None;
    }
    let per_column = (range.1.saturating_sub(range.0) / COLUMNS as Millis).max(1);
    let mut width = per_column.next_power_of_two();
    let (since, until) = loop {
        let since = wanted_from / width * width;
        let until = before / width * width;
        if ((until.saturating_sub(since)) / width) as usize <= MAX_BUCKETS {
            break (since, until);
        }
        width *= 2;
    };
    (until > since).then(|| MarksKey {
        cluster: lane.cluster.clone(),
        resource: lane.resource.clone(),
        namespace: lane.namespace.clone(),
        since,
        until,
        buckets: ((until - since) / width) as usize,
    })
}

impl RecordedMarksCache {
    /// The requests to send (key and path) for the lanes while `range` is
    /// in view; each is then [`RecordedMarksCache::answered`].
    pub fn want(
        &mut self,
        lanes: &[LaneReach],
        range: (Millis, Millis),
        serve: Option<&ServeHistories>,
        replaying: bool,
    ) -> Vec<(MarksKey, String)> {
        if replaying {
            return Vec::new();
        }
        let mut asks = Vec::new();
        for lane in lanes.iter().filter(|lane| !lane.selected) {
            let Some(serve) = serve.and_then(|s| s.of_cluster(lane.cluster.as_deref())) else {
                continue;
            };
            let Some(from) = serve.recorded_from(&lane.resource) else {
                continue;
            };
            let Some(key) = reach_key(lane, range, from.max(0) as Millis) else {
                continue;
            };
            let entry = self.lanes.get(&key.lane());
            if entry.is_some_and(|entry| entry.key().covers(&key)) {
                continue;
            }
            let shown = entry.and_then(Entry::shown).cloned();
            let path = serve.scoped(marks_path(
                &key.resource,
                key.namespace.as_deref(),
                (key.since, key.until),
                key.buckets,
            ));
            self.lanes.insert(
                key.lane(),
                Entry::Asking {
                    key: key.clone(),
                    shown,
                },
            );
            asks.push((key, path));
        }
        asks
    }

    /// serve's answer to `key` (`Err`: no answer came), if still wanted.
    pub fn answered(&mut self, key: &MarksKey, answer: Result<(u16, Vec<u8>), String>) {
        let lane = key.lane();
        if self.lanes.get(&lane).map(Entry::key) != Some(key) {
            return;
        }
        let entry = match answer {
            Ok((200, body)) => match parse_marks(&body) {
                Ok(marks) => Entry::Got {
                    key: key.clone(),
                    marks,
                },
                Err(error) => Entry::Failed {
                    key: key.clone(),
                    message: error.to_string(),
                },
            },
            Ok((status, body)) => Entry::Failed {
                key: key.clone(),
                message: format!(
                    "serve answered {status}: {}",
                    status_message(&body).unwrap_or_else(|| "no reason given".into())
                ),
            },
            Err(message) => Entry::Failed {
                key: key.clone(),
                message,
            },
        };
        self.lanes.insert(lane, entry);
        self.generation += 1;
    }

    /// What `lane` draws from serve's record.
    pub fn shown(&self, lane: &LaneReach) -> Option<&RecordedMarks> {
        self.lanes.get(&lane_id(lane)).and_then(Entry::shown)
    }

    /// Why the lane's last answer could not be drawn.
    pub fn failure(&self, lane: &LaneReach) -> Option<&str> {
        match self.lanes.get(&lane_id(lane))? {
            Entry::Failed { message, .. } => Some(message),
            _ => None,
        }
    }

    /// Changes whenever an answer arrives.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Forgets the lanes no longer shown.
    pub fn retain(&mut self, lanes: &[LaneReach]) {
        self.lanes
            .retain(|held, _| lanes.iter().any(|lane| lane_id(lane) == *held));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::serve_history::{RecordedResource, ServeHistory};

    fn reading(cluster: Option<&str>, first_ms: i64) -> ServeHistory {
        ServeHistory::Reading {
            cluster: cluster.map(str::to_owned),
            database: "sqlite".into(),
            recorded: vec![RecordedResource {
                resource: "pods".into(),
                first_ms: Some(first_ms),
                gaps: 0,
            }],
        }
    }

    fn serve(first_ms: i64) -> ServeHistories {
        ServeHistories::only(reading(None, first_ms))
    }

    fn lane(page_first: Option<Millis>) -> LaneReach {
        LaneReach {
            resource: "pods".into(),
            namespace: None,
            cluster: None,
            selected: false,
            page_first,
        }
    }

    const ANSWER: &str = r#"{"since":"1970-01-01T00:00:00.000Z","until":"1970-01-01T00:00:10.000Z",
        "buckets":10,"types":["Added","Updated","Deleted","Replaced","Sync"],"counts":[[1,2,0,0,0,0]],"gaps":[]}"#;

    #[test]
    fn the_range_before_the_page_is_asked_aligned_to_its_bucket_width() {
        // 600 s in view: 1 s a column → 1024 ms buckets.
        let key = reach_key(&lane(Some(500_000)), (0, 600_000), 100_000).unwrap();
        assert_eq!(key.width(), 1024);
        assert_eq!(key.since, 99_328, "100 000 rounded down to 1024");
        assert_eq!(key.until, 499_712, "the page's first delta rounded down");
        assert_eq!(key.buckets, (499_712 - 99_328) / 1024);
        // The page covers the view, or the record starts after it.
        assert_eq!(reach_key(&lane(Some(0)), (0, 600_000), 0), None);
        assert_eq!(reach_key(&lane(Some(500_000)), (0, 600_000), 550_000), None);
        // A page with nothing of the resource: the whole view.
        let key = reach_key(&lane(None), (0, 600_000), 0).unwrap();
        assert_eq!(key.until, 599_040);
    }

    #[test]
    fn a_lane_asks_once_per_range_and_keeps_drawing_while_a_zoom_asks() {
        let mut cache = RecordedMarksCache::default();
        let lanes = [lane(Some(500_000))];
        let serve = serve(0);
        let asks = cache.want(&lanes, (0, 600_000), Some(&serve), false);
        assert_eq!(asks.len(), 1);
        assert!(asks[0]
            .1
            .starts_with("/_deltascope/history/marks?resource=pods&since="));
        // Asked already: nothing new while it is on its way, nor after a
        // pan within it.
        assert!(cache
            .want(&lanes, (0, 600_000), Some(&serve), false)
            .is_empty());
        cache.answered(&asks[0].0, Ok((200, ANSWER.as_bytes().to_vec())));
        assert_eq!(cache.generation(), 1);
        assert_eq!(cache.shown(&lanes[0]).unwrap().total(), 2);
        assert!(cache
            .want(&lanes, (100_000, 700_000), Some(&serve), false)
            .is_empty());
        // Zoomed out: asked again, the last answer drawn meanwhile.
        let zoom = cache.want(&lanes, (0, 1_200_000), Some(&serve), false);
        assert_eq!(zoom.len(), 1);
        assert!(cache.shown(&lanes[0]).is_some());
        // A late answer to the old range is dropped.
        cache.answered(&asks[0].0, Ok((200, ANSWER.as_bytes().to_vec())));
        assert_eq!(cache.generation(), 1);
    }

    #[test]
    fn nothing_is_asked_without_a_record_a_selector_or_while_replaying() {
        let mut cache = RecordedMarksCache::default();
        let range = (0, 600_000);
        assert!(cache
            .want(&[lane(Some(500_000))], range, None, false)
            .is_empty());
        assert!(cache
            .want(
                &[lane(Some(500_000))],
                range,
                Some(&ServeHistories::only(ServeHistory::Off)),
                false
            )
            .is_empty());
        assert!(cache
            .want(&[lane(Some(500_000))], range, Some(&serve(0)), true)
            .is_empty());
        let selected = LaneReach {
            selected: true,
            ..lane(Some(500_000))
        };
        assert!(cache
            .want(&[selected], range, Some(&serve(0)), false)
            .is_empty());
    }

    #[test]
    fn a_failed_answer_is_said_and_not_asked_again_for_the_same_range() {
        let mut cache = RecordedMarksCache::default();
        let lanes = [lane(Some(500_000))];
        let serve = serve(0);
        let asks = cache.want(&lanes, (0, 600_000), Some(&serve), false);
        let refusal = br#"{"kind":"Status","message":"the history database cannot be read now"}"#;
        cache.answered(&asks[0].0, Ok((503, refusal.to_vec())));
        assert_eq!(
            cache.failure(&lanes[0]),
            Some("serve answered 503: the history database cannot be read now")
        );
        assert!(cache.shown(&lanes[0]).is_none());
        assert!(cache
            .want(&lanes, (0, 600_000), Some(&serve), false)
            .is_empty());
        let asks = cache.want(&lanes, (0, 1_200_000), Some(&serve), false);
        cache.answered(&asks[0].0, Ok((200, b"{".to_vec())));
        assert!(cache.failure(&lanes[0]).unwrap().contains("not JSON"));
        cache.retain(&[]);
        assert!(cache.failure(&lanes[0]).is_none());
    }

    #[test]
    fn each_clusters_lane_asks_its_own_record_and_holds_its_own_answer() {
        let serve = ServeHistories {
            default: reading(None, 0),
            others: vec![("staging".into(), reading(Some("staging"), 200_000))],
        };
        let staging = LaneReach {
            cluster: Some("staging".into()),
            ..lane(Some(500_000))
        };
        let dev = LaneReach {
            cluster: Some("dev".into()),
            ..lane(Some(500_000))
        };
        let lanes = [lane(Some(500_000)), staging.clone(), dev];
        let mut cache = RecordedMarksCache::default();
        let asks = cache.want(&lanes, (0, 600_000), Some(&serve), false);
        assert_eq!(asks.len(), 2, "dev is not in serve's summary: {asks:?}");
        let (default_key, default_path) = &asks[0];
        let (staging_key, staging_path) = &asks[1];
        assert!(!default_path.contains("cluster="), "{default_path}");
        assert!(staging_path.ends_with("&cluster=staging"), "{staging_path}");
        assert_eq!(staging_key.cluster.as_deref(), Some("staging"));
        assert!(
            staging_key.since >= 199_000,
            "staging's record starts later"
        );
        cache.answered(staging_key, Ok((200, ANSWER.as_bytes().to_vec())));
        assert_eq!(cache.shown(&staging).map(RecordedMarks::total), Some(2));
        assert!(
            cache.shown(&lanes[0]).is_none(),
            "the default's is not staging's"
        );
        cache.answered(default_key, Ok((503, b"{}".to_vec())));
        assert!(cache.failure(&lanes[0]).is_some());
        assert!(cache.failure(&staging).is_none());
    }
}
