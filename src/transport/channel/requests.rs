//! The channel's HTTP requests: the one long-lived `GET` whose body is the
//! channel, and the control `POST`s that open and close its streams, with
//! what serve's answers to them mean.

use deltascope_channel::{Control, CHANNEL_PATH, CONTENT_TYPE};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, RequestCredentials, RequestInit, Response};

use super::super::fetch::{describe, status_message};

pub(super) async fn get(signal: &AbortSignal) -> Result<Response, String> {
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_credentials(RequestCredentials::SameOrigin);
    init.set_signal(Some(signal));
    let headers = Headers::new().map_err(|e| describe(&e))?;
    headers
        .set("Accept", CONTENT_TYPE)
        .map_err(|e| describe(&e))?;
    init.set_headers(&headers);
    send(CHANNEL_PATH, &init).await
}

pub(super) enum PostError {
    /// serve does not know the channel (it closed, or serve restarted).
    UnknownChannel(String),
    Other(String),
}

pub(super) async fn post(channel: &str, control: &Control) -> Result<(), PostError> {
    let _in_flight = crate::metrics::in_flight();
    let body = serde_json::to_string(control)
        .map_err(|e| PostError::Other(format!("cannot encode a channel request: {e}")))?;
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_credentials(RequestCredentials::SameOrigin);
    init.set_body(&JsValue::from_str(&body));
    let headers = Headers::new().map_err(|e| PostError::Other(describe(&e)))?;
    headers
        .set("Content-Type", "application/json")
        .map_err(|e| PostError::Other(describe(&e)))?;
    init.set_headers(&headers);
    let response = send(&format!("{CHANNEL_PATH}/{channel}"), &init)
        .await
        .map_err(|e| PostError::UnknownChannel(format!("cannot reach deltascope serve: {e}")))?;
    match response.status() {
        200..=299 => Ok(()),
        404 | 401 => Err(PostError::UnknownChannel(format!(
            "deltascope serve no longer knows this channel (HTTP {}; restarted?)",
            response.status()
        ))),
        status => {
            // serve says why (a bound of the session reached: 429).
            let message = status_message(&response).await;
            Err(PostError::Other(if message.is_empty() {
                format!("deltascope serve refused a channel request (HTTP {status})")
            } else {
                format!("deltascope serve refused a channel request (HTTP {status}): {message}")
            }))
        }
    }
}

pub(super) async fn send(path: &str, init: &RequestInit) -> Result<Response, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str_and_init(path, init))
        .await
        .map_err(|e| describe(&e))?;
    response
        .dyn_into::<Response>()
        .map_err(|_| "fetch returned something that is not a Response".to_string())
}
