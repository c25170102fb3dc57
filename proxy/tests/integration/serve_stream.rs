//! Streaming behaviour of `deltascope serve` over real loopback HTTP: watch
//! events pass one by one (no buffering, also through the Secret redactor),
//! a browser disconnect closes the upstream watch, the per-session watch
//! limit, and the `deltascope serve` binary's printed URL.

use crate::serve_support;

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serve_support::*;

const EVENT: &str = "\"type\":\"ADDED\"";

async fn assert_arrive_one_by_one(path: &str) {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let mut stream = open(proxy.local_addr(), req("GET", path).bearer(proxy.token())).await;
    let mut buf = Vec::new();
    let arrivals = read_occurrences(&mut stream, &mut buf, EVENT, 4, Duration::from_secs(10)).await;
    let head = String::from_utf8_lossy(&buf);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The stub sends one event every 300 ms: each must arrive on its own.
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(150),
            "events arrived together (gap {gap:?}): the proxy buffers"
        );
    }
}

#[tokio::test]
async fn watch_events_arrive_one_by_one() {
    assert_arrive_one_by_one("/api/v1/pods?watch=1&events=4&interval_ms=300").await;
}

#[tokio::test]
async fn redacted_secret_watch_events_arrive_one_by_one() {
    assert_arrive_one_by_one(
        "/api/v1/namespaces/default/secrets?watch=true&events=4&interval_ms=300",
    )
    .await;
}

/// Events many times the proxy's upstream read size (4 KiB for watches)
/// arrive whole and in order.
#[tokio::test]
async fn watch_events_larger_than_a_read_arrive_whole() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let pad = 300_000;
    let response = send(
        proxy.local_addr(),
        req(
            "GET",
            &format!("/api/v1/pods?watch=true&events=3&interval_ms=5&pad={pad}"),
        )
        .bearer(proxy.token()),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.text());
    let text = response.text();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "three events, one per line");
    for (n, line) in lines.iter().enumerate() {
        let event: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("event {n} is not whole JSON ({e})"));
        assert_eq!(event["object"]["metadata"]["name"], format!("p{n}"));
        let annotation = event["object"]["metadata"]["annotations"]["pad"]
            .as_str()
            .expect("the padding annotation");
        assert_eq!(annotation.len(), pad, "event {n} lost bytes");
    }
}

/// A list many times hyper's largest read (~400 KiB) comes through whole and
/// byte for byte, with the upstream's Content-Length.
#[tokio::test]
async fn big_lists_arrive_whole() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let (items, pad) = (4_000, 2_000);
    let response = send(
        proxy.local_addr(),
        req("GET", &format!("/api/v1/pods?items={items}&pad={pad}")).bearer(proxy.token()),
    )
    .await;
    assert_eq!(response.status, 200);
    let expected = big_pod_list(items, pad);
    assert!(expected.len() > 8_000_000, "{} bytes", expected.len());
    assert_eq!(
        response.header("content-length"),
        Some(expected.len().to_string().as_str())
    );
    assert!(
        response.body == expected.as_bytes(),
        "the list changed on the way ({} of {} bytes)",
        response.body.len(),
        expected.len()
    );
}

#[tokio::test]
async fn legacy_watch_prefix_streams_too() {
    assert_arrive_one_by_one("/api/v1/watch/pods?events=4&interval_ms=300&watch=1").await;
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn browser_disconnect_closes_the_upstream_watch() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let path = "/api/v1/pods?watch=1&interval_ms=200";
    let mut stream = open(proxy.local_addr(), req("GET", path).bearer(proxy.token())).await;
    let mut buf = Vec::new();
    read_occurrences(&mut stream, &mut buf, EVENT, 2, Duration::from_secs(5)).await;
    assert_eq!(stub.state.open_watches.load(Ordering::SeqCst), 1);
    drop(stream);
    wait_for("the upstream watch to close", || {
        stub.state.open_watches.load(Ordering::SeqCst) == 0
    })
    .await;
}

#[tokio::test]
async fn watches_per_session_are_limited_with_429() {
    let (stub, proxy) = stub_and_proxy(|c| c.max_watches_per_session = 2).await;
    let addr = proxy.local_addr();
    let path = "/api/v1/pods?watch=1&interval_ms=200";
    let mut open_watches = Vec::new();
    for _ in 0..2 {
        let mut stream = open(addr, req("GET", path).bearer(proxy.token())).await;
        let mut buf = Vec::new();
        read_occurrences(&mut stream, &mut buf, EVENT, 1, Duration::from_secs(5)).await;
        open_watches.push(stream);
    }
    let refused = send(addr, req("GET", path).bearer(proxy.token())).await;
    let json = refused.assert_status(429);
    assert!(
        json["message"].as_str().unwrap().contains("--max-watches"),
        "{json}"
    );
    assert!(refused.header("retry-after").is_some());
    assert_eq!(stub.state.open_watches.load(Ordering::SeqCst), 2);
    // Lists are not watches and still pass.
    let list = send(addr, req("GET", "/api/v1/pods").bearer(proxy.token())).await;
    assert_eq!(list.status, 200);
    // Closing one frees its slot.
    open_watches.pop();
    wait_for("the upstream watch to close", || {
        stub.state.open_watches.load(Ordering::SeqCst) == 1
    })
    .await;
    let mut stream = open(addr, req("GET", path).bearer(proxy.token())).await;
    let mut buf = Vec::new();
    read_occurrences(&mut stream, &mut buf, EVENT, 1, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn binary_prints_the_url_with_the_real_port() {
    const TOKEN: &str = "abc123-0123456789abcdef0123456789abcdef";
    let mut served = Served::start(serve_binary(&[
        "--upstream",
        "http://127.0.0.1:9",
        "--token",
        TOKEN,
    ]))
    .await;
    let addr = served.addr;
    assert_ne!(addr.port(), 0);
    assert!(
        served.link.starts_with("/?code="),
        "a one-time code: {}",
        served.first_line
    );
    assert!(
        !served.first_line.contains(TOKEN),
        "the token is not in the printed URL: {}",
        served.first_line
    );
    assert_eq!(send(addr, req("GET", "/healthz")).await.status, 200);
    let signin = send(addr, req("GET", &served.link)).await;
    assert_eq!(signin.status, 303);
    // An operator's own token is never written anywhere, nor printed.
    assert_eq!(served.next_line(Duration::from_millis(300)).await, None);
    served.child.kill().await.unwrap();
}

#[tokio::test]
async fn access_log_has_the_facts_but_never_the_token_or_secret_values() {
    let stub = start_stub().await;
    let token = "tok-5ecret-98765-0123456789abcdef0123456789".to_string();
    let mut command = serve_binary(&["--token", &token, "--upstream", &stub.url()]);
    command
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped());
    let Served {
        mut child,
        addr,
        link,
        ..
    } = Served::start(command).await;
    send(addr, req("GET", &link)).await;
    send(addr, req("GET", "/?token=wrong-guess")).await;
    send(
        addr,
        req("GET", "/api/v1/namespaces/default/secrets/s1").bearer(&token),
    )
    .await;
    let watch = "/api/v1/namespaces/default/secrets?watch=1&events=2&interval_ms=10";
    send(addr, req("GET", watch).bearer(&token)).await;
    send(
        addr,
        req("DELETE", "/api/v1/namespaces/default/pods/p").bearer(&token),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.kill().await.unwrap();
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(child.stderr.as_mut().unwrap(), &mut log)
        .await
        .unwrap();
    assert!(!log.contains(&token), "token in the log:\n{log}");
    assert!(
        !log.contains(&link[3..]),
        "the sign-in code in the log:\n{log}"
    );
    assert!(!log.contains("wrong-guess"), "query in the log:\n{log}");
    for needle in [SECRET_B64, SECRET_PLAIN, SECRET_DECODED] {
        assert!(!log.contains(needle), "secret value in the log:\n{log}");
    }
    let entry = log
        .lines()
        .find(|l| l.contains("path=/api/v1/namespaces/default/secrets/s1"))
        .unwrap_or_else(|| panic!("no access log entry:\n{log}"));
    for field in ["method=GET", "status=200", "bytes=", "duration_ms="] {
        assert!(entry.contains(field), "{field} missing in {entry}");
    }
    assert!(
        log.contains("method=DELETE") && log.contains("status=405"),
        "{log}"
    );
    assert!(
        log.contains("watch closed") && log.contains("lifetime_ms="),
        "{log}"
    );
}

#[tokio::test]
async fn binary_demo_mode_generates_a_random_token() {
    let mut served = Served::start(serve_binary(&["--demo", "--churn", "0", "--pods", "3"])).await;
    let addr = served.addr;
    let token = token_from_file(&mut served).await;
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    send(addr, req("GET", "/version")).await.assert_status(401);
    let resp = send(addr, req("GET", "/version").bearer(&token)).await;
    assert_ne!(resp.status, 401);
    served.child.kill().await.unwrap();
}
