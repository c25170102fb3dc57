//! Fuzz target: a compact JSON tape read back from storage
//! (`JsonValue::from_compact_slice`). Whatever bytes arrive, the check never
//! panics; a tape it accepts is read whole by every reader without a panic,
//! the readers agree with one another (the tree `to_json` builds is what
//! `Serialize` writes, `Display` and `Debug` print the same text), no value
//! but a `null` reads as `null`, every element and member is found by its
//! JSON pointer (a member whose key an earlier one repeats excepted: the
//! check allows repeated keys, and a lookup finds the first), and the tape
//! stays byte for byte what was given.
#![no_main]

use std::collections::HashSet;

use deltascope_informer::{JsonKind, JsonRef, JsonValue};
use libfuzzer_sys::fuzz_target;

/// Reads `value` and everything in it (at most `budget` values), checking
/// that `pointer` leads to it from the root when it is `reachable` (no
/// repeated key on the way).
fn read_all(
    doc: &JsonValue,
    value: JsonRef<'_>,
    pointer: &mut String,
    reachable: bool,
    budget: &mut u32,
) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    if reachable {
        assert!(
            doc.pointer(pointer) == Some(value),
            "{pointer:?} leads elsewhere"
        );
    }
    let _ = (
        value.as_str(),
        value.as_bool(),
        value.as_u64(),
        value.as_i64(),
    );
    let _ = (
        value.as_f64(),
        value.is_string(),
        value.is_array(),
        value.is_object(),
    );
    let _ = format!("{value:?} {value}");
    assert_eq!(
        matches!(value.kind(), JsonKind::Null),
        value.is_null(),
        "a value read as null at {pointer:?}"
    );
    let mut visit = |segment: &str, child: JsonRef<'_>, pointer: &mut String, first: bool| {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        read_all(doc, child, pointer, reachable && first, budget);
        pointer.truncate(len);
    };
    match value.kind() {
        JsonKind::Null | JsonKind::Bool(_) => {}
        JsonKind::Number(n) => {
            let _ = (n.to_number(), n.as_u64(), n.as_i64(), n.as_f64());
        }
        JsonKind::String(s) => assert_eq!(value.as_str(), Some(s)),
        JsonKind::Array(elements) => {
            let _ = format!("{elements:?}");
            let mut count = 0;
            for (index, element) in elements.iter().enumerate() {
                assert!(elements.get(index).is_some());
                visit(&index.to_string(), element, pointer, true);
                count += 1;
            }
            assert_eq!(elements.len(), count);
            assert_eq!(elements.is_empty(), count == 0);
        }
        JsonKind::Object(members) => {
            let _ = format!("{members:?}");
            let mut count = 0;
            let mut seen = HashSet::new();
            for (key, member) in members.iter() {
                assert!(members.contains_key(key));
                let first = seen.insert(key);
                visit(key, member, pointer, first);
                count += 1;
            }
            assert_eq!(members.len(), count);
            assert_eq!(members.keys().count(), count);
            assert_eq!(members.values().count(), count);
            assert_eq!(members.is_empty(), count == 0);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = JsonValue::from_compact_slice(data) else {
        return;
    };
    assert_eq!(doc.compact_bytes(), data, "the tape is held as given");
    let boxed = JsonValue::from_compact(data.into()).expect("the same tape again");
    assert!(boxed == doc);
    let tree = doc.to_json();
    let text = serde_json::to_string(&doc).expect("an accepted tape serializes");
    assert_eq!(doc.to_string(), text);
    assert_eq!(format!("{doc:?}"), text);
    assert_eq!(
        serde_json::to_value(&doc).expect("an accepted tape serializes"),
        tree,
        "Serialize and to_json disagree"
    );
    let _ = doc == tree;
    assert!(doc.held_bytes() > doc.compact_len());
    let _ = (
        doc.get("metadata"),
        doc.pointer("/metadata/name"),
        doc.is_null(),
    );
    read_all(&doc, doc.root(), &mut String::new(), true, &mut 10_000);
});
