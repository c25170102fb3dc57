//! API errors as Kubernetes `Status` objects with the right HTTP code, reason
//! and a message a user can act on, and the JSON answers of `/_sim/*`. The body is `deltascope_facts::Status`,
//! the one the page's reflector reads.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use deltascope_facts::{Status, StatusCause, StatusDetails};
use serde_json::Value;

/// The user the simulated cluster names when it forbids a resource (`--forbid`).
pub const FORBIDDEN_USER: &str = "system:serviceaccount:deltascope:viewer";

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    /// Boxed: most errors have none, and `Result<_, ApiError>` stays small.
    pub details: Option<Box<StatusDetails>>,
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
        e.details = Some(Box::new(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..StatusDetails::default()
        }));
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
        e.details = Some(Box::new(StatusDetails {
            retry_after_seconds: retry_after,
            ..StatusDetails::default()
        }));
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
        e.details = Some(Box::new(StatusDetails {
            group: group.to_string(),
            kind: plural.to_string(),
            ..StatusDetails::default()
        }));
        e
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// The "resourceVersion too large" answer's details (a
    /// `ResourceVersionTooLarge` cause, retry after a second).
    pub fn with_too_large_rv_details(mut self) -> ApiError {
        self.details = Some(Box::new(StatusDetails {
            causes: vec![StatusCause {
                kind: "ResourceVersionTooLarge".to_string(),
                message: "Too large resource version".to_string(),
                field: String::new(),
            }],
            retry_after_seconds: 1,
            ..StatusDetails::default()
        }));
        self
    }

    /// The `Status` object, also used inside watch ERROR events.
    pub fn to_status(&self) -> Value {
        let status = Status::failure(self.code.as_u16(), self.reason, self.message.clone());
        match &self.details {
            Some(details) => status.with_details(details.as_ref().clone()).to_value(),
            None => status.to_value(),
        }
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

/// A `/_sim/*` request's JSON body, or 400 saying what was expected.
pub(crate) fn parse_body<T: for<'de> serde::Deserialize<'de>>(
    body: &[u8],
    example: &str,
) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("invalid JSON body ({e}); expected e.g. {example}"))
    })
}

/// A `/_sim/*` answer: 200 and the JSON.
pub(crate) fn answer(v: Value) -> Response {
    json_response(serde_json::to_vec(&v).unwrap_or_default())
}
