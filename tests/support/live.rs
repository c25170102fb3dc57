//! Helpers for browser tests that keep many resources live: the cluster as
//! the test reads it (digests, discovery, `/_sim` controls), opening
//! resources one after another, and reading the kept chips and the
//! channel's state from the page.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::{http, Browser, DemoServer};

/// How long one resource may take to sync, or a digest to converge.
pub const SYNC: Duration = Duration::from_secs(30);

/// A resource as routes and hooks name it.
#[derive(Debug, Clone)]
pub struct Resource {
    /// `#/core/v1/pods`
    pub route: String,
    /// `pods`, `deployments.apps` (`data-resource`, docs/contracts.md)
    pub name: String,
}

/// How the test reads the cluster: through serve (bearer) or the sim itself.
pub struct Cluster {
    pub addr: SocketAddr,
    pub bearer: Option<String>,
}

impl Cluster {
    pub fn get(&self, path: &str) -> Value {
        let auth = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("Authorization", a)])
            .unwrap_or_default();
        let (status, body) = http(self.addr, "GET", path, &headers, None);
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path}: not JSON: {e}"))
    }

    pub fn post(&self, path: &str, body: Value) {
        let auth = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(auth) = auth.as_deref() {
            headers.push(("Authorization", auth));
        }
        let body = body.to_string();
        let (status, reply) = http(self.addr, "POST", path, &headers, Some(body.as_bytes()));
        assert!(status < 300, "{path}: {}", String::from_utf8_lossy(&reply));
    }

    pub fn digest(&self, resource: &str) -> String {
        self.get(&format!("/_sim/digest?resource={resource}"))["digest"]
            .as_str()
            .expect("digest")
            .to_string()
    }

    /// Every resource discovery names that can be listed and watched.
    pub fn discovered(&self) -> Vec<Resource> {
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

pub async fn show(browser: &Browser, base: &str, resource: &Resource) {
    browser
        .client
        .goto(&format!("{base}{}", resource.route))
        .await
        .unwrap_or_else(|e| panic!("open {}: {e}", resource.route));
}

/// (resource, state) of every kept chip.
pub async fn kept_states(browser: &Browser) -> Vec<(String, String)> {
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

pub async fn channel_state(browser: &Browser) -> (String, String) {
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
pub async fn open_all(browser: &Browser, base: &str, resources: &[Resource]) {
    for resource in resources {
        show(browser, base, resource).await;
        browser.wait_synced(&resource.name, SYNC).await;
    }
}

/// Each resource shown again once churn has stopped: its digest converges to the cluster's.
pub async fn digests_converge(
    browser: &Browser,
    base: &str,
    cluster: &Cluster,
    resources: &[Resource],
) {
    for resource in resources {
        show(browser, base, resource).await;
        browser.wait_synced(&resource.name, SYNC).await;
        // The cluster's digest is read again each time: just after churn
        // stops, the sim may still be making writes it owed.
        browser
            .wait_for(
                &format!("{}'s digest to equal the cluster's", resource.name),
                SYNC,
                || async {
                    let server = cluster.digest(&resource.name);
                    let (_, _, _, digest) = browser.store_stats().await?;
                    (digest == server).then_some(())
                },
            )
            .await;
    }
}

/// `serve --demo ARGS` with a browser signed in to it: the server, the
/// browser, the cluster as the test reads it (bearer) and the page's base URL.
pub async fn signed_in_demo(args: &[&str]) -> (DemoServer, Browser, Cluster, String) {
    let server = DemoServer::start(args);
    let browser = Browser::start().await;
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("sign in");
    let cluster = Cluster {
        addr: server.addr,
        bearer: Some(server.token.clone()),
    };
    let base = format!("http://{}/", server.addr);
    (server, browser, cluster, base)
}

/// Opens the object view of the table's first row (a double click); its key.
pub async fn open_first_object(browser: &Browser) -> String {
    browser
        .script(
            "document.querySelector('tr[data-key]')\
             .dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));",
        )
        .await;
    browser
        .wait_for("the object view", SYNC, || async {
            browser.attr("[data-testid=object-view]", "data-key").await
        })
        .await
}
