//! A custom resource's own columns: reads `additionalPrinterColumns` of the
//! served version from its CustomResourceDefinition and evaluates each
//! column's JSONPath on an object the way `kubectl get` prints it (dates as
//! ages, several matches joined by commas). Pure Rust, tested natively.
//!
//! The JSONPath subset is what CRDs use in practice: `.a.b`, `['a.b']`,
//! `[N]` (negative from the end), `[*]`, and filters `[?(@.type=="Ready")]`.

use serde_json::Value;

use crate::informer::{JsonKind, JsonRef, JsonValue};
use deltascope_facts::time::{format_age, parse_rfc3339};

/// One step of a parsed JSONPath.
#[derive(Clone, Debug, PartialEq)]
pub enum PathStep {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.a.b=="v")]`: the array members whose `a.b` is the string (or scalar text) `v`.
    Filter {
        path: Vec<String>,
        equals: String,
    },
}

/// Why a printer column cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrinterColumnError {
    #[error("the CustomResourceDefinition is not JSON: {0}")]
    NotJson(String),
    #[error("the CustomResourceDefinition does not serve version {0}")]
    NoSuchVersion(String),
    #[error("printer column {column:?}: unsupported JSONPath {path:?} ({why})")]
    Path {
        column: String,
        path: String,
        why: &'static str,
    },
}

/// One `additionalPrinterColumns` entry, ready to evaluate.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    pub priority: u64,
    pub json_path: String,
    steps: Vec<PathStep>,
}

impl PrinterColumn {
    pub fn new(
        name: &str,
        type_: &str,
        priority: u64,
        json_path: &str,
    ) -> Result<PrinterColumn, PrinterColumnError> {
        let steps = parse_path(json_path).map_err(|why| PrinterColumnError::Path {
            column: name.to_string(),
            path: json_path.to_string(),
            why,
        })?;
        Ok(PrinterColumn {
            name: name.to_string(),
            type_: type_.to_string(),
            priority,
            json_path: json_path.to_string(),
            steps,
        })
    }

    /// True for the usual `Age` column (sorts by creation time).
    pub fn is_creation_time(&self) -> bool {
        self.type_ == "date" && self.steps == [field("metadata"), field("creationTimestamp")]
    }

    /// The cell text for `object`, as `kubectl get` prints it.
    pub fn cell(&self, object: &JsonValue, now_unix: i64) -> String {
        let found = evaluate(&self.steps, object.root());
        if self.type_ == "date" {
            if let [single] = found.as_slice() {
                if let Some(at) = single.as_str().and_then(parse_rfc3339) {
                    return format_age(now_unix - at);
                }
            }
        }
        found
            .iter()
            .map(|value| match value.kind() {
                JsonKind::String(text) => text.to_string(),
                JsonKind::Null => String::new(),
                _ => value.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn field(name: &str) -> PathStep {
    PathStep::Field(name.to_string())
}

/// The priority-0 printer columns of `version` in a CRD (JSON bytes).
/// Columns with a JSONPath this module cannot evaluate are skipped and named
/// in the returned warnings rather than failing the whole table.
pub fn default_columns(
    crd: &[u8],
    version: &str,
) -> Result<(Vec<PrinterColumn>, Vec<PrinterColumnError>), PrinterColumnError> {
    let crd: Value =
        serde_json::from_slice(crd).map_err(|e| PrinterColumnError::NotJson(e.to_string()))?;
    let served = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
        })
        .ok_or_else(|| PrinterColumnError::NoSuchVersion(version.to_string()))?;
    let mut columns = Vec::new();
    let mut warnings = Vec::new();
    let listed = served
        .get("additionalPrinterColumns")
        .and_then(Value::as_array);
    let Some(listed) = listed else {
        // The apiserver's default for a CRD without printer columns: Age.
        let age = PrinterColumn::new("Age", "date", 0, ".metadata.creationTimestamp")?;
        return Ok((vec![age], warnings));
    };
    for entry in listed {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
        let priority = entry.get("priority").and_then(Value::as_u64).unwrap_or(0);
        if priority != 0 {
            continue;
        }
        match PrinterColumn::new(text("name"), text("type"), priority, text("jsonPath")) {
            Ok(column) => columns.push(column),
            Err(error) => warnings.push(error),
        }
    }
    Ok((columns, warnings))
}

/// Parses the JSONPath subset described in the module doc.
pub fn parse_path(path: &str) -> Result<Vec<PathStep>, &'static str> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    let bytes = path.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    // `\.` escapes a dot inside a key (as in label keys).
                    end += if bytes[end] == b'\\' { 2 } else { 1 };
                }
                let end = end.min(bytes.len());
                let name = path[start..end].replace("\\.", ".");
                if name.is_empty() {
                    return Err("empty field name");
                }
                steps.push(PathStep::Field(name));
                i = end;
            }
            b'[' => {
                let close = bracket_end(path, i).ok_or("unclosed [")?;
                steps.push(bracket_step(&path[i + 1..close])?);
                i = close + 1;
            }
            _ => return Err("expected . or ["),
        }
    }
    if steps.is_empty() {
        return Err("empty path");
    }
    Ok(steps)
}

/// The index of the `]` closing the `[` at `open`, skipping quoted text.
fn bracket_end(path: &str, open: usize) -> Option<usize> {
    let mut quote = None;
    for (offset, c) in path[open + 1..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ']') => return Some(open + 1 + offset),
            _ => {}
        }
    }
    None
}

fn unquote(text: &str) -> Option<&str> {
    let text = text.trim();
    ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
}

fn bracket_step(inside: &str) -> Result<PathStep, &'static str> {
    let inside = inside.trim();
    if inside == "*" {
        return Ok(PathStep::All);
    }
    if let Some(key) = unquote(inside) {
        return Ok(PathStep::Field(key.to_string()));
    }
    if let Ok(index) = inside.parse::<i64>() {
        return Ok(PathStep::Index(index));
    }
    let filter = inside
        .strip_prefix("?(")
        .and_then(|f| f.strip_suffix(')'))
        .ok_or("only [N], [*], ['key'] and [?(@.field==\"value\")] are supported")?;
    let (left, right) = filter
        .split_once("==")
        .ok_or("a filter must compare with ==")?;
    let left = left
        .trim()
        .strip_prefix("@.")
        .ok_or("a filter must start with @.")?;
    let right = right.trim();
    let equals = unquote(right).unwrap_or(right).to_string();
    Ok(PathStep::Filter {
        path: left.split('.').map(str::to_string).collect(),
        equals,
    })
}

fn scalar_text(value: JsonRef<'_>) -> Option<String> {
    match value.kind() {
        JsonKind::String(s) => Some(s.to_string()),
        JsonKind::Number(_) | JsonKind::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// Every value `steps` reaches from `root`, in document order.
pub fn evaluate<'a>(steps: &[PathStep], root: JsonRef<'a>) -> Vec<JsonRef<'a>> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                PathStep::Field(name) => next.extend(value.get(name.as_str())),
                PathStep::Index(index) => {
                    if let Some(items) = value.as_array() {
                        let at = if *index < 0 {
                            items.len().checked_sub(index.unsigned_abs() as usize)
                        } else {
                            Some(*index as usize)
                        };
                        next.extend(at.and_then(|at| items.get(at)));
                    }
                }
                PathStep::All => match value.kind() {
                    JsonKind::Array(items) => next.extend(items.iter()),
                    JsonKind::Object(fields) => next.extend(fields.values()),
                    _ => {}
                },
                PathStep::Filter { path, equals } => {
                    if let Some(items) = value.as_array() {
                        next.extend(items.iter().filter(|item| {
                            path.iter()
                                .try_fold(*item, |v, key| v.get(key.as_str()))
                                .and_then(scalar_text)
                                .is_some_and(|text| text == *equals)
                        }));
                    }
                }
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Vec<u8> {
        serde_json::to_vec(&json!({
            "spec": {"versions": [
                {"name": "v1alpha1", "additionalPrinterColumns": [
                    {"name": "Old", "type": "string", "jsonPath": ".spec.old"}]},
                {"name": "v1", "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "priority": 1, "jsonPath": ".spec.color"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Bad", "type": "string", "jsonPath": ".spec.items[1:3]"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]}
            ]}
        }))
        .expect("json")
    }

    #[test]
    fn priority_zero_columns_of_the_served_version() {
        let (columns, warnings) = default_columns(&crd(), "v1").expect("columns");
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Size", "Ready", "Age"]);
        assert_eq!(warnings.len(), 1, "the slice path is named, not fatal");
        assert!(warnings[0].to_string().contains("Bad"));
        assert!(columns[2].is_creation_time());
        assert!(!columns[0].is_creation_time());
        assert_eq!(
            default_columns(&crd(), "v2"),
            Err(PrinterColumnError::NoSuchVersion("v2".into()))
        );
        assert!(matches!(
            default_columns(b"{", "v1"),
            Err(PrinterColumnError::NotJson(_))
        ));
    }

    #[test]
    fn a_crd_without_printer_columns_shows_age() {
        let crd = serde_json::to_vec(&json!({"spec": {"versions": [{"name": "v1"}]}})).unwrap();
        let (columns, _) = default_columns(&crd, "v1").expect("columns");
        assert_eq!(columns.len(), 1);
        assert!(columns[0].is_creation_time());
    }

    #[test]
    fn cells_print_like_kubectl() {
        let object = JsonValue::from(json!({
            "metadata": {"creationTimestamp": "1970-01-01T00:00:00Z",
                         "labels": {"app.kubernetes.io/name": "shop"}},
            "spec": {"size": 7, "ports": [{"port": 80}, {"port": 443}], "on": true},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}
        }));
        let cell = |type_: &str, path: &str| {
            PrinterColumn::new("x", type_, 0, path)
                .expect("path")
                .cell(&object, 3_600)
        };
        assert_eq!(cell("integer", ".spec.size"), "7");
        assert_eq!(cell("boolean", ".spec.on"), "true");
        assert_eq!(cell("string", ".spec.missing"), "");
        assert_eq!(cell("date", ".metadata.creationTimestamp"), "60m");
        assert_eq!(cell("integer", ".spec.ports[*].port"), "80,443");
        assert_eq!(cell("integer", ".spec.ports[-1].port"), "443");
        assert_eq!(cell("integer", "{.spec.ports[0].port}"), "80");
        assert_eq!(
            cell("string", ".status.conditions[?(@.type==\"Ready\")].status"),
            "True"
        );
        assert_eq!(
            cell("string", ".metadata.labels.app\\.kubernetes\\.io/name"),
            "shop"
        );
        assert_eq!(
            cell("string", ".metadata.labels['app.kubernetes.io/name']"),
            "shop"
        );
    }

    #[test]
    fn bad_paths_are_errors() {
        for path in ["", "spec", ".spec[", ".a..b", ".a[1:2]", ".a[?(@.x>1)]"] {
            assert!(parse_path(path).is_err(), "{path:?}");
        }
    }
}
