//! The recorder's two clocks: the informer core counts time in
//! [`Millis`] on a monotonic clock the caller keeps, and the record holds
//! absolute wall-clock milliseconds since the Unix epoch. [`Clock`] keeps
//! one from the other: a monotonic start and the wall time at that start,
//! shared by every resource's driver so their times agree.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use deltascope_informer::Millis;

/// Milliseconds since the Unix epoch, now (0 if the system clock is set
/// before 1970).
pub fn wall_now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The informers' clock and its mapping to wall time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    wall_at_start: i64,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
            wall_at_start: wall_now_ms(),
        }
    }

    /// Now, on the informers' clock.
    pub fn now(&self) -> Millis {
        Millis::try_from(self.start.elapsed().as_millis()).unwrap_or(Millis::MAX)
    }

    /// An informer time as wall-clock ms since the Unix epoch.
    pub fn wall(&self, at: Millis) -> i64 {
        self.wall_at_start
            .saturating_add(i64::try_from(at).unwrap_or(i64::MAX))
    }

    /// Now, as wall-clock ms since the Unix epoch (on this clock: it never
    /// goes back, whatever the system clock does).
    pub fn wall_now(&self) -> i64 {
        self.wall(self.now())
    }

    /// The instant an informer time falls at (for timers).
    pub fn instant(&self, at: Millis) -> Instant {
        self.start + std::time::Duration::from_millis(at)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
