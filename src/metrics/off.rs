//! The release page's stand-ins for the benchmark's figures (`page.rs`,
//! built with the `bench` feature): the same calls, doing nothing, so the
//! transport and the app call them unconditionally and the release wasm
//! carries no counters, histogram or `window.__deltascope`.

/// A request in flight (counted only in bench builds).
pub struct InFlight(());

#[inline]
pub fn in_flight() -> InFlight {
    InFlight(())
}

#[inline]
pub fn events_fed(_arrived_at: f64, _events: u64) {}

#[inline]
pub fn view_built() {}

/// No clock is read: nothing is timed in the release page.
#[inline]
pub fn perf_now() -> f64 {
    0.0
}

#[inline]
pub fn add_feed(_ms: f64) {}

#[inline]
pub fn add_render(_ms: f64) {}

#[inline]
pub fn install() {}
