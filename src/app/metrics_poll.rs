//! When the pods or nodes table asks the metrics API for `kubectl top`'s
//! numbers, and what each answer means — a small state machine on the
//! caller's clock (ms since the Unix epoch), tested natively; the requests
//! are the informers service's (`crate::service::resource_view::top`).
//!
//! One list of the whole resource per window of metrics-server's
//! resolution (15 s): after an answer whose newest `timestamp` is T and
//! `window` W, the next is asked at T + W + 1 s, when the next window is
//! measured (at least [`MIN_DELAY_MS`] on, at most W + 1 s, so a clock
//! apart from the cluster's costs a few requests, never a flood). A 404 or
//! 503 says the cluster serves no metrics API and a 403 that the user may
//! not list it: the columns hide and the page asks again only every
//! [`ABSENT_RETRY_MS`]. Any other failure keeps the last window shown and
//! says why in the note's title.

use std::sync::Arc;

use crate::api::history_summary::status_message;
use crate::api::resource_metrics::{Keep, Measured, UsageList, UsageListError};
use crate::api::usage_list_reader::UsageListReader;
use crate::informer::Millis;
use crate::model::top::{MetricsNote, MetricsState};

/// metrics-server's default resolution, when an answer does not say.
pub const DEFAULT_WINDOW_MS: Millis = 15_000;
/// The soonest a next request is asked after an answer.
pub const MIN_DELAY_MS: Millis = 2_000;
/// How long after the next window starts it is asked for.
pub const AFTER_WINDOW_MS: Millis = 1_000;
/// How often a cluster without a metrics API (or a user without the
/// permission) is asked again.
pub const ABSENT_RETRY_MS: Millis = 60_000;
/// How soon a failed request is asked again.
pub const FAILED_RETRY_MS: Millis = 5_000;

/// The metrics of the table on screen, and when to ask for them again.
#[derive(Debug, Clone)]
pub struct MetricsPoll {
    measured: Measured,
    state: MetricsState,
    /// Why the last request failed, while the state it left stays shown.
    failure: Option<String>,
    /// Counts the changes of what the table shows (a new window, the
    /// columns shown or hidden).
    generation: u64,
    next_at: Millis,
    /// What each answer keeps besides the usage.
    keep: Keep,
}

impl MetricsPoll {
    /// Nothing known yet; a request is due at once.
    pub fn new(measured: Measured) -> MetricsPoll {
        MetricsPoll {
            measured,
            state: MetricsState::Waiting,
            failure: None,
            generation: 0,
            next_at: 0,
            keep: Keep::default(),
        }
    }

    /// Keeps what `keep` says too: each pod's containers (a chart's one
    /// object), its labels (a workloads table); a pods table's thousands
    /// need only their sums.
    pub fn keeping(mut self, keep: Keep) -> MetricsPoll {
        self.keep = keep;
        self
    }

    pub fn measured(&self) -> Measured {
        self.measured
    }

    pub fn state(&self) -> &MetricsState {
        &self.state
    }

    /// Changes whenever the table's usage columns should be built again.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// What the page says of it.
    pub fn note(&self) -> MetricsNote {
        self.state.note(self.failure.as_deref())
    }

    /// How long until the next request is due (0: now).
    pub fn wait_ms(&self, now: Millis) -> Millis {
        self.next_at.saturating_sub(now)
    }

    /// A reader for the next answer, keeping what this poll keeps.
    pub fn reader(&self) -> AnswerReader {
        AnswerReader {
            keep: self.keep,
            status: None,
            list: None,
            body: Vec::new(),
        }
    }

    /// The answer to a request, at `now`: its status and body, `None`
    /// when no answer came.
    pub fn answered(&mut self, answer: Option<(u16, &[u8])>, now: Millis) {
        let read = answer.and_then(|(status, body)| {
            let mut reader = self.reader();
            reader.started(status);
            reader.chunk(body);
            reader.finish()
        });
        self.answered_read(read, now);
    }

    /// The answer to a request as a [`AnswerReader`] read it, at `now`
    /// (`None`: no answer came).
    pub fn answered_read(&mut self, answer: Option<ReadAnswer>, now: Millis) {
        let Some(answer) = answer else {
            return self.failed("the metrics API did not answer".to_string(), now);
        };
        let (status, body) = match answer {
            ReadAnswer::List(Ok(list)) => return self.measured_window(list, now),
            ReadAnswer::List(Err(error)) => return self.failed(error.to_string(), now),
            ReadAnswer::Other { status, body } => (status, body),
        };
        let body = body.as_slice();
        match status {
            404 | 503 => self.absent(MetricsState::NotServed, now),
            403 => self.absent(MetricsState::Forbidden(self.measured), now),
            _ => {
                let message = status_message(body)
                    .map(|message| format!(": {message}"))
                    .unwrap_or_default();
                self.failed(
                    format!("the metrics API answered HTTP {status}{message}"),
                    now,
                );
            }
        }
    }

    fn measured_window(&mut self, list: UsageList, now: Millis) {
        let (measured_at, window_ms) = window_of(&list);
        let next_window = measured_at.map(|start| start.saturating_add(window_ms));
        let delay = next_window
            .map(|at| at.saturating_add(AFTER_WINDOW_MS).saturating_sub(now))
            .unwrap_or(window_ms)
            .clamp(MIN_DELAY_MS, window_ms + AFTER_WINDOW_MS);
        self.next_at = now.saturating_add(delay);
        self.failure = None;
        let same = matches!(&self.state, MetricsState::Shown(shown) if **shown == list);
        if !same {
            self.set(MetricsState::Shown(Arc::new(list)));
        }
    }

    fn absent(&mut self, state: MetricsState, now: Millis) {
        self.failure = None;
        self.next_at = now.saturating_add(ABSENT_RETRY_MS);
        self.set(state);
    }

    fn failed(&mut self, why: String, now: Millis) {
        self.failure = Some(why);
        self.next_at = now.saturating_add(FAILED_RETRY_MS);
    }

    fn set(&mut self, state: MetricsState) {
        self.state = state;
        self.generation += 1;
    }
}

/// An answer of the metrics API read as it arrives: a 2xx body piece by
/// piece into its list ([`UsageListReader`]: no task reads 40 MB at
/// once), any other status's body kept (its first 64 KiB: a Status says
/// why).
#[derive(Debug)]
pub struct AnswerReader {
    keep: Keep,
    status: Option<u16>,
    list: Option<UsageListReader>,
    body: Vec<u8>,
}

/// What an [`AnswerReader`] read.
#[derive(Debug)]
pub enum ReadAnswer {
    List(Result<UsageList, UsageListError>),
    Other { status: u16, body: Vec<u8> },
}

/// The most of a failed answer's body kept.
const MAX_FAILED_BODY: usize = 64 * 1024;

impl AnswerReader {
    /// The response started with `status` (again: a retried request
    /// starts over).
    pub fn started(&mut self, status: u16) {
        self.status = Some(status);
        self.body.clear();
        self.list = (200..=299)
            .contains(&status)
            .then(|| UsageListReader::new(self.keep));
    }

    /// The next piece of the body.
    pub fn chunk(&mut self, bytes: &[u8]) {
        match &mut self.list {
            Some(list) => list.feed(bytes),
            None => {
                let room = MAX_FAILED_BODY.saturating_sub(self.body.len());
                self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
        }
    }

    /// What was read (`None` when no response started).
    pub fn finish(self) -> Option<ReadAnswer> {
        let status = self.status?;
        Some(match self.list {
            Some(list) => ReadAnswer::List(list.finish()),
            None => ReadAnswer::Other {
                status,
                body: self.body,
            },
        })
    }
}

/// When a list's newest window was measured (ms since the Unix epoch) and
/// how long it is ([`DEFAULT_WINDOW_MS`] when it does not say).
pub fn window_of(list: &UsageList) -> (Option<Millis>, Millis) {
    let window_ms = go_duration_ms(&list.window)
        .filter(|ms| *ms > 0)
        .unwrap_or(DEFAULT_WINDOW_MS);
    let at = deltascope_facts::time::parse_rfc3339_millis(&list.timestamp)
        .and_then(|start| Millis::try_from(start).ok());
    (at, window_ms)
}

/// A window as metrics-server writes it (Go's `time.Duration`: `15s`,
/// `1m0s`, `1.5s`, `500ms`) in milliseconds.
fn go_duration_ms(text: &str) -> Option<Millis> {
    deltascope_facts::time::parse_go_duration_ms(text).and_then(|ms| Millis::try_from(ms).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-28T09:00:00Z in ms.
    const NINE: Millis = 1_795_856_400_000;

    fn pods_at(timestamp: &str, cpu: &str) -> Vec<u8> {
        format!(
            r#"{{"items":[{{"metadata":{{"name":"web","namespace":"shop"}},"timestamp":"{timestamp}","window":"15s","containers":[{{"name":"c","usage":{{"cpu":"{cpu}","memory":"1Mi"}}}}]}}]}}"#
        )
        .into_bytes()
    }

    #[test]
    fn the_next_window_is_asked_for_just_after_it_starts() {
        let mut poll = MetricsPoll::new(Measured::Pods);
        assert_eq!(poll.wait_ms(NINE), 0);
        assert_eq!(poll.note().state, "waiting");
        poll.answered(
            Some((200, &pods_at("2026-11-28T09:00:00Z", "5m"))),
            NINE + 4_000,
        );
        assert_eq!(poll.note().state, "shown");
        assert_eq!(poll.note().window, "2026-11-28T09:00:00Z");
        assert_eq!(poll.generation(), 1);
        // The next window starts at 09:00:15; asked a second into it.
        assert_eq!(poll.wait_ms(NINE + 4_000), 12_000);
        // The same window again changes nothing the table shows.
        poll.answered(
            Some((200, &pods_at("2026-11-28T09:00:00Z", "5m"))),
            NINE + 14_000,
        );
        assert_eq!(poll.generation(), 1);
        // A clock ahead of the cluster's: never sooner than MIN_DELAY_MS.
        assert_eq!(poll.wait_ms(NINE + 14_000), 2_000);
        poll.answered(
            Some((200, &pods_at("2026-11-28T09:00:15Z", "7m"))),
            NINE + 16_000,
        );
        assert_eq!(poll.generation(), 2);
        assert_eq!(poll.wait_ms(NINE + 16_000), 15_000);
        // A clock far behind: at most a window and a second.
        poll.answered(
            Some((200, &pods_at("2026-11-28T09:00:15Z", "7m"))),
            NINE - 60_000,
        );
        assert_eq!(poll.wait_ms(NINE - 60_000), 16_000);
    }

    #[test]
    fn no_metrics_api_hides_the_columns_and_a_403_names_the_permission() {
        for status in [404, 503] {
            let mut poll = MetricsPoll::new(Measured::Nodes);
            poll.answered(Some((status, b"")), NINE);
            assert_eq!(poll.note().state, "none");
            assert!(poll.state().window().is_none());
            assert_eq!(poll.wait_ms(NINE), ABSENT_RETRY_MS);
        }
        let mut poll = MetricsPoll::new(Measured::Nodes);
        poll.answered(Some((403, b"")), NINE);
        let note = poll.note();
        assert_eq!(note.state, "forbidden");
        assert!(note.words.contains("nodes.metrics.k8s.io"));
    }

    #[test]
    fn a_failure_keeps_the_last_window_and_says_why() {
        let mut poll = MetricsPoll::new(Measured::Pods);
        poll.answered(Some((200, &pods_at("2026-11-28T09:00:00Z", "5m"))), NINE);
        let status = br#"{"kind":"Status","message":"etcd is sad","code":500}"#;
        poll.answered(Some((500, status)), NINE + 16_000);
        assert_eq!(poll.note().state, "shown");
        assert!(poll.note().title.contains("HTTP 500: etcd is sad"));
        assert_eq!(poll.wait_ms(NINE + 16_000), FAILED_RETRY_MS);
        poll.answered(None, NINE + 21_000);
        assert!(poll.note().title.contains("did not answer"));
        poll.answered(Some((200, b"<html>")), NINE + 26_000);
        assert!(poll.note().title.contains("not a metrics list"));
        assert_eq!(poll.generation(), 1);
        // Before any window, a failure leaves it waiting.
        let mut fresh = MetricsPoll::new(Measured::Pods);
        fresh.answered(Some((401, b"")), NINE);
        assert_eq!(fresh.note().state, "waiting");
    }

    #[test]
    fn windows_read_as_go_writes_them() {
        assert_eq!(go_duration_ms("15s"), Some(15_000));
        assert_eq!(go_duration_ms("1m0s"), Some(60_000));
        assert_eq!(go_duration_ms("1.5s"), Some(1_500));
        assert_eq!(go_duration_ms("500ms"), Some(500));
        assert_eq!(go_duration_ms(""), None);
        assert_eq!(go_duration_ms("soon"), None);
    }
}
