//! One container's log, followed: the requests (`pods/{name}/log` with
//! timestamps, then `sinceTime` after a break), the lines in order, each
//! break marked, and the server's refusals told apart — an unknown
//! container, one not started yet, no previous run, the pod gone, no
//! permission — because each asks something different of the user.
//!
//! Resuming without a duplicate or a gap: `sinceTime` has a resolution of
//! one second, so the server resends the lines of the last second already
//! shown. The follower remembers the timestamp of the last line it gave
//! out and how many lines had exactly that timestamp; after a reconnect it
//! drops lines older than that, and as many of those with exactly that
//! timestamp as it gave out.

use std::collections::VecDeque;

use deltascope_facts::percent::encode_query_value;
use deltascope_facts::time::format_rfc3339;
use deltascope_facts::Status;

use super::line::{LogLine, LogSplitter, DEFAULT_MAX_LOG_LINE};
use crate::backoff::{Backoff, BackoffConfig, SplitMix64};
use crate::reflector::{next_request_id, Action, Input, RequestId, RequestKind};
use crate::Millis;

/// Which container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSource {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// How to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    /// Keep the stream open for new lines.
    pub follow: bool,
    /// The previous (crashed) run of the container.
    pub previous: bool,
    /// Start with only the last N lines.
    pub tail_lines: Option<u64>,
    /// Start with only the lines of the last N seconds.
    pub since_seconds: Option<u64>,
    /// Stop after this many bytes (the server's `limitBytes`).
    pub limit_bytes: Option<u64>,
    pub max_line_bytes: usize,
    pub backoff: BackoffConfig,
    pub seed: u64,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            follow: true,
            previous: false,
            tail_lines: None,
            since_seconds: None,
            limit_bytes: None,
            max_line_bytes: DEFAULT_MAX_LOG_LINE,
            backoff: BackoffConfig {
                initial: 500,
                ..BackoffConfig::default()
            },
            seed: 0x10c5_f011_0e55_eed1,
        }
    }
}

/// Why the log cannot be read (as the server said it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("no container {container:?} in this pod: {message}")]
    UnknownContainer { container: String, message: String },
    #[error("the container has not started yet: {message}")]
    NotStarted { message: String },
    #[error("the container has no previous run: {message}")]
    PreviousUnavailable { message: String },
    #[error("the pod is gone: {message}")]
    PodGone { message: String },
    #[error("not allowed to read pods/log: {message}")]
    Forbidden { message: String },
    #[error("HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("the connection failed: {message}")]
    Network { message: String },
}

impl LogError {
    /// Asking again cannot help until something changes (the user's choice,
    /// the cluster's permissions).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            LogError::UnknownContainer { .. }
                | LogError::PreviousUnavailable { .. }
                | LogError::PodGone { .. }
                | LogError::Forbidden { .. }
        ) || matches!(self, LogError::Http { status, .. } if (400..500).contains(status) && *status != 429)
    }
}

/// What the view is told.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEvent {
    Line(LogLine),
    /// The stream broke; it reconnects from `after` (the last timestamp
    /// shown) once `retry_at` is reached.
    Break {
        source: u32,
        reason: String,
        after: String,
        retry_at: Millis,
    },
    /// Not reading any more: all was read (`follow` off), or `error`.
    Ended {
        source: u32,
        error: Option<LogError>,
    },
}

#[derive(Debug)]
enum State {
    Idle,
    Reading {
        id: RequestId,
        status: Option<u16>,
        body: Vec<u8>,
        splitter: LogSplitter,
    },
    Waiting {
        until: Millis,
    },
    Ended,
}

/// Follows one container's log.
#[derive(Debug)]
pub struct LogFollower {
    index: u32,
    source: LogSource,
    options: LogOptions,
    state: State,
    backoff: Backoff,
    rng: SplitMix64,
    /// Nanoseconds and text of the last line given out, and how many lines
    /// had exactly that timestamp.
    last: Option<(i128, String)>,
    at_last: u32,
    /// After a reconnect: lines of the last timestamp still to drop.
    skipping: Option<u32>,
    /// Lines the server sent again after a reconnect, dropped as given out.
    repeated: u64,
    actions: VecDeque<Action>,
    events: VecDeque<LogEvent>,
}

const MAX_ERROR_BODY: usize = 16 * 1024;

impl LogFollower {
    /// `index` tags this follower's lines ([`LogLine::source`]).
    pub fn new(index: u32, source: LogSource, options: LogOptions) -> LogFollower {
        LogFollower {
            index,
            backoff: Backoff::new(options.backoff.clone()),
            rng: SplitMix64::new(options.seed ^ u64::from(index)),
            source,
            options,
            state: State::Idle,
            last: None,
            at_last: 0,
            skipping: None,
            repeated: 0,
            actions: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn source(&self) -> &LogSource {
        &self.source
    }

    pub fn start(&mut self, now: Millis) {
        if matches!(self.state, State::Idle) {
            self.send(now);
        }
    }

    /// Stops reading; nothing is sent afterwards.
    pub fn stop(&mut self) {
        if let State::Reading { id, .. } = self.state {
            self.actions.push_back(Action::Cancel { id });
        }
        self.state = State::Ended;
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<LogEvent> {
        self.events.pop_front()
    }

    /// When to call `handle(Input::Tick)` without other input.
    pub fn poll_timeout(&self) -> Option<Millis> {
        match self.state {
            State::Waiting { until } => Some(until),
            _ => None,
        }
    }

    /// Lines the server sent again after reconnects and that were dropped
    /// as already given out (so a count of lines served can be checked).
    pub fn repeated(&self) -> u64 {
        self.repeated
    }

    pub fn is_ended(&self) -> bool {
        matches!(self.state, State::Ended)
    }

    /// The request a (re)connect sends.
    pub fn path_and_query(&self) -> String {
        let s = &self.source;
        let mut q = format!(
            "/api/v1/namespaces/{}/pods/{}/log?container={}&timestamps=true",
            encode_query_value(&s.namespace),
            encode_query_value(&s.pod),
            encode_query_value(&s.container)
        );
        let o = &self.options;
        if o.follow {
            q.push_str("&follow=true");
        }
        if o.previous {
            q.push_str("&previous=true");
        }
        match &self.last {
            Some((nanos, _)) => {
                let seconds = nanos.div_euclid(1_000_000_000) as i64;
                if let Some(since) = format_rfc3339(seconds) {
                    q.push_str(&format!("&sinceTime={}", encode_query_value(&since)));
                }
            }
            None => {
                if let Some(n) = o.tail_lines {
                    q.push_str(&format!("&tailLines={n}"));
                }
                if let Some(n) = o.since_seconds {
                    q.push_str(&format!("&sinceSeconds={n}"));
                }
            }
        }
        if let Some(n) = o.limit_bytes {
            q.push_str(&format!("&limitBytes={n}"));
        }
        q
    }

    fn send(&mut self, _now: Millis) {
        let id = next_request_id();
        self.skipping = self.last.as_ref().map(|_| self.at_last);
        self.actions.push_back(Action::Send {
            id,
            kind: RequestKind::Watch,
            path_and_query: self.path_and_query(),
            accept: Some("text/plain"),
        });
        self.state = State::Reading {
            id,
            status: None,
            body: Vec::new(),
            splitter: LogSplitter::new(self.options.max_line_bytes),
        };
    }

    pub fn handle(&mut self, input: Input<'_>, now: Millis) {
        match input {
            Input::ResponseStarted { id, status, .. } => {
                if let State::Reading {
                    id: current,
                    status: s,
                    ..
                } = &mut self.state
                {
                    if *current == id {
                        *s = Some(status);
                    }
                }
            }
            Input::BodyChunk { id, bytes } => self.on_chunk(id, bytes),
            Input::BodyEnd { id } => self.on_end(id, now),
            Input::Failed { id, message } => {
                if self.is_current(id) {
                    self.broke(LogError::Network { message }, now);
                }
            }
            Input::Tick => {
                if let State::Waiting { until } = self.state {
                    if now >= until {
                        self.send(now);
                    }
                }
            }
        }
    }

    fn is_current(&self, id: RequestId) -> bool {
        matches!(&self.state, State::Reading { id: current, .. } if *current == id)
    }

    fn on_chunk(&mut self, id: RequestId, bytes: &[u8]) {
        let State::Reading {
            id: current,
            status,
            body,
            splitter,
        } = &mut self.state
        else {
            return;
        };
        if *current != id {
            return;
        }
        if !matches!(status, Some(200..=299)) {
            let room = MAX_ERROR_BODY.saturating_sub(body.len());
            body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            return;
        }
        let mut lines = Vec::new();
        splitter.push(bytes, |line, truncated| {
            lines.push(LogLine::parse(0, line, truncated))
        });
        for line in lines {
            self.give_out(line);
        }
    }

    fn on_end(&mut self, id: RequestId, now: Millis) {
        if !self.is_current(id) {
            return;
        }
        let State::Reading {
            status,
            body,
            splitter,
            ..
        } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return;
        };
        match status {
            Some(200..=299) => {
                if let Some((line, truncated)) = splitter.into_finish() {
                    self.give_out(LogLine::parse(0, &line, truncated));
                }
                if self.options.follow {
                    let reason = "the log stream ended (the container stopped or restarted, or the server closed it)";
                    self.wait_and_reconnect(reason.to_owned(), now);
                } else {
                    self.end(None);
                }
            }
            Some(code) => self.refused(code, &body, now),
            None => self.broke(
                LogError::Network {
                    message: "the server closed the connection before answering".into(),
                },
                now,
            ),
        }
    }

    /// Hands a line to the view unless it repeats one already given out.
    fn give_out(&mut self, mut line: LogLine) {
        line.source = self.index;
        if let (Some(skip), Some((last, _))) = (self.skipping, &self.last) {
            match line.nanos {
                Some(n) if n < *last => {
                    self.repeated += 1;
                    return;
                }
                Some(n) if n == *last && skip > 0 => {
                    self.skipping = Some(skip - 1);
                    self.repeated += 1;
                    return;
                }
                None => {
                    self.repeated += 1;
                    return;
                }
                _ => self.skipping = None,
            }
        }
        if let Some(nanos) = line.nanos {
            match &self.last {
                Some((last, _)) if *last == nanos => self.at_last += 1,
                _ => {
                    self.last = Some((nanos, line.timestamp.clone()));
                    self.at_last = 1;
                }
            }
        }
        self.backoff.reset();
        self.events.push_back(LogEvent::Line(line));
    }

    fn refused(&mut self, code: u16, body: &[u8], now: Millis) {
        let status = Status::from_body(body).unwrap_or_default();
        let message = if status.message.is_empty() {
            String::from_utf8_lossy(&body[..body.len().min(300)])
                .trim()
                .to_owned()
        } else {
            status.message
        };
        let error = match code {
            404 => LogError::PodGone { message },
            403 => LogError::Forbidden { message },
            400 if message.contains("is not valid for pod") => LogError::UnknownContainer {
                container: self.source.container.clone(),
                message,
            },
            400 if message.contains("previous terminated container") => {
                LogError::PreviousUnavailable { message }
            }
            400 if message.contains("waiting to start")
                || message.contains("ContainerCreating") =>
            {
                LogError::NotStarted { message }
            }
            status => LogError::Http { status, message },
        };
        if error.is_permanent() {
            self.end(Some(error));
        } else {
            self.broke(error, now);
        }
    }

    fn broke(&mut self, error: LogError, now: Millis) {
        self.wait_and_reconnect(error.to_string(), now);
    }

    fn wait_and_reconnect(&mut self, reason: String, now: Millis) {
        let until = now.saturating_add(self.backoff.next_delay(now, &mut self.rng).max(1));
        self.events.push_back(LogEvent::Break {
            source: self.index,
            reason,
            after: self
                .last
                .as_ref()
                .map(|(_, ts)| ts.clone())
                .unwrap_or_default(),
            retry_at: until,
        });
        self.state = State::Waiting { until };
    }

    fn end(&mut self, error: Option<LogError>) {
        self.state = State::Ended;
        self.events.push_back(LogEvent::Ended {
            source: self.index,
            error,
        });
    }
}

impl LogSplitter {
    /// [`LogSplitter::finish`] for a splitter about to be dropped.
    fn into_finish(mut self) -> Option<(Vec<u8>, bool)> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follower(options: LogOptions) -> LogFollower {
        let source = LogSource {
            namespace: "shop".into(),
            pod: "web-1".into(),
            container: "web".into(),
        };
        LogFollower::new(2, source, options)
    }

    /// The single Send queued, as (id, path).
    fn sent(f: &mut LogFollower) -> (RequestId, String) {
        let mut out = None;
        while let Some(action) = f.poll_action() {
            if let Action::Send {
                id, path_and_query, ..
            } = action
            {
                out = Some((id, path_and_query));
            }
        }
        out.expect("a request was sent")
    }

    fn events(f: &mut LogFollower) -> Vec<LogEvent> {
        std::iter::from_fn(|| f.poll_event()).collect()
    }

    fn texts(events: &[LogEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                LogEvent::Line(l) => Some(l.text.clone()),
                _ => None,
            })
            .collect()
    }

    fn answer(f: &mut LogFollower, id: RequestId, status: u16, body: &[u8], now: Millis) {
        f.handle(
            Input::ResponseStarted {
                id,
                status,
                retry_after_secs: None,
            },
            now,
        );
        f.handle(Input::BodyChunk { id, bytes: body }, now);
    }

    #[test]
    fn first_request_asks_for_what_the_user_chose() {
        let mut f = follower(LogOptions {
            previous: true,
            tail_lines: Some(100),
            since_seconds: Some(60),
            limit_bytes: Some(4096),
            ..LogOptions::default()
        });
        f.start(0);
        let (_, path) = sent(&mut f);
        assert_eq!(
            path,
            "/api/v1/namespaces/shop/pods/web-1/log?container=web&timestamps=true&follow=true\
             &previous=true&tailLines=100&sinceSeconds=60&limitBytes=4096"
        );
    }

    #[test]
    fn a_break_resumes_from_the_last_second_without_duplicates_or_gaps() {
        let mut f = follower(LogOptions::default());
        f.start(0);
        let (id, _) = sent(&mut f);
        answer(
            &mut f,
            id,
            200,
            b"2026-11-25T10:00:00.100000000Z one\n2026-11-25T10:00:01.500000000Z two\n\
              2026-11-25T10:00:01.500000000Z two-bis\n2026-11-25T10:00:0",
            0,
        );
        f.handle(
            Input::Failed {
                id,
                message: "connection reset".into(),
            },
            10,
        );
        let got = events(&mut f);
        assert_eq!(
            texts(&got),
            vec!["one", "two", "two-bis"],
            "the partial line is not given out"
        );
        let Some(LogEvent::Break {
            after,
            retry_at,
            reason,
            ..
        }) = got.last().cloned()
        else {
            panic!("a break is marked: {got:?}");
        };
        assert_eq!(after, "2026-11-25T10:00:01.500000000Z");
        assert!(reason.contains("connection reset"));
        assert_eq!(f.poll_timeout(), Some(retry_at));

        f.handle(Input::Tick, retry_at);
        let (id, path) = sent(&mut f);
        assert!(
            path.ends_with("&sinceTime=2026-11-25T10%3A00%3A01Z"),
            "{path}"
        );
        assert!(!path.contains("tailLines"));
        // the server resends the whole second, then new lines, one of them
        // with the same timestamp as the last one shown
        answer(
            &mut f,
            id,
            200,
            b"2026-11-25T10:00:01.200000000Z one-and-a-bit\n2026-11-25T10:00:01.500000000Z two\n\
              2026-11-25T10:00:01.500000000Z two-bis\n2026-11-25T10:00:01.500000000Z two-ter\n\
              2026-11-25T10:00:02.000000000Z three\n",
            retry_at,
        );
        assert_eq!(texts(&events(&mut f)), vec!["two-ter", "three"]);
        assert_eq!(
            f.repeated(),
            3,
            "one-and-a-bit, two and two-bis were sent again"
        );
    }

    #[test]
    fn a_finished_read_ends_and_a_followed_one_reconnects() {
        let mut once = follower(LogOptions {
            follow: false,
            ..LogOptions::default()
        });
        once.start(0);
        let (id, path) = sent(&mut once);
        assert!(!path.contains("follow"));
        answer(
            &mut once,
            id,
            200,
            b"2026-11-25T10:00:00Z last line without newline",
            0,
        );
        once.handle(Input::BodyEnd { id }, 1);
        let got = events(&mut once);
        assert_eq!(texts(&got), vec!["last line without newline"]);
        assert_eq!(
            got.last(),
            Some(&LogEvent::Ended {
                source: 2,
                error: None
            })
        );
        assert!(once.is_ended());

        let mut followed = follower(LogOptions::default());
        followed.start(0);
        let (id, _) = sent(&mut followed);
        answer(&mut followed, id, 200, b"2026-11-25T10:00:00Z a\n", 0);
        followed.handle(Input::BodyEnd { id }, 5);
        assert!(matches!(
            events(&mut followed).last(),
            Some(LogEvent::Break { .. })
        ));
        assert!(followed.poll_timeout().is_some(), "follows again");
    }

    fn refusal(code: u16, message: &str) -> Option<LogEvent> {
        let mut f = follower(LogOptions::default());
        f.start(0);
        let (id, _) = sent(&mut f);
        let body = Status::failure(code, "BadRequest", message).to_body();
        answer(&mut f, id, code, &body, 0);
        f.handle(Input::BodyEnd { id }, 1);
        events(&mut f).pop()
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        let ended = |event: Option<LogEvent>| match event {
            Some(LogEvent::Ended { error: Some(e), .. }) => Some(e),
            _ => None,
        };
        assert!(matches!(
            ended(refusal(400, "container nosuch is not valid for pod web-1")),
            Some(LogError::UnknownContainer { container, .. }) if container == "web"
        ));
        assert!(matches!(
            ended(refusal(
                400,
                "previous terminated container \"web\" in pod \"web-1\" not found"
            )),
            Some(LogError::PreviousUnavailable { .. })
        ));
        assert!(matches!(
            ended(refusal(404, "pods \"web-1\" not found")),
            Some(LogError::PodGone { .. })
        ));
        assert!(matches!(
            ended(refusal(403, "forbidden")),
            Some(LogError::Forbidden { .. })
        ));
        // not started yet, or a server error: wait and try again
        let waiting = refusal(
            400,
            "container \"web\" in pod \"web-1\" is waiting to start: ContainerCreating",
        );
        assert!(
            matches!(&waiting, Some(LogEvent::Break { reason, .. }) if reason.contains("not started yet")),
            "{waiting:?}"
        );
        assert!(matches!(
            refusal(503, "unavailable"),
            Some(LogEvent::Break { .. })
        ));
    }

    #[test]
    fn stopping_cancels_and_later_input_is_ignored() {
        let mut f = follower(LogOptions::default());
        f.start(0);
        let (id, _) = sent(&mut f);
        f.stop();
        assert_eq!(f.poll_action(), Some(Action::Cancel { id }));
        answer(&mut f, id, 200, b"2026-11-25T10:00:00Z late\n", 1);
        assert!(events(&mut f).is_empty());
        f.handle(Input::Tick, 1_000_000);
        assert_eq!(f.poll_action(), None);
    }

    /// A log of `n` lines whose timestamps repeat and jump (gaps as
    /// generated), as the server would send it from `since` seconds on.
    fn server_log(gaps: &[u8], since: Option<i64>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut nanos: i128 = 1_795_000_000 * 1_000_000_000;
        for (i, gap) in gaps.iter().enumerate() {
            nanos += i128::from(*gap % 4) * 300_000_000; // 0: same timestamp
            if since.is_some_and(|s| nanos < i128::from(s) * 1_000_000_000) {
                continue;
            }
            let seconds = nanos.div_euclid(1_000_000_000) as i64;
            let ts = format!(
                "{}.{:09}Z",
                format_rfc3339(seconds)
                    .unwrap_or_default()
                    .trim_end_matches('Z'),
                nanos.rem_euclid(1_000_000_000)
            );
            out.extend_from_slice(format!("{ts} line {i}\n").as_bytes());
        }
        out
    }

    proptest::proptest! {
        /// However the stream breaks (after any byte, any number of times),
        /// what the view gets is the log, each line once, in order.
        #[test]
        fn breaks_lose_and_repeat_nothing(
            gaps in proptest::collection::vec(0u8..8, 1..60),
            cuts in proptest::collection::vec(0usize..4000, 0..5),
        ) {
            let whole = server_log(&gaps, None);
            let mut f = follower(LogOptions::default());
            f.start(0);
            let mut now = 0;
            let mut given = Vec::new();
            let mut cuts = cuts.into_iter();
            loop {
                let (id, path) = sent(&mut f);
                let since = path.split("sinceTime=").nth(1).map(|t| {
                    let t = deltascope_facts::percent::decode_query_value(t).unwrap_or_default();
                    deltascope_facts::time::parse_rfc3339(&t).unwrap_or(0)
                });
                let body = server_log(&gaps, since);
                match cuts.next().filter(|c| *c < body.len()) {
                    Some(cut) => {
                        answer(&mut f, id, 200, &body[..cut], now);
                        f.handle(Input::Failed { id, message: "cut".into() }, now);
                        given.extend(texts(&events(&mut f)));
                        now = f.poll_timeout().unwrap_or(now);
                        f.handle(Input::Tick, now);
                    }
                    None => {
                        answer(&mut f, id, 200, &body, now);
                        f.handle(Input::BodyEnd { id }, now);
                        given.extend(texts(&events(&mut f)));
                        break;
                    }
                }
            }
            let want: Vec<String> = String::from_utf8_lossy(&whole)
                .lines()
                .map(|l| l.split_once(' ').map(|x| x.1).unwrap_or("").to_owned())
                .collect();
            proptest::prop_assert_eq!(given, want);
        }
    }
}
