//! What the status bar says about the history deltascope serve records on its
//! side (see ARCHITECTURE.md, *The recorded history*): recording (and how many
//! resources), reading a history another recorder writes, none because the
//! database cannot be used (serve's own sentence, as a warning), or off.
//! [`ServeHistory`] is what a summary (`crate::api::history_summary`) means;
//! [`history_words`] its words and the DOM hook's state word. Whether a summary
//! is asked for and what an answer that is no summary means are decided in
//! `crate::app::serve_history`; with no serve in front of the page, nothing is
//! said at all.

use crate::api::history_summary::HistorySummary;

/// What serve does with the cluster's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeHistory {
    /// serve records into `database`; `state` is its recorder's own line
    /// ("recording 16 resources; 556 deltas stored", "recorder paused: …").
    Recording {
        state: String,
        resources: u64,
        deltas: u64,
        database: Option<String>,
    },
    /// serve reads a history it does not record (`--history-read-only`:
    /// a `deltascope record` elsewhere writes it).
    Reading { database: String },
    /// serve keeps none although one was asked for; its words say why.
    Unavailable { message: String },
    /// serve keeps none (`--history off`).
    Off,
}

impl ServeHistory {
    /// What a summary says; `unavailable` first (then serve has no database).
    pub fn of(summary: &HistorySummary) -> ServeHistory {
        if let Some(message) = summary.unavailable.as_ref().filter(|m| !m.is_empty()) {
            return ServeHistory::Unavailable {
                message: message.clone(),
            };
        }
        match (&summary.recording, &summary.history) {
            (Some(recording), database) => ServeHistory::Recording {
                state: recording.state.clone(),
                resources: recording.resources,
                deltas: recording.deltas_written,
                database: database.clone(),
            },
            (None, Some(database)) => ServeHistory::Reading {
                database: database.clone(),
            },
            (None, None) => ServeHistory::Off,
        }
    }
}

/// The status bar's item: `[data-history-status]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryWords {
    /// `recording`, `reading`, `unavailable` or `off` (the hook's value).
    pub state: &'static str,
    /// The words shown.
    pub text: String,
    /// More, on hover.
    pub title: String,
    /// Shown as a warning: no history although one was asked for, or a
    /// recorder that is not recording everything.
    pub warning: bool,
}

/// The status bar's words for what serve does with the history.
pub fn history_words(history: &ServeHistory) -> HistoryWords {
    match history {
        ServeHistory::Recording {
            state,
            resources,
            deltas,
            database,
        } => recording_words(state, *resources, *deltas, database.as_deref()),
        ServeHistory::Reading { database } => HistoryWords {
            state: "reading",
            text: "history: read-only here".to_string(),
            title: format!(
                "deltascope serve reads the cluster's history in {database}; another recorder (deltascope record) writes it"
            ),
            warning: false,
        },
        ServeHistory::Unavailable { message } => HistoryWords {
            state: "unavailable",
            text: message.clone(),
            title: format!(
                "deltascope serve keeps no history of the cluster: {message}. The page works live as before."
            ),
            warning: true,
        },
        ServeHistory::Off => HistoryWords {
            state: "off",
            text: "history: off".to_string(),
            title: "deltascope serve keeps no history of the cluster (started with --history off)"
                .to_string(),
            warning: false,
        },
    }
}

/// "history: recording 16 resources", or the recorder's own words when it
/// is starting, paused or stopped, or some of its resources fail.
fn recording_words(
    state: &str,
    resources: u64,
    deltas: u64,
    database: Option<&str>,
) -> HistoryWords {
    let healthy = state.starts_with("recording") && !state.contains("failing");
    let text = if healthy {
        format!("history: recording {}", count(resources, "resource"))
    } else {
        // serve's line without its running count ("; N deltas stored")
        let head = state.split("; ").next().unwrap_or(state).trim();
        if head.is_empty() {
            "history: recording".to_string()
        } else {
            format!("history: {head}")
        }
    };
    let into = database.map(|d| format!(" into {d}")).unwrap_or_default();
    let said = if state.is_empty() {
        String::new()
    } else {
        format!(" ({state})")
    };
    HistoryWords {
        state: "recording",
        text,
        title: format!(
            "deltascope serve records the cluster's history{into}: {} stored since it started{said}",
            count(deltas, "delta")
        ),
        warning: !healthy && state != "recorder starting" && !state.is_empty(),
    }
}

fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::history_summary::{parse_summary, RecorderSummary};

    fn recording(state: &str, resources: u64) -> ServeHistory {
        ServeHistory::of(&HistorySummary {
            history: Some("sqlite:/home/u/.local/state/deltascope/history.sqlite".into()),
            recording: Some(RecorderSummary {
                state: state.into(),
                resources,
                deltas_written: 556,
                last_write_ms: None,
            }),
            ..HistorySummary::default()
        })
    }

    #[test]
    fn recording_says_how_many_resources() {
        let words = history_words(&recording("recording 16 resources; 556 deltas stored", 16));
        assert_eq!(words.state, "recording");
        assert_eq!(words.text, "history: recording 16 resources");
        assert!(!words.warning);
        assert!(words.title.contains("556 deltas"), "{}", words.title);
        assert!(words.title.contains("history.sqlite"), "{}", words.title);
        let one = history_words(&recording("recording 1 resource; 3 deltas stored", 1));
        assert_eq!(one.text, "history: recording 1 resource");
    }

    #[test]
    fn a_recorder_in_trouble_says_so_as_a_warning() {
        let starting = history_words(&recording("recorder starting", 0));
        assert_eq!(starting.text, "history: recorder starting");
        assert!(!starting.warning, "starting is no trouble");
        let paused = history_words(&recording(
            "recorder paused: the history database is unavailable (disk full); retrying in 4 s",
            16,
        ));
        assert_eq!(
            paused.text,
            "history: recorder paused: the history database is unavailable (disk full)"
        );
        assert!(paused.warning);
        assert_eq!(paused.state, "recording");
        let failing = history_words(&recording(
            "recording 16 resources (1 failing: pods: HTTP 403); 9 deltas stored",
            16,
        ));
        assert_eq!(
            failing.text,
            "history: recording 16 resources (1 failing: pods: HTTP 403)"
        );
        assert!(failing.warning);
    }

    #[test]
    fn no_history_says_why_as_a_warning() {
        let body = br#"{"cluster":null,"history":null,"recording":null,"resources":[],"unavailable":"no history: the history database sqlite:/tmp/h.sqlite cannot be read (file is not a database); deltascope left it as it is; serving live only"}"#;
        let history = ServeHistory::of(&parse_summary(body).expect("summary"));
        let words = history_words(&history);
        assert_eq!(words.state, "unavailable");
        assert!(words.warning);
        assert_eq!(
            words.text,
            "no history: the history database sqlite:/tmp/h.sqlite cannot be read (file is not a database); deltascope left it as it is; serving live only"
        );
    }

    #[test]
    fn off_and_read_only() {
        let off = ServeHistory::of(&HistorySummary::default());
        assert_eq!(off, ServeHistory::Off);
        let words = history_words(&off);
        assert_eq!((words.state, words.text.as_str()), ("off", "history: off"));
        assert!(!words.warning);
        let reading = ServeHistory::of(&HistorySummary {
            history: Some("postgres://team@db/history".into()),
            ..HistorySummary::default()
        });
        let words = history_words(&reading);
        assert_eq!(words.state, "reading");
        assert!(words.title.contains("postgres://team@db/history"));
        assert!(!words.warning);
    }

    #[test]
    fn an_empty_unavailable_is_no_reason() {
        let summary = HistorySummary {
            unavailable: Some(String::new()),
            ..HistorySummary::default()
        };
        assert_eq!(ServeHistory::of(&summary), ServeHistory::Off);
    }
}
