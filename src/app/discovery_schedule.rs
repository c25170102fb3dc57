//! When the page asks the cluster what it serves (API discovery) again, as a
//! small state machine on the caller's clock, so it is tested natively.
//! Discovery runs at load; a failure (one 429, an unreachable
//! server) is retried with backoff (Retry-After honoured) and its message
//! is shown only until a run succeeds; a run that succeeds is repeated every
//! [`REFRESH_EVERY_MS`]; and a change in the cluster's
//! CustomResourceDefinitions (seen by a watch of them, summarised as the
//! digest of their keys and resourceVersions) runs it again at once, so a
//! CRD created or deleted while the page is open appears in (or leaves) the
//! picker and the `:` commands without a reload.

use crate::informer::{Backoff, BackoffConfig, Millis, SplitMix64};

/// A discovery that succeeded is repeated this often.
pub const REFRESH_EVERY_MS: Millis = 5 * 60_000;
/// After a CRD change, discovery runs this much later (a CRD is served a
/// moment after it is created; several changes in a burst make one run).
pub const CRD_SETTLE_MS: Millis = 1_000;
/// Longest Retry-After honoured.
const MAX_RETRY_AFTER_MS: Millis = 60_000;

/// How a discovery run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every group answered.
    Complete,
    /// The resources found are usable, but some groups failed (named in the message).
    Partial(String),
    /// Nothing usable: the previous resources stay.
    Failed {
        message: String,
        /// The server's Retry-After, in milliseconds.
        retry_after: Option<Millis>,
    },
}

/// The discovery schedule.
#[derive(Debug)]
pub struct DiscoveryRefresh {
    backoff: Backoff,
    rng: SplitMix64,
    /// When the next run is due (`None` while one runs).
    next_at: Option<Millis>,
    running: bool,
    /// A CRD changed while a run was in flight: run again after it.
    again: bool,
    /// The CRDs' digest when last seen.
    crds: Option<String>,
    /// The last run's problem, shown until a run succeeds.
    problem: Option<String>,
    runs: u64,
}

impl DiscoveryRefresh {
    /// Due at once (the first run, at page load).
    pub fn new(seed: u64) -> DiscoveryRefresh {
        DiscoveryRefresh {
            backoff: Backoff::new(BackoffConfig::default()),
            rng: SplitMix64::new(seed),
            next_at: Some(0),
            running: false,
            again: false,
            crds: None,
            problem: None,
            runs: 0,
        }
    }

    /// A run should start now.
    pub fn due(&self, now: Millis) -> bool {
        !self.running && self.next_at.is_some_and(|at| now >= at)
    }

    /// When the next run is due, if none is running.
    pub fn next_at(&self) -> Option<Millis> {
        self.next_at.filter(|_| !self.running)
    }

    /// A run started.
    pub fn started(&mut self) {
        self.running = true;
        self.next_at = None;
    }

    /// A run ended at `now`: schedules the next one.
    pub fn finished(&mut self, outcome: &Outcome, now: Millis) {
        self.running = false;
        self.runs += 1;
        let wait = match outcome {
            Outcome::Complete => {
                self.backoff.reset();
                self.problem = None;
                REFRESH_EVERY_MS
            }
            Outcome::Partial(message) => {
                self.problem = Some(message.clone());
                self.backoff.next_delay(now, &mut self.rng)
            }
            Outcome::Failed {
                message,
                retry_after,
            } => {
                self.problem = Some(message.clone());
                match retry_after {
                    Some(ms) => (*ms).clamp(1, MAX_RETRY_AFTER_MS),
                    None => self.backoff.next_delay(now, &mut self.rng),
                }
            }
        };
        let wait = if std::mem::take(&mut self.again) {
            wait.min(CRD_SETTLE_MS)
        } else {
            wait
        };
        self.next_at = Some(now.saturating_add(wait));
    }

    /// The CRDs now have `digest` (their keys and resourceVersions). True
    /// when that is a change, which brings the next run forward. The first
    /// digest seen is the baseline.
    pub fn crds_seen(&mut self, digest: &str, now: Millis) -> bool {
        let changed = match &self.crds {
            None => false,
            Some(known) => known != digest,
        };
        self.crds = Some(digest.to_string());
        if changed {
            self.run_soon(now);
        }
        changed
    }

    /// Brings the next run forward (to [`CRD_SETTLE_MS`] from now, or right
    /// after the run in progress): what discovery last found disagrees with
    /// the CRDs the cluster has.
    pub fn run_soon(&mut self, now: Millis) {
        if self.running {
            self.again = true;
        } else {
            let soon = now.saturating_add(CRD_SETTLE_MS);
            self.next_at = Some(self.next_at.map_or(soon, |at| at.min(soon)));
        }
    }

    /// The last run's problem, until a run succeeds.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Runs finished so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(message: &str, retry_after: Option<Millis>) -> Outcome {
        Outcome::Failed {
            message: message.to_string(),
            retry_after,
        }
    }

    #[test]
    fn runs_at_load_retries_a_failure_and_clears_its_message() {
        let mut d = DiscoveryRefresh::new(1);
        assert!(d.due(0));
        d.started();
        assert!(!d.due(0), "one run at a time");
        // One 429 with Retry-After: 1.
        d.finished(&failed("/api/v1 answered HTTP 429", Some(1_000)), 100);
        assert_eq!(d.problem(), Some("/api/v1 answered HTTP 429"));
        assert_eq!(d.next_at(), Some(1_100));
        assert!(!d.due(1_099) && d.due(1_100));
        d.started();
        d.finished(&Outcome::Complete, 1_300);
        assert_eq!(d.problem(), None, "the message goes when a run succeeds");
        assert_eq!(d.next_at(), Some(1_300 + REFRESH_EVERY_MS));
        assert_eq!(d.runs(), 2);
    }

    #[test]
    fn failures_back_off_and_a_partial_result_is_retried() {
        let mut d = DiscoveryRefresh::new(2);
        let mut now = 0;
        let mut waits = Vec::new();
        for _ in 0..8 {
            d.started();
            d.finished(&failed("cannot reach the deltascope server", None), now);
            let at = d.next_at().expect("scheduled");
            waits.push(at - now);
            now = at;
        }
        assert!(waits[0] >= 800 && waits[0] < 1_000, "{waits:?}");
        assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
        assert!(waits.iter().all(|w| *w <= 30_000), "{waits:?}");
        d.started();
        d.finished(
            &Outcome::Partial("/apis/x/v1 answered HTTP 503".into()),
            now,
        );
        assert!(d.problem().is_some());
        assert!(d.next_at().expect("retried") - now <= 30_000);
    }

    #[test]
    fn refreshes_every_few_minutes() {
        let mut d = DiscoveryRefresh::new(3);
        d.started();
        d.finished(&Outcome::Complete, 0);
        assert!(!d.due(REFRESH_EVERY_MS - 1));
        assert!(d.due(REFRESH_EVERY_MS));
    }

    #[test]
    fn a_crd_change_runs_discovery_soon() {
        let mut d = DiscoveryRefresh::new(4);
        d.started();
        d.finished(&Outcome::Complete, 0);
        // The watch's first view of the CRDs is the baseline.
        assert!(!d.crds_seen("aaa", 2_000));
        assert!(!d.due(10_000));
        assert!(!d.crds_seen("aaa", 10_000), "no change");
        // A CRD was created.
        assert!(d.crds_seen("bbb", 20_000));
        assert!(!d.due(20_000 + CRD_SETTLE_MS - 1));
        assert!(d.due(20_000 + CRD_SETTLE_MS));
        // A change while a run is in flight runs it again right after.
        d.started();
        assert!(d.crds_seen("ccc", 21_500));
        d.finished(&Outcome::Complete, 22_000);
        assert_eq!(d.next_at(), Some(22_000 + CRD_SETTLE_MS));
        d.started();
        d.finished(&Outcome::Complete, 23_500);
        assert_eq!(d.next_at(), Some(23_500 + REFRESH_EVERY_MS));
    }
}
