//! The state behind one resource view: the informer it shows (a kept one,
//! through its `Driver`, in server-side table mode; or a recording playing
//! offline), the columns (the server's when it prints Tables, else computed
//! from the objects), the sorted row keys kept up to date from the store's
//! changes, the user's filter and sort (the row order, recomputed at most
//! every 300 ms while changes stream in), recently changed rows (for the
//! flash), deleted rows fading out (their keys stay among the rows until the
//! fade ends, so virtualisation and sorting place them like any row), and
//! the store digest (`model::store_digest`: exact at every frame for small
//! stores; large ones hashed a slice per frame once changes pause).
//! It also builds the timeline's buckets for the range and lanes the user
//! picked from every kept informer's history (or the recording's alone), the
//! delta list's selection across them (cached per query and histories), and
//! a snapshot of the past when the user travels in time: those read the
//! histories rather than the store, and are `histories`; a moment before
//! the page's own history is read from serve's record (`travel`), and the
//! timeline's lanes reach back into serve's record counted per bucket
//! (`reach`). A pods or nodes view also shows `kubectl top`'s columns from
//! the metrics API, asked for once per window while the view lives
//! (`top`); a new window rebuilds the columns, so the rows' cells and
//! their order follow it.

use std::cell::RefCell;
use std::rc::Rc;

use std::sync::Arc;

use crate::address::route::Route;
use crate::app::recorded_deltas::RecordedDeltas;
use crate::app::recorded_marks::RecordedMarksCache;
use crate::app::recorded_travel::RecordedTravel;
use crate::informer::key_hash::KeyMap;
use crate::informer::{
    ChangeCursor, ChangeKind, ChangeRead, ColumnDefinition, HistoryConfig, Millis, ObjectRef,
    StoreChange,
};
use crate::model::fade::Fading;
use crate::model::past::{PastBuilder, PastState};
use crate::model::printer_columns::PrinterColumn;
use crate::model::serve_history::ServeHistories;
use crate::model::store_digest::StoreDigest;
use crate::model::table::{
    columns_for, columns_from_printer, columns_from_server, has_wide_columns, view_order, Column,
    SortedKeys, ViewSpec,
};
use crate::model::timeline::{LaneMode, TimelineData, Viewport};
use crate::transport::Driver;

use super::kept_informers::{informer_config, KeptInformers, Source};

mod histories;
mod reach;
mod recorded_list;
mod top;
pub(super) use top::read_metrics;
mod travel;
pub use histories::HeldDelta;
use histories::{DeltaCache, TimelineBuilt};

const ORDER_INTERVAL_MS: f64 = 300.0;
const FLASH_MS: f64 = 1200.0;

/// The source id of a recording being replayed (kept informers count from 1).
pub const REPLAY_ID: u64 = 0;

pub struct LiveView {
    pub driver: Driver,
    /// The kept informer shown ([`REPLAY_ID`] while a recording plays).
    pub source_id: u64,
    /// A recording playing offline: its informer, outside the kept ones.
    replay: Option<Source>,
    /// Row keys: the store's, plus deleted ones still fading.
    pub keys: SortedKeys,
    /// Where the rows have read the informer's change log up to.
    changes: ChangeCursor,
    /// The columns shown: the server's, or the fallback ones.
    pub columns: Vec<Column>,
    /// Computed from the objects, for servers that give plain lists.
    fallback_columns: Vec<Column>,
    /// The server's Table columns the shown ones were built from.
    server_defs: Option<Arc<[ColumnDefinition]>>,
    /// Show the server's columns of every priority.
    wide: bool,
    /// NAMESPACE comes first (all namespaces of a namespaced resource).
    all_namespaces: bool,
    /// A custom resource's printer columns once its CRD has been read.
    printer_columns: Rc<RefCell<Option<Vec<PrinterColumn>>>>,
    printer: Vec<PrinterColumn>,
    namespaced: bool,
    spec: ViewSpec,
    /// Row keys in view order when `spec` is not the identity.
    order: Vec<Arc<str>>,
    order_dirty: bool,
    order_at: f64,
    /// The `data-digest` shown, recomputed without freezing the page.
    digest: StoreDigest,
    /// When the last store change was applied.
    last_change_at: f64,
    /// Keyed with the informer's fast hasher: a relist of 100k pods flags
    /// every row, and SipHash was 17 ms of that frame.
    changed_at: KeyMap<String, f64>,
    /// Deleted rows still shown while they fade, with their last state.
    fading: Fading<ObjectRef>,
    /// The informer had synced by the last refresh: changes before that are
    /// the initial list, which does not flash.
    synced_seen: bool,
    timeline: Rc<TimelineData>,
    /// What the timeline was built from.
    timeline_built: Option<TimelineBuilt>,
    timeline_at: f64,
    viewport: Viewport,
    lane_mode: LaneMode,
    /// The delta list's last selection, reused while nothing changed.
    delta_cache: Option<DeltaCache>,
    past: Option<PastState>,
    /// The past being rebuilt, a step per frame (the one shown, if any,
    /// stays until it is done).
    past_job: Option<PastBuilder>,
    /// serve's record of the moment travelled to (filled by a request of
    /// its own).
    record: Rc<RefCell<RecordedTravel>>,
    /// serve's record of the lanes counted per bucket (filled by requests
    /// of their own).
    marks: Rc<RefCell<RecordedMarksCache>>,
    /// serve's record of the lanes the delta list covers, before the
    /// page's own histories (filled by requests of their own).
    recorded_deltas: Rc<RefCell<RecordedDeltas>>,
    /// What serve says of its clusters' histories (the app state's, as of
    /// this frame).
    serve: Option<ServeHistories>,
    /// Asks for a frame (an answer from serve came).
    on_change: Rc<dyn Fn()>,
    /// `kubectl top`'s numbers, for a pods or nodes view.
    top: Option<top::TopPoll>,
}

impl LiveView {
    /// Shows the kept informer `source_id` (just started, or kept from
    /// before: its rows are rebuilt from its store).
    pub fn attach(
        route: Route,
        source_id: u64,
        driver: Driver,
        on_change: Rc<dyn Fn()>,
    ) -> LiveView {
        let mut view = Self::with_driver(driver, source_id, None, &route, on_change.clone());
        view.top = top::TopPoll::start(&route, on_change.clone());
        // A group with a dot that Kubernetes does not serve itself may be a
        // CRD's: its printer columns replace the fallback ones.
        if deltascope_facts::resources::may_be_custom(&route.group) {
            let slot = view.printer_columns.clone();
            wasm_bindgen_futures::spawn_local(async move {
                match crd_printer_columns(&route).await {
                    Ok(printer) => {
                        *slot.borrow_mut() = Some(printer);
                        on_change();
                    }
                    Err(why) => web_sys::console::info_1(&why.into()),
                }
            });
        }
        view
    }

    /// Plays a recording offline through the same informer path (the kept
    /// informers keep running; the timeline shows only the recording).
    pub fn replay(
        route: Route,
        events: Vec<crate::api::recording::RecordedEvent>,
        speed: f64,
        on_change: Rc<dyn Fn()>,
        retention: HistoryConfig,
    ) -> LiveView {
        let mut config = informer_config(&route, 0, None).server_table(false);
        config.history = retention;
        let driver = Driver::replay(config, events, speed, on_change.clone());
        let source = Source::new(driver.clone(), route.data_key());
        Self::with_driver(driver, REPLAY_ID, Some(source), &route, on_change)
    }

    /// Stops the recording's informer if one plays (kept informers are
    /// stopped by their set, never by the view).
    pub fn stop_replay(&self) {
        if let Some(replay) = &self.replay {
            replay.driver.stop();
        }
    }

    /// New retention limits for the recording's informer, if one plays.
    pub fn set_replay_retention(&self, config: &HistoryConfig) {
        if let Some(replay) = &self.replay {
            replay
                .driver
                .with_informer(|informer| informer.set_history_config(config.clone()));
        }
    }

    fn with_driver(
        driver: Driver,
        source_id: u64,
        replay: Option<Source>,
        route: &Route,
        on_change: Rc<dyn Fn()>,
    ) -> LiveView {
        let (namespaced, all_namespaces, keys, synced, changes) = {
            let informer = driver.informer();
            // The store is the table now; the changes so far are in it.
            let config = informer.config();
            (
                config.resource.namespaced,
                config.resource.namespaced && config.namespace.is_none(),
                SortedKeys::from_sorted(informer.store().keys_in_order().to_vec()),
                informer.has_synced(),
                informer.change_cursor(),
            )
        };
        let columns = columns_for(&route.resource, all_namespaces);
        LiveView {
            driver,
            source_id,
            replay,
            keys,
            changes,
            columns: columns.clone(),
            fallback_columns: columns,
            server_defs: None,
            wide: false,
            all_namespaces,
            printer_columns: Rc::new(RefCell::new(None)),
            printer: Vec::new(),
            namespaced,
            spec: ViewSpec::default(),
            order: Vec::new(),
            order_dirty: true,
            order_at: f64::NEG_INFINITY,
            digest: StoreDigest::new(),
            last_change_at: f64::NEG_INFINITY,
            changed_at: KeyMap::default(),
            fading: Fading::default(),
            synced_seen: synced,
            timeline: Rc::new(TimelineData::default()),
            timeline_built: None,
            timeline_at: f64::NEG_INFINITY,
            viewport: Viewport::default(),
            lane_mode: LaneMode::default(),
            delta_cache: None,
            past: None,
            past_job: None,
            record: Rc::new(RefCell::new(RecordedTravel::default())),
            marks: Rc::new(RefCell::new(RecordedMarksCache::default())),
            recorded_deltas: Rc::new(RefCell::new(RecordedDeltas::default())),
            serve: None,
            on_change,
            top: None,
        }
    }

    pub fn spec(&self) -> &ViewSpec {
        &self.spec
    }

    /// Shows the server's columns of every priority (`wide`) or priority 0.
    pub fn set_wide(&mut self, wide: bool) {
        if wide != self.wide {
            self.wide = wide;
            self.rebuild_columns();
        }
    }

    /// True when the table shows the server's own columns (it prints Tables).
    pub fn server_columns(&self) -> bool {
        self.server_defs.is_some()
    }

    /// True when the wide view would show more columns.
    pub fn has_wide_columns(&self) -> bool {
        self.server_defs.as_deref().is_some_and(has_wide_columns)
    }

    fn rebuild_columns(&mut self) {
        self.columns = match &self.server_defs {
            Some(defs) => columns_from_server(defs, self.wide, self.all_namespaces, &self.printer),
            None => self.fallback_columns.clone(),
        };
        // kubectl top's columns come last (see `table_columns`).
        if let Some(top) = &self.top {
            self.columns.extend(top.columns(self.wide));
        }
        self.order_dirty = true;
        self.order_at = f64::NEG_INFINITY;
    }

    /// A new filter or sort applies on the next refresh, without waiting for the interval.
    pub fn set_spec(&mut self, spec: ViewSpec) {
        if spec != self.spec {
            self.spec = spec;
            self.order_dirty = true;
            self.order_at = f64::NEG_INFINITY;
        }
    }

    /// Applies the store's changes since the last frame. Returns true when
    /// something is still stale (digest, order, a flash, a fading row) and
    /// another refresh should be scheduled.
    pub fn refresh(&mut self, now_ms: f64, now_unix: i64, kept: &mut KeptInformers) -> bool {
        let printer = self.printer_columns.borrow_mut().take();
        let mut rebuild = false;
        if let Some(printer) = printer {
            self.fallback_columns = columns_from_printer(printer.clone(), self.all_namespaces);
            self.printer = printer;
            rebuild = true;
        }
        let defs = self
            .driver
            .with_informer(|informer| informer.server_columns().cloned());
        let same = match (&defs, &self.server_defs) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            self.server_defs = defs;
            rebuild = true;
        }
        // A new window of metrics: its cells, and the order they sort in.
        rebuild |= self.top.as_mut().is_some_and(top::TopPoll::take_change);
        if rebuild {
            self.rebuild_columns();
        }
        self.apply_changes(now_ms);
        if let Some(top) = &self.top {
            top.set_ready(self.driver.informer().has_synced());
        }
        self.refresh_timeline(now_ms as Millis, kept);
        {
            let informer = self.driver.informer();
            self.digest
                .refresh(informer.store(), now_ms, self.last_change_at);
        }
        if self.spec.is_identity() {
            self.order_dirty = false;
            self.order.clear();
        } else if self.order_dirty && now_ms - self.order_at >= ORDER_INTERVAL_MS {
            let (keys, columns, spec, fading) =
                (&self.keys, &self.columns, &self.spec, &self.fading);
            self.order = self.driver.with_informer(|informer| {
                let store = informer.store();
                // Fading rows sort and filter by their last state.
                view_order(keys, columns, spec, now_unix, |key| {
                    store
                        .get_by_key(key)
                        .or_else(|| fading.get(key))
                        .map(|o| &**o)
                })
            });
            self.order_at = now_ms;
            self.order_dirty = false;
        }
        self.digest.pending()
            || self.past_job.is_some()
            || self.record_busy()
            || self.order_dirty
            || !self.changed_at.is_empty()
            || !self.fading.is_empty()
    }

    /// The store's changes since the last frame: row keys, flashes, and
    /// deleted rows that start (or end) fading.
    fn apply_changes(&mut self, now_ms: f64) {
        let (changes, synced) = {
            let informer = self.driver.informer();
            let changes: Option<Vec<StoreChange>> = match informer.read_changes(&mut self.changes) {
                ChangeRead::Changes(changes) => Some(changes.cloned().collect()),
                ChangeRead::Lagged => None,
            };
            (changes, informer.has_synced())
        };
        let Some(changes) = changes else {
            // The log dropped changes this view had not read: the rows
            // come from the store again (rows fading out go at once).
            self.fading.clear();
            self.changed_at.clear();
            let rows = {
                let informer = self.driver.informer();
                SortedKeys::from_sorted(informer.store().keys_in_order().to_vec())
            };
            self.keys = rows;
            self.synced_seen = synced;
            self.digest.changed();
            self.order_dirty = true;
            self.last_change_at = now_ms;
            return;
        };
        // The initial list is not a change the eye should be drawn to.
        let flash = self.synced_seen;
        let mut edits = Vec::with_capacity(changes.len());
        for change in changes {
            match change.kind {
                ChangeKind::Added | ChangeKind::Updated => {
                    self.fading.revived(&change.key);
                    // an update of a row already there changes no row key
                    // (a restored store's whole objects replace its faces)
                    if change.kind == ChangeKind::Added || !self.keys.contains(&change.key) {
                        edits.push((change.key.clone(), true));
                    }
                    if flash {
                        self.changed_at.insert(change.key, now_ms);
                    }
                }
                ChangeKind::Deleted => {
                    self.changed_at.remove(&change.key);
                    // The row keeps its last state while it fades: the
                    // deletion's own delta, the newest of its key.
                    let last = if self.fading.has_room() {
                        self.driver.with_informer(|informer| {
                            informer
                                .history()
                                .versions(&change.key)
                                .next_back()
                                .map(|entry| entry.object.clone())
                        })
                    } else {
                        None
                    };
                    let fades =
                        last.is_some_and(|object| self.fading.deleted(&change.key, object, now_ms));
                    if !fades {
                        self.fading.revived(&change.key);
                        edits.push((change.key, false));
                    }
                }
            }
            self.digest.changed();
            self.order_dirty = true;
            self.last_change_at = now_ms;
        }
        self.synced_seen = synced;
        for key in self.fading.expire(now_ms) {
            edits.push((key, false));
            self.order_dirty = true;
        }
        self.keys.apply(edits);
        self.changed_at.retain(|_, at| now_ms - *at < FLASH_MS);
    }

    /// Rows in view (after filter), fading ones included.
    pub fn row_count(&self) -> usize {
        if self.spec.is_identity() {
            self.keys.len()
        } else {
            self.order.len()
        }
    }

    pub fn window(&self, first: usize, count: usize) -> &[Arc<str>] {
        if self.spec.is_identity() {
            self.keys.window(first, count)
        } else {
            let start = first.min(self.order.len());
            &self.order[start..start.saturating_add(count).min(self.order.len())]
        }
    }

    pub fn key_at(&self, index: usize) -> Option<&Arc<str>> {
        self.window(index, 1).first()
    }

    /// What the page says of the metrics API (pods and nodes views only).
    pub fn metrics_note(&self) -> Option<crate::model::top::MetricsNote> {
        self.top.as_ref().map(top::TopPoll::note)
    }

    pub fn digest(&self) -> &str {
        self.digest.shown()
    }

    /// Whether the resource is namespaced (for "in namespace X" / "in the cluster").
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// When the row of `key` changed, while it flashes (the page clock, ms).
    pub fn flashing_since(&self, key: &str) -> Option<f64> {
        self.changed_at.get(key).copied()
    }

    /// The last state of a deleted row that is fading out, and when it was
    /// deleted (the page clock, ms).
    pub fn fading(&self, key: &str) -> Option<(&ObjectRef, f64)> {
        self.fading.get_with_time(key)
    }
}

/// The priority-0 printer columns of a custom resource, read from its
/// CustomResourceDefinition (`{plural}.{group}`) in the route's cluster.
/// An error (not a CRD, not readable) means the table keeps its fallback
/// columns.
async fn crd_printer_columns(route: &Route) -> Result<Vec<PrinterColumn>, String> {
    let crd = crate::transport::discovery::crd_definition(
        &route.api_root(),
        &route.group,
        &route.resource,
    )
    .await?;
    let (columns, warnings) = crate::model::printer_columns::default_columns(&crd, &route.version)
        .map_err(|e| e.to_string())?;
    for warning in warnings {
        web_sys::console::warn_1(&warning.to_string().into());
    }
    Ok(columns)
}
