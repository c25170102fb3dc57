//! The page's channel (`GET /_deltascope/channel`, controlled with `POST
//! /_deltascope/channel/{id}`) end to end, against `serve --demo` on loopback
//! and read by a small channel client (hyper's HTTP/1 client and
//! `deltascope_channel::Decoder`). It proves that:
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
//!   credentials, wrong method, foreign origin);
//! - a reader that stops reading costs serve at most a stream's buffer, and
//!   its busy stream is ended as too slow while a quiet one lives on;
//! - an upstream body that breaks becomes a Fail frame, not an End, and the
//!   channel carries on; an idle channel whose reader went away is noticed;
//! - `--no-channel` answers 404 naming the flag.

mod serve_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use deltascope_channel::{
    Control, Decoder, Event, Open, StreamId, CHANNEL_PATH, CONTENT_TYPE, PING_INTERVAL_MS,
};
use deltascope_proxy::channel::{SLOW_READER_GRACE, STREAM_BUFFER};
use deltascope_proxy::serve::{Running, Upstream};
use deltascope_proxy::sim::SimConfig;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serve_support::*;
use tokio::time::Instant;

const TOKEN: &str = "channel-token-0123456789abcdef0123456789";

/// Values of the sim's Secrets (base64 of "deltascope" and the password).
const SIM_SECRET_VALUES: [&str; 2] = ["ZGVsdGFzY29wZQ==", "c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"];

/// What the page asks for a server-side printed list.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// Watch parameters the page's reflectors use.
const WATCH: &str = "watch=1&allowWatchBookmarks=true";

async fn demo(sim: SimConfig) -> Running {
    demo_with(sim, |_| {}).await
}

async fn demo_with(
    sim: SimConfig,
    tweak: impl FnOnce(&mut deltascope_proxy::serve::ServeConfig),
) -> Running {
    let mut config = config(Upstream::Demo(sim));
    config.token = Some(TOKEN.into());
    tweak(&mut config);
    start_proxy(config).await
}

fn quiet_sim() -> SimConfig {
    SimConfig {
        initial_pods: 12,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    }
}

// ---- the channel client ------------------------------------------------------

/// What one stream received, rebuilt from the channel's events.
#[derive(Debug, Default)]
struct Received {
    start: Option<(u16, Option<u32>)>,
    body: Vec<u8>,
    /// `Ok` after End, `Err(reason)` after Fail.
    ended: Option<Result<(), String>>,
}

impl Received {
    fn status(&self) -> Option<u16> {
        self.start.map(|(status, _)| status)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn has(&self, needle: &str) -> bool {
        count_occurrences(&self.body, needle.as_bytes()) > 0
    }

    fn failed(&self) -> Option<&str> {
        match &self.ended {
            Some(Err(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Every complete line of a watch body, each of which must be a whole
    /// watch event (a frame of another stream mixed in would break one).
    fn events(&self) -> Vec<serde_json::Value> {
        let complete = match self.body.iter().rposition(|b| *b == b'\n') {
            Some(end) => &self.body[..end],
            None => return Vec::new(),
        };
        complete
            .split(|b| *b == b'\n')
            .map(|line| {
                let event: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| {
                    panic!(
                        "a watch line is not JSON ({e}): {:?}",
                        String::from_utf8_lossy(line)
                    )
                });
                let kind = event["type"].as_str().unwrap_or_default();
                assert!(
                    ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"].contains(&kind),
                    "not a watch event: {event}"
                );
                assert!(event["object"].is_object(), "no object: {event}");
                event
            })
            .collect()
    }
}

/// One open channel, read by the test; records every stream's transcript and
/// checks the framing rules as it goes (Hello first, one Start per stream
/// before its data, nothing after End or Fail).
struct ChannelClient {
    id: String,
    body: Incoming,
    decoder: Decoder,
    streams: BTreeMap<StreamId, Received>,
    pings: usize,
    _sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    connection: tokio::task::JoinHandle<()>,
}

impl ChannelClient {
    /// Opens a channel with the bearer token.
    async fn open(addr: SocketAddr) -> ChannelClient {
        Self::open_as(addr, ("Authorization", &format!("Bearer {TOKEN}")), None).await
    }

    /// Opens a channel with these credentials (a header), optionally over a
    /// socket with a small receive buffer (so a reader that stops reading
    /// is felt by serve at once).
    async fn open_as(
        addr: SocketAddr,
        credentials: (&str, &str),
        recv_buffer: Option<u32>,
    ) -> ChannelClient {
        let tcp = match recv_buffer {
            None => tokio::net::TcpStream::connect(addr).await.unwrap(),
            Some(size) => {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.set_recv_buffer_size(size).unwrap();
                socket.connect(addr).await.unwrap()
            }
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        let request = http::Request::get(CHANNEL_PATH)
            .header(http::header::HOST, addr.to_string())
            .header(credentials.0, credentials.1)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request))
            .await
            .expect("the channel's response head within 10 s")
            .unwrap();
        assert_eq!(response.status(), 200, "{response:?}");
        assert_eq!(
            response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some(CONTENT_TYPE)
        );
        let mut client = ChannelClient {
            id: String::new(),
            body: response.into_body(),
            decoder: Decoder::new(),
            streams: BTreeMap::new(),
            pings: 0,
            _sender: sender,
            connection,
        };
        client
            .read_until(Duration::from_secs(5), "the Hello", |c| !c.id.is_empty())
            .await;
        assert_eq!(client.id.len(), 64, "a 256-bit hex id: {:?}", client.id);
        client
    }

    fn stream(&self, stream: StreamId) -> &Received {
        self.streams
            .get(&stream)
            .unwrap_or_else(|| panic!("nothing arrived for stream {stream}: {}", self.summary()))
    }

    fn started(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|r| r.start.is_some())
    }

    fn ended(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|r| r.ended.is_some())
    }

    fn summary(&self) -> String {
        let mut out = format!("channel {} ({} pings)", self.id, self.pings);
        for (stream, received) in &self.streams {
            let text = received.text();
            let head: String = text.chars().take(300).collect();
            out.push_str(&format!(
                "\n  stream {stream}: start {:?}, {} body bytes, ended {:?}: {head}",
                received.start,
                received.body.len(),
                received.ended
            ));
        }
        out
    }

    /// Reads one chunk of the channel body; false when `deadline` came first.
    async fn read_once(&mut self, deadline: Instant) -> bool {
        let chunk = match tokio::time::timeout_at(deadline, self.body.frame()).await {
            Err(_) => return false,
            Ok(None) => panic!("the channel response ended: {}", self.summary()),
            Ok(Some(Err(error))) => {
                panic!("the channel response broke: {error}: {}", self.summary())
            }
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(chunk) => chunk,
                Err(_) => return true, // trailers
            },
        };
        let ChannelClient {
            decoder,
            streams,
            id,
            pings,
            ..
        } = self;
        decoder
            .feed(&chunk, |event| record(id, pings, streams, event))
            .unwrap_or_else(|e| panic!("the channel is out of step: {e}"));
        true
    }

    /// Reads the channel until `done` holds, failing after `within`.
    async fn read_until(
        &mut self,
        within: Duration,
        what: &str,
        mut done: impl FnMut(&ChannelClient) -> bool,
    ) {
        let deadline = Instant::now() + within;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "no {what} within {within:?}: {}",
                self.summary()
            );
            self.read_once(deadline).await;
        }
    }

    /// Keeps reading the channel (as a page would) until `condition` holds.
    async fn read_while_waiting(
        &mut self,
        within: Duration,
        what: &str,
        mut condition: impl FnMut() -> bool,
    ) {
        let deadline = Instant::now() + within;
        while !condition() {
            assert!(
                Instant::now() < deadline,
                "{what}: not within {within:?}: {}",
                self.summary()
            );
            let step = (Instant::now() + Duration::from_millis(50)).min(deadline);
            while self.read_once(step).await {}
        }
    }

    /// Reads whatever arrives for `period`.
    async fn read_for(&mut self, period: Duration) {
        let until = Instant::now() + period;
        while self.read_once(until).await {}
    }

    /// The page goes away: the connection is dropped without a goodbye.
    fn disconnect(self) {
        self.connection.abort();
        drop(self.body);
    }
}

fn record(
    id: &mut String,
    pings: &mut usize,
    streams: &mut BTreeMap<StreamId, Received>,
    event: Event<'_>,
) {
    if id.is_empty() {
        let Event::Hello { channel } = event else {
            panic!("the first frame of a channel must be its Hello, not {event:?}");
        };
        assert!(!channel.is_empty(), "an empty channel id");
        *id = channel;
        return;
    }
    match event {
        Event::Hello { channel } => panic!("a second Hello ({channel})"),
        Event::Ping => *pings += 1,
        Event::Start {
            stream,
            status,
            retry_after_secs,
        } => {
            let received = streams.entry(stream).or_default();
            assert!(
                received.start.is_none(),
                "a second Start ({status}) for stream {stream}, which had {:?}",
                received.start
            );
            received.start = Some((status, retry_after_secs));
        }
        Event::Data { stream, bytes } => {
            assert!(!bytes.is_empty(), "an empty Data event");
            let received = streams
                .get_mut(&stream)
                .unwrap_or_else(|| panic!("Data for stream {stream} before its Start"));
            assert!(
                received.start.is_some(),
                "Data for {stream} before its Start"
            );
            assert!(
                received.ended.is_none(),
                "Data for stream {stream} after {:?}",
                received.ended
            );
            received.body.extend_from_slice(bytes);
        }
        Event::End { stream } | Event::Fail { stream, .. } => {
            let received = streams
                .get_mut(&stream)
                .unwrap_or_else(|| panic!("the end of stream {stream} before its Start"));
            assert!(
                received.start.is_some(),
                "stream {stream} ended before it started"
            );
            assert!(
                received.ended.is_none(),
                "stream {stream} ended twice: {:?} then {event:?}",
                received.ended
            );
            received.ended = Some(match event {
                Event::Fail { reason, .. } => Err(reason),
                _ => Ok(()),
            });
        }
    }
}

fn opens(streams: &[(StreamId, &str, Option<&str>)]) -> Control {
    Control {
        open: streams
            .iter()
            .map(|(stream, path, accept)| Open {
                stream: *stream,
                path: (*path).to_owned(),
                accept: accept.map(str::to_owned),
            })
            .collect(),
        close: Vec::new(),
    }
}

fn closes(streams: &[StreamId]) -> Control {
    Control {
        open: Vec::new(),
        close: streams.to_vec(),
    }
}

fn control_req(id: &str, body: &str) -> Req {
    req("POST", &format!("{CHANNEL_PATH}/{id}"))
        .header("Content-Type", "application/json")
        .body(body)
}

/// `POST {CHANNEL_PATH}/{id}` as the bearer session; asserts 202.
async fn control(addr: SocketAddr, id: &str, control: &Control) {
    let body = serde_json::to_string(control).unwrap();
    let resp = send(addr, control_req(id, &body).bearer(TOKEN)).await;
    assert_eq!(resp.status, 202, "{body}: {}", resp.text());
    assert!(resp.body.is_empty(), "{}", resp.text());
}

/// A direct `GET path` as the bearer session.
async fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Resp {
    let mut request = req("GET", path).bearer(TOKEN);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    send(addr, request).await
}

async fn resource_version(addr: SocketAddr, path: &str) -> String {
    let list = get(addr, path, None).await;
    assert_eq!(list.status, 200, "{path}: {}", list.text());
    list.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn fault(addr: SocketAddr, body: &str) {
    let resp = send(
        addr,
        req("POST", "/_sim/fault")
            .bearer(TOKEN)
            .header("Content-Type", "application/json")
            .body(body),
    )
    .await;
    assert_eq!(resp.status, 200, "{body}: {}", resp.text());
}

/// Waits (without a channel to read) until `condition` holds.
async fn eventually(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The stream's answer is the one the same `GET` got on its own connection.
fn assert_same_answer(what: &str, on_channel: &Received, direct: &Resp) {
    assert_eq!(
        on_channel.status(),
        Some(direct.status),
        "{what}: status on the channel vs on its own connection; channel body {}, direct body {}",
        on_channel.text(),
        direct.text()
    );
    let direct_retry = direct
        .header("Retry-After")
        .map(|v| v.trim().parse::<u32>().unwrap());
    assert_eq!(
        on_channel.start.unwrap().1,
        direct_retry,
        "{what}: Retry-After"
    );
    assert_eq!(on_channel.ended, Some(Ok(())), "{what}: ended cleanly");
    if let (Ok(a), Ok(b)) = (
        serde_json::from_slice::<serde_json::Value>(&on_channel.body),
        serde_json::from_slice::<serde_json::Value>(&direct.body),
    ) {
        assert_eq!(a, b, "{what}: the bodies as JSON");
    }
    assert!(
        on_channel.body == direct.body,
        "{what}: the bodies byte for byte:\n channel: {}\n direct:  {}",
        on_channel.text(),
        direct.text()
    );
}

// ---- tests ------------------------------------------------------------------

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
        ("/api/v1/pods?watch=maybe", None, 400),
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
    fault(addr, r#"{"kind":"throttle","count":1}"#).await;
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
    fault(addr, r#"{"kind":"throttle","count":1}"#).await;
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
    let exchange = send(addr, req("GET", &format!("/?token={TOKEN}"))).await;
    assert_eq!(exchange.status, 303, "{}", exchange.text());
    let cookie = exchange
        .header("Set-Cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
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
            stats.largest_queue <= STREAM_BUFFER + 64 * 1024,
            "a stream's queue holds {} bytes, more than its buffer of {STREAM_BUFFER} and a chunk",
            stats.largest_queue
        );
        assert!(
            stats.queued_bytes <= 2 * (STREAM_BUFFER + 64 * 1024),
            "{stats:?}"
        );
        if !healthz_checked && until - Instant::now() < Duration::from_secs(5) {
            let health = send(addr, req("GET", "/healthz")).await;
            assert_eq!(health.status, 200, "{}", health.text());
            healthz_checked = true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("largest stream queue while the page did not read: {largest} bytes");
    assert!(
        largest >= STREAM_BUFFER,
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
