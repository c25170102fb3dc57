//! Keeps the page answering while a large body arrives: bytes are fed to
//! an informer in slices of at most [`SLICE_BYTES`], and once the current
//! task has run for [`TASK_BUDGET_MS`] the reader yields to the event loop
//! (a `MessageChannel` message: a new task with no timer clamp) so the
//! page can draw a frame and take input before the next slice. The browser
//! may hand over several megabytes of a list at once; fed in one go, 100k
//! pods' last chunks held the main thread for half a second.
//! The informer core takes a body split at any byte, so slicing changes
//! nothing it sees.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The most bytes fed to an informer in one call.
pub const SLICE_BYTES: usize = 32 * 1024;

/// The most bytes of a body chunk copied into the page's memory at once.
/// A browser that fell behind hands over several megabytes in one chunk;
/// copied whole (`Uint8Array::to_vec`), 30k pods' list had a 28 ms task of
/// copying alone.
pub const COPY_BYTES: u32 = 64 * 1024;

/// How long one task may feed before yielding.
pub const TASK_BUDGET_MS: f64 = 8.0;

fn clock() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Time spent in the current task, and the yield when it is used up.
pub struct TaskBudget {
    started: f64,
}

impl Default for TaskBudget {
    fn default() -> Self {
        TaskBudget { started: clock() }
    }
}

impl TaskBudget {
    /// This task has used its budget (for work that yields another way,
    /// e.g. by waiting for a database request inside its transaction).
    pub fn used_up(&self) -> bool {
        clock() - self.started >= TASK_BUDGET_MS
    }

    /// Counts from now (after such a wait).
    pub fn restart(&mut self) {
        self.started = clock();
    }

    /// Yields to the event loop if this task has used its budget.
    pub async fn spend(&mut self) {
        if clock() - self.started >= TASK_BUDGET_MS {
            yield_to_event_loop().await;
            self.started = clock();
        }
    }
}

/// A body chunk, copied into the page's memory a piece of at most
/// [`COPY_BYTES`] at a time, into one buffer that is reused.
pub struct ChunkPieces {
    chunk: js_sys::Uint8Array,
    at: u32,
}

impl ChunkPieces {
    pub fn new(chunk: &wasm_bindgen::JsValue) -> ChunkPieces {
        ChunkPieces {
            chunk: js_sys::Uint8Array::new(chunk),
            at: 0,
        }
    }

    /// The next piece, in `buffer`; `None` once the chunk is all read.
    pub fn next_into<'b>(&mut self, buffer: &'b mut Vec<u8>) -> Option<&'b [u8]> {
        let length = self.chunk.length();
        if self.at >= length {
            return None;
        }
        let end = length.min(self.at.saturating_add(COPY_BYTES));
        buffer.resize((end - self.at) as usize, 0);
        self.chunk.subarray(self.at, end).copy_to(buffer);
        self.at = end;
        Some(buffer)
    }
}

/// Resolves in a new task, after the browser had its chance to render
/// and dispatch input.
pub async fn yield_to_event_loop() {
    let Ok(channel) = web_sys::MessageChannel::new() else {
        return;
    };
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let on_message = Closure::once_into_js(move || {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        });
        channel
            .port1()
            .set_onmessage(Some(on_message.unchecked_ref()));
        let _ = channel.port2().post_message(&wasm_bindgen::JsValue::NULL);
    });
    let _ = JsFuture::from(promise).await;
}

/// A hidden tab draws no frames: [`next_animation_frame`] waits this long
/// at most.
const FRAME_WAIT_MS: i32 = 100;

/// Resolves in the browser's next animation frame, after the page's own
/// frame callback asked for earlier (what changed before it is drawn), or
/// after [`FRAME_WAIT_MS`] in a tab that draws none.
pub async fn next_animation_frame() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let on_frame = Closure::once_into_js({
            let resolve = resolve.clone();
            move || {
                let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
            }
        });
        let on_timeout = Closure::once_into_js(move || {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        });
        let _ = window.request_animation_frame(on_frame.unchecked_ref());
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
            on_timeout.unchecked_ref(),
            FRAME_WAIT_MS,
        );
    });
    let _ = JsFuture::from(promise).await;
}
