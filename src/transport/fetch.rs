//! One GET through `fetch`: headers, then the body as a `ReadableStream` read
//! chunk by chunk (list pages and endless watch streams alike), each chunk fed
//! to the informer as it arrives. Network failures become `Input::Failed`.
//! The reflector says which `Accept` header to send (a Table in table mode).

use std::cell::RefCell;
use std::rc::Weak;

use futures_util::StreamExt;
use wasm_bindgen::JsCast;

use super::slicing::{ChunkPieces, TaskBudget, SLICE_BYTES};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, RequestCredentials, RequestInit, Response};

use super::{feed, DriverState};
use crate::informer::{Input, RequestId};

pub(crate) async fn run_request(
    state: Weak<RefCell<DriverState>>,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
    signal: AbortSignal,
) {
    run_request_with(|input| feed(&state, input), id, path, accept, signal).await
}

/// [`run_request`] for any reader of the inputs (a log follower's stream
/// when serve offers no channel); `feed` returns false to stop reading.
pub(crate) async fn run_request_with(
    feed: impl Fn(Input<'_>) -> bool,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
    signal: AbortSignal,
) {
    let _in_flight = crate::metrics::in_flight();
    let response = match start(&path, accept, &signal).await {
        Ok(response) => response,
        Err(message) => {
            feed(Input::Failed { id, message });
            return;
        }
    };
    let retry_after_secs = response
        .headers()
        .get("Retry-After")
        .ok()
        .flatten()
        .and_then(|value| value.trim().parse::<u64>().ok());
    if !feed(Input::ResponseStarted {
        id,
        status: response.status(),
        retry_after_secs,
    }) {
        return;
    }
    let Some(body) = response.body() else {
        feed(Input::BodyEnd { id });
        return;
    };
    let mut chunks = wasm_streams::ReadableStream::from_raw(body.unchecked_into()).into_stream();
    let mut budget = TaskBudget::default();
    let mut buffer = Vec::new();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(chunk) => {
                let mut pieces = ChunkPieces::new(&chunk);
                while let Some(piece) = pieces.next_into(&mut buffer) {
                    for slice in piece.chunks(SLICE_BYTES) {
                        if !feed(Input::BodyChunk { id, bytes: slice }) {
                            return; // cancelled or stopped: drop the stream, which cancels it
                        }
                        budget.spend().await;
                    }
                }
            }
            Err(error) => {
                let message = format!(
                    "the connection broke while reading {path}: {}",
                    describe(&error)
                );
                feed(Input::Failed { id, message });
                return;
            }
        }
    }
    feed(Input::BodyEnd { id });
}

async fn start(path: &str, accept: Option<&str>, signal: &AbortSignal) -> Result<Response, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_credentials(RequestCredentials::SameOrigin);
    init.set_signal(Some(signal));
    if let Some(accept) = accept {
        let headers =
            Headers::new().map_err(|e| format!("cannot build headers: {}", describe(&e)))?;
        headers
            .set("Accept", accept)
            .map_err(|e| format!("cannot set Accept: {}", describe(&e)))?;
        init.set_headers(&headers);
    }
    let promise = window.fetch_with_str_and_init(path, &init);
    let response = JsFuture::from(promise).await.map_err(|error| {
        format!(
            "cannot reach the deltascope server for {path}: {}",
            describe(&error)
        )
    })?;
    response
        .dyn_into::<Response>()
        .map_err(|_| "fetch returned something that is not a Response".to_string())
}

/// Reads an error answer's body and returns its Status `message` (empty when
/// it sent none). Reading it also lets the request finish.
pub(super) async fn status_message(response: &Response) -> String {
    let text = match response.text() {
        Ok(promise) => JsFuture::from(promise)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    crate::informer::Status::from_body(text.as_bytes())
        .map(|status| status.message)
        .unwrap_or_default()
}

pub(super) fn describe(error: &wasm_bindgen::JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    error.as_string().unwrap_or_else(|| format!("{error:?}"))
}
