//! The security matrix of `deltascope serve`, over real loopback
//! HTTP: auth, Host/Origin checks, read-only methods, path tricks, `/_sim` in
//! upstream mode, and that no Secret value byte ever reaches a client.

use crate::serve_support;

use deltascope_proxy::serve::Upstream;
use serve_support::*;

// ---- auth -------------------------------------------------------------------

#[tokio::test]
async fn api_without_credentials_is_401_status() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let resp = send(proxy.local_addr(), req("GET", "/api/v1/pods")).await;
    let json = resp.assert_status(401);
    assert_eq!(json["reason"], "Unauthorized");
    assert_eq!(json["status"], "Failure");
    assert!(
        json["message"].as_str().unwrap().contains("printed"),
        "{json}"
    );
    assert!(stub.state.paths().is_empty());
}

#[tokio::test]
async fn wrong_token_is_401() {
    let (stub, proxy) =
        stub_and_proxy(|c| c.token = Some("right-token-0123456789abcdef0123456789".into())).await;
    let addr = proxy.local_addr();
    send(
        addr,
        req("GET", "/api/v1/pods").bearer("wrong-token-0123456789abcdef0123456789"),
    )
    .await
    .assert_status(401);
    send(
        addr,
        req("GET", "/api/v1/pods").bearer("right-token-0123456789abcdef012345678X"),
    )
    .await
    .assert_status(401);
    // The token is not a session id.
    let token_as_cookie = format!(
        "{}=right-token-0123456789abcdef0123456789",
        proxy.cookie_name()
    );
    send(
        addr,
        req("GET", "/api/v1/pods").header("Cookie", &token_as_cookie),
    )
    .await
    .assert_status(401);
    send(addr, req("GET", "/_sim/fault").bearer("wrong"))
        .await
        .assert_status(401);
    // The sign-in exchange with a wrong code sets no cookie.
    let resp = send(addr, req("GET", &format!("/?code={}", "0".repeat(32)))).await;
    assert_eq!(resp.status, 401);
    assert!(resp.header("set-cookie").is_none());
    assert!(stub.state.paths().is_empty());
    // And the right one works.
    let ok = send(
        addr,
        req("GET", "/api/v1/pods").bearer("right-token-0123456789abcdef0123456789"),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
}

#[tokio::test]
async fn an_empty_token_is_refused_at_start() {
    let mut config = config(Upstream::Url("http://127.0.0.1:8001".into()));
    config.token = Some(String::new());
    assert!(matches!(
        deltascope_proxy::serve::bind(config).await,
        Err(deltascope_proxy::serve::ServeError::EmptyToken)
    ));
}

#[tokio::test]
async fn token_in_query_on_api_path_is_not_accepted() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let target = format!("/api/v1/pods?token={}", proxy.token());
    send(proxy.local_addr(), req("GET", &target))
        .await
        .assert_status(401);
    let target = format!("/version?token={}", proxy.token());
    send(proxy.local_addr(), req("GET", &target))
        .await
        .assert_status(401);
    assert!(stub.state.paths().is_empty());
}

#[tokio::test]
async fn sign_in_sets_strict_httponly_cookie_and_redirects() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();

    let page = send(addr, req("GET", "/")).await;
    assert_eq!(page.status, 401);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text().contains("deltascope serve"), "{}", page.text());

    let target = link_path(&proxy.sign_in_link().expect("serving"));
    let resp = send(addr, req("GET", &target)).await;
    assert_eq!(resp.status, 303);
    assert_eq!(resp.header("location"), Some("/"));
    let cookie = resp.header("set-cookie").expect("a session cookie");
    assert!(
        cookie.starts_with(&format!("deltascope_session_{}=", addr.port())),
        "{cookie}"
    );
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(
        !cookie.contains(proxy.token()),
        "the cookie is not the token"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();

    let index = send(addr, req("GET", "/").header("Cookie", &pair)).await;
    assert_eq!(index.status, 200);
    assert!(index.text().contains("deltascope page"));
    assert!(index
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));

    let api = send(
        addr,
        req("GET", "/api/v1/pods").header("Cookie", &format!("other=1; {pair}")),
    )
    .await;
    assert_eq!(api.status, 200, "{}", api.text());
    assert_eq!(api.json()["path"], "/api/v1/pods");
}

#[tokio::test]
async fn assets_have_content_types_and_healthz_needs_no_auth() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    for (path, kind) in [
        ("/app_bg.wasm", "application/wasm"),
        ("/app.js", "text/javascript"),
        ("/style.css", "text/css"),
    ] {
        let resp = send(addr, req("GET", path)).await;
        assert_eq!(resp.status, 200, "{path}");
        assert!(
            resp.header("content-type").unwrap().starts_with(kind),
            "{path}"
        );
    }
    assert_eq!(send(addr, req("GET", "/missing.js")).await.status, 404);
    assert_eq!(send(addr, req("GET", "/.hidden")).await.status, 404);
    let health = send(addr, req("GET", "/healthz")).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
}

// ---- Host and Origin -----------------------------------------------------------

#[tokio::test]
async fn foreign_host_is_refused() {
    let (stub, proxy) = stub_and_proxy(|c| c.allow_hosts = vec!["dash.internal".into()]).await;
    let addr = proxy.local_addr();
    let port = addr.port();
    let token = proxy.token().to_owned();
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_owned(),
        format!("127.0.0.1:{}", port + 1),
        format!("localhost.evil.example:{port}"),
    ] {
        let resp = send(addr, req("GET", "/api/v1/pods").bearer(&token).host(&host)).await;
        resp.assert_status(403);
        let resp = send(addr, req("GET", "/healthz").host(&host)).await;
        resp.assert_status(403);
    }
    // No Host at all.
    send(addr, req("GET", "/api/v1/pods").bearer(&token).host(""))
        .await
        .assert_status(403);
    assert!(stub.state.paths().is_empty());
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("dash.internal:{port}"),
    ] {
        let resp = send(addr, req("GET", "/api/v1/pods").bearer(&token).host(&host)).await;
        assert_eq!(resp.status, 200, "{host}: {}", resp.text());
    }
}

#[tokio::test]
async fn foreign_origin_is_refused_for_get_and_post() {
    let (stub, proxy) = stub_and_proxy(|c| c.allow_writes = true).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    for origin in [
        "http://evil.example",
        "https://evil.example",
        "null",
        &format!("https://127.0.0.1:{}", addr.port()),
        &format!("http://127.0.0.1:{}", addr.port() + 1),
    ] {
        for method in ["GET", "POST"] {
            let resp = send(
                addr,
                req(method, "/api/v1/namespaces/default/configmaps")
                    .bearer(&token)
                    .header("Origin", origin)
                    .body("{}"),
            )
            .await;
            resp.assert_status(403);
            assert!(resp.header("access-control-allow-origin").is_none());
        }
    }
    assert!(stub.state.paths().is_empty());
    let own = send(
        addr,
        req("GET", "/api/v1/pods")
            .bearer(&token)
            .header("Origin", &format!("http://localhost:{}", addr.port())),
    )
    .await;
    assert_eq!(own.status, 200, "{}", own.text());
    // The stub sends a CORS wildcard and a cookie: neither comes through.
    assert!(own.header("access-control-allow-origin").is_none());
    assert!(own.header("set-cookie").is_none());
}

#[tokio::test]
async fn absolute_form_targets_must_name_us_too() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let resp = send(
        addr,
        req("GET", "http://evil.example/api/v1/pods").bearer(proxy.token()),
    )
    .await;
    resp.assert_status(403);
    assert!(stub.state.paths().is_empty());
    let ok = send(
        addr,
        req("GET", &format!("http://{addr}/api/v1/pods")).bearer(proxy.token()),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
}

#[tokio::test]
async fn index_html_needs_a_session_like_the_root() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let resp = send(proxy.local_addr(), req("GET", "/index.html")).await;
    assert_eq!(resp.status, 401);
    assert!(!resp.text().contains("deltascope page"));
    let resp = send(
        proxy.local_addr(),
        req("GET", "/index.html").bearer(proxy.token()),
    )
    .await;
    assert_eq!(resp.status, 200);
    assert!(resp.text().contains("deltascope page"));
}

#[tokio::test]
async fn compressed_bodies_pass_through_untouched() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let resp = send(
        proxy.local_addr(),
        req("GET", "/api/v1/gzipped")
            .bearer(proxy.token())
            .header("Accept-Encoding", "gzip"),
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-encoding"), Some("gzip"));
    assert_eq!(resp.body, GZIP_BYTES);
    let requests = stub.state.requests.lock().unwrap();
    assert_eq!(requests[0].2.get("accept-encoding").unwrap(), "gzip");
}

#[tokio::test]
async fn trunk_dev_loop_origin_needs_allow_host() {
    // `trunk serve` on :8081 rewrites Host to the backend but forwards the
    // page's Origin; the page's POSTs pass only with `--allow-host 127.0.0.1:8081`.
    let request = |addr: std::net::SocketAddr, token: &str| {
        req("POST", "/api/v1/namespaces/default/configmaps")
            .bearer(token)
            .header("Origin", "http://127.0.0.1:8081")
            .header("X-Forwarded-Host", "127.0.0.1:8081")
            .host(&addr.to_string())
            .body("{}")
    };
    let (_stub, strict) = stub_and_proxy(|c| c.allow_writes = true).await;
    send(
        strict.local_addr(),
        request(strict.local_addr(), strict.token()),
    )
    .await
    .assert_status(403);
    let (_stub, dev) = stub_and_proxy(|c| {
        c.allow_writes = true;
        c.allow_hosts = vec!["127.0.0.1:8081".into()];
    })
    .await;
    let resp = send(dev.local_addr(), request(dev.local_addr(), dev.token())).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
}

// ---- read-only ------------------------------------------------------------------

#[tokio::test]
async fn every_non_get_method_is_405_naming_allow_writes() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    for method in [
        "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND",
    ] {
        for path in [
            "/api/v1/namespaces/default/pods",
            "/apis/apps/v1/deployments",
            "/version",
        ] {
            let resp = send(addr, req(method, path).bearer(&token).body("{}")).await;
            let json = resp.assert_status(405);
            assert!(
                json["message"].as_str().unwrap().contains("--allow-writes"),
                "{json}"
            );
            assert!(resp.header("access-control-allow-methods").is_none());
        }
    }
    assert!(stub.state.paths().is_empty(), "{:?}", stub.state.paths());
    // GET and HEAD pass.
    assert_eq!(
        send(addr, req("GET", "/version").bearer(&token))
            .await
            .status,
        200
    );
    assert_eq!(
        send(addr, req("HEAD", "/version").bearer(&token))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn allow_writes_lets_writes_through() {
    let (stub, proxy) = stub_and_proxy(|c| c.allow_writes = true).await;
    let resp = send(
        proxy.local_addr(),
        req("POST", "/api/v1/namespaces/default/configmaps")
            .bearer(proxy.token())
            .body("{}"),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let requests = stub.state.requests.lock().unwrap();
    assert_eq!(requests[0].0, "POST");
}

// ---- paths ----------------------------------------------------------------------

#[tokio::test]
async fn path_tricks_are_refused() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    for path in [
        "/api/../_sim/fault",
        "/api/v1/../../_sim/fault",
        "/api/%2e%2e/_sim/fault",
        "/api/v1/%2E%2E/%2e%2e/_sim/churn",
        "/_sim/scale",
        "/api/v1/namespaces/x/pods/y/exec",
        "/api/v1/namespaces/x/pods/y/exec?command=sh",
        "/api/v1/namespaces/x/pods/y/attach",
        "/api/v1/namespaces/x/pods/y/portforward",
        "/api/v1/namespaces/x/pods/y/proxy",
        "/api/v1/namespaces/x/pods/y/proxy/metrics",
        "/api/v1/namespaces/x/services/s:80/proxy/",
        "/api/v1/nodes/n/proxy/logs",
        "/api/v1/proxy/namespaces/x/pods/y",
        "/api/v1/namespaces/x/pods/y/%65xec",
        "/api/v1/namespaces/x/pods/y/%2e%2e/y/exec",
        "/api/v1/namespaces/x/pods/y/./exec",
        "/api//v1/namespaces/x/pods/y//exec",
        "/apis/apps/v1/namespaces/x/pods/y/exec",
    ] {
        let resp = send(addr, req("GET", path).bearer(&token)).await;
        resp.assert_status(403);
        let resp = send(addr, req("POST", path).bearer(&token).body("{}")).await;
        assert!(
            resp.status == 403 || resp.status == 405,
            "{path}: {}",
            resp.status
        );
    }
    for path in [
        "/api/v1/namespaces%2fx/pods",
        "/api/v1/namespaces%2Fkube-system%2Fsecrets",
        "/api%2f..%2f_sim/fault",
        "/api/v1/%5c..",
        "/api/../../_sim/fault",
        "/api/v1/pods%zz",
    ] {
        send(addr, req("GET", path).bearer(&token))
            .await
            .assert_status(400);
    }
    assert!(stub.state.paths().is_empty(), "{:?}", stub.state.paths());
}

#[tokio::test]
async fn the_normalised_path_is_what_gets_forwarded() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();
    for (sent, forwarded) in [
        (
            "/api//v1/./namespaces/default/pods/",
            "/api/v1/namespaces/default/pods",
        ),
        (
            "/apis/apps/v1/x/../deployments",
            "/apis/apps/v1/deployments",
        ),
        (
            "/api/v1/namespaces/%64efault/pods",
            "/api/v1/namespaces/default/pods",
        ),
        (
            "/api/v1/pods?labelSelector=a%3Db&limit=5",
            "/api/v1/pods?labelSelector=a%3Db&limit=5",
        ),
        ("/openapi/v3", "/openapi/v3"),
    ] {
        let resp = send(addr, req("GET", sent).bearer(&token)).await;
        assert_eq!(resp.status, 200, "{sent}: {}", resp.text());
        let seen = stub.state.paths().pop().unwrap();
        assert_eq!(seen, forwarded, "{sent}");
    }
    // Our credentials never go upstream.
    let pair = sign_in_with_link(&proxy).await;
    send(
        addr,
        req("GET", "/api/v1/pods")
            .header("Cookie", &pair)
            .bearer(&token),
    )
    .await;
    for (_, _, headers) in stub.state.requests.lock().unwrap().iter() {
        assert!(headers.get("authorization").is_none());
        assert!(headers.get("cookie").is_none());
        assert_eq!(headers.get("host").unwrap(), &stub.addr.to_string());
    }
    // Paths outside the API allowlist are not forwarded at all.
    let before = stub.state.paths().len();
    for path in ["/metrics", "/logs/", "/livez", "/api2/v1/pods"] {
        let resp = send(addr, req("GET", path).bearer(&token)).await;
        assert_eq!(resp.status, 404, "{path}");
    }
    assert_eq!(stub.state.paths().len(), before);
}

#[tokio::test]
async fn sim_controls_do_not_exist_in_upstream_mode() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    for path in ["/_sim/fault", "/_sim/churn", "/_sim/scale", "/_sim"] {
        let resp = send(
            addr,
            req("POST", path)
                .bearer(proxy.token())
                .body("{\"kind\":\"restart\",\"count\":1}"),
        )
        .await;
        assert!(
            resp.status == 403 || resp.status == 404,
            "{path}: {}",
            resp.status
        );
    }
    assert!(stub.state.paths().is_empty());
}

#[tokio::test]
async fn demo_mode_routes_sim_controls_behind_auth() {
    let mut config = config(Upstream::Demo(deltascope_sim::SimConfig {
        initial_pods: 3,
        churn_per_sec: 0.0,
        ..Default::default()
    }));
    config.token = Some("demo-token-0123456789abcdef0123456789ab".into());
    let proxy = start_proxy(config).await;
    let addr = proxy.local_addr();
    assert!(proxy.sim().is_some());
    send(
        addr,
        req("POST", "/_sim/churn").body("{\"events_per_sec\":1}"),
    )
    .await
    .assert_status(401);
    send(addr, req("GET", "/api/v1/pods"))
        .await
        .assert_status(401);
    // Authenticated: the request passes every layer and reaches the sim.
    let resp = send(
        addr,
        req("POST", "/api/../_sim/churn")
            .bearer("demo-token-0123456789abcdef0123456789ab")
            .header("Content-Type", "application/json")
            .body("{\"events_per_sec\":1}"),
    )
    .await;
    assert!(![401, 403, 405].contains(&resp.status), "{}", resp.status);
    send(
        addr,
        req("PUT", "/_sim/churn").bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await
    .assert_status(405);
    send(
        addr,
        req("DELETE", "/api/v1/namespaces/default/pods/p")
            .bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await
    .assert_status(405);
}

// ---- Secrets --------------------------------------------------------------------

fn assert_no_secret_bytes(body: &str) {
    for needle in [
        SECRET_B64,
        &SECRET_B64[..12],
        SECRET_PLAIN,
        SECRET_DECODED,
        "hunter2",
    ] {
        assert!(!body.contains(needle), "{needle:?} leaked in {body}");
    }
}

#[tokio::test]
async fn secrets_are_redacted_in_get_list_table_and_metadata() {
    let (stub, proxy) = stub_and_proxy(|_| {}).await;
    let addr = proxy.local_addr();
    let token = proxy.token().to_owned();

    let get = send(
        addr,
        req("GET", "/api/v1/namespaces/default/secrets/s1").bearer(&token),
    )
    .await;
    assert_eq!(get.status, 200);
    assert_no_secret_bytes(&get.text());
    let json = get.json();
    assert_eq!(json["data"]["password"], "<redacted: 17 bytes>");
    assert_eq!(json["stringData"]["note"], "<redacted: 18 bytes>");
    assert_eq!(
        json["metadata"]["annotations"]["deltascope.io/redacted"],
        "true"
    );

    let list = send(addr, req("GET", "/api/v1/secrets").bearer(&token)).await;
    assert_eq!(list.status, 200);
    assert_no_secret_bytes(&list.text());
    let json = list.json();
    assert_eq!(json["items"].as_array().unwrap().len(), 2);
    assert_eq!(json["items"][1]["data"]["password"], "<redacted: 17 bytes>");

    let table = send(
        addr,
        req(
            "GET",
            "/api/v1/namespaces/default/secrets?includeObject=Object",
        )
        .bearer(&token)
        .header(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        ),
    )
    .await;
    assert_eq!(table.status, 200);
    assert_eq!(table.json()["kind"], "Table");
    assert_no_secret_bytes(&table.text());

    let meta = send(
        addr,
        req("GET", "/api/v1/namespaces/default/secrets")
            .bearer(&token)
            .header(
                "Accept",
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            ),
    )
    .await;
    assert_eq!(meta.status, 200);
    assert_eq!(meta.json()["kind"], "PartialObjectMetadataList");
    assert_no_secret_bytes(&meta.text());

    // Protobuf and gzip are not requested from upstream for Secrets.
    send(
        addr,
        req("GET", "/api/v1/secrets")
            .bearer(&token)
            .header("Accept", "application/vnd.kubernetes.protobuf")
            .header("Accept-Encoding", "gzip"),
    )
    .await;
    let requests = stub.state.requests.lock().unwrap();
    let (_, _, headers) = requests.last().unwrap();
    assert_eq!(headers.get("accept").unwrap(), "application/json");
    assert_eq!(headers.get("accept-encoding").unwrap(), "identity");
}

#[tokio::test]
async fn secrets_are_redacted_in_watch_events() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let resp = send(
        proxy.local_addr(),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets?watch=1&events=3&interval_ms=10",
        )
        .bearer(proxy.token()),
    )
    .await;
    assert_eq!(resp.status, 200);
    let text = resp.text();
    assert_no_secret_bytes(&text);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(event["object"]["data"]["password"], "<redacted: 17 bytes>");
    }
}

/// A Secret list big enough to be redacted on the blocking pool arrives whole
/// and redacted.
#[tokio::test]
async fn big_secret_lists_are_redacted_whole() {
    let (_stub, proxy) = stub_and_proxy(|_| {}).await;
    let items = 3_000;
    let list = send(
        proxy.local_addr(),
        req("GET", &format!("/api/v1/secrets?items={items}")).bearer(proxy.token()),
    )
    .await;
    assert_eq!(list.status, 200);
    // Redacted it is still past the 256 KiB it takes to go to the blocking pool.
    assert!(list.body.len() > 512 * 1024, "{} bytes", list.body.len());
    assert_no_secret_bytes(&list.text());
    let json = list.json();
    let got = json["items"].as_array().expect("items");
    assert_eq!(got.len(), items);
    for (n, item) in got.iter().enumerate() {
        assert_eq!(item["metadata"]["name"], format!("s{}", n + 1));
        assert_eq!(item["data"]["password"], "<redacted: 17 bytes>");
        assert_eq!(
            item["metadata"]["annotations"]["deltascope.io/redacted"],
            "true"
        );
    }
}

#[tokio::test]
async fn show_secrets_turns_redaction_off() {
    let (_stub, proxy) = stub_and_proxy(|c| c.show_secrets = true).await;
    let resp = send(
        proxy.local_addr(),
        req("GET", "/api/v1/namespaces/default/secrets/s1").bearer(proxy.token()),
    )
    .await;
    assert!(resp.text().contains(SECRET_B64));
}

// ---- upstream failures ----------------------------------------------------------

#[tokio::test]
async fn unreachable_upstream_is_502_naming_kubectl_proxy() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = format!("http://{closed}");
    let proxy = start_proxy(config(Upstream::Url(url.clone()))).await;
    let resp = send(
        proxy.local_addr(),
        req("GET", "/api/v1/pods").bearer(proxy.token()),
    )
    .await;
    let json = resp.assert_status(502);
    let message = json["message"].as_str().unwrap();
    assert!(message.contains("kubectl proxy"), "{message}");
    assert!(message.contains(&url), "{message}");
}
