//! Asks deltascope serve about the history it records:
//! `GET /_deltascope/history/summary`, a plain request through gloo-net,
//! same-origin with the page's credentials (as discovery's). Any answer is handed back with
//! its status and body — what it means (a summary, no serve, an older
//! serve) is decided in `crate::app::serve_history`; only a request that
//! got no answer is an error.

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
    #[error("cannot reach the deltascope server for {SUMMARY_PATH}")]
    Unreachable,
    #[error("{SUMMARY_PATH}: the connection broke while reading")]
    Body,
}

/// `GET /_deltascope/history/summary`, whatever its status.
pub async fn summary() -> Result<Answer, SummaryFetchError> {
    let response = Request::get(SUMMARY_PATH)
        .credentials(RequestCredentials::SameOrigin)
        .send()
        .await
        .map_err(|_| SummaryFetchError::Unreachable)?;
    // The body is read whatever the status: it says why, and a body left
    // unread keeps the request from finishing.
    let body = response
        .binary()
        .await
        .map_err(|_| SummaryFetchError::Body)?;
    Ok(Answer {
        status: response.status(),
        body,
    })
}
