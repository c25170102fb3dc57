//! The compact JSON form against `serde_json`: round trips, lookups,
//! numbers, repeated keys, sizes.

use super::*;
use serde_json::json;

#[test]
fn a_document_is_one_allocation_smaller_than_its_text() {
    // the tape and the list of shared subtrees it names (empty: no allocation)
    assert_eq!(
        std::mem::size_of::<JsonValue>(),
        4 * std::mem::size_of::<usize>()
    );
    let text = r#"{"metadata":{"name":"web-1","namespace":"default","labels":{"app":"web"}},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    let v: JsonValue = serde_json::from_str(text).unwrap();
    assert!(
        v.compact_len() * 2 < text.len(),
        "{} of {}",
        v.compact_len(),
        text.len()
    );
    assert_eq!(v.held_bytes(), allocation(v.compact_len()));
}

#[test]
fn strings_of_every_length_read_back_whole() {
    for len in (0..=40).chain([126, 127, 128, 129, 300, 20_000]) {
        for fill in ["a", "é", "\u{1F600}", "\""] {
            let text: String = fill.repeat(len).chars().take(len).collect();
            let json = serde_json::to_string(&text).unwrap();
            let ours: JsonValue = serde_json::from_str(&json).unwrap();
            assert_eq!(
                ours.root().as_str(),
                Some(text.as_str()),
                "{len} × {fill:?}"
            );
            assert_eq!(serde_json::to_string(&ours).unwrap(), json);
            let reference = serde_json::Value::String(text.clone());
            assert_eq!(JsonValue::from(reference.clone()), ours);
            assert!(ours == reference);
            assert_eq!(ours.to_json(), reference);
        }
    }
}

#[test]
fn numbers_read_convert_and_compare_like_serde_json() {
    let texts = [
        "0",
        "7",
        "-0",
        "-1",
        "18446744073709551615",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "1.5",
        "-2.25e-3",
        "1e300",
        "0.1",
        "1.0",
        "12345678901234567890123",
    ];
    for text in texts {
        let ours: JsonValue = serde_json::from_str(text).unwrap();
        let reference: serde_json::Value = serde_json::from_str(text).unwrap();
        let root = ours.root();
        assert_eq!(root.as_u64(), reference.as_u64(), "{text} as_u64");
        assert_eq!(root.as_i64(), reference.as_i64(), "{text} as_i64");
        assert_eq!(root.as_f64(), reference.as_f64(), "{text} as_f64");
        assert_eq!(ours.to_string(), reference.to_string(), "{text} printed");
        assert_eq!(ours.to_json(), reference, "{text} to_json");
        assert_eq!(
            JsonValue::from(reference.clone()),
            ours,
            "{text} from serde_json"
        );
        assert!(ours == reference, "{text} == serde_json");
    }
    let one: JsonValue = serde_json::from_str("1").unwrap();
    let one_float: JsonValue = serde_json::from_str("1.0").unwrap();
    // as in serde_json, an integer and a float are different numbers
    assert_ne!(one, one_float);
    let five: JsonValue = serde_json::from_str("5").unwrap();
    assert_eq!(JsonValue::from(json!(5i64)), five);
}

#[test]
fn parses_and_serializes_back_to_the_same_json() {
    let text = r#"{"b":1,"a":[true,null,-2,1.5,"x\"y"],"c":{"d":{}},"e":[]}"#;
    let v: JsonValue = serde_json::from_str(text).unwrap();
    // members keep the order they came in
    assert_eq!(serde_json::to_string(&v).unwrap(), text);
    let reference: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(v.to_json(), reference);
    assert_eq!(JsonValue::from(reference.clone()), v);
    assert!(v == reference);
    assert_eq!(v.to_string(), text);
}

#[test]
fn read_api_matches_serde_json() {
    let reference = json!({"metadata":{"name":"a","labels":{"app":"web"}},
        "spec":{"replicas":3,"list":[{"x":-1},{"a/b":{"m~n":2.5}}]},"n":null});
    let v = JsonValue::from(reference.clone());
    for p in [
        "",
        "/metadata/name",
        "/metadata/labels/app",
        "/spec/replicas",
        "/spec/list/0/x",
        "/spec/list/1/a~1b/m~0n",
        "/spec/list/01",
        "/spec/list/9",
        "/n",
        "/missing/deeper",
        "no-slash",
    ] {
        assert_eq!(
            v.pointer(p).map(JsonRef::to_json),
            reference.pointer(p).cloned(),
            "pointer {p:?}"
        );
    }
    let at = |p: &str| v.pointer(p).unwrap_or(JsonRef::null());
    assert_eq!(at("/metadata/name").as_str(), Some("a"));
    assert!(at("/nope/deeper").is_null());
    assert_eq!(at("/spec/list/0/x").as_i64(), Some(-1));
    assert_eq!(at("/spec/replicas").as_u64(), Some(3));
    assert_eq!(at("/spec/list").as_array().map(JsonArray::len), Some(2));
    assert_eq!(
        at("/metadata/labels")
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k, v.as_str())).collect::<Vec<_>>()),
        Some(vec![("app", Some("web"))])
    );
    assert_eq!(
        v.get("metadata").and_then(|m| m.get("name")),
        at("/metadata/name").into()
    );
    assert!(matches!(
        at("/spec/replicas").kind(),
        JsonKind::Number(JsonNumber::PosInt(3))
    ));
}

#[test]
fn repeated_keys_keep_the_last_value_like_serde_json() {
    let text = r#"{"a":1,"b":2,"a":3}"#;
    let v: JsonValue = serde_json::from_str(text).unwrap();
    let reference: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(v.to_json(), reference);
    assert_eq!(v.root().as_object().map(JsonObject::len), Some(2));
    let many: String = (0..40).map(|i| format!("\"k{}\":{i},", i % 20)).collect();
    let text = format!("{{{}\"z\":0}}", many);
    let v: JsonValue = serde_json::from_str(&text).unwrap();
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v.to_json(), reference);
}

#[test]
fn objects_compare_without_regard_to_member_order() {
    let a: JsonValue = serde_json::from_str(r#"{"x":1,"y":[1,2]}"#).unwrap();
    let b: JsonValue = serde_json::from_str(r#"{"y":[1,2],"x":1}"#).unwrap();
    let c: JsonValue = serde_json::from_str(r#"{"y":[2,1],"x":1}"#).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        // quarters: exact in binary, so the text round trip is exact too
        (-4_000_000i64..4_000_000).prop_map(|n| json!(n as f64 / 4.0)),
        "[a-zT:0-9 é\\\"]{0,12}".prop_map(serde_json::Value::String),
        prop::sample::select(vec![
            "name",
            "True",
            "lastTransitionTime",
            "IfNotPresent",
            "Running"
        ])
        .prop_map(|s| json!(s)),
        (0usize..400).prop_map(|n| json!("x".repeat(n))),
    ];
    leaf.prop_recursive(4, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(serde_json::Value::Array),
            prop::collection::vec(("[a-e]{1,3}|name|status|True", inner), 0..12)
                .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// Any JSON reads back the same through the compact form, parsed or
    /// converted, and every path in it points at the same value.
    #[test]
    fn any_json_reads_back_the_same(reference in arbitrary_json()) {
        let text = serde_json::to_string(&reference).unwrap();
        let parsed: JsonValue = serde_json::from_str(&text).unwrap();
        let converted = JsonValue::from(&reference);
        proptest::prop_assert_eq!(parsed.to_json(), reference.clone());
        proptest::prop_assert!(parsed == converted);
        proptest::prop_assert!(parsed == reference);
        proptest::prop_assert_eq!(parsed.compact_len(), converted.compact_len());
        let reprinted: serde_json::Value = serde_json::from_str(&parsed.to_string()).unwrap();
        proptest::prop_assert_eq!(reprinted, reference.clone());
        fn paths(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
            out.push(at.clone());
            match v {
                serde_json::Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| paths(x, format!("{at}/{i}"), out)),
                serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| paths(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        paths(&reference, String::new(), &mut all);
        for p in all {
            let found = parsed.pointer(&p).map(JsonRef::to_json);
            proptest::prop_assert_eq!(found.as_ref(), reference.pointer(&p), "{}", p);
        }
    }
}

#[test]
fn a_truncated_or_foreign_tape_reads_as_null_not_a_panic() {
    let v: JsonValue = serde_json::from_str(r#"{"a":[1,"xyz",{"b":null}],"c":"True"}"#).unwrap();
    for cut in 0..v.tape.len() {
        let broken = JsonRef {
            bytes: &v.tape[..cut],
        };
        let _ = broken.to_json();
        let _ = broken.pointer("/a/2/b");
        let _ = broken.to_string();
    }
    for byte in 0..=255u8 {
        let odd = [byte, 0xFF, 0xFF];
        let _ = JsonRef { bytes: &odd }.to_json();
    }
}

#[test]
fn invalid_json_is_an_error() {
    assert!(serde_json::from_str::<JsonValue>("{\"a\":").is_err());
    assert!(serde_json::from_str::<JsonValue>("{1:2}").is_err());
}

/// The pairs `differing_members` yields, as (key, value) texts.
fn differing(left: &str, right: &str) -> Vec<(Option<String>, Option<String>)> {
    let (left, right): (JsonValue, JsonValue) = (
        serde_json::from_str(left).unwrap(),
        serde_json::from_str(right).unwrap(),
    );
    let text = |m: Option<EncodedMember<'_>>| {
        m.map(|m| format!("{}={}", m.key.as_str().unwrap_or("?"), m.value))
    };
    let (l, r) = (left.root().as_object(), right.root().as_object());
    l.zip(r)
        .map(|(l, r)| {
            l.differing_members(r)
                .map(|(a, b)| (text(a), text(b)))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn differing_members_pass_over_equal_members_in_long_runs() {
    let same = (0..200)
        .map(|i| format!("\"k{i:03}\":\"value {i} padding padding\""))
        .collect::<Vec<_>>();
    let mut changed = same.clone();
    changed[7] = "\"k007\":\"changed\"".into();
    changed[150] = "\"k150\":[1,2]".into();
    let object = |members: &[String]| format!("{{{}}}", members.join(","));
    assert_eq!(differing(&object(&same), &object(&same)), vec![]);
    assert_eq!(
        differing(&object(&same), &object(&changed)),
        vec![
            (
                Some("k007=\"value 7 padding padding\"".into()),
                Some("k007=\"changed\"".into())
            ),
            (
                Some("k150=\"value 150 padding padding\"".into()),
                Some("k150=[1,2]".into())
            ),
        ]
    );
    // One side longer: the rest pairs with nothing.
    assert_eq!(
        differing(r#"{"a":1,"b":2}"#, r#"{"a":1,"b":2,"c":3}"#),
        vec![(None, Some("c=3".into()))]
    );
    // A member whose bytes run on past the shared prefix is not passed
    // over: "a":12 against "a":1 share the bytes up to the 2.
    assert_eq!(
        differing(r#"{"a":12,"b":2}"#, r#"{"a":1,"b":2}"#),
        vec![(Some("a=12".into()), Some("a=1".into()))]
    );
    assert_eq!(
        differing(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#),
        vec![
            (Some("a=1".into()), Some("b=2".into())),
            (Some("b=2".into()), Some("a=1".into()))
        ]
    );
}

proptest::proptest! {
    /// `differing_members` yields exactly the positions where the two
    /// objects' members differ, and `rest` is empty once it is done.
    #[test]
    fn differing_members_are_the_positions_that_differ(
        left in proptest::collection::vec(("[ab]{1,2}", arbitrary_json()), 0..6),
        right in proptest::collection::vec(("[ab]{1,2}", arbitrary_json()), 0..6),
    ) {
        let object = |members: &[(String, serde_json::Value)]| -> JsonValue {
            let text = members
                .iter()
                .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(k.as_str())))
                .collect::<Vec<_>>()
                .join(",");
            serde_json::from_str(&format!("{{{text}}}")).unwrap()
        };
        let (l, r) = (object(&left), object(&right));
        let (lo, ro) = (l.root().as_object().unwrap(), r.root().as_object().unwrap());
        let bytes = |m: Option<EncodedMember<'_>>| m.map(|m| m.bytes.to_vec());
        let mut pairs = lo.differing_members(ro);
        let ours: Vec<_> = pairs.by_ref().map(|(a, b)| (bytes(a), bytes(b))).collect();
        let (mut lm, mut rm) = pairs.rest();
        proptest::prop_assert!(lm.next().is_none() && rm.next().is_none());
        // The reference: every member of each side (`rest` before any pair
        // is taken), zipped and compared one by one.
        let mut naive = Vec::new();
        let (mut ls, mut rs) = (lo.differing_members(lo).rest().0, ro.differing_members(ro).rest().1);
        loop {
            match (ls.next(), rs.next()) {
                (None, None) => break,
                (a, b) if bytes(a) == bytes(b) => {}
                (a, b) => naive.push((bytes(a), bytes(b))),
            }
        }
        proptest::prop_assert_eq!(ours, naive);
    }
}
