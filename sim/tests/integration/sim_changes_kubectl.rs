//! Writes and their traces through the real kubectl: a patched
//! deployment's managedFields (`--show-managed-fields`), events selected by
//! the object they are about, the events.k8s.io Events, and EndpointSlices
//! printed by the server's Table columns.

use crate::kubectl;
use crate::support;

use deltascope_sim::SimConfig;
use serde_json::json;
use support::*;

async fn kubectl(t: &TestSim, args: &[&str]) -> String {
    let home = std::env::temp_dir().join(format!(
        "deltascope-sim-changes-{}-{}",
        std::process::id(),
        t.addr.port()
    ));
    let (ok, stdout, stderr) = kubectl::kubectl_at(&t.base, &home, args).await;
    assert!(ok, "kubectl {args:?} failed: {stderr}");
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_managers_events_and_endpointslices() {
    let t = start(SimConfig {
        churn_per_sec: 0.0,
        ..quiet(30)
    })
    .await;
    let body = json!({"resource": "deployments.apps", "key": "shop/frontend",
        "patch": {"spec": {"replicas": 3}}, "manager": "ops-cli"});
    let r = t.post("/_sim/patch", &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    let yaml = kubectl(
        &t,
        &[
            "get",
            "deploy",
            "frontend",
            "-n",
            "shop",
            "-o",
            "yaml",
            "--show-managed-fields",
        ],
    )
    .await;
    let entry = yaml
        .split("- apiVersion: apps/v1")
        .find(|e| e.contains("manager: ops-cli"))
        .unwrap_or_else(|| panic!("no ops-cli entry in\n{yaml}"));
    assert!(
        entry.contains("f:spec:") && entry.contains("f:replicas: {}"),
        "{entry}"
    );
    assert!(entry.contains("operation: Update"), "{entry}");
    assert!(yaml.contains("subresource: status"), "{yaml}");

    // events about one object, selected by the server
    let (_, events) = t.list_all("/api/v1/events").await;
    let about = events
        .iter()
        .find(|e| e["involvedObject"]["kind"] == "Deployment")
        .and_then(|e| e["involvedObject"]["name"].as_str())
        .expect("an event about the deployment")
        .to_string();
    let out = kubectl(
        &t,
        &[
            "get",
            "events",
            "-A",
            "--field-selector",
            &format!("involvedObject.name={about}"),
        ],
    )
    .await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "MESSAGE"
        ]
    );
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|l| l.contains(&format!("deployment/{about}"))),
        "{out}"
    );
    assert!(out.contains("ScalingReplicaSet"), "{out}");

    let out = kubectl(&t, &["get", "events.v1.events.k8s.io", "-A"]).await;
    assert!(out.starts_with("NAMESPACE"), "{out}");
    assert!(
        out.contains("ScalingReplicaSet") && out.contains("replicaset/frontend-"),
        "{out}"
    );

    let out = kubectl(&t, &["get", "endpointslices", "-A"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "NAME",
            "ADDRESSTYPE",
            "PORTS",
            "ENDPOINTS",
            "AGE"
        ]
    );
    let frontend = lines
        .find(|l| l.starts_with("shop") && l.contains(" frontend-"))
        .unwrap_or_else(|| panic!("no frontend slice in\n{out}"));
    let cols: Vec<&str> = frontend.split_whitespace().collect();
    assert_eq!(cols[2], "IPv4", "{frontend}");
    assert_eq!(cols[3], "8080", "{frontend}");
    assert!(cols[4].starts_with("10.64."), "{frontend}");
}
