//! Server-side printing: `meta.k8s.io/v1` Table responses for
//! `Accept: application/json;as=Table;...`, with the columns `kubectl get`
//! shows for each kind (a CRD added at runtime gets a custom resource's
//! default ones, Name and Age) and rows carrying PartialObjectMetadata.
//! The columns are `columns`'s, the cells `cells`'s; Events' and
//! EndpointSlices' cells `events`'s.

use serde_json::{json, Value};

mod cells;
mod columns;
mod events;
mod text;

pub use self::cells::cells;
pub use self::columns::columns;

/// What each row's `object` holds (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: Option<&str>) -> Result<IncludeObject, String> {
        match s {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!(
                "invalid includeObject {other:?}: use None, Metadata or Object"
            )),
        }
    }
}

/// The Table a request asks for: `None` when `accept` wants plain JSON,
/// else its `includeObject` (an unknown value is the error's text).
pub fn asked_mode(
    accept: &str,
    include_object: Option<&str>,
) -> Result<Option<IncludeObject>, String> {
    if wants_table(accept) {
        IncludeObject::parse(include_object).map(Some)
    } else {
        Ok(None)
    }
}

/// Does this Accept header ask for a Table?
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

/// The additionalPrinterColumns of the served version of the widget CRD.
fn crd_columns() -> Vec<Value> {
    super::objects::widget_crd()["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The simple `.a.b.c` JSONPaths printer columns use.
fn json_path<'a>(o: &'a Value, path: &str) -> &'a Value {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .fold(o, |v, part| &v[part])
}

/// One table row for an object.
pub fn row(plural: &str, obj: &Value, include: IncludeObject) -> Value {
    row_of(cells(plural, obj), obj, include)
}

/// A row of `cells` for `obj`, its `object` as `includeObject` asks.
pub fn row_of(cells: Vec<Value>, obj: &Value, include: IncludeObject) -> Value {
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]});
        }
        IncludeObject::Object => r["object"] = obj.clone(),
    }
    r
}

/// One row as JSON bytes. With `includeObject=Object` the object is spliced
/// in from its stored bytes (`json`) instead of being cloned and serialised
/// again: printing 10k objects as Tables then costs a parse for the cells
/// rather than a parse, a deep clone and a serialisation.
pub fn row_json(plural: &str, value: &Value, json: &[u8], include: IncludeObject) -> Vec<u8> {
    if include != IncludeObject::Object {
        return serde_json::to_vec(&row(plural, value, include)).unwrap_or_default();
    }
    let cells = serde_json::to_vec(&cells(plural, value)).unwrap_or_default();
    let mut out = Vec::with_capacity(cells.len() + json.len() + 24);
    out.extend_from_slice(b"{\"cells\":");
    out.extend_from_slice(&cells);
    out.extend_from_slice(b",\"object\":");
    out.extend_from_slice(json);
    out.push(b'}');
    out
}

/// [`table`] as JSON bytes, from rows already serialised by [`row_json`].
pub fn table_json(
    plural: &str,
    rows: &[Vec<u8>],
    list_meta: &Value,
    with_columns: bool,
) -> Vec<u8> {
    let columns = if with_columns {
        columns(plural)
    } else {
        json!([])
    };
    let mut out = Vec::with_capacity(rows.iter().map(|r| r.len() + 1).sum::<usize>() + 512);
    out.extend_from_slice(b"{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
    out.extend_from_slice(&serde_json::to_vec(list_meta).unwrap_or_default());
    out.extend_from_slice(b",\"columnDefinitions\":");
    out.extend_from_slice(&serde_json::to_vec(&columns).unwrap_or_default());
    out.extend_from_slice(b",\"rows\":[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r);
    }
    out.extend_from_slice(b"]}");
    out
}

/// A Table of rows; `with_columns` false for watch events after the first.
pub fn table(plural: &str, rows: Vec<Value>, list_meta: Value, with_columns: bool) -> Value {
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": if with_columns { columns(plural) } else { json!([]) },
        "rows": rows
    })
}

#[cfg(test)]
mod tests {
    use super::super::resources::RESOURCES;
    use super::*;

    #[test]
    fn spliced_tables_equal_built_ones() {
        let obj = json!({"metadata": {"name": "x", "namespace": "n", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
        let bytes = serde_json::to_vec(&obj).unwrap();
        for include in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            let rows = vec![row_json("pods", &obj, &bytes, include)];
            let meta = json!({"resourceVersion": "5"});
            for with_columns in [true, false] {
                let spliced: Value =
                    serde_json::from_slice(&table_json("pods", &rows, &meta, with_columns))
                        .unwrap();
                let built = table(
                    "pods",
                    vec![row("pods", &obj, include)],
                    meta.clone(),
                    with_columns,
                );
                assert_eq!(spliced, built);
            }
        }
    }

    #[test]
    fn every_resource_has_matching_cells() {
        for r in RESOURCES {
            let cols = columns(&r.plural);
            let n = cols.as_array().map_or(0, Vec::len);
            assert_eq!(
                cells(&r.plural, &json!({"metadata": {"name": "x"}})).len(),
                n,
                "{}",
                r.plural
            );
        }
    }
}
