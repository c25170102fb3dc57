//! The snapshot a frame renders from: the informers service applies the
//! shown informer's changes (`LiveView::refresh`), then reads everything the
//! views show — the table's rows in the scroll window, the status, the
//! errors in plain words, the timeline, the delta list's rows, the kept
//! resources — into one [`Frame`] of plain data. Views read the frame; they
//! never see an informer.

use std::rc::Rc;

use yew::Properties;

use super::Informers;
use crate::app::route::Route;
use crate::app::state::AppState;
use crate::informer::{HistoryConfig, Millis, Phase};
use crate::model::kept_summary::{KeptItem, Usage};
use crate::model::plain_error::PlainError;
use crate::model::status_line::Stored;
use crate::model::table::RowData;
use crate::model::timeline::{delta_age, DeltaQuery, DeltaRow, TimelineData};
use crate::transport::channel::ChannelStatus;

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
    /// Streams the CRD watch behind discovery holds (not the views').
    pub background_streams: usize,
}

/// The store as it was at a moment (time travel), in numbers.
#[derive(Clone, PartialEq)]
pub struct PastSummary {
    pub at: Millis,
    pub count: usize,
    /// False when retention evicted deltas, so objects may be missing.
    pub complete: bool,
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
    /// (column, descending) of the sort the rows are in.
    pub sort: (Option<usize>, bool),
    /// The wide view would show more columns: whether it is on.
    pub wide_toggle: Option<bool>,
    /// The columns are the server's (it prints Tables).
    pub server_columns: bool,
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
    /// The delta list's rows in its window (when it is open), from `delta_first` of `delta_total`.
    pub delta_rows: Vec<DeltaRow>,
    pub delta_first: usize,
    pub delta_total: usize,
    /// The lane names the timeline and the delta list cover.
    pub sources: Vec<String>,
    pub kept_items: Vec<KeptItem>,
    /// Filled only while the settings are open.
    pub usage: Vec<Usage>,
    /// What is stored in the browser's database (while the settings are open).
    pub stored: Option<Rc<super::StoredSummary>>,
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
    pub resource: String,
    pub count: usize,
    /// Synced at least once (DESIGN §4 `data-synced`).
    pub synced: bool,
    /// Showing a store restored from the browser's database whose watch
    /// has not caught up (`data-warm`).
    pub warm: bool,
    /// DESIGN §4 `data-state`: listing / watching / backoff / error.
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
    pub channel: (&'static str, String),
}

/// The channel's state in plain words, with the connection budget when
/// there is no channel (`watches`: on their own connections, paused).
pub fn channel_words(
    status: &crate::transport::channel::ChannelStatus,
    streams: usize,
    watches: (usize, usize),
) -> (&'static str, String) {
    use crate::transport::channel::ChannelStatus;
    match status {
        ChannelStatus::Idle => ("idle", String::new()),
        ChannelStatus::Connecting => (
            "connecting",
            "connecting the channel to deltascope serve…".into(),
        ),
        ChannelStatus::Open => (
            "open",
            format!(
                "{streams} watch{} on one channel",
                if streams == 1 { "" } else { "es" }
            ),
        ),
        ChannelStatus::Broken {
            since_unix_ms,
            reason,
        } => (
            "broken",
            format!(
                "channel to deltascope serve broken since {}: {reason} — reconnecting",
                clock_time(*since_unix_ms)
            ),
        ),
        ChannelStatus::Unavailable { reason } => (
            "unavailable",
            format!(
                "no channel ({reason}): {} watches on connections of their own, {} paused by the \
                 browser's connection limit",
                watches.0, watches.1
            ),
        ),
    }
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
        if live.past_is_stale(state.as_of) {
            live.set_past(state.as_of);
        }
        let still_changing = live.refresh(now_ms, now_unix, &mut self.kept.borrow_mut());
        let kept = self.kept.borrow();

        let total = live
            .past()
            .map_or_else(|| live.row_count(), |p| p.keys.len());
        let selected = state.selected.min(total.saturating_sub(1));
        let selected_key = live.key_at(selected).map(|key| key.to_string());
        let first = input.rows.0.min(total);
        let count = input.rows.1;
        let timeline_now = crate::transport::now();

        // The delta list covers the brush, else a paused view's range, else everything held.
        let (delta_rows, delta_first, delta_total) = if state.deltas_open {
            let (from, to) = state.delta_range();
            let seqs = live.deltas(
                &DeltaQuery {
                    from,
                    to,
                    ..state.delta_query.clone()
                },
                &kept,
            );
            let labels = live.source_labels(&kept);
            let first = input.delta_rows.0.min(seqs.len());
            let rows = seqs[first..(first + input.delta_rows.1).min(seqs.len())]
                .iter()
                .filter_map(|(source, seq)| {
                    let driver = live.driver_for(*source, &kept)?;
                    let informer = driver.informer();
                    let entry = informer.history().get(*seq)?;
                    let resource = labels
                        .iter()
                        .find(|(id, _)| id == source)
                        .map(|(_, label)| label.clone())
                        .unwrap_or_default();
                    Some(DeltaRow {
                        source: *source,
                        resource,
                        seq: entry.seq,
                        when: delta_age(timeline_now, entry.at),
                        kind: format!("{:?}", entry.kind),
                        key: entry.key().to_string(),
                        resource_version: entry.resource_version().to_string(),
                        tombstone: entry.tombstone,
                        managers: entry.writers.join(","),
                    })
                })
                .collect();
            (rows, first, seqs.len())
        } else {
            (Vec::new(), 0, 0)
        };
        let sources = live
            .source_labels(&kept)
            .into_iter()
            .map(|(_, label)| label)
            .collect();

        // When the shown informer stopped watching after having synced, by the clock.
        let blind_since = kept
            .get(live.source_id)
            .and_then(|source| source.spans.blind_since())
            .map(|since| {
                let ago = crate::transport::now().saturating_sub(since) as f64;
                clock_time(js_sys::Date::now() - ago)
            });
        let informer = live.driver.informer();
        let store = informer.store();
        let past = live.past();
        let keys = match past {
            Some(past) => past.keys.window(first, count),
            None => live.window(first, count),
        };
        let rows: Vec<RowData> = keys
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
                let flashing_since = live.flashing_since(&object.key);
                RowData {
                    key: object.key.clone(),
                    resource_version: object.resource_version.clone(),
                    cells: live
                        .columns
                        .iter()
                        .map(|c| c.cell(object, now_unix))
                        .collect(),
                    flash: flashing_since.is_some(),
                    selected: selected_key.as_deref() == Some(object.key.as_str()),
                    deleted: deleted_at.is_some(),
                    animation_since: deleted_at.or(flashing_since),
                }
            })
            .collect();
        let status = informer.status();
        let synced = informer.has_synced();
        let replaying = state.replaying.is_some();
        let restoring = live.driver.is_waiting();
        let warm_as_of = informer.warm_as_of().map(|at| clock_time(at as f64));
        let warm = restoring || warm_as_of.is_some();
        let faces_as_of = informer.faces_as_of().map(|at| clock_time(at as f64));
        let stored = match (&warm_as_of, restoring) {
            (_, true) => Stored::Restoring(faces_as_of.as_deref()),
            (Some(as_of), false) => Stored::Warm(as_of),
            (None, false) => Stored::No,
        };
        let line = crate::model::status_line::status_line(&crate::model::status_line::LineInput {
            phase: &status.phase,
            synced,
            replaying,
            blind_since: blind_since.as_deref(),
            now: crate::transport::now(),
            last_error: status.last_error.as_ref(),
            stored,
        });
        let listing = match &status.phase {
            Phase::Listing { .. } if !synced => Some(line.detail.clone()),
            _ => None,
        };
        let failing = status.phase.is_failing();
        let unauthorized =
            failing && status.last_error.as_ref().and_then(|e| e.status()) == Some(401);
        let view_status = ViewStatus {
            resource: route.stats_name(),
            count: store.len(),
            synced,
            warm,
            state: status.phase.as_str().to_string(),
            label: line.label,
            freshness: line.freshness,
            detail: line.detail,
            digest: live.digest().to_string(),
            deltas: informer.history().recorded(),
            dropped: informer.history().dropped(),
            held: informer.history().len(),
            events: status.events,
            relists: status.relists,
            channel: channel_words(
                &crate::transport::channel::status(),
                crate::transport::channel::open_streams().saturating_sub(input.background_streams),
                crate::transport::budget::watches_in_use(),
            ),
        };
        let empty_text = crate::model::status_line::empty_text(&status.phase, synced, replaying);
        // The last error in plain words (401 has its own sign-in notice).
        let can_retry = matches!(status.phase, Phase::Error { .. } | Phase::Failed { .. });
        let scope =
            crate::model::plain_error::scope_words(route.namespace.as_deref(), live.namespaced());
        let plain = status
            .last_error
            .as_ref()
            .filter(|_| failing && !unauthorized)
            .and_then(|error| {
                crate::model::plain_error::plain_words(error, &route.stats_name(), &scope)
            });
        drop(informer);

        let shown_source = live.source_id;
        let kept_items = kept
            .by_age()
            .into_iter()
            .map(|(id, source)| {
                let informer = source.driver.informer();
                KeptItem {
                    id,
                    label: source.label.clone(),
                    href: source.route.to_string(),
                    state: if source.driver.is_paused() {
                        "paused".to_string()
                    } else {
                        informer.status().phase.as_str().to_string()
                    },
                    held: informer.history().len(),
                    shown: id == shown_source,
                }
            })
            .collect();
        let usage = if state.settings_open {
            kept.by_age()
                .into_iter()
                .map(|(_, source)| {
                    let informer = source.driver.informer();
                    let history = informer.history();
                    Usage {
                        label: source.label.clone(),
                        held: history.len(),
                        bytes: history.bytes(),
                        recorded: history.recorded(),
                        dropped: history.dropped(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let transport_words = match crate::transport::channel::status() {
            ChannelStatus::Unavailable { .. } => format!(
                "serve offers no channel, so at most {} watches get a connection of their own and the \
                 rest wait, paused (browsers give a page six connections).",
                crate::transport::budget::OWN_CONNECTION_WATCHES
            ),
            _ => "Their watches all share one channel to deltascope serve (one connection)."
                .to_string(),
        };
        Some(Frame {
            rows,
            first,
            total,
            selected,
            selected_key,
            titles: Rc::new(live.columns.iter().map(|c| c.title.to_string()).collect()),
            sort: (live.spec().sort_column, live.spec().descending),
            wide_toggle: live.has_wide_columns().then_some(route.wide),
            server_columns: live.server_columns(),
            status: view_status,
            unauthorized,
            listing,
            empty_text,
            plain,
            can_retry,
            still_changing,
            timeline: live.timeline(),
            past: live.past().map(|past| PastSummary {
                at: past.at,
                count: past.keys.len(),
                complete: past.complete,
            }),
            delta_rows,
            delta_first,
            delta_total,
            sources,
            kept_items,
            usage,
            stored: if state.settings_open {
                Some(Rc::new(self.persistence.borrow().summary(&kept)))
            } else {
                None
            },
            capacity: kept.capacity(),
            kept_count: kept.len(),
            retention: kept.retention().clone(),
            shown_source,
            transport_words,
            now: timeline_now,
        })
    }
}
