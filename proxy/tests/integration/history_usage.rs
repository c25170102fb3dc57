//! Serve recording the in-process simulated cluster's resource usage (one
//! metrics window a second, `--record-usage 1s`) and answering
//! `GET /_deltascope/history/usage`: a pod's recorded windows are what the
//! sim's metrics API said in them (read through serve each window), a
//! Deployment's are its pods' summed, bad parameters are refused naming
//! each, and nothing is recorded with `--record-usage off` or from a
//! cluster without a metrics API (and no error either).

use crate::serve_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use deltascope_history::{HistoryTarget, Retention};
use deltascope_proxy::recorder::RecorderConfig;
use deltascope_proxy::recording::HistoryOptions;
use deltascope_proxy::serve::{Running, Upstream};
use deltascope_sim::SimConfig;
use serde_json::Value;
use serve_support::*;

const TOKEN: &str = "usage-token-0123456789abcdef0123456789ab";
const METRICS: &str = "/apis/metrics.k8s.io/v1beta1";

/// Serve `--demo` recording into a fresh SQLite file, metrics a window a
/// second (or none), usage stored every `usage_every`.
async fn serve_sampling(metrics: bool, usage_every: Option<Duration>) -> Running {
    let sim = SimConfig {
        initial_pods: 30,
        churn_per_sec: 0.0,
        metrics,
        metrics_resolution: Duration::from_secs(1),
        ..SimConfig::default()
    };
    let mut config = config_with_token(Upstream::Demo(sim), TOKEN);
    config.history = HistoryOptions {
        target: HistoryTarget::Sqlite(scratch_dir().join("history.sqlite")),
        record: true,
        recorder: RecorderConfig {
            usage_every,
            ..RecorderConfig::default()
        },
        retention: Retention::default(),
    };
    start_proxy(config).await
}

async fn get(proxy: &Running, target: &str) -> Resp {
    send(proxy.local_addr(), req("GET", target).bearer(TOKEN)).await
}

fn now_ms() -> i64 {
    deltascope_proxy::recorder::wall_now_ms()
}

fn time(ms: i64) -> String {
    deltascope_facts::time::format_rfc3339_millis(ms).unwrap()
}

fn quantity(text: &Value, of: fn(deltascope_facts::quantity::Quantity) -> i128) -> i64 {
    let parsed = deltascope_facts::quantity::parse_quantity(text.as_str().unwrap()).unwrap();
    of(parsed) as i64
}

/// A pod's (cpu nanocores, memory bytes) summed, and each container's.
type Measured = ((i64, i64), Vec<(String, i64, i64)>);

/// A PodMetrics item's (cpu nanocores, memory bytes) summed, and each
/// container's.
fn usage_of(item: &Value) -> Measured {
    use deltascope_facts::quantity::Quantity;
    let containers: Vec<(String, i64, i64)> = item["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                quantity(&c["usage"]["cpu"], Quantity::nanos),
                quantity(&c["usage"]["memory"], Quantity::value),
            )
        })
        .collect();
    let cpu = containers.iter().map(|c| c.1).sum();
    let memory = containers.iter().map(|c| c.2).sum();
    ((cpu, memory), containers)
}

fn at_of(item: &Value) -> i64 {
    deltascope_facts::time::parse_rfc3339_millis(item["timestamp"].as_str().unwrap()).unwrap()
}

/// Waits until the summary lists each of `resources` with a delta.
async fn wait_recorded(proxy: &Running, resources: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let summary = get(proxy, "/_deltascope/history/summary").await.json();
        let recorded = |name: &str| {
            summary["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["resource"] == name && r["deltas"].as_i64() > Some(0))
        };
        if resources.iter().all(|r| recorded(r)) {
            return;
        }
        assert!(Instant::now() < deadline, "never recorded: {summary}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A Deployment with at least two measured pods: (namespace, deployment,
/// its pods' names).
async fn a_deployment(proxy: &Running) -> (String, String, BTreeSet<String>) {
    let sets = get(proxy, "/apis/apps/v1/replicasets").await.json();
    let pods = get(proxy, "/api/v1/pods").await.json();
    let measured = get(proxy, &format!("{METRICS}/pods")).await.json();
    let measured: BTreeSet<(String, String)> = measured["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            (
                m["namespace"].as_str().unwrap().into(),
                m["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    let controller = |object: &Value| -> Option<(String, String)> {
        object["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .find(|r| r["controller"] == true)
            .map(|r| {
                (
                    r["kind"].as_str().unwrap().into(),
                    r["name"].as_str().unwrap().into(),
                )
            })
    };
    let mut by_deployment: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for pod in pods["items"].as_array().unwrap() {
        let namespace = pod["metadata"]["namespace"].as_str().unwrap().to_string();
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        let Some((kind, rs)) = controller(pod) else {
            continue;
        };
        let set = sets["items"].as_array().unwrap().iter().find(|s| {
            s["metadata"]["name"] == rs.as_str() && s["metadata"]["namespace"] == namespace.as_str()
        });
        let Some(("Deployment", deployment)) = set
            .and_then(controller)
            .as_ref()
            .map(|(k, n)| (k.as_str(), n.clone()))
        else {
            continue;
        };
        if kind == "ReplicaSet" && measured.contains(&(namespace.clone(), name.clone())) {
            by_deployment
                .entry((namespace, deployment))
                .or_default()
                .insert(name);
        }
    }
    let ((namespace, deployment), pods) = by_deployment
        .into_iter()
        .filter(|((_, d), _)| d != "cart")
        .max_by_key(|(_, pods)| pods.len())
        .expect("a Deployment with measured pods");
    assert!(pods.len() >= 2, "{deployment}: {pods:?}");
    (namespace, deployment, pods)
}

/// An owner's pods summed in a window: (cpu, memory, pods).
type Summed = (i64, i64, usize);

/// Reads through serve, once a second for 10 s, `pod`'s metrics and
/// those of `pods` in `namespace` (summed), by window.
async fn watch_windows(
    proxy: &Running,
    namespace: &str,
    pod: &str,
    pods: &BTreeSet<String>,
) -> (BTreeMap<i64, Measured>, BTreeMap<i64, Summed>) {
    let mut said: BTreeMap<i64, Measured> = BTreeMap::new();
    let mut summed: BTreeMap<i64, Summed> = BTreeMap::new();
    for _ in 0..10 {
        let one = get(
            proxy,
            &format!("{METRICS}/namespaces/{namespace}/pods/{pod}"),
        )
        .await;
        assert_eq!(one.status, 200, "{}", one.text());
        let one = one.json();
        said.insert(at_of(&one), usage_of(&one));
        let list = get(proxy, &format!("{METRICS}/namespaces/{namespace}/pods"))
            .await
            .json();
        let mine: Vec<&Value> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| pods.contains(i["metadata"]["name"].as_str().unwrap()))
            .collect();
        if let Some(first) = mine.first() {
            let (cpu, memory) = mine.iter().fold((0, 0), |(c, m), i| {
                let ((ic, im), _) = usage_of(i);
                (c + ic, m + im)
            });
            summed.insert(at_of(first), (cpu, memory, mine.len()));
        }
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }
    (said, summed)
}

fn sample_at(sample: &Value) -> i64 {
    deltascope_facts::time::parse_rfc3339_millis(sample["at"].as_str().unwrap()).unwrap()
}

/// Every recorded sample of a window that was read is what was read; at
/// least three were.
fn check_by_name(answer: &Value, said: &BTreeMap<i64, Measured>) {
    let mut matched = 0;
    for sample in answer["samples"].as_array().unwrap() {
        let Some(((cpu, memory), containers)) = said.get(&sample_at(sample)) else {
            continue;
        };
        matched += 1;
        assert_eq!(
            (sample["cpu"].as_i64(), sample["memory"].as_i64()),
            (Some(*cpu), Some(*memory)),
            "{sample}"
        );
        let recorded: Vec<(String, i64, i64)> = sample["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().into(),
                    c["cpu"].as_i64().unwrap(),
                    c["memory"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(&recorded, containers);
    }
    assert!(
        matched >= 3,
        "{matched} windows matched: {answer} against {said:?}"
    );
}

/// As [`check_by_name`], for an owner's sums.
fn check_by_owner(answer: &Value, summed: &BTreeMap<i64, Summed>) {
    let mut matched = 0;
    for sample in answer["samples"].as_array().unwrap() {
        assert!(sample.get("containers").is_none(), "{sample}");
        let Some((cpu, memory, count)) = summed.get(&sample_at(sample)) else {
            continue;
        };
        matched += 1;
        assert_eq!(sample["pods"].as_u64(), Some(*count as u64), "{sample}");
        assert_eq!(
            (sample["cpu"].as_i64(), sample["memory"].as_i64()),
            (Some(*cpu), Some(*memory))
        );
    }
    assert!(
        matched >= 3,
        "{matched} windows matched: {answer} against {summed:?}"
    );
}

fn peak_cpu(answer: &Value) -> Option<i64> {
    answer["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["cpu"].as_i64())
        .max()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_usage_is_what_the_metrics_api_said() {
    let proxy = serve_sampling(true, Some(Duration::from_secs(1))).await;
    wait_recorded(&proxy, &["pods", "replicasets.apps"]).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (namespace, deployment, pods) = a_deployment(&proxy).await;
    let pod = pods.iter().next().unwrap().clone();
    let start = now_ms();
    let (said, summed) = watch_windows(&proxy, &namespace, &pod, &pods).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let range = format!(
        "since={}&until={}",
        time(start - 60_000),
        time(now_ms() + 60_000)
    );
    let usage = "/_deltascope/history/usage?resource=pods";

    let by_name = get(
        &proxy,
        &format!("{usage}&namespace={namespace}&name={pod}&{range}"),
    )
    .await;
    assert_eq!(by_name.status, 200, "{}", by_name.text());
    assert_eq!(by_name.header("content-type"), Some("application/json"));
    let by_name = by_name.json();
    assert_eq!(
        (&by_name["thinned"], &by_name["window"]),
        (&Value::Bool(false), &Value::from(1_000))
    );
    check_by_name(&by_name, &said);

    let owner = format!("Deployment%2F{deployment}");
    let by_owner = get(
        &proxy,
        &format!("{usage}&namespace={namespace}&owner={owner}&{range}"),
    )
    .await
    .json();
    assert_eq!(by_owner["owner"], format!("Deployment/{deployment}"));
    check_by_owner(&by_owner, &summed);

    // thinned to 2 points: each its bucket's peak
    let thinned = get(
        &proxy,
        &format!("{usage}&namespace={namespace}&name={pod}&{range}&points=2"),
    )
    .await
    .json();
    assert_eq!(thinned["thinned"], true);
    assert!(thinned["samples"].as_array().unwrap().len() <= 2);
    assert_eq!(peak_cpu(&by_name), peak_cpu(&thinned));

    let summary = get(&proxy, "/_deltascope/history/summary").await.json();
    assert!(summary["usage"]["samples"].as_i64() > Some(0), "{summary}");
    let resources = summary["resources"].as_array().unwrap();
    assert!(
        resources
            .iter()
            .all(|r| !r["resource"].as_str().unwrap().contains("metrics")),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_are_refused_naming_each() {
    let proxy = serve_sampling(true, Some(Duration::from_secs(1))).await;
    let range = "since=2026-01-01T00:00:00Z&until=2026-01-01T01:00:00Z";
    for (query, named) in [
        (format!("resource=deployments&namespace=a&name=b&{range}"), "resource"),
        (format!("resource=pods&name=b&{range}"), "namespace"),
        (format!("resource=pods&namespace=a&{range}"), "owner"),
        (format!("resource=pods&namespace=a&owner=web&{range}"), "owner"),
        (format!("resource=pods&namespace=a&name=b&owner=Deployment%2Fb&{range}"), "owner"),
        (format!("resource=pods&namespace=a&name=b&{range}&points=0"), "points"),
        (format!("resource=pods&namespace=a&name=b&{range}&limit=3"), "limit"),
        (format!("resource=nodes&namespace=a&name=b&{range}"), "namespace"),
        ("resource=pods&namespace=a&name=b&since=2026-01-01T01:00:00Z&until=2026-01-01T00:00:00Z".into(), "since"),
        ("resource=pods&namespace=a&name=b&since=now&until=2026-01-01T00:00:00Z".into(), "since"),
        ("resource=pods&namespace=a&name=b&since=2026-01-01T00:00:00Z".into(), "until"),
    ] {
        let resp = get(&proxy, &format!("/_deltascope/history/usage?{query}")).await;
        assert_eq!(resp.status, 400, "{query}: {}", resp.text());
        let status = resp.json();
        assert_eq!(status["kind"], "Status", "{query}");
        let message = status["message"].as_str().unwrap();
        assert!(message.contains(named), "{query}: {message}");
    }
    let resp = send(
        proxy.local_addr(),
        req(
            "GET",
            &format!("/_deltascope/history/usage?resource=nodes&name=n&{range}"),
        ),
    )
    .await;
    assert_eq!(resp.status, 401, "no session: {}", resp.text());
    let resp = send(
        proxy.local_addr(),
        req(
            "POST",
            &format!("/_deltascope/history/usage?resource=nodes&name=n&{range}"),
        )
        .bearer(TOKEN),
    )
    .await;
    assert_eq!(resp.status, 405);
}

/// Every sample the route holds for the sim's nodes over the last minute.
async fn node_samples(proxy: &Running) -> Vec<Value> {
    let nodes = get(proxy, "/api/v1/nodes").await.json();
    let node = nodes["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let range = format!(
        "since={}&until={}",
        time(now_ms() - 60_000),
        time(now_ms() + 1_000)
    );
    let resp = get(
        proxy,
        &format!("/_deltascope/history/usage?resource=nodes&name={node}&{range}"),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["samples"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_sampled_when_off_or_without_a_metrics_api() {
    let off = serve_sampling(true, None).await;
    let absent = serve_sampling(false, Some(Duration::from_secs(1))).await;
    let on = serve_sampling(true, Some(Duration::from_secs(1))).await;
    for proxy in [&off, &absent, &on] {
        wait_recorded(proxy, &["pods", "nodes"]).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    // the same wait samples where it is on (so an empty answer means something)
    assert!(!node_samples(&on).await.is_empty());
    for proxy in [&off, &absent] {
        assert!(node_samples(proxy).await.is_empty());
        let summary = get(proxy, "/_deltascope/history/summary").await.json();
        assert_eq!(summary["usage"], Value::Null, "{summary}");
        // recording, nothing failing
        let state = summary["recording"]["state"].as_str().unwrap_or_default();
        assert!(
            state.starts_with("recording") && !state.contains("failing"),
            "{summary}"
        );
    }
}

/// Every window recorded of an owned pod is in its owner's sums, the first
/// windows too: the sampler stores a window of pods only once the
/// recorder's pods and ReplicaSets are listed (their owners known).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_sums_hold_every_window_its_pods_have_from_the_first() {
    let start = now_ms();
    let proxy = serve_sampling(true, Some(Duration::from_secs(1))).await;
    wait_recorded(&proxy, &["pods", "replicasets.apps"]).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (namespace, deployment, pods) = a_deployment(&proxy).await;
    let range = format!(
        "since={}&until={}",
        time(start - 60_000),
        time(now_ms() + 60_000)
    );
    let usage = "/_deltascope/history/usage?resource=pods";
    let times = |answer: &Value| -> BTreeSet<i64> {
        answer["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(sample_at)
            .collect()
    };
    let owner = format!("Deployment%2F{deployment}");
    let summed = times(
        &get(
            &proxy,
            &format!("{usage}&namespace={namespace}&owner={owner}&{range}"),
        )
        .await
        .json(),
    );
    for pod in &pods {
        let measured = times(
            &get(
                &proxy,
                &format!("{usage}&namespace={namespace}&name={pod}&{range}"),
            )
            .await
            .json(),
        );
        assert!(measured.len() >= 3, "{pod}: {measured:?}");
        let missing: Vec<&i64> = measured.difference(&summed).collect();
        assert!(
            missing.is_empty(),
            "windows of {pod} not in Deployment/{deployment}'s sums: {missing:?} (sums: {summed:?})"
        );
    }
}
