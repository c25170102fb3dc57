//! Figures the page keeps about itself for `cargo xtask bench --only page`:
//! Performance API marks at the moments that matter (`deltascope:list-start`,
//! `deltascope:synced`, `deltascope:table-synced`), the milliseconds spent
//! feeding the informer (decode, DeltaFIFO, store, history) and rendering, and
//! the wasm memory size. `install` exposes them to the benchmark driver as
//! `window.__deltascope.metrics()`; nothing here changes what the page does.

use std::cell::Cell;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

thread_local! {
    static FEED_MS: Cell<f64> = const { Cell::new(0.0) };
    static FEEDS: Cell<u64> = const { Cell::new(0) };
    static RENDER_MS: Cell<f64> = const { Cell::new(0.0) };
    static RENDERS: Cell<u64> = const { Cell::new(0) };
    static TABLE_SYNCED: Cell<bool> = const { Cell::new(false) };
}

/// `performance.now()` in milliseconds (0 without a window).
pub fn perf_now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// A Performance API mark named `deltascope:{name}`.
pub fn mark(name: &str) {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.mark(&format!("deltascope:{name}"));
    }
}

pub fn add_feed(ms: f64) {
    FEED_MS.with(|c| c.set(c.get() + ms));
    FEEDS.with(|c| c.set(c.get() + 1));
}

pub fn add_render(ms: f64) {
    RENDER_MS.with(|c| c.set(c.get() + ms));
    RENDERS.with(|c| c.set(c.get() + 1));
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

fn wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| {
            m.buffer()
                .dyn_into::<js_sys::ArrayBuffer>()
                .map_or(0.0, |b| f64::from(b.byte_length()))
        })
        .unwrap_or(0.0)
}

fn snapshot() -> JsValue {
    let object = js_sys::Object::new();
    let set = |key: &str, value: f64| {
        let _ = js_sys::Reflect::set(&object, &key.into(), &value.into());
    };
    set("feedMs", FEED_MS.with(Cell::get));
    set("feeds", FEEDS.with(Cell::get) as f64);
    set("renderMs", RENDER_MS.with(Cell::get));
    set("renders", RENDERS.with(Cell::get) as f64);
    set("wasmMemoryBytes", wasm_memory_bytes());
    object.into()
}

/// Sets `window.__deltascope = { metrics() }` and resets the counters
/// (`metrics(true)` resets after reading).
pub fn install() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let metrics = Closure::<dyn Fn(JsValue) -> JsValue>::new(|reset: JsValue| {
        let value = snapshot();
        if reset.is_truthy() {
            FEED_MS.with(|c| c.set(0.0));
            FEEDS.with(|c| c.set(0));
            RENDER_MS.with(|c| c.set(0.0));
            RENDERS.with(|c| c.set(0));
        }
        value
    });
    let hooks = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&hooks, &"metrics".into(), metrics.as_ref());
    metrics.forget();
    let _ = js_sys::Reflect::set(&window, &"__deltascope".into(), &hooks);
}
