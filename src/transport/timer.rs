//! `setTimeout` as a future, for the reflector's wake-ups (backoff, resync, timeouts).

use wasm_bindgen_futures::JsFuture;

use crate::informer::Millis;

pub async fn sleep_ms(delay: Millis) {
    let delay = i32::try_from(delay).unwrap_or(i32::MAX);
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        if let Some(window) = web_sys::window() {
            // If scheduling fails the promise never resolves; the next input re-arms the timer.
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, delay);
        }
    });
    let _ = JsFuture::from(promise).await;
}
