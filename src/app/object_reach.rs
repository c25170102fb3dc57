//! When the object view asks serve for the object's recorded past
//! (`GET /_deltascope/history?resource=R&namespace=NS&name=N&until=T&newest=K`),
//! and what the answer means — a small state machine, tested natively. It
//! asks once per object opened, and only while serve says it keeps a
//! history (its summary: recording, or reading another recorder's) that
//! holds the object's resource; up to a little after the page's own first
//! delta of the object (what follows is the page's own; the overlap is
//! joined without doubling by `crate::model::object_versions`). The record
//! is read a page of [`RECORD_PAGE`] versions at a time, newest first: the
//! History draws the newest at once, and the older pages follow, each
//! parsed in one short task (a thousand versions read whole held the page
//! for 300 ms). Without a
//! recorder nothing is asked and nothing said. A failure (no answer, 401,
//! 403, 5xx, a line that is no recorded delta) is said quietly and the
//! page's own history stays; it is asked again when the object is opened
//! again. What any answer of serve's record means (its status, its lines,
//! a body over a reader's bound) is read here too, for the story's,
//! the delta list's and the export's requests alike.

use crate::api::history_summary::status_message;
use crate::api::object_record::{object_history_path, parse_object_record, ObjectRecord};
use crate::informer::Millis;
use crate::model::first_seen::Watched;
use crate::model::object_versions::ReachPhase;
use crate::model::serve_history::{in_cluster, ServeHistory};

/// How far past the page's first delta of the object the record is read
/// (clocks of the browser and serve may differ a little; what both hold is
/// one delta).
pub const UNTIL_PAST_FIRST_MS: i64 = 5_000;

/// Versions read per request of an object's record: the History's first
/// page (`crate::model::object_details::HISTORY_PAGE`).
pub const RECORD_PAGE: usize = crate::model::object_details::HISTORY_PAGE;

/// The object whose record is asked for: its resource as in
/// `data-resource`, its key, and serve's name of its cluster (`None`: the
/// default one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReachTarget {
    pub resource: String,
    pub key: String,
    pub cluster: Option<String>,
}

impl ReachTarget {
    /// `path` asked of the record of the target's cluster.
    pub fn scoped(&self, path: String) -> String {
        in_cluster(path, self.cluster.as_deref())
    }
}

/// serve's record of the object on screen.
#[derive(Debug, Default)]
pub struct ObjectReach {
    target: Option<ReachTarget>,
    phase: Option<ReachPhase>,
    record: Option<ObjectRecord>,
    /// A page of older versions is asked for.
    asking_older: bool,
    /// Requests finished (their answers applied or dropped).
    answered: u64,
}

impl ObjectReach {
    /// The object view shows `target` (`None`: closed), serve says
    /// `serve` of its history, and the page's own history of the object
    /// begins at `page_first_ms`. Returns the path to ask now: the newest
    /// page once, then each older page once the one before it is read.
    pub fn want(
        &mut self,
        target: Option<ReachTarget>,
        serve: Option<&ServeHistory>,
        page_first_ms: Option<Millis>,
    ) -> Option<String> {
        if target != self.target {
            self.target = target;
            self.phase = None;
            self.record = None;
            self.asking_older = false;
        }
        let target = self.target.as_ref()?;
        match self.phase {
            None => {}
            Some(ReachPhase::ReadingOlder) if !self.asking_older => {
                let oldest = self.record.as_ref()?.versions.first()?.time_ms;
                self.asking_older = true;
                let (namespace, name) = target.key.split_once('/').unwrap_or(("", &target.key));
                // Its millisecond was read whole (serve sends every delta
                // of the oldest one's): the next page ends before it.
                return Some(target.scoped(object_history_path(
                    &target.resource,
                    namespace,
                    name,
                    Some(oldest.saturating_sub(1)),
                    Some(RECORD_PAGE),
                )));
            }
            Some(_) => return None,
        }
        let serve = serve.filter(|s| s.keeps_history())?;
        if serve.recorded(&target.resource).is_none() {
            self.phase = Some(ReachPhase::NoRecord(None));
            return None;
        }
        let (namespace, name) = target.key.split_once('/').unwrap_or(("", &target.key));
        let until = page_first_ms
            .and_then(|ms| i64::try_from(ms).ok())
            .map(|ms| ms.saturating_add(UNTIL_PAST_FIRST_MS));
        self.phase = Some(ReachPhase::Reading);
        Some(target.scoped(object_history_path(
            &target.resource,
            namespace,
            name,
            until,
            Some(RECORD_PAGE),
        )))
    }

    /// The answer for `target` came: its status and body, `None` when the
    /// request got no answer. An answer for an object no longer shown is
    /// dropped.
    pub fn answered(&mut self, target: &ReachTarget, answer: Option<(u16, &[u8])>) {
        self.answered += 1;
        if self.target.as_ref() != Some(target) {
            return;
        }
        match self.phase {
            Some(ReachPhase::Reading) => {
                let (phase, record) = outcome(answer);
                self.phase = Some(match phase {
                    ReachPhase::Read => after_page(record.as_ref()),
                    other => other,
                });
                self.record = record;
            }
            Some(ReachPhase::ReadingOlder) if self.asking_older => {
                self.asking_older = false;
                let (phase, older) = outcome(answer);
                self.phase = Some(match (phase, older, self.record.as_mut()) {
                    (ReachPhase::Read, Some(older), Some(record)) => {
                        let phase = after_page(Some(&older));
                        put_before(record, older);
                        phase
                    }
                    (ReachPhase::Failed(why), _, _) => ReachPhase::OlderFailed(why),
                    // serve holds nothing older (or no longer the resource)
                    _ => ReachPhase::Read,
                });
            }
            _ => {}
        }
    }

    pub fn phase(&self) -> Option<&ReachPhase> {
        self.phase.as_ref()
    }

    pub fn record(&self) -> Option<&ObjectRecord> {
        self.record.as_ref()
    }

    /// Requests answered so far (a new record means the views built from
    /// the last one are stale).
    pub fn answered_count(&self) -> u64 {
        self.answered
    }

    /// What serve's recorder watched of the shown object's resource: from
    /// its first record (the summary's), except the record's gaps.
    pub fn recorder_watched(&self, serve: Option<&ServeHistory>) -> Option<Watched> {
        let target = self.target.as_ref()?;
        let from_ms = serve?
            .recorded_from(&target.resource)
            .or_else(|| self.record.as_ref()?.versions.first().map(|v| v.time_ms))?;
        let gaps = self
            .record
            .as_ref()
            .map(|r| r.gaps.iter().map(|g| (g.from_ms, g.to_ms)).collect())
            .unwrap_or_default();
        Some(Watched { from_ms, gaps })
    }
}

/// Where the object's record is after a page of it was read: a full
/// page may have older ones behind it.
fn after_page(page: Option<&ObjectRecord>) -> ReachPhase {
    if page.is_some_and(|page| page.versions.len() >= RECORD_PAGE) {
        ReachPhase::ReadingOlder
    } else {
        ReachPhase::Read
    }
}

/// An older page of the record put before what is held; a gap both pages
/// touch is kept once.
fn put_before(record: &mut ObjectRecord, older: ObjectRecord) {
    let newer = std::mem::replace(&mut record.versions, older.versions);
    record.versions.extend(newer);
    for gap in older.gaps {
        if !record.gaps.contains(&gap) {
            record.gaps.push(gap);
        }
    }
    crate::informer::compact_sort::sort_by_key(&mut record.gaps, |gap| gap.from_ms);
}

/// What an answer means.
pub(super) fn outcome(answer: Option<(u16, &[u8])>) -> (ReachPhase, Option<ObjectRecord>) {
    let Some((status, body)) = answer else {
        return (ReachPhase::Failed("no answer from serve".into()), None);
    };
    let said = || {
        status_message(body)
            .map(|m| format!(": {m}"))
            .unwrap_or_default()
    };
    match status {
        200..=299 => match parse_object_record(body) {
            Ok(record) => (ReachPhase::Read, Some(record)),
            Err(error) => (ReachPhase::Failed(error.to_string()), None),
        },
        // serve never recorded the resource (or refuses the query): it
        // holds nothing to show.
        400 | 404 => (
            ReachPhase::NoRecord(Some(format!("serve holds no record of it{}", said()))),
            None,
        ),
        401 => (ReachPhase::Failed("not signed in".into()), None),
        403 => (ReachPhase::Failed(format!("refused, 403{}", said())), None),
        _ => (ReachPhase::Failed(format!("HTTP {status}{}", said())), None),
    }
}

/// How an answer to a bounded read of serve's record came.
pub enum RecordAnswer<'a> {
    /// Its status and body; `None`: no answer.
    Answered(Option<(u16, &'a [u8])>),
    /// Its body is over the reader's bound: not read on.
    TooLarge,
}

/// What an answer means for one resource's record: its phase and record
/// (`too_large` says why one over its bound is not read).
pub fn read_outcome(
    answer: RecordAnswer<'_>,
    too_large: impl FnOnce() -> String,
) -> (ReachPhase, Option<ObjectRecord>) {
    match answer {
        RecordAnswer::Answered(answer) => outcome(answer),
        RecordAnswer::TooLarge => (ReachPhase::Failed(too_large()), None),
    }
}

/// Where several records being read are (`phases`: each resource's):
/// `reading`, `read` or `error` with the words `failed` makes of what
/// failed; `None` when none was asked.
pub fn records_state<'a>(
    phases: impl Iterator<Item = (&'a str, &'a ReachPhase)>,
    failed: impl FnOnce(String) -> String,
) -> Option<(&'static str, Option<String>)> {
    let phases: Vec<(&str, &ReachPhase)> = phases.collect();
    if phases.is_empty() {
        return None;
    }
    let failures: Vec<String> = phases
        .iter()
        .filter_map(|(resource, phase)| match phase {
            ReachPhase::Failed(why) => Some(format!("{resource}: {why}")),
            _ => None,
        })
        .collect();
    if !failures.is_empty() {
        return Some(("error", Some(failed(failures.join("; ")))));
    }
    if phases
        .iter()
        .any(|(_, phase)| **phase == ReachPhase::Reading)
    {
        return Some(("reading", None));
    }
    Some(("read", None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::serve_history::recording_since as recording;
    use deltascope_facts::percent::encode_query_value;
    use deltascope_facts::time::format_rfc3339_millis;

    fn web() -> Option<ReachTarget> {
        Some(ReachTarget {
            resource: "deployments.apps".into(),
            key: "shop/web".into(),
            cluster: None,
        })
    }

    const LINE: &[u8] = br#"{"at":0,"time":"2026-11-28T01:15:28.336Z","type":"ADDED","deltaType":"Replaced","resource":"deployments.apps","resourceVersion":"30","managers":[],"object":{"metadata":{"name":"web","namespace":"shop","resourceVersion":"30"}}}"#;

    #[test]
    fn asks_once_per_object_up_to_a_little_after_the_page_s_first_delta() {
        let serve = recording(&[("deployments.apps", 1_000)]);
        let mut reach = ObjectReach::default();
        let path = reach.want(web(), Some(&serve), Some(1_795_828_528_336));
        assert_eq!(
            path.as_deref(),
            Some("/_deltascope/history?resource=deployments.apps&namespace=shop&name=web&until=2026-11-28T01%3A15%3A33.336Z&newest=100")
        );
        assert_eq!(reach.phase(), Some(&ReachPhase::Reading));
        assert_eq!(reach.want(web(), Some(&serve), Some(1)), None, "once");
        let target = web().expect("target");
        reach.answered(&target, Some((200, LINE)));
        assert_eq!(reach.phase(), Some(&ReachPhase::Read));
        assert_eq!(reach.record().map(|r| r.versions.len()), Some(1));
        let watched = reach.recorder_watched(Some(&serve)).expect("watched");
        assert_eq!(watched.from_ms, 1_000);
        assert_eq!(reach.want(web(), Some(&serve), Some(1)), None);
        // Another object: asked anew; a cluster-scoped one without a namespace.
        let node = ReachTarget {
            resource: "nodes".into(),
            key: "node-1".into(),
            cluster: None,
        };
        let serve = recording(&[("nodes", 1_000)]);
        assert_eq!(
            reach.want(Some(node), Some(&serve), None).as_deref(),
            Some("/_deltascope/history?resource=nodes&name=node-1&newest=100")
        );
        assert!(reach.record().is_none());
    }

    /// `count` recorded versions of shop/web, a second apart, the last at
    /// `last_ms`, with `gap` lines first.
    fn page(count: usize, last_ms: i64, gaps: &[&str]) -> Vec<u8> {
        let mut body = String::new();
        for gap in gaps {
            body.push_str(gap);
            body.push('\n');
        }
        for i in 0..count {
            let ms = last_ms - 1_000 * (count - 1 - i) as i64;
            let time = format_rfc3339_millis(ms).expect("a time");
            body.push_str(&format!(
                r#"{{"time":"{time}","deltaType":"Updated","resourceVersion":"{ms}","object":{{"metadata":{{"name":"web","namespace":"shop","resourceVersion":"{ms}"}}}}}}"#
            ));
            body.push('\n');
        }
        body.into_bytes()
    }

    /// A reach of shop/web whose newest page (the last version at
    /// `last_ms`) is read and whose next older page is asked.
    fn asking_older(serve: &ServeHistory, last_ms: i64) -> ObjectReach {
        let mut reach = ObjectReach::default();
        reach.want(web(), Some(serve), None);
        let target = web().expect("target");
        reach.answered(&target, Some((200, &page(RECORD_PAGE, last_ms, &[]))));
        reach
            .want(web(), Some(serve), None)
            .expect("the older page");
        reach
    }

    #[test]
    fn a_long_record_is_read_a_page_at_a_time_newest_first() {
        let serve = recording(&[("deployments.apps", 1_000)]);
        let target = web().expect("target");
        let mut reach = ObjectReach::default();
        let first = reach.want(web(), Some(&serve), None).expect("asked");
        assert!(first.ends_with("&newest=100"), "{first}");
        let gap = r#"{"gap":{"from":"2026-11-28T00:00:00.000Z","to":"2026-11-28T00:10:00.000Z","reason":"unreachable"}}"#;
        let last_ms = 1_795_828_528_000;
        reach.answered(&target, Some((200, &page(RECORD_PAGE, last_ms, &[gap]))));
        assert_eq!(reach.phase(), Some(&ReachPhase::ReadingOlder));
        // The next page ends before the oldest one held, and is asked once.
        let oldest = last_ms - 1_000 * (RECORD_PAGE as i64 - 1);
        let older = reach
            .want(web(), Some(&serve), None)
            .expect("the older page");
        let until = encode_query_value(&format_rfc3339_millis(oldest - 1).expect("time"));
        assert!(
            older.ends_with(&format!("&until={until}&newest=100")),
            "{older}"
        );
        assert_eq!(reach.want(web(), Some(&serve), None), None, "once");
        // A short page: the record is whole, oldest first, the gap once.
        reach.answered(&target, Some((200, &page(30, oldest - 1_000, &[gap]))));
        assert_eq!(reach.phase(), Some(&ReachPhase::Read));
        let record = reach.record().expect("record");
        assert_eq!(record.versions.len(), RECORD_PAGE + 30);
        assert!(record
            .versions
            .windows(2)
            .all(|w| w[0].time_ms < w[1].time_ms));
        assert_eq!(record.gaps.len(), 1);
        assert_eq!(reach.want(web(), Some(&serve), None), None);

        // An older page that fails keeps the newest, and says so.
        let mut reach = asking_older(&serve, last_ms);
        reach.answered(&target, Some((503, b"busy")));
        assert_eq!(
            reach.phase(),
            Some(&ReachPhase::OlderFailed("HTTP 503".into()))
        );
        assert_eq!(reach.record().map(|r| r.versions.len()), Some(RECORD_PAGE));
        assert_eq!(
            reach.want(web(), Some(&serve), None),
            None,
            "not asked again"
        );
        // Nothing older (an empty page): whole.
        let mut reach = asking_older(&serve, last_ms);
        reach.answered(&target, Some((200, b"")));
        assert_eq!(reach.phase(), Some(&ReachPhase::Read));
    }

    #[test]
    fn without_a_recorder_nothing_is_asked_or_said() {
        let mut reach = ObjectReach::default();
        assert_eq!(reach.want(web(), None, Some(1)), None);
        assert_eq!(reach.want(web(), Some(&ServeHistory::Off), Some(1)), None);
        assert_eq!(reach.phase(), None);
        // serve records, but not this resource: nothing asked, nothing said.
        assert_eq!(
            reach.want(web(), Some(&recording(&[("pods", 1)])), Some(1)),
            None
        );
        assert_eq!(reach.phase(), Some(&ReachPhase::NoRecord(None)));
        // The summary arrives after the view opened: asked then.
        let mut later = ObjectReach::default();
        assert_eq!(later.want(web(), None, None), None);
        let serve = recording(&[("deployments.apps", 1)]);
        assert!(later.want(web(), Some(&serve), None).is_some());
    }

    #[test]
    fn failures_are_said_and_an_answer_for_another_object_is_dropped() {
        let serve = recording(&[("deployments.apps", 1)]);
        let target = web().expect("target");
        let failed = |answer: Option<(u16, &[u8])>| {
            let mut reach = ObjectReach::default();
            reach.want(web(), Some(&serve), None);
            reach.answered(&target, answer);
            reach.phase().cloned()
        };
        assert_eq!(
            failed(Some((401, b""))),
            Some(ReachPhase::Failed("not signed in".into()))
        );
        let forbidden = br#"{"kind":"Status","message":"no such deltascope endpoint","code":403}"#;
        assert_eq!(
            failed(Some((403, forbidden))),
            Some(ReachPhase::Failed(
                "refused, 403: no such deltascope endpoint".into()
            ))
        );
        assert_eq!(
            failed(Some((503, b"busy"))),
            Some(ReachPhase::Failed("HTTP 503".into()))
        );
        assert_eq!(
            failed(None),
            Some(ReachPhase::Failed("no answer from serve".into()))
        );
        let malformed = failed(Some((200, b"{\"time\":")));
        assert!(
            matches!(&malformed, Some(ReachPhase::Failed(why)) if why.starts_with("line 1 of serve's record")),
            "{malformed:?}"
        );
        let never = br#"{"kind":"Status","message":"resource widgets was never recorded for this cluster","code":400}"#;
        assert!(matches!(
            failed(Some((400, never))),
            Some(ReachPhase::NoRecord(Some(_)))
        ));
        // The user moved on: the answer is dropped.
        let mut reach = ObjectReach::default();
        reach.want(web(), Some(&serve), None);
        let other = ReachTarget {
            resource: "pods".into(),
            key: "shop/web-1".into(),
            cluster: None,
        };
        reach.want(Some(other.clone()), Some(&serve), None);
        reach.answered(&target, Some((200, LINE)));
        assert!(reach.record().is_none());
        assert_eq!(reach.answered_count(), 1);
    }
}
