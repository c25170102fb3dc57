//! Serve's hardening, items 1–4 of nine (watches, connections, sessions, the sign-in link), one
//! or two tests per item, over real loopback HTTP against serve in this
//! process, in front of the stub upstream (which decides "is this a watch" as
//! an apiserver does, see `serve_support::apiserver_watches`). Items 5–9 (what
//! reaches the browser) are in `serve_hardening_web.rs`; the ones that need
//! serve in a process of its own (its memory, its file limit, its token
//! sources) in `serve_process.rs`.

use crate::serve_support;

use std::time::{Duration, Instant};

use deltascope_proxy::serve::Upstream;
use serve_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const EVENT: &str = "\"type\":\"ADDED\"";
const TOKEN: &str = "hardening-token-0123456789abcdef0123456789";

fn assert_no_secret_bytes(body: &str) {
    for needle in [SECRET_B64, &SECRET_B64[..12], SECRET_PLAIN, SECRET_DECODED] {
        assert!(!body.contains(needle), "{needle:?} leaked in {body}");
    }
}

async fn first_event(stream: &mut TcpStream) {
    let mut buf = Vec::new();
    read_occurrences(stream, &mut buf, EVENT, 1, Duration::from_secs(5)).await;
}

// ---- 1. --max-watches counts every spelling; redaction decides the same way --

#[tokio::test]
async fn item1_every_spelling_of_watch_takes_a_watch_slot() {
    let (stub, proxy) = stub_and_proxy(|c| c.max_watches_per_session = 2).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    for spelling in WATCH_SPELLINGS {
        assert!(
            apiserver_watches(spelling),
            "{spelling} is a watch upstream"
        );
    }
    // Two counted watches fill the session's slots...
    let mut held = Vec::new();
    for _ in 0..2 {
        let watch = req("GET", "/api/v1/pods?watch=1&interval_ms=60000").bearer(&token);
        let mut stream = open(addr, watch).await;
        first_event(&mut stream).await;
        held.push(stream);
    }
    // ...so no other spelling may start one.
    for spelling in WATCH_SPELLINGS {
        let target = format!("/api/v1/pods?{spelling}&events=1");
        let resp = send(addr, req("GET", &target).bearer(&token)).await;
        assert_eq!(resp.status, 429, "{spelling}: {}", resp.text());
        resp.assert_status(429);
    }
    // A followed pod log streams as long: it counts too.
    let log = "/api/v1/namespaces/default/pods/p/log?f%6Fllow";
    send(addr, req("GET", log).bearer(&token))
        .await
        .assert_status(429);
    // What is no watch upstream is no watch here.
    for list in [
        "watch=0",
        "watch=false",
        "watch=FALSE",
        "nowatch=1",
        "x=watch%3D1",
    ] {
        assert!(!apiserver_watches(list), "{list}");
        let resp = send(
            addr,
            req("GET", &format!("/api/v1/pods?{list}")).bearer(&token),
        )
        .await;
        assert_eq!(resp.status, 200, "{list}: {}", resp.text());
    }
    assert_eq!(
        stub.state
            .open_watches
            .load(std::sync::atomic::Ordering::SeqCst),
        2
    );

    // Once the slots are free, each spelling streams (and frees its slot when done).
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = send(
            addr,
            req("GET", "/api/v1/pods?watch=1&events=1").bearer(&token),
        )
        .await;
        if probe.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the slots were never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for spelling in WATCH_SPELLINGS {
        let target = format!("/api/v1/pods?{spelling}&events=2&interval_ms=1");
        let resp = send(addr, req("GET", &target).bearer(&token)).await;
        assert_eq!(resp.status, 200, "{spelling}: {}", resp.text());
        assert_eq!(
            count_occurrences(&resp.body, EVENT.as_bytes()),
            2,
            "{spelling}"
        );
    }
}

#[tokio::test]
async fn item1_a_secret_watch_in_any_spelling_is_redacted_event_by_event() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    for spelling in ["w%61tch", "watch=yes", "watch", "watch=%31"] {
        // Two events, three seconds apart: redacted as a watch, the first
        // arrives at once; redacted as a list, only when the stream ends.
        let target =
            format!("/api/v1/namespaces/default/secrets?{spelling}&events=2&interval_ms=3000");
        let started = Instant::now();
        let mut stream = open(addr, req("GET", &target).bearer(proxy.token())).await;
        let mut buf = Vec::new();
        let seen = read_occurrences(
            &mut stream,
            &mut buf,
            "<redacted: 17 bytes>",
            1,
            Duration::from_secs(10),
        )
        .await;
        let waited = seen[0] - started;
        assert!(
            waited < Duration::from_millis(2000),
            "{spelling}: the first event took {waited:?}, as if the watch were buffered whole"
        );
        assert_no_secret_bytes(&String::from_utf8_lossy(&buf));
    }
}

// ---- 2. header-read timeout, idle timeout, connection cap ---------------------

#[tokio::test]
async fn item2_silence_and_slow_request_heads_are_cut_at_the_header_read_timeout() {
    let (_stub, proxy) = stub_and_proxy(|c| {
        c.header_read_timeout = Duration::from_millis(500);
        c.idle_timeout = Duration::from_secs(30);
    })
    .await;
    let addr = proxy.local_addr();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: ")
        .await
        .unwrap();
    // A slowloris: a byte every 100 ms, never the end of the head.
    let mut drip = TcpStream::connect(addr).await.unwrap();
    let (mut drip_read, mut drip_write) = drip.split();
    let dripping = async {
        let _ = drip_write.write_all(b"GET /healthz HTTP/1.1\r\n").await;
        for _ in 0..100 {
            if drip_write.write_all(b"X").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let drip_closed = async {
        let started = Instant::now();
        let mut chunk = [0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), drip_read.read(&mut chunk)).await {
                Err(_) => return None,
                Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
                Ok(Ok(_)) => {}
            }
        }
    };
    let drip_closed = tokio::select! {
        closed = drip_closed => closed,
        _ = dripping => None,
    };
    for (what, closed) in [
        (
            "a connection that sends nothing",
            closed_within(&mut silent, Duration::from_secs(5)).await,
        ),
        (
            "a request head that never ends",
            closed_within(&mut partial, Duration::from_secs(5)).await,
        ),
        ("a head sent a byte at a time", drip_closed),
    ] {
        let closed = closed.unwrap_or_else(|| panic!("{what} was not closed within 5 s"));
        assert!(
            closed < Duration::from_secs(3),
            "{what} closed after {closed:?}"
        );
    }
    assert_eq!(send(addr, req("GET", "/healthz")).await.status, 200);
}

#[tokio::test]
async fn item2_idle_keep_alive_connections_close_but_a_streaming_channel_stays() {
    let (_stub, proxy) = stub_and_proxy(|c| {
        c.header_read_timeout = Duration::from_secs(10);
        c.idle_timeout = Duration::from_millis(600);
    })
    .await;
    let addr = proxy.local_addr();
    // An authenticated keep-alive connection, idle after one request.
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(
        format!(
            "GET /version HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n",
            proxy.token()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let closed = closed_within(&mut kept, Duration::from_secs(5))
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(
        closed >= Duration::from_millis(400),
        "closed after only {closed:?}"
    );
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");

    // The page's channel is one response that streams for hours: in flight, never idle.
    let mut channel = open(
        addr,
        req("GET", "/_deltascope/channel").bearer(proxy.token()),
    )
    .await;
    let mut head = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), channel.read(&mut head))
        .await
        .expect("the channel answers")
        .unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    assert_eq!(
        closed_within(&mut channel, Duration::from_millis(2500)).await,
        None,
        "the channel was cut by the idle timeout while it streamed"
    );
}

#[tokio::test]
async fn item2_at_the_connection_cap_unauthenticated_connections_go_first() {
    let (_stub, proxy) = stub_and_proxy(|c| {
        c.max_connections = 8;
        c.header_read_timeout = Duration::from_secs(60);
    })
    .await;
    let addr = proxy.local_addr();
    // The oldest connection, but authenticated: a watch.
    let watch = req("GET", "/api/v1/pods?watch=1&interval_ms=100").bearer(proxy.token());
    let mut watch = open(addr, watch).await;
    let mut buf = Vec::new();
    read_occurrences(&mut watch, &mut buf, EVENT, 1, Duration::from_secs(5)).await;
    // A flood of connections that never send a byte.
    let mut idle = Vec::new();
    for _ in 0..30 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let health = tokio::time::timeout(Duration::from_secs(5), send(addr, req("GET", "/healthz")))
        .await
        .expect("/healthz answers despite the flood");
    assert_eq!(health.status, 200);
    read_occurrences(&mut watch, &mut buf, EVENT, 4, Duration::from_secs(5)).await;
    let mut closed = 0;
    for conn in &mut idle {
        if closed_within(conn, Duration::from_millis(100))
            .await
            .is_some()
        {
            closed += 1;
        }
    }
    assert!(
        closed >= 20,
        "only {closed} of 30 idle connections were shed"
    );
    let stats = proxy.connection_stats();
    assert!(stats.open <= 8, "{stats:?}");
    assert!(stats.shed >= 20, "{stats:?}");
    assert_eq!(stats.refused, 0, "{stats:?}");
}

// ---- 3. cookies: looked up by id, bounded; sessions expire and sign out ------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item3_a_cookie_flood_costs_about_what_a_plain_request_costs() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let mut sessions = Vec::new();
    for _ in 0..256 {
        sessions.push(sign_in_with_form(&proxy).await);
    }
    assert_eq!(proxy.session_count(), 256);
    let name = proxy.cookie_name().to_owned();
    let flood = (0..3000)
        .map(|_| format!("{name}={}", deltascope_proxy::auth::random_hex_256()))
        .collect::<Vec<_>>()
        .join("; ");
    let timed = |cookie: String| async move {
        let started = Instant::now();
        let resp = send(addr, req("GET", "/api/v1/pods").header("Cookie", &cookie)).await;
        (started.elapsed(), resp.status)
    };
    let mut plain = Vec::new();
    let mut flooded = Vec::new();
    for round in 0..7 {
        let (took, status) = timed(sessions[round * 30].clone()).await;
        assert_eq!(status, 200);
        plain.push(took);
        let (took, status) = timed(flood.clone()).await;
        assert_eq!(status, 401);
        flooded.push(took);
    }
    plain.sort();
    flooded.sort();
    let (plain, flooded) = (plain[3], flooded[3]);
    eprintln!(
        "median GET: {plain:?} plain, {flooded:?} with 3,000 session cookies at 256 sessions"
    );
    assert!(
        flooded < plain + Duration::from_millis(40),
        "3,000 cookies cost {flooded:?} against {plain:?}"
    );
    // A browser's real cookie is found next to a few foreign ones.
    let mixed = format!(
        "a=1; {name}={}; {name}=not-an-id; {}",
        deltascope_proxy::auth::random_hex_256(),
        sessions[255]
    );
    assert_eq!(timed(mixed).await.1, 200);
}

#[tokio::test]
async fn item3_sessions_expire_when_idle_and_end_at_sign_out() {
    let (_stub, proxy) = stub_and_proxy(|c| {
        c.session_idle_timeout = Duration::from_millis(600);
    })
    .await;
    let addr = proxy.local_addr();
    let idle = sign_in_with_form(&proxy).await;
    let busy = sign_in_with_form(&proxy).await;
    // `busy` keeps a watch open: a session with a stream is in use.
    let watch = req("GET", "/api/v1/pods?watch=1&interval_ms=200").header("Cookie", &busy);
    let mut watch = open(addr, watch).await;
    first_event(&mut watch).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let get = |cookie: &str| send(addr, req("GET", "/api/v1/pods").header("Cookie", cookie));
    get(&idle).await.assert_status(401);
    assert_eq!(get(&busy).await.status, 200);

    // Signing out ends the session and cuts its streams.
    let out = send(
        addr,
        req("POST", "/_deltascope/sign-out")
            .header("Cookie", &busy)
            .header("Origin", &format!("http://{addr}"))
            .header("Sec-Fetch-Site", "same-origin"),
    )
    .await;
    assert_eq!(out.status, 303, "{}", out.text());
    assert_eq!(out.header("location"), Some("/"));
    let cleared = out.header("set-cookie").expect("the cookie is cleared");
    assert!(
        cleared.starts_with(&format!("{}=;", proxy.cookie_name())) && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    get(&busy).await.assert_status(401);
    assert!(
        closed_within(&mut watch, Duration::from_secs(3))
            .await
            .is_some(),
        "the signed-out session's watch kept streaming"
    );
    assert_eq!(proxy.session_count(), 0);
    // Only POST signs out (a link or an image cannot).
    send(addr, req("GET", "/_deltascope/sign-out"))
        .await
        .assert_status(405);
}

// ---- 4. the sign-in link opens one session ------------------------------------

#[tokio::test]
async fn item4_the_sign_in_link_opens_one_session_then_only_the_form_does() {
    let (_stub, proxy) = stub_and_proxy(|c| c.token = Some(TOKEN.into())).await;
    let addr = proxy.local_addr();
    let link = link_path(&proxy.sign_in_link().expect("serving"));
    let first = send(addr, req("GET", &link).header("Sec-Fetch-Site", "none")).await;
    assert_eq!(first.status, 303, "{}", first.text());
    let cookie = cookie_pair(&first);

    // The link from the history, in another browser: nothing opens.
    let replay = send(addr, req("GET", &link).header("Sec-Fetch-Site", "none")).await;
    assert_eq!(replay.status, 401);
    assert!(
        replay.header("set-cookie").is_none(),
        "{:?}",
        replay.headers
    );
    assert!(replay.text().contains("already"), "{}", replay.text());
    assert!(replay.text().contains("<form method=post action=/>"));
    // Under `no-referrer` a browser would send the form with `Origin: null`,
    // which serve refuses: the sign-in page lets the origin through.
    assert_eq!(replay.header("referrer-policy"), Some("same-origin"));
    // The browser that signed in may open it again: it just goes to the page.
    let same = send(addr, req("GET", &link).header("Cookie", &cookie)).await;
    assert_eq!(same.status, 303);
    assert!(same.header("set-cookie").is_none());
    assert_eq!(proxy.session_count(), 1);

    // A second browser signs in with the form; the token is never in a URL.
    let second = sign_in_with_form(&proxy).await;
    let page = send(addr, req("GET", "/").header("Cookie", &second)).await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("deltascope page"));
    assert_eq!(proxy.session_count(), 2);
    let wrong = send(
        addr,
        req("POST", "/")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body("token=not-the-token-0123456789abcdef0123456789"),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("set-cookie").is_none());
    // CLI clients keep using the token.
    let cli = send(addr, req("GET", "/api/v1/pods").bearer(TOKEN)).await;
    assert_eq!(cli.status, 200);

    // A restarted serve, same token: its new link works once again.
    let restarted = start_proxy(config_with_token(
        Upstream::Url("http://127.0.0.1:9".into()),
        TOKEN,
    ))
    .await;
    let link = link_path(&restarted.sign_in_link().expect("serving"));
    let again = send(restarted.local_addr(), req("GET", &link)).await;
    assert_eq!(again.status, 303);
    assert!(again.header("set-cookie").is_some());
}
