//! A watch request's parameters turned into a [`WatchRequest`]: where it
//! starts (`resourceVersion`, or the current state first, ended by a
//! BOOKMARK for `sendInitialEvents=true`), `allowWatchBookmarks` and
//! `timeoutSeconds`, refused as the apiserver refuses them.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;

use super::params::{number, parse_rv, resource_version};
use super::target::Target;
use crate::cluster::{Inner, Shared};
use crate::query::flag;
use crate::selectors::Selector;
use crate::status::ApiError;
use crate::store::WatchStart;
use crate::table::IncludeObject;
use crate::watch::{self, WatchRequest};

pub(super) fn start_watch(
    inner: Shared,
    target: Target,
    selector: Selector,
    query: &HashMap<String, String>,
    table_mode: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let bookmarks = flag(query, "allowWatchBookmarks").unwrap_or(false);
    // timeoutSeconds=0 means "no timeout", as for the apiserver's default.
    let timeout = number(query, "timeoutSeconds")?
        .filter(|t| *t > 0)
        .map(Duration::from_secs);
    let (start, initial_events_end) = watch_start(&inner, query, bookmarks)?;
    Ok(watch::serve(
        inner,
        WatchRequest {
            res: target.res,
            resource: target.resource,
            namespace: target.namespace,
            selector,
            start,
            initial_events_end,
            bookmarks,
            timeout,
            table: table_mode,
        },
    ))
}

/// Where the watch starts, and whether its initial events end with the
/// annotated BOOKMARK (`sendInitialEvents=true`).
fn watch_start(
    inner: &Inner,
    query: &HashMap<String, String>,
    bookmarks: bool,
) -> Result<(WatchStart, bool), ApiError> {
    let (rv, rv_match) = resource_version(query);
    let send_initial = flag(query, "sendInitialEvents");
    if send_initial != Some(true) {
        if rv_match.is_some() {
            return Err(ApiError::bad_request(
                "resourceVersionMatch is only allowed on a watch together with sendInitialEvents=true",
            ));
        }
        return Ok(match (rv, send_initial) {
            ("" | "0", Some(false)) => (WatchStart::After(inner.store.revision()), false),
            ("" | "0", _) => (WatchStart::Now, false),
            (rv, _) => (WatchStart::After(parse_rv(&inner.store, rv)?), false),
        });
    }
    if !inner.config.watch_list {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled (this simulated cluster runs with --no-watch-list): list with limit/continue, then watch",
        ));
    }
    if rv_match != Some("NotOlderThan") {
        return Err(ApiError::bad_request(
            "sendInitialEvents=true requires resourceVersionMatch=NotOlderThan",
        ));
    }
    if !bookmarks {
        return Err(ApiError::bad_request(
            "sendInitialEvents=true requires allowWatchBookmarks=true (the end of the initial events is a BOOKMARK)",
        ));
    }
    if !rv.is_empty() && rv != "0" {
        parse_rv(&inner.store, rv)?;
    }
    Ok((WatchStart::Now, true))
}
