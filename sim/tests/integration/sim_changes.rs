//! Who wrote what on the simulated cluster, over real HTTP: every write's
//! `managedFields` (checked with the page's own attributor), `/_sim/patch`
//! and the controllers' reaction to it, Events aggregated, served in both
//! APIs and expired by their TTL, EndpointSlices following the ready pods,
//! and `/_sim/patch`'s and `/_sim/events`' answers to bad input.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use deltascope_informer::field_managers::{self, Attribution, FieldsError, ManagedFieldsEntry};
use deltascope_informer::json::JsonValue;
use deltascope_sim::SimConfig;
use serde_json::{json, Value};
use support::*;

/// The informer's managed-fields reading of an object the test holds as JSON.
fn managed_fields(object: &Value) -> Result<Vec<ManagedFieldsEntry>, FieldsError> {
    field_managers::managed_fields(JsonValue::from(object).root())
}

/// The informer's attribution of an update the test holds as JSON.
fn attribute(old: &Value, new: &Value) -> Result<Attribution, FieldsError> {
    field_managers::attribute(JsonValue::from(old).root(), JsonValue::from(new).root())
}

fn patch_body(resource: &str, key: &str, patch: Value, manager: &str) -> String {
    json!({"resource": resource, "key": key, "patch": patch, "manager": manager}).to_string()
}

async fn deployment(t: &TestSim, key: &str) -> Value {
    let (ns, name) = key.split_once('/').expect("ns/name");
    t.get_json(&format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"))
        .await
}

fn uid(o: &Value) -> &str {
    o["metadata"]["uid"].as_str().unwrap_or_default()
}

/// Reads a watch in the background until it is idle for a second and a half.
fn drain(mut w: Lines) -> tokio::task::JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        while let Next::Line(e) = w.next(Duration::from_millis(1500)).await {
            out.push(e);
        }
        out
    })
}

/// The events of `path` (core or events.k8s.io) about the object `uid`.
async fn events_about(t: &TestSim, path: &str, field: &str, uid: &str) -> Vec<Value> {
    let (_, events) = t.list_all(path).await;
    events
        .into_iter()
        .filter(|e| e[field]["uid"] == uid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patched_deployment_is_scaled_by_its_controllers() {
    let t = start(quiet(40)).await;
    let key = "shop/cart";
    let setup = t
        .post(
            "/_sim/patch",
            &patch_body(
                "deployments.apps",
                key,
                json!({"spec": {"replicas": 2}}),
                "setup",
            ),
        )
        .await;
    assert_eq!(
        setup.status,
        200,
        "{}",
        String::from_utf8_lossy(&setup.body)
    );
    let d = deployment(&t, key).await;
    assert_eq!(d["spec"]["replicas"], 2);

    let r = t
        .post(
            "/_sim/patch",
            &patch_body(
                "deployments.apps",
                key,
                json!({"spec": {"replicas": 5}}),
                "ops-cli",
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let answer = r.json();
    let patched_rv = answer["resourceVersion"].as_str().unwrap_or_default();
    assert!(!patched_rv.is_empty(), "{answer}");

    // The deployment: ops-cli owns spec.replicas now, setup lost it.
    let d = deployment(&t, key).await;
    assert_eq!(d["spec"]["replicas"], 5);
    assert!(
        rv_of(&d).parse::<u64>().unwrap_or(0) >= patched_rv.parse::<u64>().unwrap_or(u64::MAX),
        "{} then {}",
        patched_rv,
        rv_of(&d)
    );
    let entries = managed_fields(&d).expect("managedFields read");
    let ops = entries
        .iter()
        .find(|e| e.manager == "ops-cli")
        .expect("an ops-cli entry");
    assert_eq!(ops.operation, "Update");
    let ops_raw = d["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["manager"] == "ops-cli"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ops_raw["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(ops_raw["fieldsType"], "FieldsV1");
    assert_eq!(ops_raw["apiVersion"], "apps/v1");
    assert!(entries.iter().all(|e| e.manager != "setup"), "{entries:?}");
    assert!(entries
        .iter()
        .any(|e| e.manager == "kube-controller-manager" && e.subresource == "status"));
    assert_eq!(d["status"]["replicas"], 5);

    // Its replicaset and the 5 pods it owns, the 3 new ones running.
    let rs_name = d["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    let (_, replicasets) = t
        .list_all("/apis/apps/v1/namespaces/shop/replicasets")
        .await;
    let rs = replicasets
        .iter()
        .find(|rs| {
            rs["metadata"]["ownerReferences"][0]["uid"] == uid(&d)
                && rs["spec"]["template"]["spec"]["containers"][0]["image"] == rs_name
        })
        .cloned()
        .expect("the deployment's replicaset");
    assert_eq!(rs["spec"]["replicas"], 5);
    assert_eq!(rs["status"]["replicas"], 5);
    let rs_entries = managed_fields(&rs).expect("rs managedFields");
    assert!(rs_entries
        .iter()
        .any(|e| e.manager == "kube-controller-manager" && e.subresource.is_empty()));
    let (_, pods) = t.list_all("/api/v1/namespaces/shop/pods").await;
    let owned: Vec<&Value> = pods
        .iter()
        .filter(|p| p["metadata"]["ownerReferences"][0]["uid"] == uid(&rs))
        .collect();
    assert_eq!(owned.len(), 5, "pods owned by the replicaset");

    // SuccessfulCreate on the replicaset, in both APIs.
    let created = events_about(&t, "/api/v1/events", "involvedObject", uid(&rs)).await;
    let created: BTreeSet<String> = created
        .iter()
        .filter(|e| e["reason"] == "SuccessfulCreate")
        .map(|e| {
            assert_eq!(e["involvedObject"]["kind"], "ReplicaSet");
            assert_eq!(e["involvedObject"]["apiVersion"], "apps/v1");
            assert_eq!(e["involvedObject"]["namespace"], "shop");
            assert_eq!(e["source"]["component"], "replicaset-controller");
            e["message"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert!(created.len() >= 3, "SuccessfulCreate events: {created:?}");
    let v1 = events_about(&t, "/apis/events.k8s.io/v1/events", "regarding", uid(&rs)).await;
    let v1_created: BTreeSet<String> = v1
        .iter()
        .filter(|e| e["reason"] == "SuccessfulCreate")
        .map(|e| {
            assert_eq!(e["apiVersion"], "events.k8s.io/v1");
            assert_eq!(e["reportingController"], "replicaset-controller");
            assert!(e["eventTime"].is_string() && e["deprecatedCount"].is_number());
            e["note"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(v1_created, created, "both APIs show the same events");
    let new_pods: Vec<&&Value> = owned
        .iter()
        .filter(|p| {
            created.contains(&format!(
                "Created pod: {}",
                p["metadata"]["name"].as_str().unwrap_or_default()
            ))
        })
        .collect();
    assert_eq!(new_pods.len(), 3, "three pods were created");
    for pod in &new_pods {
        assert_eq!(pod["status"]["phase"], "Running");
        let managers: BTreeSet<(String, String)> = managed_fields(pod)
            .expect("pod managedFields")
            .into_iter()
            .map(|e| (e.manager, e.subresource))
            .collect();
        for want in [
            ("kube-controller-manager", ""),
            ("kube-scheduler", ""),
            ("kubelet", "status"),
        ] {
            assert!(
                managers.contains(&(want.0.to_string(), want.1.to_string())),
                "{want:?} in {managers:?}"
            );
        }
        let about = events_about(&t, "/api/v1/events", "involvedObject", uid(pod)).await;
        let reasons: BTreeSet<&str> = about.iter().filter_map(|e| e["reason"].as_str()).collect();
        for want in ["Scheduled", "Pulled", "Created", "Started"] {
            assert!(reasons.contains(want), "{want} in {reasons:?}");
        }
    }

    // ScalingReplicaSet on the deployment.
    let scaling = events_about(&t, "/api/v1/events", "involvedObject", uid(&d)).await;
    let rs_name = rs["metadata"]["name"].as_str().unwrap_or_default();
    assert!(
        scaling.iter().any(|e| e["reason"] == "ScalingReplicaSet"
            && e["message"] == format!("Scaled up replica set {rs_name} from 2 to 5")
            && e["source"]["component"] == "deployment-controller"),
        "{scaling:#?}"
    );

    // The Service's EndpointSlice has the new pods' addresses.
    let slices = t
        .get_json("/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?labelSelector=kubernetes.io/service-name=cart")
        .await;
    let slice = &slices["items"][0];
    assert_eq!(slice["addressType"], "IPv4");
    let targets: BTreeSet<&str> = slice["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["targetRef"]["name"].as_str())
        .collect();
    for pod in &new_pods {
        assert!(targets.contains(pod["metadata"]["name"].as_str().unwrap_or_default()));
    }
    let slice_managers: Vec<String> = managed_fields(slice)
        .expect("slice managedFields")
        .into_iter()
        .map(|e| e.manager)
        .collect();
    assert_eq!(slice_managers, ["endpointslice-controller"]);

    // Scaling down deletes pods, with SuccessfulDelete, and the slice follows.
    let deletes = |events: &[Value]| {
        events
            .iter()
            .filter(|e| e["reason"] == "SuccessfulDelete")
            .count()
    };
    let deleted_before =
        deletes(&events_about(&t, "/api/v1/events", "involvedObject", uid(&rs)).await);
    let r = t
        .post(
            "/_sim/patch",
            &patch_body(
                "deployments.apps",
                key,
                json!({"spec": {"replicas": 1}}),
                "ops-cli",
            ),
        )
        .await;
    assert_eq!(r.status, 200);
    let (_, pods) = t.list_all("/api/v1/namespaces/shop/pods").await;
    let owned = pods
        .iter()
        .filter(|p| p["metadata"]["ownerReferences"][0]["uid"] == uid(&rs))
        .count();
    assert_eq!(owned, 1);
    let deleted = events_about(&t, "/api/v1/events", "involvedObject", uid(&rs)).await;
    assert_eq!(deletes(&deleted), deleted_before + 4);
    let slice = t
        .get_json("/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?labelSelector=kubernetes.io/service-name=cart")
        .await;
    assert!(
        slice["items"][0]["endpoints"]
            .as_array()
            .map_or(0, Vec::len)
            <= 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patching_a_pod_or_a_widget_makes_its_manager_the_owner() {
    let t = start(quiet(10)).await;
    let (_, pods) = t.list_all("/api/v1/pods").await;
    let key = key_of(&pods[0]);
    let r = t
        .post(
            "/_sim/patch",
            &patch_body(
                "pods",
                &key,
                json!({"metadata": {"labels": {"team": "blue"}}}),
                "labeller",
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (ns, name) = key.split_once('/').unwrap_or_default();
    let pod = t
        .get_json(&format!("/api/v1/namespaces/{ns}/pods/{name}"))
        .await;
    assert_eq!(pod["metadata"]["labels"]["team"], "blue");
    assert_eq!(
        rv_of(&pod),
        r.json()["resourceVersion"].as_str().unwrap_or_default()
    );
    let who = attribute(&pods[0], &pod).expect("attributed");
    assert_eq!(who.managers.len(), 1, "{who:?}");
    assert_eq!(who.managers[0].manager, "labeller");
    assert_eq!(who.managers[0].changes[0].path, ".metadata.labels.team");
    assert!(who.unattributed.is_empty());

    let before = t
        .get_json("/apis/demo.deltascope.dev/v1/namespaces/shop/widgets/widget-0")
        .await;
    let r = t
        .post(
            "/_sim/patch",
            &patch_body(
                "widgets",
                "shop/widget-0",
                json!({"spec": {"color": "purple", "size": null}}),
                "widget-tuner",
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let after = t
        .get_json("/apis/demo.deltascope.dev/v1/namespaces/shop/widgets/widget-0")
        .await;
    assert_eq!(after["spec"], json!({"color": "purple"}));
    let managers: Vec<(String, String)> = managed_fields(&after)
        .expect("widget managedFields")
        .into_iter()
        .map(|e| (e.manager, e.operation))
        .collect();
    assert!(
        managers.contains(&("kubectl".into(), "Apply".into())),
        "{managers:?}"
    );
    assert!(managers.contains(&("widget-operator".into(), "Update".into())));
    let who = attribute(&before, &after).expect("attributed");
    let tuner = who
        .managers
        .iter()
        .find(|m| m.manager == "widget-tuner")
        .expect("widget-tuner made it");
    assert_eq!(tuner.changes.len(), 1, "{who:?}");
    assert_eq!(tuner.changes[0].path, ".spec.color");
    // the removed size was kubectl's (server-side apply): its entry changed;
    // the generation is the server's
    let unattributed: Vec<&str> = who.unattributed.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(unattributed, [".metadata.generation"]);
}

/// Who really writes which field of pods and deployments in the churn.
fn expected_writer(kind: &str, path: &str) -> Option<BTreeSet<(&'static str, &'static str)>> {
    let one = |m, s| Some(BTreeSet::from([(m, s)]));
    match (kind, path) {
        ("Pod", p) if p.starts_with(".status") => one("kubelet", "status"),
        ("Pod", ".metadata.labels.track") => one("kubectl-label", ""),
        ("Deployment", p) if p.starts_with(".status") => one("kube-controller-manager", "status"),
        ("Deployment", ".spec.replicas") => one("kube-controller-manager", "scale"),
        ("Deployment", p) if p.starts_with(".spec.template") => Some(BTreeSet::from([
            ("helm", ""),
            ("kubectl-client-side-apply", ""),
            ("kubectl", ""),
        ])),
        ("Deployment", p) if p.starts_with(".metadata.annotations") => {
            one("kube-controller-manager", "")
        }
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_churned_update_is_attributed_to_the_manager_that_made_it() {
    let t = start(SimConfig {
        seed: 7,
        ..quiet(60)
    })
    .await;
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    let mut watches = Vec::new();
    for path in ["/api/v1/pods", "/apis/apps/v1/deployments"] {
        let (rv, items) = t.list_all(path).await;
        for item in items {
            last.insert(format!("{}/{}", item["kind"], key_of(&item)), item);
        }
        watches.push(drain(
            t.watch(&format!("{path}?watch=1&resourceVersion={rv}"))
                .await,
        ));
    }
    t.post("/_sim/churn", r#"{"events_per_sec": 400}"#).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for w in watches {
        for e in w.await.expect("watch drained") {
            let obj = e["object"].clone();
            let kind = obj["kind"].as_str().unwrap_or_default().to_string();
            let id = format!("\"{kind}\"/{}", key_of(&obj));
            let prev = last.insert(id.clone(), obj.clone());
            if e["type"] != "MODIFIED" {
                continue;
            }
            let prev = prev.unwrap_or_else(|| panic!("a MODIFIED {id} never seen before"));
            let who = attribute(&prev, &obj).expect("managedFields readable");
            for change in &who.unattributed {
                assert!(
                    expected_writer(&kind, &change.path).is_none(),
                    "{id}: {} changed and nobody's: {who:#?}",
                    change.path
                );
            }
            for m in &who.managers {
                for change in &m.changes {
                    let Some(want) = expected_writer(&kind, &change.path) else {
                        continue;
                    };
                    let got = (m.manager.as_str(), m.subresource.as_str());
                    assert!(
                        want.iter().any(|w| *w == got),
                        "{id}: {} attributed to {got:?}, expected one of {want:?}",
                        change.path
                    );
                    *checked.entry(format!("{kind} {}", got.0)).or_default() += 1;
                }
            }
        }
    }
    for want in [
        "Pod kubelet",
        "Pod kubectl-label",
        "Deployment kube-controller-manager",
    ] {
        assert!(
            checked.get(want).is_some_and(|n| *n > 0),
            "{want}: {checked:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_events_are_counted_and_expire_after_their_ttl() {
    let t = start(SimConfig {
        seed: 3,
        ..quiet(4)
    })
    .await;
    let (rv, _) = t.list_all("/apis/events.k8s.io/v1/events").await;
    let v1_watch = drain(
        t.watch(&format!(
            "/apis/events.k8s.io/v1/events?watch=1&resourceVersion={rv}"
        ))
        .await,
    );
    t.post("/_sim/churn", r#"{"events_per_sec": 300}"#).await;
    // A BackOff seen again is the same Event with its count up.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let repeated = loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no BackOff was repeated"
        );
        let (_, events) = t.list_all("/api/v1/events").await;
        if let Some(e) = events
            .into_iter()
            .find(|e| e["reason"] == "BackOff" && e["count"].as_u64().unwrap_or(0) >= 2)
        {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    let count = repeated["count"].as_u64().unwrap_or(0);
    assert_eq!(repeated["series"]["count"].as_u64(), Some(count));
    assert!(repeated["lastTimestamp"].as_str() >= repeated["firstTimestamp"].as_str());
    assert_eq!(repeated["type"], "Warning");
    assert_eq!(repeated["involvedObject"]["kind"], "Pod");
    let name = repeated["metadata"]["name"].as_str().unwrap_or_default();
    let ns = repeated["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let v1 = t
        .get_json(&format!(
            "/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}"
        ))
        .await;
    assert_eq!(v1["metadata"]["uid"], repeated["metadata"]["uid"]);
    assert!(v1["series"]["count"].as_u64() >= Some(2), "{v1}");
    assert_eq!(v1["deprecatedCount"], v1["series"]["count"]);

    // The TTL, shortened at runtime, deletes every event.
    let r = t.post("/_sim/events", r#"{"ttl_secs": 1}"#).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(t.get_json("/_sim/events").await["events"]["ttl_secs"], 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (_, core) = t.list_all("/api/v1/events").await;
        let (_, v1) = t.list_all("/apis/events.k8s.io/v1/events").await;
        if core.is_empty() && v1.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} events outlived a 1 s TTL",
            core.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // the events.k8s.io watch saw the repeat and the deletion
    let events = v1_watch.await.expect("watch drained");
    let of_it: Vec<&str> = events
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == name)
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(of_it.first(), Some(&"ADDED"), "{of_it:?}");
    assert!(of_it.contains(&"MODIFIED"), "{of_it:?}");
    assert_eq!(of_it.last(), Some(&"DELETED"), "{of_it:?}");
}

#[tokio::test]
async fn events_are_served_by_both_apis_with_one_resource_version() {
    let t = start(SimConfig {
        churn_per_sec: 100.0,
        ..quiet(20)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    t.post("/_sim/churn", r#"{"events_per_sec": 0}"#).await;
    let (_, core) = t.list_all("/api/v1/events").await;
    let (_, v1) = t.list_all("/apis/events.k8s.io/v1/events").await;
    assert!(!core.is_empty());
    assert_eq!(digest_of(&core), digest_of(&v1));
    assert_eq!(
        t.get_json("/_sim/digest?resource=events.events.k8s.io")
            .await["digest"],
        digest_of(&v1)
    );
    let groups = t.get_json("/apis").await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(names.contains(&"events.k8s.io") && names.contains(&"discovery.k8s.io"));
    // field selectors of each API
    let about = core[0]["involvedObject"]["name"]
        .as_str()
        .unwrap_or_default();
    let selected = t
        .get_json(&format!(
            "/api/v1/events?fieldSelector=involvedObject.name={about}"
        ))
        .await;
    let selected_v1 = t
        .get_json(&format!(
            "/apis/events.k8s.io/v1/events?fieldSelector=regarding.name={about}"
        ))
        .await;
    let n = selected["items"].as_array().map_or(0, Vec::len);
    assert!(n > 0);
    assert_eq!(selected_v1["items"].as_array().map_or(0, Vec::len), n);
}

#[tokio::test]
async fn bad_patches_and_ttls_are_refused_with_what_is_wrong() {
    let t = start(quiet(5)).await;
    let cases = [
        (
            patch_body("gizmos", "shop/cart", json!({}), "m"),
            400,
            "unknown resource \"gizmos\"",
        ),
        (
            patch_body("deployments.apps", "shop/nope", json!({}), "m"),
            404,
            "deployments.apps \"nope\" not found",
        ),
        (
            patch_body("deployments.apps", "shop/cart", json!([1]), "m"),
            400,
            "patch must be a JSON object",
        ),
        (
            json!({"resource": "pods", "key": "shop/x", "patch": {}}).to_string(),
            400,
            "\"manager\" is required",
        ),
        (
            patch_body(
                "deployments.apps",
                "shop/cart",
                json!({"metadata": {"name": "x"}}),
                "m",
            ),
            400,
            "may not change metadata.name",
        ),
        (
            patch_body(
                "deployments.apps",
                "shop/cart",
                json!({"spec": {"replicas": -1}}),
                "m",
            ),
            422,
            "spec.replicas: Invalid value",
        ),
        ("not json".to_string(), 400, "invalid JSON body"),
    ];
    for (body, code, says) in cases {
        let r = t.post("/_sim/patch", &body).await;
        assert_eq!(
            r.status,
            code,
            "{body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let status = r.json();
        assert_eq!(status["kind"], "Status", "{status}");
        let message = status["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {message}");
        if code == 404 {
            assert_eq!(status["reason"], "NotFound");
        }
    }
    for body in [
        r#"{"ttl_secs": 0}"#,
        r#"{"ttl": 5}"#,
        r#"{"ttl_secs": 1000000}"#,
    ] {
        let r = t.post("/_sim/events", body).await;
        assert_eq!(r.status, 400, "{body}");
    }
}
