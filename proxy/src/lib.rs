//! deltascope-proxy: the small, strict HTTP server between the browser page and
//! the cluster (`serve`), and the embedded simulated cluster (`sim`) used by
//! `--demo` and by every test.

pub mod serve;
pub mod sim;
