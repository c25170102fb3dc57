//! What a failed or refused request leads to: the error it is reported as
//! (from the response's status and `Status` body), and the wait — a
//! Retry-After, the backoff, or the slower backoff after a 403 — before the
//! next step, or a halt when asking again would fail the same way.

use super::protocol::RequestId;
use super::state::{Next, Sent, State};
use super::status::{self, Op, Phase, ReflectorError};
use super::timing::MAX_RETRY_AFTER_SECS;
use super::Reflector;
use crate::clock::Millis;

impl Reflector {
    /// Records `err`, waits (Retry-After or backoff), then does `next`; a
    /// permanent failure halts instead (nothing is sent until `retry`).
    pub(super) fn fail(
        &mut self,
        err: ReflectorError,
        next: Next,
        retry_after: Option<u64>,
        now: Millis,
    ) {
        if err.is_permanent() {
            self.status.phase = Phase::Failed {
                message: err.to_string(),
            };
            self.status.last_error = Some(err);
            self.state = State::Halted { next };
            return;
        }
        let delay = match retry_after {
            Some(s) => s.min(MAX_RETRY_AFTER_SECS) * 1000,
            None if err.status() == Some(403) => {
                self.forbidden_backoff.next_delay(now, &mut self.rng)
            }
            None => self.backoff.next_delay(now, &mut self.rng),
        }
        .max(1);
        let until = now.saturating_add(delay);
        self.status.phase = if err.needs_user() {
            Phase::Error {
                message: err.to_string(),
            }
        } else {
            Phase::Backoff {
                until,
                reason: err.to_string(),
            }
        };
        self.status.last_error = Some(err);
        self.state = State::Waiting { until, next };
    }

    /// A non-2xx response (body complete or failed).
    pub(super) fn http_failure(&mut self, now: Millis) {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Listing(l) => self.list_refused(l, now),
            State::StreamingList(s) => self.streaming_list_refused(s, now),
            State::Watching(w) => self.watch_refused(w, now),
            other => self.state = other,
        }
    }

    /// The error a refused request's status and body describe.
    pub(super) fn http_error(
        &self,
        op: Op,
        sent: &Sent,
    ) -> (ReflectorError, deltascope_facts::Status) {
        let code = sent.http_status.unwrap_or(0);
        let status = deltascope_facts::Status::from_body(&sent.body).unwrap_or_default();
        let message = if status.message.is_empty() {
            String::from_utf8_lossy(&sent.body[..sent.body.len().min(300)])
                .trim()
                .to_owned()
        } else {
            status.message.clone()
        };
        let reason = if status.reason.is_empty() {
            status::http_reason(code).to_owned()
        } else {
            status.reason.clone()
        };
        let err = ReflectorError::Http {
            op,
            resource: self.resource_name.clone(),
            status: code,
            reason,
            message,
        };
        (err, status)
    }

    pub(super) fn on_failed(&mut self, id: RequestId, message: String, now: Millis) {
        let Some(sent) = self.sent_mut(id) else {
            return;
        };
        if sent.http_status.is_some() && !sent.ok() {
            self.http_failure(now);
            return;
        }
        let (op, next) = match &self.state {
            State::Listing(l) => (Op::List, Next::List(l.from.clone())),
            State::StreamingList(s) => (Op::Watch, Next::List(s.from.clone())),
            State::Watching(w) => (Op::Watch, Next::Watch(w.rv.clone())),
            _ => return,
        };
        let err = ReflectorError::Network {
            op,
            resource: self.resource_name.clone(),
            message,
        };
        self.fail(err, next, None, now);
    }
}
