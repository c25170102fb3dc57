//! History that survives a reload (issue 24): the informers service's side
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

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::app::route::Route;
use crate::informer::compact_sort;
use crate::informer::persist::{Restorer, StoreWriter, StoredMeta, WriteFailure};
use crate::informer::Millis;
use crate::transport::database::{self, Database, DbError};
use crate::transport::slicing::{next_animation_frame, TaskBudget};
use crate::transport::timer::sleep_ms;
use crate::transport::Driver;

use super::kept_informers::KeptInformers;

/// How often the writer looks for changes to write.
const FLUSH_EVERY_MS: Millis = 1_000;
/// Base chunks read per database request (about 8 MB: the browser hands
/// a result over in one task, ~30 ms for 8 MB at 100k pods).
const CHUNKS_PER_READ: u32 = 4;
/// Faces decoded and put in the store between two looks at the budget.
const FACES_PER_STEP: usize = 1_000;
/// Log blocks read per database request.
const BLOCKS_PER_READ: u32 = 8;
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
    /// Per stored view: (its lane name, objects, deltas, bytes).
    pub items: Vec<(String, u64, u64, u64)>,
    /// The state in words: who writes, or why nothing is stored.
    pub state: String,
    /// What the user should know (dropped data, a full quota), newest last.
    pub notices: Vec<String>,
    /// The browser's estimate: (bytes used by the page's origin, quota).
    pub usage: Option<(f64, f64)>,
}

/// The persistence state shared by the service and its background task.
pub struct Persistence {
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
}

impl Persistence {
    pub fn new() -> Persistence {
        Persistence {
            db: None,
            role: Role::Opening,
            off_reason: String::new(),
            stored_at_load: HashMap::new(),
            writers: HashMap::new(),
            restoring: HashMap::new(),
            took_over: false,
            notices: Vec::new(),
            usage: None,
        }
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
            .filter_map(|(id, source)| {
                let meta = self
                    .writers
                    .get(&id)
                    .and_then(StoreWriter::stored)
                    .or_else(|| self.stored_at_load.get(&source.stored_key()))?;
                Some((
                    source.label.clone(),
                    meta.base_objects,
                    meta.stored_deltas(),
                    meta.stored_bytes(),
                ))
            })
            .collect();
        StoredSummary {
            items,
            state,
            notices: self.notices.clone(),
            usage: self.usage,
        }
    }
}

impl Default for Persistence {
    fn default() -> Self {
        Persistence::new()
    }
}

/// Shared handles the background task works with.
#[derive(Clone)]
pub struct Handles {
    pub kept: Rc<RefCell<KeptInformers>>,
    pub persistence: Rc<RefCell<Persistence>>,
    pub on_change: Rc<dyn Fn()>,
}

/// Opens the database, restores the stored views, then writes changes for
/// as long as the page lives. New kept informers wait (`hold_all`) until
/// it is known what is stored.
pub async fn run(handles: Handles) {
    handles.kept.borrow_mut().hold_all = true;
    let opened = Database::open().await;
    let db = match opened {
        Ok(db) => db,
        Err(error) => {
            turn_off(&handles, error.to_string());
            return;
        }
    };
    let metas = match db.metas().await {
        Ok(metas) => metas,
        Err(error) => {
            turn_off(&handles, error.to_string());
            return;
        }
    };
    {
        let mut persistence = handles.persistence.borrow_mut();
        persistence.db = Some(db.clone());
        let role_handles = handles.clone();
        let busy_handles = handles.clone();
        let locked = database::request_writer_lock(
            move || become_writer(&role_handles),
            move || busy_handles.persistence.borrow_mut().role = Role::Reader,
        );
        if locked.is_err() {
            // No Web Locks: write, as the only tab would.
            persistence.role = Role::Writer;
        }
    }
    let stored = read_metas(&handles, metas);
    keep_stored(&handles, &stored);
    {
        let mut kept = handles.kept.borrow_mut();
        kept.hold_all = false;
        kept.stored = stored.iter().map(|m| m.resource.clone()).collect();
    }
    (handles.on_change)();
    // Restore the stored views, the one on screen first; start the rest.
    loop {
        let next = next_to_restore(&handles);
        let Some((id, driver, meta)) = next else {
            break;
        };
        restore(&handles, &db, id, &driver, meta).await;
    }
    handles.kept.borrow_mut().stored.clear();
    begin_waiting(&handles);
    let hidden = flush_when_hidden();
    loop {
        // A second between flushes, cut short when the page is hidden
        // (closed, reloaded, another tab shown): then everything pending
        // is written at once.
        let mut waited = 0;
        while waited < FLUSH_EVERY_MS && !hidden.get() {
            sleep_ms(100).await;
            waited += 100;
        }
        let force = hidden.replace(false);
        begin_waiting(&handles);
        flush(&handles, &db, force).await;
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
    handles.kept.borrow_mut().hold_all = false;
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

/// The stored meta records that are usable, most recently shown first;
/// the others are reported (and deleted by the writer).
fn read_metas(handles: &Handles, metas: Vec<(String, String)>) -> Vec<StoredMeta> {
    let mut usable = Vec::new();
    let mut persistence = handles.persistence.borrow_mut();
    for (key, text) in metas {
        match Restorer::from_json(&text) {
            Ok(restorer) if restorer.meta().resource == key && Route::parse(&key).is_ok() => {
                usable.push(restorer.meta().clone())
            }
            Ok(_) => persistence.notice(format!(
                "stored data for {key} was dropped: it names another view"
            )),
            Err(error) => persistence.notice(format!("stored data for {key} was dropped: {error}")),
        }
    }
    compact_sort::sort_by_key(&mut usable, |meta| std::cmp::Reverse(meta.shown_at));
    for meta in &usable {
        persistence
            .stored_at_load
            .insert(meta.resource.clone(), meta.clone());
    }
    usable
}

/// Keeps the stored views again, up to the capacity, in the order they
/// were last shown (the view on screen is kept already).
fn keep_stored(handles: &Handles, stored: &[StoredMeta]) {
    let mut kept = handles.kept.borrow_mut();
    kept.hold_all = true;
    for meta in stored {
        let Ok(route) = Route::parse(&meta.resource) else {
            continue;
        };
        let seed = (js_sys::Math::random() * 9.0e15) as u64;
        kept.keep(&route, seed, handles.on_change.clone(), None);
    }
}

/// The next kept informer waiting with stored data: the one shown most
/// recently first.
fn next_to_restore(handles: &Handles) -> Option<(u64, Driver, StoredMeta)> {
    let kept = handles.kept.borrow();
    let mut persistence = handles.persistence.borrow_mut();
    let (id, driver, meta) = kept.iter().find_map(|(id, source)| {
        let meta = persistence.stored_at_load.get(&source.stored_key())?;
        (source.driver.is_waiting() && !persistence.restoring.contains_key(&id))
            .then(|| (id, source.driver.clone(), meta.clone()))
    })?;
    persistence.restoring.insert(id, false);
    Some((id, driver, meta))
}

/// Starts every informer still waiting (nothing stored for it, or its
/// restore failed).
fn begin_waiting(handles: &Handles) {
    let drivers: Vec<Driver> = {
        let kept = handles.kept.borrow();
        if kept.hold_all {
            return;
        }
        kept.iter()
            .filter(|(_, source)| source.driver.is_waiting())
            .map(|(_, source)| source.driver.clone())
            .collect()
    };
    for driver in drivers {
        driver.begin();
    }
}

/// Restores one kept informer from its stored records; on any failure its
/// stored data is dropped with a message and it starts cold.
async fn restore(handles: &Handles, db: &Database, id: u64, driver: &Driver, meta: StoredMeta) {
    let key = meta.resource.clone();
    match read_back(handles, db, driver, meta.clone()).await {
        Ok(()) => {
            let mut persistence = handles.persistence.borrow_mut();
            persistence.restoring.insert(id, true);
            if persistence.role != Role::Reader && !persistence.took_over {
                persistence.writers.insert(id, StoreWriter::restored(meta));
            }
        }
        Err(why) => {
            driver.forget_restored();
            driver.begin();
            let writer = handles.persistence.borrow().role == Role::Writer;
            handles
                .persistence
                .borrow_mut()
                .notice(format!("the stored history of {key} was dropped: {why}"));
            if writer {
                let _ = db.forget(&key).await;
            }
        }
    }
    (handles.on_change)();
}

/// Base chunks `index..` of `generation` (up to [`CHUNKS_PER_READ`]), asked
/// of the database at once and handed over when read: (generation, index,
/// the chunks).
type ChunkRead = futures_util::future::RemoteHandle<Result<(u32, u32, Vec<Vec<u8>>), String>>;

fn read_ahead(db: &Database, key: &str, generation: u32, index: u32, total: u32) -> ChunkRead {
    use futures_util::FutureExt;
    let db = db.clone();
    let key = key.to_string();
    let count = CHUNKS_PER_READ.min(total.saturating_sub(index));
    let (reading, handle) = async move {
        db.chunks(&key, generation, index, count)
            .await
            .map(|chunks| (generation, index, chunks))
            .map_err(|e| e.to_string())
    }
    .remote_handle();
    wasm_bindgen_futures::spawn_local(reading);
    handle
}

/// Why a restore failed, in words.
async fn read_back(
    handles: &Handles,
    db: &Database,
    driver: &Driver,
    meta: StoredMeta,
) -> Result<(), String> {
    let key = meta.resource.clone();
    let mut restorer = Restorer::new(meta).map_err(|e| e.to_string())?;
    let mut budget = TaskBudget::default();
    // The database reads in the browser's own thread: the next read is
    // asked for before this one's chunks are decoded, so reading and
    // decoding overlap (at 100k pods the reads alone take ~1.4 s).
    let total = restorer.meta().base_chunks;
    // The face first (every row, cut down, as of the base's snapshot):
    // the table shows whole while the base's chunks are read behind it,
    // asked for once the face is in (their results would take the thread
    // from it).
    let faced = show_faces(handles, db, driver, &mut restorer, &mut budget).await?;
    let mut ahead = restorer
        .next_chunk()
        .map(|(generation, index)| read_ahead(db, &key, generation, index, total));
    if faced {
        // drawn before the chunks take the thread
        next_animation_frame().await;
        budget.restart();
    }
    // The watch resumes now, not after the rest is read: the server's
    // answer, and the second of quiet that says it caught up, come while
    // the chunks are decoded. What it brings waits until `resume`.
    driver.watch_ahead(
        restorer.meta().resume_from(),
        restorer.meta().columns.clone(),
    );
    while let Some(reading) = ahead.take() {
        let (generation, index, chunks) = reading.await?;
        let asked = CHUNKS_PER_READ.min(total - index);
        if chunks.len() != asked as usize {
            return Err(format!(
                "its snapshot's chunks {index}..{} are not all there",
                index + asked
            ));
        }
        if index + asked < total {
            ahead = Some(read_ahead(db, &key, generation, index + asked, total));
        }
        for bytes in chunks {
            if driver.is_stopped() {
                return Err("the view was closed while it was restored".into());
            }
            let objects = restorer.chunk(&bytes).map_err(|e| e.to_string())?;
            driver.with_informer(|informer| informer.restore_objects(objects));
            (handles.on_change)();
            budget.spend().await;
        }
    }
    let mut from = restorer.blocks().first().map_or(0, |b| b.first_seq);
    let expected = restorer.blocks().len();
    let mut read = 0;
    while read < expected {
        let blocks = db
            .blocks(&key, from, BLOCKS_PER_READ)
            .await
            .map_err(|e| e.to_string())?;
        if blocks.is_empty() {
            return Err("part of its history is missing".into());
        }
        for (first, bytes) in blocks {
            let want = restorer.blocks().get(read).map(|b| b.first_seq);
            if want != Some(first) {
                return Err(format!(
                    "its history's block at {first} is not the one listed"
                ));
            }
            {
                let informer = driver.informer();
                let store = informer.store();
                let base = |key: &str, rv: &str| {
                    store
                        .get_by_key(key)
                        .filter(|object| object.resource_version == rv)
                        .cloned()
                };
                restorer.block(&bytes, &base).map_err(|e| e.to_string())?;
            }
            read += 1;
            from = restorer
                .blocks()
                .get(read)
                .map_or(u64::MAX, |b| b.first_seq);
            budget.spend().await;
            if read == expected {
                break;
            }
        }
    }
    let restored = restorer.finish().map_err(|e| e.to_string())?;
    driver.resume(restored).map_err(|e| e.to_string())
}

/// Puts the stored face of `restorer`'s base in the informer's store, a
/// chunk per request (each result is handed over in one task), the next
/// asked for before this one is decoded; whether there was one.
async fn show_faces(
    handles: &Handles,
    db: &Database,
    driver: &Driver,
    restorer: &mut Restorer,
    budget: &mut TaskBudget,
) -> Result<bool, String> {
    let key = restorer.meta().resource.clone();
    let generation = restorer.meta().generation;
    let as_of = restorer.meta().base_at;
    let face_chunks = restorer.face_chunks();
    let read_face = |index: u32| read_ahead(db, &key, generation, index, index + 1);
    let mut face_ahead = face_chunks.clone().next().map(read_face);
    for index in face_chunks.clone() {
        let Some(reading) = face_ahead.take() else {
            break;
        };
        let (_, _, read) = reading.await?;
        let [bytes] = <[Vec<u8>; 1]>::try_from(read)
            .map_err(|_| "its snapshot's face is not all there".to_string())?;
        if index + 1 < face_chunks.end {
            face_ahead = Some(read_face(index + 1));
        }
        let mut faces = restorer.face(&bytes).map_err(|e| e.to_string())?;
        while faces.left() > 0 {
            if driver.is_stopped() {
                return Err("the view was closed while it was restored".into());
            }
            let some = faces
                .next_objects(FACES_PER_STEP)
                .map_err(|e| e.to_string())?;
            let columns = restorer.meta().columns.as_deref();
            driver.with_informer(|informer| informer.restore_faces(some, as_of, columns));
            budget.spend().await;
        }
    }
    let faced = !face_chunks.is_empty();
    if faced {
        (handles.on_change)();
    }
    Ok(faced)
}

/// Writes what is due for every kept informer (the writer tab only; with
/// `force`, everything pending), and drops what is stored for views no
/// longer kept.
async fn flush(handles: &Handles, db: &Database, force: bool) {
    if handles.persistence.borrow().role != Role::Writer {
        return;
    }
    let dropped: Vec<String> = std::mem::take(&mut handles.kept.borrow_mut().dropped);
    for key in dropped {
        let _ = db.forget(&key).await;
    }
    let sources: Vec<(u64, Driver, String, Millis)> = handles
        .kept
        .borrow()
        .iter()
        .filter(|(_, source)| !source.driver.is_waiting() && !source.driver.is_stopped())
        .map(|(id, source)| {
            (
                id,
                source.driver.clone(),
                source.stored_key(),
                source.shown_at,
            )
        })
        .collect();
    {
        let mut persistence = handles.persistence.borrow_mut();
        let kept_ids: Vec<u64> = sources.iter().map(|(id, ..)| *id).collect();
        persistence.writers.retain(|id, _| kept_ids.contains(id));
        let took_over = persistence.took_over;
        for (id, _, key, _) in &sources {
            let replace_all = took_over || persistence.stored_at_load.contains_key(key);
            persistence
                .writers
                .entry(*id)
                .or_insert_with(|| StoreWriter::new(key.clone(), replace_all));
        }
    }
    let mut budget = TaskBudget::default();
    for (id, driver, key, shown_at) in sources {
        let Some(mut writer) = handles.persistence.borrow_mut().writers.remove(&id) else {
            continue;
        };
        loop {
            let now = crate::transport::now();
            let batch = if force {
                writer.poll_now(&driver.informer(), now, shown_at)
            } else {
                writer.poll(&driver.informer(), now, shown_at)
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
            // relist's log batches were tasks of both (issue 21)
            budget.spend().await;
            let result = db.write(&key, &batch).await.map_err(|error| match error {
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
        let mut persistence = handles.persistence.borrow_mut();
        if let Some(notice) = writer.take_notice() {
            persistence.notice(notice);
        }
        if driver.is_stopped() {
            continue;
        }
        persistence.writers.insert(id, writer);
    }
    let usage = database::estimate().await;
    handles.persistence.borrow_mut().usage = usage;
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
