//! The check a compact JSON tape ([`super::json`]) must pass before it
//! becomes a [`JsonValue`](super::json::JsonValue) again:
//! [`JsonValue::from_compact`](super::json::JsonValue::from_compact) and
//! [`from_compact_slice`](super::json::JsonValue::from_compact_slice) call
//! it on bytes read back from the browser's database, and [`CompactError`]
//! says what was wrong and where.
//!
//! A tape the informer wrote itself is well-formed by construction; one read
//! back from disk is untrusted (a damaged database, an older build's format).
//! The readers in `json/` never index past their slice, but they would
//! quietly read nonsense from such a tape — a string that is not UTF-8 as
//! `null`, a truncated object as a shorter one — and the recursive ones
//! (`to_json`, `Serialize`, `PartialEq`) would follow nesting as deep as the
//! bytes ask. So a stored tape is accepted only when it is exactly one value
//! every reader reads as the writer meant it:
//! - every byte where a tag is due is a tag of the format;
//! - varints are at most 10 bytes and fit 64 bits; a negative integer fits
//!   `i64`; a float is finite (the writer never writes another);
//! - every length (a string's, an array's or object's body) stays inside its
//!   container, and a container's body is consumed exactly by its elements;
//! - an object's body is (string key, value) pairs;
//! - strings are UTF-8, and well-known ids are inside this build's table
//!   ([`super::well_known`]; a build with another table also has another
//!   [`super::well_known::fingerprint`], so its tapes are dropped before
//!   they get here);
//! - containers nest at most [`MAX_DEPTH`] deep (`serde_json`'s own limit);
//! - nothing follows the root value.
//!
//! The check is one pass over the bytes with no recursion: open containers
//! are a fixed stack of their end offsets, so depth costs no call stack and
//! no allocation. Two things it does not ask: that encodings are the
//! writer's shortest (readers accept any), and that an object's keys are
//! distinct (the writer's are; a tape with a repeated key still reads
//! without a panic, as the first member for `get` and the last for
//! `to_json`).

use super::json::tag;
use super::well_known;

/// Deepest nesting of arrays and objects a stored tape may have (the root
/// container is depth 1): `serde_json`'s recursion limit.
pub const MAX_DEPTH: usize = 128;

/// Why a stored tape was refused; `at` is the byte offset in the tape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    #[error("the compact JSON has byte {tag:#04x} where a value's tag is due, at byte {at}")]
    BadTag { at: usize, tag: u8 },
    #[error(
        "the compact JSON has an object key that is not a string (tag {tag:#04x}) at byte {at}"
    )]
    KeyNotString { at: usize, tag: u8 },
    #[error(
        "the compact JSON has a varint longer than 10 bytes or wider than 64 bits at byte {at}"
    )]
    VarintTooLong { at: usize },
    #[error("the compact JSON ends inside the value that starts at byte {at}")]
    Truncated { at: usize },
    #[error("the compact JSON's value at byte {at} says it holds {len} bytes, but only {left} are left in its container")]
    LengthPastEnd { at: usize, len: u64, left: usize },
    #[error(
        "the compact JSON has an object that ends after a key, without its value, at byte {at}"
    )]
    KeyWithoutValue { at: usize },
    #[error("the compact JSON has {len} bytes after its root value, from byte {at}")]
    TrailingBytes { at: usize, len: usize },
    #[error("the compact JSON has a string that is not UTF-8 at byte {at}")]
    InvalidUtf8 { at: usize },
    #[error("the compact JSON refers to well-known string {id}, which this build's table (of {known}) does not have, at byte {at}")]
    UnknownWellKnown { at: usize, id: u16, known: usize },
    #[error("the compact JSON has a negative integer below i64::MIN at byte {at}")]
    NegativeOutOfRange { at: usize },
    #[error("the compact JSON has a float that is not finite at byte {at}")]
    NonFiniteFloat { at: usize },
    #[error("the compact JSON nests arrays and objects deeper than {MAX_DEPTH} at byte {at}")]
    TooDeep { at: usize },
}

/// What an open container expects next.
#[derive(Clone, Copy, PartialEq)]
enum Next {
    Element,
    Key,
    Value,
}

/// An open array or object: where its body ends and what comes next in it.
#[derive(Clone, Copy)]
struct Open {
    end: usize,
    next: Next,
}

/// Checks that `tape` is exactly one well-formed value (see the module doc).
pub(crate) fn check(tape: &[u8]) -> Result<(), CompactError> {
    let known = well_known::count();
    let mut open = [Open {
        end: 0,
        next: Next::Element,
    }; MAX_DEPTH];
    let mut depth = 0;
    let mut at = 0;
    // where the innermost open container (or the tape) ends
    let mut limit = tape.len();
    let mut started = false;
    loop {
        while depth > 0 && at == limit {
            depth -= 1;
            let closed = open.get(depth).map_or(Next::Element, |o| o.next);
            if closed == Next::Value {
                return Err(CompactError::KeyWithoutValue { at });
            }
            limit = match depth.checked_sub(1).and_then(|d| open.get(d)) {
                Some(parent) => parent.end,
                None => tape.len(),
            };
        }
        if depth == 0 && started {
            break;
        }
        started = true;
        let mut is_key = false;
        if let Some(top) = depth.checked_sub(1).and_then(|d| open.get_mut(d)) {
            match top.next {
                Next::Element => {}
                Next::Key => {
                    is_key = true;
                    top.next = Next::Value;
                }
                Next::Value => top.next = Next::Key,
            }
        }
        // a value is due: the tape or its container must not end here
        let Some(&t) = tape.get(at).filter(|_| at < limit) else {
            return Err(CompactError::Truncated { at });
        };
        if is_key && !is_str_tag(t) {
            return Err(CompactError::KeyNotString { at, tag: t });
        }
        let value_at = at;
        match t {
            tag::NULL | tag::FALSE | tag::TRUE => at += 1,
            tag::UINT => at += 1 + varint(tape, at + 1, limit, value_at)?.1,
            tag::NEG_INT => {
                let (n, used) = varint(tape, at + 1, limit, value_at)?;
                if i64::try_from(n).is_err() {
                    return Err(CompactError::NegativeOutOfRange { at });
                }
                at += 1 + used;
            }
            tag::FLOAT => {
                let bits = tape
                    .get(at + 1..at + 9)
                    .filter(|_| at + 9 <= limit)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .ok_or(CompactError::Truncated { at })?;
                if !f64::from_le_bytes(bits).is_finite() {
                    return Err(CompactError::NonFiniteFloat { at });
                }
                at += 9;
            }
            tag::ARRAY | tag::OBJECT => {
                let (body, head) = sized(tape, at, limit)?;
                if depth == MAX_DEPTH {
                    return Err(CompactError::TooDeep { at });
                }
                let end = at + head + body;
                let slot = open.get_mut(depth).ok_or(CompactError::TooDeep { at })?;
                *slot = Open {
                    end,
                    next: if t == tag::OBJECT {
                        Next::Key
                    } else {
                        Next::Element
                    },
                };
                depth += 1;
                at += head;
                limit = end;
            }
            tag::LONG_STR => {
                let (len, head) = sized(tape, at, limit)?;
                utf8(tape, at + head, len)?;
                at += head + len;
            }
            tag::KNOWN_STR..=tag::KNOWN_STR_END => {
                let low = tape
                    .get(at + 1)
                    .filter(|_| at + 2 <= limit)
                    .ok_or(CompactError::Truncated { at })?;
                let id = (u16::from(t & 0x07) << 8) | u16::from(*low);
                known_id(id, known, at)?;
                at += 2;
            }
            tag::FREQUENT_STR..=0x7F => {
                known_id(u16::from(t & 0x3F), known, at)?;
                at += 1;
            }
            tag::SHORT_STR..=0xFF => {
                let len = usize::from(t & 0x7F);
                let left = limit - at - 1;
                if len > left {
                    return Err(CompactError::LengthPastEnd {
                        at,
                        len: len as u64,
                        left,
                    });
                }
                utf8(tape, at + 1, len)?;
                at += 1 + len;
            }
            _ => return Err(CompactError::BadTag { at, tag: t }),
        }
    }
    if at < tape.len() {
        return Err(CompactError::TrailingBytes {
            at,
            len: tape.len() - at,
        });
    }
    Ok(())
}

fn is_str_tag(t: u8) -> bool {
    matches!(t, tag::LONG_STR | tag::KNOWN_STR..=tag::KNOWN_STR_END | tag::FREQUENT_STR..=0xFF)
}

/// The LEB128 varint at `at`, which must end before `limit`: (value, bytes
/// used). `value_at` is where the value holding it starts, for the error.
fn varint(
    tape: &[u8],
    at: usize,
    limit: usize,
    value_at: usize,
) -> Result<(u64, usize), CompactError> {
    let bytes = tape.get(at..limit).unwrap_or_default();
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 0x01 {
            // a continuation, or bits past the 64th
            return Err(CompactError::VarintTooLong { at });
        }
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(CompactError::Truncated { at: value_at })
}

/// The varint length after the tag at `at` and that many bytes following it,
/// all before `limit`: (length, header bytes including the tag).
fn sized(tape: &[u8], at: usize, limit: usize) -> Result<(usize, usize), CompactError> {
    let (len, used) = varint(tape, at + 1, limit, at)?;
    let head = 1 + used;
    let left = limit - at - head;
    match usize::try_from(len) {
        Ok(body) if body <= left => Ok((body, head)),
        _ => Err(CompactError::LengthPastEnd { at, len, left }),
    }
}

/// The `len` bytes at `at` (known to be in the tape) are UTF-8.
fn utf8(tape: &[u8], at: usize, len: usize) -> Result<(), CompactError> {
    let bytes = tape
        .get(at..at + len)
        .ok_or(CompactError::Truncated { at })?;
    if bytes.is_ascii() {
        // most of an object's strings; a word at a time
        return Ok(());
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => Ok(()),
        Err(e) => Err(CompactError::InvalidUtf8 {
            at: at + e.valid_up_to(),
        }),
    }
}

fn known_id(id: u16, known: usize, at: usize) -> Result<(), CompactError> {
    if usize::from(id) < known {
        Ok(())
    } else {
        Err(CompactError::UnknownWellKnown { at, id, known })
    }
}

#[cfg(test)]
mod tests {
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
            let back = JsonValue::from_compact_slice(parsed.compact_bytes());
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
        let doc = check_bytes(JsonValue::from(&deepest).compact_bytes()).unwrap();
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
        let back = JsonValue::from_compact_slice(doc.compact_bytes()).unwrap();
        assert_eq!(back.to_json(), reference);
        read_everything(&back);
    }

    /// How fast a restored store is checked. Run in release:
    /// `cargo test -p deltascope-informer --release --lib json_check::tests::throughput -- --ignored --nocapture`
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
}
