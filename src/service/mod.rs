//! The informers service: the only page code that touches `transport`.
//! [`Informers`] owns every informer the page runs — the kept resource
//! views' (`kept_informers`), a recording's replay, the view on screen
//! (`resource_view`) — and API discovery's loop with its CRD watch
//! (`api_discovery`, read as a [`Discovery`]). Views never get an
//! informer: they read the [`Frame`] snapshot built once per animation
//! frame (`frame`) and call the service's commands (show, replay, import a
//! recording, retry, stop, keep, retention, capacity, export), which are
//! the only ways anything in it changes.
//! It owns the logs view's followers too (`logs`): their streams ride the
//! same channel, and the view reads a [`LogFrame`] of them. What serve
//! says of the history it records is asked for by `serve_history`.

pub mod api_discovery;
mod frame;
pub mod kept_informers;
pub mod logs;
mod object_panel;
mod object_usage;
pub mod persistence;
pub mod resource_view;
pub mod serve_history;
pub mod served_clusters;

use std::cell::RefCell;
use std::rc::Rc;

pub use api_discovery::Discovery;
pub use persistence::StoredSummary;
use persistence::Stores;

use crate::address::log_route::LogRoute;
use crate::address::object_route::ObjectRoute;
use crate::address::route::Route;
use crate::api::recording::RecordedEvent;
use crate::api::resources::ApiResource;
use crate::app::log_ui::LogUi;
use crate::app::recorded_export::{record_of_answer, record_span};
use crate::app::state::{Action, Replaying};
use crate::informer::compact_sort;
use crate::informer::logs::RingBounds;
use crate::informer::{HistoryConfig, Millis};
use crate::model::log_frame::{log_frame, LogFrame};
use crate::model::object_details::ObjectDetails;
use crate::model::serve_history::ServeHistory;
use api_discovery::ApiDiscovery;
pub use frame::{Frame, FrameInput, PastSummary, RecordWords, ViewStatus};
use kept_informers::KeptInformers;
use logs::LogsRunner;
use object_panel::ObjectPanel;
use resource_view::LiveView;

/// Runs `work` from a task of its own, after the one that spawns it: work
/// started by the first render does not lengthen that render's task
/// (start-up was one long task of 60–90 ms).
pub fn spawn_after_this_task(work: impl std::future::Future<Output = ()> + 'static) {
    wasm_bindgen_futures::spawn_local(async move {
        crate::transport::slicing::yield_to_event_loop().await;
        work.await;
    });
}

/// The page's informers and the view on screen.
pub struct Informers {
    kept: Rc<RefCell<KeptInformers>>,
    /// What is stored in each cluster's browser database, and its writers.
    stores: Stores,
    view: RefCell<Option<LiveView>>,
    logs: RefCell<Option<LogsRunner>>,
    /// The logs search's rows: (query, session version, rows).
    log_search: RefCell<(String, u64, Rc<Vec<usize>>)>,
    /// The object view's events informer and its story of the object.
    panel: RefCell<ObjectPanel>,
    /// API discovery, kept current by a watch of the CRDs: the default
    /// cluster's, and each other cluster's once shown (by serve's name).
    discovery: ApiDiscovery,
    other_discoveries: RefCell<Vec<(String, ApiDiscovery)>>,
    /// Asks for a frame: called after every input an informer took.
    on_change: Rc<dyn Fn()>,
}

impl Informers {
    /// No informer runs until [`Informers::show`]; what the browser's
    /// database holds is read at once and restored (see `persistence`),
    /// and discovery runs (see `api_discovery`).
    pub fn new(on_change: Rc<dyn Fn()>) -> Informers {
        let kept = Rc::new(RefCell::new(KeptInformers::new(
            kept_informers::load_retention(),
        )));
        let stores = Stores::start(kept.clone(), on_change.clone());
        let discovery = ApiDiscovery::start(String::new(), on_change.clone());
        Informers {
            kept,
            stores,
            view: RefCell::new(None),
            logs: RefCell::new(None),
            log_search: RefCell::new((String::new(), 0, Rc::new(Vec::new()))),
            panel: RefCell::new(ObjectPanel::default()),
            discovery,
            other_discoveries: RefCell::default(),
            on_change,
        }
    }

    /// What API discovery knows now of `cluster` (`None`: the default
    /// one), for the picker, the `:` commands and the notices; another
    /// cluster's discovery starts the first time it is asked for.
    pub fn discovery_of(&self, cluster: Option<&str>) -> Discovery {
        let Some(cluster) = cluster else {
            return self.discovery.snapshot();
        };
        let mut others = self.other_discoveries.borrow_mut();
        if let Some((_, discovery)) = others.iter().find(|(name, _)| name == cluster) {
            return discovery.snapshot();
        }
        let api_root = crate::address::route::api_root(Some(cluster));
        let discovery = ApiDiscovery::start(api_root, self.on_change.clone());
        let snapshot = discovery.snapshot();
        others.push((cluster.to_string(), discovery));
        snapshot
    }

    /// Streams the discoveries' CRD watches hold on the channel.
    fn background_streams(&self) -> usize {
        let others = self.other_discoveries.borrow();
        self.discovery.background_streams()
            + others
                .iter()
                .map(|(_, d)| d.background_streams())
                .sum::<usize>()
    }

    /// Shows the resource `route` names: its kept informer, or a new one
    /// (which may evict the least recently shown). `namespaced` comes from
    /// discovery when it has arrived.
    pub fn show(&self, route: &Route, namespaced: Option<bool>) {
        if let Some(old) = self.view.borrow_mut().take() {
            old.stop_replay();
        }
        let seed = random_seed();
        // Another cluster's store starts with its first view, which waits
        // for what it holds.
        self.stores.showing(route.cluster.as_deref());
        let (id, driver) =
            self.kept
                .borrow_mut()
                .open(route, seed, self.on_change.clone(), namespaced);
        *self.view.borrow_mut() = Some(LiveView::attach(
            route.clone(),
            id,
            driver,
            self.on_change.clone(),
        ));
    }

    /// The route changes: a replay stops, and an informer that never synced
    /// and is failing stops rather than retry in the background.
    pub fn leave(&self) {
        if let Some(old) = self.view.borrow_mut().take() {
            old.stop_replay();
            self.kept.borrow_mut().stop_if_failing(old.source_id);
        }
    }

    /// Shows the logs `route` names (its followers start; a different
    /// logs view's stop).
    pub fn show_logs(&self, route: &LogRoute) {
        let mut logs = self.logs.borrow_mut();
        if logs.as_ref().is_some_and(|l| l.route == *route) {
            return;
        }
        if let Some(old) = logs.take() {
            old.stop();
        }
        *logs = Some(LogsRunner::start(route.clone(), self.on_change.clone()));
    }

    /// The logs view closes: its followers stop.
    pub fn leave_logs(&self) {
        if let Some(old) = self.logs.borrow_mut().take() {
            old.stop();
        }
    }

    /// What the logs view shows of rows `first..first + count`; follows
    /// pods coming and going first.
    pub fn log_frame(&self, ui: &LogUi, first: usize, count: usize) -> Option<LogFrame> {
        let logs = self.logs.borrow();
        let runner = logs.as_ref()?;
        runner.observe(
            &mut self.kept.borrow_mut(),
            random_seed(),
            self.on_change.clone(),
        );
        let session = runner.session();
        let matches = {
            let mut cache = self.log_search.borrow_mut();
            if ui.search.is_empty() {
                Rc::new(Vec::new())
            } else {
                if cache.0 != ui.search || cache.1 != session.version() {
                    *cache = (
                        ui.search.clone(),
                        session.version(),
                        Rc::new(session.search_rows(&ui.search)),
                    );
                }
                cache.2.clone()
            }
        };
        let current = ui.current_match(matches.len());
        Some(log_frame(&session, current, first, count, &matches))
    }

    /// How many rows (lines and breaks) the logs view holds.
    pub fn log_rows(&self) -> usize {
        self.logs
            .borrow()
            .as_ref()
            .map_or(0, |runner| runner.session().row_count())
    }

    /// The logs held, as text (for download).
    pub fn log_text(&self) -> Option<String> {
        Some(self.logs.borrow().as_ref()?.session().text())
    }

    /// New bounds for the logs view's ring (saved for the next load).
    pub fn set_log_bounds(&self, bounds: RingBounds) {
        if let Some(runner) = self.logs.borrow().as_ref() {
            runner.set_bounds(bounds);
        }
    }

    /// The containers of the logs view's pod (for its picker).
    pub fn log_containers(&self) -> Vec<String> {
        self.logs
            .borrow()
            .as_ref()
            .map(|runner| runner.containers())
            .unwrap_or_default()
    }

    /// What is stored in the browser's database (for the settings).
    pub fn stored_summary(&self) -> StoredSummary {
        self.stores.summary(&self.kept.borrow())
    }

    /// The settings' "forget stored history": everything stored for the
    /// clusters shown is deleted; from now on only new changes are stored.
    pub fn forget_stored(&self) {
        for handles in self.stores.all_handles() {
            wasm_bindgen_futures::spawn_local(persistence::forget_all(handles));
        }
    }

    /// The settings' "forget" of another cluster's stored history.
    pub fn forget_other_cluster(&self, database: String) {
        wasm_bindgen_futures::spawn_local(persistence::forget_other_cluster(
            self.stores.default_handles(),
            database,
        ));
    }

    /// The app goes away: every informer stops, discovery's too.
    pub fn stop_all(&self) {
        self.discovery.stop();
        for (_, discovery) in self.other_discoveries.borrow().iter() {
            discovery.stop();
        }
        self.leave_logs();
        self.panel.borrow_mut().stop();
        self.kept.borrow_mut().stop_all();
    }

    /// The timeline's "Import recording": the text of the file `name` is
    /// parsed and replayed at `speed` in place of the view at `route`; the
    /// answer is what the app records of it (the replay started, with the
    /// gaps the file holds, or why the file could not be read).
    pub fn import_recording(&self, route: &Route, name: String, text: &str, speed: f64) -> Action {
        match crate::api::recording::parse_recording(text) {
            Ok(recording) => {
                let gaps = recording.gaps.len();
                self.replay(route, recording.events, speed);
                Action::ReplayStarted(Replaying { name, speed, gaps })
            }
            Err(error) => Action::ImportFailed(format!("{name}: {error}")),
        }
    }

    /// Plays a recording offline through the informer path, in place of the
    /// view on screen (the kept informers keep running).
    pub fn replay(&self, route: &Route, events: Vec<RecordedEvent>, speed: f64) {
        if let Some(old) = self.view.borrow_mut().take() {
            old.stop_replay();
        }
        let retention = self.kept.borrow().retention().clone();
        *self.view.borrow_mut() = Some(LiveView::replay(
            route.clone(),
            events,
            speed,
            self.on_change.clone(),
            retention,
        ));
        (self.on_change)();
    }

    /// The user's Retry: the shown informer asks again now.
    pub fn retry(&self) {
        if let Some(live) = self.view.borrow().as_ref() {
            live.driver.retry();
        }
    }

    /// The shown informer's history between `from` and `to` as NDJSON,
    /// after what serve recorded of `resource` before it when serve records
    /// it (`crate::app::recorded_export`); with the words why serve's record
    /// is not in the file when it could not be read.
    pub async fn export(
        &self,
        resource: String,
        (from, to): (Millis, Millis),
        serve: Option<ServeHistory>,
    ) -> Option<(String, Option<String>)> {
        let driver = self.view.borrow().as_ref()?.driver.clone();
        let page_first = driver.informer().history().iter().next().map(|e| e.at);
        let span = record_span(
            serve.as_ref(),
            (&resource, None),
            (from, to),
            page_first,
            crate::transport::now(),
        );
        let (record, note) = match span {
            None => (None, None),
            Some(span) => {
                let answer = crate::transport::serve_history::get(&span.path).await;
                let answer = answer.as_ref().ok().map(|a| (a.status, a.body.as_slice()));
                match record_of_answer(answer) {
                    Ok(record) => (record, None),
                    Err(why) => (None, Some(why)),
                }
            }
        };
        let text = crate::api::recording::export_with_record(
            driver.informer().history(),
            record.as_ref(),
            from,
            to,
        );
        Some((text, note))
    }

    /// Another cluster (`identity`) answers behind `cluster` (not the
    /// default one): every informer of it stops (unless the page's store
    /// of it noticed first and they stopped then), with the object view's
    /// reads, so nothing the page held of the one before is shown as the
    /// new one's.
    pub fn forget_cluster(&self, cluster: &str, identity: &str) {
        self.kept
            .borrow_mut()
            .start_cluster_anew(&Some(cluster.to_string()), identity);
        self.panel.borrow_mut().stop();
        (self.on_change)();
    }

    /// Stops the kept informer `id`; its lane name when it was kept.
    pub fn stop_kept(&self, id: u64) -> Option<String> {
        let label = self
            .kept
            .borrow()
            .get(id)
            .map(|source| source.label.clone());
        if self.kept.borrow_mut().stop(id) {
            (self.on_change)();
            label
        } else {
            None
        }
    }

    /// New retention limits for every informer, saved for the next load
    /// (`Err` when they apply but could not be saved).
    pub fn set_retention(&self, config: HistoryConfig) -> Result<(), String> {
        self.kept.borrow_mut().set_retention(config.clone());
        if let Some(live) = self.view.borrow().as_ref() {
            live.set_replay_retention(&config);
        }
        (self.on_change)();
        kept_informers::save_retention(&config)
    }

    /// How many resources are kept live at most, saved for the next load.
    pub fn set_capacity(&self, capacity: usize) -> Result<(), String> {
        let saved = self.kept.borrow_mut().set_capacity(capacity);
        (self.on_change)();
        saved
    }

    /// Keeps every resource discovery found in `cluster` live (raising the
    /// capacity).
    pub fn keep_everything(&self, cluster: Option<&String>, discovered: &[ApiResource]) {
        let mut kept = self.kept.borrow_mut();
        let wanted = kept.len() + discovered.len();
        if kept.capacity() < wanted {
            // Saving may fail (no localStorage): it applies all the same.
            let _ = kept.set_capacity(wanted);
        }
        for resource in discovered {
            let route = Route::new(&resource.group, &resource.version, &resource.plural)
                .in_cluster(cluster.cloned());
            kept.keep(
                &route,
                random_seed(),
                self.on_change.clone(),
                Some(resource.namespaced),
            );
        }
        drop(kept);
        (self.on_change)();
    }

    /// What the object view shows for `key` of the informer `source`.
    /// With its events, related objects and story (see `object_panel`),
    /// and the versions serve recorded before the page's own when `serve`
    /// says it keeps a history.
    pub fn object(
        &self,
        (source, key, history_shown): (u64, &str, usize),
        serve: Option<&ServeHistory>,
        now_unix: i64,
        chart_range: &dyn Fn(Millis) -> (Millis, Millis),
    ) -> Option<ObjectDetails> {
        let view = self.view.borrow();
        let live = view.as_ref()?;
        let kept = self.kept.borrow();
        let driver = live.driver_for(source, &kept)?;
        let now = crate::transport::now();
        let route = kept.get(source).map(|s| s.route.clone());
        let mut panel = self.panel.borrow_mut();
        panel.show_versions(history_shown);
        let mut details = panel.details(&driver, key, route.as_ref(), serve, &self.on_change, now);
        if details.pending_versions > 0 {
            (self.on_change)(); // the rest of its versions next frame
        }
        panel.fill(
            &mut details,
            source,
            &driver,
            &kept,
            &self.on_change,
            random_seed(),
            serve,
            now,
            now_unix,
        );
        // The object's cluster's browser database.
        let cluster = route.as_ref().and_then(|r| r.cluster.as_deref());
        let store = self.stores.usage_store(cluster);
        panel.usage(
            &mut details,
            &driver,
            route.as_ref(),
            (chart_range(now), store),
            serve,
            &self.on_change,
        );
        if let Some(cluster) = route.as_ref().and_then(|r| r.cluster.as_deref()) {
            details.links_in_cluster(cluster);
        }
        Some(details)
    }

    /// No object view is open: what the last one read for its relatives
    /// stops (see `object_panel`).
    pub fn object_closed(&self) {
        self.panel.borrow_mut().release_related();
    }

    /// The address of object `key` of kept informer `source`.
    pub fn object_route(&self, source: u64, key: &str) -> Option<ObjectRoute> {
        let kept = self.kept.borrow();
        let route = &kept.get(source)?.route;
        Some(ObjectRoute::in_table(route, key))
    }

    /// The kept informer on screen.
    pub fn shown_source(&self) -> Option<u64> {
        self.view.borrow().as_ref().map(|live| live.source_id)
    }

    /// A kept view of the object `object`'s resource in its cluster that
    /// holds it (in its store or its history), the one on screen first.
    pub fn view_holding(&self, object: &ObjectRoute) -> Option<Route> {
        let key = object.key();
        let key = key.as_str();
        let shown = self.shown_source();
        let kept = self.kept.borrow();
        let mut candidates = kept.by_age();
        compact_sort::sort_by_key(&mut candidates, |(id, _)| Some(*id) != shown);
        candidates.into_iter().find_map(|(_, source)| {
            let route = &source.route;
            let informer = source.driver.informer();
            let holds = informer.store().get_by_key(key).is_some()
                || informer.history().versions(key).next().is_some();
            let same = route.cluster == object.cluster
                && route.group == object.group
                && route.resource == object.resource;
            (same && holds).then(|| route.clone())
        })
    }
}

/// The browser's clock: its offset from UTC now (for the clock times the
/// models write).
pub fn wall_clock() -> crate::model::first_seen::WallClock {
    let minutes_behind = js_sys::Date::new_0().get_timezone_offset();
    crate::model::first_seen::WallClock {
        utc_offset_secs: -(minutes_behind as i64) * 60,
    }
}

/// `GET path` on serve (a history route) read up to `limit` bytes, handed
/// to `apply` as its answer, a body over the bound, or no answer.
async fn read_record_bounded(
    path: &str,
    limit: usize,
    apply: impl FnOnce(crate::app::object_reach::RecordAnswer<'_>),
) {
    use crate::app::object_reach::RecordAnswer;
    use crate::transport::serve_history::{get_at_most, Bounded};
    let read = get_at_most(path, limit).await;
    apply(match &read {
        Ok(Bounded::Whole(answer)) => {
            RecordAnswer::Answered(Some((answer.status, answer.body.as_slice())))
        }
        Ok(Bounded::TooLarge) => RecordAnswer::TooLarge,
        Err(_) => RecordAnswer::Answered(None),
    });
}

/// A seed for an informer's jitter (watch timeouts, backoff).
fn random_seed() -> u64 {
    (js_sys::Math::random() * 9.0e15) as u64
}
