//! What an object's usage chart draws, on one time axis with its history:
//! the CPU or memory line (broken where no window was measured), the
//! request and limit (a node's allocatable) as lines, the object's own
//! history as marks — a container restarted (OOMKilled when its last state
//! says so), a workload's rollout (its generation moved), a warning event —
//! and the spans serve did not record, shaded. Coordinates are the SVG
//! view box's ([`WIDTH`] × [`HEIGHT`]); the view only draws them.
//!
//! Pure and tested natively; the samples are `crate::model::usage_series`'s.

use super::decimal::fixed;
use std::rc::Rc;

use deltascope_facts::quantity::{parse_quantity, Quantity};

use crate::api::object_record::RecordGap;
use crate::informer::{compact_sort, JsonRef, Millis};
use crate::model::object_story::EventRow;
use crate::model::top::MetricsNote;
use crate::model::top::{format_cpu, format_memory};
use crate::model::usage_series::{Metric, UsageSample, UsageSeries, UsageSubject};

/// The chart's view box.
pub const WIDTH: f64 = 1000.0;
pub const HEIGHT: f64 = 120.0;

/// A line across the chart: a request, a limit, a node's allocatable.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub value: u64,
    pub label: String,
    pub y: f64,
}

/// What a mark on the time axis says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Restart,
    OomKilled,
    Rollout,
    Warning,
}

impl MarkKind {
    /// `data-kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkKind::Restart => "restart",
            MarkKind::OomKilled => "oom-killed",
            MarkKind::Rollout => "rollout",
            MarkKind::Warning => "warning",
        }
    }
}

/// Something in the object's history at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageMark {
    pub at: Millis,
    pub kind: MarkKind,
    pub title: String,
}

/// One chart, laid out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChartLayout {
    /// SVG polyline points, one string per unbroken run.
    pub runs: Vec<String>,
    pub points: usize,
    pub last: Option<u64>,
    pub peak: Option<u64>,
    /// The top of the value axis.
    pub top: u64,
    pub value_ticks: Vec<(f64, String)>,
    pub time_ticks: Vec<(f64, String)>,
    pub request: Option<Level>,
    pub limit: Option<Level>,
    /// x, the mark.
    pub marks: Vec<(f64, UsageMark)>,
    /// x from, x to, and why.
    pub gaps: Vec<(f64, f64, String)>,
}

/// The chart's request and limit lines' values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Levels {
    pub request: Option<u64>,
    pub limit: Option<u64>,
    /// "limit", or "allocatable" for a node.
    pub limit_label: &'static str,
}

/// What a chart is drawn from.
pub struct ChartInput<'a> {
    pub samples: &'a [&'a UsageSample],
    pub metric: Metric,
    pub container: Option<&'a str>,
    pub range: (Millis, Millis),
    pub levels: &'a Levels,
    pub marks: &'a [UsageMark],
    pub gaps: &'a [RecordGap],
    /// Minutes the local clock is ahead of UTC (time labels).
    pub utc_offset_minutes: i64,
}

/// What the object view's Usage tab shows (`[data-testid=usage]`).
#[derive(Debug, Clone, PartialEq)]
pub struct UsagePanel {
    pub subject: UsageSubject,
    pub series: Rc<UsageSeries>,
    /// The metrics API's state, as the tables say it.
    pub note: MetricsNote,
    /// serve's record: `data-recorded` and its words.
    pub recorded: (&'static str, String),
    pub gaps: Rc<Vec<RecordGap>>,
    pub marks: Rc<Vec<UsageMark>>,
    /// The request and limit lines: of the whole object (`None`) and of
    /// each container, per metric.
    pub levels: Rc<Vec<(Option<String>, Metric, Levels)>>,
}

impl UsagePanel {
    /// The lines of `container` (or the whole object) for `metric`.
    pub fn levels(&self, container: Option<&str>, metric: Metric) -> Levels {
        self.levels
            .iter()
            .find(|(c, m, _)| c.as_deref() == container && *m == metric)
            .map(|(_, _, levels)| levels.clone())
            .unwrap_or_default()
    }
}

/// The least span a chart fitted to its samples shows.
pub const MIN_FITTED_SPAN_MS: Millis = 2 * 60_000;

/// `range` narrowed to start at the first sample in it (less a window),
/// keeping at least [`MIN_FITTED_SPAN_MS`]: a chart opened a minute ago
/// draws its minute across the width, not in the last pixels of half an
/// hour.
pub fn fitted(range: (Millis, Millis), first_sample: Option<(Millis, Millis)>) -> (Millis, Millis) {
    let (since, until) = range;
    let latest_start = until.saturating_sub(MIN_FITTED_SPAN_MS);
    let start = first_sample
        .map(|(at, window)| at.saturating_sub(window))
        .unwrap_or(latest_start);
    (start.clamp(since, latest_start.max(since)), until)
}

/// A value as the tables print it: CPU in millicores, memory in Mi.
pub fn format_value(metric: Metric, value: u64) -> String {
    match metric {
        Metric::Cpu => format_cpu(Quantity::from_nanos(i128::from(value))),
        Metric::Memory => format_memory(Quantity::from_nanos(i128::from(value) * 1_000_000_000)),
    }
}

/// Lays a chart out.
pub fn layout(input: &ChartInput<'_>) -> ChartLayout {
    let (since, until) = (input.range.0, input.range.1.max(input.range.0 + 1));
    let values: Vec<(Millis, Millis, u64)> = input
        .samples
        .iter()
        .filter(|s| s.at >= since && s.at <= until)
        .filter_map(|s| Some((s.at, s.window, s.value(input.metric, input.container)?)))
        .collect();
    let peak = values.iter().map(|v| v.2).max();
    let highest = [peak, input.levels.request, input.levels.limit]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
    let top = nice_top(input.metric, highest + highest / 10);
    let x = |at: Millis| (at.saturating_sub(since)) as f64 / (until - since) as f64 * WIDTH;
    let y = |value: u64| HEIGHT - value as f64 / top as f64 * HEIGHT;
    let level = |value: Option<u64>, label: &str| {
        value.map(|value| Level {
            value,
            label: format!("{label} {}", format_value(input.metric, value)),
            y: y(value),
        })
    };
    ChartLayout {
        runs: runs(&values, &x, &y),
        points: values.len(),
        last: values.last().map(|v| v.2),
        peak,
        top,
        value_ticks: [top / 2, top]
            .iter()
            .map(|v| (y(*v), format_value(input.metric, *v)))
            .collect(),
        time_ticks: time_ticks((since, until), input.utc_offset_minutes)
            .into_iter()
            .map(|(at, label)| (x(at), label))
            .collect(),
        request: level(input.levels.request, "request"),
        limit: level(input.levels.limit, input.levels.limit_label),
        marks: input
            .marks
            .iter()
            .filter(|m| m.at >= since && m.at <= until)
            .map(|m| (x(m.at), m.clone()))
            .collect(),
        gaps: input
            .gaps
            .iter()
            .filter(|g| g.to_ms as Millis > since && (g.from_ms as Millis) < until)
            .map(|g| {
                let from = x((g.from_ms as Millis).max(since));
                let to = x((g.to_ms as Millis).min(until));
                (from, to, format!("serve did not record: {}", g.reason))
            })
            .collect(),
    }
}

/// The polylines: a run breaks where more than two and a half windows
/// passed without a sample — or two and a half of the samples' usual
/// spacing, when that is longer (serve's recorder keeps a window a minute
/// by default, so its samples are a minute apart without a break).
fn runs(
    values: &[(Millis, Millis, u64)],
    x: &dyn Fn(Millis) -> f64,
    y: &dyn Fn(u64) -> f64,
) -> Vec<String> {
    let mut spacings: Vec<Millis> = values.windows(2).map(|w| w[1].0 - w[0].0).collect();
    crate::informer::compact_sort::sort(&mut spacings);
    let usual = spacings.get(spacings.len() / 2).copied().unwrap_or(0);
    let mut runs = Vec::new();
    let mut run = String::new();
    let mut column = Column::default();
    let mut previous: Option<Millis> = None;
    for &(at, window, value) in values {
        let allowed = window.max(1_000).max(usual) * 5 / 2;
        let point = (x(at), y(value));
        let index = (point.0 * COLUMNS_PER_UNIT) as i64;
        let broken = previous.is_some_and(|p| at - p > allowed);
        if broken || column.index != Some(index) {
            column.write_into(&mut run);
            if broken && !run.is_empty() {
                runs.push(std::mem::take(&mut run));
            }
            column = Column {
                index: Some(index),
                ..Column::default()
            };
        }
        column.add(point);
        previous = Some(at);
    }
    column.write_into(&mut run);
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// Polyline points per unit of the chart's width at most: a day of 15 s
/// windows (5,760) on a 1,000-unit chart is drawn through each half
/// unit's first, lowest, highest and last value — the envelope a person
/// sees, peaks and drops kept — not every sample.
const COLUMNS_PER_UNIT: f64 = 2.0;

/// The values that fall into one column of the chart (SVG y grows down:
/// `low` is the highest value, `high` the lowest).
#[derive(Default)]
struct Column {
    index: Option<i64>,
    first: Option<(f64, f64)>,
    low: Option<(f64, f64)>,
    high: Option<(f64, f64)>,
    last: Option<(f64, f64)>,
}

impl Column {
    /// Appends the column's first, extreme and last points, in time
    /// order, each once, as "x,y" pairs.
    fn write_into(&self, run: &mut String) {
        use std::fmt::Write as _;
        let (earlier, later) = match (self.low, self.high) {
            (Some(low), Some(high)) if high.0 < low.0 => (Some(high), Some(low)),
            extremes => extremes,
        };
        // in time order, so one sample met twice is met twice in a row
        let mut written = None;
        for point in [self.first, earlier, later, self.last]
            .into_iter()
            .flatten()
        {
            if written == Some(point) {
                continue;
            }
            if !run.is_empty() {
                run.push(' ');
            }
            let _ = write!(run, "{},{}", fixed(point.0, 1), fixed(point.1, 1));
            written = Some(point);
        }
    }

    fn add(&mut self, point: (f64, f64)) {
        self.first.get_or_insert(point);
        if self.low.is_none_or(|low| point.1 > low.1) {
            self.low = Some(point);
        }
        if self.high.is_none_or(|high| point.1 < high.1) {
            self.high = Some(point);
        }
        self.last = Some(point);
    }
}

/// The value axis' top: 1, 2 or 5 times a power of ten of the unit the
/// labels print (millicores, Mi), at least one of it.
fn nice_top(metric: Metric, value: u64) -> u64 {
    let unit: u64 = match metric {
        Metric::Cpu => 1_000_000,
        Metric::Memory => 1 << 20,
    };
    let in_units = value.div_ceil(unit).max(1);
    let mut power = 1u64;
    loop {
        for step in [1, 2, 5] {
            if step * power >= in_units {
                return step * power * unit;
            }
        }
        power = power.saturating_mul(10);
    }
}

/// Time labels at a round step giving at most six, in local time.
fn time_ticks((since, until): (Millis, Millis), utc_offset_minutes: i64) -> Vec<(Millis, String)> {
    const STEPS: [Millis; 10] = [
        10_000, 30_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000,
        43_200_000,
    ];
    let span = until - since;
    let step = STEPS
        .into_iter()
        .find(|step| span / step <= 6)
        .unwrap_or(86_400_000);
    let offset = utc_offset_minutes * 60_000;
    let local = |at: Millis| at as i64 + offset;
    let first = (local(since).div_euclid(step as i64) + 1) * step as i64 - offset;
    let mut ticks = Vec::new();
    let mut at = first.max(0) as Millis;
    while at < until {
        let seconds_of_day = local(at).rem_euclid(86_400_000) / 1000;
        let (h, m, s) = (
            seconds_of_day / 3600,
            seconds_of_day / 60 % 60,
            seconds_of_day % 60,
        );
        let label = if step < 60_000 {
            format!("{h:02}:{m:02}:{s:02}")
        } else {
            format!("{h:02}:{m:02}")
        };
        ticks.push((at, label));
        at += step;
    }
    ticks
}

/// The sample nearest `fraction` of the way across the range.
pub fn nearest<'a>(
    samples: &[&'a UsageSample],
    range: (Millis, Millis),
    fraction: f64,
) -> Option<&'a UsageSample> {
    let at = range.0 as f64 + (range.1.saturating_sub(range.0)) as f64 * fraction.clamp(0.0, 1.0);
    samples
        .iter()
        .filter(|s| s.at >= range.0 && s.at <= range.1)
        .min_by(|a, b| {
            let da = (a.at as f64 - at).abs();
            let db = (b.at as f64 - at).abs();
            da.total_cmp(&db)
        })
        .copied()
}

/// The object's history as marks: a container's restart count rising
/// between two versions (OOMKilled when its last state says so), a
/// generation moving (a rollout of a workload), and warning events.
pub fn history_marks(
    versions: &[(Millis, JsonRef<'_>)],
    warnings: &[(Millis, String)],
    workload: bool,
) -> Vec<UsageMark> {
    let mut marks = Vec::new();
    for pair in versions.windows(2) {
        let ((_, before), (at, after)) = (pair[0], pair[1]);
        for (name, count, reason) in restarts(after) {
            let was = restarts(before)
                .into_iter()
                .find(|(n, _, _)| *n == name)
                .map_or(0, |(_, c, _)| c);
            if count > was {
                let oom = reason == "OOMKilled";
                marks.push(UsageMark {
                    at,
                    kind: if oom {
                        MarkKind::OomKilled
                    } else {
                        MarkKind::Restart
                    },
                    title: format!("{name} restarted ({count} restarts; last ended: {reason})"),
                });
            }
        }
        let generation =
            |o: JsonRef<'_>| o.pointer("/metadata/generation").and_then(|g| g.as_i64());
        if workload && generation(after) > generation(before) && generation(before).is_some() {
            marks.push(UsageMark {
                at,
                kind: MarkKind::Rollout,
                title: format!(
                    "spec changed (generation {})",
                    generation(after).unwrap_or(0)
                ),
            });
        }
    }
    marks.extend(warnings.iter().map(|(at, title)| UsageMark {
        at: *at,
        kind: MarkKind::Warning,
        title: title.clone(),
    }));
    compact_sort::sort_by_key(&mut marks, |m| m.at);
    marks
}

/// The warning events, at their last time seen, as [`history_marks`]
/// reads them.
pub fn warnings_of(events: &[EventRow]) -> Vec<(Millis, String)> {
    events
        .iter()
        .filter(|row| row.event.is_warning())
        .filter_map(|row| {
            let at = deltascope_facts::time::parse_rfc3339_millis(&row.event.last_seen)?;
            let title = format!("{}: {}", row.event.reason, row.event.message);
            Some((Millis::try_from(at).ok()?, title))
        })
        .collect()
}

/// Each container's name, restart count and why its last run ended.
fn restarts(pod: JsonRef<'_>) -> Vec<(&str, i64, &str)> {
    let Some(statuses) = pod
        .pointer("/status/containerStatuses")
        .and_then(|s| s.as_array())
    else {
        return Vec::new();
    };
    statuses
        .iter()
        .filter_map(|status| {
            let name = status.get("name")?.as_str()?;
            let count = status
                .get("restartCount")
                .and_then(|c| c.as_i64())
                .unwrap_or(0);
            let reason = status
                .pointer("/lastState/terminated/reason")
                .and_then(|r| r.as_str())
                .unwrap_or("unknown");
            Some((name, count, reason))
        })
        .collect()
}

/// A pod's request and limit for `metric` (`container`'s, or all of its
/// containers' summed when each sets one); a node's allocatable.
pub fn levels_of(
    object: JsonRef<'_>,
    node: bool,
    metric: Metric,
    container: Option<&str>,
) -> Levels {
    let resource = match metric {
        Metric::Cpu => "cpu",
        Metric::Memory => "memory",
    };
    let amount = |text: Option<&str>| {
        let quantity = parse_quantity(text?).ok()?;
        let value = match metric {
            Metric::Cpu => quantity.nanos(),
            Metric::Memory => quantity.value(),
        };
        u64::try_from(value).ok()
    };
    if node {
        let allocatable = object
            .pointer("/status/allocatable")
            .and_then(|a| a.get(resource))
            .and_then(|v| v.as_str());
        return Levels {
            request: None,
            limit: amount(allocatable),
            limit_label: "allocatable",
        };
    }
    let containers: Vec<JsonRef<'_>> = object
        .pointer("/spec/containers")
        .and_then(|c| c.as_array())
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let chosen: Vec<JsonRef<'_>> = containers
        .into_iter()
        .filter(|c| {
            container.is_none_or(|name| c.get("name").and_then(|n| n.as_str()) == Some(name))
        })
        .collect();
    let sum = |kind: &str| -> Option<u64> {
        if chosen.is_empty() {
            return None;
        }
        chosen.iter().try_fold(0u64, |total, c| {
            let text = c
                .pointer(&format!("/resources/{kind}/{resource}"))
                .and_then(|v| v.as_str());
            Some(total.saturating_add(amount(text)?))
        })
    };
    Levels {
        request: sum("requests"),
        limit: sum("limits"),
        limit_label: "limit",
    }
}

/// [`levels_of`] the whole object and each of its containers, per metric.
pub fn all_levels(object: JsonRef<'_>, node: bool) -> Vec<(Option<String>, Metric, Levels)> {
    let names: Vec<Option<String>> = std::iter::once(None)
        .chain(
            object
                .pointer("/spec/containers")
                .and_then(|c| c.as_array())
                .into_iter()
                .flat_map(|c| c.iter())
                .filter_map(|c| Some(Some(c.get("name")?.as_str()?.to_string()))),
        )
        .collect();
    let mut all = Vec::new();
    for name in names {
        for metric in [Metric::Cpu, Metric::Memory] {
            let levels = levels_of(object, node, metric, name.as_deref());
            all.push((name.clone(), metric, levels));
        }
    }
    all
}

#[cfg(test)]
#[path = "usage_chart_tests.rs"]
mod tests;
