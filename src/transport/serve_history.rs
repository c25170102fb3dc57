//! Asks deltascope serve about the history it records: its summary
//! (`GET /_deltascope/history/summary`), one object's record
//! (`GET /_deltascope/history?…`, the path written by
//! `crate::api::object_record`) and a resource's state at a moment
//! (`GET /_deltascope/history/state?…`, `crate::api::history_state`; read
//! only up to a bound, [`get_at_most`]), plain same-origin requests with
//! the page's credentials (as discovery's), each sent when it is asked. Any answer is
//! handed back with its status and body — what it means (a summary, a
//! record, a state, no serve, an older serve) is decided in
//! `crate::app::serve_history`, `crate::app::object_reach` and
//! `crate::app::recorded_travel`; only a request that got no answer is an
//! error.

use futures_util::StreamExt;
use wasm_bindgen::JsCast;
use web_sys::RequestCredentials;

use super::slicing::{ChunkPieces, TaskBudget};

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

/// `GET path` on serve (a history route), whatever its status; sent now,
/// not when the returned future is first polled (a future spawned during a
/// long frame would wait for the frame to end before its request went
/// out: 80 ms when an object's History opened).
pub fn get(
    path: &str,
) -> impl std::future::Future<Output = Result<Answer, SummaryFetchError>> + 'static {
    let sent = send(path);
    let path = path.to_string();
    async move {
        let response = response_of(sent, &path).await?;
        // Read whatever the status: the body says why.
        let body = response
            .array_buffer()
            .map_err(|_| SummaryFetchError::Body(path.clone()))?;
        let body = wasm_bindgen_futures::JsFuture::from(body)
            .await
            .map_err(|_| SummaryFetchError::Body(path.clone()))?;
        Ok(Answer {
            status: response.status(),
            body: js_sys::Uint8Array::new(&body).to_vec(),
        })
    }
}

/// `fetch(path)`, same-origin with the page's credentials, started now.
fn send(path: &str) -> Option<js_sys::Promise> {
    let init = web_sys::RequestInit::new();
    init.set_credentials(RequestCredentials::SameOrigin);
    web_sys::window().map(|window| window.fetch_with_str_and_init(path, &init))
}

/// The response a request [`send`] started got.
async fn response_of(
    sent: Option<js_sys::Promise>,
    path: &str,
) -> Result<web_sys::Response, SummaryFetchError> {
    let unreachable = || SummaryFetchError::Unreachable(path.to_string());
    let response = wasm_bindgen_futures::JsFuture::from(sent.ok_or_else(unreachable)?)
        .await
        .map_err(|_| unreachable())?;
    response.dyn_into().map_err(|_| unreachable())
}

/// An answer read up to a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    Whole(Answer),
    /// Its body is longer than the bound: it was not read on.
    TooLarge,
}

/// `GET path` on serve, its body read only up to `limit` bytes (a past
/// state may be hundreds of megabytes); copied 64 KB at a time, yielding
/// when the task has run 8 ms, as the streamed lists are.
pub fn get_at_most(
    path: &str,
    limit: usize,
) -> impl std::future::Future<Output = Result<Bounded, SummaryFetchError>> + 'static {
    let sent = send(path);
    let path = path.to_string();
    async move { read_at_most(response_of(sent, &path).await?, &path, limit).await }
}

/// [`get_at_most`]'s reading of the body.
async fn read_at_most(
    response: web_sys::Response,
    path: &str,
    limit: usize,
) -> Result<Bounded, SummaryFetchError> {
    let status = response.status();
    let Some(body) = response.body() else {
        return Ok(Bounded::Whole(Answer {
            status,
            body: Vec::new(),
        }));
    };
    let mut chunks = wasm_streams::ReadableStream::from_raw(body.unchecked_into()).into_stream();
    let declared = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|length| length.trim().parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        let _ = chunks.cancel().await;
        return Ok(Bounded::TooLarge);
    }
    let mut budget = TaskBudget::default();
    let mut buffer = Vec::new();
    let mut read = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|_| SummaryFetchError::Body(path.to_string()))?;
        let mut pieces = ChunkPieces::new(&chunk);
        while let Some(piece) = pieces.next_into(&mut buffer) {
            if read.len() + piece.len() > limit {
                let _ = chunks.cancel().await;
                return Ok(Bounded::TooLarge);
            }
            read.extend_from_slice(piece);
            budget.spend().await;
        }
    }
    Ok(Bounded::Whole(Answer { status, body: read }))
}
