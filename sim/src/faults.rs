//! Faults waiting for the requests and watches they hit ([`Faults`]): how
//! many API requests are still to be throttled or fail, how many watch lines
//! are still to be garbage, and the faults aimed at one resource or path. `control`
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
    /// Faults aimed at one resource or one path: `forbid` (403, as if RBAC
    /// took a resource's permission away and gave it back), and `throttle`
    /// or `error` given a `"resource"` or a `"path"` (429 or 500 for those
    /// requests only, so a test can fault the view it watches, or
    /// discovery's `/api/v1`, and not a request beside it such as serve's
    /// own health checks).
    targeted: std::sync::Mutex<HashMap<(Aimed, Aim), u64>>,
}

/// What a fault is aimed at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Aim {
    /// Every request of one resource.
    Resource(ResIdx),
    /// Every request of exactly this path.
    Path(String),
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

    /// The fault aimed at `aim` that its next request meets, if any (and
    /// one fewer pending). Throttling is answered before an error, an error
    /// before a 403, as the apiserver's filters would.
    pub fn take_aimed(&self, aim: &Aim) -> Option<Aimed> {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        if targeted.is_empty() {
            return None;
        }
        [Aimed::Throttle, Aimed::Error, Aimed::Forbid]
            .into_iter()
            .find(|aimed| match targeted.get_mut(&(*aimed, aim.clone())) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
    }

    /// The next `count` requests `aim` names meet `aimed`.
    pub fn aim(&self, aimed: Aimed, aim: Aim, count: u64) {
        let mut targeted = self.targeted.lock().unwrap_or_else(|e| e.into_inner());
        *targeted.entry((aimed, aim)).or_default() += count;
    }
}

/// Consume one unit of a fault counter.
pub fn take(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}
