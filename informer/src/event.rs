//! Decoding of what the API server sends: watch event lines
//! (`{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": …}`), list
//! bodies (`{"metadata": {"resourceVersion", "continue"}, "items": […]}`) and
//! `Status` error bodies.
//!
//! Server-side printing: a list body or a watch event object of kind `Table`
//! (`meta.k8s.io/v1`) stands for its rows. Each row's `object` becomes the
//! item or the event's object, keeping the row's cells; the list's
//! `columnDefinitions` are returned beside the items, and the Table's
//! `metadata.resourceVersion`/`continue` are the list's. A row without an
//! object (as with `includeObject=None`) is a decode error, never a panic.
//!
//! `Status` is the shared `deltascope-facts` type, the one the servers
//! write. `ListMeta` is a small hand-written serde struct rather than
//! kube-core's: kube-core pulls in k8s-openapi/http/chrono and a feature
//! choice of Kubernetes version, which costs far more build time than the
//! handful of fields read here, and we need objects to stay untyped JSON
//! (any kind, CRDs) anyway. Every decode failure is an error value, never a
//! panic.

use std::sync::Arc;

use serde::Deserialize;

use super::json::{JsonKind, JsonRef, JsonValue, ParsedText};
use super::object::{KubeObject, ObjectError, ObjectRef};
use super::table::{ColumnDefinition, RowCells};
pub use deltascope_facts::status::{Status, StatusCause, StatusDetails};

/// The annotation on the BOOKMARK that ends a streaming list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// One decoded watch event.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(ObjectRef),
    Modified(ObjectRef),
    Deleted(ObjectRef),
    /// Progress notification: only the resourceVersion is meaningful.
    Bookmark {
        resource_version: String,
        /// carries `k8s.io/initial-events-end: "true"` (end of a streaming list)
        initial_events_end: bool,
    },
    Error(Status),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the watch event is not valid JSON: {0}")]
    Json(String),
    #[error("the watch event has an unknown type {0:?}")]
    UnknownType(String),
    #[error("the watch event has no object")]
    MissingObject,
    #[error("the watch event's object is unusable: {0}")]
    Object(#[from] ObjectError),
    #[error("the list response is not valid JSON: {0}")]
    ListJson(String),
    #[error("item {index} of the list is unusable: {source}")]
    ListItem { index: usize, source: ObjectError },
    #[error("row {index} of the Table has no object (deltascope asks for includeObject=Object)")]
    RowWithoutObject { index: usize },
    #[error("the watch event's Table has {rows} rows; a watch event carries exactly one")]
    TableRows { rows: usize },
    #[error("the Table's columnDefinitions are unusable: {0}")]
    Columns(String),
}

fn bookmark_of(object: JsonRef<'_>) -> WatchEvent {
    let meta = object.get("metadata");
    let resource_version = meta
        .and_then(|m| m.get("resourceVersion"))
        .and_then(JsonRef::as_str)
        .unwrap_or_default()
        .to_owned();
    let initial_events_end = meta
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(INITIAL_EVENTS_END))
        .and_then(JsonRef::as_str)
        == Some("true");
    WatchEvent::Bookmark {
        resource_version,
        initial_events_end,
    }
}

/// Decodes one watch line.
pub fn decode_event(line: &[u8]) -> Result<WatchEvent, DecodeError> {
    decode_event_with_columns(line).map(|(event, _)| event)
}

/// Is this object a `meta.k8s.io` Table (and not a custom kind that happens
/// to be called `Table`)?
fn is_table(object: JsonRef<'_>) -> bool {
    object.get("kind").and_then(JsonRef::as_str) == Some("Table")
        && object
            .get("apiVersion")
            .and_then(JsonRef::as_str)
            .is_some_and(|v| v.starts_with("meta.k8s.io/"))
}

/// The text of each cell of a row read as a compact document (watch events).
fn cells_of(cells: Option<JsonRef<'_>>) -> RowCells {
    let texts: Vec<std::borrow::Cow<'_, str>> = cells
        .and_then(JsonRef::as_array)
        .into_iter()
        .flatten()
        .map(|cell| match cell.kind() {
            JsonKind::String(s) => std::borrow::Cow::Borrowed(s),
            JsonKind::Null => std::borrow::Cow::Borrowed(""),
            _ => std::borrow::Cow::Owned(cell.to_string()),
        })
        .collect();
    RowCells::from_texts(texts.iter().map(|t| t.as_ref()))
}

fn columns_of(table: JsonRef<'_>) -> Result<Option<Vec<ColumnDefinition>>, DecodeError> {
    match table.get("columnDefinitions") {
        None => Ok(None),
        Some(defs) if defs.is_null() => Ok(None),
        Some(defs) => {
            let defs: Vec<ColumnDefinition> = serde_json::from_value(defs.to_json())
                .map_err(|e| DecodeError::Columns(e.to_string()))?;
            // after the first event a real apiserver sends none
            Ok(Some(defs).filter(|d| !d.is_empty()))
        }
    }
}

/// The one row of a watch event's Table: its object with its cells.
fn table_row_object(line: ParsedText<'_>, table: JsonRef<'_>) -> Result<KubeObject, DecodeError> {
    let rows = table.get("rows").and_then(JsonRef::as_array);
    let count = rows.map_or(0, |rows| rows.len());
    let Some(row) = rows.and_then(|rows| rows.get(0)).filter(|_| count == 1) else {
        return Err(DecodeError::TableRows { rows: count });
    };
    let object = match row.get("object") {
        Some(o) if !o.is_null() => line.copy_out(o),
        _ => return Err(DecodeError::RowWithoutObject { index: 0 }),
    };
    let cells = cells_of(row.get("cells"));
    Ok(KubeObject::from_json(object)?.with_cells(cells))
}

/// A BOOKMARK in table mode may carry a Table (its resourceVersion in the
/// Table's metadata, or in its row's object) or a plain object.
fn table_bookmark(table: JsonRef<'_>) -> WatchEvent {
    let own = bookmark_of(table);
    let row = table
        .get("rows")
        .and_then(JsonRef::as_array)
        .and_then(|rows| rows.get(0));
    let Some(row) = row else { return own };
    let Some(object) = row.get("object") else {
        return own;
    };
    let from_row = bookmark_of(object);
    match (own, from_row) {
        (
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            },
            WatchEvent::Bookmark {
                resource_version: row_rv,
                initial_events_end: row_end,
            },
        ) => WatchEvent::Bookmark {
            resource_version: if resource_version.is_empty() {
                row_rv
            } else {
                resource_version
            },
            initial_events_end: initial_events_end || row_end,
        },
        (own, _) => own,
    }
}

/// Decodes one watch line, with the column definitions when its object is a
/// Table that carries them (a real apiserver sends them only in the first
/// event of a watch; do not rely on later ones).
pub fn decode_event_with_columns(
    line: &[u8],
) -> Result<(WatchEvent, Option<Vec<ColumnDefinition>>), DecodeError> {
    // The whole line in one go (`json_parse`: the hot path of every list
    // and watch); the object is then copied out of it.
    JsonValue::parse_then(line, decode_parsed_event)
        .map_err(|e| DecodeError::Json(e.to_string()))?
}

/// [`decode_event_with_columns`] of a parsed line.
fn decode_parsed_event(
    line: ParsedText<'_>,
) -> Result<(WatchEvent, Option<Vec<ColumnDefinition>>), DecodeError> {
    let event = line.root();
    if !matches!(event.kind(), JsonKind::Object(_)) {
        return Err(DecodeError::Json(
            "a watch event must be a JSON object".into(),
        ));
    }
    let kind = event
        .get("type")
        .and_then(JsonRef::as_str)
        .ok_or_else(|| DecodeError::Json("missing field `type`".into()))?;
    let object = event
        .get("object")
        .filter(|object| !object.is_null())
        .ok_or(DecodeError::MissingObject)?;
    if kind != "ERROR" && is_table(object) {
        let table = object;
        let columns = columns_of(table)?;
        let event = match kind {
            "ADDED" => WatchEvent::Added(Arc::new(table_row_object(line, table)?)),
            "MODIFIED" => WatchEvent::Modified(Arc::new(table_row_object(line, table)?)),
            "DELETED" => WatchEvent::Deleted(Arc::new(table_row_object(line, table)?)),
            "BOOKMARK" => table_bookmark(table),
            other => return Err(DecodeError::UnknownType(other.to_owned())),
        };
        return Ok((event, columns));
    }
    let obj = |v: JsonRef<'_>| KubeObject::from_json(line.copy_out(v)).map(Arc::new);
    let event = match kind {
        "ADDED" => WatchEvent::Added(obj(object)?),
        "MODIFIED" => WatchEvent::Modified(obj(object)?),
        "DELETED" => WatchEvent::Deleted(obj(object)?),
        "BOOKMARK" => bookmark_of(object),
        "ERROR" => WatchEvent::Error(serde_json::from_value(object.to_json()).unwrap_or_default()),
        other => return Err(DecodeError::UnknownType(other.to_owned())),
    };
    Ok((event, None))
}

/// One page of a list response.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    pub resource_version: String,
    /// `metadata.continue`; `None` when this is the last page.
    pub continue_token: Option<String>,
    pub items: Vec<ObjectRef>,
    /// `Some` when the body was a Table: its column definitions (possibly
    /// empty), and every item carries its row's cells.
    pub columns: Option<Vec<ColumnDefinition>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Option<Vec<JsonValue>>,
    #[serde(default, rename = "columnDefinitions")]
    column_definitions: Option<Vec<ColumnDefinition>>,
    #[serde(default)]
    rows: Option<Vec<RawRow>>,
}

#[derive(Deserialize)]
struct RawRow {
    #[serde(default)]
    cells: RowCells,
    #[serde(default)]
    object: Option<JsonValue>,
}

/// Decodes a list body: a plain list, or a Table whose rows carry objects.
pub fn decode_list(body: &[u8]) -> Result<ListPage, DecodeError> {
    let raw: RawList =
        serde_json::from_slice(body).map_err(|e| DecodeError::ListJson(e.to_string()))?;
    let table = raw.kind.as_deref() == Some("Table")
        && raw
            .api_version
            .as_deref()
            .is_some_and(|v| v.starts_with("meta.k8s.io/"));
    let (items, columns) = if table {
        let rows = raw.rows.unwrap_or_default();
        let mut items = Vec::with_capacity(rows.len());
        for (index, row) in rows.into_iter().enumerate() {
            let object = row
                .object
                .filter(|o| !o.is_null())
                .ok_or(DecodeError::RowWithoutObject { index })?;
            let object = KubeObject::from_json(object)
                .map_err(|source| DecodeError::ListItem { index, source })?;
            items.push(Arc::new(object.with_cells(row.cells)));
        }
        (items, Some(raw.column_definitions.unwrap_or_default()))
    } else {
        let values = raw.items.unwrap_or_default();
        let mut items = Vec::with_capacity(values.len());
        for (index, v) in values.into_iter().enumerate() {
            items.push(Arc::new(
                KubeObject::from_json(v)
                    .map_err(|source| DecodeError::ListItem { index, source })?,
            ));
        }
        (items, None)
    };
    Ok(ListPage {
        resource_version: raw.metadata.resource_version,
        continue_token: raw.metadata.continue_token.filter(|c| !c.is_empty()),
        items,
        columns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_all_event_types() {
        // client-go watch.EventType: Added/Modified/Deleted/Bookmark/Error
        let a = decode_event(br#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}}"#).unwrap();
        assert!(matches!(&a, WatchEvent::Added(o) if o.key == "n/a" && o.resource_version == "5"));
        assert!(matches!(
            decode_event(br#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}"#),
            Ok(WatchEvent::Modified(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"DELETED","object":{"metadata":{"name":"a"}}}"#),
            Ok(WatchEvent::Deleted(_))
        ));
        assert_eq!(
            decode_event(br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}"#).unwrap(),
            WatchEvent::Bookmark { resource_version: "12".into(), initial_events_end: true }
        );
        assert_eq!(
            decode_event(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"13"}}}"#)
                .unwrap(),
            WatchEvent::Bookmark {
                resource_version: "13".into(),
                initial_events_end: false
            }
        );
        let e = decode_event(br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}}"#).unwrap();
        match e {
            WatchEvent::Error(s) => {
                assert!(s.is_expired());
                assert_eq!(s.message, "too old resource version: 1 (5)");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn undecodable_lines_are_errors() {
        assert!(matches!(
            decode_event(b"garbage"),
            Err(DecodeError::Json(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"WAT","object":{}}"#),
            Err(DecodeError::UnknownType(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"ADDED"}"#),
            Err(DecodeError::MissingObject)
        ));
        assert!(matches!(
            decode_event(br#"{"type":"ADDED","object":{"metadata":{}}}"#),
            Err(DecodeError::Object(_))
        ));
    }

    #[test]
    fn list_pages() {
        let p = decode_list(br#"{"kind":"PodList","metadata":{"resourceVersion":"9","continue":"tok"},"items":[{"metadata":{"name":"a"}}]}"#).unwrap();
        assert_eq!(p.resource_version, "9");
        assert_eq!(p.continue_token.as_deref(), Some("tok"));
        assert_eq!(p.items.len(), 1);
        let p = decode_list(br#"{"metadata":{"resourceVersion":"9","continue":""},"items":null}"#)
            .unwrap();
        assert_eq!(p.continue_token, None);
        assert!(p.items.is_empty());
        assert!(decode_list(br#"{"items":[{"metadata":{}}]}"#).is_err());
        assert!(decode_list(b"<html>").is_err());
    }

    fn table_pod(name: &str, rv: &str, status: &str) -> serde_json::Value {
        serde_json::json!({"cells": [name, "1/1", status, 0, "5m"], "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": rv, "creationTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"phase": status}}})
    }

    fn table(
        rows: Vec<serde_json::Value>,
        meta: serde_json::Value,
        columns: bool,
    ) -> serde_json::Value {
        let defs = serde_json::json!([
            {"name": "Name", "type": "string", "format": "name", "priority": 0},
            {"name": "Ready", "type": "string", "priority": 0},
            {"name": "Status", "type": "string", "priority": 0},
            {"name": "Restarts", "type": "integer", "priority": 0},
            {"name": "Age", "type": "string", "priority": 0}]);
        serde_json::json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": if columns { defs } else { serde_json::json!([]) }, "rows": rows})
    }

    #[test]
    fn a_table_list_yields_its_rows_objects_with_cells() {
        let body = serde_json::to_vec(&table(
            vec![
                table_pod("a", "7", "Running"),
                table_pod("b", "8", "Pending"),
            ],
            serde_json::json!({"resourceVersion": "9", "continue": "next"}),
            true,
        ))
        .unwrap();
        let page = decode_list(&body).unwrap();
        assert_eq!(page.resource_version, "9");
        assert_eq!(page.continue_token.as_deref(), Some("next"));
        let columns = page.columns.expect("a Table has columns");
        assert_eq!(columns.len(), 5);
        assert_eq!(columns[3].name, "Restarts");
        assert!(columns[3].is_numeric());
        assert_eq!(page.items.len(), 2);
        let a = &page.items[0];
        // the store keeps the real object, not the row
        assert_eq!(
            (a.key.as_str(), a.resource_version.as_str()),
            ("shop/a", "7")
        );
        assert_eq!(
            a.value.pointer("/kind").and_then(JsonRef::as_str),
            Some("Pod")
        );
        assert_eq!(
            a.value.pointer("/status/phase").and_then(JsonRef::as_str),
            Some("Running")
        );
        let cells: Vec<&str> = a.cells.as_ref().expect("cells").iter().collect();
        assert_eq!(cells, ["a", "1/1", "Running", "0", "5m"]);

        // a plain list has no columns and no cells
        let plain = decode_list(br#"{"kind":"PodList","metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"a"}}]}"#).unwrap();
        assert_eq!(plain.columns, None);
        assert_eq!(plain.items[0].cells, None);
        // an empty Table is an empty list that still names its columns
        let empty = decode_list(
            &serde_json::to_vec(&table(
                vec![],
                serde_json::json!({"resourceVersion": "4"}),
                true,
            ))
            .unwrap(),
        )
        .unwrap();
        assert!(empty.items.is_empty());
        assert_eq!(empty.columns.map(|c| c.len()), Some(5));
    }

    #[test]
    fn a_custom_kind_called_table_is_an_ordinary_object() {
        let page = decode_list(br#"{"kind":"TableList","apiVersion":"furniture.example/v1","metadata":{},"items":[{"kind":"Table","apiVersion":"furniture.example/v1","metadata":{"name":"oak"},"rows":[]}]}"#).unwrap();
        assert_eq!(page.columns, None);
        assert_eq!(page.items[0].key, "oak");
        let e = decode_event(br#"{"type":"ADDED","object":{"kind":"Table","apiVersion":"furniture.example/v1","metadata":{"name":"oak","resourceVersion":"2"},"rows":[]}}"#).unwrap();
        assert!(matches!(e, WatchEvent::Added(o) if o.key == "oak" && o.cells.is_none()));
    }

    #[test]
    fn table_rows_without_objects_are_errors() {
        let row = serde_json::json!({"cells": ["a"]});
        let body = serde_json::to_vec(&table(
            vec![table_pod("a", "1", "Running"), row.clone()],
            serde_json::json!({}),
            true,
        ))
        .unwrap();
        assert_eq!(
            decode_list(&body),
            Err(DecodeError::RowWithoutObject { index: 1 })
        );
        let null_object = serde_json::json!({"cells": ["a"], "object": null});
        let body =
            serde_json::to_vec(&table(vec![null_object], serde_json::json!({}), true)).unwrap();
        assert_eq!(
            decode_list(&body),
            Err(DecodeError::RowWithoutObject { index: 0 })
        );
        let line = serde_json::to_vec(&serde_json::json!({"type": "MODIFIED", "object": table(vec![row], serde_json::json!({}), false)})).unwrap();
        assert_eq!(
            decode_event(&line),
            Err(DecodeError::RowWithoutObject { index: 0 })
        );
        let line = serde_json::to_vec(&serde_json::json!({"type": "ADDED", "object": table(vec![], serde_json::json!({}), false)})).unwrap();
        assert_eq!(decode_event(&line), Err(DecodeError::TableRows { rows: 0 }));
        let bad_columns =
            br#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":"no","rows":[]}"#;
        assert!(matches!(
            decode_list(bad_columns),
            Err(DecodeError::ListJson(_))
        ));
        // a row whose object has no name
        let body = serde_json::to_vec(&table(
            vec![serde_json::json!({"cells": [], "object": {"metadata": {}}})],
            serde_json::json!({}),
            true,
        ))
        .unwrap();
        assert!(matches!(
            decode_list(&body),
            Err(DecodeError::ListItem { index: 0, .. })
        ));
    }

    #[test]
    fn table_watch_events_carry_one_row_and_columns_only_when_sent() {
        let first = serde_json::to_vec(&serde_json::json!({"type": "ADDED",
            "object": table(vec![table_pod("a", "11", "Pending")], serde_json::json!({"resourceVersion": "11"}), true)})).unwrap();
        let (event, columns) = decode_event_with_columns(&first).unwrap();
        assert_eq!(columns.map(|c| c.len()), Some(5));
        match event {
            WatchEvent::Added(o) => {
                assert_eq!(
                    (o.key.as_str(), o.resource_version.as_str()),
                    ("shop/a", "11")
                );
                assert_eq!(o.cells.as_ref().and_then(|c| c.get(2)), Some("Pending"));
            }
            other => panic!("{other:?}"),
        }
        // later events have an empty columnDefinitions (a real apiserver) or none
        let later = serde_json::to_vec(&serde_json::json!({"type": "DELETED",
            "object": table(vec![table_pod("a", "12", "Running")], serde_json::json!({"resourceVersion": "12"}), false)})).unwrap();
        let (event, columns) = decode_event_with_columns(&later).unwrap();
        assert_eq!(columns, None);
        assert!(matches!(event, WatchEvent::Deleted(o) if o.resource_version == "12"));
        // plain events still decode in table mode
        let (event, columns) = decode_event_with_columns(
            br#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"13"}}}"#,
        )
        .unwrap();
        assert_eq!(columns, None);
        assert!(matches!(event, WatchEvent::Modified(o) if o.cells.is_none()));
    }

    #[test]
    fn table_bookmarks_take_the_rv_from_the_table_or_its_row() {
        let plain = decode_event(br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"20"}}}"#).unwrap();
        assert_eq!(
            plain,
            WatchEvent::Bookmark {
                resource_version: "20".into(),
                initial_events_end: false
            }
        );
        let t = serde_json::to_vec(&serde_json::json!({"type": "BOOKMARK",
            "object": table(vec![], serde_json::json!({"resourceVersion": "21"}), false)}))
        .unwrap();
        assert_eq!(
            decode_event(&t).unwrap(),
            WatchEvent::Bookmark {
                resource_version: "21".into(),
                initial_events_end: false
            }
        );
        let row = serde_json::json!({"cells": [], "object": {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": "22", "annotations": {"k8s.io/initial-events-end": "true"}}}});
        let t = serde_json::to_vec(&serde_json::json!({"type": "BOOKMARK",
            "object": table(vec![row], serde_json::json!({}), false)}))
        .unwrap();
        assert_eq!(
            decode_event(&t).unwrap(),
            WatchEvent::Bookmark {
                resource_version: "22".into(),
                initial_events_end: true
            }
        );
        // an ERROR event is a Status even in table mode
        assert!(
            matches!(decode_event(br#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#), Ok(WatchEvent::Error(s)) if s.is_expired())
        );
    }

    #[test]
    fn status_bodies() {
        let s = Status::from_body(br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}"#).unwrap();
        assert_eq!(s.code, 403);
        assert_eq!(s.reason, "Forbidden");
        assert!(Status::from_body(b"<html>").is_none());
        let s = Status::from_body(br#"{"kind":"Status","code":504,"details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"x"}]}}"#).unwrap();
        assert!(s.is_too_large_rv());
    }
}
