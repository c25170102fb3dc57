//! The yew app: reads the hash route, runs one informer for the resource it
//! names, and renders the table and status bar from the informer's store. The
//! views only read; the informer runs on its own through `transport`.
//! Re-renders are batched to one per animation frame however many events arrive.

mod live_view;
pub mod status_bar;
mod table;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::informer::Phase;
use crate::route::Route;
use live_view::LiveView;
use status_bar::{StatusBar, StatusProps};
use table::{ResourceTable, RowData, ROW_HEIGHT_PX};

/// Mounts the app into `<body>`.
pub fn start() {
    yew::Renderer::<App>::new().render();
}

fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

fn set_hash(route: &Route) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_hash(&route.to_string());
    }
}

fn now_ms() -> f64 {
    crate::transport::now() as f64
}

/// Runs `f` on the next animation frame (or right away if there is no window).
fn on_next_frame(f: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return f();
    };
    let callback = Closure::once_into_js(f);
    let _ = window.request_animation_frame(callback.unchecked_ref());
}

fn after_ms(delay: i32, f: impl FnOnce() + 'static) {
    if let Some(window) = web_sys::window() {
        let callback = Closure::once_into_js(f);
        let _ = window
            .set_timeout_with_callback_and_timeout_and_arguments_0(callback.unchecked_ref(), delay);
    }
}

#[function_component(App)]
fn app() -> Html {
    let hash = use_state(current_hash);
    let redraw = use_force_update();
    let view: Rc<RefCell<Option<LiveView>>> = use_mut_ref(|| None);
    let frame_pending = use_mut_ref(|| false);
    let follow_up_pending = use_mut_ref(|| false);
    let scroll = use_state(|| (0.0_f64, 720.0_f64));

    // Follow the address bar.
    {
        let hash = hash.clone();
        use_effect_with((), move |_| {
            let listener = Closure::<dyn Fn()>::new(move || hash.set(current_hash()));
            let window = web_sys::window();
            if let Some(window) = &window {
                let _ = window.add_event_listener_with_callback(
                    "hashchange",
                    listener.as_ref().unchecked_ref(),
                );
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

    // Ages tick and backoff counts down even when nothing arrives.
    {
        let redraw = redraw.clone();
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

    let route = Route::parse(&hash);

    // One informer per route; a new route stops the old one.
    {
        let view = view.clone();
        let redraw = redraw.clone();
        let frame_pending = frame_pending.clone();
        let scroll = scroll.clone();
        use_effect_with(route.clone(), move |route| {
            if let Ok(route) = route {
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
                let seed = (js_sys::Math::random() * 9.0e15) as u64;
                *view.borrow_mut() = Some(LiveView::start(route.clone(), seed, on_change));
                scroll.set((0.0, scroll.1));
            }
            let view = view.clone();
            move || {
                if let Some(old) = view.borrow_mut().take() {
                    old.driver.stop();
                }
            }
        });
    }

    let route = match route {
        Ok(route) => route,
        Err(error) => {
            return html! {
                <main class="app">
                    <Header route={Route::default()} />
                    <section class="notice error">
                        <h2>{ "This address does not name a resource view" }</h2>
                        <p>{ error.to_string() }</p>
                        <p><a href="#/core/v1/pods">{ "Show pods" }</a></p>
                    </section>
                </main>
            };
        }
    };

    let mut guard = view.borrow_mut();
    let Some(live) = guard.as_mut() else {
        return html! { <main class="app"><Header route={route} /><p class="notice">{ "Starting…" }</p></main> };
    };
    let now = now_ms();
    if live.refresh(now) && !*follow_up_pending.borrow() {
        *follow_up_pending.borrow_mut() = true;
        let follow_up_pending = follow_up_pending.clone();
        let redraw = redraw.clone();
        after_ms(300, move || {
            *follow_up_pending.borrow_mut() = false;
            redraw.force_update();
        });
    }

    let (scroll_top, viewport) = *scroll;
    let total = live.keys.len();
    let first = ((scroll_top / ROW_HEIGHT_PX) as usize)
        .saturating_sub(10)
        .min(total);
    let count = (viewport / ROW_HEIGHT_PX) as usize + 30;
    let now_unix = (js_sys::Date::now() / 1000.0) as i64;
    let (rows, stats, unauthorized) = live.driver.with_informer(|informer| {
        let store = informer.store();
        let rows: Vec<RowData> = live
            .keys
            .window(first, count)
            .iter()
            .filter_map(|key| store.get_by_key(key))
            .map(|object| RowData {
                key: object.key.clone(),
                resource_version: object.resource_version.clone(),
                cells: live
                    .columns
                    .iter()
                    .map(|c| (c.cell)(&object.value, now_unix))
                    .collect(),
                flash: live.recently_changed(&object.key),
            })
            .collect();
        let status = informer.status();
        let detail = match &status.phase {
            Phase::Listing {
                pages,
                items,
                bytes,
            } => {
                format!(
                    "listing: {items} items in {pages} pages ({:.1} MB)",
                    *bytes as f64 / 1e6
                )
            }
            Phase::Watching => "watching for changes".to_string(),
            Phase::Backoff { until, reason } => {
                let seconds =
                    (until.saturating_sub(crate::transport::now()) as f64 / 1000.0).ceil();
                format!("retrying in {seconds:.0} s: {reason}")
            }
            Phase::Error { message } => message.clone(),
            _ => String::new(),
        };
        let last_error = status
            .last_error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let unauthorized = last_error.contains("401") || last_error.contains("Unauthorized");
        let stats = StatusProps {
            resource: route.stats_name(),
            count: store.len(),
            synced: informer.has_synced(),
            state: status.phase.as_str().to_string(),
            detail,
            digest: live.digest().to_string(),
            deltas: informer.history().recorded(),
            dropped: informer.history().dropped(),
            events: status.events,
            relists: status.relists,
        };
        (rows, stats, unauthorized)
    });
    let titles: Rc<Vec<&'static str>> = Rc::new(live.columns.iter().map(|c| c.title).collect());
    let on_scroll = {
        let scroll = scroll.clone();
        Callback::from(move |position: (f64, f64)| scroll.set(position))
    };
    let empty_text = if stats.synced {
        "No objects match."
    } else {
        "Loading…"
    };
    drop(guard);

    html! {
        <main class="app">
            <Header route={route.clone()} />
            if unauthorized {
                <section class="notice error" data-testid="sign-in">
                    <h2>{ "Sign in to deltascope" }</h2>
                    <p>{ "Your session is missing or has expired. Open the address that the " }
                       <code>{ "deltascope serve" }</code>
                       { " command printed (it ends in ?token=…); it signs this browser in." }</p>
                </section>
            }
            <ResourceTable {titles} rows={Rc::new(rows)} {first} {total} {on_scroll} empty_text={empty_text} />
            <StatusBar ..stats />
        </main>
    }
}

#[derive(Properties, PartialEq)]
struct HeaderProps {
    route: Route,
}

const QUICK_RESOURCES: &[(&str, &str, &str, &str)] = &[
    ("pods", "", "v1", "pods"),
    ("deployments", "apps", "v1", "deployments"),
    ("replicasets", "apps", "v1", "replicasets"),
    ("services", "", "v1", "services"),
    ("configmaps", "", "v1", "configmaps"),
    ("secrets", "", "v1", "secrets"),
    ("nodes", "", "v1", "nodes"),
    ("namespaces", "", "v1", "namespaces"),
    ("events", "", "v1", "events"),
];

/// Resource switcher and server-side filters; every change is a new hash route.
#[function_component(Header)]
fn header(props: &HeaderProps) -> Html {
    let route = props.route.clone();
    let on_resource = {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() else {
                return;
            };
            if let Some((_, group, version, plural)) =
                QUICK_RESOURCES.iter().find(|r| r.0 == select.value())
            {
                let mut next = Route::new(group, version, plural);
                next.namespace = route.namespace.clone();
                set_hash(&next);
            }
        })
    };
    let filter_input = |field: fn(&mut Route) -> &mut Option<String>| {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() else {
                return;
            };
            let mut next = route.clone();
            let value = input.value().trim().to_string();
            *field(&mut next) = Some(value).filter(|v| !v.is_empty());
            set_hash(&next);
        })
    };
    html! {
        <header class="top-bar">
            <h1>{ "deltascope" }</h1>
            <label>{ "resource " }
                <select onchange={on_resource} aria-label="resource">
                    { for QUICK_RESOURCES.iter().map(|(name, group, _, plural)| html! {
                        <option value={*name} selected={route.resource == *plural && route.group == *group}>{ *name }</option>
                    }) }
                </select>
            </label>
            <label>{ "namespace " }
                <input type="text" placeholder="all" value={route.namespace.clone().unwrap_or_default()}
                    onchange={filter_input(|r| &mut r.namespace)} data-testid="namespace-filter" />
            </label>
            <label>{ "labels " }
                <input type="text" placeholder="app=web,tier!=db" value={route.label_selector.clone().unwrap_or_default()}
                    onchange={filter_input(|r| &mut r.label_selector)} data-testid="label-filter" />
            </label>
            <label>{ "fields " }
                <input type="text" placeholder="status.phase=Running" value={route.field_selector.clone().unwrap_or_default()}
                    onchange={filter_input(|r| &mut r.field_selector)} data-testid="field-filter" />
            </label>
        </header>
    }
}
