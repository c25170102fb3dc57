//! A chain's patch against its full, kept up to date as versions come:
//! the patch from the full to the version before, followed by the patch
//! from that version to the next, with every operation a later one makes
//! pointless left out ([`compose`]).
//!
//! Why: a version stored as a patch against its chain's full (not against
//! the version before) is read back from two rows — the full and its own
//! patch — however long the chain; a past state of 100,000 pods read 5.5
//! rows an object before. The recorder holds the versions as they come, not
//! the full (holding it had doubled its memory), so the patch against the
//! full is built from the patches between versions.
//!
//! The operations are those `JsonValue::patch_to` writes: `add` and
//! `remove` of an object's member, `replace` of any value (an array whose
//! length changes is replaced whole, so no operation moves an array's
//! elements and a path always names the same place). An operation is left
//! out when a later one at its path or above it sets or removes that whole
//! part and nothing between them works inside it: the result applied to
//! the full is the next version, exactly (the property test holds it to
//! that). Anything else — an operation of another kind, more than
//! [`MAX_OPS`] — is kept as it is: the result is then longer, never wrong.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Operations compared with each other at most (the comparison is
/// quadratic); past this the patches are joined as they are.
pub const MAX_OPS: usize = 256;

/// Why two patches do not compose.
#[derive(Debug, thiserror::Error)]
#[error("a stored patch is not a JSON Patch: {0}")]
pub struct ComposeError(#[from] serde_json::Error);

/// One operation of a JSON Patch as read from its text: its value kept as
/// the patch's own bytes (an operation's other members are not read: one
/// with any is of a kind left as it is).
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct Operation<'a> {
    pub op: String,
    pub path: String,
    #[serde(
        borrow,
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<&'a RawValue>,
}

/// The operations of the JSON Patch `text`.
pub(crate) fn operations(text: &[u8]) -> Result<Vec<Operation<'_>>, ComposeError> {
    Ok(serde_json::from_slice(text)?)
}

/// A member that is there, `null` too (an `Option` alone reads a `null`
/// value as no value, and a `replace` with `null` would lose it).
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// The patch that does what `first` then `then` do (both JSON Patch text),
/// without the operations `then` makes pointless.
pub fn compose(first: &[u8], then: &[u8]) -> Result<Vec<u8>, ComposeError> {
    let mut joined = operations(first)?;
    joined.extend(operations(then)?);
    let known = joined
        .iter()
        .all(|o| matches!(o.op.as_str(), "add" | "remove" | "replace"));
    if !known || joined.len() > MAX_OPS {
        return Ok(concatenated(first, then));
    }
    let kept = simplify(&mut joined);
    let joined: Vec<Operation<'_>> = joined
        .into_iter()
        .zip(kept)
        .filter_map(|(operation, kept)| kept.then_some(operation))
        .collect();
    Ok(serde_json::to_vec(&joined)?)
}

/// The two patches (JSON arrays, read as such already) as one: the
/// operations of the first, then those of the second, as written.
fn concatenated(first: &[u8], then: &[u8]) -> Vec<u8> {
    let inner = |patch: &'_ [u8]| -> Vec<u8> {
        let text = patch.trim_ascii();
        let inside = text
            .get(1..text.len().saturating_sub(1))
            .unwrap_or_default();
        inside.trim_ascii().to_vec()
    };
    let parts: Vec<Vec<u8>> = [inner(first), inner(then)]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    let mut out = b"[".to_vec();
    out.extend(parts.join(&b","[..]));
    out.push(b']');
    out
}

/// Marks the operations a later one makes pointless (`false`), turning a
/// `replace` into an `add` where the member it replaced is no longer added
/// before it. Nothing here assumes what the full holds: an `add` may set a
/// member the full has (its removal before it was left out).
fn simplify(operations: &mut [Operation<'_>]) -> Vec<bool> {
    let count = operations.len();
    let mut kept = vec![true; count];
    for i in 0..count {
        if !kept[i] {
            continue;
        }
        let path = operations[i].path.as_str();
        // The nearest later operation over the whole of this one's part.
        let Some(j) = (i + 1..count).find(|&j| kept[j] && covers(&operations[j].path, path)) else {
            continue;
        };
        // One between them inside that part may need it.
        if (i + 1..j).any(|k| kept[k] && inside(&operations[k].path, path)) {
            continue;
        }
        let same = operations[j].path == path;
        let added = operations[i].op == "add";
        match operations[j].op.as_str() {
            // A member added, then removed: both stay. Whether it was
            // there before the add is not known here (an earlier removal
            // may have been left out), so the removal may be what takes it
            // away from the full.
            "remove" if same && added => {}
            // A member added, then replaced: the replacing adds it now.
            "replace" if same && added => {
                kept[i] = false;
                operations[j].op = "add".into();
            }
            _ => kept[i] = false,
        }
    }
    kept
}

/// Whether the operation at `outer` sets or removes all of `path`: the
/// same path or one above it.
fn covers(outer: &str, path: &str) -> bool {
    path == outer || inside(path, outer)
}

/// Whether `path` lies strictly inside `outer` (segment by segment; a
/// segment's own `/` is escaped as `~1`).
fn inside(path: &str, outer: &str) -> bool {
    path.len() > outer.len() && path.starts_with(outer) && path.as_bytes()[outer.len()] == b'/'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json::{json_value, patch_between};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn applied(base: &Value, patch: &[u8]) -> Value {
        let mut doc = base.clone();
        let patch: json_patch::Patch = serde_json::from_slice(patch).expect("a patch");
        json_patch::patch(&mut doc, &patch).expect("it applies");
        doc
    }

    fn ops(patch: &[u8]) -> Vec<(String, String)> {
        let list: Vec<Value> = serde_json::from_slice(patch).expect("a patch");
        list.iter()
            .map(|o| {
                let text = |key: &str| o[key].as_str().unwrap_or_default().to_string();
                (text("op"), text("path"))
            })
            .collect()
    }

    #[test]
    fn the_same_fields_changing_again_keep_one_operation_each() {
        let versions = [
            json!({"metadata": {"resourceVersion": "1"}, "status": {"restarts": 0, "phase": "Pending"}}),
            json!({"metadata": {"resourceVersion": "2"}, "status": {"restarts": 1, "phase": "Pending"}}),
            json!({"metadata": {"resourceVersion": "3"}, "status": {"restarts": 2, "phase": "Running"}}),
            json!({"metadata": {"resourceVersion": "4"}, "status": {"restarts": 3, "phase": "Running"}}),
        ];
        let mut cumulative = b"[]".to_vec();
        for pair in versions.windows(2) {
            cumulative =
                compose(&cumulative, &patch_between(&pair[0], &pair[1])).expect("composes");
            assert_eq!(applied(&versions[0], &cumulative), pair[1]);
        }
        let mut kept = ops(&cumulative);
        kept.sort();
        let replace = |path: &str| ("replace".to_string(), path.to_string());
        assert_eq!(
            kept,
            [
                replace("/metadata/resourceVersion"),
                replace("/status/phase"),
                replace("/status/restarts"),
            ]
        );
    }

    #[test]
    fn a_member_added_then_replaced_is_added_and_added_then_removed_stays() {
        let full = json!({"a": 1});
        let one = json!({"a": 1, "b": {"x": 1}});
        let two = json!({"a": 1, "b": 7});
        let three = json!({"a": 1});
        let mut cumulative = compose(b"[]", &patch_between(&full, &one)).expect("composes");
        cumulative = compose(&cumulative, &patch_between(&one, &two)).expect("composes");
        assert_eq!(ops(&cumulative), [("add".to_string(), "/b".to_string())]);
        assert_eq!(applied(&full, &cumulative), two);
        cumulative = compose(&cumulative, &patch_between(&two, &three)).expect("composes");
        assert_eq!(applied(&full, &cumulative), three);
    }

    #[test]
    fn an_operation_something_later_works_inside_is_kept() {
        // add /b, then replace /b/x, then replace /b: the add is needed by
        // the replace inside it, so only the inner replace goes.
        let full = json!({});
        let one = json!({"b": {"x": 1}});
        let two = json!({"b": {"x": 2}});
        let three = json!({"b": [1]});
        let mut cumulative = b"[]".to_vec();
        for (a, b) in [(&full, &one), (&one, &two), (&two, &three)] {
            cumulative = compose(&cumulative, &patch_between(a, b)).expect("composes");
            assert_eq!(applied(&full, &cumulative), *b);
        }
    }

    #[test]
    fn paths_are_compared_segment_by_segment() {
        assert!(covers("/a", "/a/b"));
        assert!(covers("/a", "/a"));
        assert!(covers("", "/a"));
        assert!(!covers("/a", "/ab"));
        assert!(!covers("/a/b", "/a"));
        assert!(inside("/a/b", "/a"));
        assert!(!inside("/a", "/a"));
    }

    #[test]
    fn what_is_not_a_patch_is_an_error() {
        assert!(compose(b"[]", b"{").is_err());
        assert!(compose(b"{}", b"[]").is_err());
    }

    #[test]
    fn operations_of_other_kinds_are_joined_as_they_are() {
        let first = br#"[{"op":"copy","from":"/a","path":"/b"}]"#;
        let then = br#"[{"op":"replace","path":"/b","value":2}]"#;
        let joined = compose(first, then).expect("composes");
        assert_eq!(ops(&joined).len(), 2);
        let from: Vec<Value> = serde_json::from_slice(&joined).expect("a patch");
        assert_eq!(from[0]["from"], "/a");
        assert_eq!(compose(b" [ ] ", first).expect("composes"), first.to_vec());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn the_composed_patch_turns_the_full_into_each_version(
            versions in prop::collection::vec(json_value(), 2..7)
        ) {
            let full = &versions[0];
            let mut cumulative = b"[]".to_vec();
            for pair in versions.windows(2) {
                cumulative = compose(&cumulative, &patch_between(&pair[0], &pair[1])).expect("composes");
                prop_assert_eq!(&applied(full, &cumulative), &pair[1]);
            }
        }
    }
}
