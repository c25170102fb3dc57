//! Faults waiting for the requests and watches they hit ([`Faults`]): how
//! many API requests are still to be throttled or fail, how many watch lines
//! are still to be garbage, and the faults aimed at one resource. `control`
//! injects them (`POST /_sim/fault`); `routes` and `watch` consume them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::resources::ResIdx;

/// Pending one-shot faults, consumed by the requests and watches they hit.
#[derive(Debug, Default)]
pub struct Faults {
    pub throttle: AtomicU64,
    pub errors: AtomicU64,
    pub garbage_lines: AtomicU64,
    /// Faults aimed at one resource: `forbid` (403, as if RBAC took its
    /// permission away and gave it back), and `throttle` or `error` given a
    /// `"resource"` (429 or 500 for that resource's requests only, so a
    /// test can fault the view it watches and not a request beside it).
    targeted: std::sync::Mutex<HashMap<(Aimed, ResIdx), u64>>,
    /// `throttle` or `error` given a `"path"`: requests of exactly that
    /// path only (discovery's `/api/v1`, which no resource owns, apart from
    /// the requests serve's own health checks and recorder send beside it).
    by_path: std::sync::Mutex<HashMap<(Aimed, String), u64>>,
}

/// What a fault aimed at one resource answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aimed {
    Forbid,
    Throttle,
    Error,
}

impl Faults {
    pub fn garbage_pending(&self) -> bool {
        self.garbage_lines.load(Ordering::Relaxed) > 0
    }

    /// The fault aimed at `res` that its next request meets, if any (and
    /// one fewer pending). Throttling is answered before an error, an error
    /// before a 403, as the apiserver's filters would.
    pub fn take_aimed(&self, res: ResIdx) -> Option<Aimed> {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        [Aimed::Throttle, Aimed::Error, Aimed::Forbid]
            .into_iter()
            .find(|aimed| match targeted.get_mut(&(*aimed, res)) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
    }

    /// The fault aimed at `path` that its next request meets, if any (and
    /// one fewer pending); throttling first, as for a resource.
    pub fn take_for_path(&self, path: &str) -> Option<Aimed> {
        let mut by_path = self.by_path.lock().unwrap_or_else(|e| e.into_inner());
        if by_path.is_empty() {
            return None;
        }
        [Aimed::Throttle, Aimed::Error].into_iter().find(|aimed| {
            match by_path.get_mut(&(*aimed, path.to_string())) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        })
    }

    /// The next `count` requests of exactly `path` meet `aimed`.
    pub fn aim_at_path(&self, aimed: Aimed, path: &str, count: u64) {
        let mut by_path = self.by_path.lock().unwrap_or_else(|e| e.into_inner());
        *by_path.entry((aimed, path.to_string())).or_default() += count;
    }

    /// The next `count` requests of `res` meet `aimed`.
    pub fn aim(&self, aimed: Aimed, res: ResIdx, count: u64) {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        *targeted.entry((aimed, res)).or_default() += count;
    }
}

/// Consume one unit of a fault counter.
pub fn take(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}
