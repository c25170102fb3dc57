//! The channel client and helpers shared by the channel tests
//! (`serve_channel.rs`, `serve_channel_limits.rs`): `serve --demo` with a
//! known token, a small client of the page's channel (hyper's HTTP/1 client
//! and `deltascope_channel::Decoder`) that keeps each stream's transcript,
//! control requests, and the comparison with a direct `GET`.
#![allow(dead_code, unused_imports)]

use crate::serve_support::*;

// What the channel tests use, re-exported so each test file needs one `use`.
pub use std::collections::BTreeMap;
pub use std::net::SocketAddr;
pub use std::time::Duration;

pub use bytes::Bytes;
pub use deltascope_channel::{
    Control, Decoder, Event, Open, StreamId, CHANNEL_PATH, CONTENT_TYPE, PING_INTERVAL_MS,
};
pub use deltascope_proxy::channel::{
    ChannelStats, CHANNEL_STALL_GRACE, SLOW_READER_GRACE, STREAM_BUFFER,
};
pub use deltascope_proxy::limits;
pub use deltascope_proxy::limits::MAX_DATA_FRAME;
pub use deltascope_proxy::serve::{Running, Upstream};
pub use deltascope_sim::SimConfig;
pub use http_body_util::{BodyExt, Empty};
pub use hyper::body::Incoming;
pub use hyper_util::rt::TokioIo;
pub use tokio::time::Instant;

pub const TOKEN: &str = "channel-token-0123456789abcdef0123456789";

/// Values of the sim's Secrets (base64 of "deltascope" and the password).
pub const SIM_SECRET_VALUES: [&str; 2] =
    ["ZGVsdGFzY29wZQ==", "c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"];

/// What the page asks for a server-side printed list.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// Watch parameters the page's reflectors use.
pub const WATCH: &str = "watch=1&allowWatchBookmarks=true";

pub async fn demo(sim: SimConfig) -> Running {
    demo_with(sim, |_| {}).await
}

pub async fn demo_with(
    sim: SimConfig,
    tweak: impl FnOnce(&mut deltascope_proxy::serve::ServeConfig),
) -> Running {
    let mut config = config(Upstream::Demo(sim));
    config.token = Some(TOKEN.into());
    tweak(&mut config);
    start_proxy(config).await
}

pub fn quiet_sim() -> SimConfig {
    SimConfig {
        initial_pods: 12,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    }
}

// ---- the channel client ------------------------------------------------------

/// What one stream received, rebuilt from the channel's events.
#[derive(Debug, Default)]
pub struct Received {
    pub start: Option<(u16, Option<u32>)>,
    pub body: Vec<u8>,
    /// `Ok` after End, `Err(reason)` after Fail.
    pub ended: Option<Result<(), String>>,
}

impl Received {
    pub fn status(&self) -> Option<u16> {
        self.start.map(|(status, _)| status)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn has(&self, needle: &str) -> bool {
        count_occurrences(&self.body, needle.as_bytes()) > 0
    }

    pub fn failed(&self) -> Option<&str> {
        match &self.ended {
            Some(Err(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Every complete line of a watch body, each of which must be a whole
    /// watch event (a frame of another stream mixed in would break one).
    pub fn events(&self) -> Vec<serde_json::Value> {
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
pub struct ChannelClient {
    pub id: String,
    pub body: Incoming,
    pub decoder: Decoder,
    pub streams: BTreeMap<StreamId, Received>,
    pub pings: usize,
    pub _sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    pub connection: tokio::task::JoinHandle<()>,
}

impl ChannelClient {
    /// Opens a channel with the bearer token.
    pub async fn open(addr: SocketAddr) -> ChannelClient {
        Self::open_as(addr, ("Authorization", &format!("Bearer {TOKEN}")), None).await
    }

    /// Opens a channel with these credentials (a header), optionally over a
    /// socket with a small receive buffer (so a reader that stops reading
    /// is felt by serve at once).
    pub async fn open_as(
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

    pub fn stream(&self, stream: StreamId) -> &Received {
        self.streams
            .get(&stream)
            .unwrap_or_else(|| panic!("nothing arrived for stream {stream}: {}", self.summary()))
    }

    pub fn started(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|r| r.start.is_some())
    }

    pub fn ended(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|r| r.ended.is_some())
    }

    pub fn summary(&self) -> String {
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
    pub async fn read_once(&mut self, deadline: Instant) -> bool {
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
    pub async fn read_until(
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
    pub async fn read_while_waiting(
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
    pub async fn read_for(&mut self, period: Duration) {
        let until = Instant::now() + period;
        while self.read_once(until).await {}
    }

    /// The page goes away: the connection is dropped without a goodbye.
    pub fn disconnect(self) {
        self.connection.abort();
        drop(self.body);
    }
}

pub fn record(
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

pub fn opens(streams: &[(StreamId, &str, Option<&str>)]) -> Control {
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

pub fn closes(streams: &[StreamId]) -> Control {
    Control {
        open: Vec::new(),
        close: streams.to_vec(),
    }
}

pub fn control_req(id: &str, body: &str) -> Req {
    req("POST", &format!("{CHANNEL_PATH}/{id}"))
        .header("Content-Type", "application/json")
        .body(body)
}

/// `POST {CHANNEL_PATH}/{id}` as the bearer session; asserts 202.
pub async fn control(addr: SocketAddr, id: &str, control: &Control) {
    let body = serde_json::to_string(control).unwrap();
    let resp = send(addr, control_req(id, &body).bearer(TOKEN)).await;
    assert_eq!(resp.status, 202, "{body}: {}", resp.text());
    assert!(resp.body.is_empty(), "{}", resp.text());
}

/// A direct `GET path` as the bearer session.
pub async fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Resp {
    let mut request = req("GET", path).bearer(TOKEN);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    send(addr, request).await
}

pub async fn resource_version(addr: SocketAddr, path: &str) -> String {
    let list = get(addr, path, None).await;
    assert_eq!(list.status, 200, "{path}: {}", list.text());
    list.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn fault(addr: SocketAddr, body: &str) {
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
pub async fn eventually(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The stream's answer is the one the same `GET` got on its own connection.
pub fn assert_same_answer(what: &str, on_channel: &Received, direct: &Resp) {
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
