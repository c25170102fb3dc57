//! The check against tapes the writer makes, and against every way a
//! stored tape can be damaged.

use super::*;
use crate::json::{JsonKind, JsonRef, JsonValue};
use proptest::prelude::*;
use serde_json::json;

fn check_bytes(bytes: &[u8]) -> Result<JsonValue, CompactError> {
    JsonValue::from_compact_slice(bytes)
}

/// A varint's bytes, as the writer lays them out.
fn varint_of(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while n >= 0x80 {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out
}

// ------------------------------------------------------------ readers

/// Runs every reader over an accepted document and checks they agree:
/// none may panic, and none may fall back to `null` for a value that is
/// not one.
fn read_everything(doc: &JsonValue) {
    let json = doc.to_json();
    let text = serde_json::to_string(doc).expect("an accepted tape serializes");
    assert_eq!(doc.to_string(), text);
    assert_eq!(format!("{doc:?}"), text);
    assert_eq!(
        serde_json::to_value(doc).expect("an accepted tape serializes"),
        json
    );
    assert!(*doc == doc.clone());
    let _ = *doc == json;
    assert_eq!(doc.compact_bytes().len(), doc.compact_len());
    assert!(doc.held_bytes() > doc.compact_len());
    assert_eq!(doc.is_null(), json.is_null());
    let _ = doc.get("metadata");
    let mut budget = 3_000;
    read_value(doc, doc.root(), &mut String::new(), true, &mut budget);
}

/// Reads `v` and everything in it; `pointer` leads to it when it is
/// `reachable` (no repeated key on the way: a lookup finds the first).
fn read_value(
    doc: &JsonValue,
    v: JsonRef<'_>,
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
            doc.pointer(pointer) == Some(v),
            "{pointer:?} leads elsewhere"
        );
    }
    let _ = (v.as_str(), v.as_bool(), v.as_u64(), v.as_i64(), v.as_f64());
    let _ = (v.is_string(), v.is_array(), v.is_object());
    let _ = format!("{v:?} {v}");
    assert_eq!(v.to_owned_value().to_json(), v.to_json());
    assert_eq!(matches!(v.kind(), JsonKind::Null), v.is_null());
    let mut visit = |segment: &str, child: JsonRef<'_>, pointer: &mut String, first: bool| {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        read_value(doc, child, pointer, reachable && first, budget);
        pointer.truncate(len);
    };
    match v.kind() {
        JsonKind::Null => {}
        JsonKind::Bool(b) => assert_eq!(v.as_bool(), Some(b)),
        JsonKind::Number(n) => {
            assert_eq!(v.as_number(), Some(n));
            let _ = (n.to_number(), n.as_i64(), n.as_u64(), n.as_f64());
        }
        JsonKind::String(s) => assert_eq!(v.as_str(), Some(s)),
        JsonKind::Array(a) => {
            let _ = format!("{a:?}");
            assert_eq!(a.is_empty(), a.iter().next().is_none());
            let mut count = 0;
            for (i, element) in a.iter().enumerate() {
                assert!(a.get(i).is_some() && v.get_index(i).is_some());
                visit(&i.to_string(), element, pointer, true);
                count += 1;
            }
            assert_eq!(a.len(), count);
        }
        JsonKind::Object(o) => {
            let _ = format!("{o:?}");
            assert_eq!(o.is_empty(), o.iter().next().is_none());
            assert_eq!(o.keys().count(), o.len());
            assert_eq!(o.values().count(), o.len());
            let mut seen = std::collections::HashSet::new();
            for (key, member) in o.iter() {
                assert!(o.contains_key(key) && v.get(key).is_some());
                let first = seen.insert(key);
                visit(key, member, pointer, first);
            }
        }
    }
}

// ---------------------------------------------------------- documents

/// JSON as text, so an object may repeat a key (a `serde_json::Value`
/// cannot).
#[derive(Debug, Clone)]
enum Tree {
    Leaf(String),
    Array(Vec<Tree>),
    Object(Vec<(String, Tree)>),
}

impl Tree {
    fn write(&self, out: &mut String) {
        match self {
            Tree::Leaf(text) => out.push_str(text),
            Tree::Array(elements) => {
                out.push('[');
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    e.write(out);
                }
                out.push(']');
            }
            Tree::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json!(k).to_string());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

fn well_known_string() -> impl Strategy<Value = String> {
    (0..well_known::count())
        .prop_map(|id| well_known::by_id(id as u16).unwrap_or_default().to_owned())
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zT:0-9 é\\\"/~\\\\\u{1F600}]{0,12}",
        well_known_string(),
        // around the one-byte length and on to long strings
        (120usize..140, "[aé]").prop_map(|(n, fill)| fill.repeat(n)),
        (0usize..3000).prop_map(|n| "x".repeat(n)),
        ".{0,40}",
    ]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        prop_oneof![Just(i64::MIN), Just(-1i64), Just(0)].prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f).to_string()),
        prop_oneof![Just("-0"), Just("-0.0"), Just("1e300"), Just("-2.5e-308")]
            .prop_map(str::to_owned),
        string().prop_map(|s| json!(s).to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]{0,2}",
        well_known_string(),
        Just("a/b~c".to_owned()),
        string(),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    leaf()
        .prop_map(Tree::Leaf)
        .prop_recursive(6, 200, 10, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..10).prop_map(Tree::Array),
                prop::collection::vec((key(), inner), 0..10).prop_map(Tree::Object),
            ]
        })
}

/// One change to a tape: at a position (taken modulo its length).
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Xor(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        // a byte that keeps a string UTF-8, or is a tag of its own
        (any::<usize>(), b'0'..=b'z').prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), 0..=0x08u8).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Xor(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Remove),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(tape: &mut Vec<u8>, m: &Mutation) {
    let len = tape.len();
    match *m {
        Mutation::Set(i, b) if len > 0 => tape[i % len] = b,
        Mutation::Xor(i, b) if len > 0 => tape[i % len] ^= b,
        Mutation::Insert(i, b) => tape.insert(i % (len + 1), b),
        Mutation::Remove(i) if len > 0 => {
            tape.remove(i % len);
        }
        Mutation::Truncate(i) => tape.truncate(i % (len + 1)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Any JSON's tape is accepted as it is and reads back the same,
    /// whether it was parsed (repeated keys and all) or converted.
    #[test]
    fn every_tape_the_writer_makes_is_accepted(tree in tree()) {
        let text = tree.text();
        let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
        let parsed: JsonValue = serde_json::from_str(&text).unwrap();
        let back = JsonValue::from_compact_slice(&parsed.compact_bytes());
        prop_assert!(back.is_ok(), "{:?} for {}", back.err(), text);
        let back = back.unwrap();
        prop_assert_eq!(back.compact_bytes(), parsed.compact_bytes());
        prop_assert_eq!(back.to_json(), reference.clone());
        let converted = JsonValue::from(&reference);
        let back = JsonValue::from_compact(converted.compact_bytes().into()).unwrap();
        prop_assert_eq!(back.to_json(), reference);
        read_everything(&back);
    }

    /// A damaged tape is refused, or every reader reads what is
    /// accepted without a panic.
    #[test]
    fn a_damaged_tape_is_refused_or_reads_whole(
        tree in tree(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let parsed: JsonValue = serde_json::from_str(&tree.text()).unwrap();
        let mut tape = parsed.compact_bytes().to_vec();
        for m in &mutations {
            mutate(&mut tape, m);
        }
        if let Ok(doc) = JsonValue::from_compact_slice(&tape) {
            read_everything(&doc);
        }
    }

    /// Bytes that never were a tape.
    #[test]
    fn random_bytes_are_refused_or_read_whole(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(doc) = JsonValue::from_compact_slice(&bytes) {
            read_everything(&doc);
        }
    }
}

// ------------------------------------------------------------- errors

#[test]
fn a_hand_made_tape_reads_as_written() {
    // {"name":"web","spec":[1,-2,1.5,true,null],"long…":"é"}
    let mut tape = vec![0x40, 0x83, b'w', b'e', b'b', 0x45, 0x06, 0x0F];
    tape.extend([0x03, 0x01, 0x04, 0x01, 0x05]);
    tape.extend(1.5f64.to_le_bytes());
    tape.extend([0x02, 0x00]);
    let long_key = "k".repeat(200);
    tape.push(0x08);
    tape.extend(varint_of(200));
    tape.extend(long_key.as_bytes());
    tape.extend([0x82, 0xC3, 0xA9]);
    let body = tape.len() as u64;
    let mut whole = vec![0x07];
    whole.extend(varint_of(body));
    whole.extend(tape);
    let doc = check_bytes(&whole).unwrap();
    assert_eq!(
        doc.to_json(),
        json!({"name": "web", "spec": [1, -2, 1.5, true, null], long_key: "é"})
    );
    read_everything(&doc);
}

#[test]
fn a_byte_that_is_no_tag_is_refused() {
    for t in (0x09..0x10).chain(0x18..0x40) {
        assert_eq!(
            check_bytes(&[t]).unwrap_err(),
            CompactError::BadTag { at: 0, tag: t }
        );
    }
    assert_eq!(
        check_bytes(&[0x06, 0x02, 0x00, 0x20]).unwrap_err(),
        CompactError::BadTag { at: 3, tag: 0x20 }
    );
}

#[test]
fn a_varint_past_ten_bytes_or_64_bits_is_refused() {
    let mut max = vec![0x03];
    max.extend([0xFF; 9]);
    max.push(0x01);
    assert_eq!(check_bytes(&max).unwrap().root().as_u64(), Some(u64::MAX));
    let mut wide = max.clone();
    wide[10] = 0x02;
    assert_eq!(
        check_bytes(&wide).unwrap_err(),
        CompactError::VarintTooLong { at: 1 }
    );
    let mut long = max.clone();
    long[10] = 0x81;
    long.push(0x00);
    assert_eq!(
        check_bytes(&long).unwrap_err(),
        CompactError::VarintTooLong { at: 1 }
    );
    // a container's length too
    let mut array = vec![0x06];
    array.extend([0x80; 10]);
    array.push(0x00);
    assert_eq!(
        check_bytes(&array).unwrap_err(),
        CompactError::VarintTooLong { at: 1 }
    );
}

#[test]
fn a_length_past_its_container_is_refused() {
    let cases: [(&[u8], CompactError); 5] = [
        (
            &[0x08, 0x05, b'a', b'b'],
            CompactError::LengthPastEnd {
                at: 0,
                len: 5,
                left: 2,
            },
        ),
        (
            &[0x83, b'a'],
            CompactError::LengthPastEnd {
                at: 0,
                len: 3,
                left: 1,
            },
        ),
        (
            &[0x06, 0x05, 0x00],
            CompactError::LengthPastEnd {
                at: 0,
                len: 5,
                left: 1,
            },
        ),
        // the string fits the tape, not the array around it
        (
            &[0x06, 0x02, 0x82, b'a', b'b'],
            CompactError::LengthPastEnd {
                at: 2,
                len: 2,
                left: 1,
            },
        ),
        (
            &[0x06, 0x04, 0x06, 0x03, 0x00, 0x00, 0x00, 0x00],
            CompactError::LengthPastEnd {
                at: 2,
                len: 3,
                left: 2,
            },
        ),
    ];
    for (tape, want) in cases {
        assert_eq!(check_bytes(tape).unwrap_err(), want, "{tape:02x?}");
    }
    let mut huge = vec![0x08];
    huge.extend(varint_of(u64::MAX));
    assert!(matches!(
        check_bytes(&huge).unwrap_err(),
        CompactError::LengthPastEnd {
            at: 0,
            len: u64::MAX,
            left: 0
        }
    ));
}

#[test]
fn a_value_cut_short_is_refused() {
    let cases: [(&[u8], CompactError); 7] = [
        (&[], CompactError::Truncated { at: 0 }),
        (&[0x03, 0x80], CompactError::Truncated { at: 0 }),
        (&[0x05, 1, 2, 3], CompactError::Truncated { at: 0 }),
        (&[0x10], CompactError::Truncated { at: 0 }),
        (&[0x08], CompactError::Truncated { at: 0 }),
        // the integer's varint runs on past the array's end
        (
            &[0x06, 0x02, 0x03, 0x80, 0x01],
            CompactError::Truncated { at: 2 },
        ),
        // an array of one element whose body says it has room for two
        (&[0x06, 0x02, 0x00, 0x05], CompactError::Truncated { at: 3 }),
    ];
    for (tape, want) in cases {
        assert_eq!(check_bytes(tape).unwrap_err(), want, "{tape:02x?}");
    }
}

#[test]
fn bytes_after_the_root_value_are_refused() {
    assert_eq!(
        check_bytes(&[0x00, 0x00]).unwrap_err(),
        CompactError::TrailingBytes { at: 1, len: 1 }
    );
    let doc: JsonValue = serde_json::from_str(r#"{"a":[1,2]}"#).unwrap();
    let mut tape = doc.compact_bytes().to_vec();
    let len = tape.len();
    tape.extend([0x40, 0x40]);
    assert_eq!(
        check_bytes(&tape).unwrap_err(),
        CompactError::TrailingBytes { at: len, len: 2 }
    );
}

#[test]
fn a_string_that_is_not_utf8_is_refused() {
    assert_eq!(
        check_bytes(&[0x82, 0xC3, 0x28]).unwrap_err(),
        CompactError::InvalidUtf8 { at: 1 }
    );
    let mut long = vec![0x08];
    long.extend(varint_of(130));
    long.extend([b'a'; 129]);
    long.push(0xFF);
    assert_eq!(
        check_bytes(&long).unwrap_err(),
        CompactError::InvalidUtf8 { at: 3 + 129 }
    );
    // a character split by its string's end
    assert_eq!(
        check_bytes(&[0x06, 0x04, 0x81, 0xC3, 0x81, 0xA9]).unwrap_err(),
        CompactError::InvalidUtf8 { at: 3 }
    );
    // in a key too
    assert_eq!(
        check_bytes(&[0x07, 0x03, 0x81, 0xFF, 0x00]).unwrap_err(),
        CompactError::InvalidUtf8 { at: 3 }
    );
}

#[test]
fn a_well_known_id_past_the_table_is_refused() {
    let known = well_known::count();
    let last = (known - 1) as u16;
    let tape = [0x10 | (last >> 8) as u8, last as u8];
    assert_eq!(
        check_bytes(&tape).unwrap().root().as_str(),
        well_known::by_id(last)
    );
    let id = known as u16;
    assert_eq!(
        check_bytes(&[0x10 | (id >> 8) as u8, id as u8]).unwrap_err(),
        CompactError::UnknownWellKnown { at: 0, id, known }
    );
    assert_eq!(
        check_bytes(&[0x06, 0x02, 0x17, 0xFF]).unwrap_err(),
        CompactError::UnknownWellKnown {
            at: 2,
            id: 0x7FF,
            known
        }
    );
}

#[test]
fn nesting_deeper_than_serde_json_allows_is_refused() {
    fn nested(depth: usize) -> serde_json::Value {
        (1..depth).fold(json!([]), |inner, i| {
            if i % 2 == 0 {
                json!([inner])
            } else {
                json!({ "a": inner })
            }
        })
    }
    let deepest = nested(MAX_DEPTH);
    let doc = check_bytes(&JsonValue::from(&deepest).compact_bytes()).unwrap();
    assert_eq!(doc.to_json(), deepest);
    read_everything(&doc);
    let tape = JsonValue::from(&nested(MAX_DEPTH + 1))
        .compact_bytes()
        .to_vec();
    // the innermost `[]` is the one too many: the last two bytes
    assert_eq!(
        check_bytes(&tape).unwrap_err(),
        CompactError::TooDeep { at: tape.len() - 2 }
    );
    // far deeper than any stack would take, were the check recursive
    let mut deep = vec![0x06, 0x00];
    for _ in 0..100_000 {
        let mut outer = vec![0x06];
        outer.extend(varint_of(deep.len() as u64));
        outer.extend(deep);
        deep = outer;
    }
    assert!(matches!(
        check_bytes(&deep).unwrap_err(),
        CompactError::TooDeep { .. }
    ));
}

#[test]
fn an_object_must_be_string_keys_and_values() {
    assert_eq!(
        check_bytes(&[0x07, 0x02, 0x00, 0x00]).unwrap_err(),
        CompactError::KeyNotString { at: 2, tag: 0x00 }
    );
    assert_eq!(
        check_bytes(&[0x07, 0x01, 0x40]).unwrap_err(),
        CompactError::KeyWithoutValue { at: 3 }
    );
    assert_eq!(
        check_bytes(&[0x07, 0x03, 0x40, 0x00, 0x41]).unwrap_err(),
        CompactError::KeyWithoutValue { at: 5 }
    );
    assert_eq!(check_bytes(&[0x07, 0x00]).unwrap().to_json(), json!({}));
}

#[test]
fn a_repeated_key_is_accepted_and_read_without_a_panic() {
    // {"name":1,"name":[2]}: the writer never makes one; the check lets
    // it through (see the module doc), and the readers stay whole
    let tape = [0x07, 0x08, 0x40, 0x03, 0x01, 0x40, 0x06, 0x02, 0x03, 0x02];
    let doc = check_bytes(&tape).unwrap();
    assert_eq!(doc.pointer("/name").and_then(JsonRef::as_u64), Some(1));
    assert_eq!(doc.to_json(), json!({"name": [2]}));
    assert_eq!(doc.root().as_object().map(|o| o.len()), Some(2));
    read_everything(&doc);
}

#[test]
fn numbers_the_writer_cannot_make_are_refused() {
    let mut min = vec![0x04];
    min.extend(varint_of(i64::MAX as u64));
    assert_eq!(check_bytes(&min).unwrap().root().as_i64(), Some(i64::MIN));
    let mut below = vec![0x04];
    below.extend(varint_of(1 << 63));
    assert_eq!(
        check_bytes(&below).unwrap_err(),
        CompactError::NegativeOutOfRange { at: 0 }
    );
    for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut tape = vec![0x05];
        tape.extend(f.to_le_bytes());
        assert_eq!(
            check_bytes(&tape).unwrap_err(),
            CompactError::NonFiniteFloat { at: 0 }
        );
    }
}

#[test]
fn the_error_says_where_and_what() {
    let err = check_bytes(&[0x06, 0x02, 0x00, 0x20]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the compact JSON has byte 0x20 where a value's tag is due, at byte 3"
    );
    let boxed: Box<[u8]> = Box::new([0x09]);
    assert!(JsonValue::from_compact(boxed).is_err());
}

// --------------------------------------------------------- throughput

/// A Pod as a cluster sends it, ~4 KB of JSON.
fn pod(i: usize) -> serde_json::Value {
    let name = format!("api-5c8d9b7f4-{i:06}");
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": format!("shop-{}", i % 16), "generateName": "api-5c8d9b7f4-",
            "uid": format!("0c5e2b1a-7d3f-4e6a-9b8c-{i:012}"), "resourceVersion": (100_000 + i).to_string(),
            "creationTimestamp": "2026-03-02T08:15:00Z",
            "labels": {"app": "api", "pod-template-hash": "5c8d9b7f4", "version": "v3"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-5c8d9b7f4",
                "uid": format!("d1e2f3a4-{}", i % 40), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-03-02T08:15:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:version": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"d1e2\"}": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"api\"}": {".": {}, "f:image": {}, "f:env": {}, "f:ports": {}, "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-03-02T08:15:07Z",
                 "subresource": "status", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "containers": [{
                "name": "api", "image": "ghcr.io/example/shop-api:3.14.1", "imagePullPolicy": "IfNotPresent",
                "args": ["--listen=:8080", "--metrics=:9090", "--log-format=json"],
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
                "env": [{"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": "url"}}},
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                        {"name": "CACHE_TTL", "value": "30s"}],
                "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
                "livenessProbe": {"httpGet": {"path": "/livez", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 5,
                    "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
                    "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "nodeName": format!("pool-a-{}", i % 24),
            "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {"runAsNonRoot": true},
            "serviceAccount": "shop-api", "serviceAccountName": "shop-api", "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}]
        },
        "status": {
            "phase": "Running", "hostIP": format!("10.1.0.{}", i % 24), "podIP": format!("10.42.{}.{}", i % 200, i % 250),
            "qosClass": "Burstable", "startTime": "2026-03-02T08:15:00Z",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-03-02T08:15:00Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-03-02T08:15:07Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-03-02T08:15:07Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-03-02T08:15:00Z"}
            ],
            "containerStatuses": [{"name": "api", "ready": true, "restartCount": i % 3, "started": true,
                "image": "ghcr.io/example/shop-api:3.14.1",
                "imageID": "ghcr.io/example/shop-api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "containerID": format!("containerd://{i:064x}"),
                "lastState": {}, "state": {"running": {"startedAt": "2026-03-02T08:15:05Z"}}}]
        }
    })
}

#[test]
fn a_pod_reads_back_whole() {
    let reference = pod(7);
    let doc = JsonValue::from(&reference);
    let back = JsonValue::from_compact_slice(&doc.compact_bytes()).unwrap();
    assert_eq!(back.to_json(), reference);
    read_everything(&back);
}

/// How fast a restored store is checked. Run in release:
/// `cargo test -p deltascope-informer --release --lib json::check::tests::throughput -- --ignored --nocapture`
#[test]
#[ignore = "a measurement; run in release"]
fn throughput() {
    let tapes: Vec<Box<[u8]>> = (0..20_000)
        .map(|i| JsonValue::from(&pod(i)).compact_bytes().into())
        .collect();
    let bytes: usize = tapes.iter().map(|t| t.len()).sum();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        for tape in &tapes {
            assert!(check(std::hint::black_box(tape)).is_ok());
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let copy_start = std::time::Instant::now();
    let docs: Vec<JsonValue> = tapes
        .iter()
        .map(|t| JsonValue::from_compact_slice(t).unwrap())
        .collect();
    let with_copy = copy_start.elapsed().as_secs_f64();
    println!(
        "{} tapes, {:.1} MB ({} B each): check {:.0} MB/s (best of 5); from_compact_slice with its copy {:.0} MB/s",
        tapes.len(),
        bytes as f64 / 1e6,
        bytes / tapes.len(),
        bytes as f64 / 1e6 / best,
        bytes as f64 / 1e6 / with_copy,
    );
    assert_eq!(docs.len(), tapes.len());
}
