//! The page's UI state in one place, and every way it changes: [`AppState`]
//! and the [`Action`]s a view dispatches, applied by [`AppState::reduce`].
//! The yew app keeps it in a reducer shared through a context (`crate::ui`);
//! here it has no web dependency, so each transition is tested natively.
//! What the informers hold (stores, histories, the kept set) is not here:
//! the informers service owns that, and the views read its snapshots.

use std::rc::Rc;

use super::log_ui::{LogUi, LogUiAction};
use super::scroll::ScrollPosition;
use crate::address::route::Route;
use crate::api::cluster_identity::ServedCluster;
use crate::informer::Millis;
use crate::model::delta_select::DeltaQuery;
use crate::model::serve_history::{ServeHistories, ServeHistory};
use crate::model::table::ViewSpec;
use crate::model::timeline::{LaneMode, Viewport};

/// An object the object view shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenObject {
    /// The kept informer it is in.
    pub source: u64,
    /// Its store key.
    pub key: String,
}

/// A recording that plays instead of the live cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaying {
    /// The file's name.
    pub name: String,
    pub speed: f64,
    /// Gap lines in the file (spans a recorder did not watch: a history
    /// from serve), skipped by the replay.
    pub gaps: usize,
}

/// What a usage chart shows while the timeline follows live showing
/// everything it holds.
pub const CHART_SPAN_MS: Millis = 30 * 60_000;

/// How tall the table's scroll area is before the first scroll event says so.
const TABLE_VIEWPORT_PX: f64 = 720.0;
/// How tall the delta list's scroll area is before its first scroll event.
const DELTA_VIEWPORT_PX: f64 = 220.0;

#[derive(Debug, Clone, PartialEq)]
pub struct AppState {
    /// The table's filter and sort.
    pub spec: ViewSpec,
    /// The selected row's index (clamped to the rows when read).
    pub selected: usize,
    pub table_scroll: ScrollPosition,
    pub open_object: Option<OpenObject>,
    /// How many of the open object's newest versions its History shows
    /// (`crate::model::object_details::HISTORY_PAGE` more each time older
    /// ones are asked for; back to one page for another object).
    pub history_shown: usize,
    pub command_open: bool,
    pub help_open: bool,
    pub settings_open: bool,
    /// Time travel: the moment the table shows, or live.
    pub as_of: Option<Millis>,
    pub timeline_view: Viewport,
    pub lane_mode: LaneMode,
    /// The range dragged on the timeline.
    pub brush: Option<(Millis, Millis)>,
    pub deltas_open: bool,
    pub delta_query: DeltaQuery,
    pub delta_scroll: ScrollPosition,
    /// While a recording plays instead of the live cluster.
    pub replaying: Option<Replaying>,
    /// The speed the next imported recording plays at.
    pub replay_speed: f64,
    /// Bumped by "back to live" from a replay: the route's view opens again.
    pub live_generation: u32,
    pub import_error: Option<String>,
    /// Why the last export holds only the page's own history (serve's
    /// record could not be read); `None` once an export holds all.
    pub export_note: Option<String>,
    /// How the logs view shows its lines.
    pub log: LogUi,
    /// What deltascope serve does with each cluster's history (the status
    /// bar's item); `None`: nothing to say (no serve, or an older one).
    pub serve_history: Option<ServeHistories>,
    /// The clusters serve serves, the default first (the picker, `:ctx`);
    /// empty without serve.
    pub clusters: Rc<Vec<ServedCluster>>,
    /// Each time another cluster answered behind the name of one other
    /// than the default (its views start anew; the page says so): the
    /// names, in the order seen, a name again for each change.
    pub clusters_changed: Rc<Vec<String>>,
    /// The identity last read behind each name (kept while a cluster is
    /// down, so a change across an outage counts too).
    cluster_identities: Vec<(String, String)>,
}

impl Default for AppState {
    fn default() -> AppState {
        AppState {
            spec: ViewSpec::default(),
            selected: 0,
            table_scroll: ScrollPosition::at_top(TABLE_VIEWPORT_PX),
            open_object: None,
            history_shown: crate::model::object_details::HISTORY_PAGE,
            command_open: false,
            help_open: false,
            settings_open: false,
            as_of: None,
            timeline_view: Viewport::default(),
            lane_mode: LaneMode::default(),
            brush: None,
            deltas_open: false,
            delta_query: DeltaQuery::default(),
            delta_scroll: ScrollPosition::at_top(DELTA_VIEWPORT_PX),
            replaying: None,
            replay_speed: 10.0,
            live_generation: 0,
            import_error: None,
            export_note: None,
            log: LogUi::default(),
            serve_history: None,
            clusters: Rc::default(),
            clusters_changed: Rc::default(),
            cluster_identities: Vec::new(),
        }
    }
}

/// Everything a view may ask of the UI state.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The route's view (re)opened: back to the top, nothing selected or open.
    ViewOpened,
    TableScrolled(ScrollPosition),
    /// A click on a column title: ascending, then descending, then unsorted.
    SortBy(usize),
    /// The sorted column moved (columns came or went) or is gone.
    SortColumnMoved(Option<usize>),
    Filter(String),
    Select(usize),
    Open(Option<OpenObject>),
    ToggleCommand(bool),
    ToggleHelp,
    ToggleSettings,
    CloseSettings,
    /// Escape: closes the innermost thing open, else clears the filter.
    Back,
    TravelTo(Option<Millis>),
    TimelineView(Viewport),
    /// The History shows another page of older versions.
    ShowOlderVersions,
    LaneMode(LaneMode),
    Brush(Option<(Millis, Millis)>),
    ToggleDeltas,
    ShowDeltas,
    DeltaQuery(DeltaQuery),
    DeltaScrolled(ScrollPosition),
    ReplaySpeed(f64),
    /// A recording started playing.
    ReplayStarted(Replaying),
    BackToLive,
    ImportFailed(String),
    /// An export was downloaded; why it lacks serve's record, if it does.
    Exported(Option<String>),
    /// A kept resource was stopped: what showed it closes.
    KeptStopped {
        id: u64,
        label: Option<String>,
    },
    /// The logs view's display (`crate::app::log_ui`).
    Log(LogUiAction),
    /// What serve said about its history (`crate::app::serve_history`).
    ServeHistory(Option<ServeHistories>),
    /// What serve says of its clusters (`crate::service::served_clusters`).
    Clusters(Rc<Vec<ServedCluster>>),
}

impl AppState {
    /// serve's clusters as it lists them now: one other than the default
    /// whose identity is not the one seen before is another cluster behind
    /// the same name. (The default one's change is the browser's
    /// database's to notice: `crate::app::cluster_identity`.)
    fn clusters_seen(&mut self, clusters: Rc<Vec<ServedCluster>>) {
        let mut changed = Vec::new();
        for now in clusters.iter() {
            let Some(identity) = &now.identity else {
                continue;
            };
            let known = self
                .cluster_identities
                .iter_mut()
                .find(|(n, _)| *n == now.name);
            match known {
                Some((_, before)) if before != identity => {
                    if !now.default {
                        changed.push(now.name.clone());
                    }
                    *before = identity.clone();
                }
                Some(_) => {}
                None => self
                    .cluster_identities
                    .push((now.name.clone(), identity.clone())),
            }
        }
        if !changed.is_empty() {
            let mut all = self.clusters_changed.as_ref().clone();
            all.extend(changed);
            self.clusters_changed = Rc::new(all);
        }
        self.clusters = clusters;
    }

    /// What serve says of the history it records of `route`'s cluster.
    pub fn serve_history_for(&self, route: &Route) -> Option<&ServeHistory> {
        self.serve_history_in(route.cluster.as_deref())
    }

    /// [`AppState::serve_history_for`] by the view's cluster (`None`: the
    /// default one).
    pub fn serve_history_in(&self, cluster: Option<&str>) -> Option<&ServeHistory> {
        self.serve_history.as_ref()?.of_cluster(cluster)
    }

    pub fn reduce(mut self, action: Action) -> AppState {
        match action {
            Action::ViewOpened => {
                self.table_scroll.top = 0.0;
                self.selected = 0;
                self.open_object = None;
                self.as_of = None;
                self.replaying = None;
            }
            Action::TableScrolled(position) => self.table_scroll = position,
            Action::SortBy(column) => self.sort_by(column),
            Action::SortColumnMoved(column) => {
                self.spec.descending = column.is_some() && self.spec.descending;
                self.spec.sort_column = column;
            }
            Action::Filter(text) => {
                self.spec.filter = text;
                self.selected = 0;
            }
            Action::Select(index) => self.selected = index,
            Action::Open(object) => {
                if object.as_ref().map(|o| &o.key) != self.open_object.as_ref().map(|o| &o.key) {
                    self.history_shown = crate::model::object_details::HISTORY_PAGE;
                }
                self.open_object = object;
            }
            Action::ShowOlderVersions => {
                self.history_shown += crate::model::object_details::HISTORY_PAGE;
            }
            Action::ToggleCommand(open) => self.command_open = open,
            Action::ToggleHelp => self.help_open = !self.help_open,
            Action::ToggleSettings => self.settings_open = !self.settings_open,
            Action::CloseSettings => self.settings_open = false,
            Action::Back => self.back(),
            Action::TravelTo(at) => self.as_of = at,
            Action::TimelineView(viewport) => self.timeline_view = viewport,
            Action::LaneMode(mode) => self.lane_mode = mode,
            Action::Brush(range) => {
                self.delta_scroll.top = 0.0;
                self.brush = range;
            }
            Action::ToggleDeltas => self.deltas_open = !self.deltas_open,
            Action::ShowDeltas => self.deltas_open = true,
            Action::DeltaQuery(query) => {
                self.delta_scroll.top = 0.0;
                self.delta_query = query;
            }
            Action::DeltaScrolled(position) => self.delta_scroll = position,
            Action::ReplaySpeed(speed) => self.replay_speed = speed,
            Action::ReplayStarted(replaying) => {
                self.import_error = None;
                self.as_of = None;
                self.replaying = Some(replaying);
            }
            Action::BackToLive => self.live_generation = self.live_generation.wrapping_add(1),
            Action::ImportFailed(error) => self.import_error = Some(error),
            Action::Exported(note) => self.export_note = note,
            Action::Log(action) => self.log = self.log.clone().reduce(action),
            Action::ServeHistory(history) => self.serve_history = history,
            Action::Clusters(clusters) => self.clusters_seen(clusters),
            Action::KeptStopped { id, label } => self.kept_stopped(id, label),
        }
        self
    }

    /// A header clicked: sorted by it ascending, then descending, then not.
    fn sort_by(&mut self, column: usize) {
        let spec = &mut self.spec;
        match (spec.sort_column == Some(column), spec.descending) {
            (false, _) => (spec.sort_column, spec.descending) = (Some(column), false),
            (true, false) => spec.descending = true,
            (true, true) => (spec.sort_column, spec.descending) = (None, false),
        }
    }

    /// Escape: closes the innermost thing open, else clears the filter.
    fn back(&mut self) {
        if self.command_open {
            self.command_open = false;
        } else if self.help_open {
            self.help_open = false;
        } else if self.settings_open {
            self.settings_open = false;
        } else if self.open_object.is_some() {
            self.open_object = None;
        } else {
            self.spec.filter.clear();
        }
    }

    /// A kept informer stopped: its object closes, the delta list's filter
    /// on it goes.
    fn kept_stopped(&mut self, id: u64, label: Option<String>) {
        if self
            .open_object
            .as_ref()
            .is_some_and(|open| open.source == id)
        {
            self.open_object = None;
        }
        if label.is_some() && self.delta_query.resource == label {
            self.delta_query.resource = None;
        }
    }

    /// The range an object's usage chart shows at `now`: the brush, else
    /// the timeline's range (its live span ending now), else the last
    /// [`CHART_SPAN_MS`].
    pub fn chart_range(&self, now: Millis) -> (Millis, Millis) {
        match (self.brush, self.timeline_view) {
            (Some(range), _) => range,
            (None, Viewport::Fixed { start, end }) => (start, end),
            (None, Viewport::Live { span }) => {
                (now.saturating_sub(span.unwrap_or(CHART_SPAN_MS)), now)
            }
        }
    }

    /// The chart shows what it holds within [`Self::chart_range`]: the
    /// timeline follows live showing everything it holds, nothing chosen.
    pub fn chart_fits_its_samples(&self) -> bool {
        self.brush.is_none() && self.timeline_view == Viewport::Live { span: None }
    }

    /// The range the delta list covers: the brush, else a paused
    /// timeline's range, else everything held.
    pub fn delta_range(&self) -> (Millis, Millis) {
        match (self.brush, self.timeline_view) {
            (Some(range), _) => range,
            (None, Viewport::Fixed { start, end }) => (start, end),
            (None, Viewport::Live { .. }) => (0, Millis::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(source: u64, key: &str) -> OpenObject {
        OpenObject {
            source,
            key: key.to_string(),
        }
    }

    fn after(actions: impl IntoIterator<Item = Action>) -> AppState {
        actions
            .into_iter()
            .fold(AppState::default(), AppState::reduce)
    }

    #[test]
    fn a_column_title_cycles_ascending_descending_unsorted() {
        let state = after([Action::SortBy(2)]);
        assert_eq!(
            (state.spec.sort_column, state.spec.descending),
            (Some(2), false)
        );
        let state = state.reduce(Action::SortBy(2));
        assert_eq!(
            (state.spec.sort_column, state.spec.descending),
            (Some(2), true)
        );
        let state = state.reduce(Action::SortBy(2));
        assert_eq!(
            (state.spec.sort_column, state.spec.descending),
            (None, false)
        );
        let state = after([Action::SortBy(1), Action::SortBy(1), Action::SortBy(3)]);
        assert_eq!(
            (state.spec.sort_column, state.spec.descending),
            (Some(3), false)
        );
    }

    #[test]
    fn escape_closes_the_innermost_thing_then_clears_the_filter() {
        let mut state = after([
            Action::Filter("web".into()),
            Action::Open(Some(open(1, "default/web"))),
            Action::ToggleSettings,
            Action::ToggleHelp,
            Action::ToggleCommand(true),
        ]);
        let mut closed = Vec::new();
        for _ in 0..5 {
            state = state.reduce(Action::Back);
            closed.push((
                state.command_open,
                state.help_open,
                state.settings_open,
                state.open_object.is_some(),
                state.spec.filter.clone(),
            ));
        }
        assert_eq!(
            closed,
            [
                (false, true, true, true, "web".to_string()),
                (false, false, true, true, "web".to_string()),
                (false, false, false, true, "web".to_string()),
                (false, false, false, false, "web".to_string()),
                (false, false, false, false, String::new()),
            ]
        );
    }

    #[test]
    fn opening_a_view_starts_at_the_top_and_live() {
        let state = after([
            Action::TableScrolled(ScrollPosition {
                top: 400.0,
                height: 500.0,
            }),
            Action::Select(7),
            Action::Open(Some(open(2, "a"))),
            Action::TravelTo(Some(1_000)),
            Action::ReplayStarted(Replaying {
                name: "rec.ndjson".into(),
                speed: 10.0,
                gaps: 0,
            }),
            Action::ViewOpened,
        ]);
        assert_eq!(
            state.table_scroll,
            ScrollPosition::at_top(500.0),
            "the viewport height stays"
        );
        assert_eq!(state.selected, 0);
        assert_eq!(state.open_object, None);
        assert_eq!(state.as_of, None);
        assert_eq!(state.replaying, None);
    }

    #[test]
    fn a_new_filter_or_brush_or_query_starts_its_list_at_the_top() {
        let state = after([Action::Select(5), Action::Filter("x".into())]);
        assert_eq!(state.selected, 0);
        let scrolled = ScrollPosition {
            top: 300.0,
            height: 200.0,
        };
        let state = after([Action::DeltaScrolled(scrolled), Action::Brush(Some((1, 2)))]);
        assert_eq!(state.delta_scroll, ScrollPosition::at_top(200.0));
        assert_eq!(state.delta_range(), (1, 2));
        let state = after([
            Action::DeltaScrolled(scrolled),
            Action::DeltaQuery(DeltaQuery::default()),
        ]);
        assert_eq!(state.delta_scroll.top, 0.0);
    }

    #[test]
    fn the_delta_range_is_the_brush_else_the_paused_view_else_everything() {
        assert_eq!(AppState::default().delta_range(), (0, Millis::MAX));
        assert_eq!(
            AppState::default().chart_range(CHART_SPAN_MS + 5),
            (5, CHART_SPAN_MS + 5)
        );
        let paused = after([Action::TimelineView(Viewport::Fixed { start: 5, end: 9 })]);
        assert_eq!(paused.delta_range(), (5, 9));
        assert_eq!(paused.chart_range(100), (5, 9));
        assert_eq!(
            paused.reduce(Action::Brush(Some((6, 7)))).delta_range(),
            (6, 7)
        );
    }

    #[test]
    fn stopping_a_kept_resource_closes_what_showed_it() {
        let query = DeltaQuery {
            resource: Some("pods".into()),
            ..DeltaQuery::default()
        };
        let state = after([
            Action::Open(Some(open(3, "default/a"))),
            Action::DeltaQuery(query),
        ]);
        let other = state.clone().reduce(Action::KeptStopped {
            id: 4,
            label: Some("nodes".into()),
        });
        assert!(other.open_object.is_some());
        assert_eq!(other.delta_query.resource.as_deref(), Some("pods"));
        let stopped = state.reduce(Action::KeptStopped {
            id: 3,
            label: Some("pods".into()),
        });
        assert_eq!(stopped.open_object, None);
        assert_eq!(stopped.delta_query.resource, None);
    }

    #[test]
    fn a_sort_column_that_moved_keeps_its_direction_and_one_that_went_resets() {
        let state = after([Action::SortBy(1), Action::SortBy(1)]);
        let moved = state.clone().reduce(Action::SortColumnMoved(Some(3)));
        assert_eq!(
            (moved.spec.sort_column, moved.spec.descending),
            (Some(3), true)
        );
        let gone = state.reduce(Action::SortColumnMoved(None));
        assert_eq!((gone.spec.sort_column, gone.spec.descending), (None, false));
    }
    #[test]
    fn another_cluster_behind_a_name_is_seen_once_per_change() {
        let cluster = |name: &str, default: bool, identity: Option<&str>| ServedCluster {
            name: name.into(),
            default,
            identity: identity.map(str::to_string),
            state: "up".into(),
            error: None,
            identity_changed_from: None,
        };
        let listed = |b: Option<&str>, a: &str| {
            Action::Clusters(Rc::new(vec![
                cluster("a", true, Some(a)),
                cluster("b", false, b),
            ]))
        };
        let state = after([
            listed(None, "1"), // b not read yet
            listed(Some("2"), "1"),
            listed(Some("2"), "9"), // the default one's change is not counted here
            listed(None, "9"),      // b down: nothing read
            listed(Some("2"), "9"), // the same one back
        ]);
        assert!(
            state.clusters_changed.is_empty(),
            "{:?}",
            state.clusters_changed
        );
        let state = [
            listed(None, "9"),
            listed(Some("4"), "9"), // another one, across an outage
            listed(Some("4"), "9"),
            listed(Some("5"), "9"),
        ]
        .into_iter()
        .fold(state, AppState::reduce);
        assert_eq!(*state.clusters_changed, ["b", "b"]);
        assert_eq!(state.clusters.len(), 2);
    }

    #[test]
    fn what_serve_says_of_its_history_is_kept_until_it_says_otherwise() {
        let recording = ServeHistory::Recording {
            cluster: None,
            state: "recording 16 resources; 5 deltas stored".into(),
            resources: 16,
            deltas: 5,
            database: None,
            recorded: Vec::new(),
        };
        let staging = ServeHistory::Recording {
            cluster: Some("staging".into()),
            state: "recorder starting".into(),
            resources: 0,
            deltas: 0,
            database: None,
            recorded: Vec::new(),
        };
        let histories = ServeHistories {
            default: recording.clone(),
            others: vec![("staging".into(), staging.clone())],
        };
        let state = after([Action::ServeHistory(Some(histories.clone()))]);
        assert_eq!(state.serve_history, Some(histories));
        assert_eq!(state.serve_history_in(None), Some(&recording));
        assert_eq!(state.serve_history_in(Some("staging")), Some(&staging));
        assert_eq!(
            state.serve_history_in(Some("dev")),
            None,
            "not in serve's summary"
        );
        let state = state.reduce(Action::ViewOpened);
        assert!(state.serve_history.is_some(), "a view opening keeps it");
        assert_eq!(state.reduce(Action::ServeHistory(None)).serve_history, None);
    }

    #[test]
    fn an_import_that_plays_clears_the_last_error_and_keeps_its_gaps() {
        let state = after([
            Action::ImportFailed("bad.ndjson: line 2 …".into()),
            Action::TravelTo(Some(5)),
            Action::ReplayStarted(Replaying {
                name: "history.ndjson".into(),
                speed: 100.0,
                gaps: 2,
            }),
        ]);
        assert_eq!(state.import_error, None);
        assert_eq!(state.as_of, None);
        assert_eq!(state.replaying.map(|r| r.gaps), Some(2));
    }

    #[test]
    fn the_history_shows_a_page_more_when_asked_and_one_page_for_another_object() {
        use crate::model::object_details::HISTORY_PAGE;
        let open = |key: &str| {
            Action::Open(Some(OpenObject {
                source: 1,
                key: key.into(),
            }))
        };
        let state = after([
            open("a/b"),
            Action::ShowOlderVersions,
            Action::ShowOlderVersions,
        ]);
        assert_eq!(state.history_shown, 3 * HISTORY_PAGE);
        let same = after([open("a/b"), Action::ShowOlderVersions, open("a/b")]);
        assert_eq!(same.history_shown, 2 * HISTORY_PAGE);
        let other = after([open("a/b"), Action::ShowOlderVersions, open("a/c")]);
        assert_eq!(other.history_shown, HISTORY_PAGE);
    }
}
