//! Several clusters in one page (issue 42), in headless Chromium against
//! two `deltascope sim`s behind one `deltascope serve --context a --context
//! b` of a kubeconfig naming them, with the real `kubectl proxy` serve runs
//! for each: the default cluster's pods at `#/core/v1/pods`, the other's at
//! `#/b/core/v1/pods`, each table's digest equal to its own sim's while
//! both are kept live on the one channel; the cluster picker and `:ctx`
//! switch between them; b's `kubectl proxy` killed is restarted and b
//! recovers while a never stops watching; an object, its links and its
//! logs stay in their cluster; a reload keeps the cluster the address
//! names; and
//! the timeline lays out a lane per cluster and the delta list filters by
//! one; when b stops answering the page says so, and when another cluster
//! answers behind b's name (a new sim on its port), the page says so and
//! b's views start anew from the new cluster.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use support::chain::{
    kubectl_children, serve_address, served_clusters, sim_digest, start_serve_contexts, start_sim,
    start_sim_listening, write_kubeconfig,
};
use support::live::open_first_object;
use support::scratch::Scratch;
use support::{http, Browser};

const WAIT: Duration = Duration::from_secs(60);
/// Two different clusters, quiet unless the test changes them.
const SIM_A: [&str; 6] = ["--seed", "3", "--pods", "40", "--churn", "0"];
const SIM_B: [&str; 6] = ["--seed", "11", "--pods", "25", "--churn", "0"];

fn pods_digest(sim: SocketAddr) -> String {
    sim_digest(sim, "pods")
}

/// Waits until the table shows pods of `cluster` (`""`: the default one)
/// synced, watching, with the digest `digest`.
async fn wait_for_pods_of(browser: &Browser, cluster: &str, digest: &str) {
    let what = format!("pods of cluster {cluster:?} with digest {digest}");
    browser
        .wait_for(&what, WAIT, || async {
            let shown = browser
                .script(
                    "const e = document.querySelector('[data-testid=store-stats]');\
                     return e ? [e.dataset.cluster, e.dataset.resource, e.dataset.state, e.dataset.digest] : null;",
                )
                .await;
            let shown: Vec<String> = serde_json::from_value(shown).ok()?;
            (shown == [cluster, "pods", "watching", digest]).then_some(())
        })
        .await;
}

/// serve's word on cluster `name` (`GET /_deltascope/clusters`).
fn served_cluster(serve: SocketAddr, token: &str, name: &str) -> Value {
    served_clusters(serve, token)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("serve has no cluster {name}"))
}

fn scale(sim: SocketAddr, pods: usize) {
    let body = format!("{{\"pods\": {pods}}}");
    let (status, _) = http(
        sim,
        "POST",
        "/_sim/scale",
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    );
    assert_eq!(status, 200);
}

async fn hash(browser: &Browser) -> String {
    browser
        .script("return location.hash;")
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_in_one_page_each_table_its_own_clusters() {
    let (_sim_a, a) = start_sim(&SIM_A);
    let (sim_b, b) = start_sim(&SIM_B);
    let (digest_a, digest_b) = (pods_digest(a), pods_digest(b));
    assert_ne!(digest_a, digest_b, "two different clusters");
    let scratch = Scratch::new("browser_clusters", "kubeconfig");
    let kubeconfig = scratch.0.join("kubeconfig");
    write_kubeconfig(
        &kubeconfig,
        &[("a", format!("http://{a}")), ("b", format!("http://{b}"))],
    );
    let (serve, login, token) = start_serve_contexts(&kubeconfig, &["a", "b"], "off");
    let (base, serve_addr) = serve_address(&login);
    let browser = Browser::start().await;
    browser.client.goto(&login).await.expect("sign in");
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .expect("pods");

    // The default cluster at the addresses a single cluster always had.
    wait_for_pods_of(&browser, "", &digest_a).await;

    // The picker lists both, the default one chosen; choosing b shows
    // the same view there.
    let picker = browser
        .wait_for("the cluster picker", WAIT, || async {
            let value = browser
                .script(
                    "const s = document.querySelector('[data-testid=cluster-picker]');\
                     return s ? [s.value, Array.from(s.options).map(o => o.value)] : null;",
                )
                .await;
            serde_json::from_value::<(String, Vec<String>)>(value).ok()
        })
        .await;
    assert_eq!(picker, ("a".to_string(), vec!["a".into(), "b".into()]));
    browser.choose("[data-testid=cluster-picker]", "b").await;
    wait_for_pods_of(&browser, "b", &digest_b).await;
    assert_eq!(hash(&browser).await, "#/b/core/v1/pods");

    // Both kept live on the one channel, each following its own cluster.
    let kept = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
               .map(k => k.textContent);",
        )
        .await;
    let kept: Vec<String> = serde_json::from_value(kept).expect("kept list");
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().any(|k| k.contains("b: pods")), "{kept:?}");
    scale(b, 31);
    let grown_b = pods_digest(b);
    assert_ne!(grown_b, digest_b);
    wait_for_pods_of(&browser, "b", &grown_b).await;

    // The timeline lays out a lane per cluster; the delta list filters by one.
    browser.choose("[data-testid=lane-mode]", "cluster").await;
    let lanes = browser
        .wait_for("a lane per cluster", WAIT, || async {
            let value = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=timeline-lane]'))\
                       .map(l => [l.dataset.lane, Number(l.dataset.count)]);",
                )
                .await;
            let lanes: Vec<(String, u64)> = serde_json::from_value(value).ok()?;
            (lanes.len() == 2 && lanes.iter().all(|(_, n)| *n > 0)).then_some(lanes)
        })
        .await;
    let names: Vec<&str> = lanes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["(default cluster)", "b"], "{lanes:?}");
    browser.click("[data-testid=toggle-deltas]").await;
    browser.choose("[data-testid=delta-cluster]", "b").await;
    let shown = browser
        .wait_for("the delta list of b only", WAIT, || async {
            let value = browser
                .script(
                    "const rows = Array.from(document.querySelectorAll('.delta-list tr[data-delta-key]'));\
                     return rows.length ? rows.map(r => r.dataset.resource) : null;",
                )
                .await;
            let resources: Vec<String> = serde_json::from_value(value).ok()?;
            resources.iter().all(|r| r == "b: pods").then_some(resources)
        })
        .await;
    assert!(!shown.is_empty());
    browser.click("[data-testid=toggle-deltas]").await;

    // b's kubectl proxy killed: serve starts it again and b recovers, while
    // a's watch never stops.
    let children = kubectl_children(serve.0.id());
    assert_eq!(
        children.len(),
        2,
        "a kubectl proxy per context: {children:?}"
    );
    let (b_proxy, _) = children
        .iter()
        .find(|(_, command)| command.ends_with("--context b"))
        .unwrap_or_else(|| panic!("b's kubectl proxy among {children:?}"));
    let a_state = "return (Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
                     .find(k => k.dataset.resource === 'pods') || {dataset: {}}).dataset.state;";
    let killed = std::process::Command::new("kill")
        .args(["-9", &b_proxy.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    browser
        .wait_for("serve to start b's kubectl proxy again", WAIT, || async {
            assert_eq!(browser.script(a_state).await, "watching", "a kept watching");
            let b_now = served_cluster(serve_addr, &token, "b");
            (b_now["restarts"].as_u64() >= Some(1) && b_now["state"] == "up").then_some(())
        })
        .await;
    scale(b, 34);
    let recovered_b = pods_digest(b);
    wait_for_pods_of(&browser, "b", &recovered_b).await;
    assert_eq!(browser.script(a_state).await, "watching", "a kept watching");

    // An object of b opens in b, and its links and logs stay there.
    let key = open_first_object(&browser).await;
    let (namespace, name) = key.split_once('/').expect("a pod's key");
    let object_hash = format!("#/b/core/v1/pods/{namespace}/{name}");
    assert_eq!(
        browser
            .attr("[data-testid=object-view]", "data-cluster")
            .await
            .as_deref(),
        Some("b"),
        "the object view names its cluster"
    );
    assert!(hash(&browser).await.starts_with(&object_hash));
    let logs = browser
        .attr("[data-testid=open-logs]", "href")
        .await
        .expect("a pod has logs");
    assert_eq!(logs, format!("{object_hash}/log"));
    let (status, _) = http(
        b,
        "GET",
        &format!("/api/v1/namespaces/{namespace}/pods/{name}"),
        &[],
        None,
    );
    assert_eq!(status, 200, "the object is b's");

    // `:ctx a` goes back; a cluster serve does not have is refused with
    // the names it has.
    browser
        .client
        .goto(&format!("{base}#/b/core/v1/pods"))
        .await
        .expect("b's pods");
    browser.run_command("ctx a").await;
    wait_for_pods_of(&browser, "", &digest_a).await;
    assert_eq!(hash(&browser).await, "#/core/v1/pods");
    browser.run_command("ctx nowhere").await;
    let alert = browser.wait_text(".command-bar [role=alert]").await;
    assert!(alert.contains("a, b"), "{alert}");

    // A reload opens the cluster the address names.
    browser
        .client
        .goto(&format!("{base}#/b/core/v1/pods"))
        .await
        .expect("b's pods");
    browser.client.refresh().await.expect("reload");
    wait_for_pods_of(&browser, "b", &recovered_b).await;
    browser.screenshot("clusters-b.png").await;

    // Another cluster behind b's name: the page says so, and b's pods are
    // the new cluster's alone (a view started anew holds one delta per
    // object it listed, none of the old cluster's).
    // (b down meanwhile: the page says which cluster and why.)
    drop(sim_b);
    let down = browser.wait_text("[data-testid=cluster-down]").await;
    assert!(down.contains("the cluster b does not answer"), "{down}");
    let (_new_b, at) = start_sim_listening(&b.to_string(), &SIM_B);
    assert_eq!(at, b, "the new sim listens where the old one did");
    let words = browser.wait_text("[data-testid=cluster-changed]").await;
    assert!(words.contains("the cluster behind b changed"), "{words}");
    wait_for_pods_of(&browser, "b", &pods_digest(b)).await;
    let (held, count) = browser
        .wait_for("b's view started anew", WAIT, || async {
            let value = browser
                .script(
                    "const h = document.querySelector('[data-testid=history-stats]');\
                     const s = document.querySelector('[data-testid=store-stats]');\
                     return h && s ? [h.dataset.held, s.dataset.count] : null;",
                )
                .await;
            serde_json::from_value::<(String, String)>(value)
                .ok()
                .filter(|(held, count)| held == count)
        })
        .await;
    assert_eq!((held.as_str(), count.as_str()), ("25", "25"));
    browser.client.close().await.expect("close");
}
