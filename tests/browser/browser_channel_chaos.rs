//! Chaos through the page's channel, in headless Chromium on the
//! chain `deltascope sim` ← real `kubectl proxy` ← `deltascope serve
//! --upstream` ← a TCP relay the test controls ← the page, with eight
//! resources kept live and churn running:
//!
//! 1. the channel is cut mid-stream (the relay drops every connection): the
//!    status bar says the channel broke, in words, and every kept resource
//!    is watching again without a reload;
//! 2. one watch among many gets a 410 (its resource's watches expire) and
//!    another a 403 (its permission taken away for two requests): those two
//!    relist or retry, while the resource on screen is never disturbed (it
//!    stays watching, with no relist);
//! 3. `kubectl proxy` is killed and started again;
//! 4. serve is restarted (same token): the page's session is gone, the page
//!    says so, and signing in again from another window brings every kept
//!    resource back, without reloading the page or losing its history.
//!
//! After all that, with churn stopped, every kept resource's digest equals
//! the cluster's. (A reader that stops reading one stream is covered natively
//! in `proxy/tests/integration/serve_channel.rs`: serve ends that stream as too slow.)
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use support::chain::{kubectl, start_serve_upstream, start_sim, KubectlProxy};
use support::live::{
    channel_state, digests_converge, kept_states, open_all, Cluster, Resource, SYNC,
};
use support::relay::Relay;
use support::sign_in::link_through;
use support::Browser;

const TOKEN: &str = "chaos-token-0123456789abcdef0123456789abcdef";

fn serve_addr(login_url: &str) -> SocketAddr {
    login_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .expect("serve's address in its URL")
}

/// Records every change of the channel's state and of the shown resource's
/// state and relist count, so short-lived states are not missed between polls.
const RECORDER: &str = r#"
window.__seen = [];
const sample = () => {
  const c = document.querySelector('[data-testid=channel-state]');
  const s = document.querySelector('[data-testid=store-stats]');
  const n = document.querySelector('.status-bar .counters');
  const entry = [c ? c.dataset.state : '', c ? c.textContent : '', s ? s.dataset.resource : '',
    s ? s.dataset.state : '', n ? n.textContent : ''].join('|');
  if (window.__seen[window.__seen.length - 1] !== entry) window.__seen.push(entry);
};
new MutationObserver(sample).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
sample();
"#;

async fn seen(browser: &Browser) -> Vec<String> {
    serde_json::from_value(browser.script("return window.__seen || [];").await).unwrap_or_default()
}

/// The shown resource's "N relists" from the status bar.
async fn relist_count(browser: &Browser) -> String {
    let text = browser
        .script("const n = document.querySelector('.status-bar .counters'); return n ? n.textContent : '';")
        .await;
    text.as_str()
        .and_then(|t| t.split(" · ").nth(1))
        .unwrap_or_default()
        .to_string()
}

async fn all_watching(browser: &Browser, count: usize, what: &str) {
    browser
        .wait_for(what, Duration::from_secs(60), || async {
            let kept = kept_states(browser).await;
            (kept.len() == count && kept.iter().all(|(_, s)| s == "watching")).then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kept_resource_survives_channel_cuts_and_restarts() {
    let (_sim, sim_addr) = start_sim(&["--seed", "9", "--pods", "300", "--churn", "60"]);
    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    let mut proxy = KubectlProxy::start(kubectl(), format!("http://{sim_addr}"));
    let relay = Relay::start().await;
    let allow = relay.addr.to_string();
    let serve_args = ["--token", TOKEN, "--allow-host", allow.as_str()];
    let (serve, login_url) = start_serve_upstream(&proxy.url(), &serve_args);
    relay.point_at(serve_addr(&login_url));
    let base = format!("http://{}/", relay.addr);
    let login = link_through(&base, &login_url);

    let browser = Browser::start().await;
    browser.client.goto(&login).await.expect("login");
    let wanted = [
        "pods",
        "deployments.apps",
        "replicasets.apps",
        "services",
        "configmaps",
        "events",
        "namespaces",
        "widgets.demo.deltascope.dev",
    ];
    let resources: Vec<Resource> = cluster
        .discovered()
        .into_iter()
        .filter(|r| wanted.contains(&r.name.as_str()))
        .collect();
    assert_eq!(resources.len(), wanted.len(), "{resources:?}");
    // pods last: it stays on screen while the others are hit.
    let mut order = resources.clone();
    order.sort_by_key(|r| r.name == "pods");
    open_all(&browser, &base, &order).await;
    all_watching(&browser, wanted.len(), "all kept resources watching").await;
    browser.script(RECORDER).await;

    // 1. The channel cut mid-stream.
    let cut = relay.cut();
    assert!(cut >= 1, "the page had a connection open");
    // The page notices the cut (its channel read fails) and says so in words…
    browser
        .wait_for("the status bar to say the channel broke", SYNC, || async {
            seen(&browser)
                .await
                .iter()
                .any(|e| e.starts_with("broken|channel to deltascope serve broken since"))
                .then_some(())
        })
        .await;
    // …then reconnects, and every kept resource watches again.
    browser
        .wait_for("the channel open again", SYNC, || async {
            (channel_state(&browser).await.0 == "open").then_some(())
        })
        .await;
    all_watching(&browser, wanted.len(), "watching again after the cut").await;

    // 2. A 410 on one watch and a 403 on another; pods (on screen) untouched.
    browser.script(RECORDER).await;
    let relists_before = relist_count(&browser).await;
    let fault = |body| cluster.post("/_sim/fault", body);
    fault(json!({"kind": "expire-watches", "resource": "deployments.apps"}));
    fault(json!({"kind": "forbid", "resource": "services", "count": 2}));
    fault(json!({"kind": "expire-watches", "resource": "services"}));
    browser
        .wait_for("services to report the 403", SYNC, || async {
            let kept = kept_states(&browser).await;
            kept.iter()
                .any(|(n, s)| n == "services" && (s == "error" || s == "backoff"))
                .then_some(())
        })
        .await;
    all_watching(
        &browser,
        wanted.len(),
        "watching again after the 410 and 403",
    )
    .await;
    let shown: Vec<String> = seen(&browser)
        .await
        .into_iter()
        .filter(|e| e.contains("|pods|"))
        .collect();
    assert!(
        shown.iter().all(|e| e.contains("|pods|watching|")),
        "the resource on screen stayed watching while others failed: {shown:#?}"
    );
    assert_eq!(
        relists_before,
        relist_count(&browser).await,
        "pods did not relist"
    );

    // 3. kubectl proxy killed and restarted.
    proxy.restart();
    all_watching(
        &browser,
        wanted.len(),
        "watching again after kubectl proxy restarted",
    )
    .await;

    // 4. serve restarted with the same token: sign in again from another window.
    drop(serve);
    let (_serve, login_url) = start_serve_upstream(&proxy.url(), &serve_args);
    relay.point_at(serve_addr(&login_url));
    relay.cut();
    browser
        .wait_for("the page to say it is not signed in", SYNC, || async {
            let kept = kept_states(&browser).await;
            kept.iter().any(|(_, s)| s == "error").then_some(())
        })
        .await;
    let page = browser.client.window().await.expect("this window");
    let other = browser
        .client
        .new_window(false)
        .await
        .expect("a new window");
    browser
        .client
        .switch_to_window(other.handle)
        .await
        .expect("switch");
    // The restarted serve's own link: the first one was spent.
    let login = link_through(&base, &login_url);
    browser.client.goto(&login).await.expect("sign in again");
    browser.client.close_window().await.expect("close it");
    browser
        .client
        .switch_to_window(page)
        .await
        .expect("back to the page");
    all_watching(
        &browser,
        wanted.len(),
        "watching again after serve restarted",
    )
    .await;
    browser.screenshot("channel-chaos-recovered.png").await;

    cluster.post("/_sim/churn", json!({ "events_per_sec": 0 }));
    digests_converge(&browser, &base, &cluster, &resources).await;
}
