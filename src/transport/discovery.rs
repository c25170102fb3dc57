//! Fetches API discovery (`/api/v1`, `/apis`, then each group's preferred
//! version) for the resource picker, and a CRD's definition, as plain
//! requests through gloo-net; parsing lives in `crate::api::resources` (and
//! `crate::model::printer_columns`), when to run it again in
//! `crate::app::discovery_schedule`.

use gloo_net::http::Request;
use web_sys::RequestCredentials;

use crate::api::resources::{
    listable_resources, preferred_group_versions, ApiResource, DiscoveryError,
};

/// Why a discovery request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("cannot reach the deltascope server for {path}")]
    Unreachable { path: String },
    #[error("{path} answered HTTP {status}{}{message}", if message.is_empty() { "" } else { ": " })]
    Http {
        path: String,
        status: u16,
        /// The `message` of the server's Status, if it sent one.
        message: String,
        /// The server's `Retry-After` (a 429 or 503 says when to ask again).
        retry_after_secs: Option<u64>,
    },
    #[error("{path}: the connection broke while reading")]
    Body { path: String },
    #[error(transparent)]
    Malformed(#[from] DiscoveryError),
}

impl FetchError {
    /// How long the server asked us to wait, in milliseconds.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            FetchError::Http {
                retry_after_secs: Some(secs),
                ..
            } => Some(secs.saturating_mul(1000)),
            _ => None,
        }
    }
}

async fn get_bytes(path: &str) -> Result<Vec<u8>, FetchError> {
    let response = Request::get(path)
        .credentials(RequestCredentials::SameOrigin)
        .send()
        .await
        .map_err(|_| FetchError::Unreachable { path: path.into() })?;
    if !response.ok() {
        let retry_after_secs = response
            .headers()
            .get("Retry-After")
            .and_then(|value| value.trim().parse::<u64>().ok());
        // Read the error body: it says why, and a body left unread keeps
        // the request from finishing (and from the page's resource timing).
        let body = response.text().await.unwrap_or_default();
        let message = crate::informer::Status::from_body(body.as_bytes())
            .map(|status| status.message)
            .unwrap_or_default();
        return Err(FetchError::Http {
            path: path.into(),
            status: response.status(),
            message,
            retry_after_secs,
        });
    }
    response
        .binary()
        .await
        .map_err(|_| FetchError::Body { path: path.into() })
}

/// Every listable resource of the cluster whose API is at `api_root`
/// (`""`, or serve's `/clusters/{name}`), core first, then groups in the
/// server's order. A group that fails is skipped and named in the returned
/// warnings.
pub async fn discover(api_root: &str) -> Result<(Vec<ApiResource>, Vec<String>), FetchError> {
    let core = get_bytes(&format!("{api_root}/api/v1")).await?;
    let mut resources = listable_resources("/api/v1", &core)?;
    let groups = get_bytes(&format!("{api_root}/apis")).await?;
    let mut warnings = Vec::new();
    for group_version in preferred_group_versions(&groups)? {
        let path = format!("/apis/{group_version}");
        let found = match get_bytes(&format!("{api_root}{path}")).await {
            Ok(body) => listable_resources(&path, &body).map_err(FetchError::from),
            Err(error) => Err(error),
        };
        match found {
            Ok(found) => resources.extend(found),
            Err(warning) => warnings.push(warning.to_string()),
        }
    }
    Ok((resources, warnings))
}

/// The CustomResourceDefinition `{plural}.{group}` of the cluster at
/// `api_root` as JSON bytes (the informers service reads its printer
/// columns from it).
pub async fn crd_definition(api_root: &str, group: &str, plural: &str) -> Result<Vec<u8>, String> {
    let path = format!(
        "{api_root}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}"
    );
    get_bytes(&path).await.map_err(|e| e.to_string())
}
