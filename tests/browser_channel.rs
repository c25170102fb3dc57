//! Many resources kept live at once, in headless Chromium (issue 18).
//! Browsers give an origin six HTTP/1.1 connections; a page that held one per
//! watch froze at the seventh resource. Here the page opens *every* resource
//! discovery lists (14 or more, the demo CRD included) one after another:
//!
//! - on `serve --demo` and on the chain `deltascope sim` ← real `kubectl
//!   proxy` ← `serve --upstream`, through the one multiplexed channel: each
//!   syncs within seconds, every kept one stays `watching`, the status bar
//!   says they share one channel, and once churn stops each one's digest
//!   equals the cluster's; an object view opens;
//! - on `serve --no-channel` (the page's fallback, as behind `trunk serve` in
//!   front of `kubectl proxy`): the shown resource always syncs, at most four
//!   watches hold connections, the rest say `paused` and why, and a paused
//!   one resumes — and converges — when shown again.
#![cfg(not(target_arch = "wasm32"))]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use support::chain::{kubectl, start_serve_upstream, start_sim, KubectlProxy};
use support::{http, Browser, DemoServer};

const SYNC: Duration = Duration::from_secs(30);

/// A resource as routes and hooks name it.
#[derive(Debug, Clone)]
struct Resource {
    /// `#/core/v1/pods`
    route: String,
    /// `pods`, `deployments.apps` (DESIGN §4 `data-resource`)
    name: String,
}

/// How the test reads the cluster: through serve (bearer) or the sim itself.
struct Cluster {
    addr: SocketAddr,
    bearer: Option<String>,
}

impl Cluster {
    fn get(&self, path: &str) -> Value {
        let auth = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("Authorization", a)])
            .unwrap_or_default();
        let (status, body) = http(self.addr, "GET", path, &headers, None);
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path}: not JSON: {e}"))
    }

    fn post(&self, path: &str, body: Value) {
        let auth = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(auth) = auth.as_deref() {
            headers.push(("Authorization", auth));
        }
        let body = body.to_string();
        let (status, reply) = http(self.addr, "POST", path, &headers, Some(body.as_bytes()));
        assert!(status < 300, "{path}: {}", String::from_utf8_lossy(&reply));
    }

    fn digest(&self, resource: &str) -> String {
        self.get(&format!("/_sim/digest?resource={resource}"))["digest"]
            .as_str()
            .expect("digest")
            .to_string()
    }

    /// Every resource discovery names that can be listed and watched.
    fn discovered(&self) -> Vec<Resource> {
        let mut found = Vec::new();
        let mut add = |group: &str, version: &str, list: &Value| {
            for r in list["resources"].as_array().into_iter().flatten() {
                let plural = r["name"].as_str().unwrap_or_default();
                let verbs: Vec<&str> = r["verbs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if plural.contains('/') || !verbs.contains(&"list") || !verbs.contains(&"watch") {
                    continue;
                }
                let (route_group, name) = if group.is_empty() {
                    ("core".to_string(), plural.to_string())
                } else {
                    (group.to_string(), format!("{plural}.{group}"))
                };
                found.push(Resource {
                    route: format!("#/{route_group}/{version}/{plural}"),
                    name,
                });
            }
        };
        add("", "v1", &self.get("/api/v1"));
        let groups = self.get("/apis");
        for group in groups["groups"].as_array().into_iter().flatten() {
            let gv = group["preferredVersion"]["groupVersion"]
                .as_str()
                .expect("groupVersion");
            let (name, version) = gv.split_once('/').expect("group/version");
            add(name, version, &self.get(&format!("/apis/{gv}")));
        }
        found
    }
}

async fn show(browser: &Browser, base: &str, resource: &Resource) {
    browser
        .client
        .goto(&format!("{base}{}", resource.route))
        .await
        .unwrap_or_else(|e| panic!("open {}: {e}", resource.route));
}

/// (resource, state) of every kept chip.
async fn kept_states(browser: &Browser) -> Vec<(String, String)> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
             .map(k => [k.dataset.resource, k.dataset.state, k.title]);",
        )
        .await;
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|k| {
            (
                k[0].as_str().unwrap_or_default().to_string(),
                k[1].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

async fn channel_state(browser: &Browser) -> (String, String) {
    let value = browser
        .script(
            "const c = document.querySelector('[data-testid=channel-state]');\
             return c ? [c.dataset.state, c.textContent] : ['', ''];",
        )
        .await;
    (
        value[0].as_str().unwrap_or_default().to_string(),
        value[1].as_str().unwrap_or_default().to_string(),
    )
}

/// Opens every resource one after another, each synced before the next.
async fn open_all(browser: &Browser, base: &str, resources: &[Resource]) {
    for resource in resources {
        show(browser, base, resource).await;
        browser.wait_synced(&resource.name, SYNC).await;
    }
}

/// Each resource shown again once churn has stopped: its digest converges to the cluster's.
async fn digests_converge(
    browser: &Browser,
    base: &str,
    cluster: &Cluster,
    resources: &[Resource],
) {
    for resource in resources {
        show(browser, base, resource).await;
        browser.wait_synced(&resource.name, SYNC).await;
        let server = cluster.digest(&resource.name);
        browser
            .wait_for(
                &format!("{}'s digest to equal the cluster's", resource.name),
                SYNC,
                || async {
                    let (_, _, _, digest) = browser.store_stats().await?;
                    (digest == server).then_some(())
                },
            )
            .await;
    }
}

async fn every_resource_on_one_channel(
    browser: &Browser,
    base: &str,
    cluster: &Cluster,
    what: &str,
) {
    let resources = cluster.discovered();
    assert!(
        resources.len() >= 14
            && resources
                .iter()
                .any(|r| r.name.contains("demo.deltascope.dev")),
        "discovery lists at least 14 resources, the demo CRD among them: {resources:?}"
    );
    open_all(browser, base, &resources).await;
    browser
        .wait_for("every kept resource watching", SYNC, || async {
            let kept = kept_states(browser).await;
            (kept.len() == resources.len() && kept.iter().all(|(_, s)| s == "watching"))
                .then_some(())
        })
        .await;
    let (state, words) = channel_state(browser).await;
    assert_eq!(state, "open", "{what}: the channel is open: {words}");
    assert!(
        words.contains(&format!("{} watches on one channel", resources.len())),
        "{what}: the status bar says they share one channel: {words}"
    );
    browser
        .screenshot(&format!("channel-{what}-all-kept.png"))
        .await;

    cluster.post("/_sim/churn", json!({ "events_per_sec": 0 }));
    tokio::time::sleep(Duration::from_millis(500)).await;
    digests_converge(browser, base, cluster, &resources).await;

    // The object view of a pod opens.
    let pods = &resources[resources
        .iter()
        .position(|r| r.name == "pods")
        .expect("pods")];
    show(browser, base, pods).await;
    browser.wait_synced("pods", SYNC).await;
    browser
        .script(
            "document.querySelector('tr[data-key]')\
             .dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));",
        )
        .await;
    browser
        .wait_for("an object view", SYNC, || async {
            browser.attr("[data-testid=object-view]", "data-key").await
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resource_stays_live_on_one_channel_in_the_demo() {
    let server = DemoServer::start(&["--seed", "3", "--pods", "300", "--churn", "80"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let cluster = Cluster {
        addr: server.addr,
        bearer: Some(server.token.clone()),
    };
    let base = format!("http://{}/", server.addr);
    every_resource_on_one_channel(&browser, &base, &cluster, "demo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resource_stays_live_on_one_channel_behind_kubectl_proxy() {
    let (_sim, sim_addr) = start_sim(&["--seed", "4", "--pods", "300", "--churn", "80"]);
    let proxy = KubectlProxy::start(kubectl(), format!("http://{sim_addr}"));
    let (_serve, login_url) = start_serve_upstream(&proxy.url(), &[]);
    let browser = Browser::start().await;
    browser.client.goto(&login_url).await.expect("login");
    let base = login_url.split("?token=").next().expect("base").to_string();
    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    every_resource_on_one_channel(&browser, &base, &cluster, "chain").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_channel_four_watches_run_and_the_rest_say_paused() {
    let server = DemoServer::start(&[
        "--seed",
        "5",
        "--pods",
        "200",
        "--churn",
        "40",
        "--no-channel",
    ]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let cluster = Cluster {
        addr: server.addr,
        bearer: Some(server.token.clone()),
    };
    let base = format!("http://{}/", server.addr);
    let resources: Vec<Resource> = cluster.discovered().into_iter().take(10).collect();
    assert_eq!(resources.len(), 10);
    open_all(&browser, &base, &resources).await;

    let kept = browser
        .wait_for("4 watching and 6 paused", SYNC, || async {
            let kept = kept_states(&browser).await;
            let watching = kept.iter().filter(|(_, s)| s == "watching").count();
            let paused = kept.iter().filter(|(_, s)| s == "paused").count();
            (kept.len() == 10 && watching == 4 && paused == 6).then_some(kept)
        })
        .await;
    // The four most recently shown hold the connections.
    for (name, state) in &kept {
        let shown_at = resources
            .iter()
            .position(|r| &r.name == name)
            .expect("kept");
        let expected = if shown_at >= 6 { "watching" } else { "paused" };
        assert_eq!(state, expected, "{name}: {kept:?}");
    }
    let title = browser
        .attr("[data-testid=kept-resource][data-state=paused]", "title")
        .await
        .expect("a paused chip");
    assert!(
        title.contains("connection limit"),
        "a paused chip says why: {title}"
    );
    let (state, words) = channel_state(&browser).await;
    assert_eq!(state, "unavailable", "{words}");
    assert!(
        words.contains("4 watches on connections of their own, 6 paused"),
        "{words}"
    );
    browser.screenshot("channel-fallback-paused.png").await;

    // The first resource (paused) resumes when shown, and converges.
    cluster.post("/_sim/churn", json!({ "events_per_sec": 0 }));
    digests_converge(&browser, &base, &cluster, &resources[..2]).await;
    let kept = kept_states(&browser).await;
    let watching: Vec<&String> = kept
        .iter()
        .filter(|(_, s)| s == "watching")
        .map(|(n, _)| n)
        .collect();
    assert!(
        watching.contains(&&resources[0].name) && watching.contains(&&resources[1].name),
        "the two shown last hold connections now: {kept:?}"
    );
    assert_eq!(watching.len(), 4, "still four at most: {kept:?}");
}
