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
use crate::clock::Millis;
use crate::reflector::{next_request_id, Action, Input, RequestId, RequestKind};

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
#[path = "follower_tests.rs"]
mod tests;
