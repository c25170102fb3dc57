//! Figures the page keeps about itself for `cargo xtask bench --only page`
//! (built only with the `bench` feature; the release page has the no-ops of
//! `off.rs` instead): the milliseconds spent
//! feeding the informer (decode, DeltaFIFO, store, history) and rendering, and
//! the wasm memory size, and how long watch events take to reach the screen
//! (event→DOM: from the moment a body chunk reaches the page to just after
//! the first frame whose view was built from a store that holds its events).
//! `install` exposes them to the benchmark driver as
//! `window.__deltascope.metrics()`, with `benchCore(listed, events)` to time
//! the informer core on a fixed workload in the page's wasm; nothing here
//! changes what the page does.

use std::cell::{Cell, RefCell};

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::latency::LatencyHistogram;

thread_local! {
    static FEED_MS: Cell<f64> = const { Cell::new(0.0) };
    static FEEDS: Cell<u64> = const { Cell::new(0) };
    static RENDER_MS: Cell<f64> = const { Cell::new(0.0) };
    static RENDERS: Cell<u64> = const { Cell::new(0) };
    /// (arrival ms, watch events) fed since the last view was built.
    static UNSHOWN: RefCell<Vec<(f64, u64)>> = const { RefCell::new(Vec::new()) };
    static EVENT_TO_DOM: RefCell<LatencyHistogram> = RefCell::new(LatencyHistogram::default());
    /// HTTP requests of the page in flight now, and the most since the last reset.
    static IN_FLIGHT: Cell<u32> = const { Cell::new(0) };
    static IN_FLIGHT_PEAK: Cell<u32> = const { Cell::new(0) };
}

/// One HTTP request of the page in flight (a list, a watch of its own, the
/// channel, a control request) while it lives: what holds browser connections.
pub struct InFlight(());

/// Counts a request as in flight until the returned guard drops.
pub fn in_flight() -> InFlight {
    let now = IN_FLIGHT.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    IN_FLIGHT_PEAK.with(|c| c.set(c.get().max(now)));
    InFlight(())
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// `events` watch events (from a chunk that reached the page at
/// `arrived_at`) are now in the store.
pub fn events_fed(arrived_at: f64, events: u64) {
    if events > 0 {
        UNSHOWN.with(|u| u.borrow_mut().push((arrived_at, events)));
    }
}

/// A view was just built from the store: every event fed before it is shown
/// by the frame being produced; its latency is taken once that frame is done
/// (a zero timeout runs after the rendering task and its paint).
pub fn view_built() {
    let unshown = UNSHOWN.with(|u| std::mem::take(&mut *u.borrow_mut()));
    if unshown.is_empty() {
        return;
    }
    let Some(window) = web_sys::window() else {
        return;
    };
    let shown = Closure::once_into_js(move || {
        let now = perf_now();
        EVENT_TO_DOM.with(|h| {
            let mut histogram = h.borrow_mut();
            for (arrived_at, events) in unshown {
                histogram.add(now - arrived_at, events);
            }
        });
    });
    let _ = window.set_timeout_with_callback(shown.unchecked_ref());
}

/// `performance.now()` in milliseconds (0 without a window).
pub fn perf_now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

pub fn add_feed(ms: f64) {
    FEED_MS.with(|c| c.set(c.get() + ms));
    FEEDS.with(|c| c.set(c.get() + 1));
}

pub fn add_render(ms: f64) {
    RENDER_MS.with(|c| c.set(c.get() + ms));
    RENDERS.with(|c| c.set(c.get() + 1));
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
    set("heapLiveBytes", super::heap::live_bytes() as f64);
    set("heapPeakBytes", super::heap::peak_bytes() as f64);
    let (_, shared_bytes) = crate::informer::json::shared_buffers();
    set("sharedSubtreeBytes", shared_bytes as f64);
    set("requestsInFlight", f64::from(IN_FLIGHT.with(Cell::get)));
    set(
        "requestsInFlightPeak",
        f64::from(IN_FLIGHT_PEAK.with(Cell::get)),
    );
    EVENT_TO_DOM.with(|h| {
        let histogram = h.borrow();
        set("eventToDomCount", histogram.total() as f64);
        set("eventToDomP50", histogram.quantile(0.5));
        set("eventToDomP99", histogram.quantile(0.99));
        set("eventToDomMax", histogram.max());
    });
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
            EVENT_TO_DOM.with(|h| *h.borrow_mut() = LatencyHistogram::default());
            IN_FLIGHT_PEAK.with(|c| c.set(IN_FLIGHT.with(Cell::get)));
        }
        value
    });
    // benchCore(listed, events): plays `core_workload::configmaps` through a
    // fresh informer in this page's wasm; {ms, deltas, held} or {error}.
    let bench_core =
        Closure::<dyn Fn(JsValue, JsValue) -> JsValue>::new(|listed: JsValue, events: JsValue| {
            let count = |v: &JsValue| v.as_f64().unwrap_or(0.0).clamp(0.0, 1e7) as usize;
            let workload =
                crate::metrics::core_workload::configmaps(count(&listed), count(&events));
            let started = perf_now();
            let result = crate::metrics::core_workload::play(&workload);
            let ms = perf_now() - started;
            let result = result.map(|informer| informer.store().len());
            let object = js_sys::Object::new();
            let set = |key: &str, value: JsValue| {
                let _ = js_sys::Reflect::set(&object, &key.into(), &value);
            };
            match result {
                Ok(held) => {
                    set("ms", ms.into());
                    set("deltas", (workload.deltas as f64).into());
                    set("held", (held as f64).into());
                }
                Err(error) => set("error", error.to_string().into()),
            }
            object.into()
        });
    let hooks = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&hooks, &"metrics".into(), metrics.as_ref());
    let _ = js_sys::Reflect::set(&hooks, &"benchCore".into(), bench_core.as_ref());
    metrics.forget();
    bench_core.forget();
    let _ = js_sys::Reflect::set(&window, &"__deltascope".into(), &hooks);
}
