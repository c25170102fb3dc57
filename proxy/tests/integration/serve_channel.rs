//! The page's channel (`GET /_deltascope/channel`, controlled with `POST
//! /_deltascope/channel/{id}`) end to end, against `serve --demo` on loopback
//! and read by a small channel client (`channel_support`). It proves that:
//!
//! - many watches of different resources share one channel, each stream
//!   carrying exactly its own response (every line of every watch body is a
//!   whole JSON event), Secrets redacted; closing streams closes their
//!   upstream watches, and dropping the channel closes all of them;
//! - a stream answers exactly what the same `GET` on a connection of its own
//!   answers (status, `Retry-After`, body), refusals and `--max-watches`
//!   included;
//! - control requests are refused as they should be (unknown channel,
//!   another session's channel, bad JSON, duplicate stream ids, no
//!   credentials, wrong method, foreign origin).
//!
//! Backpressure, broken upstreams, pings and `--no-channel` are in
//! `serve_channel_limits.rs`.

use crate::channel_support;
use crate::serve_support;

use channel_support::*;
use serve_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watches_share_one_channel_and_close_with_it() {
    let proxy = demo(SimConfig {
        initial_pods: 20,
        churn_per_sec: 50.0,
        ..SimConfig::default()
    })
    .await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let pods_rv = resource_version(addr, "/api/v1/pods").await;
    let deployments_rv = resource_version(addr, "/apis/apps/v1/deployments").await;
    let configmaps_rv = resource_version(addr, "/api/v1/configmaps").await;

    let watches: Vec<(StreamId, String, Option<&str>)> = vec![
        (1, format!("/api/v1/pods?{WATCH}"), None),
        (
            2,
            format!("/apis/apps/v1/deployments?{WATCH}&resourceVersion={deployments_rv}"),
            None,
        ),
        (3, format!("/apis/apps/v1/replicasets?{WATCH}"), None),
        (4, format!("/api/v1/services?{WATCH}"), None),
        (
            5,
            format!("/api/v1/configmaps?{WATCH}&resourceVersion={configmaps_rv}"),
            None,
        ),
        (6, format!("/api/v1/events?{WATCH}"), None),
        (7, format!("/api/v1/namespaces?{WATCH}"), None),
        (8, format!("/api/v1/nodes?{WATCH}"), None),
        (
            9,
            format!(
                "/api/v1/secrets?{WATCH}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            ),
            None,
        ),
        (10, format!("/apis/apps/v1/statefulsets?{WATCH}"), None),
        (11, format!("/apis/apps/v1/daemonsets?{WATCH}"), None),
        (12, format!("/apis/batch/v1/jobs?{WATCH}"), None),
        (
            13,
            format!("/apis/demo.deltascope.dev/v1/widgets?{WATCH}"),
            None,
        ),
        (
            14,
            format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?{WATCH}"),
            None,
        ),
        (
            15,
            format!("/api/v1/namespaces/shop/pods?{WATCH}&resourceVersion={pods_rv}"),
            None,
        ),
        (16, format!("/api/v1/pods?{WATCH}"), Some(TABLE_ACCEPT)),
    ];
    const EXEC: StreamId = 100;
    const UNKNOWN: StreamId = 101;
    let exec_path = "/api/v1/namespaces/default/pods/x/exec";
    let unknown_path = "/api/v1/nosuchthings?watch=1";
    let mut all: Vec<(StreamId, &str, Option<&str>)> = watches
        .iter()
        .map(|(s, p, a)| (*s, p.as_str(), *a))
        .collect();
    all.push((EXEC, exec_path, None));
    all.push((UNKNOWN, unknown_path, None));
    assert!(all.len() >= 16);

    let mut channel = ChannelClient::open(addr).await;
    assert_eq!(proxy.channel_stats().unwrap().channels, 1);
    control(addr, &channel.id, &opens(&all)).await;
    channel
        .read_until(
            Duration::from_secs(15),
            "Start and events on every watch, and the end of the refusals",
            |c| {
                watches.iter().all(|(s, ..)| {
                    c.started(*s) && c.stream(*s).has("\"type\":\"") && c.stream(*s).has("\n")
                }) && c.ended(EXEC)
                    && c.ended(UNKNOWN)
            },
        )
        .await;

    for (stream, path, _) in &watches {
        let received = channel.stream(*stream);
        assert_eq!(received.start, Some((200, None)), "{path}");
        assert_eq!(received.ended, None, "{path} must still be open");
        assert!(!received.events().is_empty(), "{path}");
    }
    assert!(channel.stream(1).has("\"type\":\"ADDED\""));
    for event in channel.stream(16).events() {
        if event["type"] != "BOOKMARK" {
            assert_eq!(event["object"]["kind"], "Table", "{event}");
        }
    }
    let secrets = channel.stream(9);
    assert!(secrets.has("\"type\":\"ADDED\""), "{}", secrets.text());
    assert!(secrets.has("deltascope.io/redacted"), "{}", secrets.text());
    // The refusals are exactly what the same GETs get on their own.
    let exec = channel.stream(EXEC);
    assert_eq!(exec.start, Some((403, None)));
    assert_same_answer(exec_path, exec, &get(addr, exec_path, None).await);
    let direct_unknown = get(addr, unknown_path, None).await;
    assert_eq!(direct_unknown.status, 404, "{}", direct_unknown.text());
    assert_same_answer(unknown_path, channel.stream(UNKNOWN), &direct_unknown);

    // One upstream watch per watch stream, and nothing else held.
    channel
        .read_while_waiting(Duration::from_secs(5), "a sim watch per stream", || {
            sim.open_watches() == watches.len()
                && proxy.channel_stats().unwrap().streams == watches.len()
        })
        .await;
    channel.read_for(Duration::from_millis(1500)).await;
    assert_eq!(sim.open_watches(), watches.len());
    let secrets = channel.stream(9).text();
    for value in SIM_SECRET_VALUES {
        assert!(!secrets.contains(value), "{value} leaked: {secrets}");
    }

    // Closing three streams closes their upstream watches, and nothing more
    // arrives for them.
    let closed = [3, 4, 6];
    control(addr, &channel.id, &closes(&closed)).await;
    let remaining = watches.len() - closed.len();
    channel
        .read_while_waiting(Duration::from_secs(5), "three sim watches closed", || {
            sim.open_watches() == remaining && proxy.channel_stats().unwrap().streams == remaining
        })
        .await;
    channel.read_for(Duration::from_millis(500)).await;
    let lengths: Vec<usize> = closed
        .iter()
        .map(|s| channel.stream(*s).body.len())
        .collect();
    let namespaces_before = channel.stream(7).body.len();
    channel.read_for(Duration::from_millis(2500)).await;
    for (stream, length) in closed.iter().zip(lengths) {
        let received = channel.stream(*stream);
        assert_eq!(received.body.len(), length, "stream {stream} was closed");
        assert_eq!(received.ended, None, "a closed stream gets no End or Fail");
    }
    assert!(
        channel.stream(7).body.len() > namespaces_before,
        "the namespaces watch still gets its bookmarks"
    );
    for (stream, ..) in &watches {
        channel.stream(*stream).events();
    }
    assert_eq!(sim.open_watches(), remaining);

    // The page goes away: every upstream watch and the channel go with it.
    let gone = Instant::now();
    channel.disconnect();
    eventually(
        Duration::from_secs(8),
        "the channel and its watches closed after the page left",
        || {
            let stats = proxy.channel_stats().unwrap();
            sim.open_watches() == 0 && stats.channels == 0 && stats.streams == 0
        },
    )
    .await;
    eprintln!(
        "watches and channel closed {:?} after the page left",
        gone.elapsed()
    );
}

#[tokio::test]
async fn a_stream_answers_exactly_as_its_own_connection_would() {
    let proxy = demo(quiet_sim()).await;
    let addr = proxy.local_addr();
    let namespaces_rv = resource_version(addr, "/api/v1/namespaces").await;
    let short_watch =
        format!("/api/v1/namespaces?watch=1&resourceVersion={namespaces_rv}&timeoutSeconds=1");
    let cases: Vec<(&str, Option<&str>, u16)> = vec![
        ("/api/v1/namespaces", None, 200),
        ("/api/v1/namespaces?limit=2", None, 200),
        ("/api/v1/namespaces", Some(TABLE_ACCEPT), 200),
        ("/api/v1/secrets", None, 200),
        ("/apis/apps/v1", None, 200),
        ("/version", None, 200),
        ("/api/v1/namespaces/default/pods/x/exec", None, 403),
        ("/api/v1/namespaces/default/pods/x/%65xec", None, 403),
        ("/api/v1/nosuchthings", None, 404),
        ("/api/v1/namespaces/default/pods/nope", None, 404),
        ("/api/%2e%2e/%2e%2e/x", None, 400),
        ("/api/v1/pods?resourceVersionMatch=Exact", None, 400),
        (&short_watch, None, 200),
    ];
    let mut channel = ChannelClient::open(addr).await;
    let streams: Vec<(StreamId, &str, Option<&str>)> = cases
        .iter()
        .enumerate()
        .map(|(n, (path, accept, _))| (n as StreamId + 1, *path, *accept))
        .collect();
    control(addr, &channel.id, &opens(&streams)).await;
    channel
        .read_until(Duration::from_secs(15), "the end of every stream", |c| {
            streams.iter().all(|(s, ..)| c.ended(*s))
        })
        .await;
    for ((stream, path, accept), (_, _, expected)) in streams.iter().zip(&cases) {
        let received = channel.stream(*stream);
        assert_eq!(
            received.status(),
            Some(*expected),
            "{path}: {}",
            received.text()
        );
        let direct = get(addr, path, *accept).await;
        assert_same_answer(path, received, &direct);
    }
    let secrets = channel.stream(4).text();
    for value in SIM_SECRET_VALUES {
        assert!(!secrets.contains(value), "{value} leaked: {secrets}");
    }

    // An upstream's 429 reaches the page with its Retry-After.
    fault(
        addr,
        r#"{"kind":"throttle","count":1,"path":"/api/v1/namespaces"}"#,
    )
    .await;
    control(
        addr,
        &channel.id,
        &opens(&[(50, "/api/v1/namespaces", None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "the throttled stream", |c| {
            c.ended(50)
        })
        .await;
    fault(
        addr,
        r#"{"kind":"throttle","count":1,"path":"/api/v1/namespaces"}"#,
    )
    .await;
    let direct = get(addr, "/api/v1/namespaces", None).await;
    assert_eq!(direct.status, 429, "{}", direct.text());
    assert_eq!(channel.stream(50).start, Some((429, Some(1))));
    assert_same_answer("a throttled list", channel.stream(50), &direct);
}

#[tokio::test]
async fn max_watches_applies_to_channel_streams() {
    let proxy = demo_with(quiet_sim(), |config| config.max_watches_per_session = 2).await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let watch = format!("/api/v1/namespaces?{WATCH}");
    let mut channel = ChannelClient::open(addr).await;
    control(
        addr,
        &channel.id,
        &opens(&[(1, &watch, None), (2, &watch, None), (3, &watch, None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "three Starts", |c| {
            (1..=3).all(|s| c.started(s)) && c.streams.values().any(|r| r.ended.is_some())
        })
        .await;
    let refused: Vec<StreamId> = (1..=3)
        .filter(|s| channel.stream(*s).status() == Some(429))
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "one of three over a limit of 2: {}",
        channel.summary()
    );
    let refused = refused[0];
    let received = channel.stream(refused);
    assert_eq!(received.start, Some((429, Some(1))));
    assert_eq!(received.ended, Some(Ok(())));
    assert!(
        received.text().contains("--max-watches"),
        "{}",
        received.text()
    );
    for stream in (1..=3).filter(|s| *s != refused) {
        assert_eq!(channel.stream(stream).start, Some((200, None)));
        assert_eq!(channel.stream(stream).ended, None);
    }
    // The same refusal a watch on its own connection gets (same session).
    let direct = get(addr, &watch, None).await;
    assert_same_answer("a watch over the limit", channel.stream(refused), &direct);
    // Lists do not count.
    control(
        addr,
        &channel.id,
        &opens(&[(4, "/api/v1/namespaces", None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "the list", |c| c.ended(4))
        .await;
    assert_eq!(channel.stream(4).start, Some((200, None)));

    // Closing a watch stream gives its slot back.
    let open_one = (1..=3).find(|s| *s != refused).unwrap();
    eventually(Duration::from_secs(5), "two sim watches", || {
        sim.open_watches() == 2
    })
    .await;
    control(addr, &channel.id, &closes(&[open_one])).await;
    channel
        .read_while_waiting(Duration::from_secs(5), "a sim watch closed", || {
            sim.open_watches() == 1
        })
        .await;
    control(addr, &channel.id, &opens(&[(5, &watch, None)])).await;
    channel
        .read_until(Duration::from_secs(10), "the new watch's Start", |c| {
            c.started(5)
        })
        .await;
    assert_eq!(
        channel.stream(5).start,
        Some((200, None)),
        "{}",
        channel.summary()
    );
}

#[tokio::test]
async fn control_requests_are_refused_as_they_should_be() {
    let proxy = demo(quiet_sim()).await;
    let addr = proxy.local_addr();
    let mut channel = ChannelClient::open(addr).await;
    let id = channel.id.clone();
    let watch = format!(r#"{{"open":[{{"stream":1,"path":"/api/v1/namespaces?{WATCH}"}}]}}"#);

    // Unknown channel.
    send(addr, control_req(&"0".repeat(64), "{}").bearer(TOKEN))
        .await
        .assert_status(404);
    // Malformed JSON, and JSON of the wrong shape.
    send(addr, control_req(&id, r#"{"open":["#).bearer(TOKEN))
        .await
        .assert_status(400);
    send(
        addr,
        control_req(&id, r#"{"open":[{"path":"/api/v1/pods"}]}"#).bearer(TOKEN),
    )
    .await
    .assert_status(400);
    // A stream id already open, and the channel's own stream 0.
    let resp = send(addr, control_req(&id, &watch).bearer(TOKEN)).await;
    assert_eq!(resp.status, 202, "{}", resp.text());
    channel
        .read_until(Duration::from_secs(10), "stream 1's events", |c| {
            c.started(1) && c.stream(1).has("\"type\":\"ADDED\"")
        })
        .await;
    let again = send(addr, control_req(&id, &watch).bearer(TOKEN))
        .await
        .assert_status(400);
    assert!(
        again["message"].as_str().unwrap().contains("already open"),
        "{again}"
    );
    send(
        addr,
        control_req(&id, r#"{"open":[{"stream":0,"path":"/api/v1/pods"}]}"#).bearer(TOKEN),
    )
    .await
    .assert_status(400);
    // No credentials, a wrong token, a wrong method, a foreign origin or host.
    send(addr, control_req(&id, "{}")).await.assert_status(401);
    send(addr, control_req(&id, "{}").bearer("not-the-token"))
        .await
        .assert_status(401);
    send(addr, req("GET", CHANNEL_PATH))
        .await
        .assert_status(401);
    let get_control = send(
        addr,
        req("GET", &format!("{CHANNEL_PATH}/{id}")).bearer(TOKEN),
    )
    .await;
    get_control.assert_status(405);
    assert_eq!(get_control.header("Allow"), Some("POST"));
    send(addr, control_req("", "{}").bearer(TOKEN))
        .await
        .assert_status(405);
    send(
        addr,
        control_req(&id, "{}")
            .bearer(TOKEN)
            .header("Origin", "http://evil.example"),
    )
    .await
    .assert_status(403);
    send(
        addr,
        control_req(&id, "{}").bearer(TOKEN).host("evil.example"),
    )
    .await
    .assert_status(403);

    // Streams the channel does not forward, answered on the channel.
    let refusals = opens(&[
        (10, "http://evil.example/api/v1/pods", None),
        (11, "/_sim/stats", None),
        (12, "/healthz", None),
        (13, "/api/v1/pods/x/attach", None),
        (
            14,
            "/api/v1/namespaces/default/pods/x/portforward?watch=1",
            None,
        ),
    ]);
    control(addr, &id, &refusals).await;
    channel
        .read_until(Duration::from_secs(10), "the refusals", |c| {
            (10..=14).all(|s| c.ended(s))
        })
        .await;
    for (stream, status) in [(10, 400), (11, 400), (12, 400), (13, 403), (14, 403)] {
        let received = channel.stream(stream);
        assert_eq!(received.status(), Some(status), "{}", received.text());
        assert_eq!(received.ended, Some(Ok(())));
        let json: serde_json::Value = serde_json::from_slice(&received.body).unwrap();
        assert_eq!(json["kind"], "Status", "{json}");
        assert_eq!(json["code"], status, "{json}");
    }

    // Another session (a browser's cookie) can neither see nor control the
    // bearer session's channel, nor the bearer its.
    let cookie = sign_in_with_link(&proxy).await;
    assert!(
        cookie.starts_with(&format!("{}=", proxy.cookie_name())),
        "{cookie}"
    );
    send(addr, control_req(&id, &watch).header("Cookie", &cookie))
        .await
        .assert_status(404);
    let mut theirs = ChannelClient::open_as(addr, ("Cookie", &cookie), None).await;
    send(addr, control_req(&theirs.id, &watch).bearer(TOKEN))
        .await
        .assert_status(404);
    let resp = send(
        addr,
        control_req(&theirs.id, &watch).header("Cookie", &cookie),
    )
    .await;
    assert_eq!(resp.status, 202, "{}", resp.text());
    theirs
        .read_until(
            Duration::from_secs(10),
            "the cookie session's stream",
            |c| c.started(1),
        )
        .await;
    assert_eq!(theirs.stream(1).start, Some((200, None)));
    // The bearer channel's stream 1 never got a second Start (checked as it is read).
    channel.read_for(Duration::from_millis(300)).await;

    // A channel that closed can no longer be controlled.
    channel.disconnect();
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let resp = send(addr, control_req(&id, "{}").bearer(TOKEN)).await;
        if resp.status == 404 {
            resp.assert_status(404);
            break;
        }
        assert_eq!(resp.status, 202, "{}", resp.text());
        assert!(
            Instant::now() < deadline,
            "the closed channel is still controllable"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A control request naming one stream id twice is refused like one naming
/// an id already open: accepted, both opens would run as the same stream (two
/// Starts, interleaved bodies), and closing it would abort only one of them,
/// leaving an upstream watch and its `--max-watches` slot without a stream.
#[tokio::test]
async fn a_stream_id_twice_in_one_request_is_refused() {
    let proxy = demo(quiet_sim()).await;
    let addr = proxy.local_addr();
    let sim = proxy.sim().unwrap().clone();
    let mut channel = ChannelClient::open(addr).await;
    let watch = format!("/api/v1/namespaces?{WATCH}");
    let twice = serde_json::to_string(&opens(&[(7, &watch, None), (7, &watch, None)])).unwrap();
    let resp = send(addr, control_req(&channel.id, &twice).bearer(TOKEN)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let watches = sim.open_watches();
    assert_eq!(
        resp.status,
        400,
        "two opens of stream 7 in one request were accepted ({}); the sim now serves {watches} \
         watches for it",
        resp.text(),
    );
    assert_eq!(watches, 0);
    // Nothing was opened: stream 7 is still free.
    control(addr, &channel.id, &opens(&[(7, &watch, None)])).await;
    channel
        .read_until(Duration::from_secs(10), "stream 7's events", |c| {
            c.started(7) && c.stream(7).has("\"type\":\"ADDED\"")
        })
        .await;
    channel.read_for(Duration::from_millis(1500)).await;
    assert_eq!(sim.open_watches(), 1);
}
