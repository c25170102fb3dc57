//! Which of serve's clusters the page shows: [`use_clusters`] keeps the
//! app state told what serve serves (`crate::service::served_clusters`),
//! and [`cluster_picker`] is the header's picker
//! (`[data-testid=cluster-picker]`, an option per cluster, its state in
//! its words and its error in its title). Choosing one shows the same
//! view there (`Route::in_cluster`); `:ctx NAME` does the same from the
//! command bar. With one cluster there is no picker. When another cluster
//! answers behind the name of one that is not the default
//! ([`use_cluster_changes`]), that cluster's views start anew: what the
//! page held of the one before is dropped, never shown as the new one's.

use std::cell::Cell;
use std::rc::Rc;

use yew::prelude::*;

use super::context::StateContext;
use super::dom::set_hash;
use crate::address::route::Route;
use crate::api::cluster_identity::ServedCluster;
use crate::app::state::Action;
use crate::service::served_clusters::follow_clusters;
use crate::service::spawn_after_this_task;
use crate::service::Informers;

/// Asks serve for its clusters for the page's lifetime; `show` gets each
/// new list.
#[hook]
pub fn use_clusters(show: Callback<Rc<Vec<ServedCluster>>>) {
    use_effect_with((), move |_| {
        let alive = Rc::new(Cell::new(true));
        spawn_after_this_task(follow_clusters(alive.clone(), move |next| show.emit(next)));
        move || alive.set(false)
    });
}

/// Starts a cluster's views anew each time another cluster answered behind
/// its name (`AppState::clusters_changed`); the one on screen (of
/// `shown`) opens again at once.
#[hook]
pub fn use_cluster_changes(informers: Rc<Informers>, state: StateContext, shown: Option<String>) {
    let handled = use_mut_ref(|| 0usize);
    let changes = state.0.clusters_changed.clone();
    use_effect_with(changes, move |changes| {
        let new = changes.get(*handled.borrow()..).unwrap_or_default();
        for name in new {
            let now = state.0.clusters.iter().find(|c| c.name == *name);
            if let Some(identity) = now.and_then(|c| c.identity.as_deref()) {
                informers.forget_cluster(name, identity);
            }
            if shown.as_ref() == Some(name) {
                state.dispatch(Action::BackToLive);
            }
        }
        *handled.borrow_mut() = changes.len();
    });
}

/// What the page says when the cluster shown is not the one it was.
pub fn changed_words(state: &StateContext, shown: Option<&String>) -> Option<String> {
    let name = shown.filter(|name| state.0.clusters_changed.contains(name))?;
    Some(format!(
        "the cluster behind {name} changed: another cluster answers there now, so its views started anew (what this page held of the one before is not shown)"
    ))
}

/// What the page says when the cluster shown does not answer serve
/// (`[data-testid=cluster-down]`): its name and why, in its `kubectl
/// proxy`'s own words when serve runs one.
pub fn down_words(state: &StateContext, shown: Option<&String>) -> Option<String> {
    let cluster = state.0.clusters.iter().find(|c| match shown {
        Some(name) => c.name == *name,
        None => c.default,
    })?;
    (cluster.state == "down").then(|| {
        let why = cluster.error.as_deref().unwrap_or("it does not answer");
        format!(
            "the cluster {} does not answer serve: {why} (serve keeps trying; the other clusters are not affected)",
            cluster.name
        )
    })
}

/// The picker of `clusters` for a page showing `route`; nothing for one.
pub fn cluster_picker(clusters: &[ServedCluster], route: &Route) -> Html {
    if clusters.len() < 2 {
        return Html::default();
    }
    let shown = |cluster: &ServedCluster| match &route.cluster {
        Some(name) => *name == cluster.name,
        None => cluster.default,
    };
    let choices: Rc<Vec<(String, bool)>> = Rc::new(
        clusters
            .iter()
            .map(|c| (c.name.clone(), c.default))
            .collect(),
    );
    let onchange = {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() else {
                return;
            };
            let name = select.value();
            if let Some((name, default)) = choices.iter().find(|(n, _)| *n == name) {
                set_hash(&route.in_cluster((!default).then(|| name.clone())));
            }
        })
    };
    html! {
        <label>{ "cluster " }
            <select {onchange} aria-label="cluster" data-testid="cluster-picker"
                title="The cluster shown (:ctx NAME)">
                { for clusters.iter().map(|cluster| {
                    let words = match cluster.state.as_str() {
                        "up" | "" => cluster.name.clone(),
                        state => format!("{} ({state})", cluster.name),
                    };
                    html! {
                        <option value={cluster.name.clone()} selected={shown(cluster)}
                            data-state={cluster.state.clone()} title={cluster.error.clone()}>
                            { words }
                        </option>
                    }
                }) }
            </select>
        </label>
    }
}
