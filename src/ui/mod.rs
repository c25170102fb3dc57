//! The yew app: reads the hash route, shows the informer for the resource it
//! names (kept live with the ones opened before it, see `kept`), and renders
//! the table, the object view, the timeline of every kept resource and the
//! status bar from the informers' stores and histories. The views only read; the informer runs on its
//! own through `transport`. Re-renders are batched to one per animation frame
//! however many events arrive. Keys follow k9s: `:` command, `/` filter,
//! `j`/`k` move, Enter open, Esc back, `?` help.

mod command_bar;
mod delta_list;
mod header;
mod help;
mod keep_live;
mod kept_list;
mod notices;
mod object_view;
mod settings;
pub mod status_bar;
mod table;
mod timeline;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::app::route::Route;
use crate::informer::Informer;
use crate::model::age::format_age;
use crate::model::object_text::{diff_lines, fold_managed_fields, to_yaml};
use crate::model::table::ViewSpec;
use crate::service::kept_informers::{self as kept, KeptInformers};
use crate::service::resource_view::LiveView;
use command_bar::CommandBar;
use header::Header;
use help::HelpOverlay;
use keep_live::KeepLive;
use kept_list::{KeptItem, KeptList};
use notices::Notices;
use object_view::{ObjectProps, ObjectView, OwnerLink, VersionObject, VersionRow};
use settings::{Settings, Usage};
use status_bar::{StatusBar, StatusProps};
use table::{ResourceTable, RowData, HEADER_HEIGHT_PX, ROW_HEIGHT_PX};
use timeline::Timeline;

use crate::model::timeline::{DeltaQuery, LaneMode, Viewport};
use delta_list::{DeltaList, DeltaRow, DELTA_ROW_HEIGHT_PX};

/// Mounts the app into `<body>`.
pub fn start() {
    crate::metrics::install();
    yew::Renderer::<App>::new().render();
}

/// Adds the time one `App` render took (building the view, not the DOM patch) to the page metrics.
struct RenderTimer(f64);

impl Drop for RenderTimer {
    fn drop(&mut self) {
        let metrics_now = crate::metrics::perf_now();
        crate::metrics::add_render(metrics_now - self.0);
        crate::metrics::view_built();
    }
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

fn now_unix() -> i64 {
    (js_sys::Date::now() / 1000.0) as i64
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

fn query(selector: &str) -> Option<web_sys::HtmlElement> {
    web_sys::window()?
        .document()?
        .query_selector(selector)
        .ok()??
        .dyn_into()
        .ok()
}

/// Scrolls the table so row `index` is visible.
fn scroll_row_into_view(index: usize) {
    let Some(container) = query("[data-testid=table-scroll]") else {
        return;
    };
    let top = index as f64 * ROW_HEIGHT_PX;
    let view_top = f64::from(container.scroll_top());
    let view_height = f64::from(container.client_height()) - HEADER_HEIGHT_PX;
    if top < view_top {
        container.set_scroll_top(top as i32);
    } else if top + ROW_HEIGHT_PX > view_top + view_height {
        container.set_scroll_top((top + ROW_HEIGHT_PX - view_height).max(0.0) as i32);
    }
}

/// An object the object view shows: (the kept informer it is in, its key).
type OpenObject = (u64, String);

/// What a key press does, decided with this render's state.
#[derive(Clone, Copy)]
enum KeyAction {
    FocusFilter,
    OpenCommand,
    Move(isize),
    Top,
    Bottom,
    Open,
    Back,
    Help,
}

fn key_action(key: &str) -> Option<KeyAction> {
    Some(match key {
        "/" => KeyAction::FocusFilter,
        ":" => KeyAction::OpenCommand,
        "j" | "ArrowDown" => KeyAction::Move(1),
        "k" | "ArrowUp" => KeyAction::Move(-1),
        "PageDown" => KeyAction::Move(20),
        "PageUp" => KeyAction::Move(-20),
        "g" | "Home" => KeyAction::Top,
        "G" | "End" => KeyAction::Bottom,
        "Enter" => KeyAction::Open,
        "Escape" => KeyAction::Back,
        "?" => KeyAction::Help,
        _ => return None,
    })
}

#[function_component(App)]
fn app() -> Html {
    let _render_timer = RenderTimer(crate::metrics::perf_now());
    let hash = use_state(current_hash);
    let redraw = use_force_update();
    let view: Rc<RefCell<Option<LiveView>>> = use_mut_ref(|| None);
    let kept: Rc<RefCell<KeptInformers>> =
        use_mut_ref(|| KeptInformers::new(kept::load_retention()));
    let show_settings = use_state(|| false);
    let frame_pending = use_mut_ref(|| false);
    let follow_up_pending = use_mut_ref(|| false);
    let scroll = use_state(|| (0.0_f64, 720.0_f64));
    let spec = use_state(ViewSpec::default);
    let selected = use_state(|| 0_usize);
    let open_object = use_state(|| None::<OpenObject>);
    let command_open = use_state(|| false);
    let help = use_state(|| false);
    let as_of = use_state(|| None::<crate::informer::Millis>);
    let timeline_view = use_state(Viewport::default);
    let brush = use_state(|| None::<(crate::informer::Millis, crate::informer::Millis)>);
    let lane_mode = use_state(LaneMode::default);
    let delta_query = use_state(DeltaQuery::default);
    let delta_scroll = use_state(|| (0.0_f64, 220.0_f64));
    let show_deltas = use_state(|| false);
    // (file name, speed) while a recording plays instead of the live cluster.
    let replaying = use_state(|| None::<(String, f64)>);
    let replay_speed = use_state(|| 10.0_f64);
    let live_generation = use_state(|| 0_u32);
    // The column titles of the last render (to follow a sorted column when columns change).
    let shown_titles: Rc<RefCell<Rc<Vec<String>>>> = use_mut_ref(|| Rc::new(Vec::new()));
    let import_error = use_state(|| None::<String>);
    let discovery = crate::service::api_discovery::use_discovery();
    let discovered = discovery.resources.clone();
    // The document-level key listener calls whatever this render put here.
    let key_handler: Rc<RefCell<Option<Callback<KeyAction>>>> = use_mut_ref(|| None);

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

    // Keys, once for the document; inputs keep their keys except Escape.
    {
        let key_handler = key_handler.clone();
        use_effect_with((), move |_| {
            let listener = Closure::<dyn Fn(web_sys::KeyboardEvent)>::new(
                move |event: web_sys::KeyboardEvent| {
                    if event.ctrl_key() || event.meta_key() || event.alt_key() {
                        return;
                    }
                    let in_input = event
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .is_some_and(|e| {
                            matches!(e.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA")
                        });
                    let key = event.key();
                    if in_input && key != "Escape" {
                        return;
                    }
                    let (Some(action), Some(handler)) =
                        (key_action(&key), key_handler.borrow().clone())
                    else {
                        return;
                    };
                    event.prevent_default();
                    handler.emit(action);
                },
            );
            let document = web_sys::window().and_then(|w| w.document());
            if let Some(document) = &document {
                let _ = document
                    .add_event_listener_with_callback("keydown", listener.as_ref().unchecked_ref());
            }
            move || {
                if let Some(document) = document {
                    let _ = document.remove_event_listener_with_callback(
                        "keydown",
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

    // The kept informers stop with the app.
    {
        let kept = kept.clone();
        use_effect_with((), move |_| move || kept.borrow_mut().stop_all());
    }

    let route = Route::parse(&hash);

    // The informer tells the view through this; renders are batched per animation frame.
    let on_change: Rc<dyn Fn()> = {
        let (redraw, frame_pending) = (redraw.clone(), frame_pending.clone());
        Rc::new(move || {
            if !*frame_pending.borrow() {
                *frame_pending.borrow_mut() = true;
                let frame_pending = frame_pending.clone();
                let redraw = redraw.clone();
                on_next_frame(move || {
                    *frame_pending.borrow_mut() = false;
                    redraw.force_update();
                });
            }
        })
    };

    // One view per route (and per "back to live"): the route's kept informer,
    // or a new one (which may evict the least recently shown).
    {
        let (view, kept) = (view.clone(), kept.clone());
        let on_change = on_change.clone();
        let (scroll, selected, open_object) =
            (scroll.clone(), selected.clone(), open_object.clone());
        let (as_of, replaying) = (as_of.clone(), replaying.clone());
        let discovered = discovered.clone();
        // `wide` only changes the columns shown: no new informer for it.
        let data_route = route.clone().map(|route| route.data_key());
        use_effect_with((data_route, *live_generation), move |(route, _)| {
            if let Ok(route) = route {
                if let Some(old) = view.borrow_mut().take() {
                    old.stop_replay();
                }
                replaying.set(None);
                let seed = (js_sys::Math::random() * 9.0e15) as u64;
                let namespaced = discovered
                    .iter()
                    .find(|r| r.group == route.group && r.plural == route.resource)
                    .map(|r| r.namespaced);
                let (id, driver) =
                    kept.borrow_mut()
                        .open(route, seed, on_change.clone(), namespaced);
                *view.borrow_mut() = Some(LiveView::attach(route.clone(), id, driver, on_change));
                scroll.set((0.0, scroll.1));
                selected.set(0);
                open_object.set(None);
                as_of.set(None);
            }
            let view = view.clone();
            // Runs when the route changes, before the next view opens.
            move || {
                if let Some(old) = view.borrow_mut().take() {
                    old.stop_replay();
                    kept.borrow_mut().stop_if_failing(old.source_id);
                }
            }
        });
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

    let mut guard = view.borrow_mut();
    let Some(live) = guard.as_mut() else {
        return html! {
            <main class="app">
                <Header route={route} filter={String::new()} on_filter={Callback::noop()}
                    resources={discovered.clone()} />
                <p class="notice">{ "Starting…" }</p>
            </main>
        };
    };
    live.set_wide(route.wide);
    live.set_spec((*spec).clone());
    live.set_timeline_view(*timeline_view, *lane_mode);
    if live.past_is_stale(*as_of) {
        live.set_past(*as_of);
    }
    let still_changing = live.refresh(now_ms(), now_unix(), &mut kept.borrow_mut());
    let kept_now = kept.borrow();
    if still_changing && !*follow_up_pending.borrow() {
        *follow_up_pending.borrow_mut() = true;
        let follow_up_pending = follow_up_pending.clone();
        let redraw = redraw.clone();
        after_ms(300, move || {
            *follow_up_pending.borrow_mut() = false;
            redraw.force_update();
        });
    }

    let total = live
        .past()
        .map_or_else(|| live.row_count(), |p| p.keys.len());
    let selected_index = (*selected).min(total.saturating_sub(1));
    let selected_key = live.key_at(selected_index).cloned();
    let (scroll_top, viewport) = *scroll;
    let first = ((scroll_top / ROW_HEIGHT_PX) as usize)
        .saturating_sub(10)
        .min(total);
    let count = (viewport / ROW_HEIGHT_PX) as usize + 30;
    let now_unix = now_unix();
    // The delta list covers the brush, else a paused view's range, else everything held.
    let timeline_now = crate::transport::now();
    let delta_range = match (*brush, *timeline_view) {
        (Some(range), _) => range,
        (None, Viewport::Fixed { start, end }) => (start, end),
        (None, Viewport::Live { .. }) => (0, crate::informer::Millis::MAX),
    };
    let delta_seqs = show_deltas.then(|| {
        live.deltas(
            &DeltaQuery {
                from: delta_range.0,
                to: delta_range.1,
                ..(*delta_query).clone()
            },
            &kept_now,
        )
    });
    let delta_first = ((delta_scroll.0 / DELTA_ROW_HEIGHT_PX) as usize).saturating_sub(5);
    let delta_count = (delta_scroll.1 / DELTA_ROW_HEIGHT_PX) as usize + 15;
    let sources = live.source_labels(&kept_now);
    let delta_rows: Vec<DeltaRow> = delta_seqs
        .as_ref()
        .map(|refs| {
            let first = delta_first.min(refs.len());
            refs[first..(first + delta_count).min(refs.len())]
                .iter()
                .filter_map(|(source, seq)| {
                    let driver = live.driver_for(*source, &kept_now)?;
                    let informer = driver.informer();
                    let entry = informer.history().get(*seq)?;
                    let resource = sources
                        .iter()
                        .find(|(id, _)| id == source)
                        .map(|(_, label)| label.clone())
                        .unwrap_or_default();
                    Some(DeltaRow {
                        source: *source,
                        resource,
                        seq: entry.seq,
                        when: delta_age(timeline_now, entry.at),
                        kind: format!("{:?}", entry.kind),
                        key: entry.key().to_string(),
                        resource_version: entry.resource_version().to_string(),
                        tombstone: entry.tombstone,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    // When the shown informer stopped watching after having synced, by the clock.
    let blind_since = kept_now
        .get(live.source_id)
        .and_then(|source| source.spans.blind_since())
        .map(|since| {
            let ago = crate::transport::now().saturating_sub(since) as f64;
            status_bar::clock_time(js_sys::Date::now() - ago)
        });
    let (rows, stats, unauthorized, listing, empty_text) = live.driver.with_informer(|informer| {
        let store = informer.store();
        let past = live.past();
        let keys = match past {
            Some(past) => past.keys.window(first, count),
            None => live.window(first, count),
        };
        let rows: Vec<RowData> = keys
            .iter()
            .filter_map(|key| match past {
                Some(past) => past.objects.get(key).map(|o| (o, false)),
                // A key the store no longer has is a deleted row fading out.
                None => store
                    .get_by_key(key)
                    .map(|o| (o, false))
                    .or_else(|| live.fading(key).map(|o| (o, true))),
            })
            .map(|(object, deleted)| RowData {
                key: object.key.clone(),
                resource_version: object.resource_version.clone(),
                cells: live
                    .columns
                    .iter()
                    .map(|c| c.cell(object, now_unix))
                    .collect(),
                flash: live.recently_changed(&object.key),
                selected: selected_key.as_deref() == Some(object.key.as_str()),
                deleted,
            })
            .collect();
        let status = informer.status();
        let synced = informer.has_synced();
        let replaying = replaying.is_some();
        let line = crate::model::status_line::status_line(&crate::model::status_line::LineInput {
            phase: &status.phase,
            synced,
            replaying,
            blind_since: blind_since.as_deref(),
            now: crate::transport::now(),
        });
        let listing = match &status.phase {
            crate::informer::Phase::Listing { .. } if !synced => Some(line.detail.clone()),
            _ => None,
        };
        let failing = status.phase.is_failing();
        let unauthorized =
            failing && status.last_error.as_ref().and_then(|e| e.status()) == Some(401);
        let stats = StatusProps {
            resource: route.stats_name(),
            count: store.len(),
            synced,
            state: status.phase.as_str().to_string(),
            label: line.label,
            freshness: line.freshness,
            detail: line.detail,
            digest: live.digest().to_string(),
            deltas: informer.history().recorded(),
            dropped: informer.history().dropped(),
            held: informer.history().len(),
            events: status.events,
            relists: status.relists,
            channel: status_bar::channel_words(
                &crate::transport::channel::status(),
                crate::transport::channel::open_streams()
                    .saturating_sub(discovery.background_streams()),
                crate::transport::budget::watches_in_use(),
            ),
        };
        let empty_text = crate::model::status_line::empty_text(&status.phase, synced, replaying);
        (rows, stats, unauthorized, listing, empty_text)
    });
    // The object view reads the informer the object is in (a delta of
    // another kept resource opens that resource's object).
    let details = open_object.as_ref().and_then(|(source, key)| {
        let driver = live.driver_for(*source, &kept_now)?;
        let details = driver.with_informer(|informer| object_details(informer, key));
        Some(details)
    });
    // The last error in plain words (401 has its own sign-in notice).
    let (plain, can_retry) = live.driver.with_informer(|informer| {
        let status = informer.status();
        let failing = status.phase.is_failing();
        let can_retry = matches!(
            status.phase,
            crate::informer::Phase::Error { .. } | crate::informer::Phase::Failed { .. }
        );
        let scope =
            crate::model::plain_error::scope_words(route.namespace.as_deref(), live.namespaced());
        let plain = status
            .last_error
            .as_ref()
            .filter(|_| failing && !unauthorized)
            .and_then(|error| {
                crate::model::plain_error::plain_words(error, &route.stats_name(), &scope)
            });
        (plain, can_retry)
    });
    let titles: Rc<Vec<String>> =
        Rc::new(live.columns.iter().map(|c| c.title.to_string()).collect());
    // Columns came or went (the server's arrived, the wide view): keep sorting by the same title.
    let previous_titles = shown_titles.replace(titles.clone());
    if *previous_titles != *titles {
        if let Some(index) = spec.sort_column {
            let title = previous_titles.get(index);
            let moved = title.and_then(|t| titles.iter().position(|now| now == t));
            if moved != Some(index) {
                spec.set(ViewSpec {
                    sort_column: moved,
                    descending: moved.is_some() && spec.descending,
                    ..(*spec).clone()
                });
            }
        }
    }
    let wide_toggle = live.has_wide_columns().then_some(route.wide);
    let columns_from: AttrValue = if live.server_columns() {
        "server"
    } else {
        "client"
    }
    .into();
    let sort = (live.spec().sort_column, live.spec().descending);
    let timeline_data = live.timeline();
    let past_banner = live.past().map(|past| {
        let seconds_ago = crate::transport::now().saturating_sub(past.at) / 1000;
        let back = {
            let as_of = as_of.clone();
            Callback::from(move |_| as_of.set(None))
        };
        html! {
            <div class="past-banner" data-testid="time-travel" data-at={past.at.to_string()}
                data-count={past.keys.len().to_string()} role="status">
                <strong>{ "Viewing the past: " }</strong>
                { format!("the store as it was {} ago, {} objects", format_age(seconds_ago as i64), past.keys.len()) }
                if !past.complete {
                    { " (retention evicted older deltas; objects unchanged since then are missing)" }
                }
                <button onclick={back} data-testid="back-to-live">{ "Back to live" }</button>
            </div>
        }
    });
    let on_export = {
        let view = view.clone();
        let resource = route.stats_name();
        // A brushed range exports only that range.
        let (from, to) = brush.unwrap_or((0, crate::informer::Millis::MAX));
        Callback::from(move |_: MouseEvent| {
            if let Some(live) = view.borrow().as_ref() {
                let text = live.driver.with_informer(|informer| {
                    crate::api::recording::export_ndjson(informer.history(), from, to)
                });
                download(&format!("deltascope-{resource}.ndjson"), &text);
            }
        })
    };
    let on_pick = {
        let as_of = as_of.clone();
        Callback::from(move |at| as_of.set(Some(at)))
    };
    let on_view = {
        let timeline_view = timeline_view.clone();
        Callback::from(move |next| timeline_view.set(next))
    };
    let on_brush = {
        let (brush, delta_scroll) = (brush.clone(), delta_scroll.clone());
        Callback::from(
            move |range: Option<(crate::informer::Millis, crate::informer::Millis)>| {
                delta_scroll.set((0.0, delta_scroll.1));
                brush.set(range);
            },
        )
    };
    // Brushing a range is asking for its deltas: the panel opens when the
    // drag ends, never under it (it would move the timeline off the pointer).
    let on_brushed = {
        let show_deltas = show_deltas.clone();
        Callback::from(move |_: ()| show_deltas.set(true))
    };
    let on_mode = {
        let lane_mode = lane_mode.clone();
        Callback::from(move |mode| lane_mode.set(mode))
    };
    let delta_panel = delta_seqs.as_ref().map(|seqs| {
        let on_query = {
            let (delta_query, delta_scroll) = (delta_query.clone(), delta_scroll.clone());
            Callback::from(move |query: DeltaQuery| {
                delta_scroll.set((0.0, delta_scroll.1));
                delta_query.set(query);
            })
        };
        let on_scroll = {
            let delta_scroll = delta_scroll.clone();
            Callback::from(move |position| delta_scroll.set(position))
        };
        let on_open = {
            let open_object = open_object.clone();
            Callback::from(move |object: OpenObject| open_object.set(Some(object)))
        };
        let range_label = match (*brush, *timeline_view) {
            (Some((from, to)), _) => format!(
                "selected range: {} → {}",
                delta_age(timeline_now, from),
                delta_age(timeline_now, to)
            ),
            (None, Viewport::Fixed { start, end }) => format!(
                "range in view: {} → {}",
                delta_age(timeline_now, start),
                delta_age(timeline_now, end)
            ),
            (None, Viewport::Live { .. }) => "everything held, newest first".to_string(),
        };
        html! {
            <DeltaList rows={Rc::new(delta_rows.clone())} first={delta_first.min(seqs.len())}
                total={seqs.len()} {range_label} query={(*delta_query).clone()} {on_query}
                resources={Rc::new(sources.iter().map(|(_, label)| label.clone()).collect::<Vec<_>>())}
                {on_scroll} {on_open} />
        }
    });
    let on_toggle_deltas = {
        let show_deltas = show_deltas.clone();
        Callback::from(move |_: MouseEvent| show_deltas.set(!*show_deltas))
    };
    let on_import = {
        let (view, on_change, route) = (view.clone(), on_change.clone(), route.clone());
        let retention = kept_now.retention().clone();
        let (replaying, import_error, speed, as_of) = (
            replaying.clone(),
            import_error.clone(),
            *replay_speed,
            as_of.clone(),
        );
        Callback::from(move |event: Event| {
            let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() else {
                return;
            };
            let Some(file) = input.files().and_then(|files| files.get(0)) else {
                return;
            };
            let (view, on_change, route) = (view.clone(), on_change.clone(), route.clone());
            let (replaying, import_error, as_of) =
                (replaying.clone(), import_error.clone(), as_of.clone());
            let retention = retention.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let name = file.name();
                let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                    Ok(text) => text.as_string().unwrap_or_default(),
                    Err(_) => {
                        import_error.set(Some(format!("cannot read {name}")));
                        return;
                    }
                };
                match crate::api::recording::parse_recording(&text) {
                    Ok(events) => {
                        if let Some(old) = view.borrow_mut().take() {
                            old.stop_replay();
                        }
                        *view.borrow_mut() = Some(LiveView::replay(
                            route,
                            events,
                            speed,
                            on_change.clone(),
                            retention,
                        ));
                        import_error.set(None);
                        as_of.set(None);
                        replaying.set(Some((name, speed)));
                        on_change();
                    }
                    Err(error) => import_error.set(Some(format!("{name}: {error}"))),
                }
            });
        })
    };
    let on_speed = {
        let replay_speed = replay_speed.clone();
        Callback::from(move |event: Event| {
            if let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() {
                replay_speed.set(select.value().parse().unwrap_or(10.0));
            }
        })
    };
    let replay_banner = (*replaying).clone().map(|(name, speed)| {
        let live_generation = live_generation.clone();
        let back = Callback::from(move |_| live_generation.set(*live_generation + 1));
        html! {
            <div class="past-banner" data-testid="replay" role="status">
                <strong>{ "Replaying a recording: " }</strong>
                { format!("{name} at {speed}×, offline (no cluster)") }
                <button onclick={back} data-testid="back-to-live-from-replay">{ "Back to live" }</button>
            </div>
        }
    });
    let shown_source = live.source_id;
    let capacity = kept_now.capacity();
    let kept_count = kept_now.len();
    let transport_words = match crate::transport::channel::status() {
        crate::transport::channel::ChannelStatus::Unavailable { .. } => format!(
            "serve offers no channel, so at most {} watches get a connection of their own and the \
             rest wait, paused (browsers give a page six connections).",
            crate::transport::budget::OWN_CONNECTION_WATCHES
        ),
        _ => {
            "Their watches all share one channel to deltascope serve (one connection).".to_string()
        }
    };
    let retention_now = kept_now.retention().clone();
    let kept_items: Vec<KeptItem> = kept_now
        .by_age()
        .into_iter()
        .map(|(id, source)| {
            let informer = source.driver.informer();
            KeptItem {
                id,
                label: source.label.clone(),
                href: source.route.to_string(),
                state: if source.driver.is_paused() {
                    "paused".to_string()
                } else {
                    informer.status().phase.as_str().to_string()
                },
                held: informer.history().len(),
                shown: id == shown_source,
            }
        })
        .collect();
    let usage: Vec<Usage> = if *show_settings {
        kept_now
            .by_age()
            .into_iter()
            .map(|(_, source)| {
                let informer = source.driver.informer();
                let history = informer.history();
                Usage {
                    label: source.label.clone(),
                    held: history.len(),
                    bytes: history.bytes(),
                    recorded: history.recorded(),
                    dropped: history.dropped(),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    drop(kept_now);
    drop(guard);

    let on_stop_kept = {
        let (kept, open_object, delta_query, redraw) = (
            kept.clone(),
            open_object.clone(),
            delta_query.clone(),
            redraw.clone(),
        );
        Callback::from(move |id: u64| {
            let label = kept.borrow().get(id).map(|source| source.label.clone());
            if !kept.borrow_mut().stop(id) {
                return;
            }
            if open_object
                .as_ref()
                .is_some_and(|(source, _)| *source == id)
            {
                open_object.set(None);
            }
            if label.is_some() && delta_query.resource == label {
                delta_query.set(DeltaQuery {
                    resource: None,
                    ..(*delta_query).clone()
                });
            }
            redraw.force_update();
        })
    };
    let on_apply_retention = {
        let (kept, view, redraw) = (kept.clone(), view.clone(), redraw.clone());
        Callback::from(move |config: crate::informer::HistoryConfig| {
            kept.borrow_mut().set_retention(config.clone());
            if let Some(live) = view.borrow().as_ref() {
                live.set_replay_retention(&config);
            }
            redraw.force_update();
            kept::save_retention(&config)
        })
    };
    let on_capacity = {
        let (kept, redraw) = (kept.clone(), redraw.clone());
        Callback::from(move |capacity: usize| {
            let saved = kept.borrow_mut().set_capacity(capacity);
            redraw.force_update();
            saved
        })
    };
    let on_keep_everything = {
        let (kept, discovered, on_change, redraw) = (
            kept.clone(),
            discovered.clone(),
            on_change.clone(),
            redraw.clone(),
        );
        Callback::from(move |_: ()| {
            let mut kept = kept.borrow_mut();
            let wanted = kept.len() + discovered.len();
            if kept.capacity() < wanted {
                // Saving may fail (no localStorage): it applies all the same.
                let _ = kept.set_capacity(wanted);
            }
            for resource in discovered.iter() {
                let route = Route::new(&resource.group, &resource.version, &resource.plural);
                let seed = (js_sys::Math::random() * 9.0e15) as u64;
                kept.keep(&route, seed, on_change.clone(), Some(resource.namespaced));
            }
            drop(kept);
            redraw.force_update();
        })
    };
    let on_settings = {
        let show_settings = show_settings.clone();
        Callback::from(move |_: ()| show_settings.set(!*show_settings))
    };
    let on_close_settings = {
        let show_settings = show_settings.clone();
        Callback::from(move |_: ()| show_settings.set(false))
    };

    // This render's key handling.
    {
        let (selected, open_object, command_open, help, spec, show_settings) = (
            selected.clone(),
            open_object.clone(),
            command_open.clone(),
            help.clone(),
            spec.clone(),
            show_settings.clone(),
        );
        let selected_key = selected_key.clone();
        *key_handler.borrow_mut() = Some(Callback::from(move |action: KeyAction| {
            let last = total.saturating_sub(1);
            let move_to = |index: usize| {
                selected.set(index);
                scroll_row_into_view(index);
            };
            match action {
                KeyAction::FocusFilter => {
                    if let Some(input) = query("[data-testid=text-filter]") {
                        let _ = input.focus();
                    }
                }
                KeyAction::OpenCommand => command_open.set(true),
                KeyAction::Move(delta) => {
                    move_to(selected_index.saturating_add_signed(delta).min(last))
                }
                KeyAction::Top => move_to(0),
                KeyAction::Bottom => move_to(last),
                KeyAction::Open => {
                    open_object.set(selected_key.clone().map(|key| (shown_source, key)))
                }
                KeyAction::Help => help.set(!*help),
                KeyAction::Back => {
                    if let Some(element) = web_sys::window()
                        .and_then(|w| w.document())
                        .and_then(|d| d.active_element())
                        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                    {
                        let _ = element.blur();
                    }
                    if *command_open {
                        command_open.set(false);
                    } else if *help {
                        help.set(false);
                    } else if *show_settings {
                        show_settings.set(false);
                    } else if open_object.is_some() {
                        open_object.set(None);
                    } else if !spec.filter.is_empty() {
                        spec.set(ViewSpec {
                            filter: String::new(),
                            ..(*spec).clone()
                        });
                    }
                }
            }
        }));
    }

    let on_scroll = {
        let scroll = scroll.clone();
        Callback::from(move |position: (f64, f64)| scroll.set(position))
    };
    let on_sort = {
        let spec = spec.clone();
        Callback::from(move |column: usize| {
            let mut next = (*spec).clone();
            match (next.sort_column == Some(column), next.descending) {
                (false, _) => (next.sort_column, next.descending) = (Some(column), false),
                (true, false) => next.descending = true,
                (true, true) => (next.sort_column, next.descending) = (None, false),
            }
            spec.set(next);
        })
    };
    let on_filter = {
        let (spec, selected) = (spec.clone(), selected.clone());
        Callback::from(move |text: String| {
            spec.set(ViewSpec {
                filter: text,
                ..(*spec).clone()
            });
            selected.set(0);
        })
    };
    let on_row = {
        let (selected, open_object) = (selected.clone(), open_object.clone());
        let keys: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
        Callback::from(move |(key, open): (String, bool)| {
            if let Some(offset) = keys.iter().position(|k| *k == key) {
                selected.set(first + offset);
            }
            if open {
                open_object.set(Some((shown_source, key)));
            }
        })
    };
    let command_bar = command_open.then(|| {
        let command_open = command_open.clone();
        let on_run = Callback::from(move |next: Route| {
            command_open.set(false);
            set_hash(&next);
        });
        html! { <CommandBar route={route.clone()} resources={discovered.clone()} {on_run} /> }
    });
    if live_is_synced_table(&stats) {
        crate::metrics::table_synced_once();
    }
    // Discovery does not list the route's resource.
    let unserved = !discovered.is_empty()
        && !discovered
            .iter()
            .any(|r| r.group == route.group && r.plural == route.resource);
    let on_retry = {
        let view = view.clone();
        Callback::from(move |_: ()| {
            if let Some(live) = view.borrow().as_ref() {
                live.driver.retry();
            }
        })
    };
    let object_panel = details.map(|details| {
        let open_object = open_object.clone();
        let on_close = Callback::from(move |_| open_object.set(None));
        html! { <ObjectView ..ObjectProps { on_close, ..details } /> }
    });

    html! {
        <main class="app">
            <Header route={route.clone()} filter={spec.filter.clone()} {on_filter} resources={discovered.clone()}
                wide={wide_toggle} {on_settings} settings_open={*show_settings} />
            { discovery.hook() }
            if let Some(problem) = discovery.problem.clone() {
                <p class="notice" data-testid="discovery-warning">{ problem }</p>
            }
            { for command_bar }
            <Notices route={route.clone()} {unserved} {unauthorized} {plain} {can_retry} {on_retry} />
            if let Some(progress) = listing {
                <div class="progress" data-testid="list-progress" role="progressbar" aria-label={progress.clone()}>
                    <div class="bar"></div><span>{ progress }</span>
                </div>
            }
            <div class={classes!("content", object_panel.is_some().then_some("split"))}>
                <ResourceTable {titles} rows={Rc::new(rows)} {first} {total} {sort} {on_sort} {on_row} {on_scroll}
                    empty_text={empty_text} {columns_from} />
                { for object_panel }
            </div>
            { for past_banner }
            { for replay_banner }
            if let Some(error) = (*import_error).clone() {
                <p class="notice error" role="alert" data-testid="import-error">{ error }</p>
            }
            <KeptList items={Rc::new(kept_items)} {capacity} on_stop={on_stop_kept} />
            <div class="timeline-bar">
                <Timeline data={timeline_data} viewport={*timeline_view} cursor={*as_of} brush={*brush}
                    now={timeline_now} {on_pick} {on_view} {on_brush} {on_brushed} {on_mode} />
                <button class="toggle-deltas" onclick={on_toggle_deltas} data-testid="toggle-deltas"
                    aria-pressed={show_deltas.to_string()}
                    title="List the deltas of the selected range">{ "Deltas" }</button>
                <button class="export" onclick={on_export} data-testid="export"
                    title="Download the history (or the selected range) as NDJSON watch events with times">
                    { if brush.is_some() { "Export selection" } else { "Export recording" } }</button>
                <label class="import" title="Replay an exported recording through the informer, offline">
                    { "Import " }
                    <input type="file" accept=".ndjson,.jsonl,application/x-ndjson" onchange={on_import}
                        data-testid="import" />
                </label>
                <select onchange={on_speed} aria-label="replay speed" data-testid="replay-speed">
                    { for [1.0_f64, 10.0, 100.0].iter().map(|s| html! {
                        <option value={s.to_string()} selected={*replay_speed == *s}>{ format!("{s}×") }</option>
                    }) }
                </select>
            </div>
            { for delta_panel }
            if *help {
                <HelpOverlay />
            }
            if *show_settings {
                <Settings current={retention_now} usage={Rc::new(usage)} {capacity}
                    on_apply={on_apply_retention} on_close={on_close_settings}>
                    <KeepLive {capacity} kept={kept_count} discovered={discovered.len()}
                        transport={transport_words} {on_capacity} {on_keep_everything} />
                </Settings>
            }
            <StatusBar ..stats />
        </main>
    }
}

/// How long before `now` a delta at `at` was, to the tenth of a second.
fn delta_age(now: crate::informer::Millis, at: crate::informer::Millis) -> String {
    let ms = now.saturating_sub(at);
    if ms < 60_000 {
        format!("{:.1} s ago", ms as f64 / 1000.0)
    } else {
        format!("{} ago", format_age((ms / 1000) as i64))
    }
}

/// Offers `text` as a file download.
fn download(name: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/x-ndjson");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = web_sys::window().and_then(|w| w.document());
    if let Some(anchor) = document
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        anchor.set_href(&url);
        anchor.set_download(name);
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Everything the object view shows for `key`, from the store and the history.
fn object_details(informer: &Informer, key: &str) -> ObjectProps {
    let history = informer.history();
    let current = informer.store().get_by_key(key).cloned();
    let last_seen = current
        .clone()
        .or_else(|| history.versions(key).last().map(|e| e.object.clone()));
    let (yaml, json, folded, labels, owners) = match &last_seen {
        Some(object) => {
            let value = object.value.to_json();
            let (clean, folded) = fold_managed_fields(&value);
            let json = serde_json::to_string_pretty(&clean).unwrap_or_default();
            let labels: Vec<(String, String)> = object
                .labels()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let owners = owner_links(&value, object.namespace());
            (to_yaml(&clean), json, folded, labels, owners)
        }
        None => (String::new(), String::new(), 0, Vec::new(), Vec::new()),
    };
    let now_ms = crate::transport::now();
    let mut previous: Option<serde_json::Value> = None;
    let versions: Vec<VersionRow> = history
        .versions(key)
        .map(|entry| {
            let value = entry.object.value.to_json();
            let changes = match &previous {
                Some(old) => diff_lines(old, &json_patch::diff(old, &value)),
                None => Vec::new(),
            };
            previous = Some(value);
            let seconds_ago = (now_ms.saturating_sub(entry.at) / 1000) as i64;
            VersionRow {
                seq: entry.seq,
                when: format!("{} ago", format_age(seconds_ago)),
                kind: format!("{:?}", entry.kind),
                resource_version: entry.resource_version().to_string(),
                tombstone: entry.tombstone,
                changes,
                object: VersionObject(entry.object.clone()),
            }
        })
        .collect();
    ObjectProps {
        object_key: key.to_string(),
        present: current.is_some(),
        yaml: Rc::new(yaml),
        json: Rc::new(json),
        folded_managed_fields: folded,
        labels: Rc::new(labels),
        owners: Rc::new(owners),
        versions: Rc::new(versions),
        on_close: Callback::noop(),
    }
}

fn owner_links(value: &serde_json::Value, namespace: Option<&str>) -> Vec<OwnerLink> {
    let Some(owners) = value
        .pointer("/metadata/ownerReferences")
        .and_then(|o| o.as_array())
    else {
        return Vec::new();
    };
    owners
        .iter()
        .map(|owner| {
            let kind = owner
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or("")
                .to_string();
            let name = owner
                .get("name")
                .and_then(|k| k.as_str())
                .unwrap_or("")
                .to_string();
            let target = match kind.as_str() {
                "ReplicaSet" => Some(("apps", "replicasets")),
                "Deployment" => Some(("apps", "deployments")),
                "StatefulSet" => Some(("apps", "statefulsets")),
                "DaemonSet" => Some(("apps", "daemonsets")),
                "Job" => Some(("batch", "jobs")),
                "Node" => Some(("", "nodes")),
                _ => None,
            };
            let href = target.map(|(group, plural)| {
                let mut route = Route::new(group, "v1", plural);
                route.namespace = namespace.filter(|_| plural != "nodes").map(str::to_string);
                route.field_selector = Some(format!("metadata.name={name}"));
                route.to_string()
            });
            OwnerLink { kind, name, href }
        })
        .collect()
}

/// The first synced render of a live table (what the page-open benchmark waits for).
fn live_is_synced_table(stats: &StatusProps) -> bool {
    stats.synced && stats.state == "watching"
}
