//! deltascope: the client-go informer machinery (Reflector → DeltaFIFO →
//! Store/Indexer → History) as a pure Rust core, plus the browser transport and
//! the yew views that run it inside the page.
//!
//! `informer` is the `deltascope-informer` crate (no web dependency, compiled
//! and tested natively); `transport` and `ui` exist only on `wasm32`.

pub mod command;
pub mod core_workload;
pub mod discovery;
pub mod discovery_refresh;
pub mod fade;
/// The informer core lives in its own crate (`informer/`), so Cargo keeps
/// it free of web dependencies; the page reaches it as `crate::informer`.
pub use deltascope_informer as informer;
pub mod kept;
pub mod latency;
pub mod object_text;
pub mod plain_error;
pub mod printer_columns;
pub mod retention;
pub mod route;
pub mod status_line;
pub mod table_model;
pub mod time_travel;
pub mod timeline_model;

#[cfg(target_arch = "wasm32")]
pub mod transport;

#[cfg(target_arch = "wasm32")]
pub mod ui;
