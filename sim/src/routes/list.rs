//! LIST: which state a list reads (`resourceVersion` and its match, or a
//! `continue` token: opaque, a consistent snapshot until compacted, then
//! 410), one page of it (`limit`, `remainingItemCount`), and the page as a
//! `…List` or a Table. A resourceVersion newer than the store is waited for
//! (up to 3 s, then 504 as the apiserver's "too large resource version").

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use serde_json::{json, Value};

use super::params::{number, parse_rv, resource_version};
use super::target::Target;
use crate::cluster::Inner;
use crate::list_body::ListBody;
use crate::resources::ResourceType;
use crate::selectors::Selector;
use crate::status::{json_response, ApiError};
use crate::store::{Obj, Store};
use crate::table::{self, IncludeObject};

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: String,
}

fn encode_continue(rev: u64, last_key: &str) -> String {
    let tok = ContinueToken {
        v: "meta.k8s.io/v1".to_string(),
        rv: rev,
        start: format!("{last_key}\u{0}"),
    };
    base64::engine::general_purpose::URL_SAFE.encode(serde_json::to_vec(&tok).unwrap_or_default())
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: pass the metadata.continue of the previous page unchanged",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
        .map_err(|_| bad())?;
    let tok: ContinueToken = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let key = tok.start.strip_suffix('\u{0}').ok_or_else(bad)?.to_string();
    Ok((tok.rv, key))
}

/// One page of a list.
struct Page {
    rev: u64,
    items: Vec<Arc<Obj>>,
    /// Matching objects left after the page (counted without selectors).
    more: bool,
    remaining: u64,
}

pub(super) async fn list(
    inner: Arc<Inner>,
    target: Target,
    selector: Selector,
    query: &HashMap<String, String>,
    table_mode: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let limit = number(query, "limit")?.filter(|l| *l > 0);
    let continuing = query
        .get("continue")
        .map(String::as_str)
        .filter(|c| !c.is_empty());
    let (at, after) = position(&inner, query, continuing, limit).await?;
    if let Some(at) = at {
        if at > inner.store.revision() {
            wait_for(&inner, at).await?;
        }
    }
    let page = read_page(&inner.store, &target, &selector, (at, after), limit)
        .map_err(|e| expired(&inner.store, e, continuing.is_some()))?;
    let mut meta = json!({"resourceVersion": inner.store.rv_string(page.rev)});
    if page.more {
        if let Some(last) = page.items.last() {
            meta["continue"] = json!(encode_continue(page.rev, &last.key));
        }
        if selector.is_empty() {
            meta["remainingItemCount"] = json!(page.remaining);
        }
    }
    Ok(render(&target.resource, page.items, &meta, table_mode))
}

/// Which state the list reads: a past revision (`None`: now) and the key
/// it continues after.
async fn position(
    inner: &Inner,
    query: &HashMap<String, String>,
    continuing: Option<&str>,
    limit: Option<u64>,
) -> Result<(Option<u64>, Option<String>), ApiError> {
    let (rv, rv_match) = resource_version(query);
    if let Some(token) = continuing {
        if !rv.is_empty() {
            return Err(ApiError::bad_request(
                "specifying resourceVersion is not allowed when using continue",
            ));
        }
        let (rev, key) = decode_continue(token)?;
        return Ok((Some(rev), Some(key)));
    }
    let at = match (rv, rv_match) {
        ("", Some(_)) => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ))
        }
        ("", None) | ("0", None | Some("NotOlderThan")) => None,
        ("0", Some(m)) => {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch {m:?} is not allowed with resourceVersion \"0\""
            )))
        }
        (rv, Some("Exact")) => Some(parse_rv(&inner.store, rv)?),
        (rv, None) if limit.is_some() => Some(parse_rv(&inner.store, rv)?),
        (rv, None | Some("NotOlderThan")) => {
            wait_for(inner, parse_rv(&inner.store, rv)?).await?;
            None
        }
        (_, Some(m)) => {
            return Err(ApiError::bad_request(format!(
                "invalid resourceVersionMatch {m:?}: use NotOlderThan or Exact"
            )))
        }
    };
    Ok((at, None))
}

/// The matching objects of the target at `at` after `after`, at most `limit`.
fn read_page(
    store: &Store,
    target: &Target,
    selector: &Selector,
    (at, after): (Option<u64>, Option<String>),
    limit: Option<u64>,
) -> Result<Page, crate::store::Expired> {
    let mut items = Vec::new();
    let mut more = false;
    let mut remaining = 0u64;
    let mut visit = |obj: &Arc<Obj>| {
        if !selector.matches(&obj.sel) {
            return true;
        }
        if limit.is_some_and(|l| items.len() as u64 >= l) {
            more = true;
            remaining += 1;
            // remainingItemCount is only given without selectors.
            return selector.is_empty();
        }
        items.push(obj.clone());
        true
    };
    let rev = store.snapshot(
        target.res,
        target.namespace.as_deref(),
        at,
        after.as_deref(),
        &mut visit,
    )?;
    Ok(Page {
        rev,
        items,
        more,
        remaining,
    })
}

/// 410 for a list of a compacted revision.
fn expired(store: &Store, e: crate::store::Expired, continuing: bool) -> ApiError {
    if continuing {
        ApiError::expired(format!(
            "the continue token is too old (its resourceVersion {} was compacted; the oldest available is {}): start the list again without continue",
            store.rv_string(e.requested),
            store.rv_string(e.oldest)
        ))
    } else {
        ApiError::expired(format!(
            "too old resource version: {} (the oldest available is {}); list with resourceVersion unset",
            store.rv_string(e.requested),
            store.rv_string(e.oldest)
        ))
    }
}

/// The page as a Table, or as `{"kind": "…List", …, "items": […]}` streamed
/// from the stored encodings.
fn render(
    r: &ResourceType,
    items: Vec<Arc<Obj>>,
    meta: &Value,
    table_mode: Option<IncludeObject>,
) -> Response {
    if let Some(include) = table_mode {
        let rows: Vec<Vec<u8>> = items
            .iter()
            .map(|o| table::row_json(r.printed_as(), &o.value(), &o.json, include))
            .collect();
        return json_response(table::table_json(r.printed_as(), &rows, meta, true));
    }
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"{\"kind\":\"");
    head.extend_from_slice(r.list_kind().as_bytes());
    head.extend_from_slice(b"\",\"apiVersion\":\"");
    head.extend_from_slice(r.api_version().as_bytes());
    head.extend_from_slice(b"\",\"metadata\":");
    head.extend_from_slice(&serde_json::to_vec(meta).unwrap_or_default());
    head.extend_from_slice(b",\"items\":[");
    json_response(axum::body::Body::new(ListBody::new(head, items)))
}

/// Wait (up to 3 s) for the store to reach `rev`, as the apiserver does for
/// a resourceVersion newer than it has seen.
async fn wait_for(inner: &Inner, rev: u64) -> Result<(), ApiError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let cur = inner.store.revision();
        if cur >= rev {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let e = ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "Timeout",
                format!(
                    "Too large resource version: {}, current: {}",
                    inner.store.rv_string(rev),
                    inner.store.rv_string(cur)
                ),
            );
            return Err(e.with_too_large_rv_details());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
