//! The pod logs' rate schedule and the count of lines served, shared by
//! every log request ([`LogState`]): `POST /_sim/logs` adds a rate from now
//! on; the lines of any time range follow from the schedule (`lines`).

use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, PoisonError};

use super::lines::{Epoch, KEPT_EPOCHS, NANOS};

/// The rate schedule and the served-lines count, shared by every request.
pub struct LogState {
    epochs: Mutex<Vec<Epoch>>,
    /// The last total rate set (lines per second across all containers), if any.
    pub(super) total: Mutex<Option<f64>>,
    /// Lines written to log responses, all paths together.
    pub lines_served: AtomicU64,
}

impl Default for LogState {
    /// One line per second per container, since forever.
    fn default() -> Self {
        LogState {
            epochs: Mutex::new(vec![Epoch {
                from: 0,
                period: Some(NANOS),
            }]),
            total: Mutex::new(None),
            lines_served: AtomicU64::new(0),
        }
    }
}

impl LogState {
    pub(super) fn epochs(&self) -> Vec<Epoch> {
        self.epochs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// From `now` on, each container writes `per_container` lines a second.
    pub(super) fn set_rate(&self, now: i128, per_container: f64) {
        let period = (per_container > 0.0).then(|| ((NANOS as f64 / per_container) as i128).max(1));
        let mut epochs = self.epochs.lock().unwrap_or_else(PoisonError::into_inner);
        epochs.push(Epoch { from: now, period });
        let excess = epochs.len().saturating_sub(KEPT_EPOCHS);
        epochs.drain(..excess);
    }
}
