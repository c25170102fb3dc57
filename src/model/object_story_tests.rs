//! The object story against a hand-built cluster: a Deployment, its
//! ReplicaSet, pods (one replaced), a Service, a node, and events (one
//! expired from the cluster), in stores and histories as informers keep them.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::informer::{HistoryConfig, ObjectRef};
use crate::model::object_related::related;

struct Kept {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    store: Indexer,
    history: History,
}

thread_local! {
    /// The page's clock, shared by every informer: each write is 2 s later.
    static CLOCK: std::cell::Cell<Millis> = const { std::cell::Cell::new(0) };
}

impl Kept {
    fn new(group: &'static str, version: &'static str, resource: &'static str) -> Kept {
        Kept {
            group,
            version,
            resource,
            store: Indexer::new(),
            history: History::new(HistoryConfig::default()),
        }
    }

    fn write(&mut self, kind: DeltaType, value: Value) -> ObjectRef {
        let object: ObjectRef = Arc::new(KubeObject::from_value(value).expect("object"));
        let at = CLOCK.with(|clock| {
            clock.set(clock.get() + 2_000);
            clock.get()
        });
        match kind {
            DeltaType::Deleted => {
                self.store.delete_key(&object.key);
            }
            _ => {
                self.store.add(object.clone());
            }
        }
        let key = object.key.clone();
        self.history
            .record(at, kind, object.clone(), kind == DeltaType::Deleted, &key);
        object
    }

    /// `object` as the page's first list put it in the store at `at_ms`.
    fn listed(&mut self, at_ms: i64, object: &ObjectRef) {
        self.store.add(object.clone());
        let key = object.key.clone();
        self.history.record(
            at_ms as Millis,
            DeltaType::Replaced,
            object.clone(),
            false,
            &key,
        );
    }

    fn source(&self) -> StorySource<'_> {
        StorySource {
            group: self.group,
            version: self.version,
            resource: self.resource,
            store: &self.store,
            history: &self.history,
        }
    }
}

fn meta(name: &str, uid: &str, owner: Option<(&str, &str, &str)>) -> Value {
    let mut meta = json!({"name": name, "namespace": "shop", "uid": uid, "resourceVersion": "1",
        "labels": {"app": "web"}});
    if let Some((kind, owner_name, owner_uid)) = owner {
        meta["ownerReferences"] = json!([{"apiVersion": if kind == "Deployment" || kind == "ReplicaSet" { "apps/v1" } else { "v1" },
            "kind": kind, "name": owner_name, "uid": owner_uid, "controller": true}]);
    }
    meta
}

fn event(
    name: &str,
    kind: &str,
    involved: &str,
    uid: &str,
    type_: &str,
    reason: &str,
    at: &str,
) -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "shop", "uid": format!("e-{name}")},
        "involvedObject": {"kind": kind, "name": involved, "namespace": "shop", "uid": uid},
        "type": type_, "reason": reason, "message": format!("{reason} happened"), "count": 2,
        "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "kubelet"}})
}

/// The Deployment web's ScalingReplicaSet event `name`, last seen `at`.
fn web_scaled(name: &str, at: &str) -> Value {
    event(
        name,
        "Deployment",
        "web",
        "d1",
        "Normal",
        "ScalingReplicaSet",
        at,
    )
}

fn managed(manager: &str, time: &str, fields: Value) -> Value {
    json!([{"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": fields}])
}

struct Cluster {
    deployments: Kept,
    replicasets: Kept,
    pods: Kept,
    services: Kept,
    events: Kept,
}

fn cluster() -> Cluster {
    let mut c = Cluster {
        deployments: Kept::new("apps", "v1", "deployments"),
        replicasets: Kept::new("apps", "v1", "replicasets"),
        pods: Kept::new("", "v1", "pods"),
        services: Kept::new("", "v1", "services"),
        events: Kept::new("", "v1", "events"),
    };
    let deployment = |replicas: u64, time: &str| {
        let mut m = meta("web", "d1", None);
        m["managedFields"] = managed("ops-cli", time, json!({"f:spec": {"f:replicas": {}}}));
        json!({"kind": "Deployment", "metadata": m, "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}}})
    };
    c.deployments
        .write(DeltaType::Added, deployment(1, "2026-01-01T00:00:00Z"));
    c.replicasets.write(
        DeltaType::Added,
        json!({"metadata": meta("web-7d", "r1", Some(("Deployment", "web", "d1"))),
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    );
    let pod = |name: &str, uid: &str| {
        json!({"metadata": meta(name, uid, Some(("ReplicaSet", "web-7d", "r1"))),
        "spec": {"nodeName": "node-1"}})
    };
    c.pods.write(DeltaType::Added, pod("web-7d-a", "p1"));
    c.deployments
        .write(DeltaType::Updated, deployment(2, "2026-01-01T00:01:00Z"));
    c.pods.write(DeltaType::Added, pod("web-7d-b", "p2"));
    c.pods.write(DeltaType::Deleted, pod("web-7d-a", "p1"));
    c.pods.write(DeltaType::Added, pod("web-7d-c", "p3"));
    c.pods.write(
        DeltaType::Added,
        json!({"metadata": {"name": "other", "namespace": "shop", "uid": "x1"}}),
    );
    c.services.write(
        DeltaType::Added,
        json!({"metadata": {"name": "web", "namespace": "shop", "uid": "s1"},
        "spec": {"selector": {"app": "web"}}}),
    );
    c.events.write(
        DeltaType::Added,
        event(
            "ev-old",
            "Pod",
            "web-7d-a",
            "p1",
            "Warning",
            "BackOff",
            "2026-01-01T00:01:37Z",
        ),
    );
    c.events.write(
        DeltaType::Added,
        web_scaled("ev-scale", "2026-01-01T00:01:59Z"),
    );
    c.events.write(
        DeltaType::Added,
        event(
            "ev-other",
            "Pod",
            "other",
            "x1",
            "Warning",
            "Failed",
            "2026-01-01T00:02:00Z",
        ),
    );
    // the cluster's TTL deletes the BackOff event
    c.events.write(
        DeltaType::Deleted,
        event(
            "ev-old",
            "Pod",
            "web-7d-a",
            "p1",
            "Warning",
            "BackOff",
            "2026-01-01T00:01:37Z",
        ),
    );
    c
}

impl Cluster {
    fn sources(&self) -> Vec<StorySource<'_>> {
        [
            &self.deployments,
            &self.replicasets,
            &self.pods,
            &self.services,
            &self.events,
        ]
        .into_iter()
        .map(Kept::source)
        .collect()
    }
}

const NOW_UNIX: i64 = 1_767_225_720; // 2026-01-01T00:02:00Z

#[test]
fn events_are_matched_to_their_object_and_expired_ones_are_kept() {
    let c = cluster();
    let sources = c.sources();
    let pod = c
        .pods
        .history
        .versions("shop/web-7d-a")
        .next()
        .expect("pod")
        .object
        .clone();
    let subject = Subject::of(&c.pods.source(), &pod);
    let rows = events_about(&sources, &[subject], &[], NOW_UNIX);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].event.reason, "BackOff");
    assert!(rows[0].expired, "deleted by the cluster, still readable");
    assert_eq!(rows[0].last_seen, "23s ago");

    let rows = events_about(&sources, &[subject_of_web(&c)], &[], NOW_UNIX);
    assert_eq!(
        rows.iter()
            .map(|r| r.event.reason.as_str())
            .collect::<Vec<_>>(),
        ["ScalingReplicaSet"]
    );
    assert!(!rows[0].expired);

    // serve's record of the namespace's events: one the cluster expired
    // before the page opened, one the page holds too, one about another
    // object.
    use crate::api::object_record::{ObjectRecord, RecordedVersion};
    let recorded = |kind, value: Value| RecordedVersion {
        time_ms: 0,
        kind,
        tombstone: false,
        managers: Vec::new(),
        object: Arc::new(KubeObject::from_value(value).expect("event")),
    };
    let rollout = web_scaled("ev-rollout", "2026-01-01T00:00:30Z");
    let record = ObjectRecord {
        versions: vec![
            recorded(DeltaType::Added, rollout.clone()),
            recorded(
                DeltaType::Added,
                web_scaled("ev-scale", "2026-01-01T00:01:59Z"),
            ),
            recorded(
                DeltaType::Added,
                event(
                    "ev-api",
                    "Deployment",
                    "api",
                    "d9",
                    "Normal",
                    "ScalingReplicaSet",
                    "2026-01-01T00:01:00Z",
                ),
            ),
            recorded(DeltaType::Deleted, rollout),
        ],
        gaps: Vec::new(),
    };
    let rows = events_about(&sources, &[subject_of_web(&c)], &[&record], NOW_UNIX);
    let got: Vec<(&str, bool, bool)> = rows
        .iter()
        .map(|r| (r.event.key.as_str(), r.expired, r.recorded))
        .collect();
    assert_eq!(
        got,
        [
            ("shop/ev-scale", false, false),
            ("shop/ev-rollout", true, true)
        ],
        "the page's own first, the expired one from the record, another object's left out"
    );
}

fn subject_of_web(c: &Cluster) -> Subject {
    let deployment = c
        .deployments
        .store
        .get_by_key("shop/web")
        .expect("deployment");
    Subject::of(&c.deployments.source(), deployment)
}

#[test]
fn related_objects_go_up_the_owner_chain_down_to_what_it_owns_and_across_selectors() {
    let c = cluster();
    let sources = c.sources();
    let pod = c
        .pods
        .store
        .get_by_key("shop/web-7d-b")
        .expect("pod")
        .clone();
    let links = related(&sources, &c.pods.source(), &pod);
    let got: Vec<(&str, &str, &str)> = links
        .iter()
        .map(|l| (l.relation, l.resource.as_str(), l.key.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("owner", "replicasets.apps", "shop/web-7d"),
            ("owner", "deployments.apps", "shop/web"),
            ("node", "nodes", "node-1"),
            ("selected by", "services", "shop/web"),
        ]
    );
    assert_eq!(
        links[0].href.as_deref(),
        Some("#/apps/v1/replicasets/shop/web-7d")
    );
    assert_eq!(links[2].href.as_deref(), Some("#/core/v1/nodes/_/node-1"));
    assert!(links[0].held && !links[2].held, "the node is not kept here");

    let deployment = c
        .deployments
        .store
        .get_by_key("shop/web")
        .expect("deployment")
        .clone();
    let links = related(&sources, &c.deployments.source(), &deployment);
    let owned: Vec<&str> = links
        .iter()
        .filter(|l| l.relation == "owns")
        .map(|l| l.key.as_str())
        .collect();
    assert_eq!(owned, ["shop/web-7d", "shop/web-7d-b", "shop/web-7d-c"]);

    let service = c
        .services
        .store
        .get_by_key("shop/web")
        .expect("service")
        .clone();
    let links = related(&sources, &c.services.source(), &service);
    let selected: Vec<&str> = links
        .iter()
        .filter(|l| l.relation == "selects")
        .map(|l| l.key.as_str())
        .collect();
    assert_eq!(selected, ["shop/web-7d-b", "shop/web-7d-c"]);
}

#[test]
fn the_story_of_a_deployment_holds_its_replicaset_its_pods_even_deleted_and_their_events() {
    let c = cluster();
    let sources = c.sources();
    let deployment = c
        .deployments
        .store
        .get_by_key("shop/web")
        .expect("deployment")
        .clone();
    let rows = story(
        &sources,
        &c.deployments.source(),
        &deployment,
        &Reach::default(),
        30_000,
        NOW_UNIX,
    );
    let got: Vec<(String, &str, &str)> = rows
        .iter()
        .map(|r| (r.resource.clone(), r.key.as_str(), r.what.as_str()))
        .collect();
    let expected: Vec<(String, &str, &str)> = vec![
        ("events".into(), "shop/web", "Normal"),
        ("pods".into(), "shop/web-7d-c", "Added"),
        ("pods".into(), "shop/web-7d-a", "Deleted"),
        ("pods".into(), "shop/web-7d-b", "Added"),
        ("deployments.apps".into(), "shop/web", "Updated"),
        ("events".into(), "shop/web-7d-a", "Warning"),
        ("pods".into(), "shop/web-7d-a", "Added"),
        ("replicasets.apps".into(), "shop/web-7d", "Added"),
        ("deployments.apps".into(), "shop/web", "Added"),
    ];
    // the page saw the deltas at 2 s, 4 s … on its clock, which is 30 s now
    // (00:02:00): 00:01:32, 00:01:34 …; the events carry their own times
    // (00:01:37 between the first pod and the update; 00:01:59, newest)
    assert_eq!(got, expected);
    let update = rows
        .iter()
        .find(|r| r.what == "Updated")
        .expect("the update");
    assert_eq!(update.who.managers, ["ops-cli"]);
    assert_eq!(
        update.summary,
        "ops-cli (Update) changed .spec.replicas 1 → 2"
    );
    let expired = rows
        .iter()
        .find(|r| r.resource == "events" && r.what == "Warning")
        .expect("event");
    assert!(expired.expired);
    assert!(
        !rows.iter().any(|r| r.key == "shop/other"),
        "not in the family"
    );
}

/// A Deployment 20 days old, as a page that opened a minute ago lists it
/// (page clock: Unix ms), at `rv` with `replicas` written by ops-cli.
fn old_deployment(rv: &str, replicas: u64, managed_at: &str) -> ObjectRef {
    Arc::new(
        KubeObject::from_value(json!({"kind": "Deployment", "metadata": {
            "name": "web", "namespace": "shop", "uid": "d1", "resourceVersion": rv,
            "creationTimestamp": "2025-12-12T00:02:00Z",
            "managedFields": managed("ops-cli", managed_at, json!({"f:spec": {"f:replicas": {}}}))},
            "spec": {"replicas": replicas}}))
        .expect("object"),
    )
}

#[test]
fn an_object_listed_when_the_page_opened_was_first_seen_not_created() {
    let opened_ms = NOW_UNIX * 1000 - 60_000; // 00:01:00
    let mut deployments = Kept::new("apps", "v1", "deployments");
    let listed = old_deployment("30", 3, "2025-12-31T23:30:00Z");
    deployments.listed(opened_ms, &listed);
    let own = deployments.source();
    let sources = [deployments.source()];
    let now_ms = (NOW_UNIX * 1000) as Millis;
    let rows = story(&sources, &own, &listed, &Reach::default(), now_ms, NOW_UNIX);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].what.as_str(), rows[0].summary.as_str()),
        ("Replaced", "first seen 00:01 (created 20d ago)")
    );
    assert_eq!(rows[0].source, VersionSource::Page);

    // serve's record reaches back: the listing was created an hour ago
    // (inside the record), updated by ops-cli half an hour ago.
    use crate::api::object_record::{ObjectRecord, RecordedVersion};
    use crate::model::first_seen::Watched;
    let recorded = |time_ms: i64, kind, object: ObjectRef, managers: &[&str]| RecordedVersion {
        time_ms,
        kind,
        tombstone: false,
        managers: managers.iter().map(|m| m.to_string()).collect(),
        object,
    };
    let record = ObjectRecord {
        versions: vec![
            recorded(
                opened_ms - 3_600_000,
                DeltaType::Replaced,
                old_deployment("10", 1, "2025-12-31T23:00:00Z"),
                &[],
            ),
            recorded(
                opened_ms - 1_800_000,
                DeltaType::Updated,
                old_deployment("20", 3, "2025-12-31T23:30:00Z"),
                &["ops-cli"],
            ),
            // the version the page listed, recorded too: one delta
            recorded(opened_ms - 1_000, DeltaType::Updated, listed.clone(), &[]),
        ],
        gaps: Vec::new(),
    };
    let reach = Reach {
        phase: None,
        record: Some(&record),
        recorder: Some(Watched {
            from_ms: opened_ms - 3_600_000,
            gaps: Vec::new(),
        }),
        family: Vec::new(),
        clock: Default::default(),
    };
    let rows = story(&sources, &own, &listed, &reach, now_ms, NOW_UNIX);
    let got: Vec<(VersionSource, &str, &str)> = rows
        .iter()
        .map(|r| (r.source, r.what.as_str(), r.summary.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (VersionSource::Page, "Replaced", "no field changed"),
            (
                VersionSource::Recorder,
                "Updated",
                "ops-cli (Update) changed .spec.replicas 1 → 3"
            ),
            (
                VersionSource::Recorder,
                "Replaced",
                "first seen 23:01 (created 20d ago)"
            ),
        ]
    );
    assert_eq!(rows[1].who.managers, ["ops-cli"]);
    assert_eq!(rows[1].when, "31m ago");
}

#[test]
fn the_story_of_a_deployment_follows_serve_s_record_of_what_it_owns_without_keeping_it() {
    use crate::api::object_record::{ObjectRecord, RecordedVersion};
    use crate::model::first_seen::Watched;
    let opened_ms = NOW_UNIX * 1000 - 60_000;
    let mut deployments = Kept::new("apps", "v1", "deployments");
    let listed = old_deployment("30", 3, "2025-12-31T23:30:00Z");
    deployments.listed(opened_ms, &listed);
    // The page keeps pods (one listed when it opened), not replicasets.
    let mut pods = Kept::new("", "v1", "pods");
    let object =
        |value: Value| -> ObjectRef { Arc::new(KubeObject::from_value(value).expect("object")) };
    let pod = |name: &str, uid: &str, rv: &str| {
        let mut m = meta(name, uid, Some(("ReplicaSet", "web-7d", "r1")));
        m["resourceVersion"] = json!(rv);
        object(json!({"kind": "Pod", "metadata": m}))
    };
    let b_listed = pod("web-7d-b", "p2", "25");
    pods.listed(opened_ms, &b_listed);
    let version = |time_ms: i64, kind, tombstone, object: ObjectRef| RecordedVersion {
        time_ms,
        kind,
        tombstone,
        managers: Vec::new(),
        object,
    };
    let replicaset = object(json!({"kind": "ReplicaSet",
        "metadata": meta("web-7d", "r1", Some(("Deployment", "web", "d1")))}));
    let other = object(json!({"kind": "ReplicaSet",
        "metadata": meta("api-5c", "r9", Some(("Deployment", "api", "d9")))}));
    let replicasets = ObjectRecord {
        versions: vec![
            version(opened_ms - 600_000, DeltaType::Replaced, false, replicaset),
            version(opened_ms - 500_000, DeltaType::Replaced, false, other),
        ],
        gaps: Vec::new(),
    };
    let a = pod("web-7d-a", "p1", "12");
    let pods_record = ObjectRecord {
        versions: vec![
            version(opened_ms - 400_000, DeltaType::Added, false, a.clone()),
            version(
                opened_ms - 300_000,
                DeltaType::Added,
                false,
                pod("web-7d-b", "p2", "20"),
            ),
            // replaced before the page opened
            version(opened_ms - 200_000, DeltaType::Deleted, false, a),
            // the version the page listed, recorded too: told once
            version(opened_ms - 1_000, DeltaType::Updated, false, b_listed),
        ],
        gaps: Vec::new(),
    };
    let watched = |from_ms| {
        Some(Watched {
            from_ms,
            gaps: Vec::new(),
        })
    };
    let reach = Reach {
        family: vec![
            (
                "replicasets.apps",
                &replicasets,
                watched(opened_ms - 700_000),
            ),
            ("pods", &pods_record, watched(opened_ms - 700_000)),
        ],
        ..Reach::default()
    };
    let own = deployments.source();
    let sources = [deployments.source(), pods.source()];
    let now_ms = (NOW_UNIX * 1000) as Millis;
    let rows = story(&sources, &own, &listed, &reach, now_ms, NOW_UNIX);
    let got: Vec<(&str, &str, &str, VersionSource)> = rows
        .iter()
        .map(|r| {
            (
                r.resource.as_str(),
                r.key.as_str(),
                r.what.as_str(),
                r.source,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("deployments.apps", "shop/web", "Replaced", VersionSource::Page),
            ("pods", "shop/web-7d-b", "Replaced", VersionSource::Page),
            ("pods", "shop/web-7d-a", "Deleted", VersionSource::Recorder),
            ("pods", "shop/web-7d-b", "Added", VersionSource::Recorder),
            ("pods", "shop/web-7d-a", "Added", VersionSource::Recorder),
            ("replicasets.apps", "shop/web-7d", "Replaced", VersionSource::Recorder),
        ],
        "the ReplicaSet and its pods from the record, the replaced one included; another Deployment's ReplicaSet left out; the listed pod once"
    );
    let created = rows
        .iter()
        .find(|r| r.key == "shop/web-7d-a" && r.what == "Added")
        .expect("the recorded creation");
    assert_eq!(
        created.summary, "created",
        "an Added inside the record is an observed creation"
    );
    assert_eq!(rows[2].kind, "Pod");
}
