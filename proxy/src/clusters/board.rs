//! What serve knows of each cluster now, as `GET /_deltascope/clusters`
//! shows it: where it comes from, whether it answers, why not (the last
//! lines its `kubectl proxy` wrote on stderr, or the connection's error),
//! how often its `kubectl proxy` was restarted, and its identity (the
//! `kube-system` namespace's uid), with the one it had before when a
//! different cluster now answers behind the same name.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

/// How many of a `kubectl proxy`'s last stderr lines are kept.
const STDERR_LINES: usize = 5;

/// Where a cluster's API is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A kubeconfig context, through the `kubectl proxy` serve runs.
    Context,
    /// A URL the user gave (`--upstream`), normally their own `kubectl proxy`.
    Upstream,
    /// The simulated cluster in serve's process (`--demo`).
    Demo,
}

/// Whether the cluster answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Not yet answered nor failed for good since serve started (a
    /// restarted `kubectl proxy` leaves its cluster `Down` until it answers).
    Starting,
    Up,
    Down,
}

/// One cluster as `/_deltascope/clusters` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterView {
    pub name: String,
    pub default: bool,
    pub source: SourceKind,
    /// The `kube-system` namespace's uid, once read.
    pub identity: Option<String>,
    /// The identity this name had before, when it changed while serve ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_changed_from: Option<String>,
    pub state: Phase,
    /// Why it is not up (or why its identity cannot be read).
    pub error: Option<String>,
    /// Times its `kubectl proxy` was started again.
    pub restarts: u32,
}

/// What the supervisor and the health checks write and the route reads.
struct Inner {
    view: ClusterView,
    /// The last lines of the `kubectl proxy` on stderr.
    stderr: VecDeque<String>,
    /// Why its `kubectl proxy` is not running (wins over a failed check).
    exited: Option<String>,
    up_since: Option<Instant>,
    /// A check since the last start got an answer (if not a good one).
    reached: bool,
}

/// One cluster's state, shared.
#[derive(Clone)]
pub struct ClusterState(Arc<Mutex<Inner>>);

impl ClusterState {
    pub fn new(name: String, default: bool, source: SourceKind) -> Self {
        ClusterState(Arc::new(Mutex::new(Inner {
            view: ClusterView {
                name,
                default,
                source,
                identity: None,
                identity_changed_from: None,
                state: Phase::Starting,
                error: None,
                restarts: 0,
            },
            stderr: VecDeque::new(),
            exited: None,
            up_since: None,
            reached: false,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding it leaves plain data: still readable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The view now.
    pub fn view(&self) -> ClusterView {
        self.lock().view.clone()
    }

    pub fn name(&self) -> String {
        self.lock().view.name.clone()
    }

    /// A line its `kubectl proxy` wrote on stderr.
    pub fn stderr_line(&self, line: String) {
        let mut inner = self.lock();
        if inner.stderr.len() == STDERR_LINES {
            inner.stderr.pop_front();
        }
        inner.stderr.push_back(line);
    }

    /// Its `kubectl proxy` was started (again, when `restart`: the cluster
    /// stays down, with why its last run ended, until it answers).
    pub fn spawned(&self, restart: bool) {
        let mut inner = self.lock();
        inner.up_since = None;
        inner.reached = false;
        if restart {
            inner.view.restarts += 1;
        } else {
            inner.exited = None;
            inner.view.state = Phase::Starting;
        }
    }

    /// Its `kubectl proxy` exited or could not start: `why`, with its last
    /// stderr lines.
    pub fn exited(&self, why: String) {
        let mut inner = self.lock();
        let why = with_stderr(why, &inner.stderr);
        inner.exited = Some(why.clone());
        inner.up_since = None;
        inner.view.state = Phase::Down;
        inner.view.error = Some(why);
    }

    /// How long it has answered without a break (`None`: not up).
    pub fn up_for(&self) -> Option<Duration> {
        self.lock().up_since.map(|since| since.elapsed())
    }

    /// A health check answered; `identity` is what it read (`Err`: why it
    /// could not be read, the cluster answering all the same).
    pub fn answered(&self, identity: Result<String, String>) {
        let mut inner = self.lock();
        inner.stderr.clear();
        inner.exited = None;
        inner.up_since.get_or_insert_with(Instant::now);
        inner.view.state = Phase::Up;
        match identity {
            Ok(identity) => {
                inner.view.error = None;
                let known = inner.view.identity.replace(identity.clone());
                if let Some(old) = known.filter(|old| *old != identity) {
                    tracing::warn!(
                        cluster = %inner.view.name,
                        from = %old,
                        to = %identity,
                        "a different cluster now answers behind this name (its kube-system \
                         namespace's uid changed)"
                    );
                    inner.view.identity_changed_from = Some(old);
                }
            }
            Err(why) => inner.view.error = Some(why),
        }
    }

    /// Whether serve knows how this start went: up, exited, or answering
    /// with an error (not merely not listening yet).
    pub fn settled(&self) -> bool {
        let inner = self.lock();
        inner.view.state == Phase::Up || inner.exited.is_some() || inner.reached
    }

    /// A health check failed with `why`; `settled` says whether it may be
    /// called down yet (else it is still starting), `reached` whether
    /// something answered (an error status rather than no connection).
    pub fn failed(&self, why: String, settled: bool, reached: bool) {
        let mut inner = self.lock();
        inner.reached |= reached;
        if inner.exited.is_some() && !reached {
            return; // the last exit says more than a refused connection
        }
        inner.exited = None;
        let why = with_stderr(why, &inner.stderr);
        inner.up_since = None;
        if settled || inner.view.state == Phase::Up {
            inner.view.state = Phase::Down;
        }
        inner.view.error = Some(why);
    }
}

fn with_stderr(why: String, stderr: &VecDeque<String>) -> String {
    if stderr.is_empty() {
        return why;
    }
    let lines: Vec<&str> = stderr.iter().map(String::as_str).collect();
    format!("{why}; kubectl proxy said: {}", lines.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_that_changes_is_kept_with_the_one_before_and_errors_carry_stderr() {
        let state = ClusterState::new("a".into(), true, SourceKind::Context);
        assert_eq!(state.view().state, Phase::Starting);
        state.failed("connect refused".into(), false, false);
        assert!(!state.settled());
        assert_eq!(state.view().state, Phase::Starting);
        state.stderr_line("proxy error: dial tcp: connection refused".into());
        state.failed("HTTP 502".into(), true, true);
        assert!(state.settled());
        let view = state.view();
        assert_eq!(view.state, Phase::Down);
        assert_eq!(
            view.error.as_deref(),
            Some("HTTP 502; kubectl proxy said: proxy error: dial tcp: connection refused")
        );
        state.answered(Ok("uid-1".into()));
        state.answered(Ok("uid-1".into()));
        assert_eq!(state.view().identity_changed_from, None);
        state.answered(Ok("uid-2".into()));
        let view = state.view();
        assert_eq!((view.state, view.error), (Phase::Up, None));
        assert_eq!(view.identity.as_deref(), Some("uid-2"));
        assert_eq!(view.identity_changed_from.as_deref(), Some("uid-1"));
        state.exited("kubectl proxy exited (signal 9)".into());
        state.failed("cannot connect".into(), true, false);
        assert_eq!(
            state.view().error.as_deref(),
            Some("kubectl proxy exited (signal 9)")
        );
        state.spawned(true);
        let view = state.view();
        assert_eq!((view.restarts, view.state), (1, Phase::Down));
        state.failed("cannot connect".into(), false, false);
        assert_eq!(
            state.view().error.as_deref(),
            Some("kubectl proxy exited (signal 9)"),
            "still why the last run ended"
        );
        state.failed("HTTP 502".into(), true, true);
        assert_eq!(state.view().error.as_deref(), Some("HTTP 502"));
        let json = serde_json::to_value(state.view()).unwrap();
        assert_eq!(json["source"], "context");
        assert_eq!(json["state"], "down");
        assert_eq!(json["restarts"], 1);
    }
}
