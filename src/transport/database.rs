//! The browser's database (IndexedDB) as the page uses it: the records a
//! kept resource leaves behind so that a reload starts warm (see
//! `deltascope_informer::persist` for what they are and when they are
//! written — this file only moves bytes). Through the `idb` crate, a thin
//! futures wrapper over IndexedDB: our values are byte arrays and our keys
//! arrays, so no serde layer is needed.
//!
//! Four object stores: `meta` (the resource's key → its meta record's JSON
//! text), `chunks` (`[resource, generation, index]` → a base chunk),
//! `log` (`[resource, first sequence number]` → a block of deltas) and
//! `usage` (an object's usage series, `super::stored_usage`). Array
//! keys sort element by element and an array sorts after every number, so
//! `[r]`..`[r, []]` is everything of resource `r`.
//!
//! One database per cluster (`crate::app::cluster_identity` says which;
//! its mark is a `meta` record under `MARK_KEY`, never read as a view's;
//! listing and deleting the others is `super::database_directory`).
//!
//! Also the Web Locks API (one tab writes to a database; `web-sys` has it
//! only behind its unstable flag, so it is bound here by hand) and the
//! storage estimate.

use idb::{
    Database as IdbDatabase, DatabaseEvent, Factory, KeyRange, ObjectStore, ObjectStoreParams,
    TransactionMode,
};
use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::slicing::TaskBudget;
use crate::app::cluster_identity::MARK_KEY;
use crate::informer::persist::{Delete, WriteBatch};

/// A database's layout's version (IndexedDB's): four stores. A different layout is
/// a new version whose upgrade drops the old stores — except version 1's
/// three, which version 2 keeps and adds `usage` to.
const DB_VERSION: u32 = 2;
pub(super) const META: &str = "meta";
const CHUNKS: &str = "chunks";
const LOG: &str = "log";
/// Objects' usage series (`super::stored_usage`).
pub(super) const USAGE: &str = "usage";
const STORES: [&str; 4] = [META, CHUNKS, LOG, USAGE];

/// What went wrong with the database, in words the settings can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    #[error("this browser gives the page no database ({0})")]
    Unavailable(String),
    #[error("the browser's storage quota is full")]
    Quota,
    #[error("{what} failed: {why}")]
    Failed { what: &'static str, why: String },
}

pub(super) fn failed(what: &'static str) -> impl Fn(idb::Error) -> DbError {
    move |error| {
        let why = error.to_string();
        if why.contains("QuotaExceeded") {
            DbError::Quota
        } else {
            DbError::Failed { what, why }
        }
    }
}

/// What a finished transaction's outcome means for the write it carried.
pub(super) fn committed(
    outcome: Result<idb::TransactionResult, idb::Error>,
    what: &'static str,
) -> Result<(), DbError> {
    if outcome.map_err(failed(what))?.is_committed() {
        Ok(())
    } else {
        Err(DbError::Failed {
            what,
            why: "the browser aborted the transaction".into(),
        })
    }
}

/// An open database.
#[derive(Clone)]
pub struct Database {
    pub(super) db: std::rc::Rc<IdbDatabase>,
    /// Its name (`crate::app::cluster_identity`).
    pub(super) name: std::rc::Rc<str>,
}

impl Database {
    /// Opens (or creates) the database `name`. A database of another
    /// layout is replaced: its stores are dropped and made anew.
    pub async fn open(name: &str) -> Result<Database, DbError> {
        let factory = Factory::new().map_err(|e| DbError::Unavailable(e.to_string()))?;
        let mut request = factory
            .open(name, Some(DB_VERSION))
            .map_err(|e| DbError::Unavailable(e.to_string()))?;
        request.on_upgrade_needed(|event| {
            let Ok(db) = event.database() else {
                return;
            };
            if event.old_version().is_ok_and(|old| old == 1) {
                let _ = db.create_object_store(USAGE, ObjectStoreParams::new());
                return;
            }
            for name in db.store_names() {
                let _ = db.delete_object_store(&name);
            }
            for name in STORES {
                let _ = db.create_object_store(name, ObjectStoreParams::new());
            }
        });
        let mut db = match request.await {
            Ok(db) => db,
            Err(error) if error.to_string().contains("VersionError") => {
                // A newer deltascope's layout: drop it rather than keep
                // data this page cannot read.
                if let Ok(delete) = factory.delete(name) {
                    let _ = delete.await;
                }
                return Box::pin(Database::open(name)).await;
            }
            Err(error) => return Err(DbError::Unavailable(error.to_string())),
        };
        // Another tab opening a newer layout: let it.
        db.on_version_change(|event| {
            if let Some(db) = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::IdbDatabase>().ok())
            {
                db.close();
            }
        });
        Ok(Database {
            db: std::rc::Rc::new(db),
            name: name.into(),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every stored view's key and meta record text (not the mark).
    pub async fn metas(&self) -> Result<Vec<(String, String)>, DbError> {
        let tx = self
            .db
            .transaction(&[META], TransactionMode::ReadOnly)
            .map_err(failed("reading what is stored"))?;
        let store = tx
            .object_store(META)
            .map_err(failed("reading what is stored"))?;
        let keys = store
            .get_all_keys(None, None)
            .map_err(failed("reading what is stored"))?
            .await
            .map_err(failed("reading what is stored"))?;
        let values = store
            .get_all(None, None)
            .map_err(failed("reading what is stored"))?
            .await
            .map_err(failed("reading what is stored"))?;
        Ok(keys
            .into_iter()
            .zip(values)
            .filter_map(|(key, value)| Some((key.as_string()?, value.as_string()?)))
            .filter(|(key, _)| key != MARK_KEY)
            .collect())
    }

    /// `count` base chunks of `resource` from `(generation, first)`, in
    /// order; fewer when some are missing.
    pub async fn chunks(
        &self,
        resource: &str,
        generation: u32,
        first: u32,
        count: u32,
    ) -> Result<Vec<Vec<u8>>, DbError> {
        let what = "reading a stored snapshot";
        let range = KeyRange::bound(
            &key3(resource, generation, first),
            &key3(resource, generation, first.saturating_add(count)),
            Some(false),
            Some(true),
        )
        .map_err(failed(what))?;
        let tx = self
            .db
            .transaction(&[CHUNKS], TransactionMode::ReadOnly)
            .map_err(failed(what))?;
        let store = tx.object_store(CHUNKS).map_err(failed(what))?;
        let values = store
            .get_all(Some(range.into()), Some(count))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        Ok(values.iter().map(bytes_of).collect())
    }

    /// Up to `count` log blocks of `resource` from sequence number `from`
    /// on, with their first sequence numbers, in order.
    pub async fn blocks(
        &self,
        resource: &str,
        from: u64,
        count: u32,
    ) -> Result<Vec<(u64, Vec<u8>)>, DbError> {
        let what = "reading a stored history";
        let range = KeyRange::bound(
            &key2(resource, from),
            &end_of(resource),
            Some(false),
            Some(false),
        )
        .map_err(failed(what))?;
        let tx = self
            .db
            .transaction(&[LOG], TransactionMode::ReadOnly)
            .map_err(failed(what))?;
        let store = tx.object_store(LOG).map_err(failed(what))?;
        let keys = store
            .get_all_keys(Some(range.clone().into()), Some(count))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        let values = store
            .get_all(Some(range.into()), Some(count))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        Ok(keys
            .iter()
            .zip(values.iter())
            .filter_map(|(key, value)| {
                let seq = Array::from(key).get(1).as_f64()?;
                Some((seq as u64, bytes_of(value)))
            })
            .collect())
    }

    /// Carries out one batch for `resource` in one transaction: its
    /// deletions, then its records, then its meta record.
    pub async fn write(&self, resource: &str, batch: &WriteBatch) -> Result<(), DbError> {
        let what = "storing";
        let tx = self
            .db
            .transaction(&STORES, TransactionMode::ReadWrite)
            .map_err(failed(what))?;
        let chunks = tx.object_store(CHUNKS).map_err(failed(what))?;
        let log = tx.object_store(LOG).map_err(failed(what))?;
        let meta = tx.object_store(META).map_err(failed(what))?;
        for delete in &batch.deletes {
            put_delete(resource, delete, &chunks, &log)?;
        }
        // A base's last batch may put hundreds of megabytes of log: once
        // this task has used its budget, wait for a put to succeed (the next
        // is placed from its success event, so the transaction stays
        // active) and go on in that task (all at once held the page for
        // 160 ms).
        let mut budget = TaskBudget::default();
        let records = batch
            .chunks
            .iter()
            .map(|((generation, index), bytes)| {
                (&chunks, key3(resource, *generation, *index), bytes)
            })
            .chain(
                batch
                    .blocks
                    .iter()
                    .map(|(first, bytes)| (&log, key2(resource, *first), bytes)),
            );
        for (store, key, bytes) in records {
            let put = store
                .put(&Uint8Array::from(bytes.as_slice()), Some(&key))
                .map_err(failed(what))?;
            if budget.used_up() {
                if let Err(error) = put.await {
                    // the transaction is aborting: its result says why
                    // (a full disk is `QuotaExceeded` there)
                    committed(tx.await, what)?;
                    return Err(failed(what)(error));
                }
                budget.restart();
            }
        }
        if let Some(record) = &batch.meta {
            let text = serde_json::to_string(record).map_err(|e| DbError::Failed {
                what,
                why: e.to_string(),
            })?;
            meta.put(
                &JsValue::from_str(&text),
                Some(&JsValue::from_str(resource)),
            )
            .map_err(failed(what))?;
        }
        committed(tx.await, what)
    }

    /// Deletes everything stored for `resource`.
    pub async fn forget(&self, resource: &str) -> Result<(), DbError> {
        let what = "forgetting a stored resource";
        let tx = self
            .db
            .transaction(&STORES, TransactionMode::ReadWrite)
            .map_err(failed(what))?;
        for name in [CHUNKS, LOG] {
            let range = KeyRange::bound(
                &start_of(resource),
                &end_of(resource),
                Some(false),
                Some(false),
            )
            .map_err(failed(what))?;
            tx.object_store(name)
                .map_err(failed(what))?
                .delete(range)
                .map_err(failed(what))?;
        }
        tx.object_store(META)
            .map_err(failed(what))?
            .delete(JsValue::from_str(resource))
            .map_err(failed(what))?;
        tx.await.map_err(failed(what))?;
        Ok(())
    }

    /// Deletes everything stored.
    pub async fn forget_all(&self) -> Result<(), DbError> {
        let what = "forgetting what is stored";
        let tx = self
            .db
            .transaction(&STORES, TransactionMode::ReadWrite)
            .map_err(failed(what))?;
        let meta = tx.object_store(META).map_err(failed(what))?;
        let mark = meta
            .get(JsValue::from_str(MARK_KEY))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        for name in STORES {
            tx.object_store(name)
                .map_err(failed(what))?
                .clear()
                .map_err(failed(what))?;
        }
        // whose database it is stays said
        if let Some(mark) = mark {
            meta.put(&mark, Some(&JsValue::from_str(MARK_KEY)))
                .map_err(failed(what))?;
        }
        tx.await.map_err(failed(what))?;
        Ok(())
    }
}

/// Places one of a batch's deletions in its transaction (`chunks` and
/// `log` are that transaction's stores).
fn put_delete(
    resource: &str,
    delete: &Delete,
    chunks: &ObjectStore,
    log: &ObjectStore,
) -> Result<(), DbError> {
    let what = "storing";
    let (store, from, to, to_open) = match delete {
        Delete::ChunksOf(g) => (
            chunks,
            key2(resource, u64::from(*g)),
            key_after(resource, *g),
            false,
        ),
        Delete::ChunksExcept(g) => {
            // below g, then above it
            let below = KeyRange::bound(
                &start_of(resource),
                &key2(resource, u64::from(*g)),
                Some(false),
                Some(true),
            )
            .map_err(failed(what))?;
            chunks.delete(below).map_err(failed(what))?;
            (chunks, key_after(resource, *g), end_of(resource), false)
        }
        Delete::LogBelow(seq) => (log, start_of(resource), key2(resource, *seq), true),
        Delete::AllLog => (log, start_of(resource), end_of(resource), false),
    };
    let range = KeyRange::bound(&from, &to, Some(false), Some(to_open)).map_err(failed(what))?;
    store.delete(range).map_err(failed(what))?;
    Ok(())
}

pub(super) fn bytes_of(value: &JsValue) -> Vec<u8> {
    value
        .dyn_ref::<Uint8Array>()
        .map(Uint8Array::to_vec)
        .unwrap_or_default()
}

fn key2(resource: &str, n: u64) -> JsValue {
    Array::of2(&JsValue::from_str(resource), &JsValue::from_f64(n as f64)).into()
}

fn key3(resource: &str, generation: u32, index: u32) -> JsValue {
    Array::of3(
        &JsValue::from_str(resource),
        &JsValue::from_f64(f64::from(generation)),
        &JsValue::from_f64(f64::from(index)),
    )
    .into()
}

/// After every chunk of generation `g`: `[resource, g, []]`.
fn key_after(resource: &str, g: u32) -> JsValue {
    Array::of3(
        &JsValue::from_str(resource),
        &JsValue::from_f64(f64::from(g)),
        &Array::new(),
    )
    .into()
}

/// Before every record of `resource`: `[resource]`.
fn start_of(resource: &str) -> JsValue {
    Array::of1(&JsValue::from_str(resource)).into()
}

/// After every record of `resource`: `[resource, []]`.
fn end_of(resource: &str) -> JsValue {
    Array::of2(&JsValue::from_str(resource), &Array::new()).into()
}

/// How much the origin stores and may store, in bytes (the browser's own
/// estimate).
pub async fn estimate() -> Option<(f64, f64)> {
    let storage = web_sys::window()?.navigator().storage();
    let promise = storage.estimate().ok()?;
    let estimate: web_sys::StorageEstimate = JsFuture::from(promise).await.ok()?.unchecked_into();
    Some((estimate.get_usage()?, estimate.get_quota()?))
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = LockManager)]
    #[derive(Clone)]
    type LockManager;
    #[wasm_bindgen(method, js_name = request)]
    fn request_with_options(
        this: &LockManager,
        name: &str,
        options: &JsValue,
        callback: &js_sys::Function,
    ) -> js_sys::Promise;
}

/// The lock every tab asks for before it writes to a database: one writer
/// at a time (the first database's name is an earlier deltascope's).
fn writer_lock(database: &str) -> String {
    if database == crate::app::cluster_identity::PRIMARY_DATABASE {
        "deltascope-writer".into()
    } else {
        format!("deltascope-writer:{database}")
    }
}

/// Asks to become the tab that writes to `database`. `granted` runs when this tab holds
/// the lock — at once when it is free; otherwise `busy` runs at once and
/// `granted` later, when the tab holding it goes away. The lock is held as
/// long as the page lives. `Err` when the browser has no Web Locks (the
/// page then writes without one, as a single tab would).
pub fn request_writer_lock(
    database: &str,
    granted: impl FnOnce() + 'static,
    busy: impl FnOnce() + 'static,
) -> Result<(), String> {
    let navigator = web_sys::window().ok_or("no window")?.navigator();
    let locks = js_sys::Reflect::get(&navigator, &JsValue::from_str("locks"))
        .ok()
        .filter(|locks| !locks.is_undefined())
        .ok_or("this browser has no Web Locks")?;
    let locks: LockManager = locks.unchecked_into();
    let waiting = locks.clone();
    let lock = writer_lock(database);
    let later_lock = lock.clone();
    let first = Closure::once_into_js(move |lock: JsValue| -> js_sys::Promise {
        if !lock.is_null() {
            granted();
            return hold_forever();
        }
        busy();
        let later = Closure::once_into_js(move |_lock: JsValue| -> js_sys::Promise {
            granted();
            hold_forever()
        });
        let _ =
            waiting.request_with_options(&later_lock, &lock_options(false), later.unchecked_ref());
        js_sys::Promise::resolve(&JsValue::UNDEFINED)
    });
    let _ = locks.request_with_options(&lock, &lock_options(true), first.unchecked_ref());
    Ok(())
}

fn lock_options(if_available: bool) -> JsValue {
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"mode".into(), &"exclusive".into());
    if if_available {
        let _ = js_sys::Reflect::set(&options, &"ifAvailable".into(), &JsValue::TRUE);
    }
    options.into()
}

/// A promise that never settles: a lock whose callback returns it is held
/// until the page goes away.
fn hold_forever() -> js_sys::Promise {
    js_sys::Promise::new(&mut |_, _| {})
}
