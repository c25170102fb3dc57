//! The timeline's model, with no web dependency so it is tested natively:
//! the visible time range (live-follow, zoom, pan) and the lanes (one per
//! resource the page keeps live, one per namespace, or one per delta type)
//! bucketed into pixel columns so 100,000 marks cost one pass, and the delta
//! list's selection — the deltas of a time range that pass the user's
//! filters, from every kept resource's history merged by time, newest
//! first (each drawn as a `delta_list` row).

use std::collections::HashMap;

use crate::informer::compact_sort;
use crate::informer::object_events::warning_about;
use crate::informer::{DeltaType, History, HistoryEntry, Millis};

/// Pixel columns of the timeline canvas.
pub const COLUMNS: usize = 600;
/// Lanes drawn at most; further namespaces share an "other" lane.
pub const MAX_LANES: usize = 8;
/// The shortest span a zoom reaches (ms).
pub const MIN_SPAN_MS: Millis = 50;
/// The longest span a zoom reaches (ms): 30 days.
pub const MAX_SPAN_MS: Millis = 30 * 24 * 3600 * 1000;
/// A live view that has seen nothing yet still spans this much.
const MIN_LIVE_SPAN_MS: Millis = 1_000;

/// The delta types in drawing order (bottom of a stacked bar first).
pub const DELTA_TYPES: [DeltaType; 5] = [
    DeltaType::Replaced,
    DeltaType::Sync,
    DeltaType::Added,
    DeltaType::Updated,
    DeltaType::Deleted,
];

/// Index of `kind` in [`DELTA_TYPES`].
pub fn type_index(kind: DeltaType) -> usize {
    DELTA_TYPES.iter().position(|k| *k == kind).unwrap_or(0)
}

/// The namespace part of a store key (`""` for cluster-scoped objects).
pub fn namespace_of(key: &str) -> &str {
    key.split_once('/').map_or("", |(namespace, _)| namespace)
}

/// How deltas are split into lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaneMode {
    /// One lane per resource kept live (each from its own informer's history).
    #[default]
    Resource,
    /// One lane per namespace (the busiest first, the rest in "other").
    Namespace,
    /// One lane per delta type.
    Type,
    /// One lane per field manager that wrote the deltas (who changed what,
    /// over time; a delta two managers wrote is in both lanes).
    Manager,
    /// One lane per cluster the kept resources are of (serve's clusters).
    Cluster,
}

impl LaneMode {
    pub const ALL: [LaneMode; 5] = [
        LaneMode::Resource,
        LaneMode::Namespace,
        LaneMode::Type,
        LaneMode::Manager,
        LaneMode::Cluster,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LaneMode::Resource => "resource",
            LaneMode::Namespace => "namespace",
            LaneMode::Type => "type",
            LaneMode::Manager => "manager",
            LaneMode::Cluster => "cluster",
        }
    }

    pub fn parse(text: &str) -> Option<LaneMode> {
        LaneMode::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// What part of time the timeline shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewport {
    /// The right edge is now and moves with it; `span: None` shows everything held.
    Live { span: Option<Millis> },
    /// A fixed range the user zoomed or panned to (live-follow paused).
    Fixed { start: Millis, end: Millis },
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport::Live { span: None }
    }
}

impl Viewport {
    pub fn is_live(&self) -> bool {
        matches!(self, Viewport::Live { .. })
    }

    /// The range `[start, end)` shown, given the oldest held delta and now.
    pub fn resolve(&self, first: Option<Millis>, now: Millis) -> (Millis, Millis) {
        match *self {
            Viewport::Live { span: None } => {
                let start = first.unwrap_or(now).min(now);
                (start, now.max(start + MIN_LIVE_SPAN_MS))
            }
            Viewport::Live { span: Some(span) } => (now.saturating_sub(span), now.max(span)),
            Viewport::Fixed { start, end } => (start, end.max(start + 1)),
        }
    }

    /// A range that reaches now keeps following (with its span); one that ends
    /// before now pauses live-follow.
    fn settle(start: Millis, end: Millis, now: Millis) -> Viewport {
        let span = end.saturating_sub(start).max(1);
        if end >= now {
            Viewport::Live { span: Some(span) }
        } else {
            Viewport::Fixed { start, end }
        }
    }

    /// Zooms `range` by `factor` (< 1 zooms in) keeping the time under
    /// `anchor` (0 = left edge, 1 = right edge) where it is.
    pub fn zoomed(range: (Millis, Millis), factor: f64, anchor: f64, now: Millis) -> Viewport {
        let (start, end) = range;
        let span = end.saturating_sub(start).max(1) as f64;
        let anchor = anchor.clamp(0.0, 1.0);
        let new_span = (span * factor.clamp(0.01, 100.0))
            .clamp(MIN_SPAN_MS as f64, MAX_SPAN_MS as f64)
            .round();
        let pivot = start as f64 + span * anchor;
        let new_start = (pivot - new_span * anchor).max(0.0).round() as Millis;
        Viewport::settle(new_start, new_start + new_span as Millis, now)
    }

    /// Moves `range` by `fraction` of its span (negative = back in time);
    /// never past now.
    pub fn panned(range: (Millis, Millis), fraction: f64, now: Millis) -> Viewport {
        let (start, end) = range;
        let span = end.saturating_sub(start).max(1);
        let shift = (span as f64 * fraction).round();
        let new_start = if shift < 0.0 {
            start.saturating_sub((-shift) as Millis)
        } else {
            start.saturating_add(shift as Millis)
        };
        let new_start = new_start.min(now.saturating_sub(span));
        Viewport::settle(new_start, new_start + span, now)
    }
}

/// Deltas per pixel column and type for one lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub name: String,
    pub columns: Vec<[u32; 5]>,
    /// Deltas in this lane within the range.
    pub count: u64,
    /// In [`LaneMode::Resource`], when this lane's informer was blind and
    /// relisted (other modes mix resources: see [`TimelineData::gaps`]).
    pub gaps: Vec<(Millis, Millis)>,
    pub relists: Vec<Millis>,
    /// In [`LaneMode::Resource`], the columns where a Warning event about
    /// one of this resource's objects was recorded (from a kept events
    /// resource), in order.
    pub warnings: Vec<usize>,
    /// Deltas drawn from serve's record (before the page's own history),
    /// within the range; included in `columns` and `count`.
    pub recorded: u64,
    /// Spans serve's recorder did not watch, with its reason.
    pub recorded_gaps: Vec<(Millis, Millis, String)>,
    /// Why serve's record could not be drawn (its last answer).
    pub recorded_error: Option<String>,
}

impl Lane {
    pub(crate) fn new(name: String) -> Lane {
        Lane {
            name,
            columns: vec![[0; 5]; COLUMNS],
            count: 0,
            gaps: Vec::new(),
            relists: Vec::new(),
            warnings: Vec::new(),
            recorded: 0,
            recorded_gaps: Vec::new(),
            recorded_error: None,
        }
    }

    pub(crate) fn add(&mut self, column: usize, kind: usize) {
        self.columns[column][kind] += 1;
        self.count += 1;
    }

    fn absorb(&mut self, other: &Lane) {
        for (mine, theirs) in self.columns.iter_mut().zip(&other.columns) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        self.count += other.count;
    }
}

/// Everything the timeline draws for one range.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimelineData {
    pub start: Millis,
    pub end: Millis,
    pub mode: LaneMode,
    pub lanes: Vec<Lane>,
    /// Spans when the page was not watching some resource (it was blind
    /// then): the union over the sources.
    pub gaps: Vec<(Millis, Millis)>,
    /// Moments an informer relisted, over all sources, in order.
    pub relists: Vec<Millis>,
    /// Deltas held by the histories (all of them, not only the visible ones).
    pub total: u64,
    /// Deltas within `[start, end)`.
    pub in_view: u64,
}

/// One resource's history as the timeline and the delta list read it: the
/// lane's name, the history, and when that informer was blind or relisted.
#[derive(Debug, Clone, Copy)]
pub struct HistorySource<'a> {
    pub name: &'a str,
    /// serve's name of the resource's cluster, `""` for the default one
    /// (the name is then `{cluster}: {resource}`).
    pub cluster: &'a str,
    pub history: &'a History,
    pub gaps: &'a [(Millis, Millis)],
    pub relists: &'a [Millis],
}

/// What [`TimelineData::build`] draws from besides the history.
#[derive(Debug, Clone, Copy)]
pub struct TimelineInput<'a> {
    pub gaps: &'a [(Millis, Millis)],
    pub relists: &'a [Millis],
    pub range: (Millis, Millis),
    pub mode: LaneMode,
    /// The lane name in [`LaneMode::Resource`].
    pub resource: &'a str,
}

impl TimelineData {
    /// Buckets the held deltas within `input.range` into lanes × columns
    /// (one history: the single-resource case of [`TimelineData::build_sources`]).
    pub fn build(history: &History, input: TimelineInput<'_>) -> TimelineData {
        let source = HistorySource {
            name: input.resource,
            cluster: "",
            history,
            gaps: input.gaps,
            relists: input.relists,
        };
        TimelineData::build_sources(&[source], input.range, input.mode)
    }

    /// Buckets the held deltas of every source within `range` into lanes ×
    /// columns: one lane per source (in the order given), or the sources'
    /// deltas together by namespace or by type.
    pub fn build_sources(
        sources: &[HistorySource<'_>],
        range: (Millis, Millis),
        mode: LaneMode,
    ) -> TimelineData {
        let (start, end) = (range.0, range.1.max(range.0 + 1));
        let span = (end - start) as f64;
        let column_of = |at: Millis| {
            let x = ((at.saturating_sub(start)) as f64 / span * COLUMNS as f64) as usize;
            x.min(COLUMNS - 1)
        };
        let mut lanes = lanes_of(sources, (start, end), mode, &column_of);
        if mode == LaneMode::Resource {
            mark_warnings(sources, &mut lanes, (start, end), &column_of);
        }
        // A delta two managers wrote is in two lanes: count deltas, not marks.
        let in_view = match mode {
            LaneMode::Manager => sources
                .iter()
                .map(|source| source.history.range(start, end).count() as u64)
                .sum(),
            _ => lanes.iter().map(|l| l.count).sum(),
        };
        let mut relists: Vec<Millis> = sources
            .iter()
            .flat_map(|s| s.relists.iter().copied())
            .collect();
        compact_sort::sort(&mut relists);
        TimelineData {
            start,
            end,
            mode,
            lanes,
            gaps: union_of_spans(sources.iter().flat_map(|s| s.gaps.iter().copied())),
            relists,
            total: sources.iter().map(|s| s.history.len() as u64).sum(),
            in_view,
        }
    }

    /// The moment at `fraction` (0..=1) of the width.
    pub fn time_at(&self, fraction: f64) -> Millis {
        self.start + ((self.end - self.start) as f64 * fraction.clamp(0.0, 1.0)) as Millis
    }

    /// Where `at` falls, as pixels of a `width` wide strip (may be outside it).
    pub fn x_of(&self, at: Millis, width: f64) -> f64 {
        (at as f64 - self.start as f64) / (self.end - self.start).max(1) as f64 * width
    }
}

/// The lanes of `mode` over the sources' deltas in `[start, end)`, each
/// bucketed by `column_of`; one lane naming the sources when a mode that
/// groups finds nothing.
fn lanes_of(
    sources: &[HistorySource<'_>],
    (start, end): (Millis, Millis),
    mode: LaneMode,
    column_of: &dyn Fn(Millis) -> usize,
) -> Vec<Lane> {
    let entries = || {
        sources
            .iter()
            .flat_map(move |source| source.history.range(start, end))
    };
    let lanes = match mode {
        LaneMode::Resource => sources
            .iter()
            .map(|source| {
                let mut lane = Lane::new(source.name.to_string());
                for entry in source.history.range(start, end) {
                    lane.add(column_of(entry.at), type_index(entry.kind));
                }
                lane.gaps = source.gaps.to_vec();
                lane.relists = source.relists.to_vec();
                lane
            })
            .collect(),
        LaneMode::Type => {
            let mut lanes: Vec<Lane> = DELTA_TYPES
                .iter()
                .map(|k| Lane::new(format!("{k:?}")))
                .collect();
            for entry in entries() {
                let kind = type_index(entry.kind);
                lanes[kind].add(column_of(entry.at), kind);
            }
            lanes.reverse(); // Deleted on top, as in a stacked bar
            lanes
        }
        LaneMode::Namespace => grouped_lanes(
            entries(),
            |entry| vec![namespace_label(namespace_of(entry.key()))],
            "namespaces",
            MAX_LANES,
            column_of,
        ),
        LaneMode::Manager => grouped_lanes(
            entries(),
            |entry| match entry.writers.is_empty() {
                true => vec![NO_MANAGER],
                false => entry.writers.iter().map(|w| &**w).collect(),
            },
            "field managers",
            MAX_MANAGER_LANES,
            column_of,
        ),
        LaneMode::Cluster => cluster_lanes(sources, (start, end), column_of),
    };
    if lanes.is_empty() && matches!(mode, LaneMode::Namespace | LaneMode::Manager) {
        let names: Vec<&str> = sources.iter().map(|s| s.name).collect();
        vec![Lane::new(names.join(", "))]
    } else {
        lanes
    }
}

/// How the lane of the default cluster is named.
pub const DEFAULT_CLUSTER_LANE: &str = "(default cluster)";

/// One lane per cluster, in the order the sources first name it.
fn cluster_lanes(
    sources: &[HistorySource<'_>],
    (start, end): (Millis, Millis),
    column_of: &dyn Fn(Millis) -> usize,
) -> Vec<Lane> {
    let mut lanes: Vec<(&str, Lane)> = Vec::new();
    for source in sources {
        let at = match lanes.iter().position(|(c, _)| *c == source.cluster) {
            Some(at) => at,
            None => {
                let name = match source.cluster {
                    "" => DEFAULT_CLUSTER_LANE,
                    cluster => cluster,
                };
                lanes.push((source.cluster, Lane::new(name.to_string())));
                lanes.len() - 1
            }
        };
        let lane = &mut lanes[at].1;
        for entry in source.history.range(start, end) {
            lane.add(column_of(entry.at), type_index(entry.kind));
        }
        lane.gaps.extend_from_slice(source.gaps);
        lane.relists.extend_from_slice(source.relists);
    }
    lanes.into_iter().map(|(_, lane)| lane).collect()
}

/// A lane's resource name without its cluster's prefix.
fn resource_name<'n>(cluster: &str, name: &'n str) -> &'n str {
    match cluster {
        "" => name,
        cluster => name
            .strip_prefix(cluster)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(name),
    }
}

/// Marks each resource lane where a Warning event about one of its
/// objects was recorded by a kept events resource (`core/v1` or
/// `events.k8s.io/v1`) of the same cluster: the event's involved kind and
/// API group name the lane (`Pod` → `pods`, `Deployment` in `apps` →
/// `deployments.apps`).
fn mark_warnings(
    sources: &[HistorySource<'_>],
    lanes: &mut [Lane],
    (start, end): (Millis, Millis),
    column_of: &dyn Fn(Millis) -> usize,
) {
    let is_events = |s: &HistorySource<'_>| {
        matches!(
            resource_name(s.cluster, s.name),
            "events" | "events.events.k8s.io"
        )
    };
    for source in sources.iter().filter(|s| is_events(s)) {
        for entry in source.history.range(start, end) {
            if !matches!(entry.kind, DeltaType::Added | DeltaType::Updated) {
                continue;
            }
            let Some((group, kind)) = warning_about(entry.object.value.root()) else {
                continue;
            };
            let Some(resource) = deltascope_facts::resources::by_kind(group, kind) else {
                continue;
            };
            let lane_name = match resource.group {
                "" => resource.plural.to_string(),
                group => format!("{}.{group}", resource.plural),
            };
            let column = column_of(entry.at);
            // In resource mode the lanes are the sources, in order.
            for (lane, _) in lanes.iter_mut().zip(sources).filter(|(l, of)| {
                let name = resource_name(of.cluster, &l.name);
                of.cluster == source.cluster
                    && (name == lane_name
                        || name
                            .strip_prefix(lane_name.as_str())
                            .is_some_and(|rest| rest.starts_with(" (")))
            }) {
                if lane.warnings.last() != Some(&column) {
                    lane.warnings.push(column);
                }
            }
        }
    }
}

/// Field managers are fewer than namespaces and each one matters (the
/// rare manual writer most): up to this many get a lane of their own.
const MAX_MANAGER_LANES: usize = 24;

/// The lane of deltas no field manager claims (a deletion, a resync, an
/// object without `managedFields`).
const NO_MANAGER: &str = "(no field manager)";

/// One lane per group an entry is in (`groups_of`), the busiest first, the
/// rest beyond `max_lanes` together in one "N other …" lane.
fn grouped_lanes<'a>(
    entries: impl Iterator<Item = &'a HistoryEntry>,
    groups_of: impl Fn(&'a HistoryEntry) -> Vec<&'a str>,
    others: &str,
    max_lanes: usize,
    column_of: &dyn Fn(Millis) -> usize,
) -> Vec<Lane> {
    let mut by_group: HashMap<&str, Lane> = HashMap::new();
    for entry in entries {
        for group in groups_of(entry) {
            by_group
                .entry(group)
                .or_insert_with(|| Lane::new(group.to_string()))
                .add(column_of(entry.at), type_index(entry.kind));
        }
    }
    let mut lanes: Vec<Lane> = by_group.into_values().collect();
    compact_sort::sort_by(&mut lanes, |a, b| {
        b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name))
    });
    if lanes.len() > max_lanes {
        let rest = lanes.split_off(max_lanes - 1);
        let mut other = Lane::new(format!("{} other {others}", rest.len()));
        for lane in &rest {
            other.absorb(lane);
        }
        lanes.push(other);
    }
    lanes
}

/// Overlapping or touching spans merged into one, in time order.
fn union_of_spans(spans: impl Iterator<Item = (Millis, Millis)>) -> Vec<(Millis, Millis)> {
    let mut spans: Vec<(Millis, Millis)> = spans.collect();
    compact_sort::sort(&mut spans);
    let mut merged: Vec<(Millis, Millis)> = Vec::with_capacity(spans.len());
    for (from, to) in spans {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    merged
}

/// How the namespace lane of cluster-scoped objects is named.
pub fn namespace_label(namespace: &str) -> &str {
    if namespace.is_empty() {
        "(cluster)"
    } else {
        namespace
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
