//! The simulated cluster: an in-memory Kubernetes API server (MVCC store, list
//! and watch routes, selectors, Table output, discovery), a seeded workload
//! generator and fault injection. Used by `deltascope sim`, `serve --demo` and tests.

use std::net::SocketAddr;

/// How the simulated cluster starts.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub initial_pods: usize,
    pub churn_per_sec: f64,
    /// Prepended to every resourceVersion ("" = plain numbers).
    pub rv_prefix: String,
    pub minor_version: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            initial_pods: 200,
            churn_per_sec: 5.0,
            rv_prefix: String::new(),
            minor_version: 32,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the simulated cluster only listens on loopback addresses; {0} is not one (try 127.0.0.1:8001)")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Server(std::io::Error),
}

/// `deltascope sim --listen ADDR`.
pub async fn run_standalone(listen: SocketAddr, config: SimConfig) -> Result<(), SimError> {
    let _ = config;
    if !listen.ip().is_loopback() {
        return Err(SimError::NotLoopback(listen));
    }
    Err(SimError::Server(std::io::Error::other(
        "sim is not built yet",
    )))
}

/// A running simulated cluster. Cheap to clone; all clones share one cluster.
/// `start` must be called inside a tokio runtime (it spawns the workload task).
#[derive(Clone)]
pub struct Sim {
    config: std::sync::Arc<SimConfig>,
}

impl Sim {
    pub fn start(config: SimConfig) -> Sim {
        Sim {
            config: std::sync::Arc::new(config),
        }
    }

    /// `/api`, `/apis`, `/version`, `/openapi/*`: what `kubectl` and the page call.
    pub fn api_router(&self) -> axum::Router {
        let _ = &self.config;
        axum::Router::new()
    }

    /// `/_sim/*`: churn, scale, fault injection, digest.
    pub fn control_router(&self) -> axum::Router {
        axum::Router::new()
    }

    /// DESIGN §4 digest of one resource (`pods`, `deployments.apps`), all namespaces.
    pub fn digest(&self, resource: &str) -> String {
        let _ = resource;
        String::new()
    }
}
