//! The real kubectl for tests, found once for every crate's tests (the
//! sim's, the proxy's and the page's include this file by path): on `PATH`,
//! else in a known place. A test that needs kubectl fails with what to
//! install when there is none — it never passes silently. Also
//! `kubectl proxy` in front of a server, as users run it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Where kubectl is looked for after `PATH` (Debian's package and Google's SDK).
pub const KNOWN_KUBECTLS: [&str; 2] = ["/usr/bin/kubectl", "/usr/lib/google-cloud-sdk/bin/kubectl"];

/// The real kubectl; panics saying what to install when there is none.
pub fn kubectl() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    });
    on_path
        .or_else(|| KNOWN_KUBECTLS.iter().map(PathBuf::from).find(|p| p.is_file()))
        .unwrap_or_else(|| {
            panic!(
                "this test needs the real kubectl and none was found on PATH or in {KNOWN_KUBECTLS:?}; \
                 install it (e.g. Debian's kubectl package) and run again"
            )
        })
}

/// `kubectl proxy` on a free loopback port in front of `server`, with
/// `home` as its HOME and kubeconfig directory: the child (killed on drop)
/// and the proxy's base URL.
pub async fn kubectl_proxy(server: &str, home: &Path) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(kubectl())
        .arg(format!("--server={server}"))
        .args(["proxy", "--port=0", "--address=127.0.0.1"])
        .env("HOME", home)
        .env("KUBECONFIG", home.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl proxy starts");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut out = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(15), out.next_line())
        .await
        .expect("kubectl proxy starts within 15 s")
        .expect("read kubectl proxy's stdout")
        .expect("a line");
    // "Starting to serve on 127.0.0.1:PORT"
    let addr = line.rsplit(' ').next().expect("address").to_string();
    (child, format!("http://{addr}"))
}

/// `kubectl ARGS` against `server` with a home (config, discovery cache)
/// of its own under `home`, removed afterwards, so what it prints is what
/// the server says now: (success, stdout, stderr). At most 30 s.
#[allow(dead_code)] // not every test that includes this file runs kubectl so
pub async fn kubectl_at(server: &str, home: &Path, args: &[&str]) -> (bool, String, String) {
    std::fs::create_dir_all(home).expect("kubectl's temporary home");
    let out = tokio::process::Command::new(kubectl())
        .arg(format!("--server={server}"))
        .arg(format!("--cache-dir={}", home.join("cache").display()))
        .args(args)
        .env("HOME", home)
        .env("KUBECONFIG", home.join("config"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("kubectl timed out")
        .expect("kubectl runs");
    let _ = std::fs::remove_dir_all(home);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
