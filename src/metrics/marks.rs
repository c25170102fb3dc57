//! Performance API marks at the moments that matter
//! (`deltascope:list-start`, `deltascope:synced`, `deltascope:table-synced`)
//! and measures (`deltascope:metrics-window`: a table's metrics answer,
//! from its first byte, read as it arrives and joined). In every build: browser tests count `list-start` marks (one
//! per informer started), and the page benchmark reads them all.

use std::cell::Cell;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

thread_local! {
    static TABLE_SYNCED: Cell<bool> = const { Cell::new(false) };
}

/// A Performance API mark named `deltascope:{name}`.
pub fn mark(name: &str) {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.mark(&format!("deltascope:{name}"));
    }
}

/// A Performance API measure `deltascope:{name}` from the mark
/// `deltascope:{start}` (made with [`mark`]) to now.
pub fn measure(name: &str, start: &str) {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.measure_with_start_mark(
            &format!("deltascope:{name}"),
            &format!("deltascope:{start}"),
        );
    }
}

/// Marks `deltascope:table-synced` once, after the first frame that shows a synced table.
pub fn table_synced_once() {
    if TABLE_SYNCED.with(|c| c.replace(true)) {
        return;
    }
    if let Some(window) = web_sys::window() {
        let after_paint = Closure::once_into_js(|| {
            if let Some(window) = web_sys::window() {
                let mark_it = Closure::once_into_js(|| mark("table-synced"));
                let _ = window.set_timeout_with_callback(mark_it.unchecked_ref());
            }
        });
        let _ = window.request_animation_frame(after_paint.unchecked_ref());
    }
}
