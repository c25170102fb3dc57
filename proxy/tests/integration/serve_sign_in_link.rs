//! The sign-in link carries a one-time code, never the token: a link opens
//! one session, once, for a few minutes; `?token=` opens nothing by any
//! route; new links come as JSON for the token or a session, or printed in
//! serve's terminal for the sign-in page's button (rate-limited); a token
//! serve makes up is in a private file, not on the terminal. In-process
//! against the stub upstream, and with the real binary where its stdout,
//! flags or files are the point.

use crate::serve_support;

use std::time::Duration;

use serve_support::*;

const TOKEN: &str = "sign-in-link-token-0123456789abcdef0123456789";

/// A request as a browser sends it when the user opens a link.
fn opened(target: &str) -> Req {
    req("GET", target).header("Sec-Fetch-Site", "none")
}

/// A POST from a page of serve's own origin, as the sign-in page's button sends it.
fn from_the_page(addr: std::net::SocketAddr, target: &str) -> Req {
    req("POST", target)
        .header("Origin", &format!("http://{addr}"))
        .header("Sec-Fetch-Site", "same-origin")
        .header("Content-Type", "application/x-www-form-urlencoded")
}

/// The answer signs nothing in: the sign-in page (401) and no cookie.
fn assert_signs_nothing_in(resp: &Resp, what: &str) {
    assert_eq!(resp.status, 401, "{what}: {}", resp.text());
    assert!(
        resp.header("set-cookie").is_none(),
        "{what}: {:?}",
        resp.headers
    );
}

#[tokio::test]
async fn a_link_opens_one_session_once_by_either_route() {
    let (_stub, proxy) = stub_and_proxy(|c| c.token = Some(TOKEN.into())).await;
    let addr = proxy.local_addr();
    let link = link_path(&proxy.sign_in_link().expect("serving"));
    assert!(link.starts_with("/?code="), "{link}");
    let code = &link["/?code=".len()..];
    assert_eq!(code.len(), 32, "128 bits, hex: {code}");

    let first = send(addr, opened(&link)).await;
    assert_eq!(first.status, 303, "{}", first.text());
    assert_eq!(first.header("location"), Some("/"));
    let cookie = cookie_pair(&first);
    // Opened twice: the second signs nothing in, on `/` or through a proxy's path.
    for again in [link.clone(), format!("/_deltascope/signin?code={code}")] {
        let replay = send(addr, opened(&again)).await;
        assert_signs_nothing_in(&replay, &again);
        assert!(
            replay.text().contains("already been used"),
            "{}",
            replay.text()
        );
    }
    assert_eq!(proxy.session_count(), 1);
    // The browser that signed in just goes to the page.
    let same = send(addr, opened(&link).header("Cookie", &cookie)).await;
    assert_eq!(same.status, 303);
    assert!(same.header("set-cookie").is_none());

    // `/_deltascope/signin?code=` (for `trunk serve`'s proxy) opens one too,
    // once, and then `/` does not.
    let other = link_path(&proxy.sign_in_link().expect("serving"));
    let via_proxy = other.replacen("/?", "/_deltascope/signin?", 1);
    let second = send(addr, opened(&via_proxy)).await;
    assert_eq!(second.status, 303, "{}", second.text());
    assert_ne!(cookie_pair(&second), cookie);
    assert_signs_nothing_in(
        &send(addr, opened(&other)).await,
        "spent via the proxy path",
    );
    assert_eq!(proxy.session_count(), 2);

    // A code serve never issued, and a HEAD (a link preview) spends nothing.
    let unknown = send(addr, opened(&format!("/?code={}", "ab".repeat(16)))).await;
    assert_signs_nothing_in(&unknown, "unknown code");
    assert!(unknown.text().contains("not one this server knows"));
    let fresh = link_path(&proxy.sign_in_link().expect("serving"));
    assert_eq!(send(addr, req("HEAD", &fresh)).await.status, 401);
    assert_eq!(send(addr, opened(&fresh)).await.status, 303);
}

#[tokio::test]
async fn an_expired_code_signs_nothing_in() {
    let (_stub, proxy) = stub_and_proxy(|c| {
        c.sign_in_code_ttl = Duration::from_millis(300);
    })
    .await;
    let addr = proxy.local_addr();
    let late = link_path(&proxy.sign_in_link().expect("serving"));
    let in_time = link_path(&proxy.sign_in_link().expect("serving"));
    assert_eq!(send(addr, opened(&in_time)).await.status, 303);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resp = send(addr, opened(&late)).await;
    assert_signs_nothing_in(&resp, "expired");
    assert!(resp.text().contains("has expired"), "{}", resp.text());
    assert_eq!(proxy.session_count(), 1);
}

#[tokio::test]
async fn at_most_eight_links_live_and_older_ones_say_they_were_replaced() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let links: Vec<String> = (0..9)
        .map(|_| link_path(&proxy.sign_in_link().expect("serving")))
        .collect();
    let oldest = send(addr, opened(&links[0])).await;
    assert_signs_nothing_in(&oldest, "replaced");
    assert!(oldest.text().contains("replaced"), "{}", oldest.text());
    assert_eq!(send(addr, opened(&links[8])).await.status, 303);
}

#[tokio::test]
async fn the_token_in_a_url_signs_nothing_in_by_any_route() {
    let (stub, proxy) = stub_and_proxy(|c| c.token = Some(TOKEN.into())).await;
    let addr = proxy.local_addr();
    for target in [
        format!("/?token={TOKEN}"),
        format!("/_deltascope/signin?token={TOKEN}"),
        format!("/index.html?token={TOKEN}"),
        format!("/?x=1&token={TOKEN}"),
    ] {
        let resp = send(addr, opened(&target)).await;
        assert_signs_nothing_in(&resp, &target);
        assert!(
            resp.text().contains("one-time code"),
            "{target}: says links carry a code now: {}",
            resp.text()
        );
        assert!(!resp.text().contains(TOKEN), "{target}: echoes the token");
    }
    send(addr, req("GET", &format!("/api/v1/pods?token={TOKEN}")))
        .await
        .assert_status(401);
    assert_eq!(proxy.session_count(), 0);
    assert!(stub.state.paths().is_empty());
    // The token itself still works where it belongs: the form and bearer.
    sign_in_with_form(&proxy).await;
    let cli = send(addr, req("GET", "/api/v1/pods").bearer(TOKEN)).await;
    assert_eq!(cli.status, 200);
}

#[tokio::test]
async fn a_new_link_comes_as_json_for_the_token_or_a_session() {
    let (_stub, proxy) = stub_and_proxy(|c| c.token = Some(TOKEN.into())).await;
    let addr = proxy.local_addr();
    let resp = send(addr, req("POST", "/_deltascope/sign-in-link").bearer(TOKEN)).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    assert!(resp
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let (url, expires) = fetch_sign_in_link(addr, TOKEN).await;
    assert_eq!(expires, 300);
    assert!(url.starts_with(&format!("http://{addr}/?code=")), "{url}");
    assert!(!url.contains(TOKEN));
    let cookie = cookie_pair(&send(addr, opened(&link_path(&url))).await);
    // A browser with a session may ask too (to sign in another one).
    let resp = send(
        addr,
        from_the_page(addr, "/_deltascope/sign-in-link").header("Cookie", &cookie),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let url = resp.json()["url"].as_str().unwrap().to_owned();
    assert_eq!(send(addr, opened(&link_path(&url))).await.status, 303);
    assert_eq!(proxy.session_count(), 2);
    // Asked with GET (a link, an image): refused.
    send(addr, req("GET", "/_deltascope/sign-in-link").bearer(TOKEN))
        .await
        .assert_status(405);
    // Another site cannot ask (nor have serve print one).
    let cross = req("POST", "/_deltascope/sign-in-link")
        .header("Origin", "http://evil.example")
        .bearer(TOKEN);
    send(addr, cross).await.assert_status(403);
}

// ---- the real binary ------------------------------------------------------------

#[tokio::test]
async fn the_sign_in_page_button_prints_a_new_link_at_most_every_few_seconds() {
    let mut served = Served::start(serve_binary(&[
        "--upstream",
        "http://127.0.0.1:9",
        "--token",
        TOKEN,
    ]))
    .await;
    let addr = served.addr;
    let page = send(addr, opened("/")).await;
    assert!(
        page.text()
            .contains("<form method=post action=/_deltascope/sign-in-link>"),
        "the sign-in page has the button: {}",
        page.text()
    );

    let printed = send(addr, from_the_page(addr, "/_deltascope/sign-in-link")).await;
    assert_eq!(printed.status, 200, "{}", printed.text());
    assert!(
        printed
            .text()
            .contains("serve printed a new sign-in link in its terminal"),
        "{}",
        printed.text()
    );
    assert!(printed.header("set-cookie").is_none());
    let line = served
        .next_line(Duration::from_secs(5))
        .await
        .expect("serve printed a new link");
    let (at, link) = parse_open_line(&line).unwrap_or_else(|| panic!("{line:?}"));
    assert_eq!(at, addr);
    assert_ne!(link, served.link, "a new code");

    // Again at once: 429, and nothing more on the terminal.
    let flood = send(addr, from_the_page(addr, "/_deltascope/sign-in-link")).await;
    flood.assert_status(429);
    assert!(flood.header("retry-after").is_some(), "{:?}", flood.headers);
    assert_eq!(served.next_line(Duration::from_millis(500)).await, None);

    // Both links work, once each.
    for link in [&link, &served.link] {
        assert_eq!(send(addr, opened(link)).await.status, 303, "{link}");
        assert_signs_nothing_in(&send(addr, opened(link)).await, link);
    }
    served.child.kill().await.unwrap();
}

#[tokio::test]
async fn the_hidden_ttl_flag_lets_a_printed_link_expire() {
    let served = Served::start(serve_binary(&[
        "--upstream",
        "http://127.0.0.1:9",
        "--token",
        TOKEN,
        "--sign-in-code-ttl",
        "300ms",
    ]))
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resp = send(served.addr, opened(&served.link)).await;
    assert_signs_nothing_in(&resp, "expired");
    assert!(resp.text().contains("has expired"), "{}", resp.text());
}

#[tokio::test]
async fn a_made_up_token_is_in_a_private_file_until_serve_stops() {
    use std::os::unix::fs::PermissionsExt;
    let runtime = scratch_dir();
    let mut command = serve_binary(&["--upstream", "http://127.0.0.1:9"]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let mut served = Served::start(command).await;
    let addr = served.addr;
    let path = token_path(&mut served).await;
    assert_eq!(
        path,
        runtime
            .join("deltascope")
            .join(format!("token-{}", addr.port()))
    );
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let text = std::fs::read_to_string(&path).unwrap();
    let token = text.strip_suffix('\n').expect("one line");
    assert_eq!(token.len(), 64, "{token}");
    assert!(
        !served.first_line.contains(token),
        "the token is not in the printed URL"
    );
    // It is the token: for bearer clients and the form.
    let cli = send(addr, req("GET", "/version").bearer(token)).await;
    assert_ne!(cli.status, 401, "{}", cli.text());
    let form = send(
        addr,
        from_the_page(addr, "/").body(&format!("token={token}")),
    )
    .await;
    assert_eq!(form.status, 303, "{}", form.text());

    // Stopped normally (SIGTERM), serve removes it.
    let pid = served.child.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), served.child.wait())
        .await
        .expect("serve stops within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "{} is still there", path.display());
}

#[tokio::test]
async fn without_a_place_for_the_token_serve_says_so_and_keeps_serving() {
    let blocked = scratch_dir().join("a-file");
    std::fs::write(&blocked, "").unwrap();
    let mut command = serve_binary(&["--upstream", "http://127.0.0.1:9"]);
    command
        .env("XDG_RUNTIME_DIR", &blocked)
        .stderr(std::process::Stdio::piped());
    let mut served = Served::start(command).await;
    let mut stderr = served.child.stderr.take().unwrap();
    assert_eq!(
        served.next_line(Duration::from_millis(500)).await,
        None,
        "no token file named"
    );
    assert_eq!(send(served.addr, opened(&served.link)).await.status, 303);
    served.child.kill().await.unwrap();
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut log)
        .await
        .unwrap();
    assert!(
        log.contains("cannot make the private directory") && log.contains("still works"),
        "{log}"
    );
}
