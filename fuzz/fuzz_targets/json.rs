//! Fuzz target: the informer's compact JSON reader (`JsonValue`), through
//! serde and through its own `JsonValue::parse` (the same tape, or both
//! refuse). Whatever bytes arrive, it parses exactly when `serde_json` parses them, and then
//! holds the same value: equal as a whole, written as serde_json writes it, and every JSON pointer `serde_json` can follow reads
//! the same value through `JsonRef::pointer`. It never panics.
#![no_main]

use deltascope_informer::{JsonRef, JsonValue};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Every pointer into `theirs` (at most `budget` of them) reads the same in `ours`.
fn same_at_every_pointer(
    theirs: &Value,
    pointer: &mut String,
    ours: JsonRef<'_>,
    budget: &mut u32,
) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    assert_eq!(ours.to_json(), *theirs, "different values at {pointer:?}");
    let mut visit = |segment: &str, child: &Value, ours: Option<JsonRef<'_>>| {
        let ours = ours.unwrap_or_else(|| panic!("{pointer}/{segment} is missing"));
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        same_at_every_pointer(child, pointer, ours, budget);
        pointer.truncate(len);
    };
    match theirs {
        Value::Object(members) => {
            for (key, child) in members {
                visit(key, child, ours.get(key));
            }
        }
        Value::Array(elements) => {
            for (index, child) in elements.iter().enumerate() {
                visit(&index.to_string(), child, ours.get_index(index));
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // The hot path's own reader (`JsonValue::parse`) writes exactly the tape
    // that serde_json's does, and refuses exactly what it refuses.
    let fast = JsonValue::parse(data).map(|v| v.compact_bytes().to_vec());
    let through_serde =
        serde_json::from_slice::<JsonValue>(data).map(|v| v.compact_bytes().to_vec());
    assert_eq!(
        fast.ok(),
        through_serde.ok(),
        "JsonValue::parse and serde_json disagree"
    );
    let theirs = serde_json::from_slice::<Value>(data);
    let ours = serde_json::from_slice::<JsonValue>(data);
    match (theirs, ours) {
        (Ok(theirs), Ok(ours)) => {
            assert!(ours == theirs, "JsonValue differs from serde_json's Value");
            // Written as serde_json writes the same value, up to member order
            // (JsonValue keeps the server's; serde_json's map sorts). Both
            // texts are read back by the same parser, because serde_json's
            // default float parsing is not round-trip exact on its own.
            let text = serde_json::to_string(&ours).expect("a JsonValue always serializes");
            let want = serde_json::to_string(&theirs).expect("a Value always serializes");
            let read =
                |text: &str| serde_json::from_str::<Value>(text).expect("written JSON parses");
            assert_eq!(
                read(&text),
                read(&want),
                "JsonValue writes the value differently"
            );
            let mut pointer = String::new();
            same_at_every_pointer(&theirs, &mut pointer, ours.root(), &mut 10_000);
            for (pointer, _) in [("", ()), ("/metadata/name", ())] {
                assert_eq!(
                    ours.pointer(pointer).map(|v| v.to_json()),
                    theirs.pointer(pointer).cloned(),
                    "pointer {pointer:?}"
                );
            }
        }
        (Err(_), Err(_)) => {}
        (theirs, ours) => panic!(
            "serde_json says {:?}, JsonValue says {:?}",
            theirs.map(|_| "ok"),
            ours.map(|_| "ok")
        ),
    }
});
