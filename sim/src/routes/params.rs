//! The query parameters lists and watches share, read as the apiserver's
//! `ListOptions` conversion reads them (see `crate::query`): a number, and
//! the resourceVersion a request names.

use std::collections::HashMap;

use crate::status::ApiError;
use crate::store::Store;

/// A non-negative integer parameter (`limit`, `timeoutSeconds`); `None`
/// when absent or empty.
pub(super) fn number(query: &HashMap<String, String>, name: &str) -> Result<Option<u64>, ApiError> {
    match query.get(name).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "invalid value {s:?} for {name}: expected a non-negative integer"
            ))
        }),
    }
}

/// `resourceVersion` (`""` when absent) and `resourceVersionMatch` (when
/// given).
pub(super) fn resource_version(query: &HashMap<String, String>) -> (&str, Option<&str>) {
    let rv = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let rv_match = query
        .get("resourceVersionMatch")
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    (rv, rv_match)
}

/// The revision a client's resourceVersion names, or 400.
pub(super) fn parse_rv(store: &Store, rv: &str) -> Result<u64, ApiError> {
    store.parse_rv(rv).ok_or_else(|| {
        ApiError::bad_request(format!("invalid resourceVersion {rv:?}: use one returned by this server (a list's metadata.resourceVersion)"))
    })
}
