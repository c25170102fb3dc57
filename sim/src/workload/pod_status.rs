//! A pod's status as its containers run, restart and crash-loop: what the
//! workload writes when a pod starts, restarts or fails. Each terminated run
//! is recorded with its container id, start and finish, so its logs can be
//! read with `previous` (the kubelet needs all three).

use serde_json::{json, Value};

use super::super::objects::{self, condition, running_status, waiting_status};

pub(super) fn make_running(v: &mut Value, restarts: u64, container_id: &str) {
    let (name, image) = first_container(v);
    let node = text(&v["spec"]["nodeName"]);
    // An address in the node's pod CIDR (10.64.<node>.0/24), from the pod's
    // name and this run's container id.
    let node_index: u64 = node
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let pod = v["metadata"]["name"].as_str().unwrap_or_default();
    let hash = format!("{pod}/{container_id}/{restarts}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    let pod_ip = format!("10.64.{}.{}", node_index % 256, hash % 250 + 2);
    let status = &mut v["status"];
    status["phase"] = json!("Running");
    status["podIP"] = json!(pod_ip);
    status["podIPs"] = json!([{"ip": pod_ip}]);
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", true),
        condition("Initialized", true),
        condition("Ready", true),
        condition("ContainersReady", true),
        condition("PodScheduled", true)
    ]);
    let mut main = running_status(&name, &image, restarts, container_id);
    if restarts > 0 {
        // The run before this one: it ran for a while and was killed 5 s ago.
        let ended = objects::now_secs() - 5;
        let ran = 60 + (container_id.len() as i64 * 97 + restarts as i64 * 31) % 1800;
        main["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": objects::rfc3339(ended - ran), "finishedAt": objects::rfc3339(ended),
            "containerID": format!("containerd://{container_id}0")}});
    }
    status["containerStatuses"] = json!([
        main,
        running_status(
            "log-shipper",
            "fluent/fluent-bit:3.1.9",
            0,
            &format!("{container_id}ls")
        )
    ]);
}

pub(super) fn make_crashloop(v: &mut Value, restarts: u64) {
    let (name, image) = first_container(v);
    // The run that just crashed: up a few seconds, then exit 1.
    let pod = text(&v["metadata"]["name"]);
    let ended = objects::now_secs() - 1;
    let ran = 3 + (pod.len() as i64 + restarts as i64 * 7) % 25;
    let container_id = format!(
        "{:x}{restarts:x}",
        pod.bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
    );
    let status = &mut v["status"];
    status["phase"] = json!("Running");
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", true),
        condition("Initialized", true),
        condition("Ready", false),
        condition("ContainersReady", false),
        condition("PodScheduled", true)
    ]);
    let mut main = waiting_status(&name, &image, "CrashLoopBackOff", restarts);
    main["state"]["waiting"]["message"] =
        json!(format!("back-off 40s restarting failed container={name}"));
    main["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error",
        "startedAt": objects::rfc3339(ended - ran), "finishedAt": objects::rfc3339(ended),
        "containerID": format!("containerd://{container_id}")}});
    main["started"] = json!(false);
    status["containerStatuses"] = json!([
        main,
        running_status("log-shipper", "fluent/fluent-bit:3.1.9", 0, "logshipper")
    ]);
}

/// The name and image of the pod's first container (its main one).
fn first_container(v: &Value) -> (String, String) {
    let container = &v["spec"]["containers"][0];
    (text(&container["name"]), text(&container["image"]))
}

/// A string field's text; empty where it is missing or not a string.
fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}
