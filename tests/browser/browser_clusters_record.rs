//! serve's record of every cluster in one page (issue 42), in headless
//! Chromium against two `deltascope sim`s behind one `deltascope serve
//! --context a --context b --history sqlite:…` with the real `kubectl
//! proxy` serve runs for each: a pod of b changed twice before the page
//! opened shows the first change, recorded by serve under b's identity, in its
//! History at `#/b/core/v1/pods/NS/NAME?tab=history`, and the status bar
//! says serve records b; when another cluster answers behind b's name (a
//! new sim on its port), the page says so, serve records the new cluster
//! apart, and the object's History holds none of the old cluster's
//! versions while serve's summary still lists the old record. b's views
//! are stored in the browser in b's own database (the settings list it by
//! b's identity) and b's table comes back warm after a reload; after the
//! change, the settings list b's old database apart from the new one's.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::chain::{
    serve_address, serve_get, served_clusters, start_serve_contexts, start_sim,
    start_sim_listening, write_kubeconfig,
};
use support::scratch::{unix_ms, Scratch};
use support::{devtools, http, Browser};

const WAIT: Duration = Duration::from_secs(60);
const SIM_A: [&str; 6] = ["--seed", "3", "--pods", "20", "--churn", "0"];
const SIM_B: [&str; 6] = ["--seed", "11", "--pods", "15", "--churn", "0"];
/// The manager of the change made before the page opens.
const MANAGER: &str = "record-test";

/// `GET path` of serve, signed in with `token`: the status and the text.
fn serve_text(serve: SocketAddr, token: &str, path: &str) -> (u16, String) {
    let (status, body) = serve_get(serve, token, path);
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Waits until `check` of serve's answer to `path` holds.
fn wait_for_serve(serve: SocketAddr, token: &str, path: &str, check: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = serve_text(serve, token, path);
        if status == 200 && check(&body) {
            return;
        }
        assert!(Instant::now() < deadline, "{path}: {status} {body}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The first pod a sim lists: its namespace and name.
fn first_pod(sim: SocketAddr) -> (String, String) {
    let (status, body) = http(sim, "GET", "/api/v1/pods", &[], None);
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("a pod list");
    let meta = &list["items"][0]["metadata"];
    let text = |field: &str| meta[field].as_str().expect(field).to_string();
    (text("namespace"), text("name"))
}

/// Installed before a load: each cluster and resource `store-stats` shows
/// warm (restored from the browser's database, not yet synced).
const WARM_RECORDER: &str = "window.__warm = [];\
    new MutationObserver(() => { const e = document.querySelector('[data-testid=store-stats]');\
      if (e && e.dataset.warm === 'true') window.__warm.push(e.dataset.cluster + ':' + e.dataset.resource); })\
      .observe(document, {subtree: true, childList: true, attributes: true});";

/// What the settings' *Stored in this browser* lists.
#[derive(Debug, serde::Deserialize)]
struct Stored {
    /// Each stored view: its cluster (`""`: the default), lane and deltas.
    items: Vec<(String, String, u64)>,
    /// Each database this page stores in: its cluster's name and identity.
    clusters: Vec<(String, String)>,
    /// The other databases this browser holds: name and identity.
    others: Vec<(String, String)>,
}

/// Opens the settings until what they list satisfies `done`.
async fn stored_in_browser(browser: &Browser, done: impl Fn(&Stored) -> bool) -> Stored {
    browser.click("[data-testid=settings]").await;
    let stored = browser
        .wait_for("the settings' stored history", WAIT, || async {
            let value = browser
                .script(
                    "const all = s => Array.from(document.querySelectorAll(s));\
                     if (!document.querySelector('[data-testid=stored-history]')) return null;\
                     return {items: all('[data-testid=stored-item]').map(i => [i.dataset.cluster, i.dataset.resource, Number(i.dataset.deltas)]),\
                       clusters: all('[data-testid=stored-cluster]').map(c => [c.dataset.name, c.dataset.identity]),\
                       others: all('[data-testid=stored-other-cluster]').map(c => [c.dataset.name, c.dataset.identity])};",
                )
                .await;
            let stored: Stored = serde_json::from_value(value).ok()?;
            done(&stored).then_some(stored)
        })
        .await;
    browser.click("[data-testid=settings-close]").await;
    stored
}

/// The History's rows: source, time and managers of each.
async fn history_rows(browser: &Browser) -> Option<Vec<(String, String, String)>> {
    let value = browser
        .script(
            "return Array.from(document.querySelectorAll('[data-testid=object-delta]'))\
               .map(d => [d.dataset.source || '', d.dataset.time || '', d.dataset.managers || '']);",
        )
        .await;
    serde_json::from_value(value).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clusters_object_shows_serves_record_of_that_cluster() {
    let (_sim_a, a) = start_sim(&SIM_A);
    let (sim_b, b) = start_sim(&SIM_B);
    let scratch = Scratch::new("browser_clusters_record", "kubeconfig");
    let kubeconfig = scratch.0.join("kubeconfig");
    write_kubeconfig(
        &kubeconfig,
        &[("a", format!("http://{a}")), ("b", format!("http://{b}"))],
    );
    let history = format!("sqlite:{}", scratch.0.join("history.sqlite").display());
    let (_serve, login, token) = start_serve_contexts(&kubeconfig, &["a", "b"], &history);
    let (base, serve) = serve_address(&login);

    // A pod of b changed while no page is open: serve records it in b's record.
    let (namespace, name) = first_pod(b);
    let record =
        format!("/_deltascope/history?resource=pods&namespace={namespace}&name={name}&cluster=b");
    wait_for_serve(serve, &token, &record, |body| body.contains("\"object\""));
    // Two changes: the page's own first version is the second one's, the
    // first is serve's record alone.
    for (manager, value) in [(MANAGER, "before-the-page"), ("record-test-later", "later")] {
        let patch = json!({"resource": "pods", "key": format!("{namespace}/{name}"),
            "patch": {"metadata": {"labels": {"recorded": value}}}, "manager": manager});
        let patch = patch.to_string();
        let json_type = [("Content-Type", "application/json")];
        let (status, body) = http(b, "POST", "/_sim/patch", &json_type, Some(patch.as_bytes()));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        wait_for_serve(serve, &token, &record, |body| body.contains(manager));
    }
    let a_record = format!("/_deltascope/history?resource=pods&namespace={namespace}&name={name}");
    let (_, of_a) = serve_text(serve, &token, &a_record);
    assert!(
        !of_a.contains(MANAGER),
        "a's record holds b's change: {of_a}"
    );
    std::thread::sleep(Duration::from_millis(50));

    let browser = Browser::start().await;
    let page_opened = unix_ms();
    browser.client.goto(&login).await.expect("sign in");
    let object = format!("{base}#/b/core/v1/pods/{namespace}/{name}?tab=history");
    browser.client.goto(&object).await.expect("b's pod");
    let rows = browser
        .wait_for("b's recorded change in the History", WAIT, || async {
            let rows = history_rows(&browser).await?;
            let recorded = rows
                .iter()
                .any(|(source, _, managers)| source == "recorder" && managers.contains(MANAGER));
            recorded.then_some(rows)
        })
        .await;
    for (source, time, _) in rows.iter().filter(|(source, ..)| source == "recorder") {
        let at = deltascope_facts::time::parse_rfc3339_millis(time).expect("data-time");
        assert!(
            at < page_opened,
            "a {source} row after the page opened: {rows:?}"
        );
    }
    assert_eq!(
        browser
            .attr("[data-history-status]", "data-history-status")
            .await
            .as_deref(),
        Some("recording"),
        "the status bar says serve records b"
    );
    browser.screenshot("clusters-record-b.png").await;

    // b's views are stored in the browser too, in b's own database (keyed by
    // its identity), and its table comes back warm from it after a reload.
    let old_identity = served_clusters(serve, &token)[1]["identity"].clone();
    browser
        .client
        .goto(&format!("{base}#/b/core/v1/pods"))
        .await
        .expect("b's pods");
    let stored = stored_in_browser(&browser, |stored| {
        stored.items.iter().any(|(cluster, resource, deltas)| {
            cluster == "b" && resource == "b: pods" && *deltas > 0
        })
    })
    .await;
    let b_line = stored.clusters.iter().find(|(name, _)| name == "b");
    assert_eq!(
        b_line.map(|(_, identity)| identity.as_str()),
        old_identity.as_str(),
        "b's database is its identity's: {stored:?}"
    );
    assert!(
        stored.clusters.iter().any(|(name, _)| name == "a"),
        "the default cluster's own database: {stored:?}"
    );
    devtools(
        &browser,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": WARM_RECORDER }),
    )
    .await;
    browser.client.refresh().await.expect("reload");
    let warm = browser
        .wait_for("b's pods shown warm after the reload", WAIT, || async {
            let warm: Vec<String> =
                serde_json::from_value(browser.script("return window.__warm || [];").await).ok()?;
            warm.iter().any(|w| w == "b:pods").then_some(warm)
        })
        .await;
    assert!(!warm.is_empty());

    // Another cluster behind b's name: recorded apart; the History shows
    // none of the old cluster's versions, serve still lists its record, and
    // the browser lists b's old database apart from the new one's.
    browser.client.goto(&object).await.expect("b's pod");
    drop(sim_b);
    let (_new_b, at) = start_sim_listening(&b.to_string(), &SIM_B);
    assert_eq!(at, b, "the new sim listens where the old one did");
    let words = browser.wait_text("[data-testid=cluster-changed]").await;
    assert!(words.contains("the cluster behind b changed"), "{words}");
    let new_identity = served_clusters(serve, &token)[1]["identity"].clone();
    assert_ne!(new_identity, old_identity);
    wait_for_serve(
        serve,
        &token,
        "/_deltascope/history/summary?cluster=b",
        |body| {
            let summary: Value = serde_json::from_str(body).unwrap_or_default();
            summary["cluster"] == new_identity
        },
    );
    let seen = std::cell::RefCell::new(String::new());
    let rows = browser
        .wait_for("the new cluster's History", WAIT, || async {
            let key = browser.attr("[data-testid=object-view]", "data-key").await;
            let reach = browser
                .attr("[data-testid=object-reach]", "data-state")
                .await;
            let rows = history_rows(&browser).await;
            // what it saw, each time it changes, for a failure to show
            let now = format!("object {key:?}, its record {reach:?}, History {rows:?}");
            if *seen.borrow() != now {
                eprintln!("{now}; store-stats {:?}", browser.store_stats().await);
                *seen.borrow_mut() = now;
            }
            let (key, rows) = (key?, rows?);
            let done = key == format!("{namespace}/{name}") && reach.as_deref() == Some("read");
            (done && !rows.is_empty()).then_some(rows)
        })
        .await;
    assert!(
        rows.iter()
            .all(|(_, _, managers)| !managers.contains(MANAGER)),
        "the old cluster's version in the new one's History: {rows:?}"
    );
    let (_, summary) = serve_text(serve, &token, "/_deltascope/history/summary");
    let summary: Value = serde_json::from_str(&summary).expect("the summary");
    let identities: Vec<&Value> = summary["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter(|r| r["resource"] == "pods")
        .map(|r| &r["cluster"])
        .collect();
    assert!(
        identities.contains(&&old_identity) && identities.contains(&&new_identity),
        "both of b's records, apart: {identities:?}"
    );
    let stored = stored_in_browser(&browser, |stored| {
        let is_b = |(name, identity): &(String, String), of: &Value| {
            name == "b" && of.as_str() == Some(identity.as_str())
        };
        let listed_apart = stored.others.iter().any(|o| is_b(o, &old_identity));
        let new_one = stored.clusters.iter().any(|c| is_b(c, &new_identity));
        listed_apart && new_one
    })
    .await;
    assert!(!stored.others.is_empty());

    // An address naming a cluster serve does not serve stores nothing for
    // it (no database of an "unidentified" cluster by that name).
    browser
        .client
        .goto(&format!("{base}#/zz/core/v1/pods"))
        .await
        .expect("an unknown cluster's address");
    let said = browser.wait_text("[data-testid=plain-error]").await;
    assert!(said.contains("no cluster named \"zz\""), "{said}");
    let stored = stored_in_browser(&browser, |stored| !stored.clusters.is_empty()).await;
    let named_zz = |(name, _): &(String, String)| name == "zz";
    assert!(
        !stored.clusters.iter().any(named_zz) && !stored.others.iter().any(named_zz),
        "{stored:?}"
    );
    browser.client.close().await.expect("close");
}
