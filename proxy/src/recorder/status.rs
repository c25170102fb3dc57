//! What the recorder says about itself ([`RecorderStatus`]): the cluster it
//! records, what it is doing ([`RecorderState`]), how many resources it
//! records and which of them fail, what it wrote and when. Shared through a
//! `tokio::sync::watch` channel, so reading it is a clone and serve can
//! show it in the page's status bar and on the command line.
//!
//! [`Board`] is the recorder's side: the supervisor sets the state, the
//! writer counts what it wrote, and each resource's driver reports whether
//! its informer is failing ([`Health`]); the supervisor folds those into the
//! status once a second.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use deltascope_history::ClusterId;
use tokio::sync::watch;

/// What the recorder is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecorderState {
    /// Reading the cluster's identity and discovery; resources starting.
    Starting,
    /// Every resource is listed and watched (some may be failing: see
    /// [`RecorderStatus::failing`]).
    Recording,
    /// The upstream cannot be reached (the cluster's identity or discovery
    /// cannot be read, or every resource's requests fail to connect);
    /// retrying with backoff.
    UpstreamUnreachable { reason: String },
    /// The history database cannot be written: nothing is watched until it
    /// can, and the time is recorded as a gap then. `next_retry_ms` is when
    /// it is tried again (ms since the Unix epoch).
    DatabaseUnavailable { reason: String, next_retry_ms: i64 },
    /// Stopped: by the shutdown signal (`error: None`) or by an error no
    /// retry can get past (`error`, worded for the command line).
    Stopped { error: Option<String> },
}

/// One recorded resource whose informer is failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceProblem {
    /// As in `data-resource`: `pods`, `deployments.apps`.
    pub resource: String,
    /// The reflector's last error.
    pub reason: String,
}

/// The recorder's status (cheap to clone; see [`crate::recorder::RecorderHandle::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderStatus {
    /// The `kube-system` namespace's uid, once read.
    pub cluster: Option<ClusterId>,
    pub state: RecorderState,
    /// Resources being recorded now.
    pub resources: usize,
    /// Those of them whose list or watch is failing, by name (at most 20).
    pub failing: Vec<ResourceProblem>,
    /// Deltas stored since the recorder started.
    pub deltas_written: u64,
    /// Gaps stored since the recorder started.
    pub gaps_written: u64,
    /// When the database last took a batch (ms since the Unix epoch).
    pub last_write_ms: Option<i64>,
    /// What the lead should print once: names in `--record`/`--no-record`
    /// that discovery does not list (yet: a CRD may come later).
    pub warnings: Vec<String>,
}

impl Default for RecorderStatus {
    fn default() -> Self {
        RecorderStatus {
            cluster: None,
            state: RecorderState::Starting,
            resources: 0,
            failing: Vec::new(),
            deltas_written: 0,
            gaps_written: 0,
            last_write_ms: None,
            warnings: Vec::new(),
        }
    }
}

impl RecorderStatus {
    /// One line for the command line and the page's status bar.
    pub fn summary(&self) -> String {
        let count = |n: usize| match n {
            1 => "1 resource".to_owned(),
            n => format!("{n} resources"),
        };
        match &self.state {
            RecorderState::Starting => "recorder starting".to_owned(),
            RecorderState::Recording if self.failing.is_empty() => format!(
                "recording {}; {} deltas stored",
                count(self.resources),
                self.deltas_written
            ),
            RecorderState::Recording => format!(
                "recording {} ({} failing: {}: {}); {} deltas stored",
                count(self.resources),
                self.failing.len(),
                self.failing[0].resource,
                self.failing[0].reason,
                self.deltas_written
            ),
            RecorderState::UpstreamUnreachable { reason } => {
                format!("recorder: the cluster cannot be reached ({reason}); retrying")
            }
            RecorderState::DatabaseUnavailable {
                reason,
                next_retry_ms,
            } => {
                let wait = (next_retry_ms - super::clock::wall_now_ms()).max(0) / 1000;
                format!(
                    "recorder paused: the history database is unavailable ({reason}); \
                     retrying in {wait} s"
                )
            }
            RecorderState::Stopped { error: None } => "recorder stopped".to_owned(),
            RecorderState::Stopped { error: Some(e) } => format!("recorder stopped: {e}"),
        }
    }
}

/// How one resource's informer is doing, as its driver last reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Health {
    Ok,
    /// Failing; `network` when its requests cannot reach the upstream.
    Failing {
        reason: String,
        network: bool,
    },
}

/// The recorder's side of the status.
#[derive(Clone)]
pub(crate) struct Board {
    status: Arc<watch::Sender<RecorderStatus>>,
    health: Arc<Mutex<BTreeMap<String, Health>>>,
    /// Why the cluster's identity, in doubt, cannot be read (nothing is
    /// recorded meanwhile: `identity_gate`).
    identity: Arc<Mutex<Option<String>>>,
}

/// The most failing resources named in the status.
const MAX_PROBLEMS: usize = 20;

impl Board {
    pub(crate) fn new() -> (Board, watch::Receiver<RecorderStatus>) {
        let (tx, rx) = watch::channel(RecorderStatus::default());
        let board = Board {
            status: Arc::new(tx),
            health: Arc::new(Mutex::new(BTreeMap::new())),
            identity: Arc::new(Mutex::new(None)),
        };
        (board, rx)
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut RecorderStatus)) {
        self.status.send_modify(change);
    }

    pub(crate) fn set_state(&self, state: RecorderState) {
        self.status.send_if_modified(|status| {
            let changed = status.state != state;
            status.state = state;
            changed
        });
    }

    /// A driver's report (called when its informer's health changes).
    pub(crate) fn report(&self, resource: &str, health: Health) {
        if let Ok(mut map) = self.health.lock() {
            map.insert(resource.to_owned(), health);
        }
    }

    /// Why the identity in doubt cannot be read (`None`: it was read);
    /// folded in as the upstream unreachable.
    pub(crate) fn identity_problem(&self, problem: Option<String>) {
        if let Ok(mut held) = self.identity.lock() {
            *held = problem;
        }
    }

    /// A resource is no longer recorded.
    pub(crate) fn forget(&self, resource: &str) {
        if let Ok(mut map) = self.health.lock() {
            map.remove(resource);
        }
    }

    /// Folds the drivers' reports into the status; while recording, the
    /// state becomes [`RecorderState::UpstreamUnreachable`] when every
    /// resource fails and some cannot connect, or the identity in doubt
    /// cannot be read, and back when that is over.
    pub(crate) fn fold_health(&self) {
        let (failing, unreachable) = {
            let Ok(map) = self.health.lock() else {
                return;
            };
            let mut failing = Vec::new();
            let mut unreachable = None;
            for (resource, health) in map.iter() {
                if let Health::Failing { reason, network } = health {
                    if *network && unreachable.is_none() {
                        unreachable = Some(reason.clone());
                    }
                    failing.push(ResourceProblem {
                        resource: resource.clone(),
                        reason: reason.clone(),
                    });
                }
            }
            let all_fail = !map.is_empty() && failing.len() == map.len();
            let identity = self
                .identity
                .lock()
                .ok()
                .and_then(|problem| problem.clone());
            (failing, identity.or(unreachable.filter(|_| all_fail)))
        };
        self.status.send_if_modified(|status| {
            let before = status.clone();
            status.failing = failing.into_iter().take(MAX_PROBLEMS).collect();
            match (&status.state, unreachable) {
                (RecorderState::Recording, Some(reason)) => {
                    status.state = RecorderState::UpstreamUnreachable { reason }
                }
                (RecorderState::UpstreamUnreachable { .. }, None) => {
                    status.state = RecorderState::Recording
                }
                (RecorderState::UpstreamUnreachable { .. }, Some(reason)) => {
                    status.state = RecorderState::UpstreamUnreachable { reason }
                }
                _ => {}
            }
            *status != before
        });
    }
}
