//! Giving back to the system the memory a list or a restore freed.
//!
//! A list of a large resource parses every page, and a relist holds the
//! objects it replaces until the list is applied (the informer replaces
//! its store at once, as client-go's reflector does); a restore reads the
//! recorded state whole. Once that is done, hundreds of MB are free again
//! inside glibc's malloc arena of the recorder's thread, but glibc gives
//! back to the system only the free memory at the top of a heap, and the
//! objects kept are spread over all of it. Measured at 100k simulated pods
//! (220k objects recorded): after a relist of everything serve stayed at
//! 1,569 MiB of RSS, after a restart that restored the record at 1,587 MiB;
//! with a trim, 999 and 946 MiB (1,030 MiB after the first lists).
//!
//! So a driver that applied a list or restored a state asks for a trim
//! ([`Trimmer::request`]), and the supervisor runs it once a second at most
//! ([`Trimmer::run_if_due`]): when no list or restore is in flight (one
//! trim after a burst of lists, not one per list), or once a request has
//! waited [`LONGEST_WAIT`]. A trim walks the arenas' free memory, each
//! under its lock (46 to 60 ms measured after those 1.5 GB peaks, on the
//! recorder's thread); elsewhere than glibc it does nothing.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A trim waits at most this long for the lists in flight to end.
pub const LONGEST_WAIT: Duration = Duration::from_secs(30);

/// Trims asked for (shared by the drivers and the supervisor).
#[derive(Debug, Default)]
pub struct Trimmer {
    /// When the oldest request not served yet was made.
    requested: Mutex<Option<Instant>>,
}

impl Trimmer {
    /// A list was applied or a state restored: trim soon.
    pub fn request(&self) {
        self.request_at(Instant::now());
    }

    fn request_at(&self, now: Instant) {
        if let Ok(mut requested) = self.requested.lock() {
            requested.get_or_insert(now);
        }
    }

    /// Trims if a request waits and either no list is in flight
    /// (`lists_idle`) or it has waited [`LONGEST_WAIT`]. Returns whether
    /// it trimmed.
    pub fn run_if_due(&self, lists_idle: bool) -> bool {
        if !self.take_due(Instant::now(), lists_idle) {
            return false;
        }
        let started = Instant::now();
        let released = release_free_memory();
        tracing::debug!(
            released,
            ms = started.elapsed().as_millis() as u64,
            "recorder: gave freed memory back to the system"
        );
        true
    }

    /// Whether a trim is due now (and if so, the request is served).
    fn take_due(&self, now: Instant, lists_idle: bool) -> bool {
        let Ok(mut requested) = self.requested.lock() else {
            return false;
        };
        match *requested {
            Some(at) if lists_idle || now.saturating_duration_since(at) >= LONGEST_WAIT => {
                *requested = None;
                true
            }
            _ => false,
        }
    }
}

/// Gives the free memory of every malloc arena back to the system; whether
/// any was. Only glibc keeps it this way; elsewhere, nothing to do.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() -> bool {
    // SAFETY: malloc_trim only walks and madvises glibc's own free lists,
    // under each arena's lock; it takes no pointer from us.
    unsafe { libc::malloc_trim(0) != 0 }
}

/// Gives the free memory of every malloc arena back to the system; whether
/// any was. Only glibc keeps it this way; elsewhere, nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_trimmed_unasked() {
        let trimmer = Trimmer::default();
        assert!(!trimmer.take_due(Instant::now(), true));
        assert!(!trimmer.run_if_due(true));
    }

    #[test]
    fn a_request_waits_for_the_lists_in_flight() {
        let trimmer = Trimmer::default();
        let start = Instant::now();
        trimmer.request_at(start);
        // lists still running: not yet
        assert!(!trimmer.take_due(start + Duration::from_secs(1), false));
        // they ended: once, then nothing more until asked again
        assert!(trimmer.take_due(start + Duration::from_secs(2), true));
        assert!(!trimmer.take_due(start + Duration::from_secs(3), true));
    }

    #[test]
    fn a_request_waits_no_longer_than_the_longest_wait() {
        let trimmer = Trimmer::default();
        let start = Instant::now();
        trimmer.request_at(start);
        // more requests meanwhile do not push the deadline back
        trimmer.request_at(start + Duration::from_secs(20));
        assert!(!trimmer.take_due(start + LONGEST_WAIT - Duration::from_secs(1), false));
        assert!(trimmer.take_due(start + LONGEST_WAIT, false));
    }

    #[test]
    fn a_trim_runs_once_asked() {
        let trimmer = Trimmer::default();
        trimmer.request();
        // a heap with free memory in the middle of it, to give back
        let blocks: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 64 * 1024]).collect();
        let kept: Vec<Vec<u8>> = blocks.into_iter().step_by(2).collect();
        assert!(trimmer.run_if_due(true));
        assert!(!trimmer.run_if_due(true));
        assert!(kept.iter().enumerate().all(|(i, b)| b[0] == (2 * i) as u8));
    }
}
