//! The state behind one resource view: the running informer (through its
//! `Driver`, in server-side table mode), the columns (the server's when it
//! prints Tables, else computed from the objects), the sorted row keys kept
//! up to date from the store's changes,
//! the user's filter and sort (the row order, recomputed at most every 300 ms
//! while changes stream in), recently changed rows (for the flash), and the
//! store digest, recomputed at most every 250 ms so 100k objects never stall a frame.
//! It also keeps the spans when the informer was not watching (for the
//! timeline) and the moments it relisted, the timeline's buckets for the range
//! and lanes the user picked, the delta list's selection (cached per query and
//! history length), and a snapshot of the past when the user travels in time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use std::sync::Arc;

use crate::informer::{
    ChangeKind, ColumnDefinition, InformerConfig, Millis, ObjectRef, Phase, ResourceRef,
};
use crate::printer_columns::PrinterColumn;
use crate::route::Route;
use crate::table_model::{
    columns_for, columns_from_printer, columns_from_server, has_wide_columns, view_order, Column,
    SortedKeys, ViewSpec,
};
use crate::time_travel::store_at;
use crate::timeline_model::{
    select_deltas, DeltaQuery, LaneMode, TimelineData, TimelineInput, Viewport,
};
use crate::transport::Driver;

const DIGEST_INTERVAL_MS: f64 = 250.0;
const DIGEST_ALWAYS_BELOW: usize = 5_000;
const ORDER_INTERVAL_MS: f64 = 300.0;
const FLASH_MS: f64 = 1200.0;
const TIMELINE_INTERVAL_MS: f64 = 500.0;

/// The store as it was at `at`, rebuilt from the history.
pub struct Past {
    pub at: Millis,
    /// Keys present then that match the text filter.
    pub keys: SortedKeys,
    filter: String,
    pub objects: HashMap<String, ObjectRef>,
    /// False when retention evicted deltas, so objects may be missing.
    pub complete: bool,
}

pub struct LiveView {
    pub driver: Driver,
    pub keys: SortedKeys,
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
    order: Vec<String>,
    order_dirty: bool,
    order_at: f64,
    digest: String,
    digest_dirty: bool,
    digest_at: f64,
    changed_at: HashMap<String, f64>,
    /// Spans after the first sync when the informer was not watching.
    gaps: Vec<(Millis, Millis)>,
    blind_since: Option<Millis>,
    timeline: Rc<TimelineData>,
    timeline_recorded: u64,
    timeline_at: f64,
    /// Moments the informer relisted (after its first list).
    relists: Vec<Millis>,
    relists_seen: u32,
    viewport: Viewport,
    lane_mode: LaneMode,
    /// The resource's name, the lane's name in `LaneMode::Resource`.
    resource_label: String,
    /// (query, recorded, held) → matching seqs, newest first.
    delta_cache: Option<(DeltaQuery, u64, usize, Rc<Vec<u64>>)>,
    past: Option<Past>,
}

impl LiveView {
    /// `namespaced` comes from discovery when it has arrived; otherwise it is guessed from the name.
    pub fn start(
        route: Route,
        seed: u64,
        on_change: Rc<dyn Fn()>,
        namespaced: Option<bool>,
    ) -> LiveView {
        let (config, columns) = Self::config(&route, seed, namespaced);
        let config = config.server_table(server_table_wanted());
        let view = Self::with_driver(
            Driver::start(config, on_change.clone()),
            columns,
            route.stats_name(),
        );
        // A group with a dot may be a CRD's: its printer columns replace the fallback ones.
        if route.group.contains('.') {
            let slot = view.printer_columns.clone();
            wasm_bindgen_futures::spawn_local(async move {
                match crate::transport::discovery::crd_printer_columns(
                    &route.group,
                    &route.version,
                    &route.resource,
                )
                .await
                {
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

    /// Plays a recording offline through the same informer path.
    pub fn replay(
        route: Route,
        events: Vec<crate::time_travel::RecordedEvent>,
        speed: f64,
        on_change: Rc<dyn Fn()>,
    ) -> LiveView {
        let (config, columns) = Self::config(&route, 0, None);
        Self::with_driver(
            Driver::replay(config, events, speed, on_change),
            columns,
            route.stats_name(),
        )
    }

    fn config(route: &Route, seed: u64, namespaced: Option<bool>) -> (InformerConfig, Vec<Column>) {
        let namespaced = route.namespace.is_some()
            || namespaced.unwrap_or_else(|| !is_cluster_scoped(&route.resource));
        let resource = ResourceRef {
            group: route.group.clone(),
            version: route.version.clone(),
            plural: route.resource.clone(),
            namespaced,
        };
        let mut config = InformerConfig::new(resource);
        config.namespace = route.namespace.clone();
        config.label_selector = route.label_selector.clone();
        config.field_selector = route.field_selector.clone();
        config.seed = seed;
        let columns = columns_for(&route.resource, namespaced && route.namespace.is_none());
        (config, columns)
    }

    fn with_driver(driver: Driver, columns: Vec<Column>, resource_label: String) -> LiveView {
        let (namespaced, all_namespaces) = driver.with_informer(|informer| {
            let config = informer.config();
            (
                config.resource.namespaced,
                config.resource.namespaced && config.namespace.is_none(),
            )
        });
        LiveView {
            driver,
            keys: SortedKeys::default(),
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
            order_dirty: false,
            order_at: f64::NEG_INFINITY,
            digest: String::new(),
            digest_dirty: true,
            digest_at: f64::NEG_INFINITY,
            changed_at: HashMap::new(),
            gaps: Vec::new(),
            blind_since: None,
            timeline: Rc::new(TimelineData::default()),
            timeline_recorded: u64::MAX,
            timeline_at: f64::NEG_INFINITY,
            relists: Vec::new(),
            relists_seen: 0,
            viewport: Viewport::default(),
            lane_mode: LaneMode::default(),
            resource_label,
            delta_cache: None,
            past: None,
        }
    }

    /// Travel to `at` (rebuilds the past store from the history), or back to live with `None`.
    pub fn set_past(&mut self, at: Option<Millis>) {
        let filter = self.spec.filter.trim().to_lowercase();
        self.past = at.map(|at| {
            self.driver.with_informer(|informer| {
                let history = informer.history();
                let state = store_at(history, at);
                let objects: HashMap<String, ObjectRef> = state
                    .iter()
                    .map(|(key, entry)| (key.to_string(), entry.object.clone()))
                    .collect();
                let matching = objects
                    .keys()
                    .filter(|k| k.to_lowercase().contains(&filter))
                    .cloned();
                Past {
                    at,
                    keys: SortedKeys::from_keys(matching),
                    filter,
                    objects,
                    complete: history.dropped() == 0,
                }
            })
        });
    }

    /// True when the past view must be rebuilt (another moment or another text filter).
    pub fn past_is_stale(&self, at: Option<Millis>) -> bool {
        match (&self.past, at) {
            (None, None) => false,
            (Some(past), Some(at)) => {
                past.at != at || past.filter != self.spec.filter.trim().to_lowercase()
            }
            _ => true,
        }
    }

    pub fn past(&self) -> Option<&Past> {
        self.past.as_ref()
    }

    pub fn timeline(&self) -> Rc<TimelineData> {
        self.timeline.clone()
    }

    /// The range and lanes the timeline shows; a change rebuilds it on the next refresh.
    pub fn set_timeline_view(&mut self, viewport: Viewport, mode: LaneMode) {
        if viewport != self.viewport || mode != self.lane_mode {
            self.viewport = viewport;
            self.lane_mode = mode;
            self.timeline_recorded = u64::MAX;
            self.timeline_at = f64::NEG_INFINITY;
        }
    }

    /// The held deltas matching `query`, newest first (recomputed only when
    /// the query or the history changed).
    pub fn deltas(&mut self, query: &DeltaQuery) -> Rc<Vec<u64>> {
        let (recorded, held) = self
            .driver
            .with_informer(|informer| (informer.history().recorded(), informer.history().len()));
        if let Some((cached, r, h, seqs)) = &self.delta_cache {
            if cached == query && *r == recorded && *h == held {
                return seqs.clone();
            }
        }
        let seqs = Rc::new(
            self.driver
                .with_informer(|informer| select_deltas(informer.history(), query)),
        );
        self.delta_cache = Some((query.clone(), recorded, held, seqs.clone()));
        seqs
    }

    fn track_blind_spans(&mut self, now: Millis) {
        let (watching, synced, recorded, relists) = self.driver.with_informer(|informer| {
            let watching = matches!(informer.status().phase, Phase::Watching);
            (
                watching,
                informer.has_synced(),
                informer.history().recorded(),
                informer.status().relists,
            )
        });
        if relists > self.relists_seen {
            self.relists_seen = relists;
            self.relists.push(now);
            self.timeline_recorded = u64::MAX;
        }
        match (watching, self.blind_since) {
            (false, None) if synced => self.blind_since = Some(now),
            (true, Some(since)) => {
                self.gaps.push((since, now));
                self.blind_since = None;
                self.timeline_recorded = u64::MAX;
            }
            _ => {}
        }
        // A live view's axis moves with time even when nothing arrives.
        let stale = recorded != self.timeline_recorded
            || self.blind_since.is_some()
            || self.viewport.is_live();
        if stale && now as f64 - self.timeline_at >= TIMELINE_INTERVAL_MS {
            let mut gaps = self.gaps.clone();
            gaps.extend(self.blind_since.map(|since| (since, now)));
            let (viewport, mode, resource) =
                (self.viewport, self.lane_mode, self.resource_label.as_str());
            let relists = &self.relists;
            self.timeline = Rc::new(self.driver.with_informer(|informer| {
                let history = informer.history();
                let range = viewport.resolve(history.iter().next().map(|e| e.at), now);
                TimelineData::build(
                    history,
                    TimelineInput {
                        gaps: &gaps,
                        relists,
                        range,
                        mode,
                        resource,
                    },
                )
            }));
            self.timeline_recorded = recorded;
            self.timeline_at = now as f64;
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
    /// something is still stale (digest, order, a flash) and another refresh
    /// should be scheduled.
    pub fn refresh(&mut self, now_ms: f64, now_unix: i64) -> bool {
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
        if rebuild {
            self.rebuild_columns();
        }
        let changes = self
            .driver
            .with_informer(|informer| informer.take_changes());
        for change in changes {
            match change.kind {
                ChangeKind::Added | ChangeKind::Updated => self.keys.insert(&change.key),
                ChangeKind::Deleted => self.keys.remove(&change.key),
            }
            self.changed_at.insert(change.key, now_ms);
            self.digest_dirty = true;
            self.order_dirty = true;
        }
        self.changed_at.retain(|_, at| now_ms - *at < FLASH_MS);
        self.track_blind_spans(now_ms as Millis);
        // Small stores hash in well under a millisecond: keep the hook exact.
        // Large ones are throttled so a stream of events never stalls frames.
        let cheap = self.keys.len() <= DIGEST_ALWAYS_BELOW;
        if self.digest_dirty && (cheap || now_ms - self.digest_at >= DIGEST_INTERVAL_MS) {
            self.digest = self
                .driver
                .with_informer(|informer| informer.store().digest());
            self.digest_at = now_ms;
            self.digest_dirty = false;
        }
        if self.spec.is_identity() {
            self.order_dirty = false;
            self.order.clear();
        } else if self.order_dirty && now_ms - self.order_at >= ORDER_INTERVAL_MS {
            let (keys, columns, spec) = (&self.keys, &self.columns, &self.spec);
            self.order = self.driver.with_informer(|informer| {
                let store = informer.store();
                view_order(keys, columns, spec, now_unix, |key| {
                    store.get_by_key(key).map(|o| &**o)
                })
            });
            self.order_at = now_ms;
            self.order_dirty = false;
        }
        self.digest_dirty || self.order_dirty || !self.changed_at.is_empty()
    }

    /// Rows in view (after filter).
    pub fn row_count(&self) -> usize {
        if self.spec.is_identity() {
            self.keys.len()
        } else {
            self.order.len()
        }
    }

    pub fn window(&self, first: usize, count: usize) -> &[String] {
        if self.spec.is_identity() {
            self.keys.window(first, count)
        } else {
            let start = first.min(self.order.len());
            &self.order[start..start.saturating_add(count).min(self.order.len())]
        }
    }

    pub fn key_at(&self, index: usize) -> Option<&String> {
        self.window(index, 1).first()
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether the resource is namespaced (for "in namespace X" / "in the cluster").
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    pub fn recently_changed(&self, key: &str) -> bool {
        self.changed_at.contains_key(key)
    }
}

/// Server-side tables are on unless `localStorage["deltascope.serverTable"]`
/// is `off` (for comparing both modes, and a way out should a server print
/// Tables badly).
fn server_table_wanted() -> bool {
    let setting = web_sys::window()
        .and_then(|w| w.local_storage().ok().flatten())
        .and_then(|storage| storage.get_item("deltascope.serverTable").ok().flatten());
    setting.as_deref() != Some("off")
}

fn is_cluster_scoped(resource: &str) -> bool {
    matches!(
        resource,
        "nodes"
            | "namespaces"
            | "persistentvolumes"
            | "clusterroles"
            | "clusterrolebindings"
            | "customresourcedefinitions"
            | "storageclasses"
            | "priorityclasses"
    )
}
