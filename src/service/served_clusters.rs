//! The clusters deltascope serve serves, for the cluster picker and `:ctx`:
//! [`follow_clusters`] asks `GET /_deltascope/clusters` at load and every
//! 10 s (each cluster's state and its `kubectl proxy`'s last words change
//! while the page is open), every second for a while after
//! [`ask_again_soon`], and hands each new answer to `show` (the app
//! state's `Action`, through the `use_clusters` hook in `crate::ui`).
//! Without serve (`trunk serve` in front of `kubectl proxy`, whose 404
//! ends the asking, or an older serve) the list stays empty and the page
//! shows one cluster, as it always did.

use std::cell::Cell;
use std::rc::Rc;

use crate::api::cluster_identity::{served_clusters, ServedCluster, CLUSTERS_PATH};
use crate::informer::Millis;

/// How often serve is asked again.
const POLL_MS: Millis = 10_000;

/// How often, and how many times, serve is asked after the page noticed
/// by itself that another cluster answers behind a name.
const SOON_MS: Millis = 1_000;
const SOON_ASKS: u32 = 10;

thread_local! {
    /// Asks left at [`SOON_MS`] ([`ask_again_soon`]).
    static ASKS_SOON: Cell<u32> = const { Cell::new(0) };
}

/// The page's store of a cluster noticed another cluster answering behind
/// its name and stopped that cluster's views: serve is asked every second
/// for a while, so that the app state hears of the change soon after serve
/// does (says so, and opens the view shown again on the new cluster) rather
/// than at the next 10 s poll; until then the view shows as stopped.
pub fn ask_again_soon() {
    ASKS_SOON.with(|asks| asks.set(SOON_ASKS));
}

/// Waits until serve is to be asked again: [`POLL_MS`], or [`SOON_MS`]
/// while [`ask_again_soon`]'s asks last.
async fn wait_to_ask_again() {
    let mut waited = 0;
    while waited < POLL_MS {
        crate::transport::timer::sleep_ms(SOON_MS).await;
        waited += SOON_MS;
        let soon = ASKS_SOON.with(|asks| {
            let left = asks.get();
            asks.set(left.saturating_sub(1));
            left > 0
        });
        if soon {
            return;
        }
    }
}

/// Asks serve for its clusters while `alive` holds; `show` gets the list
/// each time it changes.
pub async fn follow_clusters(alive: Rc<Cell<bool>>, show: impl Fn(Rc<Vec<ServedCluster>>)) {
    let mut shown: Option<Vec<ServedCluster>> = None;
    while alive.get() {
        let answer = crate::transport::serve_history::get(CLUSTERS_PATH).await;
        if answer.as_ref().is_ok_and(|answer| answer.status == 404) {
            return; // no serve in front of the page: one cluster, for good
        }
        let clusters = answer
            .ok()
            .and_then(|answer| served_clusters(answer.status, &answer.body));
        // An answer that is not a list (a 401 meanwhile, an outage) keeps
        // what the picker showed.
        if let Some(clusters) = clusters.filter(|c| alive.get() && shown.as_ref() != Some(c)) {
            show(Rc::new(clusters.clone()));
            shown = Some(clusters);
        }
        wait_to_ask_again().await;
    }
}
