//! How an object reads in the object view: YAML (kubectl's layout, with
//! `managedFields` folded away) and pretty JSON, and which fields of a diff are
//! noise (resourceVersion, managedFields, timestamps) that the view can fold.

use serde_json::{Map, Value};

/// The object without `metadata.managedFields`, and how many entries were folded.
pub fn fold_managed_fields(value: &Value) -> (Value, usize) {
    let mut copy = value.clone();
    let folded = copy
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("managedFields"))
        .and_then(|fields| fields.as_array().map(Vec::len))
        .unwrap_or(0);
    (copy, folded)
}

/// YAML for display (block style, 2-space indent, strings quoted when YAML would misread them).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(map, 0, &mut out),
        Value::Array(items) if !items.is_empty() => write_seq(items, 0, &mut out),
        scalar => {
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
    out
}

fn indent(level: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', level * 2));
}

fn write_map(map: &Map<String, Value>, level: usize, out: &mut String) {
    for (key, value) in map {
        indent(level, out);
        out.push_str(&quote_if_needed(key));
        out.push(':');
        write_value_after_key(value, level, out);
    }
}

fn write_value_after_key(value: &Value, level: usize, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map(map, level + 1, out);
        }
        // kubectl puts sequence items at the key's own indentation.
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(items, level, out);
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
}

fn write_seq(items: &[Value], level: usize, out: &mut String) {
    for item in items {
        indent(level, out);
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => {
                // First entry on the dash line, the rest aligned under it.
                let mut first = true;
                for (key, value) in map {
                    if !first {
                        indent(level + 1, out);
                    }
                    first = false;
                    out.push_str(&quote_if_needed(key));
                    out.push(':');
                    write_value_after_key(value, level + 1, out);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq(inner, level + 1, out);
            }
            scalar => {
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote_if_needed(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Plain when unambiguous, otherwise a JSON-style double-quoted string (valid YAML).
fn quote_if_needed(text: &str) -> String {
    let reserved = matches!(
        text.to_ascii_lowercase().as_str(),
        "" | "~" | "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    );
    let numeric = text.parse::<f64>().is_ok() || text.starts_with("0x") || text.starts_with("0o");
    let special_start = text.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c));
    let special_inside = text.contains(": ")
        || text.contains(" #")
        || text.ends_with(':')
        || text.ends_with(' ')
        || text.chars().any(|c| c.is_control());
    if reserved || numeric || special_start || special_inside {
        serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
    } else {
        text.to_string()
    }
}

/// Fields whose changes are bookkeeping rather than meaning; the diff view folds them.
pub fn is_noisy_path(path: &str) -> bool {
    path == "/metadata/resourceVersion"
        || path == "/metadata/generation"
        || path.starts_with("/metadata/managedFields")
        || path.ends_with("Timestamp")
        || path.ends_with("/lastTransitionTime")
        || path.ends_with("/lastProbeTime")
        || path.ends_with("/lastHeartbeatTime")
        || path.ends_with("/lastUpdateTime")
        || path.ends_with("/startedAt")
        || path.ends_with("/finishedAt")
        || path == "/status/observedGeneration"
}

/// One changed field between two versions, for the diff view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    /// JSON pointer, e.g. `/metadata/labels/app`.
    pub path: String,
    /// Compact JSON of the old value (`None`: the field was added).
    pub old: Option<String>,
    /// Compact JSON of the new value (`None`: the field was removed).
    pub new: Option<String>,
    pub noisy: bool,
}

/// The changes of a JSON Patch from `old` as readable lines (move/copy/test
/// do not occur in diffs and are shown by path only).
pub fn diff_lines(old: &Value, patch: &json_patch::Patch) -> Vec<DiffLine> {
    use json_patch::PatchOperation;
    patch
        .0
        .iter()
        .map(|operation| {
            let path = operation.path().as_str().to_string();
            let before = || old.pointer(&path).map(Value::to_string);
            let (old_text, new_text) = match operation {
                PatchOperation::Add(add) => (None, Some(add.value.to_string())),
                PatchOperation::Remove(_) => (before(), None),
                PatchOperation::Replace(replace) => (before(), Some(replace.value.to_string())),
                _ => (None, None),
            };
            DiffLine {
                noisy: is_noisy_path(&path),
                path,
                old: old_text,
                new: new_text,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_reads_like_kubectl_and_quotes_ambiguous_strings() {
        let value = json!({
            "apiVersion": "v1",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "true"}},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}], "nodeName": ""},
            "data": {"port": "8080", "note": "a: b"}
        });
        let yaml = to_yaml(&value);
        // Keys sorted, as kubectl prints them (Go maps marshal in key order).
        let expected = "apiVersion: v1\ndata:\n  note: \"a: b\"\n  port: \"8080\"\n\
metadata:\n  labels:\n    app: web\n    tier: \"true\"\n  name: web\n\
spec:\n  containers:\n  - name: c\n    ports:\n    - containerPort: 80\n  nodeName: \"\"\n";
        assert_eq!(yaml, expected);
    }

    #[test]
    fn managed_fields_are_folded_and_counted() {
        let value = json!({"metadata": {"name": "x", "managedFields": [{"manager": "a"}, {"manager": "b"}]}});
        let (folded, count) = fold_managed_fields(&value);
        assert_eq!(count, 2);
        assert!(folded.pointer("/metadata/managedFields").is_none());
        assert_eq!(folded.pointer("/metadata/name"), Some(&json!("x")));
    }

    #[test]
    fn diff_lines_show_old_and_new_values() {
        let old =
            json!({"metadata": {"resourceVersion": "1", "labels": {"app": "web", "gone": "x"}}});
        let new =
            json!({"metadata": {"resourceVersion": "2", "labels": {"app": "api", "added": "y"}}});
        let mut lines = diff_lines(&old, &json_patch::diff(&old, &new));
        lines.sort_by(|a, b| a.path.cmp(&b.path));
        let find = |p: &str| lines.iter().find(|l| l.path == p).cloned().expect(p);
        assert_eq!(find("/metadata/labels/app").old.as_deref(), Some("\"web\""));
        assert_eq!(find("/metadata/labels/app").new.as_deref(), Some("\"api\""));
        assert_eq!(find("/metadata/labels/added").old, None);
        assert_eq!(find("/metadata/labels/gone").new, None);
        assert!(find("/metadata/resourceVersion").noisy);
        assert!(!find("/metadata/labels/app").noisy);
    }

    #[test]
    fn bookkeeping_paths_are_noise_and_meaning_is_not() {
        assert!(is_noisy_path("/metadata/resourceVersion"));
        assert!(is_noisy_path("/status/conditions/0/lastTransitionTime"));
        assert!(is_noisy_path("/metadata/managedFields/0/time"));
        assert!(!is_noisy_path("/metadata/labels/app"));
        assert!(!is_noisy_path("/status/phase"));
    }
}
