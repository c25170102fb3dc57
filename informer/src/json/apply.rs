//! A JSON Patch (RFC 6902) applied to a compact document on its tape: how
//! the history store rebuilds a recorded version from the one before it.
//!
//! Rebuilding through `serde_json` trees cost a parse of the whole object
//! into a tree of allocations for every chain, and a serialization of it for
//! every version read back — most of what reading a window of history cost.
//! On the tape, an operation copies the document once: the containers on
//! its path are rewritten (their lengths change), every other value is
//! copied as the bytes it is encoded in, and the operation's value is the
//! patch's own encoding of it (the patch is parsed into a tape too).
//!
//! `add`, `remove` and `replace` are applied as RFC 6902 says, including
//! `-` and insertion by index in arrays and `add` over an existing member;
//! `move`, `copy` and `test` — which no patch the recorder writes holds —
//! are refused as [`PatchApplyError::Unsupported`], so a reader can fall
//! back to a general implementation. An `add` of a new member puts it last.
//!
//! `rewrite` follows the path one container at a time: `rewrite_object` and
//! `rewrite_array` copy the container, with the one member or element on the
//! path rewritten below it (or the operation applied, at the path's end);
//! `array_position` says which element an array's token names.

use super::read::Members;
use super::tape::{tag, JsonArray, JsonKind, JsonObject, JsonRef, JsonValue};
use super::write::{close_container, open_container, write_str};

/// Why a patch does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchApplyError {
    #[error("the patch is not an array of operations")]
    NotAPatch,
    #[error("operation {index} has no {field}")]
    Missing { index: usize, field: &'static str },
    #[error("operation {index} is a {op:?}, which is not applied on the tape")]
    Unsupported { index: usize, op: String },
    #[error("operation {index}: {path:?} is not a JSON Pointer")]
    BadPointer { index: usize, path: String },
    #[error("operation {index}: nothing at {path:?} to {op}")]
    NoTarget {
        index: usize,
        op: &'static str,
        path: String,
    },
}

/// One operation, as the tape reads it.
#[derive(Clone, Copy)]
enum Op<'p> {
    Add(JsonRef<'p>),
    Remove,
    Replace(JsonRef<'p>),
}

impl Op<'_> {
    fn name(self) -> &'static str {
        match self {
            Op::Add(_) => "add",
            Op::Remove => "remove",
            Op::Replace(_) => "replace",
        }
    }
}

impl JsonValue {
    /// This document with `patch` (a JSON Patch parsed into a tape) applied,
    /// operation after operation; the document is unchanged on an error.
    pub fn apply_patch(&self, patch: &JsonValue) -> Result<JsonValue, PatchApplyError> {
        let JsonKind::Array(operations) = patch.root().kind() else {
            return Err(PatchApplyError::NotAPatch);
        };
        let mut document: Vec<u8> = self.tape.to_vec();
        for (index, operation) in operations.iter().enumerate() {
            let field = |field: &'static str| {
                operation
                    .get(field)
                    .ok_or(PatchApplyError::Missing { index, field })
            };
            let op_name = field("op")?
                .as_str()
                .ok_or(PatchApplyError::Missing { index, field: "op" })?;
            let path = field("path")?.as_str().ok_or(PatchApplyError::Missing {
                index,
                field: "path",
            })?;
            let op = match op_name {
                "add" => Op::Add(field("value")?),
                "remove" => Op::Remove,
                "replace" => Op::Replace(field("value")?),
                other => {
                    return Err(PatchApplyError::Unsupported {
                        index,
                        op: other.to_string(),
                    })
                }
            };
            let segments = pointer_segments(path).ok_or_else(|| PatchApplyError::BadPointer {
                index,
                path: path.to_string(),
            })?;
            let mut out = Vec::with_capacity(document.len() + 64);
            let applied = if segments.is_empty() {
                match op {
                    Op::Add(value) | Op::Replace(value) => {
                        out.extend_from_slice(value.bytes);
                        true
                    }
                    Op::Remove => false,
                }
            } else {
                rewrite(JsonRef { bytes: &document }, &segments, op, &mut out)
            };
            if !applied {
                return Err(PatchApplyError::NoTarget {
                    index,
                    op: op.name(),
                    path: path.to_string(),
                });
            }
            document = out;
        }
        // the parts copied from this document may name its shared subtrees
        Ok(JsonValue::plain(document.into_boxed_slice()).holding(self.shared.to_vec()))
    }
}

/// A JSON Pointer's reference tokens, unescaped (`~1` → `/`, `~0` → `~`);
/// `None` when it is not a pointer.
fn pointer_segments(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/')
        .map(|token| {
            if !token.contains('~') {
                return Some(token.to_string());
            }
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next()? {
                        '0' => out.push('~'),
                        '1' => out.push('/'),
                        _ => return None,
                    },
                    c => out.push(c),
                }
            }
            Some(out)
        })
        .collect()
}

/// An array index token: digits without a leading zero (RFC 6901).
fn array_index(token: &str) -> Option<usize> {
    let digits = token.bytes().all(|b| b.is_ascii_digit());
    if token.is_empty() || !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// Writes `node` with `op` applied at `path` (not empty) below it into
/// `out`; false when the path leads nowhere the operation can act.
fn rewrite(node: JsonRef<'_>, path: &[String], op: Op<'_>, out: &mut Vec<u8>) -> bool {
    let (token, below) = (&path[0], &path[1..]);
    match node.kind() {
        JsonKind::Object(object) => rewrite_object(object, token, below, op, out),
        JsonKind::Array(array) => rewrite_array(array, token, below, op, out),
        _ => false,
    }
}

/// [`rewrite`] of an object: the member `token` rewritten along `below`
/// (or, where `below` is empty, `op` applied to it), every other member
/// copied; an `add` of a member it lacks puts it last.
fn rewrite_object(
    object: JsonObject<'_>,
    token: &str,
    below: &[String],
    op: Op<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let len_at = open_container(out, tag::OBJECT);
    let mut found = false;
    for (key, value) in (Members { rest: object.body }) {
        if found || key.as_str() != Some(token) {
            out.extend_from_slice(key.bytes);
            out.extend_from_slice(value.bytes);
            continue;
        }
        found = true;
        if below.is_empty() {
            match op {
                Op::Remove => {}
                Op::Add(new) | Op::Replace(new) => {
                    out.extend_from_slice(key.bytes);
                    out.extend_from_slice(new.bytes);
                }
            }
        } else {
            out.extend_from_slice(key.bytes);
            if !rewrite(value, below, op, out) {
                return false;
            }
        }
    }
    if !found {
        match op {
            Op::Add(new) if below.is_empty() => {
                write_str(out, token);
                out.extend_from_slice(new.bytes);
            }
            _ => return false,
        }
    }
    close_container(out, len_at);
    true
}

/// [`rewrite`] of an array: the element `token` names rewritten along
/// `below` (or, where `below` is empty, `op` applied to it: an `add`
/// inserts before it, or at the end for `-` or the length), every other
/// element copied.
fn rewrite_array(
    array: JsonArray<'_>,
    token: &str,
    below: &[String],
    op: Op<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let len = array.len();
    let inserting = below.is_empty() && matches!(op, Op::Add(_));
    let Some(index) = array_position(token, len, inserting) else {
        return false;
    };
    let len_at = open_container(out, tag::ARRAY);
    for (at, element) in array.iter().enumerate() {
        if at != index {
            out.extend_from_slice(element.bytes);
            continue;
        }
        if !below.is_empty() {
            if !rewrite(element, below, op, out) {
                return false;
            }
            continue;
        }
        match op {
            Op::Add(new) => {
                out.extend_from_slice(new.bytes);
                out.extend_from_slice(element.bytes);
            }
            Op::Replace(new) => out.extend_from_slice(new.bytes),
            Op::Remove => {}
        }
    }
    if index == len {
        if let Op::Add(new) = op {
            out.extend_from_slice(new.bytes);
        }
    }
    close_container(out, len_at);
    true
}

/// The position a token names in an array of `len` elements: an index
/// (RFC 6901 digits) or `-`, the end. The end is a position only for an
/// element being inserted (`inserting`: an `add` of the element itself);
/// `None` for a token that names no position.
fn array_position(token: &str, len: usize, inserting: bool) -> Option<usize> {
    let index = if token == "-" {
        len
    } else {
        array_index(token)?
    };
    (index < len || (index == len && inserting)).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::super::patch::tests::json_value;
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn tape(value: &Value) -> JsonValue {
        JsonValue::parse(value.to_string().as_bytes()).unwrap()
    }

    fn apply(document: Value, patch: Value) -> Result<Value, PatchApplyError> {
        tape(&document)
            .apply_patch(&tape(&patch))
            .map(|value| value.to_json())
    }

    #[test]
    fn the_three_operations_on_members_and_elements() {
        let document = json!({"a": {"b": [1, 2, 3]}, "c~/d": "x"});
        let patched = apply(
            document,
            json!([
                {"op": "replace", "path": "/c~0~1d", "value": "y"},
                {"op": "add", "path": "/a/b/1", "value": {"n": 9}},
                {"op": "add", "path": "/a/b/-", "value": 4},
                {"op": "remove", "path": "/a/b/0"},
                {"op": "add", "path": "/a/new", "value": null},
                {"op": "add", "path": "/a/new", "value": "over"},
                {"op": "replace", "path": "/a/b/3", "value": [true]},
            ]),
        );
        assert_eq!(
            patched,
            Ok(json!({"a": {"b": [{"n": 9}, 2, 3, [true]], "new": "over"}, "c~/d": "y"}))
        );
        assert_eq!(
            apply(json!({"a": 1}), json!([{"op": "remove", "path": "/a"}])),
            Ok(json!({}))
        );
        assert_eq!(
            apply(
                json!(1),
                json!([{"op": "replace", "path": "", "value": {"w": 1}}])
            ),
            Ok(json!({"w": 1}))
        );
    }

    #[test]
    fn a_patch_that_does_not_fit_is_an_error_not_a_guess() {
        let doc = json!({"a": [1], "s": "x"});
        let no_target = |op: Value| {
            matches!(
                apply(doc.clone(), json!([op])),
                Err(PatchApplyError::NoTarget { .. })
            )
        };
        assert!(no_target(json!({"op": "remove", "path": "/b"})));
        assert!(no_target(
            json!({"op": "replace", "path": "/b", "value": 1})
        ));
        assert!(no_target(json!({"op": "add", "path": "/b/c", "value": 1})));
        assert!(no_target(
            json!({"op": "replace", "path": "/a/1", "value": 1})
        ));
        assert!(no_target(json!({"op": "add", "path": "/a/2", "value": 1})));
        assert!(no_target(json!({"op": "add", "path": "/a/01", "value": 1})));
        assert!(no_target(json!({"op": "add", "path": "/s/x", "value": 1})));
        assert!(no_target(json!({"op": "remove", "path": ""})));
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "move", "from": "/a", "path": "/b"}])
            ),
            Err(PatchApplyError::Unsupported {
                index: 0,
                op: "move".into()
            })
        );
        assert!(matches!(
            apply(doc.clone(), json!([{"op": "add", "path": "a", "value": 1}])),
            Err(PatchApplyError::BadPointer { .. })
        ));
        assert!(matches!(
            apply(doc.clone(), json!([{"op": "add", "path": "/a~2"}])),
            Err(PatchApplyError::Missing { .. })
        ));
        assert_eq!(
            apply(doc, json!({"op": "add"})),
            Err(PatchApplyError::NotAPatch)
        );
    }

    #[test]
    fn an_array_token_names_the_end_only_for_an_insertion() {
        assert_eq!(array_position("0", 2, false), Some(0));
        assert_eq!(array_position("1", 2, true), Some(1));
        // the end: `-` or the length, for an `add` of the element only
        assert_eq!(array_position("-", 2, true), Some(2));
        assert_eq!(array_position("2", 2, true), Some(2));
        assert_eq!(array_position("-", 0, true), Some(0));
        assert_eq!(array_position("-", 2, false), None);
        assert_eq!(array_position("2", 2, false), None);
        // past the end, or not an index
        assert_eq!(array_position("3", 2, true), None);
        assert_eq!(array_position("01", 2, true), None);
        assert_eq!(array_position("x", 2, true), None);
        assert_eq!(array_position("", 2, true), None);
    }

    proptest! {
        /// The patch written from one document to another, applied on the
        /// tape, gives the other.
        #[test]
        fn the_written_patch_applied_on_the_tape_gives_the_other(before in json_value(), after in json_value()) {
            let (before, after) = (tape(&before), tape(&after));
            let patch = JsonValue::parse(&before.patch_to(&after)).unwrap();
            let rebuilt = before.apply_patch(&patch).unwrap();
            prop_assert_eq!(rebuilt.to_json(), after.to_json());
        }

        /// Any patch the `json-patch` crate applies gives the same value on
        /// the tape, and one it refuses is refused here too.
        #[test]
        fn agrees_with_the_json_patch_crate(before in json_value(), after in json_value(), other in json_value()) {
            let written: Value = serde_json::from_slice(&tape(&before).patch_to(&tape(&after))).unwrap();
            // The written patch, then the same patch again onto the result
            // of a different document: often a patch that does not fit.
            for start in [before.clone(), other] {
                let patch: json_patch::Patch = serde_json::from_value(written.clone()).unwrap();
                let mut expected = start.clone();
                let theirs = json_patch::patch(&mut expected, &patch).map(|()| expected);
                let ours = apply(start, written.clone());
                prop_assert_eq!(ours.ok(), theirs.ok());
            }
        }
    }
}
