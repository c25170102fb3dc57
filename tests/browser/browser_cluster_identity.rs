//! The browser's stored history kept per cluster (ARCHITECTURE.md, *The
//! browser's database, one per cluster*), in headless Chromium against
//! `deltascope sim` ← `deltascope serve --upstream`. The page keeps pods and
//! stores them; the sim is then replaced on the same port by another one —
//! the same seed, so the same objects by name, but another cluster (another
//! `kube-system` uid). The page notices when its watch comes back, says
//! "the cluster behind default changed" and starts anew: its pods are the
//! new cluster's (digest equal to the new sim's), a pod's History holds the
//! new cluster's version only, and the settings list the old cluster's
//! stored data apart, forgettable. A swap while no tab is open is noticed
//! at load the same way. A cluster that forbids reading namespaces is
//! stored as an unidentified one, and the settings say so.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use support::chain::{sim_digest, start_serve_upstream, start_sim, start_sim_listening};
use support::live::open_first_object;
use support::{http, Browser, ChildGuard};

const WAIT: Duration = Duration::from_secs(60);
/// One seed and no churn: every sim started with these holds the same
/// objects by name, and nothing changes unless the test changes it.
const QUIET: [&str; 6] = ["--seed", "7", "--pods", "30", "--churn", "0"];

fn sim_get(sim: SocketAddr, path: &str) -> Value {
    let (status, body) = http(sim, "GET", path, &[], None);
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("JSON")
}

fn kube_system_uid(sim: SocketAddr) -> String {
    sim_get(sim, "/api/v1/namespaces/kube-system")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string()
}

fn pods_digest(sim: SocketAddr) -> String {
    sim_digest(sim, "pods")
}

/// Replaces the sim behind `sim` with a new one on the same port.
fn replace_sim(old: ChildGuard, sim: SocketAddr) -> ChildGuard {
    drop(old);
    std::thread::sleep(Duration::from_millis(300));
    let (new, at) = start_sim_listening(&sim.to_string(), &QUIET);
    assert_eq!(at, sim, "the new sim listens where the old one did");
    new
}

async fn open_pods(browser: &Browser, base: &str) {
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .expect("pods");
    browser.wait_synced("pods", WAIT).await;
}

/// Opens the settings and waits until pods are stored for the cluster:
/// the stored cluster's identity.
async fn stored_pods_cluster(browser: &Browser) -> String {
    browser.click("[data-testid=settings]").await;
    let identity = browser
        .wait_for("pods stored for a known cluster", WAIT, || async {
            let value = browser
                .script(
                    "const c = document.querySelector('[data-testid=stored-cluster]');\
                     const i = Array.from(document.querySelectorAll('[data-testid=stored-item]'))\
                       .find(i => i.dataset.resource === 'pods');\
                     return c && i && Number(i.dataset.objects) > 0 ? c.dataset.identity : null;",
                )
                .await;
            value.as_str().map(str::to_string)
        })
        .await;
    browser.click("[data-testid=settings-close]").await;
    identity
}

/// The other clusters the settings list: (identity, views).
async fn other_clusters(browser: &Browser) -> Vec<(String, u64)> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=stored-other-cluster]'))\
               .map(o => [o.dataset.identity, Number(o.dataset.views)]);",
        )
        .await;
    serde_json::from_value(value).unwrap_or_default()
}

async fn cluster_changed_words(browser: &Browser) -> String {
    browser.wait_text("[data-testid=cluster-changed]").await
}

/// The versions the first pod's History shows.
async fn first_pod_versions(browser: &Browser) -> usize {
    open_first_object(browser).await;
    browser
        .wait_for("the pod's History", WAIT, || async {
            browser
                .script(
                    "const tab = Array.from(document.querySelectorAll('.object-view [role=tab]'))\
                       .find(b => b.textContent.startsWith('History'));\
                     if (!tab) return null; tab.click();\
                     const n = document.querySelectorAll('[data-testid=object-delta]').length;\
                     return n > 0 ? n : null;",
                )
                .await
                .as_u64()
        })
        .await as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_cluster_behind_the_same_address_is_never_mixed_with_the_first() {
    let (first_sim, sim) = start_sim(&QUIET);
    let first_uid = kube_system_uid(sim);
    let (_serve, login) = start_serve_upstream(&format!("http://{sim}"), &[]);
    let base = login.split("?code=").next().expect("base").to_string();
    let browser = Browser::start().await;
    browser.client.goto(&login).await.expect("sign in");
    open_pods(&browser, &base).await;
    assert_eq!(stored_pods_cluster(&browser).await, first_uid);

    // Another cluster behind the same address, while the page is open.
    let second_sim = replace_sim(first_sim, sim);
    let second_uid = kube_system_uid(sim);
    assert_ne!(first_uid, second_uid, "each sim is its own cluster");
    let words = cluster_changed_words(&browser).await;
    assert!(
        words.starts_with("the cluster behind default changed")
            && words.contains(&first_uid[..8])
            && words.contains(&second_uid[..8]),
        "{words}"
    );
    browser.wait_synced("pods", WAIT).await;
    let digest = pods_digest(sim);
    browser
        .wait_for("the new cluster's pods", WAIT, || async {
            let (_, synced, _, shown) = browser.store_stats().await?;
            (synced == "true" && shown == digest).then_some(())
        })
        .await;
    assert_eq!(
        first_pod_versions(&browser).await,
        1,
        "a pod's History holds the new cluster's list only, no version the old cluster's page stored"
    );
    browser.screenshot("cluster-changed.png").await;
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .ok();
    assert_eq!(stored_pods_cluster(&browser).await, second_uid);
    browser.click("[data-testid=settings]").await;
    let others = browser
        .wait_for("the first cluster listed apart", WAIT, || async {
            let others = other_clusters(&browser).await;
            (!others.is_empty()).then_some(others)
        })
        .await;
    assert_eq!(others.len(), 1, "{others:?}");
    assert_eq!(others[0].0, first_uid);
    assert!(others[0].1 >= 1, "its stored views: {others:?}");

    // A third cluster while no tab is open: noticed at load.
    browser.client.goto("about:blank").await.expect("leave");
    let _third_sim = replace_sim(second_sim, sim);
    let third_uid = kube_system_uid(sim);
    open_pods(&browser, &base).await;
    let words = cluster_changed_words(&browser).await;
    assert!(
        words.contains(&second_uid[..8]) && words.contains(&third_uid[..8]),
        "{words}"
    );
    assert_eq!(stored_pods_cluster(&browser).await, third_uid);
    browser.click("[data-testid=settings]").await;
    let others = browser
        .wait_for("both earlier clusters listed apart", WAIT, || async {
            let others = other_clusters(&browser).await;
            (others.len() == 2).then_some(others)
        })
        .await;
    let mut identities: Vec<&str> = others.iter().map(|(id, _)| id.as_str()).collect();
    identities.sort();
    let mut expected = [first_uid.as_str(), second_uid.as_str()];
    expected.sort();
    assert_eq!(identities, expected);

    // Forgetting one deletes its database and its row.
    browser.click("[data-testid=forget-other-cluster]").await;
    browser
        .wait_for("one other cluster left", WAIT, || async {
            (other_clusters(&browser).await.len() == 1).then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_will_not_say_who_it_is_is_stored_as_unidentified_and_said_so() {
    let mut args = QUIET.to_vec();
    args.extend(["--forbid", "namespaces"]);
    let (_sim, sim) = start_sim(&args);
    let (_serve, login) = start_serve_upstream(&format!("http://{sim}"), &[]);
    let base = login.split("?code=").next().expect("base").to_string();
    let browser = Browser::start().await;
    browser.client.goto(&login).await.expect("sign in");
    open_pods(&browser, &base).await;
    assert_eq!(stored_pods_cluster(&browser).await, "unidentified");
    browser.click("[data-testid=settings]").await;
    let notices = browser
        .wait_for("the settings to say why", WAIT, || async {
            let value = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=stored-notice]'))\
                       .map(n => n.textContent).join('\\n');",
                )
                .await;
            value
                .as_str()
                .filter(|text| text.contains("does not say who it is"))
                .map(str::to_string)
        })
        .await;
    assert!(notices.contains("forbidden (403)"), "{notices}");
}
