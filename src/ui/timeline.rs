//! The timeline strip: every delta of the current resource on a time axis,
//! coloured by type (Added, Updated, Deleted, Replaced, Sync), with the spans
//! when the page was not watching shaded so a user sees when it was blind.
//! Drawn on a canvas from per-pixel buckets, so 100,000 marks cost one pass.
//! A click picks a moment: the table then shows the store as it was (time travel).

use std::rc::Rc;

use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::informer::{DeltaType, History, Millis};

pub const COLUMNS: usize = 600;
const HEIGHT: f64 = 56.0;
const KINDS: [(DeltaType, &str); 5] = [
    (DeltaType::Replaced, "#8a94a6"),
    (DeltaType::Sync, "#c3c9d4"),
    (DeltaType::Added, "#1b9e4b"),
    (DeltaType::Updated, "#2962ff"),
    (DeltaType::Deleted, "#d93025"),
];

fn kind_index(kind: DeltaType) -> usize {
    KINDS.iter().position(|(k, _)| *k == kind).unwrap_or(0)
}

/// Deltas per pixel column and type over `[start, end)`, plus blind spans.
#[derive(Clone, PartialEq, Default)]
pub struct TimelineData {
    pub start: Millis,
    pub end: Millis,
    pub columns: Vec<[u32; 5]>,
    pub gaps: Vec<(Millis, Millis)>,
    pub total: u64,
}

impl TimelineData {
    pub fn build(history: &History, gaps: &[(Millis, Millis)], now: Millis) -> TimelineData {
        // From the first delta held to now (at least a second, so a fresh page draws sensibly).
        let start = history.iter().next().map_or(now, |e| e.at).min(now);
        let end = now.max(start + 1_000);
        let span = (end - start) as f64;
        let mut columns = vec![[0u32; 5]; COLUMNS];
        let mut total = 0;
        for entry in history.iter() {
            let x = (((entry.at.saturating_sub(start)) as f64 / span) * COLUMNS as f64) as usize;
            columns[x.min(COLUMNS - 1)][kind_index(entry.kind)] += 1;
            total += 1;
        }
        TimelineData {
            start,
            end,
            columns,
            gaps: gaps.to_vec(),
            total,
        }
    }

    pub fn time_at(&self, fraction: f64) -> Millis {
        self.start + ((self.end - self.start) as f64 * fraction.clamp(0.0, 1.0)) as Millis
    }

    fn x_of(&self, at: Millis, width: f64) -> f64 {
        (at.saturating_sub(self.start)) as f64 / (self.end - self.start).max(1) as f64 * width
    }
}

#[derive(Properties, PartialEq)]
pub struct TimelineProps {
    pub data: Rc<TimelineData>,
    /// The moment being viewed, when travelling in time.
    pub cursor: Option<Millis>,
    pub on_pick: Callback<Millis>,
}

#[function_component(Timeline)]
pub fn timeline(props: &TimelineProps) -> Html {
    let canvas = use_node_ref();
    {
        let canvas = canvas.clone();
        use_effect_with((props.data.clone(), props.cursor), move |(data, cursor)| {
            draw(&canvas, data, *cursor);
        });
    }
    let onclick = {
        let (canvas, data, on_pick) = (canvas.clone(), props.data.clone(), props.on_pick.clone());
        Callback::from(move |event: MouseEvent| {
            let Some(element) = canvas.cast::<web_sys::Element>() else {
                return;
            };
            let rect = element.get_bounding_client_rect();
            let fraction = (f64::from(event.client_x()) - rect.left()) / rect.width().max(1.0);
            on_pick.emit(data.time_at(fraction));
        })
    };
    html! {
        <div class="timeline" data-testid="timeline" data-marks={props.data.total.to_string()}>
            <canvas ref={canvas} width={COLUMNS.to_string()} height={HEIGHT.to_string()} {onclick}
                title="Deltas over time; click to see the table as it was then"></canvas>
            <div class="legend">
                { for KINDS.iter().map(|(kind, colour)| html! {
                    <span><i style={format!("background:{colour}")}></i>{ format!("{kind:?}") }</span>
                }) }
                <span><i class="gap"></i>{ "not watching" }</span>
            </div>
        </div>
    }
}

fn draw(canvas: &NodeRef, data: &TimelineData, cursor: Option<Millis>) {
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
    ctx.clear_rect(0.0, 0.0, width, HEIGHT);
    ctx.set_fill_style_str("rgba(217, 48, 37, 0.15)");
    for (from, to) in &data.gaps {
        let (x0, x1) = (data.x_of(*from, width), data.x_of(*to, width));
        ctx.fill_rect(x0, 0.0, (x1 - x0).max(1.0), HEIGHT);
    }
    let max = data
        .columns
        .iter()
        .map(|c| c.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = (HEIGHT - 4.0) / (f64::from(max) + 1.0).ln();
    for (x, counts) in data.columns.iter().enumerate() {
        let total: u32 = counts.iter().sum();
        if total == 0 {
            continue;
        }
        // Stack the kinds in proportion within a log-scaled bar.
        let bar = (f64::from(total) + 1.0).ln() * scale;
        let mut y = HEIGHT;
        for (index, (_, colour)) in KINDS.iter().enumerate() {
            if counts[index] == 0 {
                continue;
            }
            let h = (bar * f64::from(counts[index]) / f64::from(total)).max(1.0);
            y -= h;
            ctx.set_fill_style_str(colour);
            ctx.fill_rect(x as f64, y, 1.0, h);
        }
    }
    if let Some(at) = cursor {
        ctx.set_fill_style_str("#f0a500");
        ctx.fill_rect(data.x_of(at, width) - 1.0, 0.0, 2.0, HEIGHT);
    }
}
