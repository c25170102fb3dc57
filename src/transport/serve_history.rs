//! Asks deltascope serve about the history it records: its summary
//! (`GET /_deltascope/history/summary`) and one object's record
//! (`GET /_deltascope/history?…`, the path written by
//! `crate::api::object_record`), plain requests through gloo-net,
//! same-origin with the page's credentials (as discovery's). Any answer is
//! handed back with its status and body — what it means (a summary, a
//! record, no serve, an older serve) is decided in `crate::app::serve_history`
//! and `crate::app::object_reach`; only a request that got no answer is an
//! error.

use gloo_net::http::Request;
use web_sys::RequestCredentials;

/// serve's summary of the history it records.
pub const SUMMARY_PATH: &str = "/_deltascope/history/summary";

/// An answer: its HTTP status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryFetchError {
    #[error("cannot reach the deltascope server for {0}")]
    Unreachable(String),
    #[error("{0}: the connection broke while reading")]
    Body(String),
}

/// `GET /_deltascope/history/summary`, whatever its status.
pub async fn summary() -> Result<Answer, SummaryFetchError> {
    get(SUMMARY_PATH).await
}

/// `GET path` on serve (a history route), whatever its status.
pub async fn get(path: &str) -> Result<Answer, SummaryFetchError> {
    let response = Request::get(path)
        .credentials(RequestCredentials::SameOrigin)
        .send()
        .await
        .map_err(|_| SummaryFetchError::Unreachable(path.to_string()))?;
    // The body is read whatever the status: it says why, and a body left
    // unread keeps the request from finishing.
    let body = response
        .binary()
        .await
        .map_err(|_| SummaryFetchError::Body(path.to_string()))?;
    Ok(Answer {
        status: response.status(),
        body,
    })
}
