//! The timeline strip: the deltas of every resource the page keeps live on
//! a time axis, in lanes (one per resource, or their namespaces, or the
//! delta types), each delta a mark coloured by type (Added, Updated,
//! Deleted, Replaced, Sync), relists as dashed lines and the spans when the
//! page was not watching shaded (in a resource's own lane when lanes are
//! resources), so a user sees when it was blind — also across a reload,
//! when a restored view had to relist (its history's gaps). Each lane's
//! name is a `[data-testid=timeline-lane]` with `data-lane`, `data-count`
//! (deltas in view) and `data-gaps` (spans not watched), its title saying
//! when. Drawn on a canvas from per-pixel buckets
//! (`crate::model::timeline`), so 100,000 marks cost one pass.
//!
//! Wheel zooms around the pointer, drag pans, shift-drag brushes a range
//! (the delta list and the export then use it), a click picks a moment (the
//! table shows the store as it was then). Live-follow pauses when the view
//! no longer reaches now; "Live" resumes it.
//!
//! Nothing may move under a drag (a control that shifts while the pointer
//! is down makes the drag land elsewhere): the pointer is captured by the
//! canvas while pressed, the legend's changing parts (the selection and its
//! Clear button, follow/Live, the axis ends) sit in slots of fixed width so
//! the legend never re-wraps, and the caller opens the delta list only once
//! a brush ends (`on_brushed`).

use crate::model::decimal::short;
use std::rc::Rc;

use yew::prelude::*;

use super::timeline_canvas::{draw, COLOURS, LANE_HEIGHT, RELIST_COLOUR, WARNING_COLOUR};
use super::timeline_gestures::{use_timeline_gestures, GestureTargets};
use crate::informer::Millis;
use crate::model::timeline::{Lane, LaneMode, TimelineData, Viewport, COLUMNS, DELTA_TYPES};
use deltascope_facts::time::format_age;

#[derive(Properties, PartialEq)]
pub struct TimelineProps {
    pub data: Rc<TimelineData>,
    pub viewport: Viewport,
    /// The moment being viewed, when travelling in time.
    pub cursor: Option<Millis>,
    /// The brushed range, if any.
    pub brush: Option<(Millis, Millis)>,
    /// Now, on the same clock as the history.
    pub now: Millis,
    pub on_pick: Callback<Millis>,
    pub on_view: Callback<Viewport>,
    pub on_brush: Callback<Option<(Millis, Millis)>>,
    /// A shift-drag ended (the range is the last `on_brush`).
    #[prop_or_default]
    pub on_brushed: Callback<()>,
    pub on_mode: Callback<LaneMode>,
}

#[function_component(Timeline)]
pub fn timeline(props: &TimelineProps) -> Html {
    let canvas = use_node_ref();
    {
        let canvas = canvas.clone();
        use_effect_with(
            (props.data.clone(), props.cursor, props.brush),
            move |(data, cursor, brush)| {
                draw(&canvas, data, *cursor, *brush);
            },
        );
    }
    let gestures = use_timeline_gestures(
        &canvas,
        &GestureTargets {
            data: props.data.clone(),
            now: props.now,
            on_pick: props.on_pick.clone(),
            on_view: props.on_view.clone(),
            on_brush: props.on_brush.clone(),
            on_brushed: props.on_brushed.clone(),
        },
    );
    let data = &props.data;
    let height = (data.lanes.len().max(1) as f64) * LANE_HEIGHT;
    let live = props.viewport.is_live();
    html! {
        <div class="timeline" data-testid="timeline" data-marks={data.total.to_string()}
            data-in-view={data.in_view.to_string()} data-start={data.start.to_string()}
            data-end={data.end.to_string()} data-lanes={data.lanes.len().to_string()}
            data-mode={data.mode.as_str()} data-follow={live.to_string()}
            data-brush-from={props.brush.map(|b| b.0.to_string())}
            data-brush-to={props.brush.map(|b| b.1.to_string())}>
            <div class="timeline-lanes">
                { lane_names(data) }
                <canvas ref={canvas} width={COLUMNS.to_string()} height={short(height).to_string()}
                    style={format!("height:{}px", short(height))}
                    onwheel={gestures.onwheel} onpointerdown={gestures.onpointerdown}
                    onmousedown={gestures.onmousedown} onmousemove={gestures.onmousemove}
                    onmouseup={gestures.onmouseup} onmouseleave={gestures.onmouseleave}
                    onclick={gestures.onclick}
                    title="Wheel: zoom · drag: pan · shift-drag: select a range · click: see the table as it was then"></canvas>
            </div>
            { legend(props) }
        </div>
    }
}

/// The lanes' names, each a `[data-testid=timeline-lane]` with its counts.
fn lane_names(data: &TimelineData) -> Html {
    html! {
    <div class="lane-names">
        { for data.lanes.iter().map(|lane| html! {
            <div class="lane-name" title={lane_title(lane)}
                data-testid="timeline-lane" data-lane={lane.name.clone()}
                data-count={lane.count.to_string()} data-warnings={lane.warnings.len().to_string()}
                data-gaps={lane.gaps.len().to_string()} data-recorded={lane.recorded.to_string()}
                data-recorded-gaps={lane.recorded_gaps.len().to_string()}
                data-recorded-error={lane.recorded_error.clone()}
                style={format!("height:{}px", short(LANE_HEIGHT))}>{ &lane.name }</div>
        }) }
    </div>
    }
}

/// The legend under the strip: the axis ends, the colours, the lane mode,
/// the brushed range and the follow state, in slots of fixed width.
fn legend(props: &TimelineProps) -> Html {
    let data = &props.data;
    let now = props.now;
    let on_live = {
        let on_view = props.on_view.clone();
        Callback::from(move |_: MouseEvent| on_view.emit(Viewport::default()))
    };
    let on_clear_brush = {
        let on_brush = props.on_brush.clone();
        Callback::from(move |_: MouseEvent| on_brush.emit(None))
    };
    let on_mode = {
        let on_mode = props.on_mode.clone();
        Callback::from(move |event: Event| {
            if let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() {
                if let Some(mode) = LaneMode::parse(&select.value()) {
                    on_mode.emit(mode);
                }
            }
        })
    };
    let ago = |at: Millis| {
        let seconds = now.saturating_sub(at) / 1000;
        if seconds == 0 {
            "now".to_string()
        } else {
            format!("{} ago", format_age(seconds as i64))
        }
    };
    let live = props.viewport.is_live();
    html! {
    <div class="legend">
        <span class="axis start">{ ago(data.start) }</span>
        { for DELTA_TYPES.iter().zip(COLOURS).map(|(kind, colour)| html! {
            <span><i style={format!("background:{colour}")}></i>{ format!("{kind:?}") }</span>
        }) }
        <span><i style={format!("background:{RELIST_COLOUR}")}></i>{ "relist" }</span>
        <span><i class="gap"></i>{ "not watching" }</span>
        <span><i class="unrecorded"></i>{ "not recorded" }</span>
        <span><i style={format!("background:{WARNING_COLOUR}")}></i>{ "warning" }</span>
        <label>{ "lanes " }
            <select onchange={on_mode} aria-label="timeline lanes" data-testid="lane-mode">
                { for LaneMode::ALL.iter().map(|m| html! {
                    <option value={m.as_str()} selected={*m == data.mode}>{ m.as_str() }</option>
                }) }
            </select>
        </label>
        <span class={classes!("brush-slot", props.brush.is_none().then_some("empty"))}>
            if let Some((from, to)) = props.brush {
                <span class="brush-label" title={format!("selected {} → {}", ago(from), ago(to))}>
                    { format!("selected {} → {}", ago(from), ago(to)) }</span>
                <button onclick={on_clear_brush} data-testid="clear-brush">{ "Clear selection" }</button>
            }
        </span>
        <span class="follow-slot">
            if live {
                <span class="follow live" data-testid="follow-state">{ "● following live" }</span>
            } else {
                <button onclick={on_live} data-testid="resume-live"
                    title="Follow new deltas again">{ "⏵ Live" }</button>
            }
        </span>
        <span class="axis end">{ ago(data.end) }</span>
    </div>
    }
}

/// A lane name's tooltip: its deltas in view (those from serve's record
/// apart), when the page was not watching, when serve did not record.
fn lane_title(lane: &Lane) -> String {
    let clock = |ms: Millis| {
        let date = js_sys::Date::new(&(ms as f64).into());
        format!(
            "{:02}:{:02}:{:02}",
            date.get_hours(),
            date.get_minutes(),
            date.get_seconds()
        )
    };
    let mut title = format!("{}: {} deltas in view", lane.name, lane.count);
    if lane.recorded > 0 {
        title.push_str(&format!(
            " ({} from serve's record, before the page opened)",
            lane.recorded
        ));
    }
    for (from, to) in lane.gaps.iter().rev().take(3) {
        title.push_str(&format!(
            "\nnot watching from {} to {}",
            clock(*from),
            clock(*to)
        ));
    }
    for (from, to, reason) in lane.recorded_gaps.iter().rev().take(3) {
        title.push_str(&format!(
            "\nserve did not record from {} to {}: {reason}",
            clock(*from),
            clock(*to)
        ));
    }
    if let Some(error) = &lane.recorded_error {
        title.push_str(&format!("\nserve's record could not be drawn: {error}"));
    }
    title
}
