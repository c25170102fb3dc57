//! Serve's hardening, items 5–9 of nine (1–4 in `serve_hardening.rs`): what
//! reaches the browser and who may ask. Fetch metadata and per-port cookies
//! (5), API answers never rendered as HTML and the page's
//! Content-Security-Policy (6), `no-store` (7), one `Host` (8), the token's
//! length (9). Over real loopback HTTP against serve in this process, in front
//! of the stub upstream.

use crate::serve_support;

use base64::Engine;
use deltascope_proxy::auth::TokenError;
use deltascope_proxy::serve::{ServeError, Upstream};
use serve_support::*;
use sha2::{Digest, Sha256};

// ---- 5. fetch metadata and per-port cookies -----------------------------------

#[tokio::test]
async fn item5_other_sites_and_other_local_ports_are_refused_and_cookies_are_per_port() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let cookie = sign_in_with_form(&proxy).await;
    assert!(
        cookie.starts_with(&format!("deltascope_session_{}=", addr.port())),
        "{cookie}"
    );
    let before = stub.state.paths().len();
    let link = link_path(&proxy.sign_in_link().expect("serving"));
    for site in ["cross-site", "same-site", "bogus"] {
        for (path, credentials) in [
            ("/api/v1/pods", Some(cookie.as_str())),
            ("/", Some(cookie.as_str())),
            ("/app.js", None),
            (link.as_str(), None),
        ] {
            let mut request = req("GET", path).header("Sec-Fetch-Site", site);
            if let Some(cookie) = credentials {
                request = request.header("Cookie", cookie);
            }
            send(addr, request).await.assert_status(403);
        }
    }
    assert_eq!(
        stub.state.paths().len(),
        before,
        "nothing reached the cluster"
    );
    for site in ["same-origin", "none"] {
        let api = req("GET", "/api/v1/pods")
            .header("Cookie", &cookie)
            .header("Sec-Fetch-Site", site);
        assert_eq!(send(addr, api).await.status, 200, "{site}");
    }
    // The refused link was not spent.
    let signin = send(addr, req("GET", &link).header("Sec-Fetch-Site", "none")).await;
    assert_eq!(signin.status, 303);

    // A second serve on another port: each keeps its own cookie, both sent together.
    let (_stub2, other) = stub_and_proxy(|_| {}).await;
    let other_cookie = sign_in_with_form(&other).await;
    assert_ne!(
        cookie.split('=').next(),
        other_cookie.split('=').next(),
        "one name for both"
    );
    let both = format!("{cookie}; {other_cookie}");
    for server in [&proxy, &other] {
        let resp = send(
            server.local_addr(),
            req("GET", "/api/v1/pods").header("Cookie", &both),
        )
        .await;
        assert_eq!(resp.status, 200);
    }
    let renamed = cookie.replacen(
        &format!("_{}=", addr.port()),
        &format!("_{}=", other.local_addr().port()),
        1,
    );
    send(
        other.local_addr(),
        req("GET", "/api/v1/pods").header("Cookie", &renamed),
    )
    .await
    .assert_status(401);
}

// ---- 6. API answers are never HTML; the page has a strict CSP -----------------

#[tokio::test]
async fn item6_api_answers_are_json_or_attachments_never_html() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let get = |path: &'static str| send(addr, req("GET", path).bearer(proxy.token()));

    let html = get("/apis/evil.example.com/v1/html").await;
    assert_eq!(html.status, 200);
    assert_eq!(
        html.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(html.header("content-disposition"), Some("attachment"));
    assert_eq!(html.header("x-content-type-options"), Some("nosniff"));
    let csp = html.header("content-security-policy").unwrap_or("");
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );

    let log = get("/api/v1/namespaces/default/pods/p/log").await;
    assert_eq!(log.header("content-type"), Some("text/plain"));
    assert_eq!(log.header("content-disposition"), Some("attachment"));
    assert_eq!(log.text(), "a log line\n");

    let json = get("/api/v1/pods").await;
    assert!(json
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(json.header("content-disposition"), None);
}

fn sha256_source(text: &str) -> String {
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
    )
}

fn assert_strict_page_policy(policy: &str) {
    for part in [
        "default-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "'wasm-unsafe-eval'",
        "object-src 'none'",
        "form-action 'self'",
    ] {
        assert!(policy.contains(part), "{part} missing in {policy}");
    }
    let script_src = policy
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .unwrap_or_else(|| panic!("no script-src in {policy}"));
    assert!(!script_src.contains("'unsafe-inline'"), "{policy}");
    assert!(!script_src.contains("'unsafe-eval'"), "{policy}");
    assert!(!script_src.contains("http"), "{policy}");
}

#[tokio::test]
async fn item6_the_page_has_a_strict_csp_allowing_exactly_its_inline_script() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let cookie = sign_in_with_form(&proxy).await;
    let page = send(addr, req("GET", "/").header("Cookie", &cookie)).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.text(), PAGE_HTML);
    let policy = page
        .header("content-security-policy")
        .expect("the page has a CSP");
    assert_strict_page_policy(policy);
    assert!(
        policy.contains(&sha256_source(PAGE_INLINE_SCRIPT)),
        "the inline module script's hash is allowed: {policy}"
    );
    let sign_in = send(addr, req("GET", "/")).await;
    assert_eq!(sign_in.status, 401);
    let policy = sign_in
        .header("content-security-policy")
        .expect("the sign-in page has a CSP");
    assert_strict_page_policy(policy);
    assert!(!sign_in.text().contains("<script"), "no script to allow");
}

// ---- 7. no-store everywhere ---------------------------------------------------

#[tokio::test]
async fn item7_every_api_response_is_no_store() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    for (path, accept) in [
        ("/api/v1/pods", None),
        ("/api/v1/namespaces/default/secrets/s1", None),
        ("/api/v1/secrets", None),
        ("/api/v1/namespaces/default/secrets", Some(table)),
        ("/api/v1/secrets?watch=1&events=1", None),
        ("/api/v1/pods?watch&events=1", None),
        ("/apis/example.com/v1/cached", None),
        ("/apis/evil.example.com/v1/html", None),
        ("/version", None),
    ] {
        let mut request = req("GET", path).bearer(&token);
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        let resp = send(addr, request).await;
        assert_eq!(resp.status, 200, "{path}: {}", resp.text());
        assert_eq!(resp.header("cache-control"), Some("no-store"), "{path}");
        assert_eq!(resp.header("expires"), None, "{path}");
    }
    let refused = send(addr, req("GET", "/api/v1/pods")).await;
    assert_eq!(refused.header("cache-control"), Some("no-store"));
}

// ---- 8. two Host headers -------------------------------------------------------

#[tokio::test]
async fn item8_two_host_headers_are_400() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    for second in [addr.to_string(), "evil.example".to_owned()] {
        let resp = send(
            addr,
            req("GET", "/api/v1/pods")
                .bearer(proxy.token())
                .header("Host", &second),
        )
        .await;
        let json = resp.assert_status(400);
        assert!(json["message"].as_str().unwrap().contains("Host"), "{json}");
    }
    assert!(stub.state.paths().is_empty());
}

// ---- 9. token length and where it comes from ------------------------------------

#[tokio::test]
async fn item9_a_token_shorter_than_32_bytes_is_refused() {
    let short = "x".repeat(31);
    let refused = deltascope_proxy::serve::bind(config_with_token(
        Upstream::Demo(Default::default()),
        &short,
    ))
    .await;
    assert!(
        matches!(
            refused,
            Err(ServeError::Token(TokenError::TooShort { len: 31 }))
        ),
        "{:?}",
        refused.err()
    );
    let refused = deltascope_proxy::serve::bind(config_with_token(
        Upstream::Url("http://127.0.0.1:9".into()),
        "with spaces in it, long enough to pass the length",
    ))
    .await;
    assert!(matches!(
        refused,
        Err(ServeError::Token(TokenError::Unprintable))
    ));
    let exact = "y".repeat(32);
    assert!(deltascope_proxy::serve::bind(config_with_token(
        Upstream::Url("http://127.0.0.1:9".into()),
        &exact
    ))
    .await
    .is_ok());
}
