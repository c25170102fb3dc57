//! Shared helpers for the simulated-cluster tests (included by the other
//! `sim_*.rs` files with `#[path]`): start a sim on a loopback port, plain
//! HTTP requests, and line-by-line watch streams.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use deltascope_sim::{Sim, SimConfig};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

pub struct TestSim {
    pub sim: Sim,
    pub addr: SocketAddr,
    pub base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A quiet config: no churn unless the test asks, short bookmarks.
pub fn quiet(pods: usize) -> SimConfig {
    SimConfig {
        initial_pods: pods,
        churn_per_sec: 0.0,
        bookmark_interval: Duration::from_millis(300),
        ..SimConfig::default()
    }
}

pub async fn start(config: SimConfig) -> TestSim {
    let sim = Sim::start(config);
    let app = sim.api_router().merge(sim.control_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    TestSim {
        sim,
        addr,
        base: format!("http://{addr}"),
        client: Client::builder(TokioExecutor::new()).build_http(),
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

impl TestSim {
    /// The same cluster reached through another base URL (e.g. kubectl proxy).
    pub fn through(t: &TestSim, base: &str) -> TestSim {
        TestSim {
            sim: t.sim.clone(),
            addr: t.addr,
            base: base.to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        accept: Option<&str>,
        body: Option<String>,
    ) -> hyper::Response<Incoming> {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
        self.send_with(method, path, &headers, body).await
    }

    pub async fn send_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> hyper::Response<Incoming> {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = body.map(Bytes::from).unwrap_or_default();
        let req = req.body(Full::new(body)).expect("request");
        tokio::time::timeout(Duration::from_secs(10), self.client.request(req))
            .await
            .expect("request timed out")
            .expect("request failed")
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        accept: Option<&str>,
        body: Option<String>,
    ) -> Reply {
        let resp = self.send(method, path, accept, body).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
            .await
            .expect("body timed out")
            .expect("body failed")
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn request_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let resp = self.send_with("GET", path, headers, None).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, None).await
    }

    /// A GET whose connection may be cut (the server restarting): `None`
    /// instead of a panic when the request or its body fails.
    pub async fn try_get(&self, path: &str) -> Option<Reply> {
        let req = hyper::Request::builder()
            .uri(format!("{}{}", self.base, path))
            .body(Full::new(Bytes::new()))
            .ok()?;
        let resp = tokio::time::timeout(Duration::from_secs(10), self.client.request(req))
            .await
            .ok()?
            .ok()?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
            .await
            .ok()?
            .ok()?
            .to_bytes()
            .to_vec();
        Some(Reply {
            status,
            headers,
            body,
        })
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert_eq!(
            r.status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()
    }

    pub async fn post(&self, path: &str, body: &str) -> Reply {
        self.request("POST", path, None, Some(body.to_string()))
            .await
    }

    pub async fn watch(&self, path: &str) -> Lines {
        let resp = self.send("GET", path, None, None).await;
        assert_eq!(resp.status().as_u16(), 200, "watch {path}");
        Lines {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }

    /// Full list (all pages) of a resource path: (resourceVersion, items).
    pub async fn list_all(&self, path: &str) -> (String, Vec<Value>) {
        let r = self.get_json(path).await;
        let rv = r["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (rv, r["items"].as_array().cloned().unwrap_or_default())
    }
}

/// A watch response read one line at a time.
pub struct Lines {
    body: Incoming,
    buf: Vec<u8>,
}

pub enum Next {
    Line(Value),
    /// A line that is not JSON.
    Garbage(String),
    /// The server ended the response cleanly.
    End,
    /// The connection broke.
    Broken,
    Timeout,
}

impl Lines {
    pub async fn next(&mut self, wait: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return match serde_json::from_slice(&line) {
                    Ok(v) => Next::Line(v),
                    Err(_) => Next::Garbage(String::from_utf8_lossy(&line).into_owned()),
                };
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Next::Timeout,
                Ok(None) => return Next::End,
                Ok(Some(Err(_))) => return Next::Broken,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next JSON event, panicking on anything else.
    pub async fn event(&mut self, wait: Duration) -> Value {
        match self.next(wait).await {
            Next::Line(v) => v,
            Next::Garbage(g) => panic!("garbage line {g:?}"),
            Next::End => panic!("watch ended"),
            Next::Broken => panic!("watch broke"),
            Next::Timeout => panic!("no watch event within {wait:?}"),
        }
    }

    /// Collect events until the stream ends (or `wait` passes).
    pub async fn until_end(&mut self, wait: Duration) -> (Vec<Value>, &'static str) {
        let deadline = tokio::time::Instant::now() + wait;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Next::Line(v) => out.push(v),
                Next::Garbage(_) => return (out, "garbage"),
                Next::End => return (out, "end"),
                Next::Broken => return (out, "broken"),
                Next::Timeout => return (out, "timeout"),
            }
        }
    }
}

pub fn rv_of(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn key_of(obj: &Value) -> String {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// The digest (`deltascope_facts::digest`: keys and resourceVersions in
/// key order) computed on the client side from a list of objects.
pub fn digest_of(items: &[Value]) -> String {
    deltascope_facts::digest_of(items.iter().map(|o| (key_of(o), rv_of(o))))
}

/// Wait until `f` is true, polling.
pub async fn eventually(what: &str, wait: Duration, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + wait;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
