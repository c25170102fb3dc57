//! When an object's usage chart asks serve's recorder for the samples it
//! kept, and what each answer means — a small state machine, tested
//! natively; the request is `crate::service::object_usage`'s.
//!
//! The first ask covers [`FIRST_REACH_MS`] before now (or the chart's
//! range, when it starts earlier); each time the chart's range starts
//! before what was asked, the span before is asked, one request at a time.
//! What serve answers joins the page's own samples
//! (`crate::model::usage_series`). A 404 (serve keeps no history) or 403
//! (an older serve refusing a path it does not know) stops the asking for
//! this object; any
//! other failure is said and asked again on the next range change.

use crate::api::history_summary::status_message;
use crate::api::object_record::RecordGap;
use crate::api::usage_history::{parse_recorded_usage, RecordedUsage};
use crate::informer::{compact_sort, Millis};
use crate::model::serve_history::ServeHistory;
use crate::model::usage_series::UsageSubject;

/// How far back the first ask reaches.
pub const FIRST_REACH_MS: Millis = 3_600_000;

/// serve's record of one object's usage, as asked so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageReach {
    subject: Option<UsageSubject>,
    /// From when on the record was asked for (and answered).
    asked_from: Option<Millis>,
    /// The span being asked, while a request is out.
    asking: Option<(Millis, Millis)>,
    gaps: Vec<RecordGap>,
    /// Why serve's record is not read (stays for this object).
    absent: Option<String>,
    /// Why the last request failed.
    failure: Option<String>,
    /// Samples serve sent so far.
    received: usize,
}

impl UsageReach {
    /// The request to make for `subject` shown over `range` at `now`, if
    /// one is due.
    pub fn want(
        &mut self,
        subject: &UsageSubject,
        range: (Millis, Millis),
        serve: Option<&ServeHistory>,
        now: Millis,
    ) -> Option<(String, (Millis, Millis))> {
        if self.subject.as_ref() != Some(subject) {
            *self = UsageReach {
                subject: Some(subject.clone()),
                ..UsageReach::default()
            };
        }
        if self.asking.is_some() || self.absent.is_some() {
            return None;
        }
        let serve = serve.filter(|serve| serve.keeps_history())?;
        let until = self.asked_from.unwrap_or(now);
        let since = match self.asked_from {
            None => range.0.min(now.saturating_sub(FIRST_REACH_MS)),
            Some(_) if range.0 < until => range.0,
            Some(_) => return None,
        };
        if since >= until {
            return None;
        }
        self.asking = Some((since, until));
        let path = serve.scoped(subject.history_path((since, until)));
        Some((path, (since, until)))
    }

    /// serve answered the request for `subject` over `span` (`None`: no
    /// answer at all); the samples to add, if any.
    pub fn answered(
        &mut self,
        subject: &UsageSubject,
        span: (Millis, Millis),
        answer: Option<(u16, &[u8])>,
    ) -> Option<RecordedUsage> {
        if self.subject.as_ref() != Some(subject) || self.asking != Some(span) {
            return None;
        }
        self.asking = None;
        let said = |body: &[u8]| {
            status_message(body)
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        };
        match answer {
            None => self.failure = Some("no answer".into()),
            Some((200, body)) => match parse_recorded_usage(body) {
                Ok(usage) => {
                    self.failure = None;
                    self.asked_from = Some(span.0);
                    self.received += usage.samples.len();
                    self.gaps.extend(usage.gaps.iter().cloned());
                    compact_sort::sort_by_key(&mut self.gaps, |g| g.from_ms);
                    self.gaps.dedup();
                    return Some(usage);
                }
                Err(error) => self.failure = Some(error.to_string()),
            },
            // 403: a serve older than the route refuses a path it does not know
            Some((404 | 403, body)) => {
                self.absent = Some(format!("serve keeps no usage history{}", said(body)))
            }
            Some((status, body)) => self.failure = Some(format!("HTTP {status}{}", said(body))),
        }
        None
    }

    /// The spans serve did not record, oldest first.
    pub fn gaps(&self) -> &[RecordGap] {
        &self.gaps
    }

    /// From when on serve's record was read, if it was.
    pub fn read_from(&self) -> Option<Millis> {
        self.asked_from
    }

    /// What the chart says of serve's record: `data-recorded` and words.
    pub fn words(&self) -> (&'static str, String) {
        if let Some(why) = &self.absent {
            return ("none", why.clone());
        }
        if let Some(why) = &self.failure {
            return ("failed", format!("serve's usage history: {why}"));
        }
        match (self.asking, self.asked_from) {
            (Some(_), _) => ("reading", "reading serve's record…".into()),
            (None, Some(_)) => (
                "read",
                format!("{} samples from serve's record", self.received),
            ),
            (None, None) => ("none", String::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::history_summary::HistorySummary;

    fn pod() -> UsageSubject {
        UsageSubject::Pod {
            namespace: "shop".into(),
            name: "web-1".into(),
        }
    }

    fn serve() -> ServeHistory {
        let summary: HistorySummary = serde_json::from_str(
            r#"{"cluster":"c","history":"sqlite:x","unavailable":null,"recording":null,"resources":[]}"#,
        )
        .expect("a summary");
        ServeHistory::of(&summary)
    }

    const HOUR: Millis = 3_600_000;

    #[test]
    fn it_asks_the_last_hour_then_only_what_the_range_adds_one_at_a_time() {
        let mut reach = UsageReach::default();
        let serve = serve();
        let now = 10 * HOUR;
        let (path, span) = reach
            .want(&pod(), (now - 60_000, now), Some(&serve), now)
            .expect("asked");
        assert_eq!(span, (9 * HOUR, now));
        assert!(
            path.starts_with("/_deltascope/history/usage?resource=pods"),
            "{path}"
        );
        assert_eq!(
            reach.want(&pod(), (0, now), Some(&serve), now),
            None,
            "one at a time"
        );
        assert_eq!(reach.words().0, "reading");
        let body = br#"{"samples":[{"at":"1970-01-01T09:30:00Z","window":15000,"cpu":1,"memory":2}],"gaps":[]}"#;
        let usage = reach
            .answered(&pod(), span, Some((200, body)))
            .expect("samples");
        assert_eq!(usage.samples.len(), 1);
        assert_eq!(
            reach.words(),
            ("read", "1 samples from serve's record".into())
        );
        assert_eq!(reach.want(&pod(), (9 * HOUR, now), Some(&serve), now), None);
        let (_, span) = reach
            .want(&pod(), (7 * HOUR, now), Some(&serve), now)
            .expect("the span before");
        assert_eq!(span, (7 * HOUR, 9 * HOUR));
    }

    #[test]
    fn a_404_stops_asking_and_other_failures_are_said() {
        let serve = serve();
        let mut reach = UsageReach::default();
        let (_, span) = reach
            .want(&pod(), (0, HOUR), Some(&serve), HOUR)
            .expect("asked");
        assert!(reach.answered(&pod(), span, Some((503, b"{}"))).is_none());
        assert_eq!(
            reach.words(),
            ("failed", "serve's usage history: HTTP 503".into())
        );
        let (_, span) = reach
            .want(&pod(), (0, HOUR), Some(&serve), HOUR)
            .expect("again");
        assert!(reach.answered(&pod(), span, Some((404, b"{}"))).is_none());
        assert_eq!(reach.words().0, "none");
        assert_eq!(reach.want(&pod(), (0, HOUR), Some(&serve), HOUR), None);
        // another object starts afresh; no serve history: nothing asked
        let node = UsageSubject::Node { name: "n".into() };
        assert!(reach.want(&node, (0, HOUR), Some(&serve), HOUR).is_some());
        let mut fresh = UsageReach::default();
        assert_eq!(fresh.want(&pod(), (0, HOUR), None, HOUR), None);
    }

    #[test]
    fn an_answer_for_another_object_or_span_is_dropped() {
        let serve = serve();
        let mut reach = UsageReach::default();
        let (_, span) = reach
            .want(&pod(), (0, HOUR), Some(&serve), HOUR)
            .expect("asked");
        let node = UsageSubject::Node { name: "n".into() };
        let body = br#"{"samples":[]}"#;
        assert!(reach.answered(&node, span, Some((200, body))).is_none());
        assert!(reach.answered(&pod(), (1, 2), Some((200, body))).is_none());
        assert!(reach.answered(&pod(), span, Some((200, body))).is_some());
    }
}
