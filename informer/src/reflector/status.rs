//! What the reflector reports: its [`Phase`] (the page's `data-state`),
//! its counters ([`ReflectorStatus`]) and why a request failed
//! ([`ReflectorError`], with the operation, the resource and the server's
//! own words as context).

use crate::clock::Millis;
use crate::framer::FramerError;

/// The state shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Listing {
        pages: u32,
        items: u64,
        bytes: u64,
    },
    Watching,
    Backoff {
        until: Millis,
        reason: String,
    },
    /// Failing in a way the user must act on (401, 403); retried slowly.
    Error {
        message: String,
    },
    /// The server called the request wrong (see [`ReflectorError::is_permanent`]):
    /// nothing more is sent until [`Reflector::retry`](super::Reflector::retry).
    Failed {
        message: String,
    },
    Stopped,
}

impl Phase {
    /// The page's `data-state` value (the browser tests read it). `Idle` reads as `listing` (an
    /// informer is started right after it is created) and `Stopped` as
    /// `error` (the data is no longer kept up to date).
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Idle | Phase::Listing { .. } => "listing",
            Phase::Watching => "watching",
            Phase::Backoff { .. } => "backoff",
            Phase::Error { .. } | Phase::Failed { .. } | Phase::Stopped => "error",
        }
    }

    /// Not listing or watching because of an error (retrying or not).
    pub fn is_failing(&self) -> bool {
        matches!(
            self,
            Phase::Backoff { .. } | Phase::Error { .. } | Phase::Failed { .. }
        )
    }
}

/// List or watch, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    List,
    Watch,
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Op::List => "listing",
            Op::Watch => "watching",
        })
    }
}

pub(super) fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// Why a list or watch failed: the operation, the resource and what the
/// server or the connection said. Facts only; what the page does next and
/// what the user can do are the page's words (`model::status_line`,
/// `model::plain_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReflectorError {
    #[error("{op} {resource} failed: HTTP {status} {reason}{}{message}", if message.is_empty() { "" } else { ": " })]
    Http {
        op: Op,
        resource: String,
        status: u16,
        reason: String,
        message: String,
    },
    #[error("{op} {resource} failed: the connection failed ({message})")]
    Network {
        op: Op,
        resource: String,
        message: String,
    },
    #[error("{op} {resource}: the server sent data deltascope cannot read ({message})")]
    Decode {
        op: Op,
        resource: String,
        message: String,
    },
    #[error("watching {resource}: the server reported an error in the stream: {code} {reason}: {message}")]
    WatchEvent {
        resource: String,
        code: u16,
        reason: String,
        message: String,
    },
    #[error("watching {resource}: the watch closed after {millis} ms without any event")]
    ShortWatch { resource: String, millis: Millis },
    #[error("{op} {resource}: {source}")]
    Framing {
        op: Op,
        resource: String,
        source: FramerError,
    },
}

impl ReflectorError {
    /// The HTTP status, if any.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReflectorError::Http { status, .. } => Some(*status),
            ReflectorError::WatchEvent { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// 401/403/404: retrying alone will probably not help, the user must act.
    pub fn needs_user(&self) -> bool {
        matches!(self.status(), Some(401 | 403 | 404))
    }

    /// The server called the request itself wrong — 400 (a bad selector),
    /// 404 (a resource it does not serve), 405, 422: the same request can
    /// only fail again, so the reflector stops asking until the user changes
    /// it or asks to retry. Only an answer to the request counts: an ERROR
    /// event inside a watch that opened fine is about the stream, and relists.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ReflectorError::Http {
                status: 400 | 404 | 405 | 422,
                ..
            }
        )
    }
}

/// Reflector state reported to the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorStatus {
    pub phase: Phase,
    /// The informer has synced (the initial list has been fully processed).
    pub synced: bool,
    /// The last resourceVersion seen (list, event or bookmark).
    pub last_resource_version: String,
    /// Lists started after the first one.
    pub relists: u32,
    /// Watches started after the first one.
    pub watch_restarts: u32,
    /// Watch events received (bookmarks included, errors excluded).
    pub events: u64,
    /// The most recent error; kept after recovery so the UI can say what
    /// happened (the phase tells whether it is current).
    pub last_error: Option<ReflectorError>,
}

impl Default for ReflectorStatus {
    fn default() -> Self {
        ReflectorStatus {
            phase: Phase::Idle,
            synced: false,
            last_resource_version: String::new(),
            relists: 0,
            watch_restarts: 0,
            events: 0,
            last_error: None,
        }
    }
}
