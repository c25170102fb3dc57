//! The app: the page's layout, and the hooks it is made of. The UI state
//! lives in a reducer over `AppState` shared through [`StateContext`]; the
//! informers service and this render's frame through [`ServiceContext`].
//! Views read those and dispatch actions. The hooks, each in its own file:
//! - [`use_frames`] (`frames`): the informers service, when the app renders
//!   (batched per animation frame, a tick a second, a follow-up while
//!   something is still changing) and the frame each render reads;
//! - [`use_address`] (`address`): what the address names — a logs view, a
//!   table, one object over the table behind it — and the service showing it;
//! - [`use_discovery`] (`discovery`): what API discovery knows (the
//!   service runs it);
//! - [`use_keys`] (`keys`): the keyboard, acting on this render's rows;
//! - [`use_sort_follower`] (`table`): the sort stays on its column's title;
//! - [`use_serve_history`] (`serve_history`): what serve
//!   says of the history it records, into the app state.

use std::rc::Rc;

use yew::prelude::*;

use super::address::use_address;
use super::cluster_picker::{changed_words, down_words, use_cluster_changes, use_clusters};
use super::command_bar::CommandBar;
use super::context::{command, dispatcher, ServiceContext, StateCell, StateContext};
use super::discovery::{self, use_discovery};
use super::dom::{close_object, now_unix, set_hash};
use super::frames::use_frames;
use super::header::Header;
use super::help::HelpOverlay;
use super::keep_live::KeepLive;
use super::kept_list::KeptList;
use super::keys::use_keys;
use super::log_view::LogView;
use super::notices::Notices;
use super::object_view::{ObjectProps, ObjectView};
use super::serve_history::use_serve_history;
use super::settings::Settings;
use super::status_bar::StatusBar;
use super::stored_history::StoredHistory;
use super::table::{on_row, use_sort_follower, ResourceTable};
use super::timeline_bar::{Banners, TimelineBar};
use crate::address::log_route::LogRoute;
use crate::address::route::{Route, RouteError};
use crate::api::resources::ApiResource;
use crate::app::state::Action;
use crate::service::{Discovery, Frame, Informers};

/// Adds the time one `App` render took (building the view, not the DOM
/// patch) to the page metrics (bench builds only).
struct RenderTimer(f64);

impl Drop for RenderTimer {
    fn drop(&mut self) {
        crate::metrics::add_render(crate::metrics::perf_now() - self.0);
        crate::metrics::view_built();
    }
}

#[function_component(App)]
pub fn app() -> Html {
    let _render_timer = RenderTimer(crate::metrics::perf_now());
    let state: StateContext = use_reducer(StateCell::default);
    let frames = use_frames();
    let informers = frames.informers.clone();
    use_serve_history(dispatcher(&state, Action::ServeHistory));
    use_clusters(dispatcher(&state, Action::Clusters));
    let keys = use_keys();
    let address = use_address(informers.clone(), state.clone());
    let discovery = use_discovery(&informers, address.cluster());
    let shown_cluster = address.cluster().map(str::to_string);
    use_cluster_changes(informers.clone(), state.clone(), shown_cluster.clone());
    let discovered = discovery.resources.clone();
    let sort = use_sort_follower();

    if let Some(log_route) = address.logs {
        keys.logs();
        return logs_page(
            log_route,
            &state,
            &frames.informers,
            frames.next_number(),
            &discovery,
        );
    }
    let route = match address.table {
        Ok(route) => route,
        Err(error) => {
            keys.off();
            return no_view(&error, &discovered);
        }
    };
    let Some(frame) = frames.read(&route, &state.0) else {
        return starting(route, &discovered);
    };
    sort.follow(&state, &frame.titles);
    keys.table(&state, &frame, &route);

    let on_settings = dispatcher(&state, |()| Action::ToggleSettings);
    let command_bar = command_bar(&state, &route, &discovered);
    // Discovery does not list the route's resource.
    let unserved = !discovered.is_empty()
        && !discovered
            .iter()
            .any(|r| r.group == route.group && r.plural == route.resource);
    let object_panel = object_panel(&state, &informers, &route, address.object_tab);
    let columns_from: AttrValue = if frame.server_columns {
        "server"
    } else {
        "client"
    }
    .into();
    let on_row = on_row(&state, &route, &frame);
    let frame = Rc::new(frame);
    let service = ServiceContext {
        informers: informers.clone(),
        frame: frame.clone(),
        number: frames.next_number(),
    };

    html! {
        <ContextProvider<StateContext> context={state.clone()}>
        <ContextProvider<ServiceContext> context={service}>
        <main class="app">
            <Header route={route.clone()} filter={state.0.spec.filter.clone()} on_filter={dispatcher(&state, Action::Filter)}
                resources={discovered.clone()} wide={frame.wide_toggle} {on_settings} settings_open={state.0.settings_open} />
            { discovery::hook(&discovery) }
            if let Some(problem) = discovery.problem.clone() {
                <p class="notice" data-testid="discovery-warning">{ problem }</p>
            }
            if let Some(words) = frame.cluster_changed.clone().or_else(|| changed_words(&state, shown_cluster.as_ref())) {
                <p class="notice" role="status" data-testid="cluster-changed">{ words }</p>
            }
            if let Some(words) = down_words(&state, shown_cluster.as_ref()) {
                <p class="notice" role="status" data-testid="cluster-down">{ words }</p>
            }
            { for command_bar }
            <Notices route={route.clone()} {unserved} unauthorized={frame.unauthorized} plain={frame.plain.clone()}
                can_retry={frame.can_retry} on_retry={command(&informers, |informers, ()| informers.retry())}
                metrics={frame.metrics.clone()} />
            if let Some(progress) = frame.listing.clone() {
                <div class="progress" data-testid="list-progress" role="progressbar" aria-label={progress.clone()}>
                    <div class="bar"></div><span>{ progress }</span>
                </div>
            }
            <div class={classes!("content", object_panel.is_some().then_some("split"))}>
                <ResourceTable titles={frame.titles.clone()} rows={Rc::new(frame.rows.clone())} first={frame.first}
                    total={frame.total} sort={frame.sort} on_sort={dispatcher(&state, Action::SortBy)} {on_row}
                    on_scroll={dispatcher(&state, Action::TableScrolled)} empty_text={frame.empty_text} {columns_from} />
                { for object_panel }
            </div>
            <Banners />
            { kept_list(&state, &informers, &frame) }
            <TimelineBar route={route.clone()} />
            if state.0.help_open {
                <HelpOverlay />
            }
            if state.0.settings_open {
                { settings(&state, &informers, &frame, (route.cluster.as_ref(), &discovered)) }
            }
            <StatusBar ..frame.status.clone() />
        </main>
        </ContextProvider<ServiceContext>>
        </ContextProvider<StateContext>>
    }
}

/// The page of a logs address: the header over the logs view.
fn logs_page(
    log_route: LogRoute,
    state: &StateContext,
    informers: &Rc<Informers>,
    frame_number: u64,
    discovery: &Discovery,
) -> Html {
    let pods = log_route.pods_route();
    html! {
        <ContextProvider<StateContext> context={state.clone()}>
        <main class="app">
            <Header route={pods} filter={String::new()} on_filter={Callback::noop()}
                resources={discovery.resources.clone()} />
            { discovery::hook(discovery) }
            <LogView route={log_route} informers={informers.clone()} {frame_number} />
        </main>
        </ContextProvider<StateContext>>
    }
}

/// The command bar (`:`), when open; running a command goes to its address.
fn command_bar(
    state: &StateContext,
    route: &Route,
    discovered: &Rc<Vec<ApiResource>>,
) -> Option<Html> {
    state.0.command_open.then(|| {
        let clusters = state.0.clusters.clone();
        let state = state.clone();
        let on_run = Callback::from(move |next: Route| {
            state.dispatch(Action::ToggleCommand(false));
            set_hash(&next);
        });
        html! { <CommandBar route={route.clone()} resources={discovered.clone()} {clusters} {on_run} /> }
    })
}

/// The open object beside the table, when one is open and still known.
fn object_panel(
    state: &StateContext,
    informers: &Rc<Informers>,
    route: &Route,
    tab: Option<crate::address::object_route::ObjectTab>,
) -> Option<Html> {
    let Some(open) = state.0.open_object.as_ref() else {
        informers.object_closed();
        return None;
    };
    let serve = state.0.serve_history_for(route);
    let app_state = &state.0;
    let chart_range = |now| app_state.chart_range(now);
    let history_shown = app_state.history_shown;
    let details = Rc::new(informers.object(
        (open.source, &open.key, history_shown),
        serve,
        now_unix(),
        &chart_range,
    )?);
    let on_older = dispatcher(state, |()| Action::ShowOlderVersions);
    let chart_range = app_state.chart_range(crate::transport::now());
    let chart_fits = app_state.chart_fits_its_samples();
    let logs = LogRoute::of_key(route, &open.key).map(|logs| AttrValue::from(logs.to_string()));
    let cluster = route.cluster.clone().map(AttrValue::from);
    let route = route.clone();
    let on_close = Callback::from(move |_| close_object(&route));
    Some(
        html! { <ObjectView ..ObjectProps { details, on_close, logs, chart_range, chart_fits, history_shown, on_older, tab, cluster } /> },
    )
}

/// The resources kept live, each with its Stop.
fn kept_list(state: &StateContext, informers: &Rc<Informers>, frame: &Frame) -> Html {
    let on_stop = {
        let (informers, state) = (informers.clone(), state.clone());
        Callback::from(move |id: u64| {
            let label = informers.stop_kept(id);
            if label.is_some() {
                state.dispatch(Action::KeptStopped { id, label });
            }
        })
    };
    html! {
        <KeptList items={Rc::new(frame.kept_items.clone())} capacity={frame.capacity} {on_stop} />
    }
}

/// Settings: retention, what is kept live, what this browser stores.
fn settings(
    state: &StateContext,
    informers: &Rc<Informers>,
    frame: &Frame,
    (cluster, discovered): (Option<&String>, &Rc<Vec<ApiResource>>),
) -> Html {
    let on_close = dispatcher(state, |()| Action::CloseSettings);
    let on_apply = command(informers, Informers::set_retention);
    let on_capacity = command(informers, Informers::set_capacity);
    let on_forget = command(informers, |informers, ()| informers.forget_stored());
    let on_forget_other = command(informers, Informers::forget_other_cluster);
    let on_keep_everything = {
        let (cluster, discovered) = (cluster.cloned(), discovered.clone());
        command(informers, move |informers, ()| {
            informers.keep_everything(cluster.as_ref(), &discovered)
        })
    };
    html! {
        <Settings current={frame.retention.clone()} usage={Rc::new(frame.usage.clone())} capacity={frame.capacity}
            {on_apply} {on_close}>
            <KeepLive capacity={frame.capacity} kept={frame.kept_count} discovered={discovered.len()}
                transport={frame.transport_words.clone()} {on_capacity} {on_keep_everything} />
            if let Some(summary) = frame.stored.clone() {
                <StoredHistory {summary} {on_forget} {on_forget_other} />
            }
        </Settings>
    }
}

/// The page for an address that names no view.
fn no_view(error: &RouteError, discovered: &Rc<Vec<ApiResource>>) -> Html {
    html! {
        <main class="app">
            <Header route={Route::default()} filter={String::new()} on_filter={Callback::noop()}
                resources={discovered.clone()} />
            <section class="notice error">
                <h2>{ "This address does not name a resource view" }</h2>
                <p>{ error.to_string() }</p>
                <p><a href="#/core/v1/pods">{ "Show pods" }</a></p>
            </section>
        </main>
    }
}

/// The page until the service shows the route's view.
fn starting(route: Route, discovered: &Rc<Vec<ApiResource>>) -> Html {
    html! {
        <main class="app">
            <Header {route} filter={String::new()} on_filter={Callback::noop()}
                resources={discovered.clone()} />
            <p class="notice">{ "Starting…" }</p>
        </main>
    }
}
