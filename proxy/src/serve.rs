//! `deltascope serve`: assembles the listener, the auth and host/origin layers,
//! the read-only API forwarder (to an upstream URL or the in-process simulated
//! cluster) and the static assets of the page.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::sim::SimConfig;

/// Where API requests go.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A Kubernetes API URL, normally `kubectl proxy` (`http://127.0.0.1:8001`).
    Url(String),
    /// The embedded simulated cluster, in-process.
    Demo(SimConfig),
}

/// Everything `deltascope serve` needs; built from the command line by `main.rs`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: Upstream,
    pub dist: PathBuf,
    /// `None`: a random 256-bit token, hex-encoded.
    pub token: Option<String>,
    pub allow_hosts: Vec<String>,
    pub allow_writes: bool,
    pub show_secrets: bool,
    pub max_watches_per_session: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Server(std::io::Error),
    #[error("invalid upstream URL {url:?}: {reason}")]
    Upstream { url: String, reason: String },
}

/// Runs until the process is stopped. Prints `deltascope: open http://ADDR/?token=T`
/// on stdout once listening.
pub async fn run(config: ServeConfig) -> Result<(), ServeError> {
    let _ = config;
    Err(ServeError::Server(std::io::Error::other(
        "serve is not built yet",
    )))
}
