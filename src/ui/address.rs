//! What the address names, and what the informers service shows for it.
//! [`use_address`] follows the hash and has `app::navigation`'s
//! [`AddressResolver`] say what it names (a logs view, a table, or one
//! object over the table behind it), then its effects make the service
//! show that, in this order: the logs view's followers while a logs
//! address is shown; the table's view (again after "back to live"; `wide`
//! only changes the columns shown, so it opens none); then the object, in
//! the view its table just opened, and closed when the address stops
//! naming one.
//!
//! Why a hook of its own: the resolver remembers across renders (the last
//! table shown, the object resolved) and the order of the effects matters;
//! the app's layout only needs the result. The decisions are the
//! resolver's, tested natively; this hook only holds it and runs the
//! effects.

use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::context::StateContext;
use super::dom::{current_hash, object_closed};
use crate::address::log_route::LogRoute;
use crate::address::object_route::ObjectTab;
use crate::address::route::{Route, RouteError};
use crate::app::log_ui::LogUiAction;
use crate::app::navigation::{AddressResolver, Resolved};
use crate::app::state::{Action, OpenObject};
use crate::service::Informers;

/// The address, resolved.
pub struct Address {
    /// A logs view's address (the logs view replaces the table).
    pub logs: Option<LogRoute>,
    /// The table to show (for an object's address, the table behind it),
    /// or why the address names none.
    pub table: Result<Route, RouteError>,
    /// The tab an object's address names.
    pub object_tab: Option<ObjectTab>,
}

impl Address {
    /// The cluster it names (`None`: the default one).
    pub fn cluster(&self) -> Option<&str> {
        match (&self.logs, &self.table) {
            (Some(logs), _) => logs.cluster.as_deref(),
            (None, Ok(table)) => table.cluster.as_deref(),
            (None, Err(_)) => None,
        }
    }
}

/// Follows the address and has the service show what it names (see the
/// module doc); its cluster's discovery says whether the table's
/// resource is namespaced.
#[hook]
pub fn use_address(informers: Rc<Informers>, state: StateContext) -> Address {
    let hash = use_state(current_hash);
    use_hash_follower(hash.clone());

    let resolver = use_mut_ref(AddressResolver::default);
    let Resolved {
        logs,
        object,
        table,
    } = resolver
        .borrow_mut()
        .resolve(&hash, |object| informers.view_holding(object));

    // A logs view: its followers run while its address is shown.
    {
        let (informers, state) = (informers.clone(), state.clone());
        use_effect_with(logs.clone(), move |route| {
            let shown = route.is_some();
            if let Some(route) = route {
                informers.show_logs(route);
                state.dispatch(Action::Log(LogUiAction::Opened));
            }
            move || {
                if shown {
                    informers.leave_logs()
                }
            }
        });
    }

    // One view per route (and per "back to live"): the route's kept
    // informer, or a new one. `wide` only changes the columns shown.
    {
        let (informers, state) = (informers.clone(), state.clone());
        let data_route = table.clone().map(|route| route.data_key());
        use_effect_with((data_route, state.0.live_generation), move |(route, _)| {
            if let Ok(route) = route {
                let discovered = informers.discovery_of(route.cluster.as_deref()).resources;
                let namespaced = discovered
                    .iter()
                    .find(|r| r.group == route.group && r.plural == route.resource)
                    .map(|r| r.namespaced);
                informers.show(route, namespaced);
                state.dispatch(Action::ViewOpened);
            }
            // Runs when the route changes, before the next view opens.
            move || informers.leave()
        });
    }

    let object_tab = object.as_ref().and_then(|object| object.tab);
    // The object the address names opens (after its table, above, and
    // again when that view opens anew: back to live, another cluster
    // behind the name); an address without one closes it.
    let generation = state.0.live_generation;
    use_effect_with((object, generation), move |(object, _)| match object {
        Some(object) => state.dispatch(Action::Open(informers.shown_source().map(|source| {
            OpenObject {
                source,
                key: object.key(),
            }
        }))),
        None => {
            object_closed();
            state.dispatch(Action::Open(None));
        }
    });

    Address {
        logs,
        table,
        object_tab,
    }
}

/// Follows the address bar's hash.
#[hook]
fn use_hash_follower(hash: UseStateHandle<String>) {
    use_effect_with((), move |_| {
        let listener = Closure::<dyn Fn()>::new(move || hash.set(current_hash()));
        let window = web_sys::window();
        if let Some(window) = &window {
            let _ = window
                .add_event_listener_with_callback("hashchange", listener.as_ref().unchecked_ref());
        }
        move || {
            if let Some(window) = window {
                let _ = window.remove_event_listener_with_callback(
                    "hashchange",
                    listener.as_ref().unchecked_ref(),
                );
            }
        }
    });
}
