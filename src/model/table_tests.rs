//! Tests of `table`, in their own file to keep that one readable.

use super::*;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn pod_columns_read_status() {
    let pod: Value = json!({
        "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": "1970-01-01T00:00:00Z"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"ready": true, "restartCount": 2},
            {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"finishedAt": "1970-01-01T00:00:20Z"}}}
        ]}
    })
    .into();
    let pod = KubeObject::from_json(pod).unwrap();
    // kubectl's default columns, as the server prints them (NODE only in the wide view).
    let cells: Vec<String> = columns_for("pods", true)
        .iter()
        .map(|c| c.cell(&pod, 65))
        .collect();
    assert_eq!(
        cells,
        [
            "default",
            "web-1",
            "1/2",
            "CrashLoopBackOff",
            "3 (45s ago)",
            "65s"
        ]
    );
    let titles: Vec<String> = columns_for("pods", false)
        .iter()
        .map(|c| c.title.to_string())
        .collect();
    assert_eq!(titles, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
}

#[test]
fn natural_order_compares_numbers_as_numbers() {
    use std::cmp::Ordering::*;
    assert_eq!(natural_cmp("pod-9", "pod-10"), Less);
    assert_eq!(natural_cmp("2/2", "1/2"), Greater);
    assert_eq!(natural_cmp("node-007", "node-7"), Equal);
    assert_eq!(natural_cmp("a", "ab"), Less);
    assert_eq!(natural_cmp("15", "3"), Greater);
}

fn pod(ns: &str, name: &str, restarts: u64, created: &str) -> KubeObject {
    KubeObject::from_value(json!({"metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
           "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": restarts}]}}))
    .unwrap()
}

#[test]
fn view_order_filters_and_sorts_stably() {
    let objects: std::collections::HashMap<String, KubeObject> = [
        ("a/web-1", pod("a", "web-1", 10, "2024-01-01T00:00:00Z")),
        ("a/web-2", pod("a", "web-2", 2, "2024-01-03T00:00:00Z")),
        ("b/db-1", pod("b", "db-1", 2, "2024-01-02T00:00:00Z")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let keys = SortedKeys::from_keys(objects.keys().cloned());
    let columns = columns_for("pods", true);
    let lookup = |k: &str| objects.get(k);
    let restarts = columns.iter().position(|c| c.title == "RESTARTS");
    let age = columns.iter().position(|c| c.title == "AGE");
    let by = |spec: ViewSpec| -> Vec<String> {
        view_order(&keys, &columns, &spec, 0, lookup)
            .iter()
            .map(|k| k.to_string())
            .collect()
    };
    assert_eq!(by(ViewSpec::default()), ["a/web-1", "a/web-2", "b/db-1"]);
    assert_eq!(
        by(ViewSpec {
            filter: "WEB".into(),
            ..Default::default()
        }),
        ["a/web-1", "a/web-2"]
    );
    // Ties (2 restarts) keep key order; 10 sorts after 2 numerically.
    assert_eq!(
        by(ViewSpec {
            sort_column: restarts,
            ..Default::default()
        }),
        ["a/web-2", "b/db-1", "a/web-1"]
    );
    assert_eq!(
        by(ViewSpec {
            sort_column: age,
            ..Default::default()
        }),
        ["a/web-2", "b/db-1", "a/web-1"]
    );
    assert_eq!(
        by(ViewSpec {
            sort_column: age,
            descending: true,
            ..Default::default()
        }),
        ["a/web-1", "b/db-1", "a/web-2"]
    );
    assert!(by(ViewSpec {
        filter: "nothing-matches".into(),
        ..Default::default()
    })
    .is_empty());
}

fn defs(json: serde_json::Value) -> Vec<ColumnDefinition> {
    serde_json::from_value(json).unwrap()
}

fn pod_defs() -> Vec<ColumnDefinition> {
    defs(json!([
        {"name": "Name", "type": "string", "format": "name", "priority": 0},
        {"name": "Ready", "type": "string", "priority": 0},
        {"name": "Status", "type": "string", "priority": 0},
        {"name": "Restarts", "type": "string", "priority": 0},
        {"name": "Age", "type": "string", "priority": 0, "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
        {"name": "IP", "type": "string", "priority": 1},
        {"name": "Node", "type": "string", "priority": 1}
    ]))
}

fn printed_pod(name: &str, restarts: &str, created: &str) -> KubeObject {
    KubeObject::from_value(
        json!({"metadata": {"name": name, "namespace": "shop", "creationTimestamp": created}}),
    )
    .unwrap()
    .with_cells(crate::informer::RowCells::from_texts([
        name, "1/1", "Running", restarts, "999d", "10.0.0.7", "node-1",
    ]))
}

#[test]
fn server_columns_priority_zero_wide_and_namespace() {
    let titles = |columns: &[Column]| -> Vec<String> {
        columns.iter().map(|c| c.title.to_string()).collect()
    };
    let defs = pod_defs();
    assert!(has_wide_columns(&defs));
    assert_eq!(
        titles(&columns_from_server(&defs, false, true, &[])),
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    assert_eq!(
        titles(&columns_from_server(&defs, true, false, &[])),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    );
    let columns = columns_from_server(&defs, true, true, &[]);
    let pod = printed_pod("web-1", "0", "1970-01-01T00:00:00Z");
    let cells: Vec<String> = columns.iter().map(|c| c.cell(&pod, 65)).collect();
    // the age is the object's (it ticks), not the server's "999d"
    assert_eq!(
        cells,
        ["shop", "web-1", "1/1", "Running", "0", "65s", "10.0.0.7", "node-1"]
    );
    assert_eq!(columns[5].sort, SortKind::Age);
    // an object that came as plain JSON has empty server cells
    let plain =
        KubeObject::from_value(json!({"metadata": {"name": "x", "namespace": "shop"}})).unwrap();
    assert_eq!(columns[3].cell(&plain, 0), "");
    assert_eq!(columns[1].cell(&plain, 0), "x");
}

#[test]
fn server_date_columns_use_the_crd_json_path() {
    let defs = defs(json!([
        {"name": "Name", "type": "string", "format": "name", "priority": 0},
        {"name": "Size", "type": "integer", "priority": 0},
        {"name": "Color", "type": "string", "priority": 1},
        {"name": "Started", "type": "date", "priority": 0},
        {"name": "Age", "type": "string", "format": "date", "priority": 0}
    ]));
    let printer = vec![
        crate::model::printer_columns::PrinterColumn::new(
            "Started",
            "date",
            0,
            ".status.startedAt",
        )
        .unwrap(),
        crate::model::printer_columns::PrinterColumn::new(
            "Age",
            "date",
            0,
            ".metadata.creationTimestamp",
        )
        .unwrap(),
    ];
    let columns = columns_from_server(&defs, false, false, &printer);
    let titles: Vec<&str> = columns.iter().map(|c| c.title.as_ref()).collect();
    assert_eq!(titles, ["NAME", "SIZE", "STARTED", "AGE"]);
    let widget = KubeObject::from_value(
        json!({"metadata": {"name": "w", "creationTimestamp": "1970-01-01T00:00:00Z"},
        "status": {"startedAt": "1970-01-01T00:01:00Z"}}),
    )
    .unwrap()
    .with_cells(crate::informer::RowCells::from_texts([
        "w", "12", "red", "1h", "2h",
    ]));
    let cells: Vec<String> = columns.iter().map(|c| c.cell(&widget, 3_600)).collect();
    assert_eq!(cells, ["w", "12", "59m", "60m"]);
    assert_eq!(columns[3].sort, SortKind::Age);
    assert_eq!(columns[2].sort, SortKind::Natural);
    // without the CRD, a date column other than the age is the server's text
    let columns = columns_from_server(&defs, false, false, &[]);
    assert_eq!(columns[2].cell(&widget, 3_600), "1h");
    assert_eq!(columns[3].cell(&widget, 3_600), "60m");
}

#[test]
fn server_number_cells_sort_as_numbers() {
    let objects: std::collections::HashMap<String, KubeObject> = [
        ("shop/a", printed_pod("a", "10", "2024-01-01T00:00:00Z")),
        ("shop/b", printed_pod("b", "2", "2024-01-01T00:00:00Z")),
        (
            "shop/c",
            printed_pod("c", "3 (5m ago)", "2024-01-01T00:00:00Z"),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let keys = SortedKeys::from_keys(objects.keys().cloned());
    let columns = columns_from_server(&pod_defs(), false, true, &[]);
    let restarts = columns.iter().position(|c| c.title == "RESTARTS");
    let order = view_order(
        &keys,
        &columns,
        &ViewSpec {
            sort_column: restarts,
            ..Default::default()
        },
        0,
        |k| objects.get(k),
    );
    assert_eq!(
        order.iter().map(|k| &**k).collect::<Vec<_>>(),
        ["shop/b", "shop/c", "shop/a"]
    );
    // the text filter reads server cells too
    let order = view_order(
        &keys,
        &columns,
        &ViewSpec {
            filter: "5m ago".into(),
            ..Default::default()
        },
        0,
        |k| objects.get(k),
    );
    assert_eq!(order.iter().map(|k| &**k).collect::<Vec<_>>(), ["shop/c"]);
}

proptest! {
    #[test]
    fn sorted_keys_match_a_sorted_set(ops in proptest::collection::vec((any::<bool>(), "[a-c]{1,3}"), 0..200)) {
        let mut keys = SortedKeys::default();
        let mut model = std::collections::BTreeSet::new();
        for (add, key) in ops {
            if add { keys.insert(&key); model.insert(key); } else { keys.remove(&key); model.remove(&key); }
        }
        prop_assert_eq!(keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }

    /// A batch of edits, merged or one by one, is the same as the edits
    /// applied in order to a sorted set.
    #[test]
    fn a_batch_of_edits_matches_a_sorted_set(
        start in proptest::collection::btree_set("[a-d]{1,3}", 0..60),
        edits in proptest::collection::vec(("[a-d]{1,3}", any::<bool>()), 0..120),
    ) {
        let mut keys = SortedKeys::from_keys(start.iter().cloned());
        let mut model = start;
        for (key, present) in &edits {
            if *present { model.insert(key.clone()); } else { model.remove(key); }
        }
        keys.apply(edits);
        prop_assert_eq!(keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn a_drawn_row_is_its_cells_with_its_selection_flash_and_fade() {
    let columns = columns_for("pods", false);
    let object = pod("shop", "web-1", 2, "1970-01-01T00:00:00Z");
    let plain = RowData::of(&object, &columns, 60, RowMarks::default());
    assert_eq!(plain.key, "shop/web-1");
    assert_eq!(
        plain.cells,
        columns
            .iter()
            .map(|c| c.cell(&object, 60))
            .collect::<Vec<_>>()
    );
    assert!(!plain.flash && !plain.selected && !plain.deleted);
    assert_eq!(plain.animation_since, None);
    let changed = RowMarks {
        selected: true,
        flashing_since: Some(5.0),
        deleted_at: None,
    };
    let row = RowData::of(&object, &columns, 60, changed);
    assert!(row.flash && row.selected && !row.deleted);
    assert_eq!(row.animation_since, Some(5.0));
    let fading = RowMarks {
        deleted_at: Some(9.0),
        ..changed
    };
    let row = RowData::of(&object, &columns, 60, fading);
    assert!(row.deleted);
    assert_eq!(
        row.animation_since,
        Some(9.0),
        "the fade wins over the flash"
    );
}

#[test]
fn top_columns_sort_by_exact_usage_and_rows_without_metrics_first() {
    let window = Arc::new(
        crate::api::usage_list_reader::parse_usage_list(
            br#"{"items":[
            {"metadata":{"name":"web-1","namespace":"a"},"containers":[{"name":"c","usage":{"cpu":"900m","memory":"64Mi"}}]},
            {"metadata":{"name":"web-2","namespace":"a"},"containers":[{"name":"c","usage":{"cpu":"1500000n","memory":"1Gi"}}]},
            {"metadata":{"name":"db-1","namespace":"b"},"containers":[{"name":"c","usage":{"cpu":"1000001n","memory":"2Mi"}}]}]}"#,
        )
        .expect("a list"),
    );
    let objects: std::collections::HashMap<String, KubeObject> = [
        ("a/web-1", pod("a", "web-1", 0, "2024-01-01T00:00:00Z")),
        ("a/web-2", pod("a", "web-2", 0, "2024-01-03T00:00:00Z")),
        ("b/db-1", pod("b", "db-1", 0, "2024-01-02T00:00:00Z")),
        ("b/pending", pod("b", "pending", 0, "2024-01-02T00:00:00Z")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let keys = SortedKeys::from_keys(objects.keys().cloned());
    let mut columns = columns_for("pods", true);
    columns.extend(top_columns(
        crate::model::top::TopTable::Pods,
        &window,
        false,
    ));
    let cpu = columns.iter().position(|c| c.title == "CPU");
    let memory = columns.iter().position(|c| c.title == "MEMORY");
    assert!(columns[cpu.unwrap()].is_top());
    let by = |sort_column| -> Vec<String> {
        let spec = ViewSpec {
            sort_column,
            ..Default::default()
        };
        view_order(&keys, &columns, &spec, 0, |k| objects.get(k))
            .iter()
            .map(|k| k.to_string())
            .collect()
    };
    // "2m" (1.5 millicores) after "2m" (1.000001): the exact usage decides.
    assert_eq!(by(cpu), ["b/pending", "b/db-1", "a/web-2", "a/web-1"]);
    assert_eq!(by(memory), ["b/pending", "b/db-1", "a/web-1", "a/web-2"]);
    let cells: Vec<String> = columns
        .iter()
        .map(|c| c.cell(&objects["a/web-2"], 0))
        .collect();
    assert_eq!(cells[cells.len() - 2..], ["2m", "1024Mi"]);
    assert_eq!(columns[cpu.unwrap()].cell(&objects["b/pending"], 0), "");
}
