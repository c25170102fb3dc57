//! The app: follows the hash route, asks the informers service to show the
//! resource it names, reads one frame per animation frame (however many
//! events arrive) and lays out the views. The UI state lives in a reducer
//! shared through [`StateContext`]; the frame and the service through
//! [`ServiceContext`]. Views read those and dispatch actions.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::command_bar::CommandBar;
use super::context::{dispatcher, ServiceContext, StateCell, StateContext};
use super::delta_list::DELTA_ROWS;
use super::dom::{
    after_ms, close_object, current_hash, now_unix, object_closed, on_next_frame, open_object,
    set_hash,
};
use super::header::Header;
use super::help::HelpOverlay;
use super::keep_live::KeepLive;
use super::kept_list::KeptList;
use super::keys::{use_keys, KeyAction};
use super::log_view::LogView;
use super::notices::Notices;
use super::object_view::{ObjectProps, ObjectView};
use super::settings::Settings;
use super::status_bar::StatusBar;
use super::table::{ResourceTable, TABLE_ROWS};
use super::timeline_bar::{Banners, TimelineBar};
use crate::app::log_route::LogRoute;
use crate::app::log_ui::LogUiAction;
use crate::app::object_route::ObjectRoute;
use crate::app::route::Route;
use crate::app::state::Action;
use crate::service::api_discovery::use_discovery;
use crate::service::{FrameInput, Informers};

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
    let hash = use_state(current_hash);
    let redraw = use_force_update();
    let frame_number = use_mut_ref(|| 0_u64);
    let frame_pending = use_mut_ref(|| false);
    let follow_up_pending = use_mut_ref(|| false);
    // The column titles of the last render (to follow a sorted column when columns change).
    let shown_titles: Rc<RefCell<Rc<Vec<String>>>> = use_mut_ref(|| Rc::new(Vec::new()));
    let discovery = use_discovery();
    let discovered = discovery.resources.clone();
    let key_handler = use_keys();

    // The informers tell the app through this; renders are batched per animation frame.
    let informers: Rc<Informers> = {
        let (redraw, frame_pending) = (redraw.clone(), frame_pending.clone());
        (*use_memo((), move |_| {
            let on_change: Rc<dyn Fn()> = Rc::new(move || {
                if !*frame_pending.borrow() {
                    *frame_pending.borrow_mut() = true;
                    let frame_pending = frame_pending.clone();
                    let redraw = redraw.clone();
                    on_next_frame(move || {
                        *frame_pending.borrow_mut() = false;
                        redraw.force_update();
                    });
                }
            });
            Rc::new(Informers::new(on_change))
        }))
        .clone()
    };

    use_hash_follower(hash.clone());
    use_ticks(redraw.clone());
    {
        let informers = informers.clone();
        use_effect_with((), move |_| move || informers.stop_all());
    }

    let log_route = LogRoute::parse(&hash);
    // One object's address shows its resource's table behind it: the
    // table the user was on, or a kept view holding the object.
    let object_route = ObjectRoute::parse(&hash);
    let last_table: Rc<RefCell<Option<Route>>> = use_mut_ref(|| None);
    let resolved: Rc<RefCell<Option<(ObjectRoute, Route)>>> = use_mut_ref(|| None);
    let route = match &object_route {
        Some(object) => {
            let known = resolved
                .borrow()
                .as_ref()
                .filter(|(o, _)| o == object)
                .map(|(_, table)| table.clone());
            let behind = known.unwrap_or_else(|| {
                let last = last_table.borrow().clone();
                let holding =
                    informers.view_holding(&object.group, &object.resource, &object.key());
                object.table_behind(last.as_ref(), holding)
            });
            *resolved.borrow_mut() = Some((object.clone(), behind.clone()));
            *last_table.borrow_mut() = Some(behind.clone());
            Ok(behind)
        }
        None => {
            let route = Route::parse(&hash);
            if let Ok(route) = &route {
                *last_table.borrow_mut() = Some(route.clone());
            }
            route
        }
    };

    // A logs view: its followers run while its address is shown.
    {
        let (informers, state) = (informers.clone(), state.clone());
        use_effect_with(log_route.clone(), move |route| {
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
        let discovered = discovered.clone();
        let data_route = route.clone().map(|route| route.data_key());
        use_effect_with((data_route, state.0.live_generation), move |(route, _)| {
            if let Ok(route) = route {
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

    // The object the address names opens (after its table, above); an
    // address without one closes it.
    {
        let (informers, state) = (informers.clone(), state.clone());
        use_effect_with(object_route.clone(), move |object| match object {
            Some(object) => state.dispatch(Action::Open(
                informers.shown_source().map(|id| (id, object.key())),
            )),
            None => {
                object_closed();
                state.dispatch(Action::Open(None));
            }
        });
    }

    if let Some(log_route) = log_route {
        // Esc leaves a field (the search), else goes back to where the
        // logs were opened from.
        *key_handler.borrow_mut() = Some(Callback::from(|action: KeyAction| {
            if !matches!(action, KeyAction::Back) {
                return;
            }
            let window = web_sys::window();
            let field = window
                .as_ref()
                .and_then(|w| w.document())
                .and_then(|d| d.active_element())
                .filter(|e| matches!(e.tag_name().as_str(), "INPUT" | "SELECT"))
                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
            match field {
                Some(field) => {
                    let _ = field.blur();
                }
                None => {
                    if let Some(history) = window.and_then(|w| w.history().ok()) {
                        let _ = history.back();
                    }
                }
            }
        }));
        let number = {
            let mut number = frame_number.borrow_mut();
            *number += 1;
            *number
        };
        let pods = Route {
            namespace: Some(log_route.namespace.clone()),
            ..Route::new("", "v1", "pods")
        };
        return html! {
            <ContextProvider<StateContext> context={state.clone()}>
            <main class="app">
                <Header route={pods} filter={String::new()} on_filter={Callback::noop()}
                    resources={discovered.clone()} />
                { discovery.hook() }
                <LogView route={log_route} informers={informers.clone()} frame_number={number} />
            </main>
            </ContextProvider<StateContext>>
        };
    }

    let route = match route {
        Ok(route) => route,
        Err(error) => {
            *key_handler.borrow_mut() = None;
            return html! {
                <main class="app">
                    <Header route={Route::default()} filter={String::new()} on_filter={Callback::noop()}
                        resources={discovered.clone()} />
                    <section class="notice error">
                        <h2>{ "This address does not name a resource view" }</h2>
                        <p>{ error.to_string() }</p>
                        <p><a href="#/core/v1/pods">{ "Show pods" }</a></p>
                    </section>
                </main>
            };
        }
    };

    let Some(frame) = informers.frame(&FrameInput {
        route: &route,
        state: &state.0,
        rows: TABLE_ROWS.rows(state.0.table_scroll),
        delta_rows: DELTA_ROWS.rows(state.0.delta_scroll),
        now_unix: now_unix(),
        background_streams: discovery.background_streams(),
    }) else {
        return html! {
            <main class="app">
                <Header route={route} filter={String::new()} on_filter={Callback::noop()}
                    resources={discovered.clone()} />
                <p class="notice">{ "Starting…" }</p>
            </main>
        };
    };
    if frame.still_changing && !*follow_up_pending.borrow() {
        *follow_up_pending.borrow_mut() = true;
        let (follow_up_pending, redraw) = (follow_up_pending.clone(), redraw.clone());
        after_ms(300, move || {
            *follow_up_pending.borrow_mut() = false;
            redraw.force_update();
        });
    }
    // Columns came or went (the server's arrived, the wide view): keep sorting by the same title.
    let previous_titles = shown_titles.replace(frame.titles.clone());
    if *previous_titles != *frame.titles {
        if let Some(index) = state.0.spec.sort_column {
            let title = previous_titles.get(index);
            let moved = title.and_then(|t| frame.titles.iter().position(|now| now == t));
            if moved != Some(index) {
                state.dispatch(Action::SortColumnMoved(moved));
            }
        }
    }
    if frame.status.synced && frame.status.state == "watching" {
        // The first synced render of a live table (what the page-open benchmark waits for).
        crate::metrics::table_synced_once();
    }
    *key_handler.borrow_mut() = Some(key_handler_for(&state, &frame, &route));

    let on_filter = dispatcher(&state, Action::Filter);
    let on_sort = dispatcher(&state, Action::SortBy);
    let on_scroll = dispatcher(&state, Action::TableScrolled);
    let on_settings = {
        let state = state.clone();
        Callback::from(move |_: ()| state.dispatch(Action::ToggleSettings))
    };
    let on_close_settings = {
        let state = state.clone();
        Callback::from(move |_: ()| state.dispatch(Action::CloseSettings))
    };
    let on_row = {
        let (state, route) = (state.clone(), route.clone());
        let keys: Vec<String> = frame.rows.iter().map(|r| r.key.clone()).collect();
        let first = frame.first;
        Callback::from(move |(key, open): (String, bool)| {
            if let Some(offset) = keys.iter().position(|k| *k == key) {
                state.dispatch(Action::Select(first + offset));
            }
            if open {
                open_object(&ObjectRoute::of_key(
                    &route.group,
                    &route.version,
                    &route.resource,
                    &key,
                ));
            }
        })
    };
    let on_retry = {
        let informers = informers.clone();
        Callback::from(move |_: ()| informers.retry())
    };
    let on_stop_kept = {
        let (informers, state) = (informers.clone(), state.clone());
        Callback::from(move |id: u64| {
            let label = informers.stop_kept(id);
            if label.is_some() {
                state.dispatch(Action::KeptStopped { id, label });
            }
        })
    };
    let on_apply_retention = {
        let informers = informers.clone();
        Callback::from(move |config| informers.set_retention(config))
    };
    let on_capacity = {
        let informers = informers.clone();
        Callback::from(move |capacity| informers.set_capacity(capacity))
    };
    let on_keep_everything = {
        let (informers, discovered) = (informers.clone(), discovered.clone());
        Callback::from(move |_: ()| informers.keep_everything(&discovered))
    };
    let command_bar = state.0.command_open.then(|| {
        let state = state.clone();
        let on_run = Callback::from(move |next: Route| {
            state.dispatch(Action::ToggleCommand(false));
            set_hash(&next);
        });
        html! { <CommandBar route={route.clone()} resources={discovered.clone()} {on_run} /> }
    });
    // Discovery does not list the route's resource.
    let unserved = !discovered.is_empty()
        && !discovered
            .iter()
            .any(|r| r.group == route.group && r.plural == route.resource);
    let object_panel = state.0.open_object.as_ref().and_then(|(source, key)| {
        let details = Rc::new(informers.object(*source, key, now_unix())?);
        let logs = logs_of(&route, key).map(|logs| AttrValue::from(logs.to_string()));
        let route = route.clone();
        let on_close = Callback::from(move |_| close_object(&route));
        Some(html! { <ObjectView ..ObjectProps { details, on_close, logs } /> })
    });
    let columns_from: AttrValue = if frame.server_columns {
        "server"
    } else {
        "client"
    }
    .into();
    let frame = Rc::new(frame);
    let service = ServiceContext {
        informers: informers.clone(),
        frame: frame.clone(),
        number: {
            let mut number = frame_number.borrow_mut();
            *number += 1;
            *number
        },
    };

    html! {
        <ContextProvider<StateContext> context={state.clone()}>
        <ContextProvider<ServiceContext> context={service}>
        <main class="app">
            <Header route={route.clone()} filter={state.0.spec.filter.clone()} {on_filter} resources={discovered.clone()}
                wide={frame.wide_toggle} {on_settings} settings_open={state.0.settings_open} />
            { discovery.hook() }
            if let Some(problem) = discovery.problem.clone() {
                <p class="notice" data-testid="discovery-warning">{ problem }</p>
            }
            { for command_bar }
            <Notices route={route.clone()} {unserved} unauthorized={frame.unauthorized} plain={frame.plain.clone()}
                can_retry={frame.can_retry} {on_retry} />
            if let Some(progress) = frame.listing.clone() {
                <div class="progress" data-testid="list-progress" role="progressbar" aria-label={progress.clone()}>
                    <div class="bar"></div><span>{ progress }</span>
                </div>
            }
            <div class={classes!("content", object_panel.is_some().then_some("split"))}>
                <ResourceTable titles={frame.titles.clone()} rows={Rc::new(frame.rows.clone())} first={frame.first}
                    total={frame.total} sort={frame.sort} {on_sort} {on_row} {on_scroll}
                    empty_text={frame.empty_text} {columns_from} />
                { for object_panel }
            </div>
            <Banners />
            <KeptList items={Rc::new(frame.kept_items.clone())} capacity={frame.capacity} on_stop={on_stop_kept} />
            <TimelineBar route={route.clone()} />
            if state.0.help_open {
                <HelpOverlay />
            }
            if state.0.settings_open {
                <Settings current={frame.retention.clone()} usage={Rc::new(frame.usage.clone())} capacity={frame.capacity}
                    on_apply={on_apply_retention} on_close={on_close_settings}>
                    <KeepLive capacity={frame.capacity} kept={frame.kept_count} discovered={discovered.len()}
                        transport={frame.transport_words.clone()} {on_capacity} {on_keep_everything} />
                </Settings>
            }
            <StatusBar ..frame.status.clone() />
        </main>
        </ContextProvider<ServiceContext>>
        </ContextProvider<StateContext>>
    }
}

/// The logs view of the object `key` of `route`'s resource, if it has logs.
fn logs_of(route: &Route, key: &str) -> Option<LogRoute> {
    let (namespace, name) = key.split_once('/')?;
    LogRoute::of(
        &route.group,
        &route.version,
        &route.resource,
        namespace,
        name,
    )
}

/// What the keys do with this render's rows.
fn key_handler_for(
    state: &StateContext,
    frame: &crate::service::Frame,
    route: &Route,
) -> Callback<KeyAction> {
    let state = state.clone();
    let route = route.clone();
    let (total, selected) = (frame.total, frame.selected);
    let selected_key = frame.selected_key.clone();
    Callback::from(move |action: KeyAction| {
        let last = total.saturating_sub(1);
        let move_to = |index: usize| {
            state.dispatch(Action::Select(index));
            super::dom::scroll_row_into_view(index);
        };
        match action {
            KeyAction::FocusFilter => {
                if let Some(input) = super::dom::query("[data-testid=text-filter]") {
                    let _ = input.focus();
                }
            }
            KeyAction::OpenCommand => state.dispatch(Action::ToggleCommand(true)),
            KeyAction::Move(delta) => move_to(selected.saturating_add_signed(delta).min(last)),
            KeyAction::Top => move_to(0),
            KeyAction::Bottom => move_to(last),
            KeyAction::Open => {
                if let Some(key) = &selected_key {
                    open_object(&ObjectRoute::of_key(
                        &route.group,
                        &route.version,
                        &route.resource,
                        key,
                    ));
                }
            }
            KeyAction::Help => state.dispatch(Action::ToggleHelp),
            KeyAction::Logs => {
                if let Some(logs) = selected_key.as_deref().and_then(|key| logs_of(&route, key)) {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().set_hash(&logs.to_string());
                    }
                }
            }
            KeyAction::Back => {
                if let Some(element) = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = element.blur();
                }
                let ui = &state.0;
                let innermost_is_object = ui.open_object.is_some()
                    && !(ui.command_open || ui.help_open || ui.settings_open);
                if innermost_is_object {
                    close_object(&route);
                } else {
                    state.dispatch(Action::Back);
                }
            }
        }
    })
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

/// Ages tick and backoff counts down even when nothing arrives: a render a second.
#[hook]
fn use_ticks(redraw: UseForceUpdateHandle) {
    use_effect_with((), move |_| {
        let alive = Rc::new(Cell::new(true));
        fn tick(alive: Rc<Cell<bool>>, redraw: UseForceUpdateHandle) {
            after_ms(1000, move || {
                if alive.get() {
                    redraw.force_update();
                    tick(alive, redraw);
                }
            });
        }
        tick(alive.clone(), redraw);
        move || alive.set(false)
    });
}
