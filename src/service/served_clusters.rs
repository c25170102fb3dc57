//! The clusters deltascope serve serves, for the cluster picker and `:ctx`:
//! [`follow_clusters`] asks `GET /_deltascope/clusters` at load and then
//! as `crate::app::clusters_poll` says (every 10 s: each cluster's state
//! and its `kubectl proxy`'s last words change while the page is open;
//! every second for a while after [`ask_again_soon`]), and hands each new
//! answer to `show` (the app state's `Action`, through the `use_clusters`
//! hook in `crate::ui`).
//! Without serve (`trunk serve` in front of `kubectl proxy`, whose 404
//! ends the asking, or an older serve) the list stays empty and the page
//! shows one cluster, as it always did.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::api::cluster_identity::{served_clusters, ServedCluster, CLUSTERS_PATH};
use crate::app::clusters_poll::{ClustersPoll, STEP_MS};

thread_local! {
    /// When serve is asked again (one page, one thread).
    static POLL: RefCell<ClustersPoll> = RefCell::default();
}

/// The page's store of a cluster noticed another cluster answering behind
/// its name and stopped that cluster's views: serve is asked every second
/// for a while ([`ClustersPoll::ask_soon`]); until the app state hears of
/// it, the view shows as stopped.
pub fn ask_again_soon() {
    POLL.with(|poll| poll.borrow_mut().ask_soon());
}

/// Waits until serve is to be asked again ([`ClustersPoll`]).
async fn wait_to_ask_again() {
    loop {
        crate::transport::timer::sleep_ms(STEP_MS).await;
        if POLL.with(|poll| poll.borrow_mut().step()) {
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
