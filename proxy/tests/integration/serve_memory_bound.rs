//! serve's memory bound ([`deltascope_proxy::limits`], stated in
//! ARCHITECTURE.md) against the worst client one signed-in session can be —
//! a frozen tab, a buggy script, a hostile local process with the token.
//! `deltascope serve --upstream` runs in a process of its own, so its
//! `VmRSS`/`VmHWM` are its alone; the simulated cluster it forwards to runs
//! in this process.
//!
//! - A flood of stream opens (control bodies just under the limit, new ids
//!   each time) is refused at control time with 429 and a Status, and never
//!   stored: serve grows by less than one channel's bound. (That finished
//!   but unwritten streams count is `channel::tests`', where nothing reads.)
//! - Sixteen channels that never read, each opening watches and lists up to
//!   the session's caps while the cluster churns: serve stays within one
//!   session's bound, `/healthz` and another session answer in under 50 ms,
//!   the flooding session's further requests get 429s with Status bodies,
//!   and when the client goes every slot comes back. (A channel that stalls
//!   is torn down: `serve_channel_limits.rs`.)

use crate::channel_support;
use crate::serve_support;

use channel_support::*;
use deltascope_proxy::limits::{
    SessionBound, CONNECTION_COST, DEFAULT_MAX_REQUESTS, DEFAULT_MAX_WATCHES,
    MAX_CHANNELS_PER_SESSION, MAX_CONTROL_BYTES, MAX_STREAMS_PER_CHANNEL, MAX_STREAMS_PER_SESSION,
};
use deltascope_sim::Sim;
use serve_support::*;

/// The simulated cluster on a loopback port of this process.
async fn upstream(config: SimConfig) -> (Sim, String) {
    let sim = Sim::start(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = sim.api_router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (sim, url)
}

/// `deltascope serve --upstream URL` with the channel tests' token.
async fn serve(upstream: &str) -> (tokio::process::Child, SocketAddr, u32) {
    let (child, addr) = started(serve_binary(&["--upstream", upstream, "--token", TOKEN])).await;
    let pid = child.id().expect("serve runs");
    (child, addr, pid)
}

/// A channel that is never read, over a socket with a small receive buffer.
async fn unread_channel(addr: SocketAddr) -> ChannelClient {
    let bearer = format!("Bearer {TOKEN}");
    ChannelClient::open_as(addr, ("Authorization", &bearer), Some(16 * 1024)).await
}

/// `POST` a control body as the bearer session.
async fn post_control(addr: SocketAddr, id: &str, control: &Control) -> Resp {
    let body = serde_json::to_string(control).unwrap();
    assert!(body.len() <= MAX_CONTROL_BYTES, "{} bytes", body.len());
    send(addr, control_req(id, &body).bearer(TOKEN)).await
}

/// Asserts a 429 whose body is a Status saying `what`, with `Retry-After`.
fn assert_too_many(resp: &Resp, what: &str) {
    let json = resp.assert_status(429);
    assert_eq!(json["reason"], "TooManyRequests", "{json}");
    let message = json["message"].as_str().unwrap_or_default();
    assert!(message.contains(what), "{message:?} should say {what:?}");
    assert_eq!(resp.header("Retry-After"), Some("1"));
}

/// Opens of `path` for `count` new stream ids from `next`.
fn opens_of(next: &mut StreamId, count: usize, path: &str) -> Vec<Open> {
    (0..count)
        .map(|_| {
            *next += 1;
            Open {
                stream: *next,
                path: path.to_owned(),
                accept: None,
            }
        })
        .collect()
}

/// Sends `request`, asserts it is answered `code`, and notes how long it took.
async fn timed(addr: SocketAddr, request: Req, code: u16, took: &mut Vec<Duration>) {
    let started = Instant::now();
    let resp = send(addr, request).await;
    took.push(started.elapsed());
    assert_eq!(resp.status, code, "{}", resp.text());
}

/// Everyone else is answered at once while a session floods serve: the
/// median under 50 ms, and none starved (the machine's two cores are shared
/// with the cluster, the flooding client and other tests, so one slow answer
/// is the scheduler's, a slow median serve's).
fn assert_answered_quickly(what: &str, took: &mut [Duration]) {
    assert!(!took.is_empty(), "{what}: nothing was timed");
    took.sort();
    let median = took[took.len() / 2];
    let slowest = took[took.len() - 1];
    eprintln!(
        "{what}: {} answers, median {median:?}, slowest {slowest:?}",
        took.len()
    );
    assert!(
        median < Duration::from_millis(50),
        "{what}: median {median:?} while another session floods serve ({took:?})"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "{what}: one answer took {slowest:?} while another session floods serve"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_stream_opens_is_refused_at_control_time_and_never_stored() {
    let (_sim, url) = upstream(quiet_sim()).await;
    let (_child, addr, pid) = serve(&url).await;
    let channel = unread_channel(addr).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = memory_kib(pid, "VmRSS");

    // Bodies just under the limit, each opening thousands of new streams
    // with a path that never reaches the upstream: all refused, none stored.
    let mut next: StreamId = 0;
    let per_body = MAX_CONTROL_BYTES / 40;
    for _ in 0..8 {
        let flood = Control {
            open: opens_of(&mut next, per_body, "/x"),
            close: Vec::new(),
        };
        let resp = post_control(addr, &channel.id, &flood).await;
        assert_too_many(&resp, &format!("at most {MAX_STREAMS_PER_CHANNEL}"));
    }
    // Up to the cap they are taken (each answered 400, counted until written).
    let full = Control {
        open: opens_of(&mut next, MAX_STREAMS_PER_CHANNEL, "/x"),
        close: Vec::new(),
    };
    assert_eq!(post_control(addr, &channel.id, &full).await.status, 202);

    let cookie = sign_in_with_form_at(addr, TOKEN).await;
    let (mut health, mut other) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        timed(addr, req("GET", "/healthz"), 200, &mut health).await;
        let list = req("GET", "/api/v1/namespaces").header("Cookie", &cookie);
        timed(addr, list, 200, &mut other).await;
    }
    assert_answered_quickly("/healthz", &mut health);
    assert_answered_quickly("another session's list", &mut other);

    let grown = (memory_kib(pid, "VmHWM").saturating_sub(base) * 1024) as usize;
    let bound = limits::channel_bound() + 4 * CONNECTION_COST;
    eprintln!("serve grew by {grown} bytes under the flood of opens (bound {bound})");
    assert!(
        grown <= bound,
        "serve grew by {grown} bytes under a flood of opens; one channel's bound is {bound}"
    );
    drop(channel);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worst_client_of_one_session_stays_within_its_bound() {
    let (sim, url) = upstream(SimConfig {
        initial_pods: 600,
        churn_per_sec: 500.0,
        // The sim must not end the watches itself first.
        slow_watch_timeout: Duration::from_secs(120),
        ..SimConfig::default()
    })
    .await;
    let (_child, addr, pid) = serve(&url).await;
    // One list through serve first, so what serve keeps for any use is in the base.
    assert_eq!(get(addr, "/api/v1/pods", None).await.status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = memory_kib(pid, "VmRSS");

    // Sixteen channels, never read; each opens its share of the session's
    // streams: watches up to --max-watches, the rest lists of every pod.
    let mut channels = Vec::new();
    for _ in 0..MAX_CHANNELS_PER_SESSION {
        channels.push(unread_channel(addr).await);
    }
    let per_channel = MAX_STREAMS_PER_SESSION / MAX_CHANNELS_PER_SESSION;
    let watches = DEFAULT_MAX_WATCHES / MAX_CHANNELS_PER_SESSION;
    let watch = format!("/api/v1/pods?{WATCH}");
    let mut next: StreamId = 0;
    for channel in &channels {
        let mut open = opens_of(&mut next, watches, &watch);
        open.extend(opens_of(&mut next, per_channel - watches, "/api/v1/pods"));
        let resp = post_control(
            addr,
            &channel.id,
            &Control {
                open,
                close: Vec::new(),
            },
        )
        .await;
        assert_eq!(resp.status, 202, "{}", resp.text());
    }
    // While they produce and nobody reads, serve stays within the bound, and
    // everyone else is answered at once.
    let bound =
        SessionBound::default_flags().total() + (MAX_CHANNELS_PER_SESSION + 4) * CONNECTION_COST;
    // Measured until just before the channels would be torn down as stalled.
    let until = Instant::now() + CHANNEL_STALL_GRACE - Duration::from_secs(4);
    let cookie = sign_in_with_form_at(addr, TOKEN).await;
    // The first second moves the lists' first megabytes and starts 2,048
    // streams; from then on the flood only holds what it has.
    let settled = Instant::now() + Duration::from_secs(2);
    let (mut health, mut other) = (Vec::new(), Vec::new());
    let mut checked_the_session = false;
    while Instant::now() < until {
        let grown = (memory_kib(pid, "VmHWM").saturating_sub(base) * 1024) as usize;
        assert!(
            grown <= bound,
            "serve grew by {grown} bytes under one session's worst client; its bound is {bound}"
        );
        if Instant::now() < settled {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        timed(addr, req("GET", "/healthz"), 200, &mut health).await;
        let list = req("GET", "/api/v1/namespaces").header("Cookie", &cookie);
        timed(addr, list, 200, &mut other).await;
        if !checked_the_session && sim.open_watches() >= DEFAULT_MAX_WATCHES {
            // The flooding session's own requests are refused with a Status.
            assert_too_many(
                &get(addr, "/api/v1/namespaces", None).await,
                &format!("{DEFAULT_MAX_REQUESTS} requests in flight"),
            );
            assert_too_many(
                &get(addr, &format!("/api/v1/namespaces?{WATCH}"), None).await,
                &format!("{DEFAULT_MAX_WATCHES} open watches"),
            );
            checked_the_session = true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        checked_the_session,
        "the session's {DEFAULT_MAX_WATCHES} watches never all reached the cluster ({} did)",
        sim.open_watches()
    );
    assert_answered_quickly("/healthz", &mut health);
    assert_answered_quickly("another session's list", &mut other);
    let grown = (memory_kib(pid, "VmHWM").saturating_sub(base) * 1024) as usize;
    eprintln!(
        "serve grew by {grown} bytes under one session's worst client: {:.2}x its bound of {bound}",
        grown as f64 / bound as f64
    );

    // The tab goes away: every channel, watch and request slot goes with it.
    for channel in channels {
        channel.disconnect();
    }
    eventually(
        Duration::from_secs(10),
        "the channels' watches closed at the cluster",
        || sim.open_watches() == 0,
    )
    .await;
    assert_eq!(get(addr, "/api/v1/namespaces", None).await.status, 200);
    let mut fresh = ChannelClient::open(addr).await;
    control(addr, &fresh.id, &opens(&[(1, &watch, None)])).await;
    fresh
        .read_until(Duration::from_secs(10), "a watch on a fresh channel", |c| {
            c.started(1) && c.stream(1).has("\"type\":\"ADDED\"")
        })
        .await;
    assert_eq!(fresh.stream(1).start, Some((200, None)));
}
