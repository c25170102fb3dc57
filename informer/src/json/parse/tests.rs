//! `JsonValue::parse` against `serde_json::from_slice` (the reader it
//! replaces on the hot path): the same tape for every text both accept,
//! and an error from both for every text one refuses.

use super::*;
use proptest::prelude::*;

/// The tape `serde_json` writes for `text`, or that it refused it.
fn through_serde(text: &[u8]) -> Option<Vec<u8>> {
    serde_json::from_slice::<JsonValue>(text)
        .ok()
        .map(|value| value.compact_bytes().to_vec())
}

fn through_parse(text: &[u8]) -> Option<Vec<u8>> {
    JsonValue::parse(text)
        .ok()
        .map(|value| value.compact_bytes().to_vec())
}

fn same_as_serde(text: &[u8]) {
    assert_eq!(
        through_parse(text),
        through_serde(text),
        "{}",
        String::from_utf8_lossy(text)
    );
}

#[test]
fn edge_cases_read_as_serde_json_reads_them() {
    let cases: &[&str] = &[
        "0",
        "-0",
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678",
        "1234567890123456789",
        "1.5",
        "-1.5e3",
        "1E+2",
        "1e400",
        "01",
        "-",
        "1.",
        "1e",
        ".5",
        "+1",
        "true",
        "tru",
        "nul",
        "null ",
        " \n{\"a\" : [1, 2 ,3] }\t",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        "1 2",
        "",
        "   ",
        "\"\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\u00e9t\\u00E9\"",
        "\"a\\tb\\n\\\\\\\"\\/\\b\\f\\r\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"a\u{1}b\"",
        "\"tab\there\"",
        "\"é\"",
        "{\"a\":1,\"b\":2,\"a\":3}",
        "[[[]]]",
        "{\"name\":\"True\",\"lastTransitionTime\":\"Running\"}",
        "\"unterminated",
        "[1, 2",
        "{\"a\":",
        "[\"\\u0000\"]",
    ];
    for case in cases {
        same_as_serde(case.as_bytes());
    }
    same_as_serde(b"\"\xff\"");
    same_as_serde(b"[\"ok\", \"\xc3\"]");
    same_as_serde(&[b'"', b'a', 0x7f, b'"']);
}

#[test]
fn nesting_is_refused_where_serde_json_refuses_it() {
    for depth in [126, 127, 128, 129, 200] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        same_as_serde(arrays.as_bytes());
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        same_as_serde(objects.as_bytes());
    }
}

#[test]
fn parse_then_reads_the_same_document_even_from_inside_itself() {
    let outer = br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
    let inner = br#"{"name":"b"}"#;
    let (object, nested) = JsonValue::parse_then(outer, |line| {
        let root = line.root();
        let nested = JsonValue::parse_then(inner, |line| line.copy_out(line.root())).unwrap();
        (root.get("object").map(|o| line.copy_out(o)), nested)
    })
    .unwrap();
    let whole = JsonValue::parse(outer).unwrap();
    assert!(object.as_ref().map(JsonValue::root) == whole.get("object"));
    assert!(nested == JsonValue::parse(inner).unwrap());
    assert!(JsonValue::parse_then(b"{", |_| ()).is_err());
}

#[test]
fn an_error_says_where() {
    let error = JsonValue::parse(b"{\"a\": tru}").unwrap_err();
    assert_eq!(error.at, 6);
    assert_eq!(error.to_string(), "expected value at byte 6");
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<u64>().prop_map(|n| serde_json::json!(n)),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        "[a-zT:0-9 é\\\"\\\\/\t\n\u{1}\u{1F600}]{0,12}".prop_map(serde_json::Value::String),
        prop::sample::select(vec!["name", "True", "lastTransitionTime", "Running"])
            .prop_map(|s| serde_json::json!(s)),
    ];
    leaf.prop_recursive(4, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(serde_json::Value::Array),
            prop::collection::vec(("[a-e]{1,3}|name|status|True", inner), 0..12)
                .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A text edited at one place: cut there, a byte put in, or one taken out.
fn edited(text: Vec<u8>, at: usize, edit: u8, byte: u8) -> Vec<u8> {
    let mut text = text;
    let at = at % (text.len() + 1);
    match edit % 3 {
        0 => text.truncate(at),
        1 => text.insert(at, byte),
        _ if at < text.len() => {
            text.remove(at);
        }
        _ => {}
    }
    text
}

proptest! {
    #[test]
    fn any_json_text_gives_serde_jsons_tape(value in arbitrary_json(), pretty in any::<bool>()) {
        let text = match pretty {
            true => serde_json::to_vec_pretty(&value).unwrap(),
            false => serde_json::to_vec(&value).unwrap(),
        };
        let parsed = through_parse(&text);
        prop_assert!(parsed.is_some());
        prop_assert_eq!(parsed, through_serde(&text));
    }

    #[test]
    fn any_damaged_text_is_refused_or_read_as_serde_json_reads_it(
        value in arbitrary_json(),
        at in any::<usize>(),
        edit in any::<u8>(),
        byte in prop::sample::select(b"{}[]:,\"\\0123456789-+.eEtfnu \x01\xc3\xff".to_vec()),
    ) {
        let text = edited(serde_json::to_vec(&value).unwrap(), at, edit, byte);
        prop_assert_eq!(through_parse(&text), through_serde(&text), "{}", String::from_utf8_lossy(&text));
    }
}
