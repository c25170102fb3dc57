//! Real parts for the tests of serve's clusters: `deltascope sim` processes
//! on loopback ports (killed and started again on the same port to stand
//! for a cluster replaced behind its name), a kubeconfig naming them, the
//! real `deltascope serve --context …` with the real kubectl, and what
//! `/proc` says of serve's `kubectl proxy` children and their sockets.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::serve_support::{req, send, serve_binary, Served};

/// The session token (the channel tests' own, so their helpers work too).
pub const TOKEN: &str = "channel-token-0123456789abcdef0123456789";

/// `deltascope sim` in a process of its own on `addr` (killed on drop).
pub struct SimProcess {
    pub child: tokio::process::Child,
    pub addr: SocketAddr,
}

impl SimProcess {
    /// Starts one on `addr` (`None`: a free port) with `pods` pods and no
    /// churn, and waits until it answers.
    pub async fn start(addr: Option<SocketAddr>, pods: usize) -> SimProcess {
        let addr = addr.unwrap_or_else(free_port);
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_deltascope"))
            .args([
                "sim",
                "--listen",
                &addr.to_string(),
                "--churn",
                "0",
                "--pods",
            ])
            .arg(pods.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("deltascope sim starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Ok(_)) =
                tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
                    .await
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "deltascope sim on {addr} did not listen"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        SimProcess { child, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// GET `path` straight from the sim (no auth there).
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        let resp = send(self.addr, req("GET", path)).await;
        assert_eq!(resp.status, 200, "{path}: {}", resp.text());
        resp.json()
    }

    /// Its identity: the `kube-system` namespace's uid.
    pub async fn identity(&self) -> String {
        let ns = self.get_json("/api/v1/namespaces/kube-system").await;
        ns["metadata"]["uid"].as_str().expect("a uid").to_owned()
    }

    /// Kills it and waits until it is gone.
    pub async fn kill(mut self) -> SocketAddr {
        self.child.kill().await.expect("the sim is killed");
        self.addr
    }
}

/// A loopback port free now.
pub fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address")
}

/// The names of the pods in a PodList.
pub fn pod_names(list: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| format!("{}/{}", p["metadata"]["namespace"], p["metadata"]["name"]))
        .collect();
    names.sort();
    names
}

/// A scratch directory: the kubeconfig, serve's HOME and its log.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ds-clusters-{name}-{}-{}",
        std::process::id(),
        &deltascope_proxy::auth::random_hex_256()[..8]
    ));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Writes a kubeconfig with a context per `(name, server)` (a server of
/// `None`: a cluster whose certificate authority file is missing, so its
/// `kubectl proxy` exits at once, as with broken credentials); the first
/// is the current context.
pub fn kubeconfig(dir: &Path, contexts: &[(&str, Option<&str>)]) -> PathBuf {
    let mut clusters = String::new();
    let mut named = String::new();
    for (name, server) in contexts {
        match server {
            Some(server) => clusters.push_str(&format!(
                "- name: {name}\n  cluster:\n    server: {server}\n"
            )),
            None => clusters.push_str(&format!(
                "- name: {name}\n  cluster:\n    server: https://127.0.0.1:9\n    \
                 certificate-authority: /nonexistent/deltascope-test-ca.crt\n"
            )),
        }
        named.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {name}\n    user: u\n"
        ));
    }
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n{clusters}contexts:\n{named}\
         current-context: {}\nusers:\n- name: u\n  user: {{}}\n",
        contexts[0].0
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).expect("the kubeconfig");
    path
}

/// `deltascope serve ARGS --token TOKEN` with `dir` as HOME (kubectl's
/// cache) and its stderr in `dir/serve.log`.
pub fn serve_command(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = serve_binary(args);
    let log = std::fs::File::create(dir.join("serve.log")).expect("serve's log");
    command
        .args(["--token", TOKEN])
        .env("HOME", dir)
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::from(log));
    command
}

/// serve's log so far.
pub fn serve_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default()
}

/// GET `path` from serve with the token.
pub async fn get(served: &Served, path: &str) -> super::serve_support::Resp {
    send(served.addr, req("GET", path).bearer(TOKEN)).await
}

/// `/_deltascope/clusters`, by name.
pub async fn clusters(served: &Served) -> Vec<serde_json::Value> {
    let resp = get(served, "/_deltascope/clusters").await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json().as_array().expect("a JSON array").clone()
}

/// `/_deltascope/clusters`' entry for `name`.
pub async fn cluster(served: &Served, name: &str) -> serde_json::Value {
    clusters(served)
        .await
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cluster {name} listed"))
}

/// Polls `/_deltascope/clusters` until `name`'s entry satisfies `ok`.
pub async fn wait_for(
    served: &Served,
    dir: &Path,
    name: &str,
    within: Duration,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + within;
    loop {
        let entry = cluster(served, name).await;
        if ok(&entry) {
            return entry;
        }
        assert!(
            Instant::now() < deadline,
            "cluster {name}: not {what} within {within:?}: {entry}\nserve's log:\n{}",
            serve_log(dir)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The processes whose parent is `pid`, with their command lines.
pub fn children(pid: u32) -> Vec<(u32, Vec<String>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(pid) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        let args = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        found.push((child, args));
    }
    found
}

/// serve's `kubectl proxy` for `context`: its pid and socket.
pub fn kubectl_proxy_of(serve_pid: u32, context: &str) -> Option<(u32, PathBuf)> {
    children(serve_pid).into_iter().find_map(|(pid, args)| {
        let is_proxy = args.iter().any(|a| a == "proxy")
            && args
                .windows(2)
                .any(|w| w[0] == "--context" && w[1] == context);
        let socket = args
            .windows(2)
            .find(|w| w[0] == "--unix-socket")
            .map(|w| PathBuf::from(&w[1]));
        is_proxy.then_some(()).and(socket).map(|s| (pid, s))
    })
}

/// The socket inodes `pid` holds open.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let text = target.to_string_lossy().into_owned();
            text.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The local ports of the TCP sockets `pid` listens on (IPv4 and IPv6).
pub fn tcp_listening_ports(pid: u32) -> Vec<u16> {
    let inodes = socket_inodes(pid);
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st … inode (the 10th field)
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listening = *state == "0A";
            let ours = inode.parse::<u64>().is_ok_and(|i| inodes.contains(&i));
            if listening && ours {
                let port = local
                    .rsplit_once(':')
                    .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
                ports.extend(port);
            }
        }
    }
    ports
}

/// Connects to the Unix socket `socket` as the user `nobody` (Python's
/// socket module under `setpriv`): what it printed, and whether it connected.
pub fn connect_as_nobody(socket: &Path) -> (bool, String) {
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.is_file() && Path::new("/usr/bin/setpriv").is_file(),
        "this test needs /usr/bin/python3 and setpriv (util-linux) to try the socket as another user"
    );
    let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\n\
                  try:\n  s.connect(sys.argv[1]); print('connected')\n\
                  except OSError as e:\n  print(type(e).__name__, e); sys.exit(3)\n";
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(python)
        .args(["-c", script])
        .arg(socket)
        .current_dir("/")
        .output()
        .expect("setpriv runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Starts serve and waits for its link.
pub async fn start_serve(dir: &Path, args: &[&str]) -> Served {
    Served::start(serve_command(dir, args)).await
}

/// Stops serve as Ctrl-C would (SIGTERM) and waits: it must exit 0 within 20 s.
pub async fn stop_serve(mut served: Served) {
    signal(served.child.id().expect("serve runs"), "-TERM");
    let status = tokio::time::timeout(Duration::from_secs(20), served.child.wait())
        .await
        .expect("serve stops within 20 s")
        .expect("serve's status");
    assert!(status.success(), "{status}");
}

/// Whether `pid` runs (a zombie not yet reaped does not).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// `kill SIGNAL pid` (e.g. `-9`), which must succeed.
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal} {pid}: {status}");
}
