//! Discovery documents: `/version`, `/api`, `/apis`, `/api/v1`,
//! `/apis/{group}`, `/apis/{group}/{version}`, the aggregated discovery
//! (`apidiscovery.k8s.io` v2 and v2beta1) when the client asks for it, and a
//! minimal `/openapi/v2|v3`. Each lists what is served at the time it is
//! asked (a CRD's group and resource come and go with it, see `crd`; the
//! metrics API's with `SimConfig::metrics`, get and list only, see `metrics`).

use axum::http::{header, HeaderValue};
use axum::response::Response;
use serde_json::{json, Value};

use std::sync::Arc;

use crate::resources::{groups, versions, ResourceType};
use crate::status::{json_response, ApiError};

/// The resources served now, in discovery order (`Store::served`).
pub type Served = [Arc<ResourceType>];

pub fn version(minor: u32) -> Value {
    json!({
        "major": "1", "minor": minor.to_string(),
        "gitVersion": format!("v1.{minor}.0"),
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc", "platform": "linux/amd64"
    })
}

fn resource_entry(r: &Arc<ResourceType>) -> Value {
    let mut e = json!({
        "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
        "verbs": r.verbs()
    });
    if !r.measured {
        e["storageVersionHash"] = json!(format!("{:x}", r.plural.len() * 2654435761 % 0xffff_ffff));
    }
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    e
}

/// `/api/v1` or `/apis/{g}/{v}`; `None` for a group/version not served.
pub fn resource_list(group: &str, version: &str, served: &Served) -> Option<Value> {
    let resources: Vec<Value> = served
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(resource_entry)
        .collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn group_entry(g: &str, served: &Served) -> Value {
    let vs: Vec<Value> = versions(g, served)
        .iter()
        .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": g, "versions": vs, "preferredVersion": preferred})
}

pub fn api_versions() -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
    })
}

pub fn api_group_list(served: &Served) -> Value {
    let gs: Vec<Value> = groups(served)
        .into_iter()
        .map(|g| group_entry(g, served))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

pub fn api_group(g: &str, served: &Served) -> Option<Value> {
    if !groups(served).contains(&g) {
        return None;
    }
    let mut e = group_entry(g, served);
    e["kind"] = json!("APIGroup");
    e["apiVersion"] = json!("v1");
    Some(e)
}

/// Which aggregated discovery version the Accept header asks for, if any.
pub fn aggregated_version(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        if !part.contains("as=APIGroupDiscoveryList") || !part.contains("g=apidiscovery.k8s.io") {
            continue;
        }
        if part.contains("v=v2beta1") {
            return Some("v2beta1");
        }
        if part.contains("v=v2") {
            return Some("v2");
        }
    }
    None
}

/// The aggregated discovery document for `/api` (core = true) or `/apis`.
pub fn aggregated(core: bool, version: &str, served: &Served) -> Response {
    let mut items = Vec::new();
    let group_names: Vec<&str> = if core { vec![""] } else { groups(served) };
    for g in group_names {
        let mut vs = Vec::new();
        for v in versions(g, served) {
            let resources: Vec<Value> = served
                .iter()
                .filter(|r| r.group == g && r.version == v)
                .map(|r| {
                    let mut e = json!({
                        "resource": r.plural,
                        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": r.singular, "verbs": r.verbs()
                    });
                    if !r.short_names.is_empty() {
                        e["shortNames"] = json!(r.short_names);
                    }
                    if !r.categories.is_empty() {
                        e["categories"] = json!(r.categories);
                    }
                    e
                })
                .collect();
            vs.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({"metadata": {"name": g}, "versions": vs}));
    }
    let body = json!({
        "kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {}, "items": items
    });
    let mut resp = json_response(serde_json::to_vec(&body).unwrap_or_default());
    let ct = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    if let Ok(v) = HeaderValue::from_str(&ct) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

/// `/openapi/v2` and `/openapi/v3`: this cluster publishes no schemas.
pub fn openapi(path: &str) -> Result<Response, ApiError> {
    match path {
        "v3" => Ok(json_response(br#"{"paths":{}}"#.to_vec())),
        _ => Err(ApiError::not_found(format!(
            "the simulated cluster does not publish OpenAPI schemas at /openapi/{path}; discovery is at /api and /apis"
        ))),
    }
}
