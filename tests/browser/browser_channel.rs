//! Many resources kept live at once, in headless Chromium.
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

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::chain::{kubectl, start_serve_upstream, start_sim, KubectlProxy};
use support::live::{
    channel_state, digests_converge, kept_states, open_all, open_first_object, show,
    signed_in_demo, Cluster, Resource, SYNC,
};
use support::{browser_log, Browser};

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
    open_first_object(browser).await;
    // serve's strict Content-Security-Policy let the page do all of that.
    let violations: Vec<String> = browser_log(browser)
        .await
        .iter()
        .filter_map(|entry| entry["message"].as_str())
        .filter(|m| m.contains("Content Security Policy"))
        .map(str::to_owned)
        .collect();
    assert!(
        violations.is_empty(),
        "{what}: CSP violations: {violations:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resource_stays_live_on_one_channel_in_the_demo() {
    let (_server, browser, cluster, base) =
        signed_in_demo(&["--seed", "3", "--pods", "300", "--churn", "80"]).await;
    every_resource_on_one_channel(&browser, &base, &cluster, "demo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resource_stays_live_on_one_channel_behind_kubectl_proxy() {
    let (_sim, sim_addr) = start_sim(&["--seed", "4", "--pods", "300", "--churn", "80"]);
    let proxy = KubectlProxy::start(kubectl(), format!("http://{sim_addr}"));
    let (_serve, login_url) = start_serve_upstream(&proxy.url(), &[]);
    let browser = Browser::start().await;
    browser.client.goto(&login_url).await.expect("login");
    let base = login_url.split('?').next().expect("base").to_string();
    let cluster = Cluster {
        addr: sim_addr,
        bearer: None,
    };
    every_resource_on_one_channel(&browser, &base, &cluster, "chain").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_channel_four_watches_run_and_the_rest_say_paused() {
    let (_server, browser, cluster, base) = signed_in_demo(&[
        "--seed",
        "5",
        "--pods",
        "200",
        "--churn",
        "40",
        "--no-channel",
    ])
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_everything_live_then_a_smaller_capacity_stops_the_least_recent() {
    let (_server, browser, cluster, base) =
        signed_in_demo(&["--seed", "6", "--pods", "100", "--churn", "20"]).await;
    let resources = cluster.discovered();
    show(&browser, &base, &resources[0]).await;
    browser.wait_synced(&resources[0].name, SYNC).await;

    browser.click("[data-testid=settings]").await;
    browser
        .wait_for("discovery to offer every resource", SYNC, || async {
            let label = browser
                .script("const b = document.querySelector('[data-testid=keep-everything]'); return b && !b.disabled ? b.textContent : null;")
                .await;
            label.as_str().map(str::to_owned)
        })
        .await;
    browser.click("[data-testid=keep-everything]").await;
    let kept = browser
        .wait_for(
            "every discovered resource kept and watching",
            SYNC,
            || async {
                let kept = kept_states(&browser).await;
                (kept.len() == resources.len() && kept.iter().all(|(_, s)| s == "watching"))
                    .then_some(kept)
            },
        )
        .await;
    for resource in &resources {
        assert!(
            kept.iter().any(|(name, _)| name == &resource.name),
            "{} is kept: {kept:?}",
            resource.name
        );
    }
    // The one on screen stays; the others are the least recently shown.
    browser.type_into("[data-testid=kept-capacity]", "3").await;
    browser.click("[data-testid=kept-capacity-apply]").await;
    let kept = browser
        .wait_for("three kept", SYNC, || async {
            let kept = kept_states(&browser).await;
            (kept.len() == 3).then_some(kept)
        })
        .await;
    assert!(
        kept.iter().any(|(name, _)| name == &resources[0].name),
        "the resource on screen is still kept: {kept:?}"
    );
    let saved = browser
        .script("return localStorage.getItem('deltascope.keptCapacity');")
        .await;
    assert_eq!(saved, json!("3"), "the number is saved for the next load");
    let message = browser
        .attr("[data-testid=kept-capacity-message]", "class")
        .await;
    assert_eq!(message.as_deref(), Some("ok"));
}
