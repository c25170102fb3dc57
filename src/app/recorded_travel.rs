//! When time travel asks serve for the shown resource as it was at a
//! moment (`GET /_deltascope/history/state?resource=R&at=T[&namespace=NS]`)
//! and what the answer means — a small state machine, tested natively.
//!
//! It asks once per moment, and only when the page's own history does not
//! cover the moment (nothing of it held yet, or retention evicted deltas),
//! no recording plays, and serve says (its summary) that it keeps a history
//! holding the resource. It does not ask for a view with a label or field
//! selector (serve's state is the whole resource, or a namespace of it),
//! nor for a resource of more than [`MAX_STATE_OBJECTS`] objects now, and
//! the answer is read only up to [`MAX_STATE_BYTES`] (100k pods are about
//! 900 MB of JSON: the page does not hold that twice); each says so, and
//! the page's own past is shown instead. A 409 that names a gap of the
//! record shows no table but the gap; one that says the record starts later
//! (or is complete only up to earlier) is said beside the page's own past.
//! The words are `crate::model::recorded_past`'s.

use crate::api::history_state::{history_state_path, uncovered, Uncovered};
use crate::api::history_summary::status_message;
use crate::informer::Millis;
use crate::model::recorded_past::{RecordNote, RecordedState, RecordedStateBuilder};
use crate::model::serve_history::ServeHistory;

/// The most bytes of serve's answer the page reads.
pub const MAX_STATE_BYTES: usize = 64 << 20;
/// Resources with more objects than this now are not asked for.
pub const MAX_STATE_OBJECTS: usize = 10_000;
/// Bytes of serve's answer read per step (a step is a few milliseconds).
pub const STATE_STEP_BYTES: usize = 64 << 10;

/// The moment the user travelled to, and what the page holds of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TravelMoment {
    /// As in `data-resource`.
    pub resource: String,
    pub namespace: Option<String>,
    pub at: Millis,
    /// The view has a label or field selector.
    pub selected: bool,
    /// A recording plays instead of the cluster.
    pub replaying: bool,
    /// The page's own history covers `at`: it held a delta at or before it
    /// and evicted none.
    pub page_covers: bool,
    /// Objects in the live store now.
    pub live_count: usize,
}

/// Which moment an answer is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TravelKey {
    resource: String,
    namespace: Option<String>,
    at: Millis,
}

impl TravelKey {
    fn of(moment: &TravelMoment) -> TravelKey {
        TravelKey {
            resource: moment.resource.clone(),
            namespace: moment.namespace.clone(),
            at: moment.at,
        }
    }
}

/// serve's answer as the transport hands it over.
#[derive(Debug)]
pub enum StateAnswer {
    /// Read whole.
    Whole { status: u16, body: Vec<u8> },
    /// Longer than [`MAX_STATE_BYTES`]: not read on.
    TooLarge,
    /// No answer came.
    None,
}

/// Which past the table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastFrom {
    /// The page's own history.
    Page,
    /// serve's record.
    Record,
    /// Nothing: the moment is in a gap of serve's record.
    Nothing,
    /// serve's answer is awaited or being read: what is shown stays.
    Waiting,
}

enum Phase {
    Reading,
    Building(RecordedStateBuilder),
    Said(RecordNote),
}

/// serve's record of the moment travelled to.
#[derive(Default)]
pub struct RecordedTravel {
    key: Option<TravelKey>,
    phase: Option<Phase>,
}

impl RecordedTravel {
    /// The user travels to `moment` (`None`: live) and serve says `serve`
    /// of its history. Returns the moment and the path to ask now, once.
    pub fn want(
        &mut self,
        moment: Option<&TravelMoment>,
        serve: Option<&ServeHistory>,
    ) -> Option<(TravelKey, String)> {
        let key = moment.map(TravelKey::of);
        if key != self.key {
            self.key = key;
            self.phase = None;
        }
        let moment = moment?;
        if moment.replaying || moment.page_covers {
            self.phase = None;
            return None;
        }
        if self.phase.is_some() {
            return None;
        }
        let serve = serve.filter(|s| s.keeps_history())?;
        let resource = &moment.resource;
        let not_read = |why: String| Some(Phase::Said(RecordNote::NotRead(why)));
        let at_ms = i64::try_from(moment.at).ok();
        self.phase = if serve.recorded(resource).is_none() {
            None // serve records other resources: nothing to say
        } else if moment.selected {
            not_read("a view with a label or field selector shows part of the resource, serve's record all of it".into())
        } else if moment.live_count > MAX_STATE_OBJECTS {
            not_read(format!(
                "the page reads serve's state only for resources of up to {MAX_STATE_OBJECTS} objects; {resource} has {} now",
                moment.live_count
            ))
        } else if at_ms.is_none() {
            not_read("the moment is out of range".into())
        } else {
            Some(Phase::Reading)
        };
        let at_ms = at_ms.filter(|_| matches!(self.phase, Some(Phase::Reading)))?;
        let path = history_state_path(resource, at_ms, moment.namespace.as_deref());
        let path = serve.scoped(path);
        Some((TravelKey::of(moment), path))
    }

    /// serve answered for `key`. An answer for another moment is dropped.
    pub fn answered(&mut self, key: &TravelKey, answer: StateAnswer) {
        if self.key.as_ref() != Some(key) || !matches!(self.phase, Some(Phase::Reading)) {
            return;
        }
        self.phase = Some(outcome(key.at, answer));
    }

    /// Reads about `budget` bytes more of serve's answer; its state once
    /// it is all read (handed over once).
    pub fn step(&mut self, budget: usize) -> Option<RecordedState> {
        let Some(Phase::Building(builder)) = self.phase.as_mut() else {
            return None;
        };
        let (phase, state) = match builder.step(budget) {
            Ok(None) => return None,
            Ok(Some(state)) => (
                RecordNote::Recorded {
                    at_ms: i64::try_from(state.at).unwrap_or(i64::MAX),
                    resource_version: state.resource_version.clone(),
                    objects: state.objects.len(),
                },
                Some(state),
            ),
            Err(error) => (RecordNote::NotRead(error.to_string()), None),
        };
        self.phase = Some(Phase::Said(phase));
        state
    }

    /// serve's answer is being read (more steps are wanted).
    pub fn is_building(&self) -> bool {
        matches!(self.phase, Some(Phase::Building(_)))
    }

    /// Waiting for serve, or reading its answer.
    pub fn is_busy(&self) -> bool {
        matches!(self.phase, Some(Phase::Reading | Phase::Building(_)))
    }

    /// Which past the table shows now.
    pub fn showing(&self) -> PastFrom {
        match &self.phase {
            None => PastFrom::Page,
            Some(Phase::Reading | Phase::Building(_)) => PastFrom::Waiting,
            Some(Phase::Said(RecordNote::Recorded { .. })) => PastFrom::Record,
            Some(Phase::Said(note)) if note.hides_table() => PastFrom::Nothing,
            Some(Phase::Said(_)) => PastFrom::Page,
        }
    }

    /// What the page says about serve's record of the moment, if anything.
    pub fn note(&self) -> Option<RecordNote> {
        let at_ms = self
            .key
            .as_ref()
            .map_or(0, |k| i64::try_from(k.at).unwrap_or(i64::MAX));
        match self.phase.as_ref()? {
            Phase::Reading | Phase::Building(_) => Some(RecordNote::Reading { at_ms }),
            Phase::Said(note) => Some(note.clone()),
        }
    }
}

/// What an answer means.
fn outcome(at: Millis, answer: StateAnswer) -> Phase {
    let not_read = |why: String| Phase::Said(RecordNote::NotRead(why));
    let (status, body) = match answer {
        StateAnswer::None => return not_read("no answer from serve".into()),
        StateAnswer::TooLarge => {
            return not_read(format!(
                "its state is larger than {} MiB, more than the page reads",
                MAX_STATE_BYTES >> 20
            ))
        }
        StateAnswer::Whole { status, body } => (status, body),
    };
    let said = |body: &[u8]| {
        status_message(body)
            .map(|m| format!(": {m}"))
            .unwrap_or_default()
    };
    match status {
        200..=299 => match RecordedStateBuilder::new(at, body) {
            Ok(builder) => Phase::Building(builder),
            Err(error) => not_read(error.to_string()),
        },
        409 => match status_message(&body).map(|m| uncovered(&m)) {
            Some(Uncovered::Gap(gap)) => Phase::Said(RecordNote::Gap(gap)),
            Some(Uncovered::Before { first_ms }) => Phase::Said(RecordNote::Before { first_ms }),
            Some(Uncovered::After { through_ms }) => Phase::Said(RecordNote::After { through_ms }),
            Some(Uncovered::Other(message)) => not_read(message),
            None => not_read("HTTP 409".into()),
        },
        400 | 404 => not_read(format!("serve holds no record of it{}", said(&body))),
        401 => not_read("not signed in".into()),
        _ => not_read(format!("HTTP {status}{}", said(&body))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::object_record::RecordGap;
    use crate::model::serve_history::recording_since;

    /// Serve recording `resources`, each from 1 s.
    fn recording(resources: &[&str]) -> ServeHistory {
        let since: Vec<(&str, i64)> = resources.iter().map(|r| (*r, 1_000)).collect();
        recording_since(&since)
    }

    /// Pods at `at`, before the page's own history.
    fn pods_at(at: Millis) -> TravelMoment {
        TravelMoment {
            resource: "pods".into(),
            namespace: None,
            at,
            selected: false,
            replaying: false,
            page_covers: false,
            live_count: 40,
        }
    }

    /// 2026-11-28 01:15:28.336 UTC.
    const AT: Millis = 1_795_828_528_336;
    const LIST: &[u8] = br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"812"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"40"}}]}"#;

    fn whole(status: u16, body: &[u8]) -> StateAnswer {
        StateAnswer::Whole {
            status,
            body: body.to_vec(),
        }
    }

    #[test]
    fn asks_once_per_moment_before_the_page_s_history_and_reads_the_state() {
        let serve = recording(&["pods"]);
        let mut travel = RecordedTravel::default();
        assert_eq!(travel.want(None, Some(&serve)), None);
        assert_eq!(travel.showing(), PastFrom::Page);
        let moment = pods_at(AT);
        let (key, path) = travel.want(Some(&moment), Some(&serve)).expect("asked");
        assert_eq!(
            path,
            "/_deltascope/history/state?resource=pods&at=2026-11-28T01%3A15%3A28.336Z"
        );
        assert_eq!(travel.want(Some(&moment), Some(&serve)), None, "once");
        assert_eq!(travel.showing(), PastFrom::Waiting);
        assert_eq!(
            travel.note(),
            Some(RecordNote::Reading { at_ms: AT as i64 })
        );
        travel.answered(&key, whole(200, LIST));
        assert!(travel.is_building());
        let state = loop {
            if let Some(state) = travel.step(16) {
                break state;
            }
            assert!(travel.is_busy());
        };
        assert_eq!(state.resource_version, "812");
        assert_eq!(state.objects.len(), 1);
        assert_eq!(travel.showing(), PastFrom::Record);
        assert!(matches!(
            travel.note(),
            Some(RecordNote::Recorded { resource_version, objects: 1, .. }) if resource_version == "812"
        ));
        assert!(travel.step(16).is_none(), "handed over once");
        // Back to live, then another moment in a namespace: asked anew.
        assert_eq!(travel.want(None, Some(&serve)), None);
        assert_eq!(travel.note(), None);
        let mut shop = pods_at(AT + 1);
        shop.namespace = Some("shop".into());
        let (_, path) = travel.want(Some(&shop), Some(&serve)).expect("asked");
        assert!(path.ends_with("&namespace=shop"), "{path}");
    }

    #[test]
    fn the_page_s_own_history_a_replay_or_no_recorder_ask_nothing() {
        let serve = recording(&["pods"]);
        let mut travel = RecordedTravel::default();
        let mut covered = pods_at(AT);
        covered.page_covers = true;
        assert_eq!(travel.want(Some(&covered), Some(&serve)), None);
        let mut replay = pods_at(AT);
        replay.replaying = true;
        assert_eq!(travel.want(Some(&replay), Some(&serve)), None);
        assert_eq!(travel.want(Some(&pods_at(AT)), None), None);
        assert_eq!(
            travel.want(Some(&pods_at(AT)), Some(&ServeHistory::Off)),
            None
        );
        assert_eq!(
            travel.want(Some(&pods_at(AT)), Some(&recording(&["nodes"]))),
            None
        );
        assert_eq!((travel.showing(), travel.note()), (PastFrom::Page, None));
        // The summary arrives later: asked then.
        assert!(travel.want(Some(&pods_at(AT)), Some(&serve)).is_some());
    }

    #[test]
    fn a_selector_or_a_large_resource_is_not_asked_and_says_why() {
        let serve = recording(&["pods"]);
        let mut travel = RecordedTravel::default();
        let mut selected = pods_at(AT);
        selected.selected = true;
        assert_eq!(travel.want(Some(&selected), Some(&serve)), None);
        assert!(
            matches!(travel.note(), Some(RecordNote::NotRead(why)) if why.contains("selector"))
        );
        assert_eq!(travel.showing(), PastFrom::Page);
        let mut large = pods_at(AT + 1);
        large.live_count = 100_000;
        assert_eq!(travel.want(Some(&large), Some(&serve)), None);
        assert!(
            matches!(travel.note(), Some(RecordNote::NotRead(why)) if why.contains("up to 10000 objects; pods has 100000 now"))
        );
    }

    fn answer_of(answer: StateAnswer) -> (PastFrom, Option<RecordNote>) {
        let serve = recording(&["pods"]);
        let mut travel = RecordedTravel::default();
        let (key, _) = travel
            .want(Some(&pods_at(AT)), Some(&serve))
            .expect("asked");
        travel.answered(&key, answer);
        while travel.is_building() {
            travel.step(1 << 20);
        }
        (travel.showing(), travel.note())
    }

    #[test]
    fn a_gap_shows_no_table_and_other_answers_keep_the_page_s_own() {
        let gap = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the record of pods has a gap from 2026-11-28T01:15:00.000Z to 2026-11-28T01:16:00.000Z (not-running): changes then may be missing","reason":"Conflict","code":409}"#;
        assert_eq!(
            answer_of(whole(409, gap)),
            (
                PastFrom::Nothing,
                Some(RecordNote::Gap(RecordGap {
                    from_ms: 1_795_828_500_000,
                    to_ms: 1_795_828_560_000,
                    reason: "not-running".into()
                }))
            )
        );
        let before = br#"{"kind":"Status","message":"the record of pods starts at 2026-11-28T01:16:00.000Z","code":409}"#;
        assert_eq!(
            answer_of(whole(409, before)),
            (
                PastFrom::Page,
                Some(RecordNote::Before {
                    first_ms: 1_795_828_560_000
                })
            )
        );
        let not_read = |answer| match answer_of(answer) {
            (PastFrom::Page, Some(RecordNote::NotRead(why))) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(not_read(StateAnswer::None), "no answer from serve");
        assert!(not_read(StateAnswer::TooLarge).contains("larger than 64 MiB"));
        assert_eq!(not_read(whole(401, b"")), "not signed in");
        let never = br#"{"kind":"Status","message":"widgets is not a resource recorded for this cluster","code":400}"#;
        assert_eq!(
            not_read(whole(400, never)),
            "serve holds no record of it: widgets is not a resource recorded for this cluster"
        );
        assert_eq!(not_read(whole(503, b"busy")), "HTTP 503");
        assert!(not_read(whole(200, b"<html>")).starts_with("serve's state is not a List"));
        assert!(not_read(whole(200, br#"{"items":[{"metadata":{}}]}"#)).starts_with("item 0"));
    }

    #[test]
    fn an_answer_for_another_moment_is_dropped() {
        let serve = recording(&["pods"]);
        let mut travel = RecordedTravel::default();
        let (old, _) = travel
            .want(Some(&pods_at(AT)), Some(&serve))
            .expect("asked");
        let (new, _) = travel
            .want(Some(&pods_at(AT + 5)), Some(&serve))
            .expect("asked");
        travel.answered(&old, whole(200, LIST));
        assert!(!travel.is_building());
        assert_eq!(travel.showing(), PastFrom::Waiting);
        travel.answered(&new, whole(200, LIST));
        assert!(travel.is_building());
    }
}
