//! An export that reaches back into serve's record: *Export recording*
//! (or *Export selection*) of a resource serve records writes what serve
//! recorded before the page's own history began, then the page's own
//! (`crate::api::recording::export_with_record` joins them). This module
//! decides whether serve is asked and for which span — the part of the
//! range the page's history does not cover and serve's record does — and
//! what its answer means for the file; the service asks.

use crate::api::object_record::{resource_history_path, ObjectRecord};
use crate::app::object_reach::{outcome, UNTIL_PAST_FIRST_MS};
use crate::informer::Millis;
use crate::model::object_versions::ReachPhase;
use crate::model::serve_history::ServeHistory;

/// What the export asks of serve's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSpan {
    /// `GET /_deltascope/history?resource=R&since=T&until=T`.
    pub path: String,
}

/// The span of the record the export of `resource` (of one `namespace`'s
/// objects, or all) from `from` to `to` needs (ms since the Unix epoch,
/// `to` possibly `Millis::MAX` for "up to now"): from the later of `from` and the record's first delta, up to a
/// little past the page's first delta of the resource (`page_first`; both
/// hold what happened then, and the join writes it once), or to `now`
/// when the page holds none. `None` when serve records nothing of it or
/// the page's history covers the whole range.
pub fn record_span(
    serve: Option<&ServeHistory>,
    (resource, namespace): (&str, Option<&str>),
    (from, to): (Millis, Millis),
    page_first: Option<Millis>,
    now: Millis,
) -> Option<RecordSpan> {
    let serve = serve?;
    let record_from = serve.recorded_from(resource)?;
    let ms = |at: Millis| i64::try_from(at).unwrap_or(i64::MAX);
    let since = ms(from).max(record_from);
    let page_covers_from = page_first.map_or(ms(now), |first| {
        ms(first).saturating_add(UNTIL_PAST_FIRST_MS)
    });
    let until = ms(to).min(page_covers_from);
    (since < until).then(|| RecordSpan {
        path: serve.scoped(resource_history_path(
            resource,
            namespace,
            Some(since),
            Some(until),
        )),
    })
}

/// What serve's answer gives the file: its record, nothing (serve holds
/// none of the resource), or why it could not be read — then the file
/// holds only the page's own history and the page says why.
pub fn record_of_answer(answer: Option<(u16, &[u8])>) -> Result<Option<ObjectRecord>, String> {
    match outcome(answer) {
        // (a single answer is never a page of an object's record)
        (ReachPhase::Read | ReachPhase::ReadingOlder | ReachPhase::OlderFailed(_), record) => {
            Ok(record)
        }
        (ReachPhase::NoRecord(_), _) | (ReachPhase::Reading, _) => Ok(None),
        (ReachPhase::Failed(why), _) => Err(format!(
            "the export holds only this page's history: serve's record could not be read ({why})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::serve_history::recording_since;

    const NOW: Millis = 1_800_000_000_000;

    fn span(
        serve: Option<&ServeHistory>,
        range: (Millis, Millis),
        page_first: Option<Millis>,
    ) -> Option<String> {
        record_span(serve, ("pods", None), range, page_first, NOW).map(|s| s.path)
    }

    #[test]
    fn asks_for_what_the_record_holds_before_the_page_s_own_history() {
        let serve = recording_since(&[("pods", NOW as i64 - 600_000)]);
        // the whole history: from the record's start to a little past the page's first delta
        let path = span(Some(&serve), (0, Millis::MAX), Some(NOW - 60_000)).expect("asked");
        assert_eq!(
            path,
            "/_deltascope/history?resource=pods&since=2027-01-15T07%3A50%3A00.000Z&until=2027-01-15T07%3A59%3A05.000Z"
        );
        // a selection inside the record, before the page's history
        let path = span(
            Some(&serve),
            (NOW - 300_000, NOW - 240_000),
            Some(NOW - 60_000),
        )
        .expect("asked");
        assert!(
            path.ends_with("since=2027-01-15T07%3A55%3A00.000Z&until=2027-01-15T07%3A56%3A00.000Z")
        );
        // the page holds nothing of the resource: up to now
        let path = span(Some(&serve), (0, Millis::MAX), None).expect("asked");
        assert!(
            path.ends_with("until=2027-01-15T08%3A00%3A00.000Z"),
            "{path}"
        );
    }

    #[test]
    fn asks_nothing_when_serve_records_none_of_it_or_the_page_covers_the_range() {
        let serve = recording_since(&[("deployments.apps", 1_000)]);
        assert_eq!(span(Some(&serve), (0, Millis::MAX), Some(NOW)), None);
        assert_eq!(span(None, (0, Millis::MAX), Some(NOW)), None);
        assert_eq!(span(Some(&ServeHistory::Off), (0, Millis::MAX), None), None);
        let pods = recording_since(&[("pods", 1_000)]);
        // a selection after the page's first delta (and its margin)
        assert_eq!(
            span(Some(&pods), (NOW - 10_000, NOW), Some(NOW - 60_000)),
            None
        );
        // a selection that ends before the record begins
        let late = recording_since(&[("pods", NOW as i64 - 1_000)]);
        assert_eq!(span(Some(&late), (0, NOW - 5_000), None), None);
    }

    #[test]
    fn an_answer_gives_the_record_nothing_or_why_not() {
        let line = br#"{"at":0,"time":"2026-11-28T01:15:28.336Z","type":"ADDED","deltaType":"Replaced","resource":"pods","resourceVersion":"3","managers":[],"object":{"metadata":{"name":"web","namespace":"shop","resourceVersion":"3"}}}"#;
        let record = record_of_answer(Some((200, line)))
            .expect("read")
            .expect("a record");
        assert_eq!(record.versions.len(), 1);
        assert!(record_of_answer(Some((404, b""))).expect("read").is_none());
        let why = record_of_answer(Some((500, b"boom"))).expect_err("failed");
        assert!(
            why.contains("only this page's history") && why.contains("HTTP 500"),
            "{why}"
        );
        let why = record_of_answer(None).expect_err("failed");
        assert!(why.contains("no answer from serve"), "{why}");
        let why = record_of_answer(Some((200, b"<html>"))).expect_err("failed");
        assert!(why.contains("line 1"), "{why}");
    }
}
