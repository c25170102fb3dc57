//! What the status line says about the resource on screen, in words that
//! are true at every moment (a user reads "synced" as "current"): "synced" only while the informer is
//! watching; once it stops watching after having synced (server unreachable,
//! 403, any error or backoff, a relist) it says since when and that the
//! table shows the last synced state; a recording playing offline says so
//! instead of "watching for changes". Also the table's empty text (never
//! "Loading…" under an error) and the history counts. Pure Rust, tested
//! natively; the DOM hooks (`data-synced`: has synced once; `data-state`:
//! the reflector's phase) keep the meaning the browser tests read, and are
//! set elsewhere.

use super::decimal::fixed;
use crate::informer::{Millis, Phase, ReflectorError};
use crate::model::plain_error::{plain_words, scope_words, PlainError};

/// What the status line knows about the informer shown.
#[derive(Debug, Clone, Copy)]
pub struct LineInput<'a> {
    pub phase: &'a Phase,
    /// The informer has synced at least once (`data-synced`).
    pub synced: bool,
    /// A recording plays offline instead of the live cluster.
    pub replaying: bool,
    /// When it stopped watching after having synced, as the clock shows it
    /// (`12:04:31`); `None` while watching or before the first sync. A
    /// watch that is sent but not open (waiting for the server) is not
    /// watching: the caller decides that (`Spans`).
    pub blind_since: Option<&'a str>,
    /// Now, on the reflector's clock (for the backoff countdown).
    pub now: Millis,
    /// The reflector's last error (the facts; the words for what happens
    /// next are [`what_happens_next`]).
    pub last_error: Option<&'a ReflectorError>,
    /// The table is the one stored in this browser (restored at load).
    pub stored: Stored<'a>,
}

/// Whether the table shown came from the browser's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stored<'a> {
    /// Listed from the server (or nothing stored).
    #[default]
    No,
    /// Being read back from the browser's database; the rows shown so far
    /// are its face, as of this clock time, if it had one.
    Restoring(Option<&'a str>),
    /// Restored, current as of this clock time; the watch has not caught
    /// up yet.
    Warm(&'a str),
}

impl<'a> Stored<'a> {
    /// From the informer: `restoring` while its stored store is read back
    /// (its face, if it had one, as of `faces_as_of`); else warm while
    /// `warm_as_of` says as of when the restored store is current.
    pub fn of(restoring: bool, warm_as_of: Option<&'a str>, faces_as_of: Option<&'a str>) -> Self {
        match (warm_as_of, restoring) {
            (_, true) => Stored::Restoring(faces_as_of),
            (Some(as_of), false) => Stored::Warm(as_of),
            (None, false) => Stored::No,
        }
    }
}

/// The words of the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    /// The state in one word, in bold.
    pub label: &'static str,
    /// How fresh the table is: "synced", "not synced yet", "disconnected
    /// since 12:04:31 — showing the last synced state", "replaying
    /// recording (offline)".
    pub freshness: String,
    /// What the informer is doing (list progress, the backoff countdown and
    /// its reason, the error).
    pub detail: String,
}

/// The status line for `input`.
pub fn status_line(input: &LineInput<'_>) -> StatusLine {
    let detail = detail(input);
    if input.replaying {
        return StatusLine {
            label: "replaying",
            freshness: "replaying recording (offline)".to_string(),
            detail: match input.phase {
                Phase::Watching => String::new(),
                _ => detail,
            },
        };
    }
    if let Some(line) = stored_line(input, &detail) {
        return line;
    }
    live_line(input, detail)
}

/// The line while a table stored in this browser is shown (restoring it,
/// or until its watch catches up).
fn stored_line(input: &LineInput<'_>, detail: &str) -> Option<StatusLine> {
    match input.stored {
        Stored::Restoring(faces_as_of) => Some(StatusLine {
            label: "restoring",
            freshness: match faces_as_of {
                Some(as_of) => format!(
                    "as of {as_of}, restoring — the rows stored in this browser; the objects and their history follow"
                ),
                None => "restoring the table stored in this browser…".to_string(),
            },
            detail: String::new(),
        }),
        Stored::Warm(as_of) => Some(StatusLine {
            label: match input.phase {
                Phase::Listing { .. } => "relisting",
                Phase::Backoff { .. } => "retrying",
                Phase::Error { .. } | Phase::Failed { .. } => "error",
                _ => "reconnecting",
            },
            freshness: format!(
                "as of {as_of}, reconnecting — the table stored in this browser"
            ),
            detail: match input.phase {
                Phase::Watching => "catching up with the changes since".to_string(),
                _ => detail.to_string(),
            },
        }),
        Stored::No => None,
    }
}

/// The line of a live table: what its informer is doing and how fresh it is.
fn live_line(input: &LineInput<'_>, detail: String) -> StatusLine {
    let blind = input.blind_since.is_some();
    let label = match input.phase {
        Phase::Idle => "starting",
        Phase::Listing { .. } => "listing",
        Phase::Watching if blind => "reconnecting",
        Phase::Watching => "watching",
        Phase::Backoff { .. } => "retrying",
        Phase::Error { .. } => "error",
        Phase::Failed { .. } => "stopped",
        Phase::Stopped => "stopped",
    };
    let last_state = |what: &str| match input.blind_since {
        Some(since) => format!("{what} since {since} — showing the last synced state"),
        None => format!("{what} — showing the last synced state"),
    };
    let freshness = match (input.phase, input.synced) {
        (Phase::Watching, true) if !blind => "synced".to_string(),
        (_, false) => match input.phase {
            Phase::Idle | Phase::Listing { .. } | Phase::Watching => "not synced yet".to_string(),
            _ => "not loaded".to_string(),
        },
        (Phase::Idle | Phase::Listing { .. }, true) => last_state("relisting"),
        (Phase::Stopped, true) => last_state("stopped"),
        (
            Phase::Watching | Phase::Backoff { .. } | Phase::Error { .. } | Phase::Failed { .. },
            true,
        ) => last_state("disconnected"),
    };
    let detail = match input.phase {
        Phase::Watching if blind => "waiting for the watch to open…".to_string(),
        _ => detail,
    };
    StatusLine {
        label,
        freshness,
        detail,
    }
}

fn detail(input: &LineInput<'_>) -> String {
    match input.phase {
        Phase::Listing {
            pages,
            items,
            bytes,
        } => format!(
            "listing: {items} items in {pages} pages ({} MB)",
            fixed(*bytes as f64 / 1e6, 1)
        ),
        Phase::Watching => "watching for changes".to_string(),
        Phase::Backoff { until, reason } => {
            let seconds = (until.saturating_sub(input.now) as f64 / 1000.0).ceil();
            format!(
                "retrying in {} s: {reason}{}",
                fixed(seconds, 0),
                next_words(input)
            )
        }
        Phase::Error { message } => format!("{message}{}", next_words(input)),
        Phase::Failed { message } => format!("not retrying: {message}{}", next_words(input)),
        Phase::Idle | Phase::Stopped => String::new(),
    }
}

/// ". " and what happens next, when the last error says.
fn next_words(input: &LineInput<'_>) -> String {
    input
        .last_error
        .map(what_happens_next)
        .filter(|words| !words.is_empty())
        .map(|words| format!(". {words}"))
        .unwrap_or_default()
}

/// What deltascope does after `error`, and what the user can do.
pub fn what_happens_next(error: &ReflectorError) -> &'static str {
    match error {
        ReflectorError::Network { .. } => {
            "Check that the API server (or kubectl proxy) is reachable; deltascope retries with backoff."
        }
        ReflectorError::Decode { .. } | ReflectorError::Framing { .. } => {
            "deltascope reconnects from the last good resourceVersion."
        }
        ReflectorError::ShortWatch { .. } => {
            "A very short watch usually means a proxy or the server is dropping connections; deltascope relists after a backoff."
        }
        ReflectorError::Http { status, .. } | ReflectorError::WatchEvent { code: status, .. } => {
            match status {
                401 => "Your session is not authenticated: reload the page with a valid token (or check the credentials of kubectl proxy).",
                400 | 422 => "Check the label and field selectors; deltascope does not send the request again as it is.",
                403 => "Ask for list/watch permission on this resource; deltascope retries slowly (at most every 5 minutes) in case access is granted.",
                404 => "Check the API group/version, or whether the CRD is installed; deltascope does not ask again on its own.",
                410 => "The resourceVersion is too old; deltascope relists.",
                429 => "The server is throttling requests; deltascope waits as asked.",
                500..=599 => "deltascope retries with backoff.",
                _ => "",
            }
        }
    }
}

/// What the view on screen knows of its informer and where it lists.
#[derive(Debug, Clone, Copy)]
pub struct ViewInput<'a> {
    pub line: LineInput<'a>,
    /// Its resource (`pods`, `deployments.apps`).
    pub resource: &'a str,
    /// The namespace it lists, if one.
    pub namespace: Option<&'a str>,
    /// Whether its resource is namespaced.
    pub namespaced: bool,
}

/// Everything the page says about the view on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewWords {
    pub line: StatusLine,
    /// The first list's progress while it runs.
    pub listing: Option<String>,
    /// Failing with 401: the sign-in notice says it, not the plain error.
    pub unauthorized: bool,
    /// The user may retry (an error or a failure).
    pub can_retry: bool,
    /// The table's text when it has no rows.
    pub empty_text: &'static str,
    /// The last error in plain words, while failing (not for 401).
    pub plain: Option<PlainError>,
}

/// What the page says about the view on screen.
pub fn view_words(input: &ViewInput<'_>) -> ViewWords {
    let LineInput {
        phase,
        synced,
        replaying,
        last_error,
        ..
    } = input.line;
    let line = status_line(&input.line);
    let listing = match phase {
        Phase::Listing { .. } if !synced => Some(line.detail.clone()),
        _ => None,
    };
    let failing = phase.is_failing();
    let unauthorized = failing && last_error.and_then(|e| e.status()) == Some(401);
    let scope = scope_words(input.namespace, input.namespaced);
    let plain = last_error
        .filter(|_| failing && !unauthorized)
        .and_then(|error| plain_words(error, input.resource, &scope));
    ViewWords {
        line,
        listing,
        unauthorized,
        can_retry: matches!(phase, Phase::Error { .. } | Phase::Failed { .. }),
        empty_text: empty_text(phase, synced, replaying),
        plain,
    }
}

/// The table's text when it has no rows: "Loading…" only while loading.
pub fn empty_text(phase: &Phase, synced: bool, replaying: bool) -> &'static str {
    match (phase, synced) {
        (_, true) => "No objects match.",
        _ if replaying => "Reading the recording…",
        (Phase::Idle | Phase::Listing { .. } | Phase::Watching, false) => "Loading…",
        (Phase::Backoff { .. }, false) => "Not loaded yet: retrying (see the status line).",
        (Phase::Error { .. } | Phase::Failed { .. }, false) => {
            "Nothing to show: the request failed (see the message above)."
        }
        (Phase::Stopped, false) => "Not loaded.",
    }
}

/// The history's counts: how many deltas it holds, and when retention
/// evicted some, how many were recorded in all.
pub fn history_words(recorded: u64, held: usize, evicted: u64) -> String {
    if evicted == 0 {
        format!("history: {recorded} deltas")
    } else {
        format!("history: {held} deltas held ({recorded} recorded, {evicted} evicted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(phase: &Phase, synced: bool, replaying: bool, since: Option<&str>) -> StatusLine {
        status_line(&LineInput {
            phase,
            synced,
            replaying,
            blind_since: since,
            now: 1_000,
            last_error: None,
            stored: Stored::No,
        })
    }

    /// Every word of the line, to check it says "synced" only when it is.
    fn all(line: &StatusLine) -> String {
        format!("{} {} {}", line.label, line.freshness, line.detail)
    }

    #[test]
    fn a_stored_table_says_it_is_stored_and_as_of_when_never_synced() {
        let stored = |phase: &Phase, stored| {
            status_line(&LineInput {
                phase,
                synced: false,
                replaying: false,
                blind_since: None,
                now: 1_000,
                last_error: None,
                stored,
            })
        };
        let restoring = stored(&Phase::Idle, Stored::Restoring(None));
        assert_eq!(restoring.label, "restoring");
        assert!(restoring.freshness.contains("stored in this browser"));
        let faces = stored(&Phase::Idle, Stored::Restoring(Some("12:03:10")));
        assert_eq!(faces.label, "restoring");
        assert!(
            faces.freshness.starts_with("as of 12:03:10, restoring"),
            "{faces:?}"
        );
        assert!(!all(&faces).contains("synced"), "{faces:?}");
        let warm = stored(&Phase::Watching, Stored::Warm("12:04:31"));
        assert_eq!(warm.label, "reconnecting");
        assert!(warm.freshness.starts_with("as of 12:04:31, reconnecting"));
        assert!(!all(&warm).contains("synced"), "{warm:?}");
        let relisting = stored(
            &Phase::Listing {
                pages: 1,
                items: 3,
                bytes: 10,
            },
            Stored::Warm("12:04:31"),
        );
        assert_eq!(relisting.label, "relisting");
        assert!(relisting.detail.starts_with("listing"));
    }

    #[test]
    fn synced_only_while_watching() {
        let watching = line(&Phase::Watching, true, false, None);
        assert_eq!(watching.freshness, "synced");
        assert_eq!(watching.detail, "watching for changes");
        let failing = [
            Phase::Backoff {
                until: 4_000,
                reason: "watching pods failed: the connection failed".into(),
            },
            Phase::Error {
                message: "listing pods failed: HTTP 403 Forbidden".into(),
            },
            Phase::Failed {
                message: "listing pods failed: HTTP 400 Bad Request".into(),
            },
        ];
        for phase in &failing {
            let words = line(phase, true, false, Some("12:04:31"));
            assert_eq!(
                words.freshness, "disconnected since 12:04:31 — showing the last synced state",
                "{phase:?}"
            );
            let text = all(&words).replace("last synced state", "");
            assert!(!text.contains("synced"), "{text}");
            assert!(!text.contains("watching for changes"), "{text}");
        }
        // A watch sent but not open (the server is gone) is no watch.
        let waiting = line(&Phase::Watching, true, false, Some("12:04:31"));
        assert_eq!(
            waiting.freshness,
            "disconnected since 12:04:31 — showing the last synced state"
        );
        assert!(!all(&waiting).contains("watching for changes"));
        let relisting = line(
            &Phase::Listing {
                pages: 1,
                items: 500,
                bytes: 0,
            },
            true,
            false,
            Some("09:00:00"),
        );
        assert_eq!(
            relisting.freshness,
            "relisting since 09:00:00 — showing the last synced state"
        );
    }

    #[test]
    fn before_the_first_sync() {
        let listing = line(
            &Phase::Listing {
                pages: 2,
                items: 1_000,
                bytes: 2_500_000,
            },
            false,
            false,
            None,
        );
        assert_eq!(listing.freshness, "not synced yet");
        assert_eq!(listing.detail, "listing: 1000 items in 2 pages (2.5 MB)");
        let backoff = line(
            &Phase::Backoff {
                until: 3_500,
                reason: "HTTP 429".into(),
            },
            false,
            false,
            None,
        );
        assert_eq!(
            (backoff.label, backoff.freshness.as_str()),
            ("retrying", "not loaded")
        );
        assert_eq!(backoff.detail, "retrying in 3 s: HTTP 429");
        let failed = line(
            &Phase::Failed {
                message: "HTTP 404".into(),
            },
            false,
            false,
            None,
        );
        assert_eq!(failed.label, "stopped");
        assert_eq!(failed.detail, "not retrying: HTTP 404");
    }

    #[test]
    fn a_recording_says_it_is_one() {
        let replay = line(&Phase::Watching, true, true, None);
        assert_eq!(replay.freshness, "replaying recording (offline)");
        assert_eq!(replay.label, "replaying");
        assert!(!all(&replay).contains("watching for changes"));
    }

    #[test]
    fn the_empty_table_says_loading_only_while_loading() {
        let listing = Phase::Listing {
            pages: 0,
            items: 0,
            bytes: 0,
        };
        assert_eq!(empty_text(&listing, false, false), "Loading…");
        assert_eq!(
            empty_text(&Phase::Watching, true, false),
            "No objects match."
        );
        for phase in [
            Phase::Failed {
                message: String::new(),
            },
            Phase::Error {
                message: String::new(),
            },
            Phase::Backoff {
                until: 0,
                reason: String::new(),
            },
        ] {
            assert!(!empty_text(&phase, false, false).contains("Loading"));
        }
    }

    #[test]
    fn a_stored_table_is_restoring_then_warm_then_not_stored() {
        assert_eq!(
            Stored::of(true, Some("12:00:00"), Some("11:59:00")),
            Stored::Restoring(Some("11:59:00"))
        );
        assert_eq!(
            Stored::of(false, Some("12:00:00"), None),
            Stored::Warm("12:00:00")
        );
        assert_eq!(Stored::of(false, None, Some("11:59:00")), Stored::No);
    }

    /// The pods list answered `status` with the server's words.
    fn list_failed(status: u16) -> ReflectorError {
        ReflectorError::Http {
            op: crate::informer::Op::List,
            resource: "pods".into(),
            status,
            reason: String::new(),
            message: "the server's words".into(),
        }
    }

    #[test]
    fn the_view_says_its_listing_its_errors_and_whether_to_sign_in() {
        let http = list_failed;
        let words = |phase: &Phase, synced: bool, error: Option<&ReflectorError>| {
            view_words(&ViewInput {
                line: LineInput {
                    phase,
                    synced,
                    replaying: false,
                    blind_since: None,
                    now: 0,
                    last_error: error,
                    stored: Stored::No,
                },
                resource: "pods",
                namespace: Some("shop"),
                namespaced: true,
            })
        };
        let listing = Phase::Listing {
            pages: 2,
            items: 500,
            bytes: 1_500_000,
        };
        let first = words(&listing, false, None);
        assert_eq!(first.listing.as_deref(), Some(first.line.detail.as_str()));
        assert_eq!(first.empty_text, "Loading…");
        assert_eq!(
            words(&listing, true, None).listing,
            None,
            "a relist is not the first list"
        );

        let error = Phase::Error {
            message: "forbidden".into(),
        };
        let forbidden = words(&error, false, Some(&http(403)));
        assert!(forbidden.can_retry && !forbidden.unauthorized);
        let plain = forbidden.plain.expect("plain words for a 403");
        assert_eq!(plain.kind, "forbidden");
        assert!(plain.title.contains("namespace shop"), "{}", plain.title);

        let signed_out = words(&error, false, Some(&http(401)));
        assert!(signed_out.unauthorized && signed_out.plain.is_none());
        let backoff = Phase::Backoff {
            until: 10,
            reason: "503".into(),
        };
        let retrying = words(&backoff, true, Some(&http(503)));
        assert!(!retrying.can_retry && retrying.plain.is_some());
        // an error no longer failing is not shown
        assert_eq!(words(&Phase::Watching, true, Some(&http(403))).plain, None);
    }

    #[test]
    fn history_says_what_it_holds() {
        assert_eq!(history_words(264, 264, 0), "history: 264 deltas");
        assert_eq!(
            history_words(264, 50, 214),
            "history: 50 deltas held (264 recorded, 214 evicted)"
        );
    }

    #[test]
    fn the_page_says_what_happens_after_an_error() {
        let http = list_failed;
        let phase = Phase::Error {
            message: http(403).to_string(),
        };
        let error = http(403);
        let words = status_line(&LineInput {
            phase: &phase,
            synced: false,
            replaying: false,
            blind_since: None,
            now: 0,
            last_error: Some(&error),
            stored: Stored::No,
        })
        .detail;
        assert!(words.contains("the server's words"), "{words}");
        assert!(
            words.contains("ask for list/watch permission")
                || words.contains("Ask for list/watch permission"),
            "{words}"
        );
        assert!(what_happens_next(&http(401)).contains("token"));
        assert!(what_happens_next(&http(400)).contains("selectors"));
        assert!(what_happens_next(&http(404)).contains("CRD"));
        let network = ReflectorError::Network {
            op: crate::informer::Op::Watch,
            resource: "pods".into(),
            message: "reset".into(),
        };
        assert!(what_happens_next(&network).contains("kubectl proxy"));
    }
}
