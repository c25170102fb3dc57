//! The timeline's canvas drawing: per lane, the spans the page was not
//! watching shaded, the deltas as log-scaled bars stacked by type, warning
//! events as triangles, relists as dashed lines; over all, the brushed
//! range and the moment being viewed. Drawn from the per-pixel buckets of
//! `crate::model::timeline`, so 100,000 marks cost one pass; the strip's
//! layout and legend are `super::timeline`, which shares the colours below.

use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;
use yew::NodeRef;

use crate::informer::Millis;
use crate::model::timeline::{LaneMode, TimelineData, COLUMNS};

/// Height of one lane, in CSS pixels (the lane names use it too).
pub const LANE_HEIGHT: f64 = 22.0;
/// Warning events, marked over the lane of the resource they are about.
pub const WARNING_COLOUR: &str = "#e8710a";
/// One per delta type, in `DELTA_TYPES` order.
pub const COLOURS: [&str; 5] = ["#8a94a6", "#c3c9d4", "#1b9e4b", "#2962ff", "#d93025"];
pub const RELIST_COLOUR: &str = "#8e24aa";
const GAP_COLOUR: &str = "rgba(217, 48, 37, 0.15)";
/// Spans serve's recorder did not watch (before the page's own history).
const UNRECORDED_COLOUR: &str = "rgba(95, 99, 104, 0.22)";
const BRUSH_COLOUR: &str = "rgba(41, 98, 255, 0.14)";
const BASELINE_COLOUR: &str = "rgba(128, 128, 128, 0.25)";
const CURSOR_COLOUR: &str = "#f0a500";

/// A horizontal band of the canvas and the blind spans and relists drawn
/// across it.
struct Band<'a> {
    top: f64,
    height: f64,
    gaps: &'a [(Millis, Millis)],
    relists: &'a [Millis],
}

/// Draws `data` on the timeline's canvas, with the moment viewed and the
/// brushed range; nothing when the canvas is not mounted.
pub fn draw(
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
    let Ok(ctx) = context.dyn_into::<CanvasRenderingContext2d>() else {
        return;
    };
    let width = COLUMNS as f64;
    let height = (data.lanes.len().max(1) as f64) * LANE_HEIGHT;
    ctx.clear_rect(0.0, 0.0, width, height);
    let bands = bands(data, height);
    draw_gaps(&ctx, data, &bands, width);
    draw_unrecorded(&ctx, data, width);
    if let Some((from, to)) = brush {
        let (x0, x1) = (data.x_of(from, width), data.x_of(to, width));
        ctx.set_fill_style_str(BRUSH_COLOUR);
        ctx.fill_rect(x0, 0.0, (x1 - x0).max(1.0), height);
    }
    draw_bars(&ctx, data, width);
    draw_warnings(&ctx, data);
    draw_relists(&ctx, data, &bands, width);
    if let Some(at) = cursor {
        ctx.set_fill_style_str(CURSOR_COLOUR);
        ctx.fill_rect(data.x_of(at, width) - 1.0, 0.0, 2.0, height);
    }
}

/// Lanes that are resources shade their own blind spans; lanes that mix
/// resources shade the whole strip where any informer was blind.
fn bands(data: &TimelineData, height: f64) -> Vec<Band<'_>> {
    if data.mode == LaneMode::Resource {
        data.lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| Band {
                top: i as f64 * LANE_HEIGHT,
                height: LANE_HEIGHT,
                gaps: &lane.gaps,
                relists: &lane.relists,
            })
            .collect()
    } else {
        vec![Band {
            top: 0.0,
            height,
            gaps: &data.gaps,
            relists: &data.relists,
        }]
    }
}

fn draw_gaps(ctx: &CanvasRenderingContext2d, data: &TimelineData, bands: &[Band], width: f64) {
    ctx.set_fill_style_str(GAP_COLOUR);
    for band in bands {
        for (from, to) in band.gaps {
            let (x0, x1) = (data.x_of(*from, width), data.x_of(*to, width));
            if x1 >= 0.0 && x0 <= width {
                let left = x0.max(0.0);
                ctx.fill_rect(left, band.top, (x1.min(width) - left).max(1.0), band.height);
            }
        }
    }
}

/// Spans serve's recorder did not watch, shaded in their lane.
fn draw_unrecorded(ctx: &CanvasRenderingContext2d, data: &TimelineData, width: f64) {
    ctx.set_fill_style_str(UNRECORDED_COLOUR);
    for (index, lane) in data.lanes.iter().enumerate() {
        for (from, to, _) in &lane.recorded_gaps {
            let (x0, x1) = (data.x_of(*from, width), data.x_of(*to, width));
            if x1 >= 0.0 && x0 <= width {
                let left = x0.max(0.0);
                let top = index as f64 * LANE_HEIGHT;
                ctx.fill_rect(left, top, (x1.min(width) - left).max(1.0), LANE_HEIGHT);
            }
        }
    }
}

/// Each column's deltas as one bar on a log scale shared by every lane (so
/// lanes compare), the types stacked in proportion within it.
fn draw_bars(ctx: &CanvasRenderingContext2d, data: &TimelineData, width: f64) {
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
        ctx.set_fill_style_str(BASELINE_COLOUR);
        ctx.fill_rect(0.0, baseline - 0.5, width, 0.5);
        for (x, counts) in lane.columns.iter().enumerate() {
            let total: u32 = counts.iter().sum();
            if total == 0 {
                continue;
            }
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
}

/// Warning events: a small triangle over the lane, where they happened.
fn draw_warnings(ctx: &CanvasRenderingContext2d, data: &TimelineData) {
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
}

/// Relists: a dashed vertical line across their band.
fn draw_relists(ctx: &CanvasRenderingContext2d, data: &TimelineData, bands: &[Band], width: f64) {
    ctx.set_fill_style_str(RELIST_COLOUR);
    for band in bands {
        for at in band.relists {
            let x = data.x_of(*at, width);
            if (0.0..=width).contains(&x) {
                let mut y = band.top;
                while y < band.top + band.height {
                    ctx.fill_rect(x, y, 1.0, 3.0);
                    y += 6.0;
                }
            }
        }
    }
}
