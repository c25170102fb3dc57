//! Why a resource's record broke off, when its gap spans more than one of
//! the recorder's epochs.
//!
//! The supervisor starts an epoch when the recorder starts (the record
//! before it broke off because nobody was running: `not-running`) and again
//! after each database outage (`database-unavailable`). A resource is
//! restored from its record at the start of each epoch; most are restored
//! within seconds, but one whose restore had not been written when the
//! next outage began (a long list under load, a write still queued) is
//! restored only in a later epoch. Its gap then runs from where its record
//! ended through several epochs, and one reason for all of it would hide
//! the first cause: a kill before an outage would read as the outage
//! alone. [`GapCauses`] splits such a gap at the epochs' starts, each part
//! with the reason of the epoch that began at its end; the last part, up
//! to the restore, has the current epoch's reason (like the catch-up after
//! it, which the tracker writes).

use deltascope_history::GapReason;

/// The recorder's epochs so far: each one's start (wall-clock ms) and why
/// the record before it broke off. Consecutive epochs with the same reason
/// are kept as the first: the spans come out the same, so the list holds at
/// most one entry per change of reason (two, in practice).
#[derive(Clone, Debug)]
pub struct GapCauses {
    starts: Vec<(i64, GapReason)>,
}

impl GapCauses {
    /// The first epoch, started at `at_ms` because of `reason`.
    pub fn starting(at_ms: i64, reason: GapReason) -> Self {
        Self {
            starts: vec![(at_ms, reason)],
        }
    }

    /// Another epoch began at `at_ms` because of `reason`.
    pub fn begin(&mut self, at_ms: i64, reason: GapReason) {
        if self.current() != reason {
            self.starts.push((at_ms, reason));
        }
    }

    /// The reason of the epoch running now.
    pub fn current(&self) -> GapReason {
        self.starts
            .last()
            .map_or(GapReason::NotRunning, |(_, reason)| *reason)
    }

    /// The gap from `from_ms` (where the record ended) to `to_ms` (the
    /// restore), as spans `(reason, from, to)` in time order: split at every
    /// epoch's start after `from_ms`, each span with the reason of the epoch
    /// starting at its end, the last with the current one.
    pub fn spans(&self, from_ms: i64, to_ms: i64) -> Vec<(GapReason, i64, i64)> {
        let mut spans: Vec<(GapReason, i64, i64)> = Vec::new();
        let mut from = from_ms;
        for &(at, reason) in self.starts.iter().filter(|(at, _)| *at > from_ms) {
            let at = at.min(to_ms);
            if at > from {
                spans.push((reason, from, at));
                from = at;
            }
        }
        let current = self.current();
        match spans.last_mut() {
            Some((reason, _, to)) if *reason == current => *to = to_ms.max(*to),
            _ => spans.push((current, from, to_ms.max(from))),
        }
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use GapReason::{DatabaseUnavailable, NotRunning};

    #[test]
    fn a_record_ended_in_this_epoch_has_one_span_of_its_reason() {
        let mut causes = GapCauses::starting(100, NotRunning);
        assert_eq!(causes.spans(40, 150), [(NotRunning, 40, 150)]);
        causes.begin(300, DatabaseUnavailable);
        assert_eq!(
            causes.spans(200, 320),
            [(DatabaseUnavailable, 200, 320)],
            "recorded in the first epoch, cut off by the outage"
        );
    }

    #[test]
    fn a_record_ended_before_a_kill_and_restored_after_an_outage_keeps_both_causes() {
        let mut causes = GapCauses::starting(100, NotRunning);
        causes.begin(300, DatabaseUnavailable);
        assert_eq!(
            causes.spans(40, 320),
            [(NotRunning, 40, 100), (DatabaseUnavailable, 100, 320)]
        );
    }

    #[test]
    fn repeated_outages_keep_the_list_short_and_the_spans_the_same() {
        let mut causes = GapCauses::starting(100, NotRunning);
        for at in [300, 400, 500] {
            causes.begin(at, DatabaseUnavailable);
        }
        assert_eq!(causes.starts.len(), 2);
        assert_eq!(
            causes.spans(40, 520),
            [(NotRunning, 40, 100), (DatabaseUnavailable, 100, 520)]
        );
        assert_eq!(causes.spans(350, 520), [(DatabaseUnavailable, 350, 520)]);
    }

    #[test]
    fn a_clock_behind_an_epochs_start_never_makes_a_span_run_backwards() {
        let causes = GapCauses::starting(100, NotRunning);
        assert_eq!(causes.spans(40, 90), [(NotRunning, 40, 90)]);
        assert_eq!(causes.spans(40, 30), [(NotRunning, 40, 40)]);
    }
}
