//! Fetches API discovery (`/api/v1`, `/apis`, then each group's preferred
//! version) for the resource picker; parsing lives in `crate::discovery`.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestCredentials, RequestInit, Response};

use crate::discovery::{listable_resources, preferred_group_versions, ApiResource};

async fn get_bytes(path: &str) -> Result<Vec<u8>, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_credentials(RequestCredentials::SameOrigin);
    let response = JsFuture::from(window.fetch_with_str_and_init(path, &init))
        .await
        .map_err(|_| format!("cannot reach the deltascope server for {path}"))?
        .dyn_into::<Response>()
        .map_err(|_| "fetch returned something that is not a Response".to_string())?;
    if !response.ok() {
        return Err(format!("{path} answered HTTP {}", response.status()));
    }
    let buffer = JsFuture::from(
        response
            .array_buffer()
            .map_err(|_| format!("{path}: body unreadable"))?,
    )
    .await
    .map_err(|_| format!("{path}: the connection broke while reading"))?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Every listable resource, core first, then groups in the server's order.
/// A group that fails is skipped and named in the returned warnings.
pub async fn discover() -> Result<(Vec<ApiResource>, Vec<String>), String> {
    let core = get_bytes("/api/v1").await?;
    let mut resources = listable_resources("/api/v1", &core).map_err(|e| e.to_string())?;
    let groups = get_bytes("/apis").await?;
    let mut warnings = Vec::new();
    for group_version in preferred_group_versions(&groups).map_err(|e| e.to_string())? {
        let path = format!("/apis/{group_version}");
        match get_bytes(&path)
            .await
            .and_then(|b| listable_resources(&path, &b).map_err(|e| e.to_string()))
        {
            Ok(found) => resources.extend(found),
            Err(warning) => warnings.push(warning),
        }
    }
    Ok((resources, warnings))
}

/// The priority-0 printer columns of a custom resource, read from its
/// CustomResourceDefinition (`{plural}.{group}`). An error (not a CRD, not
/// readable) means the table keeps its fallback columns.
pub async fn crd_printer_columns(
    group: &str,
    version: &str,
    plural: &str,
) -> Result<Vec<crate::printer_columns::PrinterColumn>, String> {
    let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}");
    let crd = get_bytes(&path).await?;
    let (columns, warnings) =
        crate::printer_columns::default_columns(&crd, version).map_err(|e| e.to_string())?;
    for warning in warnings {
        web_sys::console::warn_1(&warning.to_string().into());
    }
    Ok(columns)
}
