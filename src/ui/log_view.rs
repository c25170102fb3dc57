//! The logs view: one container, all of a pod's, or a workload's pods,
//! interleaved by timestamp, each source with its colour and prefix. It
//! reads the service's [`LogFrame`](crate::model::log_frame::LogFrame) for
//! the rows its virtual scrolling draws ([`use_virtual_rows`], following
//! the end while the view follows); display
//! choices are dispatched to the page's state, reading options (container,
//! previous, tail, since) change the address. Prefixes and timestamps are
//! drawn from attributes by CSS, so each line's text is its element's text.

use crate::model::decimal::short;
use std::rc::Rc;

use web_sys::HtmlInputElement;
use yew::prelude::*;

use super::context::StateContext;
use super::virtual_rows::{use_virtual_rows, End, InView, RowWindow};
use crate::address::log_route::{LogRoute, LogTarget};
use crate::app::log_ui::{LogUi, LogUiAction};
use crate::app::state::Action;
use crate::informer::logs::RingBounds;
use crate::model::log_frame::{format_bytes, LogFrame, LogFrameRow};
use crate::service::Informers;

/// Height of one log row in pixels (the stylesheet's `.log-line`).
pub const LOG_ROW_PX: f64 = 18.0;

/// The log rows drawn: those that can show, and 20 either side.
const LOG_ROWS: RowWindow = RowWindow {
    row_height: LOG_ROW_PX,
    above: 20,
    below: 20,
    in_view: InView::Partly,
};

#[derive(Properties, Clone)]
pub struct LogProps {
    pub route: LogRoute,
    pub informers: Rc<Informers>,
    /// Changes every frame, so the view draws again.
    pub frame_number: u64,
}

impl PartialEq for LogProps {
    fn eq(&self, other: &Self) -> bool {
        self.route == other.route
            && self.frame_number == other.frame_number
            && Rc::ptr_eq(&self.informers, &other.informers)
    }
}

fn go(route: &LogRoute) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_hash(&route.to_string());
    }
}

fn input_value(event: &Event) -> String {
    event
        .target_dyn_into::<HtmlInputElement>()
        .map(|input| input.value())
        .unwrap_or_default()
}

fn checked(event: &Event) -> bool {
    event
        .target_dyn_into::<HtmlInputElement>()
        .is_some_and(|input| input.checked())
}

#[function_component(LogView)]
pub fn log_view(props: &LogProps) -> Html {
    let state = use_context::<StateContext>().expect("the app provides the state");
    let ui = state.0.log.clone();
    let informers = props.informers.clone();
    let route = props.route.clone();
    let total = informers.log_rows();
    let on_scrolled = {
        let state = state.clone();
        Callback::from(move |(position, at_end)| {
            state.dispatch(Action::Log(LogUiAction::Scrolled { position, at_end }))
        })
    };
    let end = if ui.following { End::Follow } else { End::Free };
    let area = use_virtual_rows(LOG_ROWS, total, end, on_scrolled);
    let (first, count) = LOG_ROWS.rows_of(ui.scroll, total, end);
    let frame = informers.log_frame(&ui, first, count);
    // Bring the current match into view when it changes.
    {
        let node = area.node.clone();
        let current = frame.as_ref().and_then(|f| f.current_match);
        use_effect_with(current, move |current| {
            if let (Some(row), Some(element)) = (current, node.cast::<web_sys::Element>()) {
                let top = *row as f64 * LOG_ROW_PX;
                let height = element.client_height() as f64;
                element.set_scroll_top((top - height / 2.0).max(0.0) as i32);
            }
        });
    }
    let Some(frame) = frame else {
        return html! { <p class="notice">{ "Starting…" }</p> };
    };
    let following = ui.following && frame.live;
    let (pad_top, pad_bottom) = area.spacers(first, count);
    html! {
        <section class="log-view" data-testid="log-view" data-lines={frame.lines.to_string()}
            data-dropped={frame.evicted_lines.to_string()} data-evicted={frame.evicted_lines.to_string()}
            data-following={following.to_string()} data-sources={frame.sources.len().to_string()}
            data-breaks={frame.breaks.to_string()} data-repeated={frame.repeated.to_string()} data-bytes={frame.held_bytes.to_string()}
            data-max-bytes={frame.bounds.max_bytes.to_string()}>
            { controls(&state, &ui, &frame, &informers, &route) }
            { memory_line(&frame, &informers) }
            { source_notices(&frame) }
            { no_pods_notice(&frame, &route) }
            <div class={classes!("log-scroll", ui.wrap.then_some("wrap"), ui.timestamps.then_some("with-ts"))}
                data-testid="log-scroll" ref={area.node.clone()} onscroll={area.onscroll.clone()}>
                <div style={format!("height: {}px", short(pad_top))}></div>
                { for frame.rows.iter().map(|row| line(row, &ui.search)) }
                <div style={format!("height: {}px", short(pad_bottom))}></div>
                if frame.total_rows == 0 {
                    <p class="muted log-empty">{ if frame.live { "waiting for lines…" } else { "no lines" } }</p>
                }
            </div>
        </section>
    }
}

/// What the reading options do: each changes the address (the logs are
/// read again with it).
struct ReadingOptions {
    on_container: Callback<Event>,
    on_previous: Callback<Event>,
    on_tail: Callback<Event>,
    on_since: Callback<Event>,
}

fn reading_options(route: &LogRoute) -> ReadingOptions {
    let on_container = {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let value = event
                .target_dyn_into::<web_sys::HtmlSelectElement>()
                .map(|s| s.value())
                .unwrap_or_default();
            go(&route.with(|r| {
                r.target = LogTarget::Pod {
                    container: Some(value).filter(|v| !v.is_empty()),
                }
            }));
        })
    };
    let on_previous = {
        let route = route.clone();
        Callback::from(move |event: Event| go(&route.with(|r| r.previous = checked(&event))))
    };
    let number_option = |set: fn(&mut LogRoute, Option<u64>)| {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let value = input_value(&event)
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0);
            go(&route.with(|r| set(r, value)));
        })
    };
    ReadingOptions {
        on_container,
        on_previous,
        on_tail: number_option(|r, n| r.tail = n),
        on_since: number_option(|r, n| r.since = n),
    }
}

/// What the display choices do: each is dispatched to the page's state.
struct DisplayChoices {
    on_timestamps: Callback<Event>,
    on_wrap: Callback<Event>,
    on_follow: Callback<MouseEvent>,
    on_search: Callback<InputEvent>,
    on_previous_match: Callback<MouseEvent>,
    on_next_match: Callback<MouseEvent>,
}

fn display_choices(state: &StateContext, following: bool) -> DisplayChoices {
    let dispatch_with = |make: fn(bool) -> LogUiAction| {
        let state = state.clone();
        Callback::from(move |event: Event| state.dispatch(Action::Log(make(checked(&event)))))
    };
    let on_click = |action: LogUiAction| {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.dispatch(Action::Log(action.clone())))
    };
    let on_search = {
        let state = state.clone();
        Callback::from(move |event: InputEvent| {
            let text = event
                .target_dyn_into::<HtmlInputElement>()
                .map(|i| i.value())
                .unwrap_or_default();
            state.dispatch(Action::Log(LogUiAction::Search(text)))
        })
    };
    DisplayChoices {
        on_timestamps: dispatch_with(LogUiAction::Timestamps),
        on_wrap: dispatch_with(LogUiAction::Wrap),
        on_follow: on_click(LogUiAction::Follow(!following)),
        on_search,
        on_previous_match: on_click(LogUiAction::StepMatch(-1)),
        on_next_match: on_click(LogUiAction::StepMatch(1)),
    }
}

/// The container picker of a pod's logs ("all containers", or one).
fn container_picker(
    route: &LogRoute,
    informers: &Informers,
    on_container: Callback<Event>,
) -> Html {
    let LogTarget::Pod { container } = &route.target else {
        return html! {};
    };
    let chosen = container.clone().unwrap_or_default();
    let mut containers = informers.log_containers();
    if !chosen.is_empty() && !containers.contains(&chosen) {
        containers.push(chosen.clone());
    }
    html! {
        <label>{ "container " }
            <select data-testid="log-container" onchange={on_container}>
                <option value="" selected={chosen.is_empty()}>{ "all containers" }</option>
                { for containers.iter().map(|c| html! {
                    <option value={c.clone()} selected={*c == chosen}>{ c.clone() }</option>
                }) }
            </select>
        </label>
    }
}

/// The controls' row: the reading options, the display choices, search and
/// download.
fn controls(
    state: &StateContext,
    ui: &LogUi,
    frame: &LogFrame,
    informers: &Rc<Informers>,
    route: &LogRoute,
) -> Html {
    let reading = reading_options(route);
    let display = display_choices(state, ui.following);
    let on_download = {
        let (informers, name) = (informers.clone(), route.name.clone());
        Callback::from(move |_: MouseEvent| {
            if let Some(text) = informers.log_text() {
                super::dom::download(&format!("{name}.log"), &text);
            }
        })
    };
    let search = ui.search.clone();
    html! {
        <header class="log-controls">
            <h2>{ format!("Logs of {}", route.title()) }</h2>
            { container_picker(route, informers, reading.on_container) }
            <label><input type="checkbox" data-testid="log-previous" checked={route.previous} onchange={reading.on_previous} />{ " previous" }</label>
            <label><input type="checkbox" data-testid="log-timestamps" checked={ui.timestamps}
                onchange={display.on_timestamps} />{ " timestamps" }</label>
            <label><input type="checkbox" data-testid="log-wrap" checked={ui.wrap}
                onchange={display.on_wrap} />{ " wrap" }</label>
            <label>{ "tail " }<input type="number" min="1" class="num" data-testid="log-tail" placeholder="all"
                value={route.tail.map(|n| n.to_string()).unwrap_or_default()} onchange={reading.on_tail} /></label>
            <label>{ "since (s) " }<input type="number" min="1" class="num" data-testid="log-since" placeholder="any"
                value={route.since.map(|n| n.to_string()).unwrap_or_default()} onchange={reading.on_since} /></label>
            <button data-testid="log-follow" aria-pressed={ui.following.to_string()} onclick={display.on_follow}>
                { if ui.following { "pause" } else { "follow" } }
            </button>
            <input type="search" data-testid="log-search" placeholder="search" value={search.clone()} oninput={display.on_search} />
            <button data-testid="log-prev-match" onclick={display.on_previous_match} disabled={frame.matches == 0}>{ "↑" }</button>
            <button data-testid="log-next-match" onclick={display.on_next_match} disabled={frame.matches == 0}>{ "↓" }</button>
            if !search.is_empty() {
                <span class="muted" data-testid="log-matches" data-count={frame.matches.to_string()}>
                    { match ui.current_match(frame.matches) {
                        Some(i) => format!("{} of {}", i + 1, frame.matches),
                        None => "no match".to_string(),
                    } }
                </span>
            }
            <button data-testid="log-download" onclick={on_download}>{ "download" }</button>
        </header>
    }
}

/// What the page holds of the logs against its bound, with the bound's input.
fn memory_line(frame: &LogFrame, informers: &Rc<Informers>) -> Html {
    let on_bound = {
        let informers = informers.clone();
        let bytes = frame.bounds.max_bytes;
        Callback::from(move |event: Event| {
            if let Ok(lines) = input_value(&event).trim().parse::<usize>() {
                informers.set_log_bounds(RingBounds {
                    max_lines: lines.max(1),
                    max_bytes: bytes,
                });
            }
        })
    };
    html! {
        <p class="log-memory muted" data-testid="log-memory" data-max-lines={frame.bounds.max_lines.to_string()}>
            { format!("holding {} lines ({}) of at most {} lines / {}", frame.lines, format_bytes(frame.held_bytes),
                frame.bounds.max_lines, format_bytes(frame.bounds.max_bytes)) }
            if frame.evicted_lines > 0 {
                <strong data-testid="log-evicted">{ format!("; {} older lines dropped by the bound", frame.evicted_lines) }</strong>
            }
            <label>{ " bound (lines) " }<input type="number" min="1" class="num" data-testid="log-bound"
                value={frame.bounds.max_lines.to_string()} onchange={on_bound} /></label>
        </p>
    }
}

/// Each source's status or error (waiting, left, refused …).
fn source_notices(frame: &LogFrame) -> Html {
    html! {
        { for frame.sources.iter().filter(|s| s.message.is_some()).map(|s| {
            let testid = if matches!(s.state, "error" | "left") { "log-error" } else { "log-status" };
            html! {
                <p class={classes!("notice", (testid == "log-error").then_some("error"))} data-testid={testid}
                    data-source={s.label.clone()} data-state={s.state}>
                    <strong style={format!("color: {}", s.colour)}>{ s.label.clone() }</strong>{ ": " }
                    { s.message.clone().unwrap_or_default() }
                </p>
            }
        }) }
    }
}

/// What the view says when the synced pods hold none to read: the pod is
/// not in the cluster (deleted while the link was kept, or a name mistyped),
/// or the workload selects none now.
fn no_pods_notice(frame: &LogFrame, route: &LogRoute) -> Html {
    if !frame.no_pods {
        return html! {};
    }
    let (namespace, name) = (&route.namespace, &route.name);
    let text = match &route.target {
        LogTarget::Pod { .. } => format!(
            "pod {namespace}/{name} is not in the cluster (deleted, or never created): \
             there are no logs to read — pick a pod in the pods table"
        ),
        LogTarget::Workload { .. } => format!(
            "{} {namespace}/{name} selects no pods now, or is not in the cluster: \
             its pods' lines appear here when one starts",
            route.resource
        ),
    };
    html! { <p class="notice error" data-testid="log-no-pods">{ text }</p> }
}

/// One row: the text with the search's matches marked.
fn line(row: &LogFrameRow, search: &str) -> Html {
    let style = format!("--source: {}", row.colour);
    if row.is_break {
        return html! {
            <div class="log-break" data-testid="log-break" data-source={row.source.clone()} {style}>{ row.text.clone() }</div>
        };
    }
    let class = classes!(
        "log-line",
        row.matched.then_some("matched"),
        row.current.then_some("current"),
        row.truncated.then_some("truncated"),
        row.binary.then_some("binary"),
    );
    html! {
        <div {class} data-testid="log-line" data-source={row.source.clone()} data-ts={row.timestamp.clone()}
            data-row={row.row.to_string()} {style}>
            <span class="log-prefix" data-label={row.source.clone()}></span>
            <span class="log-ts" data-label={row.timestamp.clone()}></span>
            { marked(&row.text, if row.matched { search } else { "" }) }
        </div>
    }
}

/// `text` with each case-insensitive (ASCII) occurrence of `query` in `<mark>`.
fn marked(text: &str, query: &str) -> Html {
    if query.is_empty() {
        return html! { text.to_string() };
    }
    let lower = text.to_ascii_lowercase();
    let query = query.to_ascii_lowercase();
    let mut parts = Vec::new();
    let mut at = 0;
    for (start, found) in lower.match_indices(&query) {
        let end = start + found.len();
        if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        parts.push(html! { text[at..start].to_string() });
        parts.push(html! { <mark>{ text[start..end].to_string() }</mark> });
        at = end;
    }
    parts.push(html! { text[at..].to_string() });
    html! { for parts }
}
