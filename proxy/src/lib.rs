//! deltascope-proxy: the small, strict HTTP server between the browser page and
//! the cluster (`serve`), and the embedded simulated cluster (`sim`) used by
//! `--demo` and by every test.

pub mod api_headers;
pub mod assets;
pub mod auth;
pub mod body;
pub mod channel;
pub mod conn;
pub mod csp;
pub mod forward;
mod layers;
pub mod paths;
pub mod query;
pub mod redact;
pub mod serve;
mod signin;
pub mod sim;
pub mod status;
