//! API errors as Kubernetes `Status` objects with the right HTTP code, reason
//! and a message a user can act on.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The user the simulated cluster names when it forbids a resource (`--forbid`).
pub const FORBIDDEN_USER: &str = "system:serviceaccount:deltascope:viewer";

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "NotFound", message)
    }

    pub fn object_not_found(resource: &str, group: &str, name: &str) -> ApiError {
        let what = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        let mut e = ApiError::not_found(format!("{what} \"{name}\" not found"));
        e.details = Some(json!({"name": name, "group": group, "kind": resource}));
        e
    }

    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::GONE, "Expired", message)
    }

    pub fn method_not_allowed(method: &str) -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("the simulated cluster is read-only: {method} is not supported (use GET to get, list or watch)"),
        )
    }

    pub fn too_many_requests(retry_after: u64) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            format!("too many requests (simulated throttling fault); retry after {retry_after}s"),
        );
        e.details = Some(json!({"retryAfterSeconds": retry_after}));
        e.retry_after = Some(retry_after);
        e
    }

    /// What the apiserver answers when RBAC denies `verb` on a resource:
    /// `pods is forbidden: User "…" cannot list resource "pods" in API group "" in the namespace "shop"`.
    pub fn forbidden(verb: &str, plural: &str, group: &str, namespace: Option<&str>) -> ApiError {
        let what = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let mut e = ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "{what} is forbidden: User \"{FORBIDDEN_USER}\" cannot {verb} resource \"{plural}\" in API group \"{group}\" {scope}"
            ),
        );
        e.details = Some(json!({"group": group, "kind": plural}));
        e
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// The `Status` object, also used inside watch ERROR events.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code.as_u16()
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.code.as_u16(),
            self.reason,
            self.message
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut resp = (self.code, body).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// A JSON response with the given body (bytes, or a streamed body).
pub fn json_response(body: impl Into<axum::body::Body>) -> Response {
    let mut resp = (StatusCode::OK, body.into()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
