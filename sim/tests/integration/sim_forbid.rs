//! `SimConfig::forbidden` (`deltascope sim --forbid RESOURCE,…`): requests for a
//! forbidden resource get the apiserver's RBAC answer — HTTP 403 with a
//! `Status` whose reason is `Forbidden` and whose message names the user, the
//! verb, the resource, its API group and the namespace — while every other
//! resource is served as before.

use crate::support;

use deltascope_sim::SimConfig;
use support::*;

#[tokio::test]
async fn a_forbidden_resource_answers_a_kubernetes_403_status() {
    let t = start(SimConfig {
        forbidden: vec!["pods".into(), "widgets.demo.deltascope.dev".into()],
        ..quiet(20)
    })
    .await;

    let cases = [
        (
            "/api/v1/namespaces/shop/pods",
            "pods is forbidden: User \"system:serviceaccount:deltascope:viewer\" cannot list resource \"pods\" in API group \"\" in the namespace \"shop\"",
        ),
        (
            "/api/v1/pods?watch=true",
            "pods is forbidden: User \"system:serviceaccount:deltascope:viewer\" cannot watch resource \"pods\" in API group \"\" at the cluster scope",
        ),
        (
            "/apis/demo.deltascope.dev/v1/widgets?limit=500",
            "widgets.demo.deltascope.dev is forbidden: User \"system:serviceaccount:deltascope:viewer\" cannot list resource \"widgets\" in API group \"demo.deltascope.dev\" at the cluster scope",
        ),
    ];
    for (path, message) in cases {
        let reply = t.get(path).await;
        assert_eq!(reply.status, 403, "GET {path}");
        let status = reply.json();
        assert_eq!(status["kind"], "Status", "GET {path}");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["code"], 403);
        assert_eq!(status["message"], message, "GET {path}");
    }

    // Everything else is served as usual.
    let services = t.get("/api/v1/services").await;
    assert_eq!(services.status, 200);
    let nodes = t.get_json("/api/v1/nodes").await;
    assert!(!nodes["items"].as_array().is_some_and(Vec::is_empty));
}

#[tokio::test]
async fn nothing_is_forbidden_by_default() {
    let t = start(quiet(5)).await;
    let pods = t.get_json("/api/v1/namespaces/shop/pods").await;
    assert_eq!(pods["kind"], "PodList");
}
