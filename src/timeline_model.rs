//! The timeline's model, with no web dependency so it is tested natively:
//! the visible time range (live-follow, zoom, pan), the lanes (one for the
//! resource, one per namespace, or one per delta type) bucketed into pixel
//! columns so 100,000 marks cost one pass, and the delta list — the deltas
//! of a time range that pass the user's filters, newest first.

use std::collections::HashMap;

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
    /// One lane: the resource the page is showing (the page runs one informer at a time).
    #[default]
    Resource,
    /// One lane per namespace (the busiest first, the rest in "other").
    Namespace,
    /// One lane per delta type.
    Type,
}

impl LaneMode {
    pub const ALL: [LaneMode; 3] = [LaneMode::Resource, LaneMode::Namespace, LaneMode::Type];

    pub fn as_str(self) -> &'static str {
        match self {
            LaneMode::Resource => "resource",
            LaneMode::Namespace => "namespace",
            LaneMode::Type => "type",
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
}

impl Lane {
    fn new(name: String) -> Lane {
        Lane {
            name,
            columns: vec![[0; 5]; COLUMNS],
            count: 0,
        }
    }

    fn add(&mut self, column: usize, kind: usize) {
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
    /// Spans when the page was not watching (it was blind then).
    pub gaps: Vec<(Millis, Millis)>,
    /// Moments the informer relisted.
    pub relists: Vec<Millis>,
    /// Deltas held by the history (all of them, not only the visible ones).
    pub total: u64,
    /// Deltas within `[start, end)`.
    pub in_view: u64,
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
    /// Buckets the held deltas within `input.range` into lanes × columns.
    pub fn build(history: &History, input: TimelineInput<'_>) -> TimelineData {
        let (start, end) = (input.range.0, input.range.1.max(input.range.0 + 1));
        let span = (end - start) as f64;
        let column_of = |at: Millis| {
            let x = ((at.saturating_sub(start)) as f64 / span * COLUMNS as f64) as usize;
            x.min(COLUMNS - 1)
        };
        let entries = history.range(start, end);
        let lanes = match input.mode {
            LaneMode::Resource => {
                let mut lane = Lane::new(input.resource.to_string());
                for entry in entries {
                    lane.add(column_of(entry.at), type_index(entry.kind));
                }
                vec![lane]
            }
            LaneMode::Type => {
                let mut lanes: Vec<Lane> = DELTA_TYPES
                    .iter()
                    .map(|k| Lane::new(format!("{k:?}")))
                    .collect();
                for entry in entries {
                    let kind = type_index(entry.kind);
                    lanes[kind].add(column_of(entry.at), kind);
                }
                lanes.reverse(); // Deleted on top, as in a stacked bar
                lanes
            }
            LaneMode::Namespace => {
                let mut by_namespace: HashMap<&str, Lane> = HashMap::new();
                for entry in entries {
                    let namespace = namespace_of(entry.key());
                    by_namespace
                        .entry(namespace)
                        .or_insert_with(|| Lane::new(namespace_label(namespace).to_string()))
                        .add(column_of(entry.at), type_index(entry.kind));
                }
                let mut lanes: Vec<Lane> = by_namespace.into_values().collect();
                lanes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
                if lanes.len() > MAX_LANES {
                    let rest = lanes.split_off(MAX_LANES - 1);
                    let mut other = Lane::new(format!("{} other namespaces", rest.len()));
                    for lane in &rest {
                        other.absorb(lane);
                    }
                    lanes.push(other);
                }
                if lanes.is_empty() {
                    lanes.push(Lane::new(input.resource.to_string()));
                }
                lanes
            }
        };
        let in_view = lanes.iter().map(|l| l.count).sum();
        TimelineData {
            start,
            end,
            mode: input.mode,
            lanes,
            gaps: input.gaps.to_vec(),
            relists: input.relists.to_vec(),
            total: history.len() as u64,
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

/// How the namespace lane of cluster-scoped objects is named.
pub fn namespace_label(namespace: &str) -> &str {
    if namespace.is_empty() {
        "(cluster)"
    } else {
        namespace
    }
}

/// The delta list's filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaQuery {
    /// Time range `[from, to)`.
    pub from: Millis,
    pub to: Millis,
    /// Exact namespace (`""` = cluster-scoped), or any.
    pub namespace: Option<String>,
    /// Case-insensitive substring of the key.
    pub text: String,
    /// Which delta types pass, indexed like [`DELTA_TYPES`].
    pub types: [bool; 5],
}

impl Default for DeltaQuery {
    fn default() -> Self {
        DeltaQuery {
            from: 0,
            to: Millis::MAX,
            namespace: None,
            text: String::new(),
            types: [true; 5],
        }
    }
}

impl DeltaQuery {
    pub fn matches(&self, entry: &HistoryEntry) -> bool {
        self.types[type_index(entry.kind)]
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| namespace_of(entry.key()) == ns)
            && (self.text.is_empty() || contains_ignoring_case(entry.key(), &self.text))
    }
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    if haystack.is_ascii() && needle.is_ascii() {
        haystack
            .as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    } else {
        haystack.to_lowercase().contains(&needle.to_lowercase())
    }
}

/// The sequence numbers of the held deltas matching `query`, newest first.
pub fn select_deltas(history: &History, query: &DeltaQuery) -> Vec<u64> {
    history
        .range(query.from, query.to)
        .rev()
        .filter(|e| query.matches(e))
        .map(|e| e.seq)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{HistoryConfig, KubeObject};
    use serde_json::json;
    use std::sync::Arc;

    fn history(entries: &[(Millis, DeltaType, &str)]) -> History {
        let mut history = History::new(HistoryConfig::default());
        for (i, (at, kind, key)) in entries.iter().enumerate() {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            let mut meta = json!({"name": name, "resourceVersion": (i + 1).to_string()});
            if !namespace.is_empty() {
                meta["namespace"] = json!(namespace);
            }
            let object = KubeObject::from_value(json!({"metadata": meta})).expect("object");
            history.record(*at, *kind, Arc::new(object), false, key);
        }
        history
    }

    fn input(range: (Millis, Millis), mode: LaneMode) -> TimelineInput<'static> {
        TimelineInput {
            gaps: &[],
            relists: &[],
            range,
            mode,
            resource: "pods",
        }
    }

    #[test]
    fn live_follow_tracks_now_and_pauses_when_the_user_looks_back() {
        let live = Viewport::default();
        assert_eq!(live.resolve(Some(1_000), 10_000), (1_000, 10_000));
        assert_eq!(live.resolve(None, 10_000), (10_000, 11_000));
        // Zooming in around the middle ends before now: paused.
        let zoomed = Viewport::zoomed((0, 10_000), 0.5, 0.5, 10_000);
        assert_eq!(
            zoomed,
            Viewport::Fixed {
                start: 2_500,
                end: 7_500
            }
        );
        assert!(!zoomed.is_live());
        // Zooming in at the right edge keeps following, with the new span.
        let at_edge = Viewport::zoomed((0, 10_000), 0.5, 1.0, 10_000);
        assert_eq!(at_edge, Viewport::Live { span: Some(5_000) });
        assert_eq!(at_edge.resolve(Some(0), 20_000), (15_000, 20_000));
        // Panning back pauses; panning forward to now resumes.
        let back = Viewport::panned((5_000, 10_000), -0.4, 10_000);
        assert_eq!(
            back,
            Viewport::Fixed {
                start: 3_000,
                end: 8_000
            }
        );
        let forward = Viewport::panned((3_000, 8_000), 2.0, 10_000);
        assert_eq!(forward, Viewport::Live { span: Some(5_000) });
        // Never before time zero, never narrower than the minimum span.
        assert_eq!(
            Viewport::panned((1_000, 2_000), -5.0, 10_000),
            Viewport::Fixed {
                start: 0,
                end: 1_000
            }
        );
        let tiny = Viewport::zoomed((1_000, 1_100), 0.001, 0.0, 10_000);
        assert_eq!(
            tiny,
            Viewport::Fixed {
                start: 1_000,
                end: 1_000 + MIN_SPAN_MS
            }
        );
    }

    #[test]
    fn lanes_split_by_namespace_and_type_and_count_only_the_range() {
        let h = history(&[
            (0, DeltaType::Replaced, "a/p1"),
            (0, DeltaType::Replaced, "b/p2"),
            (500, DeltaType::Updated, "a/p1"),
            (999, DeltaType::Deleted, "b/p2"),
            (1_000, DeltaType::Added, "node-1"),
        ]);
        let one = TimelineData::build(&h, input((0, 1_000), LaneMode::Resource));
        assert_eq!(one.lanes.len(), 1);
        assert_eq!(one.in_view, 4, "the delta at 1000 is outside [0, 1000)");
        assert_eq!(one.total, 5);
        assert_eq!(one.lanes[0].columns[0][type_index(DeltaType::Replaced)], 2);
        assert_eq!(one.lanes[0].columns[300][type_index(DeltaType::Updated)], 1);
        assert_eq!(
            one.lanes[0].columns[COLUMNS - 1][type_index(DeltaType::Deleted)],
            1
        );

        let by_ns = TimelineData::build(&h, input((0, 2_000), LaneMode::Namespace));
        let names: Vec<(&str, u64)> = by_ns
            .lanes
            .iter()
            .map(|l| (l.name.as_str(), l.count))
            .collect();
        assert_eq!(names, [("a", 2), ("b", 2), ("(cluster)", 1)]);

        let by_type = TimelineData::build(&h, input((0, 2_000), LaneMode::Type));
        let counts: Vec<(&str, u64)> = by_type
            .lanes
            .iter()
            .map(|l| (l.name.as_str(), l.count))
            .collect();
        assert_eq!(
            counts,
            [
                ("Deleted", 1),
                ("Updated", 1),
                ("Added", 1),
                ("Sync", 0),
                ("Replaced", 2)
            ]
        );
    }

    #[test]
    fn many_namespaces_share_an_other_lane() {
        let keys: Vec<String> = (0..12).map(|i| format!("ns{i:02}/p")).collect();
        let entries: Vec<(Millis, DeltaType, &str)> = keys
            .iter()
            .enumerate()
            .flat_map(|(i, k)| {
                std::iter::repeat_n((i as Millis, DeltaType::Updated, k.as_str()), 12 - i)
            })
            .collect();
        let h = history(&entries);
        let data = TimelineData::build(&h, input((0, 100), LaneMode::Namespace));
        assert_eq!(data.lanes.len(), MAX_LANES);
        assert_eq!(data.lanes[0].name, "ns00");
        assert_eq!(data.lanes[MAX_LANES - 1].name, "5 other namespaces");
        assert_eq!(data.lanes[MAX_LANES - 1].count, 5 + 4 + 3 + 2 + 1);
        assert_eq!(data.in_view, h.len() as u64);
    }

    #[test]
    fn the_delta_list_filters_and_is_newest_first() {
        let h = history(&[
            (10, DeltaType::Added, "shop/web-1"),
            (20, DeltaType::Added, "data/db-1"),
            (30, DeltaType::Updated, "shop/web-1"),
            (40, DeltaType::Deleted, "shop/WEB-2"),
            (50, DeltaType::Updated, "data/db-1"),
        ]);
        let all = select_deltas(&h, &DeltaQuery::default());
        assert_eq!(all, [4, 3, 2, 1, 0]);
        let range = DeltaQuery {
            from: 20,
            to: 50,
            ..DeltaQuery::default()
        };
        assert_eq!(select_deltas(&h, &range), [3, 2, 1]);
        let shop = DeltaQuery {
            namespace: Some("shop".into()),
            ..DeltaQuery::default()
        };
        assert_eq!(select_deltas(&h, &shop), [3, 2, 0]);
        let text = DeltaQuery {
            text: "web".into(),
            ..DeltaQuery::default()
        };
        assert_eq!(select_deltas(&h, &text), [3, 2, 0], "case-insensitive");
        let mut types = [false; 5];
        types[type_index(DeltaType::Updated)] = true;
        let updates = DeltaQuery {
            types,
            ..DeltaQuery::default()
        };
        assert_eq!(select_deltas(&h, &updates), [4, 2]);
    }

    #[test]
    fn lane_modes_round_trip_through_their_names() {
        for mode in LaneMode::ALL {
            assert_eq!(LaneMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(LaneMode::parse("kind"), None);
    }
}
