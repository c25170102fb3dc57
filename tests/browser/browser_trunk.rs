//! The product's own development flow (README's development loop), with the real pinned
//! `trunk` binary, in headless Chromium:
//!
//! - `cargo xtask dev` on the demo: one printed URL signs the browser in on
//!   trunk's port; pods sync with the cluster's digest; a reload keeps
//!   working; a touched source file makes trunk rebuild and reload the page,
//!   which comes back signed in and synced; a request through trunk's port
//!   for a foreign name (DNS rebinding: `Host` and so `X-Forwarded-Host`) is
//!   refused by serve.
//! - `trunk serve` straight in front of the real `kubectl proxy` (no
//!   `deltascope serve`): the page finds no channel and no session, keeps
//!   four watches on connections of their own and says *paused* for the
//!   rest; eight resources open one after another without one stuck; pods
//!   and deployments reach the cluster's digests; the status bar says
//!   nothing of a history serve records (there is no serve).
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::chain::{kubectl, start_sim, KubectlProxy};
use support::live::{channel_state, digests_converge, kept_states, open_all, Cluster, SYNC};
use support::sign_in::random_token;
use support::{free_port, Browser, GroupGuard};

/// trunk's first build of the page, and a rebuild after a touch.
const BUILD: Duration = Duration::from_secs(600);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Spawns `command` in its own process group; returns it and a channel of its output lines.
fn spawn_logged(command: &mut Command, what: &str) -> (GroupGuard, mpsc::Receiver<String>) {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut guard = GroupGuard::spawn(command, what);
    let (sender, lines) = mpsc::channel();
    let outputs: Vec<Box<dyn Read + Send>> = vec![
        Box::new(guard.0.stdout.take().expect("stdout")),
        Box::new(guard.0.stderr.take().expect("stderr")),
    ];
    for output in outputs {
        let (sender, what) = (sender.clone(), what.to_string());
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines().map_while(Result::ok) {
                eprintln!("{what}: {line}");
                let _ = sender.send(line);
            }
        });
    }
    (guard, lines)
}

fn wait_line(lines: &mpsc::Receiver<String>, marker: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(marker) => return line,
            Ok(_) => {}
            Err(_) => panic!("no line with {marker:?} within {within:?}"),
        }
    }
}

/// A GET through `addr` with the `Host` a browser on a rebinding name would send.
fn get_with_host(addr: SocketAddr, path: &str, host: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

async fn wait_synced_with_digest(
    browser: &Browser,
    resource: &str,
    digest: &str,
    timeout: Duration,
) {
    browser
        .wait_for(
            &format!("{resource} synced with the cluster's digest"),
            timeout,
            || async {
                let shown = browser
                    .attr("[data-testid=store-stats]", "data-resource")
                    .await?;
                let (_, synced, state, now) = browser.store_stats().await?;
                (shown == resource && synced == "true" && state == "watching" && now == digest)
                    .then_some(())
            },
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_xtask_dev_signs_in_once_rebuilds_and_refuses_rebinding() {
    let (trunk_port, serve_port) = (free_port(), free_port());
    // dev gives serve this token (the test reads the cluster through serve with it).
    let token = random_token();
    let mut command = Command::new("cargo");
    command
        .current_dir(root())
        .args(["xtask", "dev", "--port", &trunk_port.to_string()])
        .args(["--serve-port", &serve_port.to_string()])
        .env("DELTASCOPE_TOKEN", &token);
    let (_dev, lines) = spawn_logged(&mut command, "cargo xtask dev");
    let line = wait_line(&lines, "deltascope dev: open ", BUILD);
    let url = line
        .split("deltascope dev: open ")
        .nth(1)
        .expect("a URL")
        .trim()
        .to_string();
    assert!(
        url.starts_with(&format!(
            "http://127.0.0.1:{trunk_port}/_deltascope/signin?code="
        )),
        "the one URL signs in on trunk's port: {url}"
    );
    assert!(!url.contains(&token), "the token is not in the URL: {url}");
    let cluster = Cluster {
        addr: format!("127.0.0.1:{serve_port}")
            .parse()
            .expect("serve address"),
        bearer: Some(token),
    };
    cluster.post("/_sim/churn", serde_json::json!({"events_per_sec": 0}));
    let digest = cluster.digest("pods");

    let browser = Browser::start().await;
    browser.client.goto(&url).await.expect("sign in");
    let page = browser.client.current_url().await.expect("current URL");
    assert_eq!(
        page.as_str(),
        format!("http://127.0.0.1:{trunk_port}/"),
        "signed in and sent to trunk's page, the code out of the address bar"
    );
    wait_synced_with_digest(&browser, "pods", &digest, SYNC).await;
    assert_eq!(
        channel_state(&browser).await.0,
        "open",
        "through trunk, the channel works"
    );

    browser.client.refresh().await.expect("reload");
    wait_synced_with_digest(&browser, "pods", &digest, SYNC).await;

    // A source change: trunk rebuilds and reloads the page, still signed in.
    browser.script("window.__before_rebuild = true;").await;
    let lib = root().join("src/lib.rs");
    let text = std::fs::read(&lib).expect("read src/lib.rs");
    std::fs::write(&lib, &text).expect("touch src/lib.rs");
    browser
        .wait_for("trunk to rebuild and reload the page", BUILD, || async {
            let value = browser
                .script("return window.__before_rebuild === true;")
                .await;
            (value == serde_json::json!(false)).then_some(())
        })
        .await;
    wait_synced_with_digest(&browser, "pods", &digest, SYNC).await;
    browser.screenshot("trunk-dev-after-rebuild.png").await;

    // DNS rebinding through trunk: a foreign name never reaches the cluster.
    let trunk: SocketAddr = format!("127.0.0.1:{trunk_port}")
        .parse()
        .expect("trunk address");
    let refused = get_with_host(
        trunk,
        "/api/v1/pods",
        &format!("rebind.example:{trunk_port}"),
    );
    assert_eq!(refused, 403, "a rebinding name is refused through trunk");
    let refused = get_with_host(
        format!("127.0.0.1:{serve_port}").parse().expect("serve"),
        "/api/v1/pods",
        &format!("rebind.example:{serve_port}"),
    );
    assert_eq!(refused, 403, "and straight to serve");
}

/// The repository's Trunk.toml, its proxy rules pointed at `backend` and its
/// paths made absolute, for a trunk serving on `port`.
fn trunk_config(backend: u16, port: u16, dist: &std::path::Path) -> String {
    let repo = std::fs::read_to_string(root().join("Trunk.toml")).expect("Trunk.toml");
    repo.replace("127.0.0.1:8080/", &format!("127.0.0.1:{backend}/"))
        .replace("port = 8081", &format!("port = {port}"))
        .replace(
            "target = \"index.html\"",
            &format!("target = \"{}\"", root().join("index.html").display()),
        )
        .replace("dist = \"dist\"", &format!("dist = \"{}\"", dist.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trunk_serve_straight_in_front_of_kubectl_proxy() {
    let (_sim, sim_addr) = start_sim(&["--seed", "7", "--pods", "150", "--churn", "30"]);
    let proxy = KubectlProxy::start(kubectl(), format!("http://{sim_addr}"));
    let backend: u16 = proxy
        .url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("kubectl proxy's port");
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("deltascope-trunk-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch dir");
    let config = dir.join("Trunk.toml");
    std::fs::write(&config, trunk_config(backend, port, &dir.join("dist"))).expect("write config");
    let mut command = Command::new("trunk");
    command
        .current_dir(root())
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--watch")
        .arg(root().join("index.html"))
        .arg("--no-autoreload")
        .env("TRUNK_SKIP_VERSION_CHECK", "true")
        .env("NO_COLOR", "true");
    let (_trunk, lines) = spawn_logged(&mut command, "trunk serve");
    wait_line(&lines, "server listening at", BUILD);

    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    let base = format!("http://127.0.0.1:{port}/");
    let browser = Browser::start().await;
    let wanted = [
        "services",
        "configmaps",
        "events",
        "namespaces",
        "replicasets.apps",
        "widgets.demo.deltascope.dev",
        "deployments.apps",
        "pods",
    ];
    let mut resources: Vec<_> = cluster
        .discovered()
        .into_iter()
        .filter(|r| wanted.contains(&r.name.as_str()))
        .collect();
    resources.sort_by_key(|r| wanted.iter().position(|w| *w == r.name));
    assert_eq!(resources.len(), 8, "{resources:?}");
    browser.client.goto(&base).await.expect("open the page");
    open_all(&browser, &base, &resources).await;
    let kept = browser
        .wait_for(
            "four watching, the rest paused with a reason",
            SYNC,
            || async {
                let kept = kept_states(&browser).await;
                let watching = kept.iter().filter(|(_, s)| s == "watching").count();
                let paused = kept.iter().filter(|(_, s)| s == "paused").count();
                (kept.len() == 8 && watching == 4 && paused == 4).then_some(kept)
            },
        )
        .await;
    let (state, words) = channel_state(&browser).await;
    assert_eq!(
        state, "unavailable",
        "no channel behind kubectl proxy: {words}"
    );
    assert!(words.contains("paused"), "{words}");
    // No serve, so no history it records: the status bar says nothing of
    // one (and no error either).
    let history_items = browser
        .script("return document.querySelectorAll('[data-history-status]').length;")
        .await;
    assert_eq!(history_items.as_u64(), Some(0), "no serve, no history item");
    eprintln!("kept behind trunk and kubectl proxy: {kept:?}");
    browser.screenshot("trunk-kubectl-proxy.png").await;

    cluster.post("/_sim/churn", serde_json::json!({"events_per_sec": 0}));
    let pods_and_deployments: Vec<_> = resources
        .iter()
        .filter(|r| r.name == "pods" || r.name == "deployments.apps")
        .cloned()
        .collect();
    assert_eq!(pods_and_deployments.len(), 2, "{resources:?}");
    digests_converge(&browser, &base, &cluster, &pods_and_deployments).await;
    let _ = std::fs::remove_dir_all(&dir);
}
