//! The API routes: parses `/api/...` and `/apis/...` paths into discovery,
//! list, get and watch requests, reads the query string as the apiserver
//! does (`crate::query`: first values, its booleans), validates the
//! parameters (selectors, `includeObject`, and in `list` and `watching`
//! the rest), meets the faults aimed at the resource, and answers.
//!
//! The files: `target` (what a path points at), `params` (parameters lists
//! and watches share), `list` (LIST and its pages), `watching` (a watch
//! request's start and options), `metrics` (the metrics API's paths, served
//! while `SimConfig::metrics` is on; off, they are 404 like any unknown
//! group's).

mod list;
mod metrics;
mod params;
mod target;
mod watching;

use std::collections::HashMap;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use serde_json::{json, Value};

use self::list::list;
use self::target::{parse_target, Target};
use self::watching::start_watch;
use crate::cluster::{Inner, Shared};
use crate::discovery;
use crate::faults::{take, Aim, Aimed};
use crate::query::{self, flag};
use crate::selectors::{extra_fields_in, FieldSelector, LabelSelector, Selector};
use crate::status::{json_response, ApiError};
use crate::store::key_of;
use crate::table::{self, IncludeObject};

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

/// The `throttle` and `error` faults: the next N API requests (or N of one
/// path's) fail.
async fn faults(State(inner): State<Shared>, req: Request, next: Next) -> Response {
    let aimed = inner
        .faults
        .take_aimed(&Aim::Path(req.uri().path().to_owned()));
    if aimed == Some(Aimed::Throttle) || take(&inner.faults.throttle) {
        tracing::info!(path = %req.uri().path(), "fault: answering 429");
        return ApiError::too_many_requests(1).into_response();
    }
    if aimed == Some(Aimed::Error) || take(&inner.faults.errors) {
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
    let query = query::parse(uri.query());
    let not_found = || {
        ApiError::not_found(format!(
            "the server could not find the requested resource (GET {path})"
        ))
    };
    let served = served(&inner);
    match segs.as_slice() {
        ["openapi", rest @ ..] => discovery::openapi(&rest.join("/")),
        ["api"] => Ok(match discovery::aggregated_version(&accept) {
            Some(v) => discovery::aggregated(true, v, &served),
            None => to_json(&discovery::api_versions()),
        }),
        ["apis"] => Ok(match discovery::aggregated_version(&accept) {
            Some(v) => discovery::aggregated(false, v, &served),
            None => to_json(&discovery::api_group_list(&served)),
        }),
        ["api", "v1"] => discovery::resource_list("", "v1", &served)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["api", "v1", "namespaces", ns, "pods", name, "log"] => {
            crate::logs::serve(inner, ns, name, &query).await
        }
        ["api", "v1", rest @ ..] => resource(inner, "", "v1", rest, &query, &accept).await,
        ["apis", "metrics.k8s.io", "v1beta1", rest @ ..] if !rest.is_empty() => {
            match &inner.metrics {
                Some(m) => metrics::serve(&inner, m, rest, &query, &accept),
                None => Err(not_found()),
            }
        }
        ["apis", g] => discovery::api_group(g, &served)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["apis", g, v] => discovery::resource_list(g, v, &served)
            .map(|v| to_json(&v))
            .ok_or_else(not_found),
        ["apis", g, v, rest @ ..] => resource(inner, g, v, rest, &query, &accept).await,
        _ => Err(not_found()),
    }
}

/// What discovery lists: the store's resources, and the metrics API's
/// while it is on.
fn served(inner: &Inner) -> Vec<std::sync::Arc<crate::resources::ResourceType>> {
    let mut served = inner.store.served();
    if inner.metrics.is_some() {
        served.extend(
            crate::resources::METRICS
                .iter()
                .map(|r| std::sync::Arc::new(r.clone())),
        );
    }
    served
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
    let target = parse_target(&inner.store, group, version, rest)?;
    let r = target.resource.clone();
    let table_mode = table::asked_mode(accept, query.get("includeObject").map(String::as_str))
        .map_err(ApiError::bad_request)?;
    let label = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut field = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        &r.plural,
        extra_fields_in(&r.group, &r.plural),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let watch = legacy_watch || flag(query, "watch").unwrap_or(false);
    admit(&inner, &target, watch)?;
    if let Some(name) = &target.name {
        if !watch {
            return get_one(&inner, &target, name, table_mode);
        }
        // A watch of one object is a watch with a name field selector.
        field = FieldSelector::parse(&format!("metadata.name={name}"), &r.plural, &[])
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let selector = Selector { label, field };
    if watch {
        return start_watch(inner, target, selector, query, table_mode);
    }
    list(inner, target, selector, query, table_mode).await
}

/// The faults aimed at the resource, then RBAC as `--forbid` and the
/// `forbid` fault play it: 429, 500 or 403 instead of an answer.
fn admit(inner: &Inner, target: &Target, watch: bool) -> Result<(), ApiError> {
    let r = &target.resource;
    let aimed = inner.faults.take_aimed(&Aim::Resource(target.res));
    match aimed {
        Some(Aimed::Throttle) => {
            tracing::info!(resource = %r.plural, "fault: answering 429");
            return Err(ApiError::too_many_requests(1));
        }
        Some(Aimed::Error) => {
            tracing::info!(resource = %r.plural, "fault: answering 500");
            return Err(ApiError::internal(
                "simulated internal error (fault injection); retry the request",
            ));
        }
        Some(Aimed::Forbid) | None => {}
    }
    if inner.config.forbids(&r.plural, &r.group) || aimed == Some(Aimed::Forbid) {
        let verb = match (watch, target.name.is_some()) {
            (true, _) => "watch",
            (false, true) => "get",
            (false, false) => "list",
        };
        return Err(ApiError::forbidden(
            verb,
            &r.plural,
            &r.group,
            target.namespace.as_deref(),
        ));
    }
    Ok(())
}

/// GET of one object, as itself or as a one-row Table.
fn get_one(
    inner: &Inner,
    target: &Target,
    name: &str,
    table_mode: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let r = &target.resource;
    let key = key_of(target.namespace.as_deref(), name);
    let obj = inner
        .store
        .get(target.res, &key)
        .ok_or_else(|| ApiError::object_not_found(&r.plural, &r.group, name))?;
    Ok(match table_mode {
        Some(include) => to_json(&table::table(
            r.printed_as(),
            vec![table::row(r.printed_as(), &obj.value(), include)],
            json!({"resourceVersion": obj.sel["metadata"]["resourceVersion"]}),
            true,
        )),
        None => json_response(obj.json.to_vec()),
    })
}
