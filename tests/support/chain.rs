//! The chain the browser and CLI tests run against a "real" cluster:
//! `deltascope sim` ← the real `kubectl proxy` ← `deltascope serve
//! --upstream`. kubectl is found once ([`kubectl`]); a test that needs it
//! fails with a clear message when it is missing, never passing silently.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::sign_in::random_token;
use super::{deltascope_bin, dist_dir, ChildGuard};

#[path = "../../sim/tests/shared/kubectl.rs"]
mod shared_kubectl;
#[allow(unused_imports)]
pub use shared_kubectl::kubectl;

pub fn read_announcement(child: &mut std::process::Child, prefix: &'static str) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(prefix) {
                let _ = sender.send(rest.trim().to_string());
            }
        }
    });
    receiver
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("no {prefix:?} line within 30 s"))
}

/// `deltascope sim` on a free loopback port.
pub fn start_sim(args: &[&str]) -> (ChildGuard, SocketAddr) {
    start_sim_listening("127.0.0.1:0", args)
}

/// `deltascope sim` listening on `listen` (a port another sim left, to
/// put another cluster behind the same address).
pub fn start_sim_listening(listen: &str, args: &[&str]) -> (ChildGuard, SocketAddr) {
    let mut child = Command::new(deltascope_bin())
        .args(["sim", "--listen", listen])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start deltascope sim");
    let url = read_announcement(&mut child, "deltascope sim: listening on http://");
    (ChildGuard(child), url.parse().expect("sim address"))
}

/// `deltascope serve --upstream URL`; returns it and its sign-in link
/// (`http://ADDR/?code=…`: one browser, once). Without `--token` in `extra`
/// it gets a random token in its environment (so it writes no token file).
pub fn start_serve_upstream(upstream: &str, extra: &[&str]) -> (ChildGuard, String) {
    let mut child = Command::new(deltascope_bin())
        .args([
            "serve",
            "--upstream",
            upstream,
            "--listen",
            "127.0.0.1:0",
            "--dist",
        ])
        .arg(dist_dir())
        .args(extra)
        .env("DELTASCOPE_TOKEN", random_token())
        .env("DELTASCOPE_HISTORY", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start deltascope serve --upstream");
    let url = read_announcement(&mut child, "deltascope: open ");
    (ChildGuard(child), url)
}

/// A kubeconfig at `path` with a context per `(name, server URL)`, each
/// its own cluster of that name, no credentials; the first is current.
pub fn write_kubeconfig(path: &std::path::Path, contexts: &[(&str, String)]) {
    let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for (name, server) in contexts {
        text.push_str(&format!(
            "- name: {name}\n  cluster: {{server: \"{server}\"}}\n"
        ));
    }
    text.push_str("users:\n- name: u\n  user: {}\ncontexts:\n");
    for (name, _) in contexts {
        text.push_str(&format!(
            "- name: {name}\n  context: {{cluster: {name}, user: u}}\n"
        ));
    }
    text.push_str(&format!("current-context: {}\n", contexts[0].0));
    std::fs::write(path, text).expect("write the kubeconfig");
}

/// `deltascope serve --context NAME …` of `kubeconfig`, with the real
/// `kubectl proxy` it runs for each (kubectl from `PATH`), its history
/// `--history` `history` (`off`, `sqlite:PATH`); returns it, its sign-in
/// link and its token.
pub fn start_serve_contexts(
    kubeconfig: &std::path::Path,
    contexts: &[&str],
    history: &str,
) -> (ChildGuard, String, String) {
    let kubectl_dir = kubectl()
        .parent()
        .map(std::path::Path::to_path_buf)
        .expect("kubectl's directory");
    let path = std::env::join_paths(
        std::iter::once(kubectl_dir).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .expect("a PATH");
    let token = random_token();
    let mut command = Command::new(deltascope_bin());
    command.args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"]);
    command.arg(kubeconfig).arg("--dist").arg(dist_dir());
    for context in contexts {
        command.args(["--context", context]);
    }
    let mut child = command
        .env("DELTASCOPE_TOKEN", &token)
        .env("DELTASCOPE_HISTORY", history)
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start deltascope serve --context …");
    let url = read_announcement(&mut child, "deltascope: open ");
    (ChildGuard(child), url, token)
}

/// The page's address and serve's socket address, from serve's sign-in
/// link (`http://ADDR/?code=C`).
pub fn serve_address(login: &str) -> (String, SocketAddr) {
    let base = login.split("?code=").next().expect("base").to_string();
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("serve's address");
    (base, addr)
}

/// A sim's own digest of `resource` (`GET /_sim/digest`).
pub fn sim_digest(sim: SocketAddr, resource: &str) -> String {
    let path = format!("/_sim/digest?resource={resource}");
    let (status, body) = super::http(sim, "GET", &path, &[], None);
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    let value: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    value["digest"].as_str().expect("digest").to_string()
}

/// `GET path` of serve at `serve`, signed in with `token`: the status and
/// the body.
pub fn serve_get(serve: SocketAddr, token: &str, path: &str) -> (u16, Vec<u8>) {
    let bearer = format!("Bearer {token}");
    super::http(serve, "GET", path, &[("Authorization", &bearer)], None)
}

/// What serve at `serve` says of its clusters (`GET /_deltascope/clusters`,
/// signed in with `token`); empty while it does not answer with them.
pub fn served_clusters(serve: SocketAddr, token: &str) -> Vec<serde_json::Value> {
    let (status, body) = serve_get(serve, token, "/_deltascope/clusters");
    match status {
        200 => serde_json::from_slice(&body).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The `kubectl` processes `pid` runs, by their command lines (read from
/// `/proc`: no tool a fresh machine may lack).
pub fn kubectl_children(pid: u32) -> Vec<(u32, String)> {
    let entries = std::fs::read_dir("/proc").expect("read /proc");
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|child| {
            // `/proc/PID/stat`: "PID (COMM) STATE PPID …"
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let parent: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            if parent != pid || comm != "kubectl" {
                return None;
            }
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).ok()?;
            let words: Vec<String> = cmdline
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            Some((child, words.join(" ")))
        })
        .collect()
}

/// The real `kubectl proxy` in front of the simulated cluster, with its own
/// empty kubeconfig; restartable on the same port.
pub struct KubectlProxy {
    bin: PathBuf,
    server: String,
    home: PathBuf,
    port: u16,
    child: Option<ChildGuard>,
}

impl KubectlProxy {
    pub fn start(bin: PathBuf, server: String) -> KubectlProxy {
        let home = std::env::temp_dir().join(format!(
            "deltascope-chaos-kubectl-{}-{}",
            std::process::id(),
            server.replace([':', '/', '.'], "_")
        ));
        std::fs::create_dir_all(&home).expect("kubectl home");
        let mut proxy = KubectlProxy {
            bin,
            server,
            home,
            port: 0,
            child: None,
        };
        proxy.spawn();
        proxy
    }

    /// Starts `kubectl proxy` on `self.port` (any port the first time),
    /// retrying for a few seconds while the old one's port is still held.
    pub fn spawn(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let mut child = Command::new(&self.bin)
                .arg(format!("--server={}", self.server))
                .arg(format!("--cache-dir={}", self.home.join("cache").display()))
                .arg("proxy")
                .arg(format!("--port={}", self.port))
                .arg("--address=127.0.0.1")
                .env("HOME", &self.home)
                .env("KUBECONFIG", self.home.join("config"))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("start kubectl proxy");
            let guard_stdout = child.stdout.take();
            let child = ChildGuard(child);
            let port = guard_stdout.and_then(|stdout| {
                let (sender, receiver) = mpsc::channel();
                std::thread::spawn(move || {
                    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                        if let Some(addr) = line.strip_prefix("Starting to serve on ") {
                            let _ = sender.send(addr.trim().to_string());
                        }
                    }
                });
                let addr = receiver.recv_timeout(Duration::from_secs(30)).ok()?;
                addr.rsplit(':').next()?.parse::<u16>().ok()
            });
            match port {
                Some(port) => {
                    assert!(
                        self.port == 0 || self.port == port,
                        "kubectl proxy came back on {port}, not {}",
                        self.port
                    );
                    self.port = port;
                    self.child = Some(child);
                    return;
                }
                None => {
                    assert!(
                        Instant::now() < deadline,
                        "kubectl proxy did not start on port {} within 15 s",
                        self.port
                    );
                    drop(child);
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        self.child = None;
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for KubectlProxy {
    fn drop(&mut self) {
        self.child = None;
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
