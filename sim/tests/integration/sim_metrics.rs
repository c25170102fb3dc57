//! The metrics API (`metrics.k8s.io/v1beta1`) the simulated cluster serves
//! as metrics-server does: discovery, the objects' shapes, lists, gets and
//! selectors, its errors (a watch is 405, a bad selector 400, an unknown pod
//! 404), the real `kubectl top` printing the numbers the sim holds, the
//! leaking container climbing to its limit and being OOMKilled (status,
//! event, watch), and a cluster without metrics (`metrics: false`).

use crate::support;

use crate::kubectl as shared_kubectl;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use deltascope_sim::quantity::{parse_bytes, parse_nanocores};
use deltascope_sim::SimConfig;
use serde_json::Value;
use shared_kubectl::kubectl_at;
use support::*;

const METRICS: &str = "/apis/metrics.k8s.io/v1beta1";
const MI: u64 = 1024 * 1024;

/// A quiet cluster whose metrics windows last `resolution`.
fn metrics_config(pods: usize, resolution: Duration) -> SimConfig {
    SimConfig {
        metrics_resolution: resolution,
        ..quiet(pods)
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A container's or node's usage: (nanocores, bytes).
fn usage(u: &Value) -> (u64, u64) {
    let cpu = parse_nanocores(s(&u["cpu"])).unwrap_or_else(|| panic!("cpu of {u}"));
    let memory = parse_bytes(s(&u["memory"])).unwrap_or_else(|| panic!("memory of {u}"));
    (cpu, memory)
}

/// A pod's usage, summed over its containers.
fn pod_usage(item: &Value) -> (u64, u64) {
    item["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| usage(&c["usage"]))
                .fold((0, 0), |(a, b), (c, m)| (a + c, b + m))
        })
        .unwrap_or_default()
}

/// What `kubectl top` prints: millicores rounded up, whole MiB rounded down.
fn top_cpu(nanocores: u64) -> String {
    format!("{}m", nanocores.div_ceil(1_000_000))
}

fn top_memory(bytes: u64) -> String {
    format!("{}Mi", bytes / MI)
}

/// Pods that should have metrics: Running, with a running container.
fn measured_pods(pods: &[Value]) -> BTreeSet<String> {
    pods.iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .filter(|p| {
            p["status"]["containerStatuses"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["state"]["running"].is_object()))
        })
        .map(key_of)
        .collect()
}

/// Reads `path` twice around `f`, until both reads fall in one window
/// (same `timestamp` on the first item): the list, and what `f` returned.
async fn in_one_window<T, F: std::future::Future<Output = T>>(
    t: &TestSim,
    path: &str,
    f: impl Fn() -> F,
) -> (Value, T) {
    for _ in 0..5 {
        let before = t.get_json(path).await;
        let got = f().await;
        let after = t.get_json(path).await;
        let stamp = |v: &Value| v["items"][0]["timestamp"].clone();
        if stamp(&before) == stamp(&after) {
            return (after, got);
        }
    }
    panic!("five reads of {path} in a row straddled a window");
}

/// `kubectl ARGS` against the sim, which must succeed: what it printed.
async fn top(t: &TestSim, args: &[&str]) -> String {
    let home = std::env::temp_dir().join(format!(
        "deltascope-sim-top-{}-{}",
        t.addr.port(),
        args.join("-").replace('/', "_")
    ));
    let (ok, out, err) = kubectl_at(&t.base, &home, args).await;
    assert!(ok, "kubectl {args:?} failed: {err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_the_metrics_api() {
    let t = start(metrics_config(30, Duration::from_secs(600))).await;
    let groups = t.get_json("/apis").await;
    let group = groups["groups"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == "metrics.k8s.io"))
        .cloned()
        .unwrap_or_else(|| panic!("/apis lacks metrics.k8s.io: {groups}"));
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "metrics.k8s.io/v1beta1"
    );
    let one = t.get_json("/apis/metrics.k8s.io").await;
    assert_eq!(one["kind"], "APIGroup");
    let list = t.get_json(METRICS).await;
    assert_eq!(list["groupVersion"], "metrics.k8s.io/v1beta1");
    let resources: BTreeMap<&str, &Value> = list["resources"]
        .as_array()
        .map(|rs| rs.iter().map(|r| (s(&r["name"]), r)).collect())
        .unwrap_or_default();
    assert_eq!(
        resources.keys().copied().collect::<Vec<_>>(),
        ["nodes", "pods"]
    );
    for (name, kind, namespaced) in [
        ("nodes", "NodeMetrics", false),
        ("pods", "PodMetrics", true),
    ] {
        let r = resources[name];
        assert_eq!(r["kind"], kind);
        assert_eq!(r["namespaced"], namespaced);
        assert_eq!(r["verbs"], serde_json::json!(["get", "list"]), "{r}");
        assert!(r.get("storageVersionHash").is_none(), "{r}");
    }
    let aggregated = t
        .request_with(
            "/apis",
            &[(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )],
        )
        .await
        .json();
    let metrics = aggregated["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["metadata"]["name"] == "metrics.k8s.io")
        })
        .cloned()
        .unwrap_or_else(|| panic!("aggregated discovery lacks metrics.k8s.io: {aggregated}"));
    let pods = &metrics["versions"][0]["resources"][1];
    assert_eq!(pods["resource"], "pods");
    assert_eq!(pods["responseKind"]["kind"], "PodMetrics");
    assert_eq!(pods["verbs"], serde_json::json!(["get", "list"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_and_node_metrics_are_shaped_as_metrics_server_writes_them() {
    let t = start(metrics_config(60, Duration::from_secs(600))).await;
    let (_, pods) = t.list_all("/api/v1/pods").await;
    let path = format!("{METRICS}/pods");
    let (list, again) = in_one_window(&t, &path, || t.get_json(&path)).await;
    assert_eq!(list["kind"], "PodMetricsList");
    assert_eq!(list["apiVersion"], "metrics.k8s.io/v1beta1");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let got: BTreeSet<String> = items.iter().map(key_of).collect();
    let want = measured_pods(&pods);
    assert_eq!(got, want, "PodMetrics are the running pods'");
    assert!(
        pods.iter().any(|p| p["status"]["phase"] == "Pending"),
        "the seed has a Pending pod, absent from the metrics"
    );
    let order: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                s(&i["metadata"]["namespace"]).into(),
                s(&i["metadata"]["name"]).into(),
            )
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "sorted by namespace, name"
    );
    // Two reads in one window agree (but for creationTimestamp: the read's time).
    let strip = |v: &Value| {
        let mut v = v.clone();
        for item in v["items"].as_array_mut().into_iter().flatten() {
            item["metadata"]["creationTimestamp"] = Value::Null;
        }
        v
    };
    assert_eq!(strip(&list), strip(&again));
    let by_key: BTreeMap<String, &Value> = pods.iter().map(|p| (key_of(p), p)).collect();
    let mut saw_hot = false;
    for item in &items {
        let pod = by_key[&key_of(item)];
        assert!(item.get("kind").is_none(), "list items carry no kind");
        assert_eq!(item["metadata"]["labels"], pod["metadata"]["labels"]);
        assert!(item["metadata"]["creationTimestamp"].is_string());
        assert_eq!(item["window"], "10m0s");
        assert!(s(&item["timestamp"]).ends_with('Z'));
        for c in item["containers"].as_array().into_iter().flatten() {
            let (cpu, memory) = usage(&c["usage"]);
            // canonical quantities: 12345678n, 7455u, 250m; 123456Ki, 256Mi
            assert_eq!(s(&c["usage"]["cpu"]), deltascope_sim::quantity::cpu(cpu));
            assert_eq!(
                s(&c["usage"]["memory"]),
                deltascope_sim::quantity::memory(memory)
            );
            assert!(!s(&c["usage"]["memory"])
                .chars()
                .all(|ch| ch.is_ascii_digit()));
            let spec = pod["spec"]["containers"]
                .as_array()
                .and_then(|cs| cs.iter().find(|x| x["name"] == c["name"]))
                .unwrap_or_else(|| panic!("{} is not a container of {}", c["name"], key_of(item)));
            let limit = parse_bytes(s(&spec["resources"]["limits"]["memory"])).unwrap_or(u64::MAX);
            assert!(memory <= limit && memory > MI, "{c}");
            if let Some(cpu_limit) = parse_nanocores(s(&spec["resources"]["limits"]["cpu"])) {
                assert!(cpu <= cpu_limit, "{c}");
                saw_hot |= cpu * 100 >= cpu_limit * 85;
            }
        }
    }
    assert!(saw_hot, "a few containers run near their CPU limit");

    // One namespace, one pod, selectors.
    let shop = t.get_json(&format!("{METRICS}/namespaces/shop/pods")).await;
    let shop_keys: BTreeSet<String> = shop["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(key_of)
        .collect();
    assert_eq!(
        shop_keys,
        got.iter()
            .filter(|k| k.starts_with("shop/"))
            .cloned()
            .collect()
    );
    let first = &items[0];
    let (ns, name) = (
        s(&first["metadata"]["namespace"]),
        s(&first["metadata"]["name"]),
    );
    let one = t
        .get_json(&format!("{METRICS}/namespaces/{ns}/pods/{name}"))
        .await;
    assert_eq!(one["kind"], "PodMetrics");
    assert_eq!(one["apiVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(one["containers"], first["containers"]);
    let carts = t
        .get_json(&format!("{METRICS}/pods?labelSelector=app%3Dcart"))
        .await;
    let cart_keys: BTreeSet<String> = carts["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(key_of)
        .collect();
    let want_carts: BTreeSet<String> = got
        .iter()
        .filter(|k| by_key[*k]["metadata"]["labels"]["app"] == "cart")
        .cloned()
        .collect();
    assert!(!want_carts.is_empty());
    assert_eq!(cart_keys, want_carts);
    let named = t
        .get_json(&format!(
            "{METRICS}/pods?fieldSelector=metadata.name%3D{name}"
        ))
        .await;
    assert_eq!(named["items"].as_array().map(Vec::len), Some(1));
    let not_shop = t
        .get_json(&format!(
            "{METRICS}/pods?fieldSelector=metadata.namespace!%3Dshop"
        ))
        .await;
    assert!(not_shop["items"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|i| i["metadata"]["namespace"] != "shop"));

    // Nodes: their pods' usage plus an overhead.
    let (_, nodes) = t.list_all("/api/v1/nodes").await;
    let node_list = t.get_json(&format!("{METRICS}/nodes")).await;
    assert_eq!(node_list["kind"], "NodeMetricsList");
    let node_items = node_list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(node_items.len(), nodes.len());
    for n in &node_items {
        let node = s(&n["metadata"]["name"]);
        let (cpu, memory) = usage(&n["usage"]);
        let (pods_cpu, pods_memory) = items
            .iter()
            .filter(|i| by_key[&key_of(i)]["spec"]["nodeName"] == node)
            .map(pod_usage)
            .fold((0, 0), |(a, b), (c, m)| (a + c, b + m));
        let overhead = (cpu - pods_cpu, memory - pods_memory);
        assert!(
            (100_000_000..300_000_000).contains(&overhead.0)
                && (600 * MI..1200 * MI).contains(&overhead.1),
            "{node}: overhead {overhead:?}"
        );
        assert!(n["metadata"]["labels"]["kubernetes.io/hostname"] == node);
        assert!(n["metadata"].get("namespace").is_none());
    }
    let node0 = t.get_json(&format!("{METRICS}/nodes/node-0")).await;
    assert_eq!(node0["kind"], "NodeMetrics");
    assert_eq!(node0["usage"], node_items[0]["usage"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_answered_as_the_apiserver_does() {
    let t = start(metrics_config(30, Duration::from_secs(600))).await;
    let status = |r: &Reply| {
        (
            r.status,
            r.json()["reason"].as_str().unwrap_or_default().to_string(),
        )
    };

    let r = t.get(&format!("{METRICS}/pods?watch=1")).await;
    assert_eq!(status(&r), (405, "MethodNotAllowed".into()));
    assert_eq!(
        r.json()["message"],
        "watch is not supported on resources of kind \"pods.metrics.k8s.io\""
    );
    let r = t.get(&format!("{METRICS}/nodes?watch=true")).await;
    assert_eq!(status(&r), (405, "MethodNotAllowed".into()));
    assert_eq!(t.get(&format!("{METRICS}/watch/pods")).await.status, 404);

    let r = t
        .get(&format!("{METRICS}/pods?labelSelector=app%20in%20cart"))
        .await;
    assert_eq!(status(&r), (400, "BadRequest".into()));
    let r = t
        .get(&format!(
            "{METRICS}/pods?fieldSelector=spec.nodeName%3Dnode-0"
        ))
        .await;
    assert_eq!(status(&r), (400, "BadRequest".into()));

    let r = t
        .get(&format!("{METRICS}/namespaces/shop/pods/nosuch"))
        .await;
    assert_eq!(status(&r), (404, "NotFound".into()));
    assert_eq!(r.json()["message"], "pods \"nosuch\" not found");
    let r = t.get(&format!("{METRICS}/nodes/nosuch")).await;
    assert_eq!(status(&r), (404, "NotFound".into()));
    assert_eq!(r.json()["message"], "node \"nosuch\" not found");
    assert_eq!(t.get(&format!("{METRICS}/deployments")).await.status, 404);

    // A pod that exists but has no metrics (not running yet).
    let (_, pods) = t.list_all("/api/v1/pods").await;
    let pending = pods
        .iter()
        .find(|p| p["status"]["phase"] == "Pending")
        .expect("the seed has a Pending pod");
    let (ns, name) = (
        s(&pending["metadata"]["namespace"]),
        s(&pending["metadata"]["name"]),
    );
    let r = t
        .get(&format!("{METRICS}/namespaces/{ns}/pods/{name}"))
        .await;
    assert_eq!(status(&r), (404, "NotFound".into()));
    assert_eq!(
        r.json()["message"],
        format!("podmetrics.metrics.k8s.io \"{ns}/{name}\" not found")
    );
    assert_eq!(t.post(&format!("{METRICS}/pods"), "{}").await.status, 405);
}

/// The rows kubectl printed, split on whitespace, header first.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_top_prints_what_the_sim_holds() {
    let t = start(metrics_config(60, Duration::from_secs(3600))).await;
    // top pod -A: every pod's summed usage, rounded as kubectl rounds.
    let (list, out) = in_one_window(&t, &format!("{METRICS}/pods"), || {
        top(&t, &["top", "pod", "-A"])
    })
    .await;
    let printed = rows(&out);
    assert_eq!(
        printed[0],
        ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        "{out}"
    );
    let want: BTreeSet<Vec<String>> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            let (cpu, memory) = pod_usage(i);
            vec![
                s(&i["metadata"]["namespace"]).to_string(),
                s(&i["metadata"]["name"]).to_string(),
                top_cpu(cpu),
                top_memory(memory),
            ]
        })
        .collect();
    assert!(want.len() > 10);
    assert_eq!(printed[1..].iter().cloned().collect::<BTreeSet<_>>(), want);

    // top pod NAME -n NS --containers: one row per container.
    let item = list["items"][0].clone();
    let (ns, name) = (
        s(&item["metadata"]["namespace"]).to_string(),
        s(&item["metadata"]["name"]).to_string(),
    );
    let out = top(&t, &["top", "pod", &name, "-n", &ns, "--containers"]).await;
    let printed = rows(&out);
    assert_eq!(
        printed[0],
        ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        "{out}"
    );
    let want: BTreeSet<Vec<String>> = item["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (cpu, memory) = usage(&c["usage"]);
            vec![
                name.clone(),
                s(&c["name"]).to_string(),
                top_cpu(cpu),
                top_memory(memory),
            ]
        })
        .collect();
    assert_eq!(printed[1..].iter().cloned().collect::<BTreeSet<_>>(), want);

    // top pod -l SEL -A: the selected pods only.
    let out = top(&t, &["top", "pod", "-l", "app=cart", "-A"]).await;
    let got: BTreeSet<String> = rows(&out)[1..]
        .iter()
        .map(|r| format!("{}/{}", r[0], r[1]))
        .collect();
    let carts = t
        .get_json(&format!("{METRICS}/pods?labelSelector=app%3Dcart"))
        .await;
    let want: BTreeSet<String> = carts["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(key_of)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);

    // get: metrics-server's Table, the usage summed over the containers.
    let (list, out) = in_one_window(&t, &format!("{METRICS}/namespaces/shop/pods"), || {
        top(&t, &["get", "pods.metrics.k8s.io", "-n", "shop"])
    })
    .await;
    let printed = rows(&out);
    assert_eq!(printed[0], ["NAME", "CPU", "MEMORY", "WINDOW"], "{out}");
    let want: BTreeSet<Vec<String>> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            let (cpu, memory) = pod_usage(i);
            vec![
                s(&i["metadata"]["name"]).to_string(),
                deltascope_sim::quantity::cpu(cpu),
                deltascope_sim::quantity::memory(memory),
                "1h0m0s".to_string(),
            ]
        })
        .collect();
    assert_eq!(printed[1..].iter().cloned().collect::<BTreeSet<_>>(), want);

    // top node: usage, and its share of the node's allocatable.
    let (nodes, out) = in_one_window(&t, &format!("{METRICS}/nodes"), || {
        top(&t, &["top", "node"])
    })
    .await;
    let printed = rows(&out);
    assert_eq!(
        printed[0],
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        "{out}"
    );
    let (_, core_nodes) = t.list_all("/api/v1/nodes").await;
    let allocatable: BTreeMap<String, (u64, u64)> = core_nodes
        .iter()
        .map(|n| (key_of(n), usage(&n["status"]["allocatable"])))
        .collect();
    let want: BTreeSet<Vec<String>> = nodes["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let node = s(&n["metadata"]["name"]).to_string();
            let (cpu, memory) = usage(&n["usage"]);
            let (cpu_alloc, memory_alloc) = allocatable[&node];
            let milli_cpu = cpu.div_ceil(1_000_000);
            // kubectl: int64(usage.MilliValue() / allocatable.MilliValue() * 100)
            let cpu_pct = (milli_cpu as f64 / (cpu_alloc / 1_000_000) as f64 * 100.0) as i64;
            let memory_pct = ((memory * 1000) as f64 / (memory_alloc * 1000) as f64 * 100.0) as i64;
            vec![
                node,
                top_cpu(cpu),
                format!("{cpu_pct}%"),
                top_memory(memory),
                format!("{memory_pct}%"),
            ]
        })
        .collect();
    assert_eq!(printed[1..].iter().cloned().collect::<BTreeSet<_>>(), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaking_container_climbs_to_its_limit_and_is_oomkilled() {
    let n = 4;
    let t = start(SimConfig {
        metrics_leak_windows: n,
        ..metrics_config(40, Duration::from_secs(1))
    })
    .await;
    // The leaker: shop's first running app=cart pod, by name.
    let (rv, carts) = t
        .list_all("/api/v1/namespaces/shop/pods?labelSelector=app%3Dcart")
        .await;
    let pod = carts
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .find(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
        .cloned()
        .expect("a running cart pod");
    let name = s(&pod["metadata"]["name"]).to_string();
    let restarts = pod["status"]["containerStatuses"][0]["restartCount"]
        .as_u64()
        .unwrap_or(0);
    let old_id = s(&pod["status"]["containerStatuses"][0]["containerID"]).to_string();
    let limit = 256 * MI;
    let mut watch = t
        .watch(&format!(
            "/api/v1/namespaces/shop/pods?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3D{name}"
        ))
        .await;

    // Memory by window until the kill shows, then a window after it.
    let mut climb: BTreeMap<String, u64> = BTreeMap::new();
    let mut killed_at = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3 * n as u64 + 10);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no OOM kill; memory by window: {climb:?}"
        );
        let m = t
            .get_json(&format!("{METRICS}/namespaces/shop/pods/{name}"))
            .await;
        let cart = m["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "cart"))
            .cloned()
            .expect("the cart container is measured");
        let (_, memory) = usage(&cart["usage"]);
        let now = t
            .get_json(&format!("/api/v1/namespaces/shop/pods/{name}"))
            .await;
        let count = now["status"]["containerStatuses"][0]["restartCount"]
            .as_u64()
            .unwrap_or(0);
        if count == restarts {
            climb.insert(s(&m["timestamp"]).to_string(), memory);
        } else if killed_at.is_none() {
            killed_at = Some(s(&m["timestamp"]).to_string());
        } else if killed_at.as_deref() != Some(s(&m["timestamp"])) || memory < limit / 2 {
            // After the kill the climb starts again from the low.
            assert!(memory < limit / 4, "after the kill: {memory}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let values: Vec<u64> = climb.values().copied().collect();
    assert!(values.len() >= 2, "{climb:?}");
    assert!(
        values.windows(2).all(|w| w[0] < w[1] || w[0] == limit),
        "memory rises window by window: {climb:?}"
    );
    assert_eq!(
        values.last(),
        Some(&limit),
        "it reached its limit: {climb:?}"
    );

    // The pod: one more restart, the last run OOMKilled, running again.
    let now = t
        .get_json(&format!("/api/v1/namespaces/shop/pods/{name}"))
        .await;
    let cart = &now["status"]["containerStatuses"][0];
    assert_eq!(cart["name"], "cart");
    assert_eq!(cart["restartCount"], restarts + 1);
    assert_eq!(cart["lastState"]["terminated"]["reason"], "OOMKilled");
    assert_eq!(cart["lastState"]["terminated"]["exitCode"], 137);
    assert_eq!(
        cart["lastState"]["terminated"]["containerID"],
        old_id.as_str()
    );
    assert!(cart["state"]["running"].is_object());
    assert_ne!(cart["containerID"], old_id.as_str());

    // Watchers saw it as a MODIFIED pod.
    let seen = loop {
        let e = watch.event(Duration::from_secs(5)).await;
        let status = &e["object"]["status"]["containerStatuses"][0];
        if e["type"] == "MODIFIED" && status["lastState"]["terminated"]["reason"] == "OOMKilled" {
            break status.clone();
        }
    };
    assert_eq!(seen["restartCount"], restarts + 1);

    // node-problem-detector's Warning on the pod's node, and the kubelet's restart.
    let node = s(&now["spec"]["nodeName"]);
    let events = t
        .get_json("/api/v1/events?fieldSelector=reason%3DOOMKilling")
        .await;
    let oom = events["items"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["involvedObject"]["name"] == node))
        .cloned()
        .unwrap_or_else(|| panic!("no OOMKilling event on {node}: {events}"));
    assert_eq!(oom["type"], "Warning");
    assert_eq!(oom["involvedObject"]["kind"], "Node");
    assert_eq!(oom["source"]["component"], "kernel-monitor");
    assert_eq!(oom["source"]["host"], node);
    let message = s(&oom["message"]);
    assert!(
        message.starts_with("Memory cgroup out of memory: Killed process ")
            && message.contains(" (cart) total-vm:"),
        "{message}"
    );
    let started = t
        .get_json(&format!(
            "/api/v1/namespaces/shop/events?fieldSelector=involvedObject.name%3D{name},reason%3DStarted"
        ))
        .await;
    assert!(
        !started["items"].as_array().is_none_or(Vec::is_empty),
        "the kubelet started it again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_metrics_server_there_is_no_metrics_api() {
    let t = start(SimConfig {
        metrics: false,
        ..quiet(20)
    })
    .await;
    let groups = t.get_json("/apis").await;
    assert!(
        groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|g| g["name"] != "metrics.k8s.io"),
        "{groups}"
    );
    let aggregated = t
        .request_with(
            "/apis",
            &[(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )],
        )
        .await
        .json();
    assert!(!aggregated.to_string().contains("metrics.k8s.io"));
    for path in [
        "/apis/metrics.k8s.io",
        METRICS,
        "/apis/metrics.k8s.io/v1beta1/pods",
        "/apis/metrics.k8s.io/v1beta1/nodes/node-0",
    ] {
        assert_eq!(t.get(path).await.status, 404, "{path}");
    }
    let home = std::env::temp_dir().join(format!("deltascope-sim-top-off-{}", t.addr.port()));
    let (ok, _, err) = kubectl_at(&t.base, &home, &["top", "pod", "-A"]).await;
    assert!(!ok, "kubectl top pod succeeded without a metrics API");
    assert!(err.contains("Metrics API not available"), "{err}");
}
