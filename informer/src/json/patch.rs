//! The JSON Patch (RFC 6902) from one compact document to another, written
//! as JSON text straight from their tapes: what the recorder stores between
//! two full versions of an object.
//!
//! Parsing both versions into `serde_json` trees to diff them cost more than
//! everything else the recorder does per change; here equal parts are
//! passed over by comparing their bytes (a document's encoding is the same
//! for the same value, keys in the order the server sent them), and only
//! the values that changed are written out. The patch is plain RFC 6902 —
//! `remove`, `add` and `replace` with JSON Pointer paths — so any reader
//! applies it (the history store reads it back with the `json-patch`
//! crate); arrays of the same length are diffed element by element, others
//! replaced whole.

use super::tape::{JsonKind, JsonObject, JsonRef, JsonValue};

impl JsonValue {
    /// The JSON Patch turning this document into `next`, as JSON text
    /// (`[]` when they are equal).
    pub fn patch_to(&self, next: &JsonValue) -> Vec<u8> {
        patch_between(self.root(), next.root())
    }
}

/// The JSON Patch turning `before` into `after`, as JSON text.
pub fn patch_between(before: JsonRef<'_>, after: JsonRef<'_>) -> Vec<u8> {
    let mut patch = PatchWriter {
        out: Vec::with_capacity(256),
        path: String::new(),
        ops: 0,
    };
    patch.out.push(b'[');
    patch.diff(before, after);
    patch.out.push(b']');
    patch.out
}

/// The text written so far and the path of the value being compared.
struct PatchWriter {
    out: Vec<u8>,
    /// A JSON Pointer, each segment escaped (`~0`, `~1`).
    path: String,
    ops: usize,
}

impl PatchWriter {
    fn diff(&mut self, before: JsonRef<'_>, after: JsonRef<'_>) {
        if before.bytes == after.bytes {
            return;
        }
        match (before.kind(), after.kind()) {
            (JsonKind::Object(a), JsonKind::Object(b)) => self.diff_objects(a, b),
            (JsonKind::Array(a), JsonKind::Array(b)) if a.len() == b.len() => {
                for (index, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                    if x.bytes != y.bytes {
                        let at = self.enter(&index.to_string());
                        self.diff(x, y);
                        self.path.truncate(at);
                    }
                }
            }
            _ => self.op("replace", Some(after)),
        }
    }

    fn diff_objects(&mut self, before: JsonObject<'_>, after: JsonObject<'_>) {
        // The usual change: the same keys in the same places, some values
        // different. The pairs that differ are found by comparing bytes in
        // long runs; anything else (a key added, removed or moved) is
        // compared key by key.
        let pairs: Option<Vec<_>> = before
            .differing_members(after)
            .map(|pair| match pair {
                (Some(m), Some(n)) if m.key.bytes == n.key.bytes => Some((m, n)),
                _ => None,
            })
            .collect();
        if let Some(pairs) = pairs {
            for (m, n) in pairs {
                let at = self.enter(m.key.as_str().unwrap_or_default());
                self.diff(m.value, n.value);
                self.path.truncate(at);
            }
            return;
        }
        for (key, value) in before.iter() {
            let at = self.enter(key);
            match after.get(key) {
                None => self.op("remove", None),
                Some(next) => self.diff(value, next),
            }
            self.path.truncate(at);
        }
        for (key, value) in after.iter() {
            if !before.contains_key(key) {
                let at = self.enter(key);
                self.op("add", Some(value));
                self.path.truncate(at);
            }
        }
    }

    /// Appends one escaped segment to the path; returns the length to
    /// truncate back to.
    fn enter(&mut self, segment: &str) -> usize {
        let at = self.path.len();
        self.path.push('/');
        for c in segment.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        at
    }

    fn op(&mut self, op: &str, value: Option<JsonRef<'_>>) {
        if self.ops > 0 {
            self.out.push(b',');
        }
        self.ops += 1;
        self.out.extend_from_slice(b"{\"op\":\"");
        self.out.extend_from_slice(op.as_bytes());
        self.out.extend_from_slice(b"\",\"path\":");
        // Writing into a Vec fails only for a value JSON cannot hold, which
        // a document parsed from JSON never has.
        let _ = serde_json::to_writer(&mut self.out, &self.path);
        if let Some(value) = value {
            self.out.extend_from_slice(b",\"value\":");
            let _ = serde_json::to_writer(&mut self.out, &value);
        }
        self.out.push(b'}');
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn compact(value: &Value) -> JsonValue {
        JsonValue::parse(value.to_string().as_bytes()).unwrap()
    }

    fn applied(before: &Value, after: &Value) -> (Value, Value) {
        let patch_text = compact(before).patch_to(&compact(after));
        let patch: json_patch::Patch = serde_json::from_slice(&patch_text).unwrap();
        let mut value = before.clone();
        json_patch::patch(&mut value, &patch).unwrap();
        (value, serde_json::from_slice(&patch_text).unwrap())
    }

    #[test]
    fn a_status_change_is_the_changed_fields_alone() {
        let before = json!({"metadata": {"name": "a", "resourceVersion": "1",
            "annotations": {"example.com/a~b": "x"}},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}});
        let after = json!({"metadata": {"name": "a", "resourceVersion": "2",
            "annotations": {"example.com/a~b": "y"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let (value, patch) = applied(&before, &after);
        assert_eq!(value, after);
        assert_eq!(
            patch,
            json!([
                // in the documents' member order (`json!` sorts keys)
                {"op": "replace", "path": "/metadata/annotations/example.com~1a~0b", "value": "y"},
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "2"},
                {"op": "replace", "path": "/status/conditions/0/status", "value": "True"},
                {"op": "replace", "path": "/status/phase", "value": "Running"},
            ])
        );
    }

    #[test]
    fn added_removed_and_regrown_members_and_arrays() {
        let before = json!({"a": 1, "b": [1, 2], "c": {"x": null}});
        let after = json!({"b": [1, 2, 3], "c": {"y": true}, "d": "new"});
        assert_eq!(applied(&before, &after).0, after);
        assert_eq!(applied(&json!(1), &json!({"a": 1})).0, json!({"a": 1}));
        let same = json!({"a": [1, {"b": 2}]});
        assert_eq!(applied(&same, &same).1, json!([]));
    }

    /// Small documents whose keys and strings need escaping in a pointer
    /// (`/`, `~`); shared with the tests of `apply`.
    pub(crate) fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            "[a-c/~]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-d/~]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The patch applied to the first document gives the second.
        #[test]
        fn the_patch_turns_one_document_into_the_other(before in json_value(), after in json_value()) {
            prop_assert_eq!(applied(&before, &after).0, after);
        }
    }
}
