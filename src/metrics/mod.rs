//! What the page measures about itself. Performance marks (`marks`) are in
//! every build: browser tests count them. Everything else exists for
//! `cargo xtask bench` and is compiled only with the `bench` feature
//! (`cargo xtask bench` builds the page with it; the release page does not):
//! feed and render times, event→DOM latencies (`latency`), requests in
//! flight, `window.__deltascope` (`page`), and a fixed informer workload
//! (`core_workload`) that the benchmark runs both in the page and natively.
//! Without the feature, `off` provides the same calls as no-ops. `heap`, a
//! counting allocator, is in every build; only the programs that install it
//! (the bench page, the native memory benches and test) pay for it. Depends on
//! nothing of the page but the informer core, so the transport may call it.

#[cfg(feature = "bench")]
pub mod core_workload;
pub mod heap;
#[cfg(feature = "bench")]
pub mod latency;

#[cfg(target_arch = "wasm32")]
mod marks;
#[cfg(target_arch = "wasm32")]
pub use marks::{mark, measure, table_synced_once};

#[cfg(all(target_arch = "wasm32", feature = "bench"))]
mod page;
#[cfg(all(target_arch = "wasm32", feature = "bench"))]
pub use page::*;

#[cfg(all(target_arch = "wasm32", not(feature = "bench")))]
mod off;
#[cfg(all(target_arch = "wasm32", not(feature = "bench")))]
pub use off::*;
