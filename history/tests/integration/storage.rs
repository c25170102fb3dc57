//! The history store on both engines (SQLite and a real PostgreSQL): what
//! is written reads back — every version, the state at any moment, the
//! lines of a history with its gaps — and what cannot be answered says why.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use deltascope_history::codec::MAX_CHAIN;
use deltascope_history::{GapReason, GapRecord, HistoryQuery, StateError, WatermarkRecord, Write};
use deltascope_informer::DeltaType;
use serde_json::Value;
use support::{cluster, delta, fresh_store, pod};

/// Writes a churn of pods: `pods` pods added at t=1000, each updated
/// `updates` times (one write per 10 ms), every third deleted at the end.
/// Returns what each moment's state should be: time → name → object.
async fn churn(
    store: &deltascope_history::HistoryStore,
    pods: usize,
    updates: u64,
) -> BTreeMap<i64, BTreeMap<String, Value>> {
    let mut expected = BTreeMap::new();
    let mut now: BTreeMap<String, Value> = BTreeMap::new();
    let mut rv = 100;
    let mut at = 1_000;
    let mut writes = Vec::new();
    for i in 0..pods {
        rv += 1;
        let object = pod("default", &format!("web-{i}"), rv, "Pending", 0);
        writes.push(delta(DeltaType::Added, &object, at, None));
        now.insert(format!("web-{i}"), object);
    }
    expected.insert(at, now.clone());
    for round in 1..=updates {
        for i in 0..pods {
            at += 10;
            rv += 1;
            let name = format!("web-{i}");
            let before = now[&name].clone();
            let phase = if round % 3 == 0 { "Running" } else { "Pending" };
            let object = pod("default", &name, rv, phase, round);
            writes.push(delta(DeltaType::Updated, &object, at, Some(&before)));
            now.insert(name, object);
            expected.insert(at, now.clone());
        }
    }
    for i in (0..pods).step_by(3) {
        at += 10;
        rv += 1;
        let name = format!("web-{i}");
        let before = now.remove(&name).unwrap();
        let mut last = before.clone();
        last["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        writes.push(delta(DeltaType::Deleted, &last, at, Some(&before)));
        expected.insert(at, now.clone());
    }
    writes.push(Write::Watermark(WatermarkRecord {
        resource: "pods".into(),
        store_resource_version: rv.to_string(),
        through_ms: at + 1_000,
    }));
    for batch in writes.chunks(37) {
        store.write(&cluster(), batch).await.expect("write");
    }
    expected
}

async fn state(
    store: &deltascope_history::HistoryStore,
    at: i64,
) -> Result<(String, BTreeMap<String, Value>), StateError> {
    let past = store.state_at(&cluster(), "pods", None, at).await?;
    let mut objects = BTreeMap::new();
    store
        .state_objects(&past, |batch| {
            for text in batch {
                let object: Value = serde_json::from_str(&text).unwrap();
                objects.insert(
                    object["metadata"]["name"].as_str().unwrap().to_string(),
                    object,
                );
            }
            true
        })
        .await?;
    Ok((past.resource_version, objects))
}

async fn every_moment_reads_back_as_it_was(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    let updates = u64::from(MAX_CHAIN) * 2 + 3;
    let expected = churn(&store, 7, updates).await;
    for (at, objects) in &expected {
        let (rv, got) = state(&store, *at).await.unwrap();
        assert_eq!(&got, objects, "state at {at}");
        let newest = got.values().chain(std::iter::empty()).count();
        assert!(newest <= 7);
        assert!(!rv.is_empty());
    }
    // Between two writes the state is the earlier one's.
    let (first, objects) = expected.iter().nth(3).unwrap();
    assert_eq!(&state(&store, first + 5).await.unwrap().1, objects);
    let summary = store.summary().await.unwrap();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].deltas as u64, 7 + 7 * updates + 3);
    assert!(summary[0].bytes > 0);
}
on_both_engines!(every_moment, every_moment_reads_back_as_it_was);

async fn moments_it_cannot_answer_say_why(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    churn(&store, 2, 3).await;
    store
        .write(
            &cluster(),
            &[Write::Gap(GapRecord {
                resource: "pods".into(),
                from_ms: 1_015,
                to_ms: 1_035,
                reason: GapReason::Expired,
            })],
        )
        .await
        .unwrap();
    assert!(matches!(
        state(&store, 1_020).await,
        Err(StateError::InGap {
            from_ms: 1_015,
            to_ms: 1_035,
            reason: GapReason::Expired,
            ..
        })
    ));
    // Its edges are known.
    assert!(state(&store, 1_015).await.is_ok());
    assert!(state(&store, 1_035).await.is_ok());
    assert!(matches!(
        state(&store, 999).await,
        Err(StateError::Before {
            first_ms: 1_000,
            ..
        })
    ));
    assert!(matches!(
        state(&store, 10_000_000).await,
        Err(StateError::After { .. })
    ));
    assert!(matches!(
        store
            .state_at(&cluster(), "deployments.apps", None, 1_020)
            .await,
        Err(StateError::NotRecorded { .. })
    ));
    let other = deltascope_history::ClusterId("another".into());
    assert!(matches!(
        store.state_at(&other, "pods", None, 1_020).await,
        Err(StateError::NotRecorded { .. })
    ));
}
on_both_engines!(cannot_answer, moments_it_cannot_answer_say_why);

/// The store at `target` opened again (a restart).
async fn reopened(
    target: &deltascope_history::HistoryTarget,
) -> Arc<deltascope_history::HistoryStore> {
    Arc::new(
        deltascope_history::HistoryStore::open(target)
            .await
            .unwrap(),
    )
}

async fn collect(store: &Arc<deltascope_history::HistoryStore>, query: HistoryQuery) -> Vec<Value> {
    let mut receiver = store.lines(&cluster(), query);
    let mut lines = Vec::new();
    while let Some(text) = receiver.recv().await {
        let text = text.expect("lines");
        assert!(text.ends_with('\n'), "whole lines: {text:?}");
        for line in text.lines() {
            lines.push(serde_json::from_str(line).expect("JSON"));
        }
    }
    lines
}

fn query(name: Option<&str>, since_ms: i64, until_ms: i64) -> HistoryQuery {
    HistoryQuery {
        resource: "pods".into(),
        namespace: None,
        name: name.map(str::to_string),
        since_ms,
        until_ms,
        newest: None,
    }
}

async fn a_history_streams_every_version_with_its_gaps(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    let store = Arc::new(store);
    let updates = u64::from(MAX_CHAIN) + 4;
    churn(&store, 3, updates).await;
    store
        .write(
            &cluster(),
            &[Write::Gap(GapRecord {
                resource: "pods".into(),
                from_ms: 1_100,
                to_ms: 1_120,
                reason: GapReason::Unreachable,
            })],
        )
        .await
        .unwrap();
    let all = collect(&store, query(None, 0, i64::MAX)).await;
    let deltas: Vec<&Value> = all.iter().filter(|l| l.get("gap").is_none()).collect();
    assert_eq!(deltas.len() as u64, 3 + 3 * updates + 1);
    assert_eq!(deltas[0]["type"], "ADDED");
    assert_eq!(deltas[0]["at"], 0);
    assert_eq!(deltas[0]["time"], "1970-01-01T00:00:01.000Z");
    assert_eq!(deltas[3]["type"], "MODIFIED");
    assert_eq!(deltas[3]["deltaType"], "Updated");
    assert_eq!(deltas[3]["managers"], serde_json::json!(["kubelet"]));
    assert_eq!(deltas.last().unwrap()["type"], "DELETED");
    // Every version is whole, the patched ones too.
    for line in &deltas {
        assert_eq!(line["object"]["resourceVersion"], Value::Null);
        assert_eq!(
            line["object"]["metadata"]["resourceVersion"],
            line["resourceVersion"]
        );
        assert_eq!(
            line["object"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
    }
    let gap_at = all
        .iter()
        .position(|l| l.get("gap").is_some())
        .expect("the gap");
    assert_eq!(all[gap_at]["gap"]["reason"], "unreachable");
    assert_eq!(all[gap_at]["gap"]["from"], "1970-01-01T00:00:01.100Z");
    assert!(all[gap_at + 1]["time"].as_str().unwrap() >= "1970-01-01T00:00:01.100Z");
    assert!(all[gap_at - 1]["time"].as_str().unwrap() <= "1970-01-01T00:00:01.100Z");

    // One object, from the middle of its chain on: still whole.
    let one = collect(&store, query(Some("web-1"), 1_200, i64::MAX)).await;
    assert!(!one.is_empty());
    for line in &one {
        assert_eq!(line["object"]["metadata"]["name"], "web-1");
        assert_eq!(line["object"]["spec"]["nodeName"], "node-1");
    }
    // The newest few of one object, up to a moment: the same versions as
    // the whole history's last ones, whole (their chain read from its
    // full), in time order, with only the gaps of the span they cover.
    let whole: Vec<&&Value> = deltas
        .iter()
        .filter(|d| {
            d["object"]["metadata"]["name"] == "web-1"
                && d["time"].as_str() <= Some("1970-01-01T00:00:01.400Z")
        })
        .collect();
    let mut newest = query(Some("web-1"), 0, 1_400);
    newest.newest = Some(5);
    let newest = collect(&store, newest).await;
    assert!(newest.iter().all(|l| l.get("gap").is_none()), "{newest:?}");
    assert_eq!(newest.len(), 5);
    for (line, same) in newest.iter().zip(&whole[whole.len() - 5..]) {
        assert_eq!(line["resourceVersion"], same["resourceVersion"]);
        assert_eq!(line["object"], same["object"]);
    }
    // More than it holds: all of it, and the gap.
    let mut all_of_it = query(Some("web-1"), 0, 1_400);
    all_of_it.newest = Some(10_000);
    let all_of_it = collect(&store, all_of_it).await;
    assert_eq!(all_of_it.len(), whole.len() + 1);
    assert_eq!(
        all_of_it.iter().filter(|l| l.get("gap").is_some()).count(),
        1
    );
    // A namespace's window from the middle of every chain on: each version
    // whole and the same as in the whole history.
    let mut window = query(None, 1_200, 1_260);
    window.namespace = Some("default".into());
    let part: Vec<Value> = collect(&store, window)
        .await
        .into_iter()
        .filter(|l| l.get("gap").is_none())
        .collect();
    assert_eq!(part.len(), 7, "{part:?}");
    for line in &part {
        let same = deltas
            .iter()
            .find(|d| {
                d["time"] == line["time"]
                    && d["object"]["metadata"]["name"] == line["object"]["metadata"]["name"]
            })
            .expect("the same delta in the whole history");
        assert_eq!(same["object"], line["object"]);
    }
    // The resource's gaps hold for each of its objects; nothing else for one never recorded.
    let nobody = collect(&store, query(Some("nobody"), 0, i64::MAX)).await;
    assert_eq!(nobody.len(), 1);
    assert_eq!(nobody[0]["gap"]["reason"], "unreachable");
    let mut other = query(None, 0, i64::MAX);
    other.resource = "secrets".into();
    assert!(collect(&store, other).await.is_empty());
}
on_both_engines!(history_lines, a_history_streams_every_version_with_its_gaps);

async fn a_restarting_recorder_gets_the_last_state(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    assert!(store
        .recorded_state(&cluster(), "pods")
        .await
        .unwrap()
        .is_none());
    let expected = churn(&store, 5, 4).await;
    let recorded = store
        .recorded_state(&cluster(), "pods")
        .await
        .unwrap()
        .unwrap();
    let (_, last) = expected.iter().next_back().unwrap();
    let mut names: Vec<String> = recorded
        .objects
        .iter()
        .map(|text| {
            serde_json::from_str::<Value>(text).unwrap()["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, last.keys().cloned().collect::<Vec<_>>());
    assert_eq!(
        recorded.through_ms,
        *expected.keys().next_back().unwrap() + 1_000
    );
    assert!(!recorded.store_resource_version.is_empty());
}
on_both_engines!(recorded_state, a_restarting_recorder_gets_the_last_state);

/// An object the server gave no uid is kept under its key: deleted and
/// made again within one batch, each of its versions reads back, and the
/// state after has the new one (its rows written in separate statements,
/// each patch against the version stored before it).
async fn a_keyed_object_deleted_and_made_again_in_one_batch_reads_back(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    let store = Arc::new(store);
    let version = |rv: u64, phase: &str| {
        let mut object = pod("default", "no-uid", rv, phase, rv);
        object["metadata"].as_object_mut().unwrap().remove("uid");
        object
    };
    let (v1, v2, v3, v4) = (
        version(1, "Pending"),
        version(2, "Running"),
        version(3, "Pending"),
        version(4, "Running"),
    );
    let writes = vec![
        delta(DeltaType::Added, &v1, 1_000, None),
        delta(DeltaType::Updated, &v2, 1_010, Some(&v1)),
        delta(DeltaType::Deleted, &v2, 1_020, Some(&v2)),
        delta(DeltaType::Added, &v3, 1_030, None),
        delta(DeltaType::Updated, &v4, 1_040, Some(&v3)),
        Write::Watermark(WatermarkRecord {
            resource: "pods".into(),
            store_resource_version: "4".into(),
            through_ms: 2_000,
        }),
    ];
    store.write(&cluster(), &writes).await.expect("write");
    let lines = collect(&store, query(Some("no-uid"), 0, i64::MAX)).await;
    let phases: Vec<&str> = lines
        .iter()
        .map(|line| line["object"]["status"]["phase"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        phases,
        ["Pending", "Running", "Running", "Pending", "Running"],
        "{lines:?}"
    );
    let (_, objects) = state(&store, 1_025).await.unwrap();
    assert!(objects.is_empty(), "deleted at 1020: {objects:?}");
    let (_, objects) = state(&store, 1_500).await.unwrap();
    assert_eq!(objects.get("no-uid"), Some(&v4));
}
on_both_engines!(
    keyed_again,
    a_keyed_object_deleted_and_made_again_in_one_batch_reads_back
);

/// A gap that goes on where one of the same reason ended extends it (a
/// restore writes its gap in two parts); another reason stays apart.
async fn a_gap_going_on_from_one_of_its_reason_extends_it(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    let store = Arc::new(store);
    let gap = |from_ms, to_ms, reason| {
        Write::Gap(GapRecord {
            resource: "pods".into(),
            from_ms,
            to_ms,
            reason,
        })
    };
    store
        .write(&cluster(), &[gap(100, 200, GapReason::NotRunning)])
        .await
        .unwrap();
    store
        .write(
            &cluster(),
            &[
                gap(200, 300, GapReason::NotRunning),
                gap(300, 400, GapReason::Expired),
            ],
        )
        .await
        .unwrap();
    let gaps: Vec<Value> = collect(&store, query(None, 0, i64::MAX))
        .await
        .into_iter()
        .map(|line| line["gap"].clone())
        .collect();
    assert_eq!(
        gaps,
        [
            serde_json::json!({"from": "1970-01-01T00:00:00.100Z", "to": "1970-01-01T00:00:00.300Z", "reason": "not-running"}),
            serde_json::json!({"from": "1970-01-01T00:00:00.300Z", "to": "1970-01-01T00:00:00.400Z", "reason": "expired"}),
        ]
    );
}
on_both_engines!(gap_joined, a_gap_going_on_from_one_of_its_reason_extends_it);

/// A recorder restarted on a system clock set back: its deltas are stored
/// at the record's last time, never before it, so an object's chain read
/// by time is still its chain, and the newest version is the state's.
async fn a_clock_set_back_across_a_restart_keeps_the_order(engine: support::Engine) {
    let (store, target) = fresh_store(engine).await;
    let first = pod("default", "web-0", 101, "Pending", 0);
    let second = pod("default", "web-0", 102, "Running", 0);
    let third = pod("default", "web-0", 103, "Running", 1);
    store
        .write(
            &cluster(),
            &[
                delta(DeltaType::Added, &first, 1_000, None),
                delta(DeltaType::Updated, &second, 2_000, Some(&first)),
            ],
        )
        .await
        .unwrap();
    store.close().await;
    let store = reopened(&target).await;
    // the restarted recorder's clock reads 500: an hour "before" the record
    store
        .write(
            &cluster(),
            &[delta(DeltaType::Updated, &third, 500, Some(&second))],
        )
        .await
        .unwrap();
    let (_, objects) = state(&store, 2_000).await.unwrap();
    assert_eq!(objects["web-0"], third);
    let lines = collect(&store, query(Some("web-0"), i64::MIN, i64::MAX)).await;
    let versions: Vec<&Value> = lines.iter().map(|line| &line["object"]).collect();
    assert_eq!(versions, [&first, &second, &third]);
    assert_eq!(
        lines[2]["time"], lines[1]["time"],
        "stored at the record's last time"
    );
}
on_both_engines!(
    clock_set_back,
    a_clock_set_back_across_a_restart_keeps_the_order
);

/// Rewrites every patch of a record as an earlier deltascope wrote it —
/// against the version before, not the chain's full — and marks the
/// database schema version 3.
async fn as_written_before_version_4(target: &deltascope_history::HistoryTarget) {
    use deltascope_history::codec::{deflate, BodyKind};
    use deltascope_history::rebuild::Rebuild;
    let pool = support::connect(target).await;
    let rows: Vec<(i64, i64, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT id, object_id, body_kind, body FROM ds_deltas ORDER BY object_id, id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut chain: Option<(i64, Rebuild, String)> = None;
    let mut rewritten = 0;
    for (id, object_id, kind, body) in rows {
        let mut rebuild = match chain.take() {
            Some((object, rebuild, _)) if object == object_id => rebuild,
            _ => Rebuild::default(),
        };
        let before = rebuild.clone().into_text().unwrap();
        rebuild.apply(kind, &body).unwrap();
        let text = rebuild.clone().into_text().unwrap().unwrap();
        if kind == BodyKind::BasePatch as i64 {
            let step = support::compact(&serde_json::from_str(&before.unwrap()).unwrap())
                .patch_to(&support::compact(&serde_json::from_str(&text).unwrap()));
            sqlx::query("UPDATE ds_deltas SET body_kind = $1, body = $2 WHERE id = $3")
                .bind(BodyKind::Patch as i64)
                .bind(deflate(&step))
                .bind(id)
                .execute(&pool)
                .await
                .unwrap();
            rewritten += 1;
        }
        chain = Some((object_id, rebuild, text));
    }
    assert!(rewritten > 20, "the churn wrote patches: {rewritten}");
    sqlx::query("UPDATE ds_meta SET value = '3' WHERE key = 'schema_version'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// A record written before schema version 4 (each patch against the version
/// before it) reads back after the upgrade: every moment's state and every
/// version in a window starting inside a chain; and what is written after
/// the upgrade reads back beside it.
async fn a_record_of_patches_between_versions_reads_back(engine: support::Engine) {
    let (store, target) = fresh_store(engine).await;
    let updates = u64::from(MAX_CHAIN) / 2 + 3;
    let expected = churn(&store, 4, updates).await;
    store.close().await;
    as_written_before_version_4(&target).await;
    let store = reopened(&target).await;
    for (at, objects) in &expected {
        assert_eq!(
            &state(&store, *at).await.unwrap().1,
            objects,
            "state at {at}"
        );
    }
    // a window from the middle of the chains: each version as it was
    let (from, _) = expected.iter().nth(9).unwrap();
    let lines = collect(&store, query(None, *from, i64::MAX)).await;
    let objects: Vec<&Value> = lines.iter().filter_map(|line| line.get("object")).collect();
    assert!(!objects.is_empty());
    for object in objects {
        let rv: i64 = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let name = object["metadata"]["name"].as_str().unwrap();
        let then = expected
            .values()
            .filter_map(|state| state.get(name))
            .find(|o| o["metadata"]["resourceVersion"] == object["metadata"]["resourceVersion"]);
        if let Some(then) = then {
            assert_eq!(then, object, "{name} at rv {rv}");
        }
    }
    // upgraded by a binary that did not note it: the same lines, each chain
    // read back when its first row in the window needs it
    store.close().await;
    let pool = support::connect(&target).await;
    sqlx::query("DELETE FROM ds_meta WHERE key = 'between_version_patches'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = reopened(&target).await;
    assert_eq!(
        collect(&store, query(None, *from, i64::MAX)).await,
        lines,
        "read without the note"
    );
    // written after the upgrade: a new chain, read back beside the old one
    let (last_at, now) = expected.iter().next_back().unwrap();
    let name = now.keys().next().unwrap().clone();
    let updated = pod("default", &name, 9_999, "Succeeded", 99);
    store
        .write(
            &cluster(),
            &[delta(
                DeltaType::Updated,
                &updated,
                last_at + 10,
                Some(&now[&name]),
            )],
        )
        .await
        .unwrap();
    let (_, after) = state(&store, last_at + 10).await.unwrap();
    assert_eq!(after[&name], updated);
    assert_eq!(&state(&store, *last_at).await.unwrap().1, now);
}
on_both_engines!(
    written_before_version_4,
    a_record_of_patches_between_versions_reads_back
);
