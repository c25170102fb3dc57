//! deltascope-proxy: the small, strict HTTP server between the browser page and
//! the cluster (`serve`). The simulated cluster is its own crate,
//! `deltascope-sim` (`sim/`): serve starts it only for `--demo`, and the
//! binary's `sim` command runs it alone.

pub mod allocator;
pub mod api_headers;
pub mod assets;
pub mod auth;
pub mod body;
pub mod channel;
pub mod clusters;
pub mod compress;
pub mod conn;
pub mod csp;
pub mod forward;
pub mod history_access;
pub mod history_api;
pub mod history_marks;
pub mod history_usage;
mod layers;
pub mod limits;
pub mod paths;
mod process;
pub mod query;
pub mod recorder;
pub mod recording;
pub mod redact;
pub mod serve;
pub mod sign_in_code;
mod signin;
mod state;
pub mod status;
pub mod token_file;
pub mod upstream_io;
pub mod upstreams;
