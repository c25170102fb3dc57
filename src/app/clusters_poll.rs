//! When the page asks serve for its clusters again
//! (`GET /_deltascope/clusters`, `crate::service::served_clusters`) — a
//! small schedule counted in the caller's steps of [`STEP_MS`], tested
//! natively. Every [`POLL_MS`]; and after [`ClustersPoll::ask_soon`] (the
//! page's store of a cluster noticed by itself that another cluster
//! answers behind its name, and stopped that cluster's views) every step,
//! [`SOON_ASKS`] times, so the app state hears of the change soon after
//! serve does and opens the view shown again, rather than at the next
//! poll.

use crate::informer::Millis;

/// How often serve is asked again.
pub const POLL_MS: Millis = 10_000;
/// The caller's step: how often it asks [`ClustersPoll::step`].
pub const STEP_MS: Millis = 1_000;
/// How many steps in a row serve is asked after [`ClustersPoll::ask_soon`].
pub const SOON_ASKS: u32 = 10;

/// The schedule: time since the last ask, and the quick asks left.
#[derive(Debug, Default)]
pub struct ClustersPoll {
    waited: Millis,
    soon_left: u32,
}

impl ClustersPoll {
    /// Serve is to be asked at each of the next [`SOON_ASKS`] steps.
    pub fn ask_soon(&mut self) {
        self.soon_left = SOON_ASKS;
    }

    /// One step of [`STEP_MS`] went by: whether to ask now.
    pub fn step(&mut self) -> bool {
        self.waited += STEP_MS;
        let soon = self.soon_left > 0;
        self.soon_left = self.soon_left.saturating_sub(1);
        let due = soon || self.waited >= POLL_MS;
        if due {
            self.waited = 0;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps (1-based) at which serve is asked, of the next `steps`.
    fn asks(poll: &mut ClustersPoll, steps: u32) -> Vec<u32> {
        (1..=steps).filter(|_| poll.step()).collect()
    }

    #[test]
    fn serve_is_asked_every_poll_period() {
        let mut poll = ClustersPoll::default();
        assert_eq!(asks(&mut poll, 30), vec![10, 20, 30]);
    }

    #[test]
    fn a_noticed_change_asks_every_step_for_a_while_then_every_period() {
        let mut poll = ClustersPoll::default();
        assert_eq!(asks(&mut poll, 4), Vec::<u32>::new());
        poll.ask_soon();
        assert_eq!(
            asks(&mut poll, 30),
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30]
        );
    }
}
