//! What the logs view shows in one frame, as plain data: the rows in its
//! window (lines with their source's prefix and colour, breaks), what the
//! ring holds and evicted, each source's state and error in words, and the
//! search's matches. Built from a [`LogSession`] and which match is
//! current (the display state's decision, passed in so this layer needs
//! none of it); the view only draws it.

use super::decimal::fixed;
use crate::informer::logs::RingBounds;
use crate::model::log_session::{LogRow, LogSession, SourceInfo, SourceState};

/// One row drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFrameRow {
    /// Its index among all rows.
    pub row: usize,
    /// `pod/container`.
    pub source: String,
    pub colour: &'static str,
    /// `""` for a break.
    pub timestamp: String,
    pub text: String,
    pub is_break: bool,
    pub truncated: bool,
    pub binary: bool,
    pub matched: bool,
    pub current: bool,
}

/// A source as the view lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSourceView {
    pub label: String,
    pub colour: &'static str,
    /// `following`, `reconnecting`, `ended`, `error`, `left`.
    pub state: &'static str,
    /// What the user should read about it (the error, the break), if anything.
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogFrame {
    pub rows: Vec<LogFrameRow>,
    pub total_rows: usize,
    pub lines: usize,
    pub evicted_lines: u64,
    /// Breaks seen (every reconnect).
    pub breaks: u64,
    /// Lines sent again after reconnects and dropped as already held.
    pub repeated: u64,
    pub held_bytes: usize,
    pub bounds: RingBounds,
    pub sources: Vec<LogSourceView>,
    /// Some source still reads or will reconnect.
    pub live: bool,
    /// There is no pod to read ([`LogSession::has_no_pods`]).
    pub no_pods: bool,
    pub matches: usize,
    /// Row of the current match.
    pub current_match: Option<usize>,
}

/// The frame for rows `first..first + count` (the caller's virtual
/// scrolling picks them); `matches` are the search's rows, `current` which
/// of them is the current match (an index into `matches`).
pub fn log_frame(
    session: &LogSession,
    current: Option<usize>,
    first: usize,
    count: usize,
    matches: &[usize],
) -> LogFrame {
    let total_rows = session.row_count();
    let first = first.min(total_rows);
    let current_match = current.and_then(|i| matches.get(i).copied());
    let sources = session.sources();
    let rows = session
        .rows(first, count)
        .into_iter()
        .enumerate()
        .map(|(offset, row)| {
            let index = first + offset;
            let matched = matches.binary_search(&index).is_ok();
            frame_row(index, row, sources, matched, current_match == Some(index))
        })
        .collect();
    let ring = session.ring();
    LogFrame {
        rows,
        total_rows,
        lines: ring.len(),
        evicted_lines: ring.evicted().0,
        breaks: session.breaks_seen(),
        repeated: session.repeated(),
        held_bytes: ring.held_bytes(),
        bounds: ring.bounds(),
        sources: sources.iter().map(source_view).collect(),
        live: session.is_live(),
        no_pods: session.has_no_pods(),
        matches: matches.len(),
        current_match,
    }
}

/// Row `index` as drawn: a line with its source's prefix and colour, or a
/// break (never a match).
fn frame_row(
    index: usize,
    row: LogRow<'_>,
    sources: &[SourceInfo],
    matched: bool,
    current: bool,
) -> LogFrameRow {
    let source_of = |source: u32| sources.get(source as usize);
    match row {
        LogRow::Line(line) => {
            let source = source_of(line.source);
            LogFrameRow {
                row: index,
                source: source.map(|s| s.label()).unwrap_or_default(),
                colour: source.map(|s| s.colour).unwrap_or("inherit"),
                timestamp: line.timestamp.clone(),
                text: line.text.clone(),
                is_break: false,
                truncated: line.truncated,
                binary: line.binary,
                matched,
                current,
            }
        }
        LogRow::Break(mark) => {
            let source = source_of(mark.source);
            LogFrameRow {
                row: index,
                source: source.map(|s| s.label()).unwrap_or_default(),
                colour: source.map(|s| s.colour).unwrap_or("inherit"),
                timestamp: String::new(),
                text: format!(
                    "stream broke: {}; resumed after the last line shown",
                    mark.reason
                ),
                is_break: true,
                truncated: false,
                binary: false,
                matched: false,
                current: false,
            }
        }
    }
}

/// A source as the view lists it: its state in a word and what to read.
fn source_view(source: &SourceInfo) -> LogSourceView {
    let (state, message) = match &source.state {
        SourceState::Following => ("following", None),
        SourceState::Reconnecting { reason, .. } => {
            ("reconnecting", Some(format!("reconnecting: {reason}")))
        }
        SourceState::Ended { error: None } => ("ended", None),
        SourceState::Ended { error: Some(error) } => ("error", Some(error.to_string())),
        SourceState::Left => ("left", Some("the pod is gone (deleted or replaced)".into())),
    };
    LogSourceView {
        label: source.label(),
        colour: source.colour,
        state,
        message,
    }
}

/// `12.3 MiB`-style size.
pub fn format_bytes(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= (1 << 20) as f64 {
        format!("{} MiB", fixed(b / (1 << 20) as f64, 1))
    } else if b >= 1024.0 {
        format!("{} KiB", fixed(b / 1024.0, 1))
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::logs::LogOptions;
    use crate::informer::{Action, Input};
    use crate::model::log_session::PodLogInfo;

    #[test]
    fn follows_the_end_marks_matches_and_says_errors() {
        let mut session = LogSession::new("ns", None, LogOptions::default(), RingBounds::default());
        session.set_pods(
            &[PodLogInfo {
                name: "p".into(),
                containers: vec!["c".into()],
            }],
            0,
        );
        let Some((_, Action::Send { id, .. })) = session.poll_action() else {
            panic!("no request");
        };
        session.handle(
            0,
            Input::ResponseStarted {
                id,
                status: 200,
                retry_after_secs: None,
            },
            0,
        );
        let body = "2026-11-25T10:00:01Z a\n2026-11-25T10:00:02Z error b\n2026-11-25T10:00:03Z c\n";
        session.handle(
            0,
            Input::BodyChunk {
                id,
                bytes: body.as_bytes(),
            },
            0,
        );
        let matches = session.search_rows("error");
        // the first match is current (as on a view just opened)
        let frame = log_frame(&session, Some(0), 1, 2, &matches);
        assert_eq!(
            frame
                .rows
                .iter()
                .map(|r| r.text.as_str())
                .collect::<Vec<_>>(),
            vec!["error b", "c"]
        );
        assert!(frame.rows[0].matched && frame.rows[0].current);
        assert_eq!(
            (frame.total_rows, frame.lines, frame.current_match),
            (3, 3, Some(1))
        );
        assert_eq!(frame.sources[0].label, "p/c");

        session.handle(
            0,
            Input::Failed {
                id,
                message: "cut".into(),
            },
            0,
        );
        let frame = log_frame(&session, None, 0, 10, &[]);
        assert!(frame.rows[3].is_break);
        assert_eq!(frame.sources[0].state, "reconnecting");
        assert_eq!(format_bytes(2048), "2.0 KiB");
    }
}
