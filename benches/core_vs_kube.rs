//! Core figures of `cargo xtask bench` (the core against kube-runtime): deltas/s through
//! deltascope's informer (framer → decode → Reflector → DeltaFIFO → Indexer →
//! History) against kube-runtime 5's `reflector::store::Writer` fed from the
//! same recorded bytes (parsed with serde_json into k8s-openapi types, as
//! kube-client does), and the bytes each side holds per object after a
//! 100k-pod list, measured with a counting global allocator.
//!
//! A custom harness (`harness = false`): for every figure the two sides are
//! run alternately, one warm-up each, then `samples` timed runs each; the
//! median is reported. Both sides include parsing; neither includes dropping
//! the final store. Results go to `target/bench/core.json` (read by
//! `cargo xtask bench`) and a summary to stdout.
//!
//! Arguments (after `cargo bench --bench core_vs_kube --`): `--quick` for a
//! smaller stream and fewer samples; `--out PATH` to write elsewhere.

mod tsv_row;

use std::hint::black_box;
use std::time::{Duration, Instant};

use deltascope::informer::{
    Action, HistoryConfig, Informer, InformerConfig, Input, RequestId, RequestKind, ResourceRef,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::core::{ObjectList, WatchEvent};
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use serde_json::{json, Value};

// ---- counting allocator ---------------------------------------------------

#[global_allocator]
static ALLOCATOR: deltascope::metrics::heap::CountingAllocator =
    deltascope::metrics::heap::CountingAllocator;

/// Bytes currently allocated through the global allocator.
fn live() -> isize {
    deltascope::metrics::heap::live_bytes() as isize
}

// ---- recorded streams -----------------------------------------------------

const T0: &str = "2026-11-20T08:14:03Z";

/// The names of pod `i` of the recorded streams.
struct PodNames {
    app: &'static str,
    ns: String,
    hash: String,
    rs: String,
    name: String,
    node: String,
}

impl PodNames {
    fn of(i: usize) -> PodNames {
        let app = [
            "checkout", "search", "payments", "catalog", "frontend", "cart",
        ][i % 6];
        let hash = format!("{:x}", 0x5d9f_c7b4_u64 + (i as u64 % 40));
        let rs = format!("{app}-{hash}");
        PodNames {
            app,
            ns: format!("team-{}", i % 25),
            name: format!("{rs}-{:05x}", i),
            node: format!(
                "ip-10-0-{}-{}.eu-west-1.compute.internal",
                i % 16,
                10 + i % 200
            ),
            hash,
            rs,
        }
    }
}

/// A realistic ~4–5 KB Pod of a Deployment: two containers, probes, env,
/// volumes, tolerations, four conditions, container statuses, managedFields.
fn pod(i: usize, version: u64, rv: u64) -> Value {
    let n = PodNames::of(i);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": pod_metadata(i, rv, &n),
        "spec": pod_spec(i, version, &n),
        "status": pod_status(i, version, &n),
    })
}

/// The pod's metadata: labels, annotations, its owner and managedFields.
fn pod_metadata(i: usize, rv: u64, n: &PodNames) -> Value {
    let PodNames {
        app,
        ns,
        hash,
        rs,
        name,
        ..
    } = n;
    json!({
        "name": name, "generateName": format!("{rs}-"), "namespace": ns,
        "uid": format!("7c1e{:04x}-3b2a-4f0e-9d61-{:012x}", i % 65536, i),
        "resourceVersion": rv.to_string(), "creationTimestamp": T0,
        "labels": {"app": app, "tier": "backend", "pod-template-hash": hash, "track": "stable"},
        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                        "kubectl.kubernetes.io/default-container": app},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
            "uid": format!("0f3a{:04x}-77c1-4e0b-8a2d-{:012x}", i % 40, i % 40), "controller": true, "blockOwnerDeletion": true}],
        "managedFields": [
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": T0,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
               "f:ownerReferences": {".": {}}}, "f:spec": {"f:containers": {}, "f:volumes": {}}}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": T0, "subresource": "status",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}
        ]
    })
}

/// The pod's spec: its two containers, volumes and tolerations.
fn pod_spec(i: usize, version: u64, n: &PodNames) -> Value {
    let PodNames { app, node, .. } = n;
    json!({
        "containers": [
            {"name": app, "image": format!("registry.example.com/shop/{app}:1.{}.{}", i % 9, version % 5),
             "imagePullPolicy": "IfNotPresent",
             "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
             "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{app}-credentials"), "key": "password"}}}
             ],
             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
             "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
             "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
             "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
             ],
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
            {"name": "log-shipper", "image": "fluent/fluent-bit:3.1.9", "imagePullPolicy": "IfNotPresent",
             "args": ["--config=/fluent-bit/etc/fluent-bit.conf"],
             "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
             "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}}
        ],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "serviceAccount": "default", "nodeName": node,
        "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
        "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]
    })
}

/// The pod's status: its conditions and container statuses.
fn pod_status(i: usize, version: u64, n: &PodNames) -> Value {
    let app = n.app;
    let ready = version % 3 != 1;
    let restarts = version / 3;
    let cond = |t: &str, ok: bool| {
        json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null,
               "lastTransitionTime": T0})
    };
    json!({
        "phase": "Running", "qosClass": "Burstable",
        "conditions": [cond("PodReadyToStartContainers", true), cond("Initialized", true), cond("Ready", ready),
                       cond("ContainersReady", ready), cond("PodScheduled", true)],
        "hostIP": format!("10.0.{}.{}", i % 16, 10 + i % 200), "hostIPs": [{"ip": format!("10.0.{}.{}", i % 16, 10 + i % 200)}],
        "podIP": format!("10.244.{}.{}", i % 250, i % 251), "podIPs": [{"ip": format!("10.244.{}.{}", i % 250, i % 251)}],
        "startTime": T0,
        "containerStatuses": [
            {"name": app, "ready": ready, "restartCount": restarts, "started": true,
             "image": format!("registry.example.com/shop/{app}:1.{}.{}", i % 9, version % 5),
             "imageID": format!("registry.example.com/shop/{app}@sha256:{:064x}", i as u128 * 7919),
             "containerID": format!("containerd://{:064x}", (i as u128) << 20 | version as u128),
             "lastState": {}, "state": {"running": {"startedAt": T0}}},
            {"name": "log-shipper", "ready": true, "restartCount": 0, "started": true,
             "image": "docker.io/fluent/fluent-bit:3.1.9",
             "imageID": "docker.io/fluent/fluent-bit@sha256:4f8e2b1c9a7d6e5f3b2a1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f",
             "containerID": format!("containerd://{:064x}", (i as u128) << 24 | 0xabc),
             "lastState": {}, "state": {"running": {"startedAt": T0}}}
        ]
    })
}

/// A small (~300 B) ConfigMap.
fn configmap(i: usize, version: u64, rv: u64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": format!("settings-{i}"), "namespace": format!("team-{}", i % 25),
            "uid": format!("3f0c2c7e-8a51-4b7f-9d7e-{:012x}", i),
            "resourceVersion": rv.to_string(), "creationTimestamp": T0,
            "labels": {"app": "shop"}
        },
        "data": {"mode": "fast", "version": format!("v{version}"), "config.yaml": "replicas: 3\nlogLevel: info\n"}
    })
}

/// A recorded list response and the watch stream that follows it.
struct Recorded {
    name: &'static str,
    list: Vec<u8>,
    events: Vec<u8>,
    objects: usize,
    event_count: usize,
    /// Objects left after the stream.
    final_len: usize,
}

impl Recorded {
    fn deltas(&self) -> usize {
        self.objects + self.event_count
    }
}

/// `n` objects listed, then `m` events: 9 in 10 MODIFIED (cycling over the
/// surviving objects), 1 in 10 DELETED (from the end of the list).
fn record(name: &'static str, n: usize, m: usize, make: fn(usize, u64, u64) -> Value) -> Recorded {
    let mut rv = 1000u64;
    let mut list = Vec::with_capacity(n * 5000);
    list.extend_from_slice(
        b"{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"",
    );
    let items: Vec<Value> = (0..n)
        .map(|i| {
            rv += 1;
            make(i, 0, rv)
        })
        .collect();
    list.extend_from_slice(rv.to_string().as_bytes());
    list.extend_from_slice(b"\"},\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            list.push(b',');
        }
        serde_json::to_writer(&mut list, item).expect("serialize list item");
    }
    list.extend_from_slice(b"]}");
    drop(items);

    let mut events = Vec::with_capacity(m * 5000);
    let mut alive = n;
    let mut versions = vec![0u64; n];
    let mut next_mod = 0usize;
    for e in 0..m {
        rv += 1;
        let delete = e % 10 == 9 && alive > n / 2;
        let (kind, i) = if delete {
            alive -= 1;
            ("DELETED", alive)
        } else {
            let i = next_mod % alive;
            next_mod += 1;
            versions[i] += 1;
            ("MODIFIED", i)
        };
        let ev = json!({"type": kind, "object": make(i, versions[i], rv)});
        serde_json::to_writer(&mut events, &ev).expect("serialize event");
        events.push(b'\n');
    }
    Recorded {
        name,
        list,
        events,
        objects: n,
        event_count: m,
        final_len: alive,
    }
}

// ---- the two sides --------------------------------------------------------

/// Chunk size the transport delivers (a typical fetch/hyper read).
const CHUNK: usize = 64 * 1024;

fn sent(inf: &mut Informer, want: RequestKind) -> RequestId {
    while let Some(action) = inf.poll_action() {
        if let Action::Send { id, kind, .. } = action {
            assert_eq!(kind, want, "the informer asked for the wrong request");
            return id;
        }
    }
    panic!("the informer did not ask for a {want:?} request");
}

fn feed(inf: &mut Informer, id: RequestId, body: &[u8], now: u64) {
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        now,
    );
    for chunk in body.chunks(CHUNK) {
        inf.handle(Input::BodyChunk { id, bytes: chunk }, now);
    }
}

fn informer_config(resource: &str) -> InformerConfig {
    let mut config = InformerConfig::new(ResourceRef::new("", "v1", resource, true))
        .streaming_list(false)
        .resync(None);
    config.history = HistoryConfig::default();
    config
}

/// Ours: the whole informer, sans-IO, fed the recorded bytes in 64 KiB chunks.
fn ours(rec: &Recorded, resource: &str) -> Informer {
    let mut inf = Informer::new(informer_config(resource));
    inf.start(1_000);
    let list = sent(&mut inf, RequestKind::List);
    feed(&mut inf, list, &rec.list, 1_000);
    inf.handle(Input::BodyEnd { id: list }, 1_000);
    let watch = sent(&mut inf, RequestKind::Watch);
    feed(&mut inf, watch, &rec.events, 2_000);
    assert!(inf.has_synced(), "{}: informer never synced", rec.name);
    assert_eq!(
        inf.store().len(),
        rec.final_len,
        "{}: store size after the stream",
        rec.name
    );
    inf
}

/// kube-runtime: the list parsed into `ObjectList<K>` and applied as
/// Init/InitApply/InitDone (what `watcher` + `reflector` do), then each
/// watch line parsed into `WatchEvent<K>` and applied as Apply/Delete. Lines
/// are cut from the same 64 KiB chunks with a carry-over buffer, as
/// kube-client's line codec does.
fn kube_side<K>(rec: &Recorded) -> Writer<K>
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + Clone
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let mut writer = Writer::<K>::new(());
    let mut body = Vec::new();
    for chunk in rec.list.chunks(CHUNK) {
        body.extend_from_slice(chunk);
    }
    let list: ObjectList<K> = serde_json::from_slice(&body).expect("kube: parse list");
    drop(body);
    writer.apply_watcher_event(&Event::Init);
    for item in list.items {
        writer.apply_watcher_event(&Event::InitApply(item));
    }
    writer.apply_watcher_event(&Event::InitDone);
    let mut carry: Vec<u8> = Vec::new();
    let apply = |line: &[u8], writer: &mut Writer<K>| {
        let ev: WatchEvent<K> = serde_json::from_slice(line).expect("kube: parse event");
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                writer.apply_watcher_event(&Event::Apply(o))
            }
            WatchEvent::Deleted(o) => writer.apply_watcher_event(&Event::Delete(o)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("kube: error event {e:?}"),
        }
    };
    for chunk in rec.events.chunks(CHUNK) {
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            if carry.is_empty() {
                apply(&rest[..nl], &mut writer);
            } else {
                carry.extend_from_slice(&rest[..nl]);
                apply(&carry, &mut writer);
                carry.clear();
            }
            rest = &rest[nl + 1..];
        }
        carry.extend_from_slice(rest);
    }
    assert_eq!(
        writer.as_reader().len(),
        rec.final_len,
        "{}: kube store size after the stream",
        rec.name
    );
    writer
}

// ---- harness --------------------------------------------------------------

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Alternates the two closures: one warm-up each, then `samples` timed runs
/// each. Returns the medians. The result of each run is dropped outside the
/// timed region.
fn compare<A, B>(
    samples: usize,
    mut a: impl FnMut() -> A,
    mut b: impl FnMut() -> B,
) -> (Duration, Duration) {
    drop(black_box(a()));
    drop(black_box(b()));
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        let t = Instant::now();
        let r = black_box(a());
        ta.push(t.elapsed());
        drop(r);
        let t = Instant::now();
        let r = black_box(b());
        tb.push(t.elapsed());
        drop(r);
    }
    (median(ta), median(tb))
}

struct Figure {
    id: String,
    figure: String,
    unit: &'static str,
    ours: f64,
    reference: f64,
    reference_name: &'static str,
    /// `ours / reference`.
    ratio: f64,
    goal: &'static str,
    met: bool,
    note: String,
}

fn figure_json(f: &Figure) -> Value {
    json!({
        "id": f.id, "figure": f.figure, "unit": f.unit, "ours": f.ours,
        "reference": f.reference, "reference_name": f.reference_name,
        "ratio": f.ratio, "goal": f.goal, "met": f.met, "note": f.note,
    })
}

/// One line for `cargo xtask bench`'s table (see `tsv_row`).
fn figure_tsv(f: &Figure) -> String {
    tsv_row::row(
        &f.id,
        &f.figure,
        f.unit,
        f.ours,
        f.reference,
        f.reference_name,
        f.goal,
        f.met,
        &f.note,
    )
}

fn throughput<K>(rec: &Recorded, resource: &str, samples: usize) -> Figure
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + Clone
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (t_ours, t_kube) = compare(samples, || ours(rec, resource), || kube_side::<K>(rec));
    let ours_rate = rec.deltas() as f64 / t_ours.as_secs_f64();
    let kube_rate = rec.deltas() as f64 / t_kube.as_secs_f64();
    let bytes = rec.list.len() + rec.events.len();
    let ratio = ours_rate / kube_rate;
    let f = Figure {
        id: format!("core.throughput.{}", rec.name),
        figure: format!(
            "core deltas/s, {} stream ({} listed + {} events, {:.0} B/object avg)",
            rec.name,
            rec.objects,
            rec.event_count,
            bytes as f64 / rec.deltas() as f64
        ),
        unit: "deltas/s",
        ours: ours_rate,
        reference: kube_rate,
        reference_name: "kube-runtime 5 reflector store (serde_json → k8s-openapi)",
        ratio,
        goal: "≥ 1.0×",
        met: ratio >= 1.0,
        note: format!(
            "median of {samples}; ours {:.1} ms ({:.0} MB/s), kube {:.1} ms ({:.0} MB/s)",
            t_ours.as_secs_f64() * 1e3,
            bytes as f64 / t_ours.as_secs_f64() / 1e6,
            t_kube.as_secs_f64() * 1e3,
            bytes as f64 / t_kube.as_secs_f64() / 1e6
        ),
    };
    eprintln!(
        "{}: ours {:.0}/s, kube {:.0}/s, ratio {:.2} ({})",
        f.id, f.ours, f.reference, f.ratio, f.note
    );
    f
}

/// Bytes held after building each side from a list of `n` pods (no watch
/// events), per object.
fn memory(n: usize) -> Vec<Figure> {
    let rec = record("pod", n, 0, pod);
    let json_per_object = rec.list.len() as f64 / n as f64;

    let before = live();
    let inf = ours(&rec, "pods");
    let ours_bytes = (live() - before) as f64 / n as f64;
    let history = inf.history().len();
    drop(inf);

    // the Indexer alone, as a breakdown: objects + key + three indexes
    let before = live();
    let page = deltascope::informer::decode_list(&rec.list).expect("decode list");
    let mut store = deltascope::informer::Indexer::new();
    store.replace(page.items);
    let store_bytes = (live() - before) as f64 / n as f64;
    drop(store);

    let before = live();
    let writer = kube_side::<Pod>(&rec);
    let kube_bytes = (live() - before) as f64 / n as f64;
    drop(writer);

    let ratio = ours_bytes / kube_bytes;
    let mut figs = vec![Figure {
        id: "core.memory.pod".into(),
        figure: format!("core bytes held per object, {n} pods (informer: store + indexes + history)"),
        unit: "B/object",
        ours: ours_bytes,
        reference: kube_bytes,
        reference_name: "kube-runtime 5 reflector store (k8s-openapi Pod)",
        ratio,
        goal: "≤ 1.2×",
        met: ratio <= 1.2,
        note: format!(
            "history holds {history} entries sharing the objects; JSON {json_per_object:.0} B/object"
        ),
    }];
    figs.push(Figure {
        id: "core.memory.pod.indexer".into(),
        figure: format!("core bytes held per object, {n} pods (indexer alone, 3 indexes)"),
        unit: "B/object",
        ours: store_bytes,
        reference: kube_bytes,
        reference_name: "kube-runtime 5 reflector store (k8s-openapi Pod)",
        ratio: store_bytes / kube_bytes,
        goal: "(breakdown)",
        met: true,
        note: String::new(),
    });
    figs.push(Figure {
        id: "core.memory.pod.json".into(),
        figure: format!("core bytes held per object vs the objects' JSON size, {n} pods"),
        unit: "B/object",
        ours: ours_bytes,
        reference: json_per_object,
        reference_name: "JSON bytes of the objects",
        ratio: ours_bytes / json_per_object,
        goal: "(reported)",
        met: true,
        note: format!("kube-runtime: {:.2}× JSON", kube_bytes / json_per_object),
    });
    for f in &figs {
        eprintln!(
            "{}: ours {:.0} B, reference {:.0} B, ratio {:.2}",
            f.id, f.ours, f.reference, f.ratio
        );
    }
    figs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick =
        args.iter().any(|a| a == "--quick") || std::env::var_os("DELTASCOPE_BENCH_QUICK").is_some();
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| {
            format!(
                "{}/target/bench/core_vs_kube.json",
                env!("CARGO_MANIFEST_DIR")
            )
        });
    // `cargo bench` passes `--bench`; any other word selects figures by id.
    let mut filter: Vec<String> = Vec::new();
    let mut skip = false;
    for a in &args[1..] {
        if skip {
            skip = false;
        } else if a == "--out" {
            skip = true;
        } else if !a.starts_with("--") {
            filter.push(a.clone());
        }
    }
    let wanted = |id: &str| filter.is_empty() || filter.iter().any(|f| id.contains(f.as_str()));

    let (samples, pods, pod_events, cms, cm_events, mem_pods) = if quick {
        (5, 2_000, 6_000, 10_000, 30_000, 20_000)
    } else {
        (9, 10_000, 30_000, 50_000, 150_000, 100_000)
    };
    let started = Instant::now();
    let mut figures = Vec::new();
    if wanted("core.throughput.pod") {
        let rec = record("pod", pods, pod_events, pod);
        figures.push(throughput::<Pod>(&rec, "pods", samples));
    }
    if wanted("core.throughput.configmap") {
        let rec = record("configmap", cms, cm_events, configmap);
        figures.push(throughput::<ConfigMap>(&rec, "configmaps", samples));
    }
    if wanted("core.memory") {
        figures.extend(memory(mem_pods));
    }
    let doc = json!({
        "bench": "core_vs_kube",
        "quick": quick,
        "seconds": started.elapsed().as_secs_f64(),
        "figures": figures.iter().map(figure_json).collect::<Vec<_>>(),
    });
    let path = std::path::Path::new(&out);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the output directory");
    }
    std::fs::write(
        path,
        serde_json::to_vec_pretty(&doc).expect("serialize results"),
    )
    .expect("write the results");
    let tsv: String = figures.iter().map(figure_tsv).collect();
    std::fs::write(path.with_extension("tsv"), tsv).expect("write the results table");
    eprintln!("core_vs_kube: wrote {}", path.display());
}
