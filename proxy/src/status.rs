//! Kubernetes `Status` error bodies: every refusal by `deltascope serve` on an
//! API-ish path is one, so the page's reflector and `kubectl` read it like any
//! apiserver error.

use axum::body::Body;
use axum::response::Response;
use deltascope_facts::Status;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, StatusCode};

/// A `Status` response with `status: Failure`.
pub fn status(code: StatusCode, reason: &str, message: impl Into<String>) -> Response {
    let body = Status::failure(code.as_u16(), reason, message).to_body();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// 429 with a `Status` saying `message` and `Retry-After: SECONDS` (at least 1):
/// a bound of the session or of serve was reached; the client may try again.
pub fn too_many_requests(message: impl Into<String>, retry_after_secs: u64) -> Response {
    let mut response = status(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", message);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs.max(1)));
    response
}

/// 401 for API paths without a valid session.
pub fn unauthorized() -> Response {
    status(
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "deltascope: not signed in; open a sign-in link the `deltascope serve` command \
         printed (http://ADDR/?code=…, one browser, once; its sign-in page at http://ADDR/ \
         has it print a new one), or send `Authorization: Bearer TOKEN`",
    )
}
