//! Reading the stored views back at load: which stored records are usable,
//! keeping their views again, and restoring each kept informer from them —
//! its face (every row, cut down) first so the table shows whole at once,
//! then its base's chunks and its history's log blocks, each database read
//! asked for before the last one is decoded, yielding to the event loop
//! every few milliseconds. Any failure drops that view's stored data with
//! a message, and the view starts cold. Apart from `persistence`'s writes
//! so each reads on its own.

use crate::address::route::Route;
use crate::informer::compact_sort;
use crate::informer::persist::{Restorer, StoreWriter, StoredMeta};
use crate::transport::database::Database;
use crate::transport::slicing::{next_animation_frame, TaskBudget};
use crate::transport::Driver;

use super::{Handles, Role};

/// Base chunks read per database request (about 8 MB: the browser hands
/// a result over in one task, ~30 ms for 8 MB at 100k pods).
const CHUNKS_PER_READ: u32 = 4;
/// Faces decoded and put in the store between two looks at the budget.
const FACES_PER_STEP: usize = 1_000;
/// Log blocks read per database request.
const BLOCKS_PER_READ: u32 = 8;

/// The stored meta records that are usable, most recently shown first;
/// the others are reported (and deleted by the writer).
pub(super) fn read_metas(handles: &Handles, metas: Vec<(String, String)>) -> Vec<StoredMeta> {
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

/// Keeps the stored views again, in their cluster, up to the capacity, in
/// the order they were last shown (the view on screen is kept already).
pub(super) fn keep_stored(handles: &Handles, stored: &[StoredMeta]) {
    let mut kept = handles.kept.borrow_mut();
    kept.held.insert(handles.cluster.clone());
    for meta in stored {
        let Ok(route) = Route::parse(&meta.resource) else {
            continue;
        };
        let route = route.in_cluster(handles.cluster.clone());
        let seed = (js_sys::Math::random() * 9.0e15) as u64;
        kept.keep(&route, seed, handles.on_change.clone(), None);
    }
}

/// The next kept informer waiting with stored data: the one shown most
/// recently first.
pub(super) fn next_to_restore(handles: &Handles) -> Option<(u64, Driver, StoredMeta)> {
    let kept = handles.kept.borrow();
    let mut persistence = handles.persistence.borrow_mut();
    let ours = kept
        .iter()
        .filter(|(_, source)| handles.ours(&source.route));
    let (id, driver, meta) = ours.into_iter().find_map(|(id, source)| {
        let meta = persistence.stored_at_load.get(&source.stored_key())?;
        (source.driver.is_waiting() && !persistence.restoring.contains_key(&id))
            .then(|| (id, source.driver.clone(), meta.clone()))
    })?;
    persistence.restoring.insert(id, false);
    Some((id, driver, meta))
}

/// Starts every informer still waiting (nothing stored for it, or its
/// restore failed) of a cluster whose database is not being read; one
/// whose stored data another cluster's task is reading waits for it.
pub(super) fn begin_waiting(handles: &Handles) {
    let drivers: Vec<Driver> = {
        let kept = handles.kept.borrow();
        kept.iter()
            .filter(|(_, source)| source.driver.is_waiting())
            .filter(|(_, source)| {
                !kept.held.contains(&source.route.cluster)
                    && !kept.stored.contains(&source.route.to_string())
            })
            .map(|(_, source)| source.driver.clone())
            .collect()
    };
    for driver in drivers {
        driver.begin();
    }
}

/// Restores one kept informer from its stored records; on any failure its
/// stored data is dropped with a message and it starts cold.
pub(super) async fn restore(
    handles: &Handles,
    db: &Database,
    id: u64,
    driver: &Driver,
    meta: StoredMeta,
) {
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

/// Reads `meta`'s stored view back into `driver`'s informer: its face,
/// its base, its history; the error says in words why it failed.
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
    let ahead = restorer
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
    read_base(handles, db, driver, &mut restorer, &mut budget, ahead).await?;
    read_log(db, driver, &mut restorer, &mut budget).await?;
    let restored = restorer.finish().map_err(|e| e.to_string())?;
    driver.resume(restored).map_err(|e| e.to_string())
}

/// Puts the base's objects in the informer's store, chunk by chunk from
/// `ahead` (the first read, already asked for), each next read asked for
/// before this one's chunks are decoded.
async fn read_base(
    handles: &Handles,
    db: &Database,
    driver: &Driver,
    restorer: &mut Restorer,
    budget: &mut TaskBudget,
    mut ahead: Option<ChunkRead>,
) -> Result<(), String> {
    let key = restorer.meta().resource.clone();
    let total = restorer.meta().base_chunks;
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
    Ok(())
}

/// Reads the history's log blocks back, in order, each rebuilt on the
/// objects of the base it follows.
async fn read_log(
    db: &Database,
    driver: &Driver,
    restorer: &mut Restorer,
    budget: &mut TaskBudget,
) -> Result<(), String> {
    let key = restorer.meta().resource.clone();
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
    Ok(())
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
