//! Time travel before the page's own history, from serve's record: the
//! state serve answered (`GET /_deltascope/history/state`, read by
//! `crate::api::history_state`) gathered into the objects present then a
//! step at a time ([`RecordedStateBuilder`]; `crate::model::past` then
//! shows it like the page's own past), and what the page says about serve's
//! record of the moment ([`RecordNote`]: "pods as recorded by serve at
//! 03:12:40 (resourceVersion 812)", "serve did not watch pods from 03:10:00
//! to 03:11:00: not-running", or why it was not read). When serve is asked
//! and what its answer means is `crate::app::recorded_travel`.

use std::collections::BTreeMap;

use crate::api::history_state::{StateBody, StateBodyError};
use crate::api::object_record::RecordGap;
use crate::informer::{Millis, ObjectRef};
use crate::model::first_seen::WallClock;

/// The state serve answered for a moment, read whole.
#[derive(Debug, Clone)]
pub struct RecordedState {
    pub at: Millis,
    /// The last resourceVersion serve recorded at or before `at`.
    pub resource_version: String,
    /// Every object present then, by key.
    pub objects: BTreeMap<String, ObjectRef>,
}

/// serve's answer read into a [`RecordedState`] a step at a time.
pub struct RecordedStateBuilder {
    at: Millis,
    body: StateBody,
    objects: BTreeMap<String, ObjectRef>,
}

impl RecordedStateBuilder {
    /// Starts reading serve's answer for `at`; refused when it is no List.
    pub fn new(at: Millis, body: Vec<u8>) -> Result<RecordedStateBuilder, StateBodyError> {
        Ok(RecordedStateBuilder {
            at,
            body: StateBody::open(body)?,
            objects: BTreeMap::new(),
        })
    }

    /// Reads about `budget` bytes more; the state once it is all read.
    pub fn step(&mut self, budget: usize) -> Result<Option<RecordedState>, StateBodyError> {
        let objects = &mut self.objects;
        let done = self.body.read(budget, |object| {
            objects.insert(object.key.clone(), object);
        })?;
        if !done {
            return Ok(None);
        }
        Ok(Some(RecordedState {
            at: self.at,
            resource_version: self.body.resource_version().unwrap_or_default().to_string(),
            objects: std::mem::take(&mut self.objects),
        }))
    }
}

/// What the page says about serve's record of the moment it travelled to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordNote {
    /// serve is asked, or its answer is being read.
    Reading { at_ms: i64 },
    /// The table is serve's record at `at_ms`.
    Recorded {
        at_ms: i64,
        resource_version: String,
        objects: usize,
    },
    /// The moment falls in a span serve did not watch: no table.
    Gap(RecordGap),
    /// serve's record starts after the moment.
    Before { first_ms: i64 },
    /// serve's record is known complete only up to an earlier moment.
    After { through_ms: i64 },
    /// serve's record was not read, and why (the page's own past is shown).
    NotRead(String),
}

impl RecordNote {
    /// `[data-testid=time-travel-record]`'s `data-state`.
    pub fn state(&self) -> &'static str {
        match self {
            RecordNote::Reading { .. } => "reading",
            RecordNote::Recorded { .. } => "recorded",
            RecordNote::Gap(_) => "gap",
            RecordNote::Before { .. } | RecordNote::After { .. } => "uncovered",
            RecordNote::NotRead(_) => "not-read",
        }
    }

    /// The words, for `resource` (as in `data-resource`), times on `clock`.
    pub fn words(&self, resource: &str, clock: &WallClock) -> String {
        match self {
            RecordNote::Reading { at_ms } => format!(
                "reading serve's record of {resource} at {}…",
                clock.hh_mm_ss(*at_ms)
            ),
            RecordNote::Recorded {
                at_ms,
                resource_version,
                ..
            } => format!(
                "{resource} as recorded by serve at {} (resourceVersion {resource_version})",
                clock.hh_mm_ss(*at_ms)
            ),
            RecordNote::Gap(gap) => format!(
                "serve did not watch {resource} from {} to {}: {}{} — no table is shown for this moment",
                clock.hh_mm_ss(gap.from_ms),
                clock.hh_mm_ss(gap.to_ms),
                gap.reason,
                reason_words(&gap.reason)
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ),
            RecordNote::Before { first_ms } => format!(
                "serve's record of {resource} starts at {}, after this moment",
                clock.hh_mm_ss(*first_ms)
            ),
            RecordNote::After { through_ms } => format!(
                "serve's record of {resource} is known complete only up to {}",
                clock.hh_mm_ss(*through_ms)
            ),
            RecordNote::NotRead(why) => format!("serve's record of {resource} was not read: {why}"),
        }
    }

    /// The table shows nothing rather than a state that may be wrong.
    pub fn hides_table(&self) -> bool {
        matches!(self, RecordNote::Gap(_))
    }
}

/// A gap's reason (ARCHITECTURE.md, *The recorded history*) in words.
fn reason_words(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "not-running" => "the recorder was not running",
        "unreachable" => "the cluster could not be reached",
        "expired" => "its watch expired and it listed again",
        "database-unavailable" => "its database could not be written",
        "not-kept" => "retention removed that part of the record",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::digest_of;
    use crate::model::past::{PastBuilder, PastSource};

    const UTC: WallClock = WallClock { utc_offset_secs: 0 };

    fn state_body(pods: &[(&str, &str)]) -> Vec<u8> {
        let items: Vec<String> = pods
            .iter()
            .map(|(name, rv)| {
                format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}"#)
            })
            .collect();
        format!(
            r#"{{"kind":"List","apiVersion":"v1","metadata":{{"resourceVersion":"99"}},"items":[{}]}}"#,
            items.join(",")
        )
        .into_bytes()
    }

    #[test]
    fn serve_s_state_is_read_a_step_at_a_time_and_shown_with_its_digest() {
        let pods = [("c", "7"), ("a", "5"), ("b", "9")];
        let mut builder = RecordedStateBuilder::new(1_000, state_body(&pods)).expect("a List");
        let mut steps = 0;
        let state = loop {
            steps += 1;
            if let Some(state) = builder.step(40).expect("read") {
                break state;
            }
        };
        assert!(steps > 2, "read in steps: {steps}");
        assert_eq!(state.resource_version, "99");
        assert_eq!(
            state.objects.keys().collect::<Vec<_>>(),
            ["ns/a", "ns/b", "ns/c"]
        );
        let expected = digest_of(
            pods.iter()
                .map(|(n, rv)| (format!("ns/{n}"), rv.to_string())),
        );
        let source = PastSource::Recorded {
            resource_version: state.resource_version.clone(),
        };
        let history = crate::informer::History::new(Default::default());
        let mut past = PastBuilder::from_objects(state.at, "B", state.objects, source.clone());
        let past = loop {
            if let Some(past) = past.step(&history, 1) {
                break past;
            }
        };
        assert_eq!(
            past.digest, expected,
            "the digest of every object, not the filtered rows"
        );
        assert_eq!(past.keys.len(), 1);
        assert_eq!((past.at, past.source), (1_000, source));
    }

    #[test]
    fn a_body_that_is_no_state_is_refused() {
        assert!(RecordedStateBuilder::new(1, b"<html>".to_vec()).is_err());
        let mut builder =
            RecordedStateBuilder::new(1, br#"{"items":[{"metadata":{}}]}"#.to_vec()).expect("open");
        assert!(builder.step(1 << 20).is_err());
    }

    #[test]
    fn the_words_say_whose_table_it_is_or_why_there_is_none() {
        let at_ms = 1_795_828_360_000; // 01:12:40 UTC
        let recorded = RecordNote::Recorded {
            at_ms,
            resource_version: "812".into(),
            objects: 3,
        };
        assert_eq!(
            recorded.words("pods", &UTC),
            "pods as recorded by serve at 01:12:40 (resourceVersion 812)"
        );
        assert_eq!(recorded.state(), "recorded");
        let gap = RecordNote::Gap(RecordGap {
            from_ms: at_ms - 60_000,
            to_ms: at_ms + 5_000,
            reason: "not-running".into(),
        });
        assert_eq!(
            gap.words("pods", &UTC),
            "serve did not watch pods from 01:11:40 to 01:12:45: not-running (the recorder was not running) — no table is shown for this moment"
        );
        assert!(gap.hides_table() && !recorded.hides_table());
        assert_eq!(gap.state(), "gap");
        assert_eq!(
            RecordNote::Reading { at_ms }.words(
                "pods",
                &WallClock {
                    utc_offset_secs: 3600
                }
            ),
            "reading serve's record of pods at 02:12:40…"
        );
        assert_eq!(
            RecordNote::Before { first_ms: at_ms }.words("pods", &UTC),
            "serve's record of pods starts at 01:12:40, after this moment"
        );
        assert_eq!(
            RecordNote::NotRead("no answer from serve".into()).words("nodes", &UTC),
            "serve's record of nodes was not read: no answer from serve"
        );
    }
}
