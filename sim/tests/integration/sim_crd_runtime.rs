//! CRDs added and removed at runtime (`POST /_sim/crd` with a CRD, or
//! `{"remove": "PLURAL.GROUP"}`): the CRD object appears in and disappears
//! from `customresourcedefinitions` with its watch event, its group and
//! version appear in and disappear from discovery (plain and aggregated),
//! its objects are served while it exists, and bad bodies answer 400 with a
//! Status.

use crate::kubectl;
use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WAIT: Duration = Duration::from_secs(5);
const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

const GADGETS: &str = r#"{"group": "example.com", "version": "v1", "kind": "Gadget",
    "plural": "gadgets", "namespaced": true, "objects": [
        {"metadata": {"name": "g1", "namespace": "shop", "labels": {"tier": "a"}}, "spec": {"size": 1}},
        {"metadata": {"name": "g2"}, "spec": {"size": 2}}
    ]}"#;

/// The groups `/apis` lists, plain and aggregated (they must agree).
async fn groups(t: &TestSim) -> Vec<String> {
    let plain: Vec<String> = t.get_json("/apis").await["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str().map(str::to_string))
        .collect();
    let aggregated: Vec<String> = t
        .request_with("/apis", &[("accept", AGGREGATED)])
        .await
        .json()["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(plain, aggregated, "/apis plain and aggregated disagree");
    plain
}

async fn post(t: &TestSim, body: &str) -> (u16, Value) {
    let reply = t.post("/_sim/crd", body).await;
    (reply.status, reply.json())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_crd_is_served_and_a_removed_one_is_gone() {
    let t = start(quiet(5)).await;
    let (crd_rv, _) = t.list_all(CRDS).await;
    let mut crd_watch = t
        .watch(&format!("{CRDS}?watch=1&resourceVersion={crd_rv}"))
        .await;
    assert!(!groups(&t).await.contains(&"example.com".to_string()));

    let (status, answer) = post(&t, GADGETS).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["crd"], "gadgets.example.com");
    assert_eq!(answer["objects"], 2);
    let added = crd_watch.event(WAIT).await;
    assert_eq!(added["type"], "ADDED", "{added}");
    let crd = &added["object"];
    assert_eq!(crd["metadata"]["name"], "gadgets.example.com");
    assert_eq!(crd["spec"]["group"], "example.com");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["kind"], "Gadget");
    assert_eq!(crd["spec"]["versions"][0]["name"], "v1");

    assert!(groups(&t).await.contains(&"example.com".to_string()));
    let group = t.get_json("/apis/example.com").await;
    assert_eq!(group["preferredVersion"]["groupVersion"], "example.com/v1");
    let list = t.get_json("/apis/example.com/v1").await;
    assert_eq!(list["resources"][0]["name"], "gadgets");
    assert_eq!(list["resources"][0]["kind"], "Gadget");
    assert_eq!(list["resources"][0]["namespaced"], true);

    let (rv, gadgets) = t.list_all("/apis/example.com/v1/gadgets").await;
    let keys: Vec<String> = gadgets.iter().map(key_of).collect();
    assert_eq!(keys, ["default/g2", "shop/g1"]);
    assert!(gadgets.iter().all(|g| g["apiVersion"] == "example.com/v1"));
    assert!(gadgets.iter().all(|g| g["kind"] == "Gadget"));
    let (_, in_shop) = t
        .list_all("/apis/example.com/v1/namespaces/shop/gadgets?labelSelector=tier%3Da")
        .await;
    assert_eq!(in_shop.len(), 1);
    let one = t
        .get_json("/apis/example.com/v1/namespaces/shop/gadgets/g1")
        .await;
    assert_eq!(one["spec"]["size"], 1);
    let table = t
        .request_with(
            "/apis/example.com/v1/gadgets",
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        )
        .await
        .json();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        ["Name", "Age"],
        "a custom resource's default columns"
    );

    let mut gadget_watch = t
        .watch(&format!(
            "/apis/example.com/v1/gadgets?watch=1&resourceVersion={rv}"
        ))
        .await;
    let (status, answer) = post(&t, r#"{"remove": "gadgets.example.com"}"#).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["objects"], 2);
    let (events, end) = gadget_watch.until_end(WAIT).await;
    assert_eq!(end, "end", "the gadgets' watch ends cleanly");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e["type"] == "DELETED"), "{events:?}");
    let gone = crd_watch.event(WAIT).await;
    assert_eq!(gone["type"], "DELETED", "{gone}");
    assert_eq!(gone["object"]["metadata"]["name"], "gadgets.example.com");

    assert!(!groups(&t).await.contains(&"example.com".to_string()));
    for path in [
        "/apis/example.com",
        "/apis/example.com/v1",
        "/apis/example.com/v1/gadgets",
        "/apis/example.com/v1/gadgets?watch=1",
    ] {
        let reply = t.get(path).await;
        assert_eq!(reply.status, 404, "{path} once the CRD is removed");
        assert_eq!(reply.json()["kind"], "Status", "{path}");
    }
    let (_, crds) = t.list_all(CRDS).await;
    assert!(crds
        .iter()
        .all(|c| c["metadata"]["name"] != "gadgets.example.com"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_crd_can_come_back_changed() {
    let t = start(quiet(5)).await;
    assert_eq!(post(&t, GADGETS).await.0, 201);
    assert_eq!(
        post(&t, r#"{"remove": "gadgets.example.com"}"#).await.0,
        200
    );
    let (status, answer) = post(
        &t,
        r#"{"group": "example.com", "version": "v2", "kind": "Gadget", "plural": "gadgets",
            "namespaced": false, "objects": [{"metadata": {"name": "big"}}]}"#,
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(t.get("/apis/example.com/v1/gadgets").await.status, 404);
    let (_, gadgets) = t.list_all("/apis/example.com/v2/gadgets").await;
    let keys: Vec<String> = gadgets.iter().map(key_of).collect();
    assert_eq!(keys, ["big"], "only the new objects, cluster-scoped");
    let list = t.get_json("/apis/example.com/v2").await;
    assert_eq!(list["resources"][0]["namespaced"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_crd_is_removed_and_installed_by_either_body() {
    let t = start(quiet(5)).await;
    let (status, answer) = post(&t, r#"{"remove": "widgets.demo.deltascope.dev"}"#).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["objects"], 9);
    assert!(!groups(&t)
        .await
        .contains(&"demo.deltascope.dev".to_string()));
    let (status, answer) = post(&t, r#"{"installed": true}"#).await;
    assert_eq!(status, 200, "{answer}");
    let (_, widgets) = t.list_all("/apis/demo.deltascope.dev/v1/widgets").await;
    assert_eq!(widgets.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_and_conflicts_answer_with_a_status() {
    let t = start(quiet(5)).await;
    for (body, code, says) in [
        ("{", 400, "invalid JSON body"),
        ("[]", 400, "JSON object"),
        (r#"{"group": "example.com"}"#, 400, "missing field"),
        (
            r#"{"group": "apps", "version": "v1", "kind": "A", "plural": "as", "namespaced": true}"#,
            400,
            "at least one dot",
        ),
        (
            r#"{"group": "example.com", "version": "v1", "kind": "A", "plural": "as", "namespaced": true, "shortNames": []}"#,
            400,
            "unknown field",
        ),
        (
            r#"{"group": "example.com", "version": "v1", "kind": "A", "plural": "as", "namespaced": true, "objects": [{"metadata": {"name": "Bad_Name"}}]}"#,
            400,
            "metadata.name",
        ),
        (r#"{"remove": 1}"#, 400, "PLURAL.GROUP"),
        (r#"{"remove": "nopes.example.com"}"#, 404, "not found"),
        (r#"{"remove": "deployments.apps"}"#, 404, "not found"),
        (
            r#"{"group": "demo.deltascope.dev", "version": "v1", "kind": "Widget", "plural": "widgets", "namespaced": true}"#,
            409,
            "demo CRD",
        ),
    ] {
        let (status, reply) = post(&t, body).await;
        assert_eq!(status, code, "{body}: {reply}");
        assert_eq!(reply["kind"], "Status", "{body}: {reply}");
        assert_eq!(reply["code"], code, "{body}: {reply}");
        let message = reply["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {message}");
    }
    assert_eq!(post(&t, GADGETS).await.0, 201);
    let (status, reply) = post(&t, GADGETS).await;
    assert_eq!(status, 409, "{reply}");
    assert_eq!(reply["reason"], "AlreadyExists", "{reply}");
    let (_, gadgets) = t.list_all("/apis/example.com/v1/gadgets").await;
    assert_eq!(gadgets.len(), 2, "a refused add changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_an_added_crd_come_and_go() {
    let t = start(quiet(5)).await;
    let home = std::env::temp_dir().join(format!(
        "deltascope-sim-crd-runtime-{}-{}",
        std::process::id(),
        t.addr.port()
    ));
    assert_eq!(post(&t, GADGETS).await.0, 201);
    let (ok, out, err) = kubectl::kubectl_at(
        &t.base,
        &home.join("1"),
        &["get", "gadgets", "-A", "--no-headers"],
    )
    .await;
    assert!(ok && out.lines().count() == 2, "{out}{err}");
    assert_eq!(
        post(&t, r#"{"remove": "gadgets.example.com"}"#).await.0,
        200
    );
    let (ok, out, err) =
        kubectl::kubectl_at(&t.base, &home.join("2"), &["get", "gadgets", "-A"]).await;
    assert!(
        !ok && err.contains("doesn't have a resource type \"gadgets\""),
        "{out}{err}"
    );
}
