//! The clusters deltascope serve serves, for the cluster picker and `:ctx`:
//! [`follow_clusters`] asks `GET /_deltascope/clusters` at load and every
//! 10 s (each cluster's state and its `kubectl proxy`'s last words
//! change while the page is open) and hands each new answer to `show` (the
//! app state's `Action`, through the `use_clusters` hook in `crate::ui`).
//! Without serve (`trunk serve` in front of `kubectl proxy`, whose 404
//! ends the asking, or an older serve) the list stays empty and the page
//! shows one cluster, as it always did.

use std::cell::Cell;
use std::rc::Rc;

use crate::api::cluster_identity::{served_clusters, ServedCluster, CLUSTERS_PATH};
use crate::informer::Millis;

/// How often serve is asked again.
const POLL_MS: Millis = 10_000;

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
        crate::transport::timer::sleep_ms(POLL_MS).await;
    }
}
