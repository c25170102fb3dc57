//! Below the table: the banners that say the table is not the live store
//! ([`Banners`]: time travel — `[data-testid=time-travel]` with `data-at`,
//! `data-count`, `data-source` (`page`, `recorder`, `none`) and, for serve's
//! record, `data-resource-version`; what serve's record says of the moment
//! in `[data-testid=time-travel-record]` `data-state` —, a replay — with the gaps a record from serve
//! states, `[data-testid=replay]` `data-gaps` —, an import that failed) and the
//! timeline with its controls and the delta list ([`TimelineBar`]). Both
//! read the app state and the frame from their contexts.

use crate::model::decimal::short;
use std::rc::Rc;

use yew::prelude::*;

use super::context::{dispatcher, ServiceContext, StateContext};
use super::delta_list::DeltaList;
use super::timeline::Timeline;
use crate::address::route::Route;
use crate::api::recording::gap_words;
use crate::app::state::{Action, Replaying};
use crate::informer::Millis;
use crate::model::delta_list::delta_age;
use crate::model::delta_select::DeltaQuery;
use crate::model::past::PastSource;
use crate::model::timeline::Viewport;
use deltascope_facts::time::format_age;

#[function_component(Banners)]
pub fn banners() -> Html {
    let (Some(state), Some(service)) = (
        use_context::<StateContext>(),
        use_context::<ServiceContext>(),
    ) else {
        return Html::default();
    };
    let frame = &service.frame;
    let travelling = frame.past.is_some() || frame.record.is_some();
    let past_banner = travelling.then(|| {
        let back = {
            let state = state.clone();
            Callback::from(move |_| state.dispatch(Action::TravelTo(None)))
        };
        let at = frame.past.as_ref().map(|p| p.at).or(state.0.as_of).unwrap_or(frame.now);
        let count = frame.past.as_ref().map_or(0, |p| p.count);
        let (source, resource_version) = match frame.past.as_ref().map(|p| &p.source) {
            Some(PastSource::Page) => ("page", None),
            Some(PastSource::Recorded { resource_version }) => {
                ("recorder", Some(resource_version.clone()))
            }
            Some(PastSource::Unknown) | None => ("none", None),
        };
        let own = frame.past.as_ref().filter(|p| p.source == PastSource::Page).map(|past| {
            let seconds_ago = frame.now.saturating_sub(past.at) / 1000;
            let incomplete = (!past.complete)
                .then_some(" (retention evicted older deltas; objects unchanged since then are missing)");
            format!(
                "the store as it was {} ago, {} objects{}",
                format_age(seconds_ago as i64),
                past.count,
                incomplete.unwrap_or_default()
            )
        });
        html! {
            <div class="past-banner" data-testid="time-travel" data-at={at.to_string()}
                data-count={count.to_string()} data-source={source}
                data-resource-version={resource_version} role="status">
                <strong>{ "Viewing the past: " }</strong>
                { for own }
                if let Some(record) = frame.record.clone() {
                    <span class="record-note" data-testid="time-travel-record" data-state={record.state}>
                        { if source == "page" { format!(" · {}", record.text) } else { record.text } }
                    </span>
                }
                if source == "recorder" {
                    { format!(", {count} objects") }
                }
                <button onclick={back} data-testid="back-to-live">{ "Back to live" }</button>
            </div>
        }
    });
    let replay_banner = state.0.replaying.clone().map(|replaying| {
        let state = state.clone();
        let back = Callback::from(move |_| state.dispatch(Action::BackToLive));
        let Replaying { name, speed, gaps } = replaying;
        let gap_words =
            gap_words(gaps).map(|words| format!("{words} (spans the recorder did not watch)"));
        html! {
            <div class="past-banner" data-testid="replay" role="status" data-gaps={gaps.to_string()}>
                <strong>{ "Replaying a recording: " }</strong>
                { format!("{name} at {}×, offline (no cluster)", short(speed)) }
                if let Some(words) = gap_words {
                    <span data-testid="replay-gaps">{ words }</span>
                }
                <button onclick={back} data-testid="back-to-live-from-replay">{ "Back to live" }</button>
            </div>
        }
    });
    html! {
        <>
            { for past_banner }
            { for replay_banner }
            if let Some(error) = state.0.import_error.clone() {
                <p class="notice error" role="alert" data-testid="import-error">{ error }</p>
            }
            if let Some(note) = state.0.export_note.clone() {
                <p class="notice" role="status" data-testid="export-note">{ note }</p>
            }
        </>
    }
}

#[derive(Properties, PartialEq)]
pub struct TimelineBarProps {
    /// The view's route (names the export, and what a replay replaces).
    pub route: Route,
}

#[function_component(TimelineBar)]
pub fn timeline_bar(props: &TimelineBarProps) -> Html {
    let (Some(state), Some(service)) = (
        use_context::<StateContext>(),
        use_context::<ServiceContext>(),
    ) else {
        return Html::default();
    };
    let frame = service.frame.clone();
    let ui = &state.0;
    let on_pick: Callback<Millis> = {
        let state = state.clone();
        Callback::from(move |at| state.dispatch(Action::TravelTo(Some(at))))
    };
    let on_view = dispatcher(&state, Action::TimelineView);
    let on_brush = dispatcher(&state, Action::Brush);
    let on_mode = dispatcher(&state, Action::LaneMode);
    // Brushing a range is asking for its deltas: the panel opens when the
    // drag ends, never under it (it would move the timeline off the pointer).
    let on_brushed = {
        let state = state.clone();
        Callback::from(move |_: ()| state.dispatch(Action::ShowDeltas))
    };
    let on_toggle_deltas = {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.dispatch(Action::ToggleDeltas))
    };
    let on_export = on_export(&state, &service, &props.route);
    let on_import = on_import(&state, &service, &props.route);
    let on_speed = {
        let state = state.clone();
        Callback::from(move |event: Event| {
            if let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() {
                state.dispatch(Action::ReplaySpeed(select.value().parse().unwrap_or(10.0)));
            }
        })
    };
    let delta_panel = delta_panel(&state, &service);
    html! {
        <>
            <div class="timeline-bar">
                <Timeline data={frame.timeline.clone()} viewport={ui.timeline_view} cursor={ui.as_of} brush={ui.brush}
                    now={frame.now} {on_pick} {on_view} {on_brush} {on_brushed} {on_mode} />
                <button class="toggle-deltas" onclick={on_toggle_deltas} data-testid="toggle-deltas"
                    aria-pressed={ui.deltas_open.to_string()}
                    title="List the deltas of the selected range">{ "Deltas" }</button>
                <button class="export" onclick={on_export} data-testid="export"
                    title="Download the history (or the selected range) as NDJSON watch events with times">
                    { if ui.brush.is_some() { "Export selection" } else { "Export recording" } }</button>
                <label class="import" title="Replay an exported recording through the informer, offline">
                    { "Import " }
                    <input type="file" accept=".ndjson,.jsonl,application/x-ndjson" onchange={on_import}
                        data-testid="import" />
                </label>
                <select onchange={on_speed} aria-label="replay speed" data-testid="replay-speed">
                    { for [1.0_f64, 10.0, 100.0].iter().map(|s| html! {
                        <option value={short(*s).to_string()} selected={ui.replay_speed == *s}>{ format!("{}×", short(*s)) }</option>
                    }) }
                </select>
            </div>
            { for delta_panel }
        </>
    }
}

/// *Export recording* (or *Export selection*): the page's history of the
/// route's resource, with what serve recorded before it, downloaded.
fn on_export(
    state: &StateContext,
    service: &ServiceContext,
    route: &Route,
) -> Callback<MouseEvent> {
    let informers = service.informers.clone();
    let resource = route.stats_name();
    // A brushed range exports only that range.
    let range = state.0.brush.unwrap_or((0, Millis::MAX));
    let serve = state.0.serve_history_for(route).cloned();
    let state = state.clone();
    Callback::from(move |_: MouseEvent| {
        let (informers, resource, serve, state) = (
            informers.clone(),
            resource.clone(),
            serve.clone(),
            state.clone(),
        );
        wasm_bindgen_futures::spawn_local(async move {
            let exported = informers.export(resource.clone(), range, serve).await;
            if let Some((text, note)) = exported {
                super::dom::download(&format!("deltascope-{resource}.ndjson"), &text);
                state.dispatch(Action::Exported(note));
            }
        });
    })
}

/// Import: the chosen file read, then replayed by the service as one
/// command whose result (or why it failed) the state receives.
fn on_import(state: &StateContext, service: &ServiceContext, route: &Route) -> Callback<Event> {
    let (informers, state, route) = (service.informers.clone(), state.clone(), route.clone());
    let speed = state.0.replay_speed;
    Callback::from(move |event: Event| {
        let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() else {
            return;
        };
        let Some(file) = input.files().and_then(|files| files.get(0)) else {
            return;
        };
        let (informers, state, route) = (informers.clone(), state.clone(), route.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let name = file.name();
            let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                Ok(text) => text.as_string().unwrap_or_default(),
                Err(_) => {
                    state.dispatch(Action::ImportFailed(format!("cannot read {name}")));
                    return;
                }
            };
            state.dispatch(informers.import_recording(&route, name, &text, speed));
        });
    })
}

/// The delta list under the timeline, when open: the deltas of the brushed
/// range or of the range in view; a row opens its object.
fn delta_panel(state: &StateContext, service: &ServiceContext) -> Option<Html> {
    let ui = &state.0;
    if !ui.deltas_open {
        return None;
    }
    let frame = &service.frame;
    let on_query = dispatcher(state, Action::DeltaQuery);
    let on_scroll = dispatcher(state, Action::DeltaScrolled);
    let on_open = {
        let informers = service.informers.clone();
        Callback::from(move |(source, key): (u64, String)| {
            if let Some(object) = informers.object_route(source, &key) {
                super::dom::open_object(&object);
            }
        })
    };
    let now = frame.now;
    let range_label = match (ui.brush, ui.timeline_view) {
        (Some((from, to)), _) => format!(
            "selected range: {} → {}",
            delta_age(now, from),
            delta_age(now, to)
        ),
        (None, Viewport::Fixed { start, end }) => format!(
            "range in view: {} → {}",
            delta_age(now, start),
            delta_age(now, end)
        ),
        (None, Viewport::Live { .. }) => "everything held, newest first".to_string(),
    };
    let query: DeltaQuery = ui.delta_query.clone();
    Some(html! {
        <DeltaList rows={Rc::new(frame.delta_rows.clone())} first={frame.delta_first}
            total={frame.delta_total} recorded={frame.delta_recorded.clone()} {range_label} {query} {on_query}
            resources={Rc::new(frame.sources.clone())} clusters={Rc::new(frame.source_clusters.clone())}
            {on_scroll} {on_open} />
    })
}
