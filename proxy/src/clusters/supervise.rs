//! Keeping each cluster reachable and knowing whether it is: the private
//! directory of the `kubectl proxy` sockets, the supervisor of each
//! `kubectl proxy` serve runs (its stderr logged and kept, restarted with
//! backoff when it exits, killed when serve stops) and the health check
//! every cluster gets (`GET /version`, then its identity).
//!
//! The identity (the `kube-system` namespace's uid, read by the recorder's
//! own [`crate::recorder::read_cluster_id`]) is read at every health check,
//! not only after a restart of the `kubectl proxy`: a proxy in front of a
//! cluster that was replaced (same address, new cluster) never restarts.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio_util::sync::CancellationToken;

use super::board::{ClusterState, SourceKind};
use super::kubectl::Kubectl;
use crate::forward::Forwarder;

/// The first wait before a `kubectl proxy` that exited is started again.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Up this long without a break, a `kubectl proxy` that exits starts the
/// backoff from the beginning.
pub const HEALTHY_RESET: Duration = Duration::from_secs(60);
/// How often an up cluster is checked.
pub const HEALTH_EVERY: Duration = Duration::from_secs(5);
/// How often a cluster not yet up is checked.
const STARTING_EVERY: Duration = Duration::from_millis(250);
/// A check failing this soon after a (re)start leaves the cluster `starting`.
const STARTUP_GRACE: Duration = Duration::from_secs(10);
/// How long one health check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest socket path (`sun_path` is 108 bytes on Linux, 104 elsewhere).
const MAX_SOCKET_PATH: usize = 100;

/// Why the socket directory cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum SocketDirError {
    #[error(transparent)]
    Parent(#[from] crate::token_file::TokenFileError),
    #[error("cannot make the private directory {path} for the kubectl proxy sockets: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The directory of this serve's `kubectl proxy` sockets: made fresh, mode
/// 0700 (only the user can reach a socket in it), removed when dropped.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
}

impl SocketDir {
    /// `$XDG_RUNTIME_DIR/deltascope/kubectl-PID-RANDOM`, or a fresh
    /// directory in the system's temporary directory when there is no
    /// `XDG_RUNTIME_DIR` or its path is too long for a socket's.
    pub fn create(sockets: usize) -> Result<Self, SocketDirError> {
        Self::create_in(
            std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            sockets,
        )
    }

    /// [`SocketDir::create`] with `runtime` as `XDG_RUNTIME_DIR`.
    fn create_in(runtime: Option<PathBuf>, sockets: usize) -> Result<Self, SocketDirError> {
        let leaf = format!(
            "deltascope-kubectl-{}-{}",
            std::process::id(),
            &crate::auth::random_hex_256()[..12]
        );
        let longest = format!("/{}.sock", sockets.saturating_sub(1)).len();
        let runtime = runtime
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("deltascope"))
            .filter(|parent| parent.join(&leaf).as_os_str().len() + longest <= MAX_SOCKET_PATH);
        let path = match runtime {
            Some(parent) => {
                crate::token_file::private_dir(&parent)?;
                remove_stale(&parent);
                parent.join(&leaf)
            }
            None => std::env::temp_dir().join(&leaf),
        };
        create_private(&path).map_err(|source| SocketDirError::Create {
            path: path.clone(),
            source,
        })?;
        Ok(SocketDir { path })
    }

    /// The socket of the `index`th cluster.
    pub fn socket(&self, index: usize) -> PathBuf {
        self.path.join(format!("{index}.sock"))
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes, in the user's private `parent` only, the socket directories of
/// serves that died without removing theirs (killed with SIGKILL; their
/// `kubectl proxy` died with them): `deltascope-kubectl-PID-…` of a PID
/// that no longer runs.
#[cfg(target_os = "linux")]
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("deltascope-kubectl-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        let dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let (Some(pid), true) = (pid, dir) {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn remove_stale(_parent: &Path) {}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    // Not recursive: the directory must be new, so nobody else made it.
    std::fs::DirBuilder::new().mode(0o700).create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir(path)
}

/// One context's `kubectl proxy`.
pub struct KubectlProxy {
    pub kubectl: Kubectl,
    pub context: String,
    pub socket: PathBuf,
}

/// Runs `proxy` until `stop` is cancelled: started, watched, started again
/// with backoff whenever it exits, killed at the end.
pub async fn supervise(proxy: KubectlProxy, state: ClusterState, stop: CancellationToken) {
    let name = state.name();
    let mut backoff = FIRST_BACKOFF;
    let mut restart = false;
    loop {
        // A socket left by the previous run would make it fail to listen.
        let _ = std::fs::remove_file(&proxy.socket);
        state.spawned(restart);
        let why = match proxy.kubectl.proxy(&proxy.context, &proxy.socket).spawn() {
            Ok(mut child) => {
                tracing::info!(cluster = %name, context = %proxy.context, pid = child.id(),
                    socket = %proxy.socket.display(), "kubectl proxy started");
                let stderr = child.stderr.take().map(|err| {
                    let state = state.clone();
                    tokio::spawn(log_lines(err, name.clone(), Some(state)))
                });
                if let Some(out) = child.stdout.take() {
                    tokio::spawn(log_lines(out, name.clone(), None));
                }
                let status = tokio::select! {
                    status = child.wait() => status,
                    () = stop.cancelled() => {
                        let _ = child.kill().await;
                        return;
                    }
                };
                // Its last words first: they say why.
                if let Some(stderr) = stderr {
                    let _ = tokio::time::timeout(Duration::from_secs(1), stderr).await;
                }
                exit_words(status)
            }
            Err(error) => format!("cannot start kubectl proxy: {error}"),
        };
        if state.up_for().is_some_and(|up| up >= HEALTHY_RESET) {
            backoff = FIRST_BACKOFF;
        }
        state.exited(why.clone());
        tracing::warn!(cluster = %name, "{why}; starting it again in {} ms", backoff.as_millis());
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
        restart = true;
    }
}

fn exit_words(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => format!("kubectl proxy exited ({status})"),
        Err(error) => format!("kubectl proxy could not be waited for: {error}"),
    }
}

/// Logs each line of a `kubectl proxy`'s output; stderr lines are kept as
/// the cluster's last words too.
async fn log_lines(output: impl AsyncRead + Unpin, cluster: String, state: Option<ClusterState>) {
    let mut lines = BufReader::new(output).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match &state {
            Some(state) => {
                tracing::warn!(cluster = %cluster, "kubectl proxy: {line}");
                state.stderr_line(line);
            }
            None => tracing::info!(cluster = %cluster, "kubectl proxy: {line}"),
        }
    }
}

/// Checks the cluster until `stop` is cancelled: often until it answers,
/// then every [`HEALTH_EVERY`].
pub async fn monitor(forwarder: Forwarder, state: ClusterState, stop: CancellationToken) {
    let name = state.name();
    // Only a kubectl proxy of serve's own needs a moment to listen.
    let grace = match state.view().source {
        SourceKind::Context => STARTUP_GRACE,
        _ => Duration::ZERO,
    };
    let mut since_start = Instant::now();
    let mut restarts = state.view().restarts;
    // Whether this failure was logged: the first after a start or a success is.
    let mut said = false;
    loop {
        let view = state.view();
        if view.restarts != restarts {
            restarts = view.restarts;
            since_start = Instant::now();
            said = false;
        }
        let was_up = state.up_for().is_some();
        let outcome = tokio::time::timeout(CHECK_TIMEOUT, check(&forwarder))
            .await
            .unwrap_or_else(|_| {
                Err(Failure {
                    why: format!("no answer within {} s", CHECK_TIMEOUT.as_secs()),
                    reached: false,
                })
            });
        let every = match outcome {
            Ok(identity) => {
                if !was_up {
                    tracing::info!(cluster = %name, "the Kubernetes API answers");
                }
                state.answered(identity);
                said = false;
                HEALTH_EVERY
            }
            Err(Failure { why, reached }) => {
                // Not while its kubectl proxy is merely starting to listen.
                if !said && (reached || since_start.elapsed() >= grace || was_up) {
                    tracing::warn!(cluster = %name, "the Kubernetes API does not answer: {why}");
                    said = true;
                }
                state.failed(why, since_start.elapsed() >= grace, reached);
                // Soon after a start, often; later less, at most every
                // HEALTH_EVERY (the forwarder does not log the check's failures).
                STARTING_EVERY.max(HEALTH_EVERY.min(since_start.elapsed() / 10))
            }
        };
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// A failed check: why, and whether anything answered at all.
struct Failure {
    why: String,
    reached: bool,
}

/// `GET /version` must succeed; then the identity (`Err` inside: why it
/// cannot be read, though the cluster answers).
async fn check(forwarder: &Forwarder) -> Result<Result<String, String>, Failure> {
    let response = forwarder
        .health_get("/version")
        .await
        .map_err(|error| Failure {
            why: error.to_string(),
            reached: false,
        })?;
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
        return Err(Failure {
            why: format!("GET /version answered HTTP {status} {}", text.trim()),
            reached: true,
        });
    }
    match crate::recorder::read_cluster_id(forwarder).await {
        Ok(id) => Ok(Ok(id.0)),
        Err(error) if error.is_retryable() => Err(Failure {
            why: error.to_string(),
            reached: true,
        }),
        Err(error) => Ok(Err(error.to_string())),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_socket_directory_is_private_fresh_and_removed_and_short_enough() {
        use std::os::unix::fs::PermissionsExt;
        let runtime = std::env::temp_dir().join(format!("dsr-{}", std::process::id()));
        let dir = SocketDir::create_in(Some(runtime.clone()), 3).unwrap();
        let path = dir.path.clone();
        assert!(
            path.starts_with(runtime.join("deltascope")),
            "{}",
            path.display()
        );
        for private in [&path, &runtime.join("deltascope")] {
            let mode = std::fs::metadata(private).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", private.display());
        }
        assert_eq!(dir.socket(2), path.join("2.sock"));
        drop(dir);
        assert!(!path.exists());
        // A runtime directory too deep for a socket's path: the temporary directory.
        let deep = runtime.join("x".repeat(120));
        let dir = SocketDir::create_in(Some(deep), 1).unwrap();
        assert!(dir.path.starts_with(std::env::temp_dir()));
        assert!(dir.socket(0).as_os_str().len() <= MAX_SOCKET_PATH);
        drop(dir);
        std::fs::remove_dir_all(&runtime).unwrap();
    }

    #[test]
    fn only_the_directories_of_serves_that_are_gone_are_removed() {
        let parent = std::env::temp_dir().join(format!(
            "ds-stale-{}-{}",
            std::process::id(),
            &crate::auth::random_hex_256()[..8]
        ));
        let ours = parent.join(format!("deltascope-kubectl-{}-a", std::process::id()));
        // pid_max is at most 2^22: this pid cannot run.
        let gone = parent.join("deltascope-kubectl-4194305-b");
        let other = parent.join("something-else-4194305");
        for dir in [&ours, &gone, &other] {
            std::fs::create_dir_all(dir).unwrap();
        }
        remove_stale(&parent);
        assert!(ours.exists() && other.exists() && !gone.exists());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
