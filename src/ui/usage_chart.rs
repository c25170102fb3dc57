//! The object view's Usage tab: CPU and memory over the timeline's range
//! as two SVG charts laid out by `crate::model::usage_chart` — the line,
//! the request and limit (a node's allocatable), the spans serve did not
//! record, and the object's history as marks on the same axis (restarts,
//! OOMKilled, rollouts, warnings). Hovering a chart shows the nearest
//! sample's time and value. A pod picks one container or all of them.
//!
//! Drawn as SVG by hand, not with a plotting crate: plotters with its
//! canvas backend costs the page ~14.7 KB brotli (measured: a line chart
//! drawn with it and by hand, the page's release profile), more than the
//! bundle goal leaves; SVG also gives the browser tests what a person sees
//! as elements and attributes.

use crate::model::decimal::{fixed, short};
use std::rc::Rc;

use yew::prelude::*;

use crate::informer::Millis;
use crate::model::usage_chart::{
    fitted, format_value, layout, nearest, ChartInput, ChartLayout, UsagePanel,
};
use crate::model::usage_series::{Metric, UsageSample, UsageSubject};

#[derive(Properties, Clone, PartialEq)]
pub struct UsageProps {
    pub usage: Rc<UsagePanel>,
    /// The timeline's range (ms since the Unix epoch).
    pub range: (Millis, Millis),
    /// Show only the part of it samples were measured in.
    pub fit: bool,
}

#[function_component(UsageCharts)]
pub fn usage_charts(props: &UsageProps) -> Html {
    let container = use_state(|| None::<String>);
    let usage = &props.usage;
    let range = if props.fit {
        let first = usage.series.first().map(|s| (s.at, s.window));
        fitted(props.range, first)
    } else {
        props.range
    };
    let containers = usage.series.containers();
    let chosen = container
        .as_deref()
        .filter(|c| containers.iter().any(|name| name == c));
    let samples: Vec<&UsageSample> = usage.series.in_range(range.0, range.1).collect();
    let subject = match &usage.subject {
        UsageSubject::Pod { .. } => "pod",
        UsageSubject::Node { .. } => "node",
        UsageSubject::Workload { .. } => "workload",
    };
    let (recorded_state, recorded_words) = usage.recorded.clone();
    let note = &usage.note;
    let quiet = match note.state {
        "none" | "forbidden" => Some(note.words.clone()),
        "waiting" if usage.series.is_empty() => Some(if note.title.is_empty() {
            "waiting for the first metrics window…".to_string()
        } else {
            format!("waiting for the first metrics window ({})", note.title)
        }),
        _ => None,
    };
    let picker = (containers.len() > 1).then(|| {
        let button = |name: Option<String>| {
            let label = name.clone().unwrap_or_else(|| "all containers".into());
            let selected = name.as_deref() == chosen;
            let container = container.clone();
            let pick = name.clone();
            html! {
                <button data-testid="usage-container" data-name={name.unwrap_or_default()}
                    class={classes!(selected.then_some("active"))} aria-pressed={selected.to_string()}
                    onclick={Callback::from(move |_| container.set(pick.clone()))}>{ label }</button>
            }
        };
        html! {
            <div class="usage-containers">
                { button(None) }
                { for containers.iter().map(|c| button(Some(c.clone()))) }
            </div>
        }
    });
    let workload_pods = match (&usage.subject, samples.last()) {
        (UsageSubject::Workload { .. }, Some(last)) => last
            .pods
            .map(|n| format!("the sum of its {n} pod(s) measured in the last window")),
        _ => None,
    };
    html! {
        <div class="usage" data-testid="usage" data-subject={subject} data-state={note.state}
            data-recorded={recorded_state} data-samples={usage.series.len().to_string()}
            data-first={usage.series.first().map(|s| s.at.to_string()).unwrap_or_default()}>
            if let Some(words) = quiet {
                <p class="muted" data-testid="usage-note" title={note.title.clone()}>{ words }</p>
            }
            if !recorded_words.is_empty() {
                <p class="muted usage-recorded" data-testid="usage-recorded">{ recorded_words }</p>
            }
            if let Some(words) = workload_pods {
                <p class="muted">{ words }</p>
            }
            { picker.unwrap_or_default() }
            if note.state != "none" && note.state != "forbidden" {
                <Chart usage={usage.clone()} metric={Metric::Cpu} container={chosen.map(|c| AttrValue::from(c.to_string()))} range={range} />
                <Chart usage={usage.clone()} metric={Metric::Memory} container={chosen.map(|c| AttrValue::from(c.to_string()))} range={range} />
            }
        </div>
    }
}

#[derive(Properties, Clone, PartialEq)]
struct ChartProps {
    usage: Rc<UsagePanel>,
    metric: Metric,
    container: Option<AttrValue>,
    range: (Millis, Millis),
}

#[function_component(Chart)]
fn chart(props: &ChartProps) -> Html {
    let hover = use_state(|| None::<f64>);
    let usage = &props.usage;
    let container = props.container.as_deref();
    let samples: Vec<&UsageSample> = usage
        .series
        .in_range(props.range.0, props.range.1)
        .collect();
    let levels = usage.levels(container, props.metric);
    let offset = -(js_sys::Date::new_0().get_timezone_offset() as i64);
    let chart = layout(&ChartInput {
        samples: &samples,
        metric: props.metric,
        container,
        range: props.range,
        levels: &levels,
        marks: &usage.marks,
        gaps: &usage.gaps,
        utc_offset_minutes: offset,
    });
    let name = match props.metric {
        Metric::Cpu => "cpu",
        Metric::Memory => "memory",
    };
    let onmousemove = {
        let hover = hover.clone();
        Callback::from(move |event: MouseEvent| {
            let Some(target) = event.current_target() else {
                return;
            };
            let Ok(element) = wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(target) else {
                return;
            };
            let rect = element.get_bounding_client_rect();
            if rect.width() > 0.0 {
                hover.set(Some(
                    (f64::from(event.client_x()) - rect.left()) / rect.width(),
                ));
            }
        })
    };
    let onmouseleave = {
        let hover = hover.clone();
        Callback::from(move |_| hover.set(None))
    };
    let hovered = hover.and_then(|fraction| nearest(&samples, props.range, fraction));
    let number = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    html! {
        <figure class="usage-chart" data-testid="usage-chart" data-metric={name}
            data-points={chart.points.to_string()} data-last={number(chart.last)} data-peak={number(chart.peak)}
            data-limit={number(chart.limit.as_ref().map(|l| l.value))}
            data-request={number(chart.request.as_ref().map(|l| l.value))}>
            <figcaption>{ caption(props.metric, &chart) }</figcaption>
            <div class="usage-plot">
                <div class="usage-values">
                    { for chart.value_ticks.iter().map(|(y, label)| html! {
                        <span style={format!("top:{}%", fixed(y / crate::model::usage_chart::HEIGHT * 100.0, 1))}>{ label }</span>
                    }) }
                </div>
                <svg viewBox={format!("0 0 {} {}", short(crate::model::usage_chart::WIDTH), short(crate::model::usage_chart::HEIGHT))}
                    preserveAspectRatio="none" {onmousemove} {onmouseleave}>
                    { svg_body(&chart) }
                    if let Some(sample) = hovered {
                        { hover_line(sample, props.range) }
                    }
                </svg>
            </div>
            <div class="usage-times">
                { for chart.time_ticks.iter().map(|(x, label)| html! {
                    <span style={format!("left:{}%", fixed(x / crate::model::usage_chart::WIDTH * 100.0, 1))}>{ label }</span>
                }) }
            </div>
            if let Some(sample) = hovered {
                <p class="usage-hover" data-testid="usage-hover" data-at={sample.at.to_string()}>
                    { hover_text(sample, props.metric, container) }
                </p>
            }
        </figure>
    }
}

/// "Memory: 180Mi now, peak 240Mi · limit 256Mi".
fn caption(metric: Metric, chart: &ChartLayout) -> String {
    let title = match metric {
        Metric::Cpu => "CPU",
        Metric::Memory => "Memory",
    };
    let mut words = match (chart.last, chart.peak) {
        (Some(last), Some(peak)) => format!(
            "{title}: {} last, peak {}",
            format_value(metric, last),
            format_value(metric, peak)
        ),
        _ => format!("{title}: no window measured in this range"),
    };
    for level in [&chart.request, &chart.limit].into_iter().flatten() {
        words.push_str(" · ");
        words.push_str(&level.label);
    }
    words
}

/// The gaps, levels, line and marks.
fn svg_body(chart: &ChartLayout) -> Html {
    let width = crate::model::usage_chart::WIDTH;
    let level = |level: &Option<crate::model::usage_chart::Level>, test_id: &'static str| {
        level.as_ref().map(|l| html! {
            <line data-testid={test_id} class={test_id} x1="0" x2={short(width).to_string()}
                y1={fixed(l.y, 1).to_string()} y2={fixed(l.y, 1).to_string()}><title>{ l.label.clone() }</title></line>
        })
    };
    html! {
        <>
            { for chart.gaps.iter().map(|(from, to, why)| html! {
                <rect data-testid="usage-gap" class="usage-gap" x={fixed(*from, 1).to_string()} y="0"
                    width={fixed((to - from).max(1.0), 1).to_string()} height={short(crate::model::usage_chart::HEIGHT).to_string()}>
                    <title>{ why.clone() }</title></rect>
            }) }
            { level(&chart.request, "usage-request").unwrap_or_default() }
            { level(&chart.limit, "usage-limit").unwrap_or_default() }
            { for chart.runs.iter().map(|points| match points.split_once(',') {
                // a lone sample: a dot, as a one-point line draws nothing
                Some((x, y)) if !points.contains(' ') => html! {
                    <circle data-testid="usage-line" class="usage-dot" cx={x.to_string()} cy={y.to_string()} r="2" />
                },
                _ => html! {
                    <polyline data-testid="usage-line" class="usage-line" points={points.clone()} />
                },
            }) }
            { for chart.marks.iter().map(|(x, mark)| html! {
                <line data-testid="usage-mark" class={classes!("usage-mark", mark.kind.as_str())}
                    data-kind={mark.kind.as_str()} data-at={mark.at.to_string()}
                    x1={fixed(*x, 1).to_string()} x2={fixed(*x, 1).to_string()} y1="0" y2={short(crate::model::usage_chart::HEIGHT).to_string()}>
                    <title>{ mark.title.clone() }</title></line>
            }) }
        </>
    }
}

fn hover_line(sample: &UsageSample, range: (Millis, Millis)) -> Html {
    let span = range.1.saturating_sub(range.0).max(1) as f64;
    let x = sample.at.saturating_sub(range.0) as f64 / span * crate::model::usage_chart::WIDTH;
    html! {
        <line class="usage-hover-line" x1={fixed(x, 1).to_string()} x2={fixed(x, 1).to_string()} y1="0"
            y2={short(crate::model::usage_chart::HEIGHT).to_string()} />
    }
}

/// "12:03:15 · memory 180Mi (recorded by serve)".
fn hover_text(sample: &UsageSample, metric: Metric, container: Option<&str>) -> String {
    let date = js_sys::Date::new(&(sample.at as f64).into());
    let value = sample
        .value(metric, container)
        .map(|v| format_value(metric, v))
        .unwrap_or_else(|| "not measured".into());
    let source = match sample.source {
        crate::model::usage_series::SampleSource::Page => "",
        crate::model::usage_series::SampleSource::Recorder => " (recorded by serve)",
    };
    format!(
        "{:02}:{:02}:{:02} · {} {value}{source}",
        date.get_hours(),
        date.get_minutes(),
        date.get_seconds(),
        match metric {
            Metric::Cpu => "cpu",
            Metric::Memory => "memory",
        }
    )
}
