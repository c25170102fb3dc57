//! The API routes: parses `/api/...` and `/apis/...` paths into discovery,
//! list, get and watch requests, validates query parameters (limit, continue,
//! resourceVersion and its match, selectors, watch options) and renders
//! lists as JSON or Tables.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use base64::Engine;
use serde_json::{json, Value};

use super::discovery;
use super::faults::Aimed;
use super::list_body::ListBody;
use super::resources::{find, ResIdx, ResourceType, RESOURCES};
use super::selectors::{extra_fields_in, FieldSelector, LabelSelector, Selector};
use super::status::{json_response, ApiError};
use super::store::{key_of, Obj, WatchStart};
use super::table::{self, IncludeObject};
use super::watch::{self, take, WatchRequest};
use super::Inner;

type Shared = Arc<Inner>;

pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/version", get(version))
        .route("/version/", get(version))
        .route("/api", any(dispatch))
        .route("/api/", any(dispatch))
        .route("/api/{*rest}", any(dispatch))
        .route("/apis", any(dispatch))
        .route("/apis/", any(dispatch))
        .route("/apis/{*rest}", any(dispatch))
        .route("/openapi/{*rest}", any(dispatch))
        .layer(middleware::from_fn(gzip_large))
        .layer(middleware::from_fn_with_state(inner.clone(), faults))
        .with_state(inner)
}

/// Responses at least this big are gzipped when the client accepts it (the
/// apiserver's threshold); watches are never compressed.
const GZIP_MIN: u64 = 128 * 1024;

async fn gzip_large(req: Request, next: Next) -> Response {
    use hyper::body::Body as _;
    let accepts = req
        .headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let resp = next.run(req).await;
    if !accepts || resp.body().size_hint().exact().is_none_or(|n| n < GZIP_MIN) {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match http_body_util::BodyExt::collect(body).await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            return ApiError::internal(format!("cannot read the response to compress it: {e}"))
                .into_response()
        }
    };
    let compressed = tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut enc = flate2::write::GzEncoder::new(
            Vec::with_capacity(bytes.len() / 6),
            flate2::Compression::fast(),
        );
        enc.write_all(&bytes).and_then(|()| enc.finish())
    })
    .await;
    match compressed {
        Ok(Ok(gz)) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.insert(
                header::CONTENT_ENCODING,
                header::HeaderValue::from_static("gzip"),
            );
            parts.headers.insert(
                header::VARY,
                header::HeaderValue::from_static("Accept-Encoding"),
            );
            Response::from_parts(parts, axum::body::Body::from(gz))
        }
        _ => ApiError::internal("compressing the response failed").into_response(),
    }
}

/// The `throttle` and `error` faults: the next N API requests fail.
async fn faults(State(inner): State<Shared>, req: Request, next: Next) -> Response {
    if take(&inner.faults.throttle) {
        tracing::info!(path = %req.uri().path(), "fault: answering 429");
        return ApiError::too_many_requests(1).into_response();
    }
    if take(&inner.faults.errors) {
        tracing::info!(path = %req.uri().path(), "fault: answering 500");
        return ApiError::internal("simulated internal error (fault injection); retry the request")
            .into_response();
    }
    next.run(req).await
}

async fn version(State(inner): State<Shared>) -> Response {
    json_response(
        serde_json::to_vec(&discovery::version(inner.config.minor_version)).unwrap_or_default(),
    )
}

fn to_json(v: &Value) -> Response {
    json_response(serde_json::to_vec(v).unwrap_or_default())
}

async fn dispatch(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    match route(inner, method, uri, headers).await {
        Ok(resp) => resp,
        Err(err) => err.into_response(),
    }
}

async fn route(
    inner: Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let path = uri.path().to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let query: HashMap<String, String> = Query::try_from_uri(&uri)
        .map(|Query(q)| q)
        .map_err(|e| ApiError::bad_request(format!("cannot parse the query string: {e}")))?;
    let not_found = || {
        ApiError::not_found(format!(
            "the server could not find the requested resource (GET {path})"
        ))
    };
    let serves = |r: &ResourceType| inner.crd.serves(r);
    match segs.as_slice() {
        ["openapi", rest @ ..] => discovery::openapi(&rest.join("/")),
        ["api"] => Ok(match discovery::aggregated_version(&accept) {
            Some(v) => discovery::aggregated(true, v, &serves),
            None => to_json(&discovery::api_versions()),
        }),
        ["apis"] => Ok(match discovery::aggregated_version(&accept) {
            Some(v) => discovery::aggregated(false, v, &serves),
            None => to_json(&discovery::api_group_list(&serves)),
        }),
        ["api", "v1"] => discovery::resource_list("", "v1", &serves)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["api", "v1", "namespaces", ns, "pods", name, "log"] => {
            super::logs::serve(inner, ns, name, &query).await
        }
        ["api", "v1", rest @ ..] => resource(inner, "", "v1", rest, &query, &accept).await,
        ["apis", g] => discovery::api_group(g, &serves)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["apis", g, v] => discovery::resource_list(g, v, &serves)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["apis", g, v, rest @ ..] => resource(inner, g, v, rest, &query, &accept).await,
        _ => Err(not_found()),
    }
}

struct Target {
    res: ResIdx,
    namespace: Option<String>,
    name: Option<String>,
}

fn unknown_resource(group: &str, version: &str, plural: &str) -> ApiError {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    ApiError::not_found(format!(
        "the server could not find the requested resource: {gv} has no resource {plural:?} (see /api/v1 and /apis for what is served)"
    ))
}

fn parse_target(group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
    let lookup = |plural: &str| {
        find(group, version, plural).ok_or_else(|| unknown_resource(group, version, plural))
    };
    match rest {
        [plural] => Ok(Target {
            res: lookup(plural)?,
            namespace: None,
            name: None,
        }),
        ["namespaces", ns, plural] => {
            let res = lookup(plural)?;
            if !RESOURCES[res].namespaced {
                return Err(ApiError::not_found(format!(
                    "{plural} are cluster-scoped; use /api/v1/{plural} without a namespace"
                )));
            }
            Ok(Target {
                res,
                namespace: Some(ns.to_string()),
                name: None,
            })
        }
        [plural, name] => {
            let res = lookup(plural)?;
            if RESOURCES[res].namespaced {
                return Err(ApiError::not_found(format!(
                    "{plural} are namespaced; get one at .../namespaces/NAMESPACE/{plural}/{name}"
                )));
            }
            Ok(Target {
                res,
                namespace: None,
                name: Some(name.to_string()),
            })
        }
        ["namespaces", ns, plural, name] => {
            let res = lookup(plural)?;
            Ok(Target {
                res,
                namespace: Some(ns.to_string()),
                name: Some(name.to_string()),
            })
        }
        ["namespaces", _, plural, _, sub, ..] => Err(ApiError::not_found(format!(
            "the simulated cluster does not serve the {plural}/{sub} subresource"
        ))),
        _ => Err(ApiError::not_found(
            "the server could not find the requested resource",
        )),
    }
}

fn flag(query: &HashMap<String, String>, name: &str) -> Result<Option<bool>, ApiError> {
    match query.get(name).map(String::as_str) {
        None => Ok(None),
        Some("" | "1" | "true" | "True") => Ok(Some(true)),
        Some("0" | "false" | "False") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid value {other:?} for {name}: use true or false"
        ))),
    }
}

fn number(query: &HashMap<String, String>, name: &str) -> Result<Option<u64>, ApiError> {
    match query.get(name).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "invalid value {s:?} for {name}: expected a non-negative integer"
            ))
        }),
    }
}

async fn resource(
    inner: Shared,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &HashMap<String, String>,
    accept: &str,
) -> Result<Response, ApiError> {
    let (legacy_watch, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let target = parse_target(group, version, rest)?;
    let r = &RESOURCES[target.res];
    if !inner.crd.serves(r) {
        // Its CRD is uninstalled: the apiserver no longer knows the resource.
        return Err(unknown_resource(group, version, r.plural));
    }
    let table_mode = if table::wants_table(accept) {
        Some(
            IncludeObject::parse(query.get("includeObject").map(String::as_str))
                .map_err(ApiError::bad_request)?,
        )
    } else {
        None
    };
    let label = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut field = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        r.plural,
        extra_fields_in(r.group, r.plural),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let watch = legacy_watch || flag(query, "watch")?.unwrap_or(false);
    let aimed = inner.faults.take_aimed(target.res);
    match aimed {
        Some(Aimed::Throttle) => {
            tracing::info!(resource = r.plural, "fault: answering 429");
            return Err(ApiError::too_many_requests(1));
        }
        Some(Aimed::Error) => {
            tracing::info!(resource = r.plural, "fault: answering 500");
            return Err(ApiError::internal(
                "simulated internal error (fault injection); retry the request",
            ));
        }
        Some(Aimed::Forbid) | None => {}
    }
    if inner.config.forbids(r.plural, r.group) || aimed == Some(Aimed::Forbid) {
        let verb = match (watch, target.name.is_some()) {
            (true, _) => "watch",
            (false, true) => "get",
            (false, false) => "list",
        };
        return Err(ApiError::forbidden(
            verb,
            r.plural,
            r.group,
            target.namespace.as_deref(),
        ));
    }

    if let Some(name) = &target.name {
        if watch {
            // A watch of one object is a watch with a name field selector.
            field = FieldSelector::parse(&format!("metadata.name={name}"), r.plural, &[])
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
        } else {
            let key = key_of(target.namespace.as_deref(), name);
            let obj = inner
                .store
                .get(target.res, &key)
                .ok_or_else(|| ApiError::object_not_found(r.plural, r.group, name))?;
            return Ok(match table_mode {
                Some(include) => to_json(&table::table(
                    r.plural,
                    vec![table::row(r.plural, &obj.value(), include)],
                    json!({"resourceVersion": obj.sel["metadata"]["resourceVersion"]}),
                    true,
                )),
                None => json_response(obj.json.to_vec()),
            });
        }
    }
    let selector = Selector { label, field };
    if watch {
        return start_watch(inner, target, selector, query, table_mode);
    }
    list(inner, target, selector, query, table_mode).await
}

fn start_watch(
    inner: Shared,
    target: Target,
    selector: Selector,
    query: &HashMap<String, String>,
    table_mode: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let rv = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let rv_match = query
        .get("resourceVersionMatch")
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    let send_initial = flag(query, "sendInitialEvents")?;
    let bookmarks = flag(query, "allowWatchBookmarks")?.unwrap_or(false);
    // timeoutSeconds=0 means "no timeout", as for the apiserver's default.
    let timeout = number(query, "timeoutSeconds")?
        .filter(|t| *t > 0)
        .map(Duration::from_secs);
    let parse_rv = |rv: &str| {
        inner.store.parse_rv(rv).ok_or_else(|| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: use one returned by this server (a list's metadata.resourceVersion)"))
        })
    };
    let (start, initial_events_end) = match send_initial {
        Some(true) => {
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
                parse_rv(rv)?;
            }
            (WatchStart::Now, true)
        }
        Some(false) | None => {
            if rv_match.is_some() {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch is only allowed on a watch together with sendInitialEvents=true",
                ));
            }
            match (rv, send_initial) {
                ("" | "0", Some(false)) => (WatchStart::After(inner.store.revision()), false),
                ("" | "0", _) => (WatchStart::Now, false),
                (rv, _) => (WatchStart::After(parse_rv(rv)?), false),
            }
        }
    };
    Ok(watch::serve(
        inner,
        WatchRequest {
            res: target.res,
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

async fn list(
    inner: Shared,
    target: Target,
    selector: Selector,
    query: &HashMap<String, String>,
    table_mode: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let r = &RESOURCES[target.res];
    let store = &inner.store;
    let limit = number(query, "limit")?.filter(|l| *l > 0);
    let rv = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let rv_match = query
        .get("resourceVersionMatch")
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    let parse_rv = |rv: &str| {
        store.parse_rv(rv).ok_or_else(|| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: use one returned by this server (a list's metadata.resourceVersion)"))
        })
    };
    let continuing = query.get("continue").filter(|c| !c.is_empty());
    let (at, after) = if let Some(token) = continuing {
        if !rv.is_empty() {
            return Err(ApiError::bad_request(
                "specifying resourceVersion is not allowed when using continue",
            ));
        }
        let (rev, key) = decode_continue(token)?;
        (Some(rev), Some(key))
    } else {
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
            (rv, Some("Exact")) => Some(parse_rv(rv)?),
            (rv, None) if limit.is_some() => Some(parse_rv(rv)?),
            (rv, None | Some("NotOlderThan")) => {
                wait_for(&inner, parse_rv(rv)?).await?;
                None
            }
            (_, Some(m)) => {
                return Err(ApiError::bad_request(format!(
                    "invalid resourceVersionMatch {m:?}: use NotOlderThan or Exact"
                )))
            }
        };
        (at, None)
    };
    if let Some(at) = at {
        if at > store.revision() {
            wait_for(&inner, at).await?;
        }
    }
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
    let rev = store
        .snapshot(target.res, target.namespace.as_deref(), at, after.as_deref(), &mut visit)
        .map_err(|e| {
            if continuing.is_some() {
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
        })?;
    let mut meta = json!({"resourceVersion": store.rv_string(rev)});
    if more {
        if let Some(last) = items.last() {
            meta["continue"] = json!(encode_continue(rev, &last.key));
        }
        if selector.is_empty() {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if let Some(include) = table_mode {
        let rows: Vec<Vec<u8>> = items
            .iter()
            .map(|o| table::row_json(r.plural, &o.value(), &o.json, include))
            .collect();
        return Ok(json_response(table::table_json(
            r.plural, &rows, &meta, true,
        )));
    }
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"{\"kind\":\"");
    head.extend_from_slice(r.list_kind().as_bytes());
    head.extend_from_slice(b"\",\"apiVersion\":\"");
    head.extend_from_slice(r.api_version().as_bytes());
    head.extend_from_slice(b"\",\"metadata\":");
    head.extend_from_slice(&serde_json::to_vec(&meta).unwrap_or_default());
    head.extend_from_slice(b",\"items\":[");
    Ok(json_response(axum::body::Body::new(ListBody::new(
        head, items,
    ))))
}

/// Wait (up to 3 s) for the store to reach `rev`, as the apiserver does for
/// a resourceVersion newer than it has seen.
async fn wait_for(inner: &Shared, rev: u64) -> Result<(), ApiError> {
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
