//! The tasks that drive the workload while the cluster runs: the churn
//! loop, at the rate `POST /_sim/churn` sets, and the deletion of events
//! past their time to live.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Mutex};

use super::Workload;
use crate::store::Store;

/// Delete the events past their TTL, a few times a second, churn or not.
pub async fn expire_events(store: Arc<Store>, workload: Arc<Mutex<Workload>>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut wl = workload.lock().await;
        let expired = wl.events().expire(&store);
        if expired > 0 {
            tracing::debug!(expired, "events past their TTL deleted");
        }
    }
}

/// Writes the churn loop makes between two yields to the scheduler.
const YIELD_EVERY_WRITES: u64 = 32;

/// Drive the workload at the rate in `churn` (changes per second; 0 = idle).
pub async fn run(
    store: Arc<Store>,
    workload: Arc<Mutex<Workload>>,
    mut churn: watch::Receiver<f64>,
) {
    let mut owed = 0.0f64;
    let mut last = tokio::time::Instant::now();
    loop {
        let rate = *churn.borrow_and_update();
        if rate <= 0.0 || !rate.is_finite() {
            if churn.changed().await.is_err() {
                return;
            }
            owed = 0.0;
            last = tokio::time::Instant::now();
            continue;
        }
        let tick = Duration::from_secs_f64((1.0 / rate).clamp(0.01, 1.0));
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            changed = churn.changed() => {
                if changed.is_err() { return; }
                continue;
            }
        }
        let now = tokio::time::Instant::now();
        owed = (owed + rate * (now - last).as_secs_f64()).min(rate.max(1.0));
        last = now;
        let mut wl = workload.lock().await;
        let mut since_yield = 0;
        while owed >= 1.0 {
            let writes = wl.step(&store).max(1);
            owed -= writes as f64;
            // A late tick owes a big batch: let the watch tasks drain the
            // events as they come instead of after the whole batch.
            since_yield += writes;
            if since_yield >= YIELD_EVERY_WRITES {
                since_yield = 0;
                tokio::task::yield_now().await;
            }
        }
    }
}
