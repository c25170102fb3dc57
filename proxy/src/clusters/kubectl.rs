//! The `kubectl` serve runs: found on `PATH` (a clear error otherwise), asked
//! which contexts the kubeconfig has and which is current, and started as
//! `kubectl proxy --unix-socket PATH --context NAME [--kubeconfig PATH]` for
//! each context. `KUBECONFIG` is left to kubectl, which honours it; an
//! explicit `--kubeconfig` is passed on.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// How long a `kubectl config …` question may take.
const CONFIG_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a context cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum KubectlError {
    #[error(
        "kubectl is not on PATH: serve runs `kubectl proxy` itself for --context (and for the \
         kubeconfig's current context when no --context, --upstream or --demo is given); \
         install kubectl, or run a proxy yourself and pass --upstream URL"
    )]
    NotFound,
    #[error("`kubectl {args}` failed: {detail}")]
    Failed { args: String, detail: String },
    #[error(
        "no context {context:?} in {kubeconfig}; its contexts are: {}",
        list(.contexts)
    )]
    UnknownContext {
        context: String,
        kubeconfig: String,
        contexts: Vec<String>,
    },
    #[error(
        "{kubeconfig} names no current context ({detail}); pass --context NAME (its contexts \
         are: {}) or --upstream URL",
        list(.contexts)
    )]
    NoCurrentContext {
        kubeconfig: String,
        detail: String,
        contexts: Vec<String>,
    },
}

fn list(contexts: &[String]) -> String {
    if contexts.is_empty() {
        "none".to_owned()
    } else {
        contexts.join(", ")
    }
}

/// kubectl and the kubeconfig it reads.
#[derive(Debug, Clone)]
pub struct Kubectl {
    pub bin: PathBuf,
    /// `--kubeconfig`; `None`: kubectl's own choice (`KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
}

impl Kubectl {
    /// kubectl on `PATH`.
    pub fn find(kubeconfig: Option<PathBuf>) -> Result<Self, KubectlError> {
        let bin = on_path(std::env::var_os("PATH")).ok_or(KubectlError::NotFound)?;
        Ok(Kubectl { bin, kubeconfig })
    }

    /// The kubeconfig as messages name it.
    fn kubeconfig_label(&self) -> String {
        match &self.kubeconfig {
            Some(path) => format!("the kubeconfig {}", path.display()),
            None => "the kubeconfig (KUBECONFIG or ~/.kube/config)".to_owned(),
        }
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.bin);
        if let Some(kubeconfig) = &self.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        command.stdin(Stdio::null()).kill_on_drop(true);
        command
    }

    /// `kubectl config ARGS`: its stdout, trimmed.
    async fn config(&self, args: &[&str]) -> Result<String, KubectlError> {
        let failed = |detail: String| KubectlError::Failed {
            args: format!("config {}", args.join(" ")),
            detail,
        };
        let output = self.command().arg("config").args(args).output();
        let output = tokio::time::timeout(CONFIG_TIMEOUT, output)
            .await
            .map_err(|_| failed(format!("no answer within {} s", CONFIG_TIMEOUT.as_secs())))?
            .map_err(|e| failed(e.to_string()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            return Err(failed(format!("{} ({stderr})", output.status)));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// Every context's name.
    pub async fn contexts(&self) -> Result<Vec<String>, KubectlError> {
        let names = self.config(&["get-contexts", "-o", "name"]).await?;
        Ok(names
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect())
    }

    /// The current context.
    pub async fn current_context(&self) -> Result<String, KubectlError> {
        match self.config(&["current-context"]).await {
            Ok(name) if !name.is_empty() => Ok(name),
            Ok(_) => Err(self.no_current("it is empty".to_owned()).await),
            Err(KubectlError::Failed { detail, .. }) => Err(self.no_current(detail).await),
            Err(other) => Err(other),
        }
    }

    async fn no_current(&self, detail: String) -> KubectlError {
        KubectlError::NoCurrentContext {
            kubeconfig: self.kubeconfig_label(),
            detail,
            contexts: self.contexts().await.unwrap_or_default(),
        }
    }

    /// Checks that every one of `wanted` is a context of the kubeconfig.
    pub async fn check_contexts(&self, wanted: &[&str]) -> Result<(), KubectlError> {
        if wanted.is_empty() {
            return Ok(());
        }
        let contexts = self.contexts().await?;
        match wanted.iter().find(|w| !contexts.iter().any(|c| c == *w)) {
            None => Ok(()),
            Some(unknown) => Err(KubectlError::UnknownContext {
                context: (*unknown).to_owned(),
                kubeconfig: self.kubeconfig_label(),
                contexts,
            }),
        }
    }

    /// `kubectl proxy --unix-socket SOCKET --context CONTEXT`, its stdout and
    /// stderr piped, killed when dropped (and, on Linux, when serve dies).
    pub fn proxy(&self, context: &str, socket: &Path) -> tokio::process::Command {
        let mut command = self.command();
        command
            .arg("proxy")
            .arg("--unix-socket")
            .arg(socket)
            .arg("--context")
            .arg(context)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_parent(&mut command);
        command
    }
}

/// The first executable `kubectl` in `path`.
fn on_path(path: Option<OsString>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// On Linux, the child gets SIGTERM if serve dies without killing it (a
/// SIGKILL): a `kubectl proxy` holding the user's credentials must not
/// outlive the serve that owns its socket.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut tokio::process::Command) {
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut tokio::process::Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_is_looked_for_in_absolute_path_entries_only() {
        assert_eq!(on_path(None), None);
        assert_eq!(on_path(Some(OsString::from("relative:/nonexistent"))), None);
        let message = KubectlError::UnknownContext {
            context: "c".into(),
            kubeconfig: "the kubeconfig k".into(),
            contexts: vec!["a".into(), "b".into()],
        }
        .to_string();
        assert_eq!(
            message,
            "no context \"c\" in the kubeconfig k; its contexts are: a, b"
        );
    }
}
