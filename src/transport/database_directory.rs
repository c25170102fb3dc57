//! The page's databases as a set, one per cluster
//! (`crate::app::cluster_identity`): which exist (`indexedDB.databases()`,
//! which neither `idb` nor `web-sys` binds, so it is called through
//! `Reflect`), whose each is (its mark in `meta`), and deleting one the user
//! forgets from the settings.

use idb::{Factory, TransactionMode};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::database::{failed, Database, DbError, META};
use crate::app::cluster_identity::{MARK_KEY, PRIMARY_DATABASE};

/// The names of this page's databases in the browser (`deltascope`,
/// `deltascope@…`); empty when the browser cannot list them.
pub async fn database_names() -> Vec<String> {
    let Some(window) = web_sys::window() else {
        return Vec::new();
    };
    let Ok(factory) = js_sys::Reflect::get(&window, &"indexedDB".into()) else {
        return Vec::new();
    };
    let listed = js_sys::Reflect::get(&factory, &"databases".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .and_then(|databases| databases.call0(&factory).ok())
        .and_then(|promise| promise.dyn_into::<js_sys::Promise>().ok());
    let Some(promise) = listed else {
        return Vec::new();
    };
    let Ok(infos) = JsFuture::from(promise).await else {
        return Vec::new();
    };
    js_sys::Array::from(&infos)
        .iter()
        .filter_map(|info| {
            js_sys::Reflect::get(&info, &"name".into())
                .ok()?
                .as_string()
        })
        .filter(|name| {
            name == PRIMARY_DATABASE || name.starts_with(&format!("{PRIMARY_DATABASE}@"))
        })
        .collect()
}

/// Deletes the database `name` (waits while another tab has it open).
pub async fn delete_database(name: &str) -> Result<(), DbError> {
    let what = "forgetting a cluster's stored history";
    let factory = Factory::new().map_err(|e| DbError::Unavailable(e.to_string()))?;
    factory
        .delete(name)
        .map_err(failed(what))?
        .await
        .map_err(failed(what))
}

impl Database {
    /// The mark's text: whose history this database holds.
    pub async fn mark(&self) -> Result<Option<String>, DbError> {
        let what = "reading whose history is stored";
        let tx = self
            .db
            .transaction(&[META], TransactionMode::ReadOnly)
            .map_err(failed(what))?;
        let value = tx
            .object_store(META)
            .map_err(failed(what))?
            .get(JsValue::from_str(MARK_KEY))
            .map_err(failed(what))?
            .await
            .map_err(failed(what))?;
        Ok(value.and_then(|value| value.as_string()))
    }

    /// Marks this database as holding the history of the cluster `text`
    /// names.
    pub async fn put_mark(&self, text: &str) -> Result<(), DbError> {
        let what = "marking whose history is stored";
        let tx = self
            .db
            .transaction(&[META], TransactionMode::ReadWrite)
            .map_err(failed(what))?;
        tx.object_store(META)
            .map_err(failed(what))?
            .put(&JsValue::from_str(text), Some(&JsValue::from_str(MARK_KEY)))
            .map_err(failed(what))?;
        super::database::committed(tx.await, what)
    }

    /// Lets go of it (another cluster's, read for the settings, or the
    /// first one when the cluster has its own).
    pub fn close(&self) {
        self.db.close();
    }
}
