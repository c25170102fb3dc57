//! The page's channel at its limits, against `serve --demo` on loopback:
//!
//! - a reader that stops reading costs serve at most a stream's buffer, and
//!   its busy stream is ended as too slow while a quiet one lives on;
//! - a reader that never reads again has its channel torn down, and with it
//!   every stream, upstream watch and slot;
//! - an upstream body that breaks becomes a Fail frame, not an End, and the
//!   channel carries on; an idle channel whose reader went away is noticed;
//! - `--no-channel` answers 404 naming the flag.

use crate::channel_support;
use crate::serve_support;

use channel_support::*;
use serve_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_stops_costs_one_buffer_and_its_busy_stream() {
    let proxy = demo(SimConfig {
        initial_pods: 3000,
        churn_per_sec: 2000.0,
        // The sim must not end the watch itself first.
        slow_watch_timeout: Duration::from_secs(120),
        ..SimConfig::default()
    })
    .await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let mut channel = ChannelClient::open_as(
        addr,
        ("Authorization", &format!("Bearer {TOKEN}")),
        Some(16 * 1024),
    )
    .await;
    const PODS: StreamId = 1;
    const QUIET: StreamId = 2;
    let pods = format!("/api/v1/pods?{WATCH}");
    let quiet = format!("/api/v1/namespaces?{WATCH}");
    control(
        addr,
        &channel.id,
        &opens(&[(PODS, &pods, None), (QUIET, &quiet, None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "both streams' first events", |c| {
            c.started(PODS)
                && c.started(QUIET)
                && c.stream(PODS).has("\"type\":\"ADDED\"")
                && c.stream(QUIET).has("\"type\":\"ADDED\"")
        })
        .await;
    assert_eq!(channel.stream(PODS).start, Some((200, None)));
    assert_eq!(channel.stream(QUIET).start, Some((200, None)));

    // The page stops reading for longer than the grace period.
    let pause = SLOW_READER_GRACE + Duration::from_secs(4);
    let until = Instant::now() + pause;
    let mut largest = 0;
    let mut healthz_checked = false;
    while Instant::now() < until {
        let stats = proxy.channel_stats().unwrap();
        largest = largest.max(stats.largest_queue);
        assert!(
            stats.largest_queue <= STREAM_BUFFER,
            "a stream's queue holds {} bytes, more than its buffer of {STREAM_BUFFER}",
            stats.largest_queue
        );
        assert!(stats.queued_bytes <= 2 * STREAM_BUFFER, "{stats:?}");
        if !healthz_checked && until - Instant::now() < Duration::from_secs(5) {
            let health = send(addr, req("GET", "/healthz")).await;
            assert_eq!(health.status, 200, "{}", health.text());
            healthz_checked = true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("largest stream queue while the page did not read: {largest} bytes");
    assert!(
        largest + MAX_DATA_FRAME > STREAM_BUFFER,
        "the pods stream's queue never filled ({largest} bytes): the test did not stop the reader"
    );

    // Reading again: the busy stream was ended as too slow, the quiet one lives.
    channel
        .read_until(Duration::from_secs(20), "the pods stream's end", |c| {
            c.ended(PODS)
        })
        .await;
    let reason = channel
        .stream(PODS)
        .failed()
        .unwrap_or_else(|| panic!("the pods stream ended cleanly: {}", channel.summary()))
        .to_owned();
    assert!(reason.contains("too slow"), "{reason}");
    channel.stream(PODS).events();
    assert_eq!(channel.stream(QUIET).ended, None, "{}", channel.summary());
    let quiet_events = channel.stream(QUIET).events().len();
    channel
        .read_until(
            Duration::from_secs(5),
            "another event on the quiet stream",
            |c| c.stream(QUIET).events().len() > quiet_events,
        )
        .await;
    channel
        .read_while_waiting(Duration::from_secs(5), "the pods watch closed", || {
            let stats = proxy.channel_stats().unwrap();
            sim.open_watches() == 1 && stats.streams == 1
        })
        .await;
    assert_eq!(channel.stream(QUIET).ended, None);
    let health = send(addr, req("GET", "/healthz")).await;
    assert_eq!(health.status, 200, "{}", health.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_whose_reader_never_reads_again_is_torn_down() {
    let proxy = demo(SimConfig {
        initial_pods: 300,
        churn_per_sec: 500.0,
        slow_watch_timeout: Duration::from_secs(120),
        ..SimConfig::default()
    })
    .await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let bearer = format!("Bearer {TOKEN}");
    let mut channel =
        ChannelClient::open_as(addr, ("Authorization", &bearer), Some(16 * 1024)).await;
    let watch = format!("/api/v1/pods?{WATCH}");
    let quiet = format!("/api/v1/namespaces?{WATCH}");
    control(
        addr,
        &channel.id,
        &opens(&[(1, &watch, None), (2, &watch, None), (3, &quiet, None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "the streams' first events", |c| {
            (1..=3).all(|s| c.started(s))
        })
        .await;
    // The page freezes for good.
    let frozen = Instant::now();
    // The grace runs from when serve's writes stop going out, which is
    // after the socket's buffers fill: slower on a loaded machine (a full
    // run took over 30 s here with 10 s of slack; 25 s alone).
    eventually(
        CHANNEL_STALL_GRACE + Duration::from_secs(40),
        "the frozen channel torn down",
        || proxy.channel_stats().unwrap().channels == 0,
    )
    .await;
    let after = frozen.elapsed();
    assert!(
        after >= CHANNEL_STALL_GRACE,
        "torn down after {after:?}, before the grace of {CHANNEL_STALL_GRACE:?}"
    );
    eventually(Duration::from_secs(5), "its watches closed", || {
        sim.open_watches() == 0
    })
    .await;
    assert_eq!(proxy.channel_stats().unwrap(), ChannelStats::default());
    // Its page's next reads find the response ended, as after any break.
    let deadline = Instant::now() + Duration::from_secs(10);
    let ended = loop {
        match tokio::time::timeout_at(deadline, channel.body.frame()).await {
            Ok(None) | Ok(Some(Err(_))) => break true,
            Ok(Some(Ok(_))) => continue,
            Err(_) => break false,
        }
    };
    assert!(ended, "the frozen channel's response did not end");
}

#[tokio::test]
async fn a_broken_upstream_body_fails_its_stream_and_the_channel_carries_on() {
    let proxy = demo(quiet_sim()).await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let mut channel = ChannelClient::open(addr).await;
    let watch = format!("/api/v1/namespaces?{WATCH}");
    control(
        addr,
        &channel.id,
        &opens(&[(1, &watch, None), (2, &watch, None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "both watches' events", |c| {
            (1..=2).all(|s| c.started(s) && c.stream(s).has("\"type\":\"ADDED\""))
        })
        .await;
    eventually(Duration::from_secs(5), "two sim watches", || {
        sim.open_watches() == 2
    })
    .await;
    fault(addr, r#"{"kind":"restart"}"#).await;
    channel
        .read_until(Duration::from_secs(10), "both streams' end", |c| {
            c.ended(1) && c.ended(2)
        })
        .await;
    for stream in [1, 2] {
        let reason = channel
            .stream(stream)
            .failed()
            .unwrap_or_else(|| panic!("a broken body ended cleanly: {}", channel.summary()))
            .to_owned();
        assert!(reason.contains("broke"), "{reason}");
    }
    // The channel itself lives on.
    control(addr, &channel.id, &opens(&[(3, &watch, None)])).await;
    channel
        .read_until(Duration::from_secs(10), "the new watch's events", |c| {
            c.started(3) && c.stream(3).has("\"type\":\"ADDED\"")
        })
        .await;
    assert_eq!(channel.stream(3).start, Some((200, None)));
    assert_eq!(proxy.channel_stats().unwrap().streams, 1);
}

#[tokio::test]
async fn an_idle_channel_pings_and_is_noticed_gone() {
    let proxy = demo(quiet_sim()).await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let rv = resource_version(addr, "/api/v1/namespaces").await;
    let mut channel = ChannelClient::open(addr).await;
    // A watch that says nothing: no changes, no bookmarks.
    let silent = format!("/api/v1/namespaces?watch=1&resourceVersion={rv}");
    control(addr, &channel.id, &opens(&[(1, &silent, None)])).await;
    channel
        .read_until(Duration::from_secs(10), "the silent watch's Start", |c| {
            c.started(1)
        })
        .await;
    channel
        .read_until(
            Duration::from_millis(PING_INTERVAL_MS + 2000),
            "a ping on the idle channel",
            |c| c.pings > 0,
        )
        .await;
    assert_eq!(channel.stream(1).start, Some((200, None)));
    assert!(channel.stream(1).body.is_empty(), "{}", channel.summary());
    assert_eq!(sim.open_watches(), 1);

    let gone = Instant::now();
    channel.disconnect();
    eventually(
        Duration::from_millis(2 * PING_INTERVAL_MS + 2000),
        "the idle channel closed after the page left",
        || sim.open_watches() == 0 && proxy.channel_stats().unwrap().channels == 0,
    )
    .await;
    eprintln!(
        "an idle channel closed {:?} after the page left",
        gone.elapsed()
    );
}

#[tokio::test]
async fn no_channel_answers_404_naming_the_flag() {
    let proxy = demo_with(quiet_sim(), |config| config.channel = false).await;
    let addr = proxy.local_addr();
    assert!(proxy.channel_stats().is_none());
    let json = send(addr, req("GET", CHANNEL_PATH).bearer(TOKEN))
        .await
        .assert_status(404);
    assert!(
        json["message"].as_str().unwrap().contains("--no-channel"),
        "{json}"
    );
    let json = send(addr, control_req(&"0".repeat(64), "{}").bearer(TOKEN))
        .await
        .assert_status(404);
    assert!(
        json["message"].as_str().unwrap().contains("--no-channel"),
        "{json}"
    );
    // Still authenticated first.
    send(addr, req("GET", CHANNEL_PATH))
        .await
        .assert_status(401);
}
