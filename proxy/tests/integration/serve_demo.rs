//! `deltascope serve --demo`: the same layers in front of the in-process
//! simulated cluster. Lists and watches reach the sim, `/_sim/*` works only
//! when authenticated, Secrets from the sim are redacted, and closing the
//! browser side closes the sim's watch (observed with `Sim::open_watches`).

use crate::serve_support;

use std::time::{Duration, Instant};

use deltascope_proxy::serve::{Running, Upstream};
use deltascope_sim::SimConfig;
use serve_support::*;

/// Values of the sim's Secrets (base64 of "deltascope" and the password).
const SIM_SECRET_VALUES: [&str; 2] = ["ZGVsdGFzY29wZQ==", "c2ltdWxhdGVkLW5vdC1hLXJlYWwtc2VjcmV0"];

async fn demo() -> Running {
    let mut config = config(Upstream::Demo(SimConfig {
        initial_pods: 12,
        churn_per_sec: 0.0,
        ..SimConfig::default()
    }));
    config.token = Some("demo-token-0123456789abcdef0123456789ab".into());
    start_proxy(config).await
}

#[tokio::test]
async fn lists_and_sim_controls_reach_the_sim_when_authenticated() {
    let proxy = demo().await;
    let addr = proxy.local_addr();
    send(addr, req("GET", "/api/v1/pods"))
        .await
        .assert_status(401);
    send(
        addr,
        req("POST", "/_sim/churn").body("{\"events_per_sec\":0}"),
    )
    .await
    .assert_status(401);

    let version = send(
        addr,
        req("GET", "/version").bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    assert_eq!(version.status, 200, "{}", version.text());

    let pods = send(
        addr,
        req("GET", "/api/v1/pods").bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    assert_eq!(pods.status, 200, "{}", pods.text());
    let items = pods.json()["items"].as_array().unwrap().len();
    assert!(items >= 12, "{items} pods");

    let scale = send(
        addr,
        req("POST", "/api/../_sim/scale")
            .bearer("demo-token-0123456789abcdef0123456789ab")
            .header("Content-Type", "application/json")
            .body("{\"pods\":20}"),
    )
    .await;
    assert!(scale.status < 300, "{}: {}", scale.status, scale.text());
    send(
        addr,
        req("DELETE", "/api/v1/namespaces/default/pods/x")
            .bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await
    .assert_status(405);
    send(
        addr,
        req("GET", "/api/v1/namespaces/default/pods/x/exec")
            .bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await
    .assert_status(403);
}

#[tokio::test]
async fn sim_secrets_are_redacted() {
    let proxy = demo().await;
    let addr = proxy.local_addr();
    for (path, accept) in [
        ("/api/v1/secrets", "application/json"),
        (
            "/api/v1/secrets",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        ),
        (
            "/api/v1/secrets?includeObject=Object",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        ),
        (
            "/api/v1/secrets",
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        ),
    ] {
        let resp = send(
            addr,
            req("GET", path)
                .bearer("demo-token-0123456789abcdef0123456789ab")
                .header("Accept", accept)
                .header("Accept-Encoding", "gzip"),
        )
        .await;
        assert_eq!(resp.status, 200, "{path} {accept}: {}", resp.text());
        let text = resp.text();
        for value in SIM_SECRET_VALUES {
            assert!(!text.contains(value), "{value} leaked for {accept}: {text}");
        }
    }
    // A single Secret by name, and a watch that starts with the existing ones.
    let list = send(
        addr,
        req("GET", "/api/v1/secrets").bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    let first = &list.json()["items"][0]["metadata"];
    let one = format!(
        "/api/v1/namespaces/{}/secrets/{}",
        first["namespace"].as_str().unwrap(),
        first["name"].as_str().unwrap()
    );
    let resp = send(
        addr,
        req("GET", &one).bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let json = resp.json();
    assert_eq!(
        json["metadata"]["annotations"]["deltascope.io/redacted"],
        "true"
    );
    assert!(json["data"]["password"]
        .as_str()
        .unwrap()
        .starts_with("<redacted: "));

    let mut stream = open(
        addr,
        req(
            "GET",
            "/api/v1/secrets?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        )
        .bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    let mut buf = Vec::new();
    read_occurrences(
        &mut stream,
        &mut buf,
        "\"type\":\"ADDED\"",
        2,
        Duration::from_secs(10),
    )
    .await;
    let text = String::from_utf8_lossy(&buf);
    for value in SIM_SECRET_VALUES {
        assert!(!text.contains(value), "{value} leaked in watch: {text}");
    }
}

#[tokio::test]
async fn closing_the_browser_side_closes_the_sim_watch() {
    let proxy = demo().await;
    let sim = proxy.sim().unwrap().clone();
    let addr = proxy.local_addr();
    assert_eq!(sim.open_watches(), 0);
    let mut stream = open(
        addr,
        req(
            "GET",
            "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        )
        .bearer("demo-token-0123456789abcdef0123456789ab"),
    )
    .await;
    let mut buf = Vec::new();
    read_occurrences(
        &mut stream,
        &mut buf,
        "\"type\":\"ADDED\"",
        1,
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(sim.open_watches(), 1);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.open_watches() != 0 {
        assert!(Instant::now() < deadline, "the sim still serves the watch");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
