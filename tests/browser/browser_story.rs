//! An object's story as a user reads it, in headless Chromium against
//! `deltascope serve --demo`, with eight resources kept (more than the
//! browser's six connections per origin): a Deployment scaled through
//! `POST /_sim/patch` by field manager `ops-cli` opens from its own address
//! and shows, in its history, the update attributed to `ops-cli`; in its
//! story, the ReplicaSet and the pods that followed and the events between;
//! an event the cluster deleted (its TTL passed) is still listed, marked
//! expired; related links open the related objects, and the browser's back
//! button returns.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{Browser, DemoServer};

/// The kept resources: more than six, each its own watch on the channel.
const RESOURCES: [&str; 8] = [
    "#/core/v1/nodes",
    "#/core/v1/services",
    "#/core/v1/configmaps",
    "#/core/v1/namespaces",
    "#/core/v1/events",
    "#/core/v1/pods",
    "#/apps/v1/replicasets",
    "#/apps/v1/deployments",
];

/// `#/apps/v1/deployments` → `deployments.apps`, as `data-resource` says.
fn stats_name(hash: &str) -> String {
    let parts: Vec<&str> = hash.trim_start_matches("#/").split('/').collect();
    match parts.as_slice() {
        ["core", _, plural] => plural.to_string(),
        [group, _, plural] => format!("{plural}.{group}"),
        _ => panic!("not a resource address: {hash}"),
    }
}

fn first_deployment(server: &DemoServer) -> (String, String, u64) {
    let (status, body) = server.get("/apis/apps/v1/deployments");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).expect("deployments");
    let deployment = list["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|d| d["spec"]["replicas"].as_u64().is_some_and(|r| r >= 1))
        })
        .expect("a deployment with replicas");
    (
        deployment["metadata"]["namespace"]
            .as_str()
            .expect("namespace")
            .to_string(),
        deployment["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string(),
        deployment["spec"]["replicas"].as_u64().expect("replicas"),
    )
}

/// Picks how the timeline's lanes are cut (`resource`, `manager`…).
async fn pick_lanes(browser: &Browser, mode: &str) {
    browser
        .client
        .find(fantoccini::Locator::Css("[data-testid=lane-mode]"))
        .await
        .expect("the lane picker")
        .select_by_value(mode)
        .await
        .unwrap_or_else(|e| panic!("lanes by {mode}: {e}"));
}

/// Rows of strings a script returns (`None` until it returns them).
async fn strings(browser: &Browser, script: &str) -> Option<Vec<Vec<String>>> {
    serde_json::from_value(browser.script(script).await).ok()
}

async fn open_tab(browser: &Browser, label: &str) {
    browser
        .script(&format!(
            "Array.from(document.querySelectorAll('.object-view [role=tab]'))\
               .find(b => b.textContent.startsWith('{label}')).click();"
        ))
        .await;
}

/// The label of the object view's selected tab.
async fn selected_tab(browser: &Browser) -> Option<String> {
    browser
        .script(
            "const tab = document.querySelector('.object-view [role=tab][aria-selected=true]');\
             return tab ? tab.textContent : null;",
        )
        .await
        .as_str()
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaled_deployment_tells_who_scaled_it_what_followed_and_keeps_expired_events() {
    let server = DemoServer::start(&["--seed", "5", "--pods", "40", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let resources: Vec<(&str, String)> = RESOURCES.iter().map(|h| (*h, stats_name(h))).collect();
    browser.keep_each(&resources).await;

    // The deployment's own address, shared as a link: reopened directly.
    let (namespace, name, replicas) = first_deployment(&server);
    let key = format!("{namespace}/{name}");
    let address = format!("#/apps/v1/deployments/{namespace}/{name}");
    browser
        .script(&format!("location.hash = '{address}';"))
        .await;
    browser
        .wait_for(
            "the deployment's object view",
            Duration::from_secs(20),
            || async {
                let shown = browser
                    .attr("[data-testid=object-view]", "data-key")
                    .await?;
                (shown == key).then_some(())
            },
        )
        .await;

    // Scaled by ops-cli; the cluster's TTL for events is cut to 2 s.
    let (status, body) = server.post_json(
        "/_sim/patch",
        &json!({"resource": "deployments.apps", "key": key,
                "patch": {"spec": {"replicas": replicas + 2}}, "manager": "ops-cli"}),
    );
    assert_eq!(
        status,
        200,
        "/_sim/patch: {}",
        String::from_utf8_lossy(&body)
    );

    // History: the update, attributed to ops-cli.
    open_tab(&browser, "History").await;
    browser
        .wait_for(
            "a delta of the deployment attributed to ops-cli",
            Duration::from_secs(20),
            || async {
                let managers = browser
                    .script(
                        "return Array.from(document.querySelectorAll('[data-testid=object-delta]'))\
                           .map(d => d.dataset.managers);",
                    )
                    .await;
                managers
                    .as_array()?
                    .iter()
                    .any(|m| {
                        m.as_str()
                            .is_some_and(|m| m.split(',').any(|m| m == "ops-cli"))
                    })
                    .then_some(())
            },
        )
        .await;
    let lines = browser
        .script("return document.querySelector('[data-testid=object-history]').innerText;")
        .await;
    let lines = lines.as_str().unwrap_or_default();
    assert!(
        lines.contains(&format!(
            "ops-cli (Update) changed .spec.replicas {replicas} → {}",
            replicas + 2
        )),
        "the history says who changed which field: {lines}"
    );
    assert!(
        lines.contains(".metadata.generation changed, claimed by no manager of this update"),
        "the history names the field nobody's manager claims (the API server's generation): {lines}"
    );

    // The delta list: "changed by ops-cli" finds that update, and only it.
    browser.click("[data-testid=toggle-deltas]").await;
    browser
        .type_into("[data-testid=delta-manager]", "ops-cli")
        .await;
    let written = browser
        .wait_for("the delta list filtered to ops-cli", Duration::from_secs(10), || async {
            let rows = strings(&browser, "return Array.from(document.querySelectorAll('[data-testid=delta-list] tr[data-delta-key]'))\
                       .map(r => [r.dataset.resource, r.dataset.deltaKey, r.dataset.managers]);")
                .await?;
            (!rows.is_empty()).then_some(rows)
        })
        .await;
    assert!(
        written
            .iter()
            .all(|r| r[2].split(',').any(|m| m == "ops-cli")),
        "every row shown was written by ops-cli: {written:?}"
    );
    assert!(
        written
            .iter()
            .any(|r| r[0] == "deployments.apps" && r[1] == key),
        "the deployment's update is among them: {written:?}"
    );
    browser.click("[data-testid=toggle-deltas]").await;

    // The timeline by field manager: a lane of what ops-cli wrote.
    pick_lanes(&browser, "manager").await;
    browser
        .wait_for("an ops-cli lane", Duration::from_secs(10), || async {
            let lanes = browser
                .script(
                    "return Array.from(document.querySelectorAll('[data-testid=timeline-lane]'))\
                       .map(l => [l.dataset.lane, Number(l.dataset.count)]);",
                )
                .await;
            let lanes: Vec<(String, u64)> = serde_json::from_value(lanes).ok()?;
            lanes
                .iter()
                .any(|(lane, count)| lane == "ops-cli" && *count >= 1)
                .then_some(())
        })
        .await;
    browser.screenshot("story-manager-lanes.png").await;

    // Story: the ReplicaSet that followed, two new pods, and the events.
    open_tab(&browser, "Story").await;
    let story = browser
        .wait_for(
            "the rollout's story: the replicaset, two new pods, the events",
            Duration::from_secs(30),
            || async {
                let rows = strings(&browser, "return Array.from(document.querySelectorAll('[data-testid=story-row]'))\
                           .map(r => [r.dataset.resource, r.dataset.what, r.dataset.key, r.dataset.managers]);")
                    .await?;
                let count = |resource: &str, what: &str| {
                    rows.iter()
                        .filter(|r| r[0] == resource && r[1] == what)
                        .count()
                };
                let followed = count("replicasets.apps", "Updated") >= 1
                    && count("pods", "Added") >= 2
                    && count("events", "Normal") >= 1;
                followed.then_some(rows)
            },
        )
        .await;
    assert!(
        story.iter().any(|r| r[0] == "deployments.apps"
            && r[1] == "Updated"
            && r[3].split(',').any(|m| m == "ops-cli")),
        "the deployment's update by ops-cli in its story: {story:?}"
    );
    assert!(
        story
            .iter()
            .any(|r| r[0] == "pods" && r[1] == "Updated" && r[3] == "kubelet"),
        "the new pods' status written by the kubelet: {story:?}"
    );
    browser.screenshot("story.png").await;

    // Events: listed with their reasons; one the cluster deletes stays.
    let (status, body) = server.post_json("/_sim/events", &json!({"ttl_secs": 2}));
    assert_eq!(
        status,
        200,
        "/_sim/events: {}",
        String::from_utf8_lossy(&body)
    );
    open_tab(&browser, "Events").await;
    browser
        .wait_for(
            "an event of the deployment expired from the cluster, still listed",
            Duration::from_secs(30),
            || async {
                let events = strings(
                    &browser,
                    "return Array.from(document.querySelectorAll('[data-testid=object-event]'))\
                           .map(e => [e.dataset.reason, e.dataset.expired]);",
                )
                .await?;
                events
                    .iter()
                    .any(|e| e[0] == "ScalingReplicaSet" && e[1] == "true")
                    .then_some(())
            },
        )
        .await;
    let (status, body) = server.get(&format!(
        "/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name%3D{name}"
    ));
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_slice(&body).expect("events");
    assert!(
        listed["items"]
            .as_array()
            .is_some_and(|items| !items.iter().any(|e| e["reason"] == "ScalingReplicaSet")),
        "the cluster itself no longer has it: {listed}"
    );
    browser.screenshot("story-events.png").await;

    // Related: a link to what it owns opens that object; back returns.
    open_tab(&browser, "Related").await;
    let (resource, owned) = browser
        .wait_for(
            "a link to the replicaset it owns",
            Duration::from_secs(10),
            || async {
                let resource = browser
                    .attr(
                        "[data-testid=related-link][data-resource='replicasets.apps']",
                        "data-resource",
                    )
                    .await?;
                let owned = browser
                    .attr(
                        "[data-testid=related-link][data-resource='replicasets.apps']",
                        "data-key",
                    )
                    .await?;
                Some((resource, owned))
            },
        )
        .await;
    assert_eq!(resource, "replicasets.apps");
    browser
        .click("[data-testid=related-link][data-resource='replicasets.apps']")
        .await;
    browser
        .wait_for(
            "the replicaset's object view",
            Duration::from_secs(10),
            || async {
                let shown = browser
                    .attr("[data-testid=object-view]", "data-key")
                    .await?;
                let hash = browser.script("return location.hash;").await;
                (shown == owned && hash.as_str()?.starts_with("#/apps/v1/replicasets/"))
                    .then_some(())
            },
        )
        .await;
    browser.client.back().await.expect("back");
    browser
        .wait_for(
            "back at the deployment",
            Duration::from_secs(10),
            || async {
                let shown = browser
                    .attr("[data-testid=object-view]", "data-key")
                    .await?;
                (shown == key).then_some(())
            },
        )
        .await;

    // Warnings as they happen mark the lane of the resource they are about.
    pick_lanes(&browser, "resource").await;
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 80}));
    assert_eq!(status, 200);
    browser
        .wait_for(
            "a warning mark on the pods lane",
            Duration::from_secs(30),
            || async {
                browser
                    .attr(
                        "[data-testid=timeline-lane][data-lane=pods]",
                        "data-warnings",
                    )
                    .await?
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
            },
        )
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    browser.screenshot("story-warning-marks.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_pods_warnings_sit_among_its_versions() {
    let server = DemoServer::start(&["--seed", "8", "--pods", "60", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    // more than six resources kept; events are not one of them: the page
    // reads them itself once an object is opened
    for hash in RESOURCES.iter().filter(|h| !h.ends_with("/events")) {
        browser.script(&format!("location.hash = '{hash}';")).await;
        browser
            .wait_synced(&stats_name(hash), Duration::from_secs(60))
            .await;
    }
    browser.script("location.hash = '#/core/v1/pods';").await;
    browser.wait_synced("pods", Duration::from_secs(30)).await;
    let (status, _) = server.post_json("/_sim/churn", &json!({"events_per_sec": 80}));
    assert_eq!(status, 200);
    let (namespace, name) = browser
        .wait_for(
            "a pod warned of a back-off",
            Duration::from_secs(30),
            || async {
                let (_, body) = server.get("/api/v1/events?fieldSelector=reason%3DBackOff");
                let events: Value = serde_json::from_slice(&body).ok()?;
                let involved = &events["items"].as_array()?.first()?["involvedObject"];
                Some((
                    involved["namespace"].as_str()?.to_string(),
                    involved["name"].as_str()?.to_string(),
                ))
            },
        )
        .await;
    server.post_json("/_sim/churn", &json!({"events_per_sec": 0}));
    browser
        .script(&format!(
            "location.hash = '#/core/v1/pods/{namespace}/{name}';"
        ))
        .await;
    open_tab(&browser, "History").await;
    browser
        .wait_for(
            "the BackOff among the pod's versions, newest first",
            Duration::from_secs(20),
            || async {
                let rows = browser
                    .script(
                        "return Array.from(document.querySelectorAll('[data-testid=object-history] ol.versions > li'))\
                           .map(li => li.dataset.testid === 'history-warning' ? 'warning:' + li.dataset.reason : 'version');",
                    )
                    .await;
                let rows: Vec<String> = serde_json::from_value(rows).ok()?;
                (rows.contains(&"warning:BackOff".to_string()) && rows.contains(&"version".to_string()))
                    .then_some(())
            },
        )
        .await;
    browser.screenshot("history-warning.png").await;
}

/// Related and Story name a Deployment's relatives from the current objects
/// though the user keeps nothing but deployments: the object view reads
/// the namespace's ReplicaSets and pods itself, and they are not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_opened_alone_names_its_replicaset_and_pods_without_keeping_them() {
    let server = DemoServer::start(&["--seed", "5", "--pods", "40", "--churn", "0"]);
    let browser = Browser::start().await;
    browser.client.goto(&server.login_url).await.expect("login");
    let (namespace, name, replicas) = first_deployment(&server);
    // Its address names the tab: Related opens without a click.
    browser
        .script(&format!(
            "location.hash = '#/apps/v1/deployments/{namespace}/{name}?tab=related';"
        ))
        .await;
    browser
        .wait_for(
            "the deployment's object view on Related",
            Duration::from_secs(20),
            || async {
                selected_tab(&browser)
                    .await
                    .filter(|tab| tab.starts_with("Related"))
            },
        )
        .await;
    let links = browser
        .wait_for(
            "its ReplicaSet and pods in Related",
            Duration::from_secs(30),
            || async {
                let links = strings(
                    &browser,
                    "return Array.from(document.querySelectorAll('[data-testid=related-link]'))\
                       .map(a => [a.dataset.resource, a.parentElement.dataset.relation,\
                         a.parentElement.textContent.includes('not kept') ? 'not kept' : 'held']);",
                )
                .await?;
                let pods = links.iter().filter(|l| l[0] == "pods").count() as u64;
                (pods >= replicas && links.iter().any(|l| l[0] == "replicasets.apps"))
                    .then_some(links)
            },
        )
        .await;
    assert!(
        links
            .iter()
            .filter(|l| l[0] == "replicasets.apps" || l[0] == "pods")
            .all(|l| l[2] == "held"),
        "read for the view, so held: {links:?}"
    );
    // Choosing a tab writes it into the address, in place: a reload
    // opens the Story again.
    open_tab(&browser, "Story").await;
    browser
        .wait_for(
            "the Story in the address",
            Duration::from_secs(10),
            || async {
                let hash = browser.script("return location.hash;").await;
                (hash.as_str()? == format!("#/apps/v1/deployments/{namespace}/{name}?tab=story"))
                    .then_some(())
            },
        )
        .await;
    browser.client.refresh().await.expect("reload");
    browser
        .wait_for(
            "the Story after the reload",
            Duration::from_secs(30),
            || async {
                selected_tab(&browser)
                    .await
                    .filter(|tab| tab.starts_with("Story"))
            },
        )
        .await;
    browser
        .wait_for("its pods in the story", Duration::from_secs(30), || async {
            let rows = strings(
                &browser,
                "return Array.from(document.querySelectorAll('[data-testid=story-row]'))\
                   .map(r => [r.dataset.resource]);",
            )
            .await?;
            rows.iter().any(|r| r[0] == "pods").then_some(())
        })
        .await;
    let kept = strings(
        &browser,
        "return Array.from(document.querySelectorAll('[data-testid=kept-resource]'))\
           .map(k => [k.dataset.resource]);",
    )
    .await
    .unwrap_or_default();
    assert!(
        !kept.is_empty()
            && kept
                .iter()
                .all(|k| !k[0].contains("pods") && !k[0].contains("replicasets")),
        "the reads are the view's own, not kept: {kept:?}"
    );
}
