//! The informers the page keeps live: one per resource view the user opened
//! (the [`KEPT_CAPACITY`](crate::app::kept_set::KEPT_CAPACITY) most recently shown by default, settable and saved
//! in `localStorage`; see [`crate::app::kept_set`]), each
//! with its own list/watch, store and history, so switching back to a
//! resource is instant and the timeline draws a lane per resource. An
//! evicted or user-stopped informer is stopped through its `Driver`, which
//! aborts its requests; so is one that never synced and is failing when the
//! user leaves its view. Each informer's history is bounded by the retention
//! settings, so the page holds at most the capacity times those limits in
//! history; the stores hold each kept resource's current objects, bounded by
//! what the cluster serves (about 0.6× their JSON, see BENCHMARKS.md).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::address::route::Route;
use crate::app::kept_set::{saved_capacity, KeptSet, Spans, MAX_KEPT_CAPACITY};
use crate::informer::{
    HistoryConfig, InformerConfig, Millis, Phase, ResourceRef, DEFAULT_CHANGE_LOG_CAPACITY,
};
use crate::transport::Driver;

/// `localStorage` key of the retention settings.
const RETENTION_KEY: &str = "deltascope.retention";

/// `localStorage` key of how many resources are kept live at most.
const CAPACITY_KEY: &str = "deltascope.keptCapacity";

/// How long a re-sent watch may wait for its response before the page
/// counts as not watching (blind).
pub const WATCH_OPEN_GRACE_MS: Millis = 2_000;

/// One informer and what the timeline needs to know about it.
pub struct Source {
    pub driver: Driver,
    /// The view it was opened for (its data key).
    pub route: Route,
    /// Its lane's name.
    pub label: String,
    pub spans: Spans,
    /// When its view was last shown (the page's clock): kept views come
    /// back after a reload most recently shown first.
    pub shown_at: Millis,
}

impl Source {
    pub fn new(driver: Driver, route: Route) -> Source {
        Source {
            label: route.lane_label(),
            driver,
            route,
            spans: Spans::default(),
            shown_at: crate::transport::now(),
        }
    }

    /// What it is stored under in its cluster's browser database: its
    /// route (the data key) as an address, without the cluster (the
    /// database is that cluster's, whatever serve calls it).
    pub fn stored_key(&self) -> String {
        self.route.in_cluster(None).to_string()
    }

    /// Takes in the informer's state at `now`; true when its blind spans or
    /// relists changed. It watches once its watch is open: a watch sent but
    /// not answered (waiting for the channel to reconnect) counts only for
    /// [`WATCH_OPEN_GRACE_MS`] after a healthy one, so a routine re-watch is
    /// no gap but a page whose server is gone is blind, and says so.
    pub fn observe(&mut self, now: Millis) -> bool {
        let (watching, synced, relists) = {
            let informer = self.driver.informer();
            let pending_briefly = informer
                .watch_pending_since()
                .is_some_and(|sent| now.saturating_sub(sent) < WATCH_OPEN_GRACE_MS);
            let open = informer.is_watch_open() || (pending_briefly && !self.spans.is_blind());
            (
                matches!(informer.status().phase, Phase::Watching) && open,
                informer.has_synced(),
                informer.status().relists,
            )
        };
        self.spans.observe(now, watching, synced, relists)
    }
}

/// The kept informers and the retention limits they all apply.
pub struct KeptInformers {
    set: KeptSet<Route, Source>,
    retention: HistoryConfig,
    /// Changes when an informer starts or stops (the lanes change).
    generation: u64,
    /// The clusters (`None`: the default one) whose new informers wait to
    /// be restored from their browser database or started (see
    /// `persistence`) while it is being read; and the views stored in one
    /// (their routes as addresses), which wait until restored.
    pub held: HashSet<Option<String>>,
    pub stored: HashSet<String>,
    /// Views the user stopped or that were evicted: what is stored for
    /// them goes too (by their cluster's database).
    pub dropped: Vec<Route>,
    /// Per cluster, what informers that went counted in its epoch (each
    /// one's broken watches, and one for its going), so that the epoch
    /// never returns to a value it had.
    retired: HashMap<Option<String>, u64>,
    /// Per cluster, the identity its views last started anew for: the
    /// page's store and serve's list of clusters both notice another
    /// cluster behind a name, in either order, and only the first stops
    /// its views (the second would stop the new cluster's, reopened).
    started_anew_for: HashMap<Option<String>, String>,
}

impl KeptInformers {
    pub fn new(retention: HistoryConfig) -> KeptInformers {
        KeptInformers {
            set: KeptSet::new(load_capacity()),
            retention,
            generation: 0,
            held: HashSet::new(),
            stored: HashSet::new(),
            dropped: Vec::new(),
            retired: HashMap::new(),
            started_anew_for: HashMap::new(),
        }
    }

    pub fn retention(&self) -> &HistoryConfig {
        &self.retention
    }

    /// The informer for `route`: the kept one, or a new one (the least
    /// recently shown is stopped if the set is full). Its id and driver.
    pub fn open(
        &mut self,
        route: &Route,
        seed: u64,
        on_change: Rc<dyn Fn()>,
        namespaced: Option<bool>,
    ) -> (u64, Driver) {
        let key = route.data_key();
        let retention = self.retention.clone();
        let wait = self.holds(&key);
        let opened = self.set.open(key.clone(), |_| {
            let mut config = informer_config(&key, seed, namespaced);
            config.history = retention;
            Source::new(new_driver(config, on_change, wait), key.clone())
        });
        for evicted in &opened.evicted {
            self.retire(evicted);
        }
        if opened.started {
            self.generation += 1;
        }
        // Only the informer on screen keeps a change log (its rows follow
        // it); the others' tables are rebuilt from their stores when shown.
        for kept in self.set.iter() {
            let capacity = if kept.id == opened.id {
                DEFAULT_CHANGE_LOG_CAPACITY
            } else {
                0
            };
            kept.value
                .driver
                .with_informer(|informer| informer.set_change_log_capacity(capacity));
        }
        let driver = match self.set.get_mut(opened.id) {
            Some(kept) => {
                kept.value.shown_at = crate::transport::now();
                kept.value.driver.clone()
            }
            None => unreachable!("the resource just opened is kept"),
        };
        driver.mark_shown();
        (opened.id, driver)
    }

    /// Keeps `route` live without showing it (for "keep everything live");
    /// false when it is kept already or the set is full.
    pub fn keep(
        &mut self,
        route: &Route,
        seed: u64,
        on_change: Rc<dyn Fn()>,
        namespaced: Option<bool>,
    ) -> bool {
        let key = route.data_key();
        let retention = self.retention.clone();
        let wait = self.holds(&key);
        let kept = self.set.keep(key.clone(), |_| {
            let mut config = informer_config(&key, seed, namespaced);
            config.history = retention;
            let driver = new_driver(config, on_change, wait);
            // Not on screen: no change log (see `open`).
            driver.with_informer(|informer| informer.set_change_log_capacity(0));
            Source::new(driver, key.clone())
        });
        if kept {
            self.generation += 1;
        }
        kept
    }

    /// Keeps at most `capacity` live from now on (the least recently shown
    /// beyond it stop), and saves it for the next page load.
    pub fn set_capacity(&mut self, capacity: usize) -> Result<(), String> {
        let capacity = capacity.clamp(1, MAX_KEPT_CAPACITY);
        let evicted = self.set.set_capacity(capacity);
        if !evicted.is_empty() {
            self.generation += 1;
        }
        for source in evicted {
            self.retire(&source);
        }
        let storage = local_storage().ok_or(
            "this browser gives the page no localStorage; the number applies until reload",
        )?;
        storage
            .set_item(CAPACITY_KEY, &capacity.to_string())
            .map_err(|_| {
                "the browser refused to save the number; it applies until reload".to_string()
            })
    }

    /// A kept informer goes: it stops, what is stored for it goes too, and
    /// its count of broken watches stays in its cluster's epoch.
    fn retire(&mut self, source: &Source) {
        source.driver.stop();
        self.dropped.push(source.route.clone());
        *self
            .retired
            .entry(source.route.cluster.clone())
            .or_default() += watch_breaks(source) + 1;
    }

    /// Stops every informer of serve's cluster `cluster` (another cluster
    /// answers behind its name); what its database stores of them is kept,
    /// the old cluster's.
    fn stop_cluster(&mut self, cluster: &Option<String>) {
        let ids: Vec<u64> = self
            .iter()
            .filter(|(_, source)| source.route.cluster == *cluster)
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            self.stop(id);
        }
        self.dropped.retain(|route| route.cluster != *cluster);
    }

    /// The cluster `identity` answers behind serve's cluster `cluster` now,
    /// where another did: every informer of it stops, once per such
    /// change: not again when they already did for `identity`.
    pub fn start_cluster_anew(&mut self, cluster: &Option<String>, identity: &str) {
        if self.started_anew_for.get(cluster).map(String::as_str) != Some(identity) {
            self.started_anew_for
                .insert(cluster.clone(), identity.to_string());
            self.stop_cluster(cluster);
        }
    }

    /// Stops the informer `id` (its requests are aborted) and forgets it.
    pub fn stop(&mut self, id: u64) -> bool {
        match self.set.remove(id) {
            Some(source) => {
                self.retire(&source);
                self.generation += 1;
                true
            }
            None => false,
        }
    }

    /// Stops `id` if it never synced and is failing (a resource the user
    /// may not list, an upstream that is gone): leaving its view should not
    /// leave it retrying in the background with no history worth keeping.
    pub fn stop_if_failing(&mut self, id: u64) -> bool {
        let failing = self.get(id).is_some_and(|source| {
            let informer = source.driver.informer();
            !informer.has_synced() && informer.status().phase.is_failing()
        });
        failing && self.stop(id)
    }

    pub fn stop_all(&mut self) {
        for source in self.set.drain() {
            source.driver.stop();
        }
        self.generation += 1;
    }

    /// New retention limits for every kept informer (and those started
    /// later); lower limits evict at once.
    pub fn set_retention(&mut self, config: HistoryConfig) {
        for kept in self.set.iter() {
            kept.value
                .driver
                .with_informer(|informer| informer.set_history_config(config.clone()));
        }
        self.retention = config;
        self.generation += 1;
    }

    /// Observes every kept informer at `now` (blind spans, relists). True
    /// when spans changed.
    pub fn observe(&mut self, now: Millis) -> bool {
        let mut changed = false;
        for kept in self.set.iter_mut() {
            changed |= kept.value.observe(now);
        }
        changed
    }

    pub fn get(&self, id: u64) -> Option<&Source> {
        self.set.get(id).map(|kept| &kept.value)
    }

    /// Every kept informer with its id, most recently shown first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Source)> {
        self.set.iter().map(|kept| (kept.id, &kept.value))
    }

    /// A new informer for `key` waits rather than lists (see `held`).
    fn holds(&self, key: &Route) -> bool {
        self.held.contains(&key.cluster) || self.stored.contains(&key.to_string())
    }

    /// In the order they were first opened (the timeline's lanes).
    pub fn by_age(&self) -> Vec<(u64, &Source)> {
        self.set
            .by_age()
            .into_iter()
            .map(|kept| (kept.id, &kept.value))
            .collect()
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Watches broken so far by serve's cluster `cluster`'s kept informers
    /// together (their relists and re-watches, and those of informers that
    /// went): when it moves, the cluster may have changed behind its name
    /// (`crate::app::cluster_identity::Confirmation`).
    pub fn connection_epoch(&self, cluster: &Option<String>) -> u64 {
        let live: u64 = self
            .iter()
            .filter(|(_, source)| source.route.cluster == *cluster)
            .map(|(_, source)| watch_breaks(source))
            .sum();
        live + self.retired.get(cluster).copied().unwrap_or(0)
    }

    pub fn capacity(&self) -> usize {
        self.set.capacity()
    }

    /// Resources kept live now.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

/// A kept informer's relists and re-watches so far.
fn watch_breaks(source: &Source) -> u64 {
    let informer = source.driver.informer();
    let status = informer.status();
    u64::from(status.relists) + u64::from(status.watch_restarts)
}

/// An informer started now, or waiting to be restored or started.
fn new_driver(config: InformerConfig, on_change: Rc<dyn Fn()>, wait: bool) -> Driver {
    if wait {
        Driver::waiting(config, on_change)
    } else {
        Driver::start(config, on_change)
    }
}

/// The informer a route asks for (server-side tables unless turned off).
/// `namespaced` comes from discovery when it has arrived; otherwise it is
/// guessed from the name.
pub fn informer_config(route: &Route, seed: u64, namespaced: Option<bool>) -> InformerConfig {
    let namespaced = route.namespace.is_some()
        || namespaced.unwrap_or_else(|| !is_cluster_scoped(&route.resource));
    let resource = ResourceRef {
        group: route.group.clone(),
        version: route.version.clone(),
        plural: route.resource.clone(),
        namespaced,
    };
    let mut config = InformerConfig::new(resource).server_table(server_table_wanted());
    config.namespace = route.namespace.clone();
    config.label_selector = route.label_selector.clone();
    config.field_selector = route.field_selector.clone();
    config.api_root = route.api_root();
    config.seed = seed;
    config
}

/// How many resources to keep live: the saved number, or [`KEPT_CAPACITY`](crate::app::kept_set::KEPT_CAPACITY).
fn load_capacity() -> usize {
    saved_capacity(
        local_storage()
            .and_then(|s| s.get_item(CAPACITY_KEY).ok().flatten())
            .as_deref(),
    )
}

/// The page's `localStorage`, when the browser gives it one.
pub(crate) fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// The saved retention limits, or the defaults (with a console note when
/// what was saved is unreadable).
pub fn load_retention() -> HistoryConfig {
    let Some(text) = local_storage().and_then(|s| s.get_item(RETENTION_KEY).ok().flatten()) else {
        return HistoryConfig::default();
    };
    match crate::app::retention::from_storage(&text) {
        Ok(config) => config,
        Err(error) => {
            web_sys::console::warn_1(&error.to_string().into());
            HistoryConfig::default()
        }
    }
}

/// Saves the retention limits for the next page load.
pub fn save_retention(config: &HistoryConfig) -> Result<(), String> {
    let storage = local_storage()
        .ok_or("this browser gives the page no localStorage; the limits apply until reload")?;
    storage
        .set_item(RETENTION_KEY, &crate::app::retention::to_storage(config))
        .map_err(|_| "the browser refused to save the limits (storage full or blocked); they apply until reload".to_string())
}

/// Server-side tables are on unless `localStorage["deltascope.serverTable"]`
/// is `off` (for comparing both modes, and a way out should a server print
/// Tables badly).
fn server_table_wanted() -> bool {
    let setting = local_storage()
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
