//! Objects' usage series in the browser's database (its `usage` store), so
//! that a chart survives a reload also where serve records nothing: one
//! record per object (`crate::model::usage_stored::stored_key` → the bytes
//! of `crate::model::usage_stored::encode`) and an index record of which
//! are kept, written in the same transaction, so the store never holds
//! more than `MAX_STORED_SUBJECTS` series. This file only moves bytes;
//! what they are and which to drop is the model's.

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;

use super::database::{bytes_of, committed, failed, Database, DbError, USAGE};
use crate::informer::Millis;
use crate::model::usage_stored::{StoredIndex, INDEX_KEY};
use idb::TransactionMode;

impl Database {
    /// The stored bytes of the series `key`, if any.
    pub async fn stored_usage(&self, key: &str) -> Result<Option<Vec<u8>>, DbError> {
        let what = "reading a stored usage chart";
        let tx = self
            .db
            .transaction(&[USAGE], TransactionMode::ReadOnly)
            .map_err(failed(what))?;
        let value = tx
            .object_store(USAGE)
            .map_err(failed(what))?
            .get(JsValue::from_str(key))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        Ok(value.map(|value| bytes_of(&value)))
    }

    /// Stores `bytes` as the series `key`, written at `now`, and drops the
    /// least recently written series beyond the index's bound.
    pub async fn store_usage(&self, key: &str, bytes: &[u8], now: Millis) -> Result<(), DbError> {
        let what = "storing a usage chart";
        let tx = self
            .db
            .transaction(&[USAGE], TransactionMode::ReadWrite)
            .map_err(failed(what))?;
        let store = tx.object_store(USAGE).map_err(failed(what))?;
        let index = store
            .get(JsValue::from_str(INDEX_KEY))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        let mut index = StoredIndex::parse(&index.and_then(|v| v.as_string()).unwrap_or_default());
        for gone in index.written(key, now) {
            store
                .delete(JsValue::from_str(&gone))
                .map_err(failed(what))?;
        }
        store
            .put(&Uint8Array::from(bytes), Some(&JsValue::from_str(key)))
            .map_err(failed(what))?;
        store
            .put(
                &JsValue::from_str(&index.text()),
                Some(&JsValue::from_str(INDEX_KEY)),
            )
            .map_err(failed(what))?;
        committed(tx.await, what)
    }
}
