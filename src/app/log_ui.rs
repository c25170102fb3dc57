//! How the logs view shows what it holds, as part of the page's state:
//! whether it follows the end, wraps long lines, shows timestamps, what it
//! searches for and which match is current, and where it is scrolled. What
//! it reads (container, previous, tail, since) is in its route instead, so
//! a logs view is a link; what it holds is in the informers service.

use super::scroll::ScrollPosition;

/// How tall the log's scroll area is before its first scroll event.
const LOG_VIEWPORT_PX: f64 = 600.0;

#[derive(Debug, Clone, PartialEq)]
pub struct LogUi {
    /// Keep the newest line in view (off: paused where the user scrolled).
    pub following: bool,
    pub wrap: bool,
    pub timestamps: bool,
    pub search: String,
    /// Which match is current (taken modulo the matches when read, so
    /// stepping back from the first reaches the last).
    pub match_index: isize,
    pub scroll: ScrollPosition,
}

impl Default for LogUi {
    fn default() -> LogUi {
        LogUi {
            following: true,
            wrap: false,
            timestamps: false,
            search: String::new(),
            match_index: 0,
            scroll: ScrollPosition::at_top(LOG_VIEWPORT_PX),
        }
    }
}

/// What the logs view may ask of its state.
#[derive(Debug, Clone, PartialEq)]
pub enum LogUiAction {
    /// A new logs view opened: following, at the end, no search.
    Opened,
    Follow(bool),
    Wrap(bool),
    Timestamps(bool),
    Search(String),
    /// Next (+1) or previous (-1) match.
    StepMatch(isize),
    /// The user scrolled; `at_end` says whether the newest line is in view
    /// (scrolling up pauses, scrolling back to the end follows again).
    Scrolled {
        position: ScrollPosition,
        at_end: bool,
    },
}

impl LogUi {
    pub fn reduce(mut self, action: LogUiAction) -> LogUi {
        match action {
            LogUiAction::Opened => {
                let (wrap, timestamps) = (self.wrap, self.timestamps);
                self = LogUi {
                    wrap,
                    timestamps,
                    scroll: ScrollPosition::at_top(self.scroll.height),
                    ..LogUi::default()
                };
            }
            LogUiAction::Follow(on) => self.following = on,
            LogUiAction::Wrap(on) => self.wrap = on,
            LogUiAction::Timestamps(on) => self.timestamps = on,
            LogUiAction::Search(text) => {
                self.search = text;
                self.match_index = 0;
            }
            LogUiAction::StepMatch(step) => {
                self.following = false;
                self.match_index = self.match_index.wrapping_add(step);
            }
            LogUiAction::Scrolled { position, at_end } => {
                let scrolled_up = position.top < self.scroll.top - 1.0;
                self.scroll = position;
                if scrolled_up && !at_end {
                    self.following = false;
                } else if at_end && !self.following && !scrolled_up {
                    self.following = true;
                }
            }
        }
        self
    }

    /// The current match among `count` (None without matches).
    pub fn current_match(&self, count: usize) -> Option<usize> {
        (count > 0).then(|| self.match_index.rem_euclid(count as isize) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrolling_up_pauses_and_the_end_follows_again() {
        let ui = LogUi::default().reduce(LogUiAction::Scrolled {
            position: ScrollPosition {
                top: 5000.0,
                height: 600.0,
            },
            at_end: true,
        });
        assert!(ui.following);
        let ui = ui.reduce(LogUiAction::Scrolled {
            position: ScrollPosition {
                top: 3000.0,
                height: 600.0,
            },
            at_end: false,
        });
        assert!(!ui.following);
        let ui = ui.reduce(LogUiAction::Scrolled {
            position: ScrollPosition {
                top: 5400.0,
                height: 600.0,
            },
            at_end: true,
        });
        assert!(ui.following);
    }

    #[test]
    fn matches_step_around_and_opening_resets_but_keeps_display() {
        let ui = LogUi::default()
            .reduce(LogUiAction::Wrap(true))
            .reduce(LogUiAction::Search("err".into()))
            .reduce(LogUiAction::StepMatch(-1));
        assert!(!ui.following);
        assert_eq!(ui.current_match(3), Some(2));
        assert_eq!(ui.current_match(0), None);
        let ui = ui.reduce(LogUiAction::Opened);
        assert!(ui.following && ui.wrap && ui.search.is_empty());
    }
}
