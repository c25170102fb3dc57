//! deltascope: the client-go informer machinery (Reflector → DeltaFIFO →
//! Store/Indexer → History) running inside the page, with the browser
//! transport, the informers service and the yew views around it.
//!
//! Layers, each depending only on those before it (see ARCHITECTURE.md;
//! `tests/layers.rs` reads every file's `crate::` paths and fails on one
//! against this order):
//! - `informer`: the `deltascope-informer` crate (no web dependency);
//! - `api`: formats the page reads and writes (API discovery documents,
//!   recordings);
//! - `address`: the page's hash routes (a table, one object, a logs view),
//!   parsed and written;
//! - `metrics`: performance marks, and the benchmark's hooks behind the
//!   `bench` feature;
//! - `model`: view models — tables, printer columns, timeline, delta list,
//!   the past store, object text, status wording — pure and tested natively;
//! - `app`: the page's state and decisions (`:` commands, the kept set,
//!   retention, the discovery schedule, the reducer's state and actions),
//!   pure and tested natively;
//! - `transport` (wasm only): the network, driven by `service` (the views
//!   read only its clock, `transport::now`);
//! - `service` (wasm only): the informers service, owner of every informer;
//! - `ui` (wasm only): yew views that read state and snapshots and dispatch
//!   actions.

pub mod address;
pub mod api;
pub mod app;
/// The informer core lives in its own crate (`informer/`), so Cargo keeps
/// it free of web dependencies; the page reaches it as `crate::informer`.
pub use deltascope_informer as informer;
pub mod metrics;
pub mod model;

#[cfg(target_arch = "wasm32")]
pub mod transport;

#[cfg(target_arch = "wasm32")]
pub mod service;

#[cfg(target_arch = "wasm32")]
pub mod ui;
