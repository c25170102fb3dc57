//! Server-side table mode through the whole informer (sans-IO, fake clock):
//! requests carry the Table `Accept` header and `includeObject=Object`, Table
//! lists and watch events fill the store with the rows' real objects (same
//! digest as plain JSON) carrying their cells, the informer keeps the list's
//! column definitions, a server that answers plain lists is used as it is,
//! and a row without an object is a decode error that relists.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

fn cfg(table: bool) -> InformerConfig {
    InformerConfig::new(ResourceRef::new("", "v1", "pods", true))
        .streaming_list(false)
        .server_table(table)
        .seed(7)
}

fn pod(name: &str, rv: &str, phase: &str) -> Value {
    json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name, "namespace": "shop",
        "uid": format!("uid-{name}"), "resourceVersion": rv, "creationTimestamp": "2024-01-01T00:00:00Z"},
        "status": {"phase": phase}})
}

fn columns() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name", "priority": 0, "description": "Name must be unique within a namespace."},
        {"name": "Status", "type": "string", "format": "", "priority": 0, "description": "The aggregate status."},
        {"name": "Age", "type": "string", "format": "", "priority": 0, "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
        {"name": "IP", "type": "string", "format": "", "priority": 1, "description": "IP address."}
    ])
}

fn row(o: &Value) -> Value {
    json!({"cells": [o["metadata"]["name"], o["status"]["phase"], "5m", "10.0.0.1"], "object": o})
}

fn table(rows: Vec<Value>, meta: Value, with_columns: bool) -> Value {
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
        "columnDefinitions": if with_columns { columns() } else { json!([]) }, "rows": rows})
}

fn line(kind: &str, object: Value) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap();
    v.push(b'\n');
    v
}

struct Sent {
    id: RequestId,
    kind: RequestKind,
    path: String,
    accept: Option<&'static str>,
}

fn sends(inf: &mut Informer) -> Vec<Sent> {
    let mut out = Vec::new();
    while let Some(a) = inf.poll_action() {
        if let Action::Send {
            id,
            kind,
            path_and_query,
            accept,
        } = a
        {
            out.push(Sent {
                id,
                kind,
                path: path_and_query,
                accept,
            });
        }
    }
    out
}

fn one(inf: &mut Informer) -> Sent {
    let mut s = sends(inf);
    assert_eq!(s.len(), 1, "exactly one request");
    s.remove(0)
}

fn respond(inf: &mut Informer, id: RequestId, body: &[u8], now: Millis) {
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        now,
    );
    inf.handle(Input::BodyChunk { id, bytes: body }, now);
    inf.handle(Input::BodyEnd { id }, now);
}

fn open(inf: &mut Informer, id: RequestId, bytes: &[u8], now: Millis) {
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        now,
    );
    inf.handle(Input::BodyChunk { id, bytes }, now);
}

fn cells_of(inf: &Informer, key: &str) -> Vec<String> {
    inf.store()
        .get_by_key(key)
        .and_then(|o| o.cells.as_ref())
        .map(|c| c.iter().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn column_names(inf: &Informer) -> Option<Vec<String>> {
    inf.server_columns()
        .map(|c| c.iter().map(|d| d.name.clone()).collect())
}

#[test]
fn table_mode_requests_ask_for_tables_with_objects() {
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let list = one(&mut inf);
    assert_eq!(list.kind, RequestKind::List);
    assert_eq!(list.accept, Some(TABLE_ACCEPT));
    assert!(list.path.contains("&includeObject=Object"), "{}", list.path);
    let body = serde_json::to_vec(&table(vec![], json!({"resourceVersion": "5"}), true)).unwrap();
    respond(&mut inf, list.id, &body, 1);
    let watch = one(&mut inf);
    assert_eq!(watch.kind, RequestKind::Watch);
    assert_eq!(watch.accept, Some(TABLE_ACCEPT));
    assert!(
        watch.path.contains("&includeObject=Object"),
        "{}",
        watch.path
    );
    assert!(watch.path.contains("resourceVersion=5"), "{}", watch.path);

    // without table mode nothing changes
    let mut plain = Informer::new(cfg(false));
    plain.start(0);
    let list = one(&mut plain);
    assert_eq!(list.accept, None);
    assert!(!list.path.contains("includeObject"), "{}", list.path);
    // and the sharing key tells the two apart
    assert_ne!(cfg(true).share_key(), cfg(false).share_key());
}

#[test]
fn a_paged_table_list_then_table_events_fill_the_store_with_real_objects() {
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let first = one(&mut inf);
    let page1 = table(
        vec![row(&pod("a", "3", "Running"))],
        json!({"resourceVersion": "9", "continue": "c1"}),
        true,
    );
    respond(&mut inf, first.id, &serde_json::to_vec(&page1).unwrap(), 1);
    // the first page already names the columns (the table can show its headers)
    assert_eq!(
        column_names(&inf),
        Some(vec![
            "Name".into(),
            "Status".into(),
            "Age".into(),
            "IP".into()
        ])
    );
    let second = one(&mut inf);
    assert!(second.path.contains("continue=c1"), "{}", second.path);
    assert_eq!(second.accept, Some(TABLE_ACCEPT));
    let page2 = table(
        vec![row(&pod("b", "4", "Pending"))],
        json!({"resourceVersion": "9"}),
        true,
    );
    respond(&mut inf, second.id, &serde_json::to_vec(&page2).unwrap(), 2);
    assert!(inf.has_synced());
    let listed_columns = inf.server_columns().cloned().expect("columns");
    assert_eq!(inf.store().len(), 2);
    let a = inf.store().get_by_key("shop/a").expect("a");
    assert_eq!(
        a.value.pointer("/kind").and_then(crate::JsonRef::as_str),
        Some("Pod"),
        "the real object"
    );
    assert_eq!(cells_of(&inf, "shop/b"), ["b", "Pending", "5m", "10.0.0.1"]);

    // the digest is the one of the same objects listed as plain JSON
    let mut plain = Informer::new(cfg(false));
    plain.start(0);
    let list = one(&mut plain);
    let body = serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "9"}, "items": [pod("a", "3", "Running"), pod("b", "4", "Pending")]}))
    .unwrap();
    respond(&mut plain, list.id, &body, 1);
    assert_eq!(plain.store().digest(), inf.store().digest());
    assert!(plain.server_columns().is_none());

    // watch: Table events with one row; later ones carry no columns
    let watch = one(&mut inf);
    let mut bytes = line(
        "MODIFIED",
        table(
            vec![row(&pod("a", "10", "Failed"))],
            json!({"resourceVersion": "10"}),
            true,
        ),
    );
    bytes.extend(line(
        "ADDED",
        table(
            vec![row(&pod("c", "11", "Running"))],
            json!({"resourceVersion": "11"}),
            false,
        ),
    ));
    bytes.extend(line(
        "DELETED",
        table(
            vec![row(&pod("b", "12", "Pending"))],
            json!({"resourceVersion": "12"}),
            false,
        ),
    ));
    bytes.extend(line(
        "BOOKMARK",
        table(vec![], json!({"resourceVersion": "13"}), false),
    ));
    open(&mut inf, watch.id, &bytes, 3);
    let mut keys: Vec<&str> = inf.store().list_keys().collect();
    keys.sort_unstable();
    assert_eq!(keys, ["shop/a", "shop/c"]);
    assert_eq!(cells_of(&inf, "shop/a")[1], "Failed");
    assert_eq!(cells_of(&inf, "shop/c")[0], "c");
    assert_eq!(inf.status().last_resource_version, "13");
    // columns are the list's: watch events neither clear nor replace them
    let now_columns = inf.server_columns().cloned().expect("columns");
    assert!(std::sync::Arc::ptr_eq(&listed_columns, &now_columns));
    // the history keeps the objects, cells included
    let versions: Vec<_> = inf.history().versions("shop/a").collect();
    assert_eq!(versions.len(), 2);
    assert!(versions[1].object.cells.is_some());
}

#[test]
fn a_server_without_tables_falls_back_to_plain_objects() {
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let list = one(&mut inf);
    let body = serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "9"}, "items": [pod("a", "3", "Running")]}))
    .unwrap();
    respond(&mut inf, list.id, &body, 1);
    assert!(inf.has_synced());
    assert!(
        inf.server_columns().is_none(),
        "no columns: client-side ones"
    );
    assert_eq!(inf.store().len(), 1);
    let watch = one(&mut inf);
    open(
        &mut inf,
        watch.id,
        &line("MODIFIED", pod("a", "10", "Failed")),
        2,
    );
    let a = inf.store().get_by_key("shop/a").expect("a");
    assert_eq!(a.resource_version, "10");
    assert!(a.cells.is_none());
    assert_eq!(inf.status().phase, Phase::Watching);
}

#[test]
fn a_relist_that_comes_back_plain_drops_the_columns() {
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let list = one(&mut inf);
    let body = serde_json::to_vec(&table(
        vec![row(&pod("a", "3", "Running"))],
        json!({"resourceVersion": "9"}),
        true,
    ))
    .unwrap();
    respond(&mut inf, list.id, &body, 1);
    assert!(inf.server_columns().is_some());
    // the watch expires: relist, and this time the server prints no Table
    let watch = one(&mut inf);
    open(
        &mut inf,
        watch.id,
        &line(
            "ERROR",
            json!({"kind": "Status", "code": 410, "reason": "Expired"}),
        ),
        2,
    );
    inf.handle(Input::Tick, 60_000);
    let relist = one(&mut inf);
    assert_eq!(relist.kind, RequestKind::List);
    let body = serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "20"}, "items": [pod("a", "15", "Running")]}))
    .unwrap();
    respond(&mut inf, relist.id, &body, 60_001);
    assert!(inf.server_columns().is_none());
    assert_eq!(
        inf.store()
            .get_by_key("shop/a")
            .map(|o| o.resource_version.clone()),
        Some("15".into())
    );
}

#[test]
fn a_row_without_an_object_is_a_decode_error_and_the_list_is_retried() {
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let list = one(&mut inf);
    let body = serde_json::to_vec(&table(
        vec![json!({"cells": ["a", "Running", "5m", ""]})],
        json!({"resourceVersion": "9"}),
        true,
    ))
    .unwrap();
    respond(&mut inf, list.id, &body, 1);
    assert!(!inf.has_synced());
    assert_eq!(inf.status().phase.as_str(), "backoff");
    let message = inf
        .status()
        .last_error
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(message.contains("has no object"), "{message}");
    assert_eq!(inf.store().len(), 0);
    inf.handle(Input::Tick, 60_000);
    assert_eq!(one(&mut inf).kind, RequestKind::List);

    // in a watch: reported, and the watch restarts from the last good RV
    let mut inf = Informer::new(cfg(true));
    inf.start(0);
    let list = one(&mut inf);
    let body = serde_json::to_vec(&table(vec![], json!({"resourceVersion": "9"}), true)).unwrap();
    respond(&mut inf, list.id, &body, 1);
    let watch = one(&mut inf);
    let bad = line(
        "ADDED",
        table(vec![json!({"cells": ["x"]})], json!({}), false),
    );
    open(&mut inf, watch.id, &bad, 2);
    assert_eq!(inf.status().phase.as_str(), "backoff");
    inf.handle(Input::Tick, 60_000);
    let again = one(&mut inf);
    assert_eq!(again.kind, RequestKind::Watch);
    assert!(again.path.contains("resourceVersion=9"), "{}", again.path);
}

#[test]
fn a_streaming_list_of_table_events_ends_at_a_table_bookmark() {
    let mut inf = Informer::new(cfg(true).streaming_list(true));
    inf.start(0);
    let watch = one(&mut inf);
    assert!(
        watch.path.contains("sendInitialEvents=true"),
        "{}",
        watch.path
    );
    assert_eq!(watch.accept, Some(TABLE_ACCEPT));
    let mut bytes = line(
        "ADDED",
        table(
            vec![row(&pod("a", "3", "Running"))],
            json!({"resourceVersion": "3"}),
            true,
        ),
    );
    bytes.extend(line(
        "ADDED",
        table(
            vec![row(&pod("b", "4", "Pending"))],
            json!({"resourceVersion": "4"}),
            false,
        ),
    ));
    open(&mut inf, watch.id, &bytes, 1);
    assert!(!inf.has_synced());
    assert!(inf.server_columns().is_some(), "headers while streaming");
    let end = line(
        "BOOKMARK",
        table(
            vec![
                json!({"cells": [], "object": {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"resourceVersion": "5", "annotations": {"k8s.io/initial-events-end": "true"}}}}),
            ],
            json!({}),
            false,
        ),
    );
    inf.handle(
        Input::BodyChunk {
            id: watch.id,
            bytes: &end,
        },
        2,
    );
    assert!(inf.has_synced());
    assert_eq!(inf.store().len(), 2);
    assert_eq!(inf.status().last_resource_version, "5");
    assert_eq!(column_names(&inf).map(|c| c.len()), Some(4));
    assert_eq!(cells_of(&inf, "shop/b")[1], "Pending");
}

proptest! {
    /// Any set of objects listed as Table pages (any page size) gives the
    /// store the same objects and digest as the plain list, each object with
    /// exactly its row's cells.
    #[test]
    fn table_pages_round_trip_to_the_plain_store(
        pods in proptest::collection::btree_map("[a-z]{1,8}", ("[0-9]{1,4}", proptest::collection::vec(".{0,12}", 0..6)), 0..25),
        page in 1usize..7,
    ) {
        let objects: Vec<(Value, Vec<String>)> = pods
            .iter()
            .map(|(name, (rv, cells))| (pod(name, rv, "Running"), cells.clone()))
            .collect();
        let mut inf = Informer::new(cfg(true));
        inf.start(0);
        let chunks: Vec<&[(Value, Vec<String>)]> = if objects.is_empty() { vec![&[]] } else { objects.chunks(page).collect() };
        for (i, chunk) in chunks.iter().enumerate() {
            let req = one(&mut inf);
            prop_assert_eq!(req.kind, RequestKind::List);
            let mut meta = json!({"resourceVersion": "99"});
            if i + 1 < chunks.len() {
                meta["continue"] = json!(format!("c{i}"));
            }
            let rows = chunk.iter().map(|(o, cells)| json!({"cells": cells, "object": o})).collect();
            let body = serde_json::to_vec(&table(rows, meta, i == 0)).unwrap();
            respond(&mut inf, req.id, &body, 1);
        }
        prop_assert!(inf.has_synced());
        let mut plain = Informer::new(cfg(false));
        plain.start(0);
        let req = one(&mut plain);
        let items: Vec<Value> = objects.iter().map(|(o, _)| o.clone()).collect();
        let body = serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "99"}, "items": items})).unwrap();
        respond(&mut plain, req.id, &body, 1);
        prop_assert_eq!(inf.store().digest(), plain.store().digest());
        for (o, cells) in &objects {
            let key = format!("shop/{}", o["metadata"]["name"].as_str().unwrap_or(""));
            prop_assert_eq!(&cells_of(&inf, &key), cells);
            let stored = inf.store().get_by_key(&key).map(|s| s.value.clone());
            let listed = plain.store().get_by_key(&key).map(|s| s.value.clone());
            prop_assert_eq!(stored, listed);
        }
        prop_assert_eq!(column_names(&inf).map(|c| c.len()), Some(4));
    }
}
