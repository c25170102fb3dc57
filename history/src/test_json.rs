//! What the codec's property tests share: JSON documents to patch (keys
//! with the characters a JSON Pointer escapes, strings with the ones JSON
//! escapes, small numbers so versions often agree in places) and the patch
//! the recorder writes between two of them.

use deltascope_informer::JsonValue;
use proptest::prelude::*;
use serde_json::Value;

/// A document of up to three levels.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-2i64..4).prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[ab\"\\\\é /~]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[abc~/\"é]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The patch the store writes from `a` to `b` (diffed on their tapes).
pub fn patch_between(a: &Value, b: &Value) -> Vec<u8> {
    let tape = |v: &Value| JsonValue::parse(v.to_string().as_bytes()).expect("JSON");
    tape(a).patch_to(&tape(b))
}
