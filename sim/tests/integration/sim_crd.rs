//! The demo CRD uninstalled and installed at runtime (`POST /_sim/crd`, so
//! the page's discovery refresh can be tested): watchers of CRDs see it DELETED and ADDED again, the widgets'
//! watchers see their objects deleted and their watch end, discovery (plain
//! and aggregated) omits the group and the resource answers 404 while it is
//! gone; and the real kubectl (`get crd`, `api-resources`, `get widgets`)
//! sees it vanish and return.

use crate::kubectl;
use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::*;

const CRD: &str = "widgets.demo.deltascope.dev";
const GROUP: &str = "demo.deltascope.dev";
const WAIT: Duration = Duration::from_secs(5);
const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

async fn set_installed(t: &TestSim, installed: bool) -> Value {
    let reply = t
        .post("/_sim/crd", &format!(r#"{{"installed": {installed}}}"#))
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

/// The groups `/apis` lists, plain and aggregated (they must agree).
async fn groups(t: &TestSim) -> Vec<String> {
    let names = |v: &Value, list: &str, name: &[&str]| -> Vec<String> {
        v[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| name.iter().try_fold(g, |g, k| g.get(k))?.as_str())
            .map(str::to_string)
            .collect()
    };
    let plain = names(&t.get_json("/apis").await, "groups", &["name"]);
    let reply = t.request_with("/apis", &[("accept", AGGREGATED)]).await;
    let aggregated = names(&reply.json(), "items", &["metadata", "name"]);
    assert_eq!(plain, aggregated, "/apis plain and aggregated disagree");
    plain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstalling_the_crd_deletes_it_and_its_objects_and_discovery_forgets_it() {
    let t = start(quiet(5)).await;
    assert!(groups(&t).await.contains(&GROUP.to_string()));
    let (crd_rv, crds) = t
        .list_all("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .await;
    assert_eq!(crds.len(), 1);
    let (widget_rv, widgets) = t.list_all("/apis/demo.deltascope.dev/v1/widgets").await;
    assert_eq!(widgets.len(), 9);
    let mut crd_watch = t
        .watch(&format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=1&resourceVersion={crd_rv}"
        ))
        .await;
    let mut widget_watch = t
        .watch(&format!(
            "/apis/demo.deltascope.dev/v1/widgets?watch=1&resourceVersion={widget_rv}"
        ))
        .await;

    let answer = set_installed(&t, false).await;
    assert!(
        answer["effect"]
            .as_str()
            .unwrap_or("")
            .contains("uninstalled"),
        "{answer}"
    );
    let gone = crd_watch.event(WAIT).await;
    assert_eq!(gone["type"], "DELETED", "{gone}");
    assert_eq!(gone["object"]["metadata"]["name"], CRD);
    let (events, end) = widget_watch.until_end(WAIT).await;
    assert_eq!(end, "end", "the widgets' watch ends cleanly");
    assert_eq!(events.len(), 9, "{events:?}");
    assert!(events.iter().all(|e| e["type"] == "DELETED"), "{events:?}");

    assert!(!groups(&t).await.contains(&GROUP.to_string()));
    for path in [
        "/apis/demo.deltascope.dev",
        "/apis/demo.deltascope.dev/v1",
        "/apis/demo.deltascope.dev/v1/widgets",
        "/apis/demo.deltascope.dev/v1/namespaces/shop/widgets/widget-0",
        "/apis/demo.deltascope.dev/v1/widgets?watch=1",
    ] {
        let reply = t.get(path).await;
        assert_eq!(reply.status, 404, "{path} while the CRD is uninstalled");
        assert_eq!(reply.json()["kind"], "Status", "{path}");
    }
    // Twice is a no-op that says so.
    let again = set_installed(&t, false).await;
    assert!(again["effect"].as_str().unwrap_or("").contains("already"));

    set_installed(&t, true).await;
    let back = crd_watch.event(WAIT).await;
    assert_eq!(back["type"], "ADDED", "{back}");
    assert_eq!(back["object"]["metadata"]["name"], CRD);
    assert!(groups(&t).await.contains(&GROUP.to_string()));
    let list = t.get_json("/apis/demo.deltascope.dev/v1").await;
    assert_eq!(list["resources"][0]["name"], "widgets");
    let (_, widgets) = t.list_all("/apis/demo.deltascope.dev/v1/widgets").await;
    assert_eq!(widgets.len(), 9, "the demo's widgets are created again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_crd_control_says_what_it_expects() {
    let t = start(quiet(5)).await;
    let reply = t.post("/_sim/crd", r#"{"installed": "no"}"#).await;
    assert_eq!(reply.status, 400);
    assert!(String::from_utf8_lossy(&reply.body).contains(r#"{\"installed\": false}"#));
}

/// `kubectl ARGS` against the sim with a fresh discovery cache each time
/// (so what it prints is what the cluster says now): (success, stdout, stderr).
async fn kubectl_run(t: &TestSim, run: usize, args: &[&str]) -> (bool, String, String) {
    let home = std::env::temp_dir().join(format!(
        "deltascope-sim-crd-{}-{}-{run}",
        std::process::id(),
        t.addr.port()
    ));
    kubectl::kubectl_at(&t.base, &home, args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_the_crd_vanish_and_return() {
    let t = start(quiet(5)).await;
    let mut run = 0;
    let mut kubectl = |args: &'static [&'static str]| {
        run += 1;
        kubectl_run(&t, run, args)
    };
    let served = |out: &str| {
        out.lines()
            .any(|l| l.split_whitespace().next() == Some("widgets"))
    };

    let (ok, out, err) = kubectl(&["get", "crd", "-o", "name"]).await;
    assert!(ok && out.contains(CRD), "{out}{err}");
    let (ok, out, err) = kubectl(&["api-resources"]).await;
    assert!(ok && served(&out), "{out}{err}");

    set_installed(&t, false).await;
    let (ok, out, err) = kubectl(&["get", "crd", "-o", "name"]).await;
    assert!(ok && !out.contains(CRD), "{out}{err}");
    let (ok, out, err) = kubectl(&["api-resources"]).await;
    assert!(ok && !served(&out), "{out}{err}");
    let (ok, out, err) = kubectl(&["get", "widgets", "-A"]).await;
    assert!(
        !ok && err.contains("doesn't have a resource type \"widgets\""),
        "{out}{err}"
    );

    set_installed(&t, true).await;
    let (ok, out, err) = kubectl(&["get", "crd", "-o", "name"]).await;
    assert!(ok && out.contains(CRD), "{out}{err}");
    let (ok, out, err) = kubectl(&["api-resources"]).await;
    assert!(ok && served(&out), "{out}{err}");
    let (ok, out, err) = kubectl(&["get", "widgets", "-A", "--no-headers"]).await;
    assert!(ok && out.lines().count() == 9, "{out}{err}");
}
