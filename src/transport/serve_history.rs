//! Asks deltascope serve about the history it records:
//! `GET /_deltascope/history/summary`, same-origin with the page's
//! credentials (as discovery's requests). Any answer is handed back with
//! its status and body — what it means (a summary, no serve, an older
//! serve) is decided in `crate::app::serve_history`; only a request that
//! got no answer is an error.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestCredentials, RequestInit, Response};

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
    #[error("the page has no browser window to ask {SUMMARY_PATH} from")]
    NoWindow,
    #[error("cannot reach the deltascope server for {SUMMARY_PATH}")]
    Unreachable,
    #[error("{SUMMARY_PATH}: the connection broke while reading")]
    Body,
}

/// `GET /_deltascope/history/summary`, whatever its status.
pub async fn summary() -> Result<Answer, SummaryFetchError> {
    let window = web_sys::window().ok_or(SummaryFetchError::NoWindow)?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_credentials(RequestCredentials::SameOrigin);
    let response = JsFuture::from(window.fetch_with_str_and_init(SUMMARY_PATH, &init))
        .await
        .map_err(|_| SummaryFetchError::Unreachable)?
        .dyn_into::<Response>()
        .map_err(|_| SummaryFetchError::Unreachable)?;
    // The body is read whatever the status: it says why, and a body left
    // unread keeps the request from finishing.
    let buffer = response
        .array_buffer()
        .map_err(|_| SummaryFetchError::Body)?;
    let buffer = JsFuture::from(buffer)
        .await
        .map_err(|_| SummaryFetchError::Body)?;
    Ok(Answer {
        status: response.status(),
        body: js_sys::Uint8Array::new(&buffer).to_vec(),
    })
}
