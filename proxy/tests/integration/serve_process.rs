//! Serve's hardening (nine items, numbered in `serve_hardening.rs` and
//! `serve_hardening_web.rs`), the items that need `deltascope serve` in a process of its own:
//! its memory under 1,000 attempted watches in every spelling (item 1), its
//! file limit under a flood of idle connections (item 2), and where its token
//! comes from (item 9). The stub upstream runs in this process.

use crate::serve_support;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serve_support::*;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_deltascope");
const TOKEN: &str = "process-token-0123456789abcdef0123456789";
const EVENT: &str = "\"type\":\"ADDED\"";

fn serve(args: &[&str]) -> Command {
    let mut command = serve_binary(args);
    command.env("RUST_LOG", "warn");
    command
}

fn rss_kib(pid: u32) -> u64 {
    memory_kib(pid, "VmRSS")
}

/// Raises this test process's own soft file limit (its clients and the
/// stub's sockets for 1,000 watches); other tests in this binary only gain.
fn raise_own_file_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let wanted = hard.min(1 << 16);
    if soft < wanted {
        setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).unwrap();
    }
}

/// Opens `attempts` watches on `addr` cycling through `spellings`; keeps the
/// ones answered 200 (after their first event) and returns them with the
/// number refused with 429 (any other end is reported and counted as neither).
async fn attempt_watches(
    addr: SocketAddr,
    attempts: usize,
    spellings: &[&str],
) -> (Vec<TcpStream>, usize) {
    let mut open_watches = Vec::new();
    let mut refused = 0;
    for n in 0..attempts {
        let spelling = spellings[n % spellings.len()];
        assert!(apiserver_watches(spelling), "{spelling}");
        let target = format!("/api/v1/configmaps?{spelling}&interval_ms=600000");
        let mut stream = open(addr, req("GET", &target).bearer(TOKEN)).await;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
                .await
                .unwrap_or_else(|_| panic!("no answer to {target}"))
                .unwrap();
            buf.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&buf);
            if text.starts_with("HTTP/1.1 429") {
                refused += 1;
                break;
            }
            if text.contains(EVENT) {
                open_watches.push(stream);
                break;
            }
            if read == 0 {
                eprintln!("{target} ended without an answer: {text:?}");
                break;
            }
        }
    }
    (open_watches, refused)
}

/// Item 1: 1,000 attempted watches in every spelling hold no more memory than
/// the `--max-watches` bound of 256 counted ones does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item1_rss_with_1000_watches_in_every_spelling_stays_at_the_max_watches_bound() {
    raise_own_file_limit();
    let stub = start_stub().await;
    let upstream = stub.url();
    // The connection cap (item 2) stays out of the way: this is about --max-watches.
    let args = [
        "--upstream",
        upstream.as_str(),
        "--token",
        TOKEN,
        "--max-watches",
        "256",
        "--max-connections",
        "4096",
    ];

    // The bound: 256 watches spelled as every client spells them.
    let (bound_serve, addr) = started(serve(&args)).await;
    let (held, refused) = attempt_watches(addr, 256, &["watch=1"]).await;
    assert_eq!((held.len(), refused), (256, 0));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bound = rss_kib(bound_serve.id().unwrap());
    drop(held);
    drop(bound_serve);

    let (attacked, addr) = started(serve(&args)).await;
    let (held, refused) = attempt_watches(addr, 1000, &WATCH_SPELLINGS).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let attacked_rss = rss_kib(attacked.id().unwrap());
    eprintln!(
        "serve RSS: {:.1} MiB with 256 counted watches; {:.1} MiB after 1,000 attempts in \
         {} spellings ({} open, {refused} refused with 429)",
        bound as f64 / 1024.0,
        attacked_rss as f64 / 1024.0,
        WATCH_SPELLINGS.len(),
        held.len()
    );
    assert!(
        attacked_rss <= bound + bound / 4 + 4096,
        "{attacked_rss} KiB after the attempts, against {bound} KiB at the bound"
    );
    assert_eq!(held.len(), 256, "watches open beyond --max-watches");
    assert_eq!(refused, 744);
}

/// Item 2: with as few descriptors as `ulimit -n 256` leaves, 400 connections
/// that never send a byte neither starve `/healthz` nor cut an authenticated
/// watch: the connection cap sheds the oldest unauthenticated connections (the
/// header-read timeout, which would close them too, is set out of reach here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item2_idle_connections_do_not_starve_healthz_at_a_low_file_limit() {
    raise_own_file_limit();
    let stub = start_stub().await;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--dist"])
        .arg(make_dist())
        .args(["--upstream", &stub.url(), "--token", TOKEN])
        // Not the header-read timeout: the cap alone must keep serve answering.
        .args(["--header-read-timeout", "60s"])
        .env("RUST_LOG", "error");
    let (_serve, addr) = started(command).await;
    let mut watch = open(
        addr,
        req("GET", "/api/v1/pods?watch=1&interval_ms=100").bearer(TOKEN),
    )
    .await;
    let mut buf = Vec::new();
    read_occurrences(&mut watch, &mut buf, EVENT, 1, Duration::from_secs(5)).await;
    // Once serve stops accepting, its backlog fills and connecting stalls.
    let flood = async {
        let mut idle = Vec::new();
        for _ in 0..400 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        idle
    };
    let _idle = tokio::time::timeout(Duration::from_secs(10), flood)
        .await
        .expect("serve kept accepting connections during the flood");
    let health = tokio::time::timeout(Duration::from_secs(5), send(addr, req("GET", "/healthz")))
        .await
        .expect("/healthz answers within 5 s despite 400 idle connections");
    assert_eq!(health.status, 200);
    let bearer = send(addr, req("GET", "/api/v1/pods").bearer(TOKEN)).await;
    assert_eq!(bearer.status, 200);
    read_occurrences(&mut watch, &mut buf, EVENT, 5, Duration::from_secs(5)).await;
}

/// Item 2: serve lifts its soft file limit to the hard one at start.
#[tokio::test]
async fn item2_serve_raises_its_soft_file_limit() {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -Sn 256 && ulimit -Hn 4096 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--dist"])
        .arg(make_dist())
        .args(["--upstream", "http://127.0.0.1:9"])
        // the file of the token it makes up goes there
        .env("XDG_RUNTIME_DIR", scratch_dir());
    let (serve, _addr) = started(command).await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", serve.id().unwrap())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers, ["4096", "4096"], "{line}");
}

/// Item 9: a short `--token` is refused; from a file or the environment the
/// token works and is not on the command line `ps` shows.
#[tokio::test]
async fn item9_the_token_comes_from_a_file_or_the_environment_never_short() {
    let refused = refused_at_start(serve(&[
        "--upstream",
        "http://127.0.0.1:9",
        "--token",
        "too-short",
    ]))
    .await;
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("at least 32"), "{message}");

    let dir = make_dist();
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let from_file = serve(&["--upstream", "http://127.0.0.1:9", "--token-file"]);
    let mut from_file = from_file;
    from_file.arg(&file);
    let mut from_env = serve(&["--upstream", "http://127.0.0.1:9"]);
    from_env.env("DELTASCOPE_TOKEN", TOKEN);
    for command in [from_file, from_env] {
        let (child, addr) = started(command).await;
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id().unwrap())).unwrap();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains(TOKEN),
            "the token is on the command line"
        );
        let resp = send(addr, req("GET", "/version").bearer(TOKEN)).await;
        assert_ne!(resp.status, 401, "{}", resp.text());
    }

    let short_file = dir.join("short");
    std::fs::write(&short_file, "short\n").unwrap();
    let mut refused = serve(&["--upstream", "http://127.0.0.1:9", "--token-file"]);
    refused.arg(&short_file);
    let refused = refused_at_start(refused).await;
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("at least 32"), "{message}");
}

/// Runs `command`, which must exit with a failure within 10 s (rather than
/// start serving).
async fn refused_at_start(mut command: Command) -> std::process::Output {
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("serve refused to start (it is still running)")
        .unwrap();
    assert!(!output.status.success());
    output
}

/// `serve --demo` says it is building the simulated cluster before it does
/// (half a minute at 100,000 pods), and when it is ready, before it listens;
/// its log, piped, is plain text.
#[tokio::test]
async fn a_demo_says_it_builds_the_simulated_cluster_before_it_listens() {
    use tokio::io::AsyncBufReadExt;
    let mut command = serve(&["--demo", "--pods", "2000", "--token", TOKEN]);
    command.env("RUST_LOG", "info");
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let listening = line.contains("deltascope serve listening");
            seen.push(line);
            if listening {
                return;
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "serve --demo did not listen within 60 s: {seen:#?}"
    );
    let at = |words: &str| seen.iter().position(|l| l.contains(words));
    let building = at("building the simulated cluster").expect("it says it builds");
    let ready = at("the simulated cluster is ready").expect("it says when it is ready");
    let listening = at("deltascope serve listening").expect("it listens");
    assert!(building < ready && ready < listening, "{seen:#?}");
    // piped, not a terminal: plain text, no colour codes
    assert!(seen[building].contains("pods=2000"), "{}", seen[building]);
    assert!(!seen.iter().any(|l| l.contains('\u{1b}')), "{seen:#?}");
}
