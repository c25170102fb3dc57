//! The clusters one `deltascope serve` forwards to, and keeping them
//! reachable.
//!
//! Each is a kubeconfig context (`--context NAME`; with no cluster flag, the
//! current context), a URL the user runs a proxy on (`--upstream URL`,
//! `--upstream NAME=URL`) or the simulated cluster (`--demo`). For a
//! context, serve runs `kubectl proxy --unix-socket` itself, on a socket in
//! a directory only the user can enter, so no TCP port ever carries the
//! user's credentials: `supervise` keeps that process running (stderr
//! logged and kept, restarted with backoff, killed when serve stops) and
//! checks every cluster's health and identity; `board` holds what
//! `GET /_deltascope/clusters` shows; `kubectl` finds kubectl and asks the
//! kubeconfig. Requests reach a cluster through its own
//! [`Forwarder`] ([`Upstreams`] routes them).

mod board;
mod kubectl;
mod supervise;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderValue};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::forward::{Forwarder, SessionLimits};
use crate::upstreams::Upstreams;

pub use board::{ClusterView, Phase, SourceKind};
pub use kubectl::KubectlError;
pub use supervise::{SocketDirError, FIRST_BACKOFF, HEALTHY_RESET, HEALTH_EVERY, MAX_BACKOFF};

use board::ClusterState;
use kubectl::Kubectl;
use supervise::{KubectlProxy, SocketDir};

/// The name of an `--upstream URL` given without a name.
pub const UNNAMED_UPSTREAM: &str = "default";

/// How long serve waits at start for its clusters to answer before it
/// serves anyway (and says which do not).
const START_WAIT: Duration = Duration::from_secs(10);

/// One cluster as the command line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterFlag {
    /// `--context NAME`.
    Context(String),
    /// `--upstream URL` (`name: None`) or `--upstream NAME=URL`.
    Upstream { name: Option<String>, url: String },
}

impl ClusterFlag {
    /// `--upstream`'s value: `NAME=URL` when what precedes the first `=`
    /// has no `:` or `/` (a URL's scheme has), else a URL.
    pub fn upstream(value: &str) -> Self {
        match value.split_once('=') {
            Some((name, url)) if !name.contains([':', '/']) => ClusterFlag::Upstream {
                name: Some(name.to_owned()),
                url: url.to_owned(),
            },
            _ => ClusterFlag::Upstream {
                name: None,
                url: value.to_owned(),
            },
        }
    }
}

/// The clusters `serve` is asked for; no flag: the current context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterPlan {
    /// In the order given; the first is the default cluster.
    pub flags: Vec<ClusterFlag>,
    /// `--kubeconfig`, for kubectl.
    pub kubeconfig: Option<PathBuf>,
}

/// Why serve cannot start with these clusters.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("invalid upstream URL {url:?}: {reason}")]
    Upstream { url: String, reason: String },
    #[error("two clusters are named {0:?}: each --context and --upstream NAME=URL needs a name of its own")]
    DuplicateName(String),
    #[error("a cluster's name must not be empty (--upstream NAME=URL)")]
    EmptyName,
    #[error(transparent)]
    Kubectl(#[from] KubectlError),
    #[error(transparent)]
    SocketDir(#[from] SocketDirError),
    #[error("no cluster to serve")]
    NoCluster,
}

/// One cluster before it starts.
struct Planned {
    name: String,
    source: Source,
}

enum Source {
    Context(String),
    Url(String),
}

/// The running clusters: their forwarders, their state, the tasks that
/// keep them, and the socket directory (removed by [`Clusters::stop`]).
pub struct Clusters {
    upstreams: Arc<Upstreams>,
    states: Vec<ClusterState>,
    stop: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The clusters whose health [`Clusters::check_health`] starts checking.
    unchecked: Mutex<Vec<(Forwarder, ClusterState)>>,
    sockets: Mutex<Option<SocketDir>>,
}

impl Clusters {
    /// Starts every cluster of `plan` (the `kubectl proxy`s and the health
    /// checks) and waits up to `START_WAIT` (10 s) for them to answer; one that
    /// does not is said on stderr, and serve starts all the same. Errors
    /// are what no waiting mends: an unknown context, no kubectl, a bad URL
    /// or name.
    pub async fn start(
        plan: &ClusterPlan,
        show_secrets: bool,
        limits: SessionLimits,
    ) -> Result<Clusters, ClusterError> {
        let (planned, kubectl) = resolve(plan).await?;
        let runner = match kubectl {
            Some(kubectl) => Some((kubectl, SocketDir::create(planned.len())?)),
            None => None,
        };
        let stop = CancellationToken::new();
        let mut tasks = Vec::new();
        let mut states = Vec::new();
        let mut by_name = Vec::new();
        let mut unchecked = Vec::new();
        for (index, cluster) in planned.into_iter().enumerate() {
            let (kind, forwarder, proxy) = match (&cluster.source, &runner) {
                (Source::Url(url), _) => {
                    (SourceKind::Upstream, http(url, show_secrets, limits)?, None)
                }
                (Source::Context(context), Some((kubectl, sockets))) => {
                    let socket = sockets.socket(index);
                    let label = format!("the kubectl proxy of context {context:?}");
                    let forwarder = Forwarder::unix(&socket, label, show_secrets, limits);
                    let proxy = KubectlProxy {
                        kubectl: kubectl.clone(),
                        context: context.clone(),
                        socket,
                    };
                    (SourceKind::Context, forwarder, Some(proxy))
                }
                (Source::Context(_), None) => continue, // `runner` is Some with any context
            };
            let state = ClusterState::new(cluster.name.clone(), index == 0, kind);
            match proxy {
                Some(proxy) => {
                    let task = supervise::supervise(proxy, state.clone(), stop.clone());
                    tasks.push(tokio::spawn(task));
                    let task = supervise::monitor(forwarder.clone(), state.clone(), stop.clone());
                    tasks.push(tokio::spawn(task));
                }
                None => unchecked.push((forwarder.clone(), state.clone())),
            }
            states.push(state);
            by_name.push((cluster.name, forwarder));
        }
        let upstreams = Upstreams::named(by_name).ok_or(ClusterError::NoCluster)?;
        let clusters = Clusters {
            upstreams: Arc::new(upstreams),
            states,
            stop,
            tasks: Mutex::new(tasks),
            unchecked: Mutex::new(unchecked),
            sockets: Mutex::new(runner.map(|(_, sockets)| sockets)),
        };
        clusters.wait_for_start().await;
        Ok(clusters)
    }

    /// The simulated cluster (`--demo`), checked like any other.
    pub fn demo(forwarder: Forwarder) -> Clusters {
        let state = ClusterState::new("demo".into(), true, SourceKind::Demo);
        Clusters {
            upstreams: Arc::new(Upstreams::single(forwarder.clone())),
            states: vec![state.clone()],
            stop: CancellationToken::new(),
            tasks: Mutex::new(Vec::new()),
            unchecked: Mutex::new(vec![(forwarder, state)]),
            sockets: Mutex::new(None),
        }
    }

    /// Starts checking the health and identity of the clusters serve does
    /// not run a `kubectl proxy` for (a URL, the simulated cluster): `run`
    /// does, once serving, as it always said whether the upstream answers.
    /// A context's cluster is checked from its start (serve waits for it).
    pub fn check_health(&self) {
        let unchecked = std::mem::take(&mut *lock(&self.unchecked));
        let mut tasks = lock(&self.tasks);
        for (forwarder, state) in unchecked {
            let task = supervise::monitor(forwarder, state, self.stop.clone());
            tasks.push(tokio::spawn(task));
        }
    }

    /// Waits until each context's `kubectl proxy` listens and says how its
    /// cluster is (at most [`START_WAIT`]); says on stderr which clusters
    /// do not answer. A URL is not waited for: that proxy is the user's.
    async fn wait_for_start(&self) {
        let deadline = tokio::time::Instant::now() + START_WAIT;
        let waited = |s: &&ClusterState| s.view().source == SourceKind::Context;
        while tokio::time::Instant::now() < deadline
            && self.states.iter().filter(waited).any(|s| !s.settled())
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let views = self.states.iter().filter(waited).map(ClusterState::view);
        for view in views.filter(|v| v.state != Phase::Up) {
            eprintln!(
                "deltascope: cluster {:?} does not answer yet ({}); serve starts anyway, keeps \
                 trying, and /_deltascope/clusters shows its state",
                view.name,
                view.error.as_deref().unwrap_or("no answer yet")
            );
        }
    }

    /// Where requests go.
    pub fn upstreams(&self) -> &Arc<Upstreams> {
        &self.upstreams
    }

    /// Every cluster now, the default first.
    pub fn views(&self) -> Vec<ClusterView> {
        self.states.iter().map(ClusterState::view).collect()
    }

    /// `GET /_deltascope/clusters`: [`Clusters::views`] as a JSON array.
    pub fn answer(&self) -> Response {
        let body = serde_json::to_vec(&self.views()).unwrap_or_else(|_| b"[]".to_vec());
        let mut response = Response::new(Body::from(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    /// Stops the health checks, kills every `kubectl proxy` (and waits for
    /// it) and removes the socket directory.
    pub async fn stop(&self) {
        self.stop.cancel();
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        for task in tasks {
            let _ = task.await;
        }
        lock(&self.sockets).take();
    }
}

impl Drop for Clusters {
    /// Dropped without [`Clusters::stop`] (a test's serve): the tasks end,
    /// and with them their `kubectl proxy` (killed on drop).
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn http(url: &str, show_secrets: bool, limits: SessionLimits) -> Result<Forwarder, ClusterError> {
    Forwarder::http(url, show_secrets, limits).map_err(|e| ClusterError::Upstream {
        url: url.to_owned(),
        reason: e.to_string(),
    })
}

/// The clusters of `plan`, named, checked: URLs parse, names are unique,
/// every context is in the kubeconfig; no flag means the current context.
/// With a context, the kubectl that will run its proxy.
async fn resolve(plan: &ClusterPlan) -> Result<(Vec<Planned>, Option<Kubectl>), ClusterError> {
    let mut planned: Vec<Planned> = plan
        .flags
        .iter()
        .map(|flag| match flag {
            ClusterFlag::Context(context) => Planned {
                name: context.clone(),
                source: Source::Context(context.clone()),
            },
            ClusterFlag::Upstream { name, url } => Planned {
                name: name.clone().unwrap_or_else(|| UNNAMED_UPSTREAM.to_owned()),
                source: Source::Url(url.clone()),
            },
        })
        .collect();
    for (index, cluster) in planned.iter().enumerate() {
        if cluster.name.is_empty() {
            return Err(ClusterError::EmptyName);
        }
        if planned[..index].iter().any(|p| p.name == cluster.name) {
            return Err(ClusterError::DuplicateName(cluster.name.clone()));
        }
        if let Source::Url(url) = &cluster.source {
            http(url, false, SessionLimits::default())?;
        }
        if cluster.name.contains('/') {
            tracing::warn!(cluster = %cluster.name, "a name with `/` cannot be reached under \
                /clusters/NAME/ (only at the default paths, when it is the first cluster)");
        }
    }
    let contexts: Vec<&str> = planned
        .iter()
        .filter_map(|p| match &p.source {
            Source::Context(context) => Some(context.as_str()),
            Source::Url(_) => None,
        })
        .collect();
    if !planned.is_empty() && contexts.is_empty() {
        return Ok((planned, None));
    }
    let kubectl = Kubectl::find(plan.kubeconfig.clone())?;
    if planned.is_empty() {
        let context = kubectl.current_context().await?;
        planned.push(Planned {
            name: context.clone(),
            source: Source::Context(context),
        });
    } else {
        kubectl.check_contexts(&contexts).await?;
    }
    Ok((planned, Some(kubectl)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_values_are_a_url_or_a_name_and_a_url() {
        assert_eq!(
            ClusterFlag::upstream("http://127.0.0.1:8001"),
            ClusterFlag::Upstream {
                name: None,
                url: "http://127.0.0.1:8001".into()
            }
        );
        assert_eq!(
            ClusterFlag::upstream("prod=http://127.0.0.1:8001/x=y"),
            ClusterFlag::Upstream {
                name: Some("prod".into()),
                url: "http://127.0.0.1:8001/x=y".into()
            }
        );
    }

    #[tokio::test]
    async fn names_must_be_unique_and_urls_valid_before_anything_starts() {
        let plan = |flags: Vec<ClusterFlag>| ClusterPlan {
            flags,
            kubeconfig: None,
        };
        let error = resolve(&plan(vec![
            ClusterFlag::upstream("http://127.0.0.1:1"),
            ClusterFlag::upstream("http://127.0.0.1:2"),
        ]))
        .await
        .err()
        .unwrap();
        assert!(matches!(error, ClusterError::DuplicateName(ref n) if n == "default"));
        let error = resolve(&plan(vec![ClusterFlag::upstream("a=https://x")]))
            .await
            .err()
            .unwrap();
        assert!(
            error.to_string().starts_with("invalid upstream URL"),
            "{error}"
        );
        let error = resolve(&plan(vec![ClusterFlag::upstream("=http://x")]))
            .await
            .err()
            .unwrap();
        assert!(matches!(error, ClusterError::EmptyName));
    }
}
