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

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::informer::Millis;
use crate::model::timeline::{LaneMode, TimelineData, Viewport, COLUMNS, DELTA_TYPES};
use deltascope_facts::time::format_age;

const LANE_HEIGHT: f64 = 22.0;
/// Warning events, marked over the lane of the resource they are about.
const WARNING_COLOUR: &str = "#e8710a";
const COLOURS: [&str; 5] = ["#8a94a6", "#c3c9d4", "#1b9e4b", "#2962ff", "#d93025"];
const RELIST_COLOUR: &str = "#8e24aa";
/// Pointer travel (px) under which a press is a click, not a drag.
const CLICK_SLOP_PX: f64 = 3.0;

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

/// A press in progress: where it started and the range then.
#[derive(Clone, Copy)]
struct Press {
    x: f64,
    /// Where the press started, as a fraction of the width.
    origin: f64,
    brush: bool,
    moved: bool,
    range: (Millis, Millis),
}

fn fraction_of(canvas: &NodeRef, client_x: i32) -> Option<f64> {
    let element = canvas.cast::<web_sys::Element>()?;
    let rect = element.get_bounding_client_rect();
    Some(((f64::from(client_x) - rect.left()) / rect.width().max(1.0)).clamp(0.0, 1.0))
}

fn width_of(canvas: &NodeRef) -> f64 {
    canvas
        .cast::<web_sys::Element>()
        .map_or(1.0, |e| e.get_bounding_client_rect().width().max(1.0))
}

#[function_component(Timeline)]
pub fn timeline(props: &TimelineProps) -> Html {
    let canvas = use_node_ref();
    let press: Rc<RefCell<Option<Press>>> = use_mut_ref(|| None);
    {
        let canvas = canvas.clone();
        use_effect_with(
            (props.data.clone(), props.cursor, props.brush),
            move |(data, cursor, brush)| {
                draw(&canvas, data, *cursor, *brush);
            },
        );
    }
    let range = (props.data.start, props.data.end);
    let now = props.now;
    let onwheel = {
        let (canvas, on_view) = (canvas.clone(), props.on_view.clone());
        Callback::from(move |event: WheelEvent| {
            event.prevent_default();
            let Some(anchor) = fraction_of(&canvas, event.client_x()) else {
                return;
            };
            // Trackpad pinch arrives as a wheel with ctrl held; both zoom.
            let factor = (event.delta_y() * 0.002).exp();
            on_view.emit(Viewport::zoomed(range, factor, anchor, now));
        })
    };
    let onmousedown = {
        let (canvas, press) = (canvas.clone(), press.clone());
        Callback::from(move |event: MouseEvent| {
            event.prevent_default();
            let x = f64::from(event.client_x());
            if let Some(origin) = fraction_of(&canvas, event.client_x()) {
                *press.borrow_mut() = Some(Press {
                    x,
                    origin,
                    brush: event.shift_key(),
                    moved: false,
                    range,
                });
            }
        })
    };
    let onmousemove = {
        let (canvas, press) = (canvas.clone(), press.clone());
        let (on_view, on_brush) = (props.on_view.clone(), props.on_brush.clone());
        Callback::from(move |event: MouseEvent| {
            let Some(mut current) = *press.borrow() else {
                return;
            };
            let x = f64::from(event.client_x());
            if !current.moved && (x - current.x).abs() < CLICK_SLOP_PX {
                return;
            }
            current.moved = true;
            *press.borrow_mut() = Some(current);
            let width = width_of(&canvas);
            let (start, end) = current.range;
            if current.brush {
                let Some(here) = fraction_of(&canvas, event.client_x()) else {
                    return;
                };
                let at = |fraction: f64| start + ((end - start) as f64 * fraction) as Millis;
                let (from, to) = (at(here.min(current.origin)), at(here.max(current.origin)));
                on_brush.emit(Some((from, to.max(from + 1))));
            } else {
                // Dragging right moves back in time.
                let fraction = -(x - current.x) / width;
                on_view.emit(Viewport::panned(current.range, fraction, now));
            }
        })
    };
    // A press that dragged (pan or brush) swallows the click that follows it.
    let swallow_click = use_mut_ref(|| false);
    let finish = {
        let (press, swallow_click) = (press.clone(), swallow_click.clone());
        let on_brushed = props.on_brushed.clone();
        // On mouseup a click follows; on leaving the canvas none does.
        move |click_follows: bool| {
            let ended = press.borrow_mut().take();
            if let Some(current) = ended {
                *swallow_click.borrow_mut() = click_follows && (current.moved || current.brush);
                if current.brush && current.moved {
                    on_brushed.emit(());
                }
            }
        }
    };
    // While pressed, the pointer's events go to the canvas even off it, so a
    // drag that strays over the legend or the lane names goes on.
    let onpointerdown = {
        let canvas = canvas.clone();
        Callback::from(move |event: PointerEvent| {
            if let Some(element) = canvas.cast::<web_sys::Element>() {
                let _ = element.set_pointer_capture(event.pointer_id());
            }
        })
    };
    let onmouseup = {
        let finish = finish.clone();
        Callback::from(move |_: MouseEvent| finish(true))
    };
    let onmouseleave = Callback::from(move |_: MouseEvent| finish(false));
    let onclick = {
        let (canvas, data, on_pick) = (canvas.clone(), props.data.clone(), props.on_pick.clone());
        Callback::from(move |event: MouseEvent| {
            if std::mem::take(&mut *swallow_click.borrow_mut()) {
                return;
            }
            if let Some(fraction) = fraction_of(&canvas, event.client_x()) {
                on_pick.emit(data.time_at(fraction));
            }
        })
    };
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
    let data = &props.data;
    let height = (data.lanes.len().max(1) as f64) * LANE_HEIGHT;
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
        <div class="timeline" data-testid="timeline" data-marks={data.total.to_string()}
            data-in-view={data.in_view.to_string()} data-start={data.start.to_string()}
            data-end={data.end.to_string()} data-lanes={data.lanes.len().to_string()}
            data-mode={data.mode.as_str()} data-follow={live.to_string()}
            data-brush-from={props.brush.map(|b| b.0.to_string())}
            data-brush-to={props.brush.map(|b| b.1.to_string())}>
            <div class="timeline-lanes">
                <div class="lane-names">
                    { for data.lanes.iter().map(|lane| html! {
                        <div class="lane-name" title={lane_title(&lane.name, lane.count, &lane.gaps)}
                            data-testid="timeline-lane" data-lane={lane.name.clone()}
                            data-count={lane.count.to_string()} data-warnings={lane.warnings.len().to_string()}
                            data-gaps={lane.gaps.len().to_string()}
                            style={format!("height:{LANE_HEIGHT}px")}>{ &lane.name }</div>
                    }) }
                </div>
                <canvas ref={canvas} width={COLUMNS.to_string()} height={height.to_string()}
                    style={format!("height:{height}px")}
                    {onwheel} {onpointerdown} {onmousedown} {onmousemove} {onmouseup} {onmouseleave} {onclick}
                    title="Wheel: zoom · drag: pan · shift-drag: select a range · click: see the table as it was then"></canvas>
            </div>
            <div class="legend">
                <span class="axis start">{ ago(data.start) }</span>
                { for DELTA_TYPES.iter().zip(COLOURS).map(|(kind, colour)| html! {
                    <span><i style={format!("background:{colour}")}></i>{ format!("{kind:?}") }</span>
                }) }
                <span><i style={format!("background:{RELIST_COLOUR}")}></i>{ "relist" }</span>
                <span><i class="gap"></i>{ "not watching" }</span>
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
        </div>
    }
}

/// A horizontal band of the canvas (top, height) and the blind spans and
/// relists drawn across it.
type Band<'a> = (f64, f64, &'a [(Millis, Millis)], &'a [Millis]);

fn draw(
    canvas: &NodeRef,
    data: &TimelineData,
    cursor: Option<Millis>,
    brush: Option<(Millis, Millis)>,
) {
    let Some(canvas) = canvas.cast::<web_sys::HtmlCanvasElement>() else {
        return;
    };
    let Ok(Some(context)) = canvas.get_context("2d") else {
        return;
    };
    let Ok(ctx) = context.dyn_into::<web_sys::CanvasRenderingContext2d>() else {
        return;
    };
    let width = COLUMNS as f64;
    let height = (data.lanes.len().max(1) as f64) * LANE_HEIGHT;
    ctx.clear_rect(0.0, 0.0, width, height);
    // Lanes that are resources shade their own blind spans; lanes that mix
    // resources shade the whole strip where any informer was blind.
    let per_lane = data.mode == LaneMode::Resource;
    let bands: Vec<Band<'_>> = if per_lane {
        data.lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                (
                    i as f64 * LANE_HEIGHT,
                    LANE_HEIGHT,
                    lane.gaps.as_slice(),
                    lane.relists.as_slice(),
                )
            })
            .collect()
    } else {
        vec![(0.0, height, data.gaps.as_slice(), data.relists.as_slice())]
    };
    ctx.set_fill_style_str("rgba(217, 48, 37, 0.15)");
    for (top, band, gaps, _) in &bands {
        for (from, to) in gaps.iter() {
            let (x0, x1) = (data.x_of(*from, width), data.x_of(*to, width));
            if x1 >= 0.0 && x0 <= width {
                ctx.fill_rect(
                    x0.max(0.0),
                    *top,
                    (x1.min(width) - x0.max(0.0)).max(1.0),
                    *band,
                );
            }
        }
    }
    if let Some((from, to)) = brush {
        let (x0, x1) = (data.x_of(from, width), data.x_of(to, width));
        ctx.set_fill_style_str("rgba(41, 98, 255, 0.14)");
        ctx.fill_rect(x0, 0.0, (x1 - x0).max(1.0), height);
    }
    // One log scale for every lane, so lanes compare.
    let max = data
        .lanes
        .iter()
        .flat_map(|l| l.columns.iter())
        .map(|c| c.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let bar_room = LANE_HEIGHT - 3.0;
    let scale = bar_room / (f64::from(max) + 1.0).ln();
    for (lane_index, lane) in data.lanes.iter().enumerate() {
        let baseline = (lane_index + 1) as f64 * LANE_HEIGHT;
        ctx.set_fill_style_str("rgba(128, 128, 128, 0.25)");
        ctx.fill_rect(0.0, baseline - 0.5, width, 0.5);
        for (x, counts) in lane.columns.iter().enumerate() {
            let total: u32 = counts.iter().sum();
            if total == 0 {
                continue;
            }
            // Stack the kinds in proportion within a log-scaled bar.
            let bar = ((f64::from(total) + 1.0).ln() * scale).max(2.0);
            let mut y = baseline - 1.0;
            for (index, colour) in COLOURS.iter().enumerate() {
                if counts[index] == 0 {
                    continue;
                }
                let h = (bar * f64::from(counts[index]) / f64::from(total)).max(1.0);
                y -= h;
                ctx.set_fill_style_str(colour);
                ctx.fill_rect(x as f64, y, 1.0, h);
            }
        }
    }
    // Warning events: a small triangle over the lane, where they happened.
    ctx.set_fill_style_str(WARNING_COLOUR);
    for (lane_index, lane) in data.lanes.iter().enumerate() {
        let top = lane_index as f64 * LANE_HEIGHT + 1.0;
        for &column in &lane.warnings {
            let x = column as f64;
            ctx.begin_path();
            ctx.move_to(x - 3.0, top);
            ctx.line_to(x + 3.0, top);
            ctx.line_to(x, top + 5.0);
            ctx.close_path();
            ctx.fill();
        }
    }
    ctx.set_fill_style_str(RELIST_COLOUR);
    for (top, band, _, relists) in &bands {
        for at in relists.iter() {
            let x = data.x_of(*at, width);
            if (0.0..=width).contains(&x) {
                let mut y = *top;
                while y < top + band {
                    ctx.fill_rect(x, y, 1.0, 3.0);
                    y += 6.0;
                }
            }
        }
    }
    if let Some(at) = cursor {
        ctx.set_fill_style_str("#f0a500");
        ctx.fill_rect(data.x_of(at, width) - 1.0, 0.0, 2.0, height);
    }
}

/// A lane name's tooltip: its deltas in view and when it was not watching.
fn lane_title(
    name: &str,
    count: u64,
    gaps: &[(crate::informer::Millis, crate::informer::Millis)],
) -> String {
    let clock = |ms: crate::informer::Millis| {
        let date = js_sys::Date::new(&(ms as f64).into());
        format!(
            "{:02}:{:02}:{:02}",
            date.get_hours(),
            date.get_minutes(),
            date.get_seconds()
        )
    };
    let mut title = format!("{name}: {count} deltas in view");
    for (from, to) in gaps.iter().rev().take(3) {
        title.push_str(&format!(
            "\nnot watching from {} to {}",
            clock(*from),
            clock(*to)
        ));
    }
    title
}
