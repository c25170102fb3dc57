//! When the page asks deltascope serve about the history it records
//! (`GET /_deltascope/history/summary`), and what an answer means for the
//! status bar — a small state machine on the caller's clock, tested
//! natively. The page asks at load, every [`REFRESH_EVERY_MS`], and at
//! once after its channel to serve reconnects (serve may have been
//! restarted with other flags); never while the channel is down (the
//! request would only fail). An answer that says the route is not there —
//! an older serve (403), `trunk serve` straight in front of `kubectl proxy`
//! (its HTML page, or the apiserver's 404) — hides the item and stops the
//! periodic asking (a reconnect asks again); an answer that tells nothing
//! (no answer at all, 401, a proxy's 502) leaves the item as it is.

use crate::api::history_summary::{parse_summary, status_message};
use crate::informer::Millis;
use crate::model::connection::ChannelStatus;
use crate::model::serve_history::{ServeHistories, ServeHistory};

/// A summary is asked for again this often.
pub const REFRESH_EVERY_MS: Millis = 30_000;

/// What an answer means for the status bar's history item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Show this.
    Show(ServeHistories),
    /// serve has no such route (or there is no serve): show nothing.
    Absent,
    /// The answer tells nothing: keep what is shown.
    Keep,
}

/// What an answer to the summary request means: `answer` is its status and
/// body, `None` when the request failed (no connection).
pub fn verdict(answer: Option<(u16, &[u8])>) -> Verdict {
    let Some((status, body)) = answer else {
        return Verdict::Keep;
    };
    let history_said = || status_message(body).filter(|message| message.contains("history"));
    match status {
        200..=299 => match parse_summary(body) {
            Ok(summary) => Verdict::Show(ServeHistories::of(&summary)),
            Err(_) => Verdict::Absent,
        },
        // serve's own "no history" Status names the history; the
        // apiserver's 404 behind `kubectl proxy` does not.
        404 => match history_said() {
            Some(message) if message.contains("--history off") => {
                Verdict::Show(ServeHistories::only(ServeHistory::Off))
            }
            Some(message) => {
                Verdict::Show(ServeHistories::only(ServeHistory::Unavailable { message }))
            }
            None => Verdict::Absent,
        },
        // An older serve refuses the path; a server that does not know it.
        403 | 400 | 405 | 410 => Verdict::Absent,
        // The database failed (503 with serve's Status): a warning.
        500..=599 => match history_said() {
            Some(message) => {
                Verdict::Show(ServeHistories::only(ServeHistory::Unavailable { message }))
            }
            None => Verdict::Keep,
        },
        // 401 (the session ended: the page says so elsewhere), 429, …
        _ => Verdict::Keep,
    }
}

/// When to ask for the summary.
#[derive(Debug, Clone)]
pub struct HistoryPoll {
    /// When the next request is due (`None`: only a reconnect brings one).
    next_at: Option<Millis>,
    running: bool,
    /// The channel reconnected while a request ran: ask again after it.
    again: bool,
    /// The channel has been open at least once.
    saw_open: bool,
    /// The channel was open and is not now (broken, reconnecting).
    down: bool,
    asked: u64,
}

impl Default for HistoryPoll {
    fn default() -> Self {
        HistoryPoll::new()
    }
}

impl HistoryPoll {
    /// Due at once (at page load).
    pub fn new() -> HistoryPoll {
        HistoryPoll {
            next_at: Some(0),
            running: false,
            again: false,
            saw_open: false,
            down: false,
            asked: 0,
        }
    }

    /// The channel's state now: a reconnect (open again after it was open
    /// and went down) makes a request due at once.
    pub fn channel_seen(&mut self, status: &ChannelStatus, now: Millis) {
        let open = matches!(status, ChannelStatus::Open);
        if open && self.down {
            if self.running {
                self.again = true;
            } else {
                self.next_at = Some(now);
            }
        }
        self.down = self.saw_open
            && matches!(
                status,
                ChannelStatus::Broken { .. } | ChannelStatus::Connecting
            );
        self.saw_open |= open;
    }

    /// A request should start now.
    pub fn due(&self, now: Millis) -> bool {
        !self.running && !self.down && self.next_at.is_some_and(|at| now >= at)
    }

    /// A request started.
    pub fn started(&mut self) {
        self.running = true;
        self.next_at = None;
    }

    /// The request ended at `now` with `verdict`.
    pub fn finished(&mut self, verdict: &Verdict, now: Millis) {
        self.running = false;
        self.asked += 1;
        self.next_at = if std::mem::take(&mut self.again) {
            Some(now)
        } else {
            match verdict {
                Verdict::Absent => None,
                Verdict::Show(_) | Verdict::Keep => Some(now.saturating_add(REFRESH_EVERY_MS)),
            }
        };
    }

    /// Requests finished so far.
    pub fn asked(&self) -> u64 {
        self.asked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDING: &[u8] = br#"{"cluster":"c","history":"sqlite:/tmp/h.sqlite","recording":{"deltasWritten":5,"lastWriteMs":1,"resources":16,"state":"recording 16 resources; 5 deltas stored"},"resources":[],"unavailable":null}"#;

    fn broken() -> ChannelStatus {
        ChannelStatus::Broken {
            since_unix_ms: 0.0,
            reason: "the connection failed".into(),
        }
    }

    #[test]
    fn a_summary_is_shown() {
        match verdict(Some((200, RECORDING))) {
            Verdict::Show(ServeHistories {
                default: ServeHistory::Recording { resources, .. },
                ..
            }) => assert_eq!(resources, 16),
            other => panic!("{other:?}"),
        }
        let off = br#"{"cluster":null,"history":null,"recording":null,"resources":[],"unavailable":null}"#;
        let off_everywhere = Verdict::Show(ServeHistories::only(ServeHistory::Off));
        assert_eq!(verdict(Some((200, off))), off_everywhere);
    }

    #[test]
    fn no_serve_or_an_older_one_shows_nothing() {
        // trunk serve answers an unknown path with the page itself
        let html = b"<!DOCTYPE html><html><body>deltascope</body></html>";
        assert_eq!(verdict(Some((200, html))), Verdict::Absent);
        // kubectl proxy passes the path to the apiserver
        let apiserver = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#;
        assert_eq!(verdict(Some((404, apiserver))), Verdict::Absent);
        assert_eq!(verdict(Some((404, b"404 page not found"))), Verdict::Absent);
        // an older serve refuses what it does not know
        let older = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"deltascope refuses this path: no such deltascope endpoint","reason":"Forbidden","code":403}"#;
        assert_eq!(verdict(Some((403, older))), Verdict::Absent);
    }

    #[test]
    fn serve_saying_no_history_is_off_or_a_warning() {
        let off = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"this serve keeps no history (--history off)","reason":"NotFound","code":404}"#;
        let off_everywhere = Verdict::Show(ServeHistories::only(ServeHistory::Off));
        assert_eq!(verdict(Some((404, off))), off_everywhere);
        let failing = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the history database cannot be read now: disk I/O error","reason":"ServiceUnavailable","code":503}"#;
        assert_eq!(
            verdict(Some((503, failing))),
            Verdict::Show(ServeHistories::only(ServeHistory::Unavailable {
                message: "the history database cannot be read now: disk I/O error".into()
            }))
        );
    }

    #[test]
    fn an_answer_that_tells_nothing_keeps_the_item() {
        assert_eq!(verdict(None), Verdict::Keep);
        assert_eq!(verdict(Some((401, b""))), Verdict::Keep);
        assert_eq!(verdict(Some((502, b"Bad Gateway"))), Verdict::Keep);
        assert_eq!(verdict(Some((429, b""))), Verdict::Keep);
    }

    #[test]
    fn asks_at_load_then_every_thirty_seconds() {
        let mut poll = HistoryPoll::new();
        assert!(poll.due(0));
        poll.started();
        assert!(!poll.due(0), "one at a time");
        poll.finished(&Verdict::Keep, 200);
        assert!(!poll.due(200 + REFRESH_EVERY_MS - 1));
        assert!(poll.due(200 + REFRESH_EVERY_MS));
        poll.started();
        poll.finished(&verdict(Some((200, RECORDING))), 40_000);
        assert!(poll.due(40_000 + REFRESH_EVERY_MS));
        assert_eq!(poll.asked(), 2);
    }

    #[test]
    fn a_reconnect_asks_at_once_and_a_broken_channel_waits() {
        let mut poll = HistoryPoll::new();
        poll.channel_seen(&ChannelStatus::Idle, 0);
        poll.channel_seen(&ChannelStatus::Connecting, 0);
        assert!(
            poll.due(0),
            "connecting at load does not hold the first request"
        );
        poll.started();
        poll.channel_seen(&ChannelStatus::Open, 100);
        poll.finished(&Verdict::Keep, 150);
        assert!(!poll.due(1_000), "the first open is no reconnect");
        // serve restarts: the channel breaks, and nothing is asked meanwhile
        poll.channel_seen(&broken(), 40_000);
        assert!(!poll.due(40_000));
        poll.channel_seen(&ChannelStatus::Connecting, 41_000);
        assert!(!poll.due(41_000));
        poll.channel_seen(&ChannelStatus::Open, 42_000);
        assert!(poll.due(42_000), "asked at once after the reconnect");
        // a reconnect while a request runs asks again after it
        poll.started();
        poll.channel_seen(&broken(), 42_100);
        poll.channel_seen(&ChannelStatus::Open, 42_200);
        poll.finished(&Verdict::Keep, 42_300);
        assert!(poll.due(42_300));
    }

    #[test]
    fn an_absent_route_is_not_asked_again_until_a_reconnect() {
        let mut poll = HistoryPoll::new();
        poll.started();
        poll.finished(&Verdict::Absent, 10);
        assert!(!poll.due(10 + 10 * REFRESH_EVERY_MS));
        // without a channel (trunk straight to kubectl proxy) it stays quiet
        poll.channel_seen(
            &ChannelStatus::Unavailable {
                reason: "404".into(),
            },
            20,
        );
        assert!(!poll.due(10 * REFRESH_EVERY_MS));
        // serve restarted (perhaps a newer one): the channel comes back
        let mut poll = HistoryPoll::new();
        poll.channel_seen(&ChannelStatus::Open, 0);
        poll.started();
        poll.finished(&Verdict::Absent, 10);
        poll.channel_seen(&broken(), 1_000);
        poll.channel_seen(&ChannelStatus::Open, 2_000);
        assert!(poll.due(2_000));
    }
}
