//! History that survives a reload: the informers service's side
//! of the browser's database. At load it reads what is stored, keeps the
//! stored views again (most recently shown first, up to the capacity) and
//! restores each — the stored table (its face) shows at once, warm, its
//! watch from the stored resourceVersion is sent at once too and catches
//! up while the rest is read (what it brings waits until the restore is
//! done: `Informer::watch_ahead`). Then, in the tab that holds
//! the writer lock, it writes each kept informer's changes about once a
//! second, off the hot path: what to write is decided by the informer
//! core's `StoreWriter` (sans-IO, tested natively); here it is only carried
//! out, a batch at a time, yielding to the event loop every few
//! milliseconds (`TaskBudget`), so no frame waits for the database.
//!
//! Two tabs: one writer, by a Web Lock. The other tab restores what is
//! stored but writes nothing, and says so; when the writer goes away it
//! takes the lock and writes its own state anew.
//!
//! Bad data is dropped, never a crash: a record of another format, a
//! damaged chunk or a missing block drops that view's stored data with a
//! message, and the view starts cold (lists) as if nothing were stored.
//!
//! One database per cluster, and a task per cluster the page shows (the
//! default one's from load, another's from when its first view is shown:
//! `stores`): the task first asks the cluster who it is and opens that
//! cluster's database (`cluster`), restores and writes that cluster's
//! views only; before writing after a broken watch it asks again, and a
//! different cluster behind the same name starts the page anew (the
//! default one) or that cluster's store anew (another), rather than mixing
//! the two.
//!
//! Here: the shared state, the task's loop, the writer's role and the
//! writes; reading the stored views back at load is `restore`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::app::cluster_identity::{changed_words, Recheck};
use crate::informer::persist::{StoreWriter, StoredMeta, WriteFailure};
use crate::informer::Millis;
use crate::transport::database::{self, Database, DbError};
use crate::transport::slicing::TaskBudget;
use crate::transport::timer::sleep_ms;
use crate::transport::Driver;

use super::kept_informers::KeptInformers;

mod cluster;
mod restore;
mod stores;
pub use cluster::{ClusterSummary, OtherCluster};
use restore::{begin_waiting, keep_stored, next_to_restore, read_metas, restore};
pub use stores::Stores;

/// How often the writer looks for changes to write.
const FLUSH_EVERY_MS: Millis = 1_000;
/// Notices kept for the settings at most.
const MAX_NOTICES: usize = 8;

/// Which tab writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The database is being opened.
    Opening,
    /// This tab writes (it holds the lock, or the browser has no locks).
    Writer,
    /// Another tab writes; this one only restored what was stored.
    Reader,
    /// Nothing is stored (no database, or the user turned it off).
    Off,
}

/// What the settings show of what is stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredSummary {
    /// Per stored view, what is stored.
    pub items: Vec<StoredView>,
    /// The state in words: who writes, or why nothing is stored.
    pub state: String,
    /// What the user should know (dropped data, a full quota), newest last.
    pub notices: Vec<String>,
    /// The browser's estimate: (bytes used by the page's origin, quota).
    pub usage: Option<(f64, f64)>,
    /// The cluster whose history is stored, once known.
    pub cluster: Option<ClusterSummary>,
    /// The other clusters this browser stores history of.
    pub others: Vec<OtherCluster>,
    /// Each other cluster of serve's whose views this page stores, with
    /// what it stores (`Stores::summary`).
    pub served: Vec<ServedStore>,
}

/// Another of serve's clusters whose views this page stores.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedStore {
    pub cluster: ClusterSummary,
    /// Who stores it, in words (as [`StoredSummary::state`]).
    pub state: String,
    pub items: Vec<StoredView>,
}

/// What is stored for one kept view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredView {
    /// Its lane name.
    pub label: String,
    /// Objects in its base's snapshot.
    pub objects: u64,
    pub deltas: u64,
    pub bytes: u64,
}

/// The persistence state of one cluster's database, shared by the service
/// and its background task.
pub struct Persistence {
    /// serve's name of the cluster whose views it stores (`None`: the
    /// default one).
    of: Option<String>,
    db: Option<Database>,
    role: Role,
    /// Why nothing is stored, when `role` is `Off`.
    off_reason: String,
    /// What was stored when the page loaded, by stored key.
    stored_at_load: HashMap<String, StoredMeta>,
    /// The writer of each kept informer (by kept id) in the writer tab.
    writers: HashMap<u64, StoreWriter>,
    /// Kept ids whose restore is under way or done (never restored twice).
    restoring: HashMap<u64, bool>,
    /// The writer tab took over from another: its first writes replace
    /// whatever is stored.
    took_over: bool,
    notices: Vec<String>,
    usage: Option<(f64, f64)>,
    cluster: Option<ClusterSummary>,
    others: Vec<OtherCluster>,
    /// What the page says when the cluster behind its name changed.
    cluster_changed: Option<String>,
}

impl Persistence {
    /// The store of serve's cluster `of` (`None`: the default one).
    pub fn new(of: Option<String>) -> Persistence {
        Persistence {
            of,
            db: None,
            role: Role::Opening,
            off_reason: String::new(),
            stored_at_load: HashMap::new(),
            writers: HashMap::new(),
            restoring: HashMap::new(),
            took_over: false,
            notices: Vec::new(),
            usage: None,
            cluster: None,
            others: Vec::new(),
            cluster_changed: None,
        }
    }

    /// "the cluster behind NAME changed …", after a page started anew on
    /// another cluster.
    pub fn cluster_changed(&self) -> Option<String> {
        self.cluster_changed.clone()
    }

    fn notice(&mut self, text: String) {
        web_sys::console::warn_1(&text.clone().into());
        self.notices.push(text);
        if self.notices.len() > MAX_NOTICES {
            self.notices.remove(0);
        }
    }

    /// What the settings show.
    pub fn summary(&self, kept: &KeptInformers) -> StoredSummary {
        let state = match self.role {
            Role::Opening => "opening the browser's database…".to_string(),
            Role::Writer => "this tab stores the kept views' history in the browser's database".to_string(),
            Role::Reader => "another tab of deltascope is storing history; this tab restored it but stores nothing until that tab closes".to_string(),
            Role::Off => format!("nothing is stored: {}", self.off_reason),
        };
        let items = kept
            .iter()
            .filter(|(_, source)| source.route.cluster == self.of)
            .filter_map(|(id, source)| {
                let meta = self
                    .writers
                    .get(&id)
                    .and_then(StoreWriter::stored)
                    .or_else(|| self.stored_at_load.get(&source.stored_key()))?;
                Some(StoredView {
                    label: source.label.clone(),
                    objects: meta.base_objects,
                    deltas: meta.stored_deltas(),
                    bytes: meta.stored_bytes(),
                })
            })
            .collect();
        StoredSummary {
            items,
            state,
            notices: self.notices.clone(),
            usage: self.usage,
            cluster: self.cluster.clone(),
            others: self.others.clone(),
            served: Vec::new(),
        }
    }
}

/// Where the objects' usage series are kept (`crate::transport::stored_usage`),
/// and whether this tab writes them (the writer tab only, as for the views).
#[derive(Clone)]
pub struct UsageStore {
    pub db: Database,
    pub writes: bool,
}

impl Persistence {
    /// The usage series' store, once the database is open and storing is on.
    pub fn usage_store(&self) -> Option<UsageStore> {
        let writes = match self.role {
            Role::Writer => true,
            Role::Reader => false,
            Role::Opening | Role::Off => return None,
        };
        Some(UsageStore {
            db: self.db.clone()?,
            writes,
        })
    }
}

/// Shared handles the background task works with.
#[derive(Clone)]
pub struct Handles {
    pub kept: Rc<RefCell<KeptInformers>>,
    pub persistence: Rc<RefCell<Persistence>>,
    pub on_change: Rc<dyn Fn()>,
    /// serve's name of the cluster whose views it stores (`None`: the
    /// default one).
    pub cluster: Option<String>,
    /// Grows whenever a store opens or ends its database: the default
    /// one's task lists the other databases again.
    pub stores_changed: Rc<std::cell::Cell<u64>>,
}

impl Handles {
    fn stores_changed(&self) {
        self.stores_changed.set(self.stores_changed.get() + 1);
    }

    /// Whether `route` is a view of this store's cluster.
    fn ours(&self, route: &crate::address::route::Route) -> bool {
        route.cluster == self.cluster
    }
}

/// How a store's task ended.
enum StoreEnd {
    /// Nothing is stored for its cluster this load (or the page starts anew).
    Off,
    /// Another cluster (`identity`) answers behind the name of one other
    /// than the default: a store of it starts, on its own database.
    ClusterChanged { identity: String },
}

/// Opens the database of the handles' cluster, restores its stored views,
/// then writes changes for as long as the page lives; another cluster
/// behind the name (not the default one's) gets a store of its own from
/// then on. New kept informers of the cluster wait (`held`) until it is
/// known what is stored.
pub async fn run(handles: Handles) {
    let hidden = flush_when_hidden();
    while let StoreEnd::ClusterChanged { identity } = run_store(&handles, &hidden).await {
        // The old cluster's views go (the app state opens the one shown
        // again): none of them is written into the new cluster's database.
        // When serve's list of clusters told the app first, they went
        // then, and the views open since are the new cluster's.
        handles
            .kept
            .borrow_mut()
            .start_cluster_anew(&handles.cluster, &identity);
        // the app state opens the view shown again once serve's list says so
        crate::service::served_clusters::ask_again_soon();
        *handles.persistence.borrow_mut() = Persistence::new(handles.cluster.clone());
        (handles.on_change)();
    }
}

async fn run_store(handles: &Handles, hidden: &std::cell::Cell<bool>) -> StoreEnd {
    handles
        .kept
        .borrow_mut()
        .held
        .insert(handles.cluster.clone());
    let epoch = handles.kept.borrow().connection_epoch(&handles.cluster);
    let opened = match cluster::open_for_cluster(epoch, handles.cluster.as_deref()).await {
        Ok(opened) => opened,
        Err(reason) => {
            turn_off(handles, reason);
            return StoreEnd::Off;
        }
    };
    let db = opened.db;
    let mut confirmation = opened.confirmation;
    let metas = match db.metas().await {
        Ok(metas) => metas,
        Err(error) => {
            turn_off(handles, error.to_string());
            return StoreEnd::Off;
        }
    };
    {
        let mut persistence = handles.persistence.borrow_mut();
        if let Some(before) = &opened.changed_from {
            let words = changed_words(
                opened.cluster.name.as_deref(),
                before,
                &opened.cluster.identity,
            );
            persistence.notice(words.clone());
            // another cluster's change is the app state's to say
            if handles.cluster.is_none() {
                persistence.cluster_changed = Some(words);
            }
        }
        if let Some(why) = &opened.cluster.unidentified {
            persistence.notice(format!(
                "this cluster does not say who it is ({why}): its history is stored as an unidentified cluster's, not told apart from another such cluster at this address"
            ));
        }
        persistence.cluster = Some(opened.cluster);
        persistence.db = Some(db.clone());
        handles.stores_changed();
        let role_handles = handles.clone();
        let busy_handles = handles.clone();
        let locked = database::request_writer_lock(
            db.name(),
            move || become_writer(&role_handles),
            move || busy_handles.persistence.borrow_mut().role = Role::Reader,
        );
        if locked.is_err() {
            // No Web Locks: write, as the only tab would.
            persistence.role = Role::Writer;
        }
    }
    let stored = read_metas(handles, metas);
    keep_stored(handles, &stored);
    {
        let mut kept = handles.kept.borrow_mut();
        kept.held.remove(&handles.cluster);
        kept.stored.extend(stored.iter().filter_map(|m| {
            let route = crate::address::route::Route::parse(&m.resource).ok()?;
            Some(route.in_cluster(handles.cluster.clone()).to_string())
        }));
    }
    (handles.on_change)();
    // Restore the stored views, the one on screen first; start the rest.
    loop {
        let next = next_to_restore(handles);
        let Some((id, driver, meta)) = next else {
            break;
        };
        restore(handles, &db, id, &driver, meta).await;
    }
    handles
        .kept
        .borrow_mut()
        .stored
        .retain(|key| crate::address::route::Route::parse(key).map_or(true, |r| !handles.ours(&r)));
    begin_waiting(handles);
    let mut listed = None;
    loop {
        // The default cluster's store lists the databases no store has open
        // (the settings' other clusters) now, and when a store opened or
        // ended one.
        let changed = handles.stores_changed.get();
        if handles.cluster.is_none() && listed != Some(changed) {
            listed = Some(changed);
            list_other_clusters(handles, db.name()).await;
        }
        // A second between flushes, cut short when the page is hidden
        // (closed, reloaded, another tab shown): then everything pending
        // is written at once.
        let mut waited = 0;
        while waited < FLUSH_EVERY_MS && !hidden.get() {
            sleep_ms(100).await;
            waited += 100;
        }
        let force = hidden.replace(false);
        begin_waiting(handles);
        if let Some(confirmation) = confirmation.as_mut() {
            let epoch = handles.kept.borrow().connection_epoch(&handles.cluster);
            if confirmation.due(epoch) {
                let asked = handles.cluster.as_deref();
                match cluster::recheck(confirmation, epoch, asked).await {
                    Recheck::Same => {}
                    // the cluster does not answer: nothing is written until it does
                    Recheck::Unsure => continue,
                    Recheck::Changed { to, .. } if asked.is_some() => {
                        // its views start anew (the app state says so), in a
                        // store of the new cluster (`run`)
                        turn_off(handles, "another cluster answers behind this name".into());
                        db.close();
                        handles.stores_changed();
                        return StoreEnd::ClusterChanged { identity: to };
                    }
                    Recheck::Changed { .. } => {
                        turn_off(handles, "the cluster behind this page changed".into());
                        cluster::start_anew();
                        return StoreEnd::Off;
                    }
                }
            }
        }
        flush(handles, &db, force).await;
    }
}

/// Reads which other clusters this browser stores history of, for the
/// settings.
async fn list_other_clusters(handles: &Handles, ours: &str) {
    let others = cluster::other_clusters(ours).await;
    handles.persistence.borrow_mut().others = others;
    (handles.on_change)();
}

/// Forgets another cluster's stored history (the settings' button).
pub async fn forget_other_cluster(handles: Handles, database: String) {
    let result = cluster::forget_other(&database).await;
    let ours = {
        let mut persistence = handles.persistence.borrow_mut();
        if let Err(error) = result {
            persistence.notice(format!("could not forget {database}: {error}"));
        }
        persistence.db.as_ref().map(|db| db.name().to_string())
    };
    if let Some(ours) = ours {
        list_other_clusters(&handles, &ours).await;
    }
}

/// Set when the page becomes hidden (its `visibilitychange`).
fn flush_when_hidden() -> Rc<std::cell::Cell<bool>> {
    let hidden = Rc::new(std::cell::Cell::new(false));
    let flag = hidden.clone();
    let listener = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
        let is_hidden = web_sys::window()
            .and_then(|w| w.document())
            .is_some_and(|d| d.hidden());
        if is_hidden {
            flag.set(true);
        }
    });
    if let Some(document) = web_sys::window().and_then(|w| w.document()) {
        use wasm_bindgen::JsCast;
        let _ = document.add_event_listener_with_callback(
            "visibilitychange",
            listener.as_ref().unchecked_ref(),
        );
    }
    // Lives as long as the page.
    listener.forget();
    hidden
}

fn turn_off(handles: &Handles, reason: String) {
    {
        let mut persistence = handles.persistence.borrow_mut();
        persistence.role = Role::Off;
        persistence.off_reason = reason.clone();
        persistence.notice(format!("history is not stored: {reason}"));
    }
    handles.kept.borrow_mut().held.remove(&handles.cluster);
    begin_waiting(handles);
    (handles.on_change)();
}

/// This tab holds the writer lock (at once, or after the writer tab went).
fn become_writer(handles: &Handles) {
    let mut persistence = handles.persistence.borrow_mut();
    let took_over = persistence.role == Role::Reader;
    persistence.role = Role::Writer;
    if took_over {
        persistence.took_over = true;
        persistence.writers.clear();
        persistence
            .notice("the tab that was storing history closed: this tab stores it now".into());
    }
    drop(persistence);
    (handles.on_change)();
}

/// Writes what is due for every kept informer (the writer tab only; with
/// `force`, everything pending), and drops what is stored for views no
/// longer kept.
async fn flush(handles: &Handles, db: &Database, force: bool) {
    if handles.persistence.borrow().role != Role::Writer {
        return;
    }
    let dropped: Vec<String> = {
        let mut kept = handles.kept.borrow_mut();
        let (ours, others): (Vec<_>, Vec<_>) = std::mem::take(&mut kept.dropped)
            .into_iter()
            .partition(|route| handles.ours(route));
        kept.dropped = others;
        ours.iter()
            .map(|r| r.in_cluster(None).to_string())
            .collect()
    };
    for key in dropped {
        let _ = db.forget(&key).await;
    }
    let mut budget = TaskBudget::default();
    for written in to_write(handles) {
        let Some(mut writer) = handles.persistence.borrow_mut().writers.remove(&written.id) else {
            continue;
        };
        write(db, &written, &mut writer, force, &mut budget).await;
        let mut persistence = handles.persistence.borrow_mut();
        if let Some(notice) = writer.take_notice() {
            persistence.notice(notice);
        }
        if written.driver.is_stopped() {
            continue;
        }
        persistence.writers.insert(written.id, writer);
    }
    let usage = database::estimate().await;
    handles.persistence.borrow_mut().usage = usage;
}

/// A kept informer whose changes are written.
struct Written {
    id: u64,
    driver: Driver,
    /// Its stored key.
    key: String,
    shown_at: Millis,
}

/// The kept informers to write (running ones), each given a writer: one
/// that replaces what is stored when this tab took over or something was
/// stored for it at load. Writers of informers no longer kept go.
fn to_write(handles: &Handles) -> Vec<Written> {
    let written: Vec<Written> = handles
        .kept
        .borrow()
        .iter()
        // The database is this cluster's (`cluster`).
        .filter(|(_, source)| handles.ours(&source.route))
        .filter(|(_, source)| !source.driver.is_waiting() && !source.driver.is_stopped())
        .map(|(id, source)| Written {
            id,
            driver: source.driver.clone(),
            key: source.stored_key(),
            shown_at: source.shown_at,
        })
        .collect();
    let mut persistence = handles.persistence.borrow_mut();
    let kept_ids: Vec<u64> = written.iter().map(|w| w.id).collect();
    persistence.writers.retain(|id, _| kept_ids.contains(id));
    let took_over = persistence.took_over;
    for w in &written {
        let replace_all = took_over || persistence.stored_at_load.contains_key(&w.key);
        persistence
            .writers
            .entry(w.id)
            .or_insert_with(|| StoreWriter::new(w.key.clone(), replace_all));
    }
    written
}

/// Writes the batches `writer` has due for `written` (all pending with
/// `force`), a task each, then releases what an ended base held.
async fn write(
    db: &Database,
    written: &Written,
    writer: &mut StoreWriter,
    force: bool,
    budget: &mut TaskBudget,
) {
    loop {
        let now = crate::transport::now();
        let batch = if force {
            writer.poll_now(&written.driver.informer(), now, written.shown_at)
        } else {
            writer.poll(&written.driver.informer(), now, written.shown_at)
        };
        let Some(batch) = batch else {
            if writer.encoding() {
                // a base's log is being encoded a step per task
                budget.spend().await;
                continue;
            }
            break;
        };
        // the batch was encoded in this task: its puts (a copy and a
        // structured clone of up to 2 MiB each) go in the next, or a
        // relist's log batches were tasks of both
        budget.spend().await;
        let result = db
            .write(&written.key, &batch)
            .await
            .map_err(|error| match error {
                DbError::Quota => WriteFailure::Quota,
                other => WriteFailure::Other(other.to_string()),
            });
        writer.done(result);
        budget.spend().await;
    }
    // What an ended base held goes a slice per task.
    while writer.release_step() {
        budget.spend().await;
    }
}

/// Forgets everything stored (the settings' button): the writers start
/// anew, storing history from now on.
pub async fn forget_all(handles: Handles) {
    let db = handles.persistence.borrow().db.clone();
    let Some(db) = db else {
        return;
    };
    let result = db.forget_all().await;
    let mut persistence = handles.persistence.borrow_mut();
    match result {
        Ok(()) => {
            let kept = handles.kept.borrow();
            persistence.writers = kept
                .iter()
                .filter(|(_, source)| handles.ours(&source.route))
                .map(|(id, source)| {
                    let from = source.driver.informer().history().next_seq();
                    (
                        id,
                        StoreWriter::new(source.stored_key(), true).storing_from(from),
                    )
                })
                .collect();
            persistence.stored_at_load.clear();
            persistence
                .notice("stored history forgotten: only changes from now on are stored".into());
        }
        Err(error) => persistence.notice(format!("could not forget the stored history: {error}")),
    }
    drop(persistence);
    (handles.on_change)();
}
