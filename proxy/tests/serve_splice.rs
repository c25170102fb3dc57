//! Large list bodies that serve splices from the upstream socket to the
//! browser's (Linux): byte for byte, several responses on one kept-alive
//! browser connection, and an upstream that misbehaves (closes early, sends
//! its head in pieces, answers chunked or with an interim 100) or a browser
//! that leaves in the middle of a list.

#![cfg(target_os = "linux")]

mod serve_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use deltascope_proxy::serve::{Running, Upstream};
use deltascope_proxy::splice::spliced_bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serve_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes that are easy to check: position `i` holds `i % 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// An upstream that answers every connection's first request by running
/// `script` on the socket (after reading the request head).
async fn scripted_upstream<F, Fut>(script: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let script = Arc::new(script);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let script = Arc::clone(&script);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match socket.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                script(socket).await;
            });
        }
    });
    format!("http://{addr}")
}

async fn proxy_in_front_of(upstream: String) -> Running {
    start_proxy(config(Upstream::Url(upstream))).await
}

/// A kept-alive browser connection to `proxy`.
async fn browser_connection(
    proxy: &Running,
) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let tcp = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

async fn get_on(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    proxy: &Running,
    target: &str,
) -> (u16, Option<String>, Vec<u8>) {
    let request = http::Request::get(target)
        .header("host", proxy.local_addr().to_string())
        .header("authorization", format!("Bearer {}", proxy.token()))
        .body(Empty::new())
        .unwrap();
    sender.ready().await.unwrap();
    let response = tokio::time::timeout(Duration::from_secs(20), sender.send_request(request))
        .await
        .expect("a response within 20 s")
        .unwrap();
    let status = response.status().as_u16();
    let length = response
        .headers()
        .get("content-length")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = tokio::time::timeout(Duration::from_secs(20), response.into_body().collect())
        .await
        .expect("the body within 20 s")
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, length, body)
}

#[tokio::test]
async fn spliced_lists_arrive_whole_on_one_kept_alive_connection() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let mut browser = browser_connection(&proxy).await;
    let before = spliced_bytes();
    let mut big_total = 0;
    for (items, pad) in [
        (1_500, 1_000),
        (20, 10),
        (3_000, 500),
        (2, 0),
        (1_000, 2_000),
    ] {
        let (status, length, body) = get_on(
            &mut browser,
            &proxy,
            &format!("/api/v1/pods?items={items}&pad={pad}"),
        )
        .await;
        let expected = big_pod_list(items, pad);
        assert_eq!(status, 200);
        assert_eq!(length, Some(expected.len().to_string()));
        assert!(
            body == expected.as_bytes(),
            "list of {items} changed on the way ({} of {} bytes)",
            body.len(),
            expected.len()
        );
        if expected.len() as u64 >= deltascope_proxy::splice::MIN_SPLICE_BYTES {
            big_total += expected.len() as u64;
        }
    }
    assert!(big_total > 3_000_000, "{big_total}");
    assert!(
        spliced_bytes() - before >= big_total,
        "only {} of {big_total} bytes were spliced",
        spliced_bytes() - before
    );
}

#[tokio::test]
async fn a_response_head_in_pieces_is_read_whole() {
    let body = pattern(700_000);
    let expected = body.clone();
    let upstream = scripted_upstream(move |mut socket| {
        let body = body.clone();
        async move {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            let (first, rest) = head.as_bytes().split_at(20);
            socket.write_all(first).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            socket.write_all(rest).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            for part in body.chunks(100_000) {
                socket.write_all(part).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let _ = socket.read(&mut [0u8; 1]).await;
        }
    })
    .await;
    let proxy = proxy_in_front_of(upstream).await;
    let mut browser = browser_connection(&proxy).await;
    let before = spliced_bytes();
    for _ in 0..2 {
        let (status, length, got) = get_on(&mut browser, &proxy, "/api/v1/pods").await;
        assert_eq!(status, 200);
        assert_eq!(length, Some(expected.len().to_string()));
        assert!(got == expected, "{} of {} bytes", got.len(), expected.len());
    }
    assert!(spliced_bytes() - before >= 2 * expected.len() as u64);
}

#[tokio::test]
async fn chunked_and_interim_responses_pass_through_hyper_as_before() {
    let body = pattern(900_000);
    let expected = body.clone();
    let upstream = scripted_upstream(move |mut socket| {
        let body = body.clone();
        async move {
            socket
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .unwrap();
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            for part in body.chunks(300_000) {
                socket
                    .write_all(format!("{:x}\r\n", part.len()).as_bytes())
                    .await
                    .unwrap();
                socket.write_all(part).await.unwrap();
                socket.write_all(b"\r\n").await.unwrap();
            }
            socket.write_all(b"0\r\n\r\n").await.unwrap();
            let _ = socket.read(&mut [0u8; 1]).await;
        }
    })
    .await;
    let proxy = proxy_in_front_of(upstream).await;
    let response = send(
        proxy.local_addr(),
        req("GET", "/api/v1/pods").bearer(proxy.token()),
    )
    .await;
    assert_eq!(response.status, 200);
    assert!(
        response.body == expected,
        "{} of {} bytes",
        response.body.len(),
        expected.len()
    );
}

#[tokio::test]
async fn an_upstream_that_closes_early_cuts_the_response_short_and_serve_goes_on() {
    let upstream = scripted_upstream(|mut socket| async move {
        socket
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
            .await
            .unwrap();
        socket.write_all(&pattern(300_000)).await.unwrap();
        // then the connection closes, 700,000 bytes short
    })
    .await;
    let proxy = proxy_in_front_of(upstream).await;
    for _ in 0..2 {
        let mut stream = open(
            proxy.local_addr(),
            req("GET", "/api/v1/pods").bearer(proxy.token()),
        )
        .await;
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
            .await
            .expect("the browser connection ends instead of hanging")
            .unwrap();
        let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(raw.starts_with(b"HTTP/1.1 200"));
        assert_eq!(
            &raw[head_end..],
            &pattern(300_000)[..],
            "the bytes that came are right"
        );
    }
    let health = send(proxy.local_addr(), req("GET", "/healthz")).await;
    assert_eq!(health.status, 200);
}

#[tokio::test]
async fn a_browser_leaving_mid_list_closes_the_upstream_connection() {
    let upstream_closed = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&upstream_closed);
    let upstream = scripted_upstream(move |mut socket| {
        let seen = Arc::clone(&seen);
        async move {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500000000\r\n\r\n")
                .await
                .unwrap();
            let chunk = pattern(64 * 1024);
            while socket.write_all(&chunk).await.is_ok() {}
            seen.store(true, Ordering::SeqCst);
        }
    })
    .await;
    let proxy = proxy_in_front_of(upstream).await;
    let mut stream = open(
        proxy.local_addr(),
        req("GET", "/api/v1/pods").bearer(proxy.token()),
    )
    .await;
    let mut got = vec![0u8; 2_000_000];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut got))
        .await
        .expect("2 MB within 10 s")
        .unwrap();
    drop(stream);
    for _ in 0..200 {
        if upstream_closed.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the upstream connection stayed open after the browser left");
}
