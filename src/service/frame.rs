//! The snapshot a frame renders from: the informers service applies the
//! shown informer's changes (`LiveView::refresh`), then reads everything the
//! views show — the table's rows in the scroll window, the status, the
//! errors in plain words, the timeline, the delta list's rows, the kept
//! resources — into one [`Frame`] of plain data. Views read the frame; they
//! never see an informer.

use std::rc::Rc;

use yew::Properties;

use super::kept_informers::KeptInformers;
use super::resource_view::LiveView;
use super::Informers;
use crate::address::route::Route;
use crate::app::state::AppState;
use crate::informer::{HistoryConfig, Millis};
use crate::model::connection::{channel_words, transport_words, ChannelWords, OwnConnections};
use crate::model::delta_list::DeltaRow;
use crate::model::delta_select::DeltaQuery;
use crate::model::kept_summary::{kept_state, KeptItem, Usage};
use crate::model::past::PastSource;
use crate::model::plain_error::PlainError;
use crate::model::status_line::{view_words, LineInput, Stored, ViewInput, ViewWords};
use crate::model::table::{RowData, RowMarks, SortOrder};
use crate::model::timeline::TimelineData;
use crate::model::top::MetricsNote;
use crate::transport::{budget, channel};

/// What a frame needs besides the state: the route, the scroll windows'
/// sizes and the clocks.
pub struct FrameInput<'a> {
    pub route: &'a Route,
    pub state: &'a AppState,
    /// Rows of the table to build: from `first`, at most `count`.
    pub rows: (usize, usize),
    /// Rows of the delta list to build, likewise.
    pub delta_rows: (usize, usize),
    /// Seconds since the Unix epoch (for ages).
    pub now_unix: i64,
}

/// The store as it was at a moment (time travel), in numbers.
#[derive(Clone, PartialEq)]
pub struct PastSummary {
    pub at: Millis,
    pub count: usize,
    /// False when retention evicted deltas, so objects may be missing.
    pub complete: bool,
    /// The page's own history, serve's record, or nothing known.
    pub source: PastSource,
}

/// What the page says about serve's record of the moment travelled to:
/// `[data-testid=time-travel-record]`'s `data-state` and its words.
#[derive(Clone, PartialEq)]
pub struct RecordWords {
    pub state: &'static str,
    pub text: String,
}

/// Everything the views show this frame.
pub struct Frame {
    /// The table rows in the window, from row `first` of `total`.
    pub rows: Vec<RowData>,
    pub first: usize,
    pub total: usize,
    /// The selected row, clamped to the rows, and its key.
    pub selected: usize,
    pub selected_key: Option<String>,
    pub titles: Rc<Vec<String>>,
    /// The sort the rows are in.
    pub sort: SortOrder,
    /// The wide view would show more columns: whether it is on.
    pub wide_toggle: Option<bool>,
    /// The columns are the server's (it prints Tables).
    pub server_columns: bool,
    /// What the page says of the metrics API (`kubectl top`'s columns),
    /// for a pods or nodes table.
    pub metrics: Option<MetricsNote>,
    pub status: ViewStatus,
    pub unauthorized: bool,
    /// The first list's progress while it runs.
    pub listing: Option<String>,
    pub empty_text: &'static str,
    pub plain: Option<PlainError>,
    pub can_retry: bool,
    /// Still changing (digest, order, a flash, a fading row): render again soon.
    pub still_changing: bool,
    pub timeline: Rc<TimelineData>,
    pub past: Option<PastSummary>,
    /// While travelling: what serve's record says of the moment, if anything.
    pub record: Option<RecordWords>,
    /// The delta list's rows in its window (when it is open), from `delta_first` of `delta_total`.
    pub delta_rows: Vec<DeltaRow>,
    pub delta_first: usize,
    pub delta_total: usize,
    /// The list's reach into serve's record (`data-recorded`) and why it
    /// failed, if it did; `None` when nothing was asked.
    pub delta_recorded: Option<(&'static str, Option<String>)>,
    /// The lane names the timeline and the delta list cover.
    pub sources: Vec<String>,
    /// The clusters they are of (`""`: the default one), each once.
    pub source_clusters: Vec<String>,
    pub kept_items: Vec<KeptItem>,
    /// Filled only while the settings are open.
    pub usage: Vec<Usage>,
    /// What is stored in the browser's database (while the settings are open).
    pub stored: Option<Rc<super::StoredSummary>>,
    /// "the cluster behind NAME changed …", when the page started anew on
    /// another cluster (`[data-testid=cluster-changed]`).
    pub cluster_changed: Option<String>,
    pub capacity: usize,
    pub kept_count: usize,
    pub retention: HistoryConfig,
    /// The informer on screen (its id among the kept ones).
    pub shown_source: u64,
    /// How the watches travel, in words, for the settings.
    pub transport_words: String,
    /// The page's monotonic clock when the frame was read.
    pub now: Millis,
}

#[derive(Properties, PartialEq, Clone)]
pub struct ViewStatus {
    /// serve's name of the view's cluster, `""` for the default one
    /// (`data-cluster`).
    pub cluster: String,
    pub resource: String,
    pub count: usize,
    /// Synced at least once (`data-synced`, which the browser tests read).
    pub synced: bool,
    /// Showing a store restored from the browser's database whose watch
    /// has not caught up (`data-warm`).
    pub warm: bool,
    /// `data-state`, which the browser tests read: listing / watching /
    /// backoff / error.
    pub state: String,
    /// The state in one word, shown in bold.
    pub label: &'static str,
    /// How fresh the table is, in words.
    pub freshness: String,
    pub detail: String,
    pub digest: String,
    pub deltas: u64,
    pub dropped: u64,
    /// Deltas held now (recorded minus evicted).
    pub held: usize,
    pub events: u64,
    pub relists: u32,
    /// How the watches travel: `[data-testid=channel-state]`'s `data-state`
    /// (idle / connecting / open / broken / unavailable) and its words.
    pub channel: ChannelWords,
}

/// `HH:MM:SS` in the browser's time zone.
pub fn clock_time(unix_ms: f64) -> String {
    let date = js_sys::Date::new(&unix_ms.into());
    format!(
        "{:02}:{:02}:{:02}",
        date.get_hours(),
        date.get_minutes(),
        date.get_seconds()
    )
}

impl Informers {
    /// Applies what changed since the last frame and reads the snapshot;
    /// `None` before a view was opened.
    pub fn frame(&self, input: &FrameInput<'_>) -> Option<Frame> {
        let FrameInput {
            route,
            state,
            now_unix,
            ..
        } = *input;
        // The page's monotonic clock, as the informers' histories use.
        let now_ms = crate::transport::now() as f64;
        let mut view = self.view.borrow_mut();
        let live = view.as_mut()?;
        live.set_wide(route.wide);
        live.set_spec(state.spec.clone());
        live.set_timeline_view(state.timeline_view, state.lane_mode);
        live.travel(state.as_of, state.serve_history.as_ref(), route);
        let still_changing = live.refresh(now_ms, now_unix, &mut self.kept.borrow_mut());
        let kept = self.kept.borrow();
        let now = crate::transport::now();

        let table = table_window(live, state.selected, input.rows, now_unix);
        // The delta list covers the brush, else a paused view's range, else everything held.
        let deltas = if state.deltas_open {
            delta_window(live, &kept, state, input.delta_rows, now)
        } else {
            DeltaWindow::default()
        };
        // The CRD watch behind discovery holds streams too; they are not the views'.
        let background_streams = self.background_streams();
        let (status, words) = shown_status(live, &kept, input, background_streams, now);
        let settings_open = state.settings_open;
        Some(Frame {
            rows: table.rows,
            first: table.first,
            total: table.total,
            selected: table.selected,
            selected_key: table.selected_key,
            titles: titles(live),
            sort: live.spec().sort_order(),
            wide_toggle: live.has_wide_columns().then_some(route.wide),
            server_columns: live.server_columns(),
            metrics: live.metrics_note(),
            status,
            unauthorized: words.unauthorized,
            listing: words.listing,
            empty_text: words.empty_text,
            plain: words.plain,
            can_retry: words.can_retry,
            still_changing,
            timeline: live.timeline(),
            past: past_summary(live),
            record: record_words(live, route),
            delta_rows: deltas.rows,
            delta_first: deltas.first,
            delta_total: deltas.total,
            delta_recorded: deltas.recorded,
            sources: live
                .source_labels(&kept)
                .into_iter()
                .map(|(_, label)| label)
                .collect(),
            source_clusters: live.source_clusters(&kept),
            kept_items: kept_items(&kept, live.source_id),
            usage: if settings_open {
                usage(&kept)
            } else {
                Vec::new()
            },
            stored: settings_open.then(|| Rc::new(self.stores.summary(&kept))),
            cluster_changed: self.stores.cluster_changed(),
            capacity: kept.capacity(),
            kept_count: kept.len(),
            retention: kept.retention().clone(),
            shown_source: live.source_id,
            transport_words: transport_words(&channel::status(), budget::OWN_CONNECTION_WATCHES),
            now,
        })
    }
}

/// The table's column titles.
fn titles(live: &LiveView) -> Rc<Vec<String>> {
    Rc::new(
        live.table_columns()
            .iter()
            .map(|c| c.title.to_string())
            .collect(),
    )
}

/// The moment travelled to, in numbers (none while live).
fn past_summary(live: &LiveView) -> Option<PastSummary> {
    live.past().map(|past| PastSummary {
        at: past.at,
        count: past.keys.len(),
        complete: past.complete,
        source: past.source.clone(),
    })
}

/// What serve's record says of the moment travelled to, if anything.
fn record_words(live: &LiveView, route: &Route) -> Option<RecordWords> {
    live.record_note().map(|note| RecordWords {
        state: note.state(),
        text: note.words(&route.stats_name(), &super::wall_clock()),
    })
}

/// The table's rows in its scroll window, and the selection.
struct TableWindow {
    rows: Vec<RowData>,
    first: usize,
    total: usize,
    /// The selected row, clamped to the rows, and its key.
    selected: usize,
    selected_key: Option<String>,
}

/// The rows `first..first + count` of the view's table (the past's while
/// travelling in time, else the store's with the deleted rows still
/// fading), `selected` clamped to them.
fn table_window(
    live: &LiveView,
    selected: usize,
    (first, count): (usize, usize),
    now_unix: i64,
) -> TableWindow {
    let past = live.past();
    let total = past.map_or_else(|| live.row_count(), |p| p.keys.len());
    let selected = selected.min(total.saturating_sub(1));
    let selected_key = live.key_at(selected).map(|key| key.to_string());
    let first = first.min(total);
    let keys = match past {
        Some(past) => past.keys.window(first, count),
        None => live.window(first, count),
    };
    let informer = live.driver.informer();
    let store = informer.store();
    let rows = keys
        .iter()
        .filter_map(|key| match past {
            Some(past) => past.objects.get(&**key).map(|o| (o, None)),
            // A key the store no longer has is a deleted row fading out.
            None => store
                .get_by_key(key)
                .map(|o| (o, None))
                .or_else(|| live.fading(key).map(|(o, at)| (o, Some(at)))),
        })
        .map(|(object, deleted_at)| {
            let marks = RowMarks {
                selected: selected_key.as_deref() == Some(object.key.as_str()),
                flashing_since: live.flashing_since(&object.key),
                deleted_at,
            };
            RowData::of(object, live.table_columns(), now_unix, marks)
        })
        .collect();
    TableWindow {
        rows,
        first,
        total,
        selected,
        selected_key,
    }
}

/// The delta list's rows in its scroll window.
#[derive(Default)]
struct DeltaWindow {
    rows: Vec<DeltaRow>,
    first: usize,
    total: usize,
    /// serve's record of the range: being read, read, or why not.
    recorded: Option<(&'static str, Option<String>)>,
}

/// The rows `first..first + count` of the deltas the list's query and
/// range select across the tracked histories.
fn delta_window(
    live: &mut LiveView,
    kept: &KeptInformers,
    state: &AppState,
    (first, count): (usize, usize),
    now: Millis,
) -> DeltaWindow {
    let (from, to) = state.delta_range();
    let query = DeltaQuery {
        from,
        to,
        ..state.delta_query.clone()
    };
    live.reach_deltas((from, to), kept, now);
    let held = live.deltas(&query, kept);
    let labels = live.source_labels(kept);
    let first = first.min(held.len());
    let rows = held[first..(first + count).min(held.len())]
        .iter()
        .filter_map(|held| {
            let resource = labels
                .iter()
                .find(|(id, _)| *id == held.source)
                .map(|(_, label)| label.clone())
                .unwrap_or_default();
            if held.recorded {
                return live.recorded_row(held.source, held.seq as usize, resource, now);
            }
            let driver = live.driver_for(held.source, kept)?;
            let informer = driver.informer();
            let entry = informer.history().get(held.seq)?;
            Some(DeltaRow::of(held.source, resource, entry, now))
        })
        .collect();
    DeltaWindow {
        rows,
        first,
        total: held.len(),
        recorded: live.recorded_deltas_state(),
    }
}

/// The status bar of the view on screen, and what the page says around
/// its table.
fn shown_status(
    live: &LiveView,
    kept: &KeptInformers,
    input: &FrameInput<'_>,
    background_streams: usize,
    now: Millis,
) -> (ViewStatus, ViewWords) {
    let route = input.route;
    // When the shown informer stopped watching after having synced, by the clock.
    let blind_since = kept
        .get(live.source_id)
        .and_then(|source| source.spans.blind_since())
        .map(|since| clock_time(js_sys::Date::now() - now.saturating_sub(since) as f64));
    let informer = live.driver.informer();
    let status = informer.status();
    let synced = informer.has_synced();
    let restoring = live.driver.is_waiting();
    let warm_as_of = informer.warm_as_of().map(|at| clock_time(at as f64));
    let faces_as_of = informer.faces_as_of().map(|at| clock_time(at as f64));
    let resource = route.stats_name();
    let words = view_words(&ViewInput {
        line: LineInput {
            phase: &status.phase,
            synced,
            replaying: input.state.replaying.is_some(),
            blind_since: blind_since.as_deref(),
            now,
            last_error: status.last_error.as_ref(),
            stored: Stored::of(restoring, warm_as_of.as_deref(), faces_as_of.as_deref()),
        },
        resource: &resource,
        namespace: route.namespace.as_deref(),
        namespaced: live.namespaced(),
    });
    let (running, paused) = budget::watches_in_use();
    let history = informer.history();
    let view_status = ViewStatus {
        cluster: route.cluster.clone().unwrap_or_default(),
        resource,
        count: informer.store().len(),
        synced,
        warm: restoring || warm_as_of.is_some(),
        state: status.phase.as_str().to_string(),
        label: words.line.label,
        freshness: words.line.freshness.clone(),
        detail: words.line.detail.clone(),
        digest: live.shown_digest().to_string(),
        deltas: history.recorded(),
        dropped: history.dropped(),
        held: history.len(),
        events: status.events,
        relists: status.relists,
        channel: channel_words(
            &channel::status(),
            channel::open_streams().saturating_sub(background_streams),
            OwnConnections { running, paused },
            clock_time,
        ),
    };
    (view_status, words)
}

/// The kept resources' chips, `shown` the one on screen.
fn kept_items(kept: &KeptInformers, shown: u64) -> Vec<KeptItem> {
    kept.by_age()
        .into_iter()
        .map(|(id, source)| {
            let informer = source.driver.informer();
            KeptItem {
                id,
                label: source.label.clone(),
                href: source.route.to_string(),
                state: kept_state(source.driver.is_paused(), &informer.status().phase),
                held: informer.history().len(),
                shown: id == shown,
            }
        })
        .collect()
}

/// What each kept resource's history holds, for the settings.
fn usage(kept: &KeptInformers) -> Vec<Usage> {
    kept.by_age()
        .into_iter()
        .map(|(_, source)| Usage::of(&source.label, source.driver.informer().history()))
        .collect()
}
