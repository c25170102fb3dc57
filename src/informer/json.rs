//! [`JsonValue`]: the compact, read-only JSON tree the informer holds every
//! object in.
//!
//! `serde_json::Value` keeps each JSON object in a `BTreeMap`, whose first
//! node alone is ~630 bytes however few keys it holds; a Pod has ~75 small
//! maps, so a 5.5 KB Pod took ~50 KB. Here an object is one exactly-sized
//! boxed slice of `(key, value)` pairs in the order the server sent them,
//! strings and member names are [`JsonStr`] (up to 10 bytes in wasm32, 22
//! natively, inside the value; well-known Kubernetes strings shared; the
//! rest in one exact allocation) and
//! arrays boxed slices, so nothing is over-allocated. Lookups by key are
//! linear scans, which is faster than a tree for the handful of keys a
//! Kubernetes map has.
//!
//! Numbers are kept as 8 bytes plus a kind ([`JsonNumber`]) rather than as
//! `serde_json::Number`, whose 8-byte alignment made every value 24 bytes in
//! wasm32; a value is 12 bytes there (24 natively), a member 24 (48).
//!
//! The read API mirrors `serde_json::Value` (`get`, `pointer`, `as_str`,
//! `as_array`, `as_u64`, indexing with `["key"]`, …) so code that reads
//! objects reads the same; [`JsonValue::to_json`] gives a `serde_json::Value`
//! for the rare callers that need one (diffs, pretty printing).

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Number;

/// One JSON value in compact form.
#[derive(Debug, Clone, Default)]
pub enum JsonValue {
    #[default]
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(JsonStr),
    Array(Box<[JsonValue]>),
    Object(JsonObject),
}

// The page's memory depends on it: a Pod has ~200 values.
#[cfg(target_arch = "wasm32")]
const _: () = assert!(std::mem::size_of::<JsonValue>() == 12);

/// Bytes a [`JsonStr`] holds without an allocation: 10 in wasm32, 22 natively
/// (what fits beside the tags in a three-word [`JsonValue`]).
const INLINE_STR: usize = 3 * std::mem::size_of::<usize>() - 2;

/// A string value or member name: short ones ("True", "Running", "name",
/// "labels") live inside, well-known long ones ("lastTransitionTime",
/// "IfNotPresent") point at the program's copy, others take one
/// exactly-sized allocation. Reads as `&str`.
#[derive(Clone)]
pub enum JsonStr {
    Inline {
        len: u8,
        bytes: [u8; INLINE_STR],
    },
    /// One of the strings every object repeats ([`super::well_known`]).
    Static(&'static str),
    Heap(Box<str>),
}

impl JsonStr {
    pub fn new(text: &str) -> JsonStr {
        JsonStr::without_allocation(text).unwrap_or_else(|| JsonStr::Heap(text.into()))
    }

    fn from_string(text: String) -> JsonStr {
        JsonStr::without_allocation(&text).unwrap_or_else(|| JsonStr::Heap(text.into_boxed_str()))
    }

    /// The inline or well-known form of `text`, if it has one.
    fn without_allocation(text: &str) -> Option<JsonStr> {
        let len = text.len();
        if len <= INLINE_STR {
            let mut bytes = [0; INLINE_STR];
            bytes[..len].copy_from_slice(text.as_bytes());
            return Some(JsonStr::Inline {
                len: len as u8,
                bytes,
            });
        }
        super::well_known::well_known(text).map(JsonStr::Static)
    }

    pub fn as_str(&self) -> &str {
        match self {
            // always whole UTF-8: copied from a `&str`
            JsonStr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            JsonStr::Static(text) => text,
            JsonStr::Heap(text) => text,
        }
    }

    /// The UTF-8 bytes (no validation: for comparisons).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            JsonStr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            JsonStr::Static(text) => text.as_bytes(),
            JsonStr::Heap(text) => text.as_bytes(),
        }
    }

    /// Heap bytes held (none when inline).
    fn held_bytes(&self) -> usize {
        match self {
            JsonStr::Inline { .. } | JsonStr::Static(_) => 0,
            JsonStr::Heap(text) => allocation(text.len()),
        }
    }
}

impl std::ops::Deref for JsonStr {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for JsonStr {
    fn eq(&self, other: &JsonStr) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl fmt::Debug for JsonStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A JSON number as `serde_json` reads one: a non-negative integer, a
/// negative integer or a finite float, with the same conversions and
/// equality as `serde_json::Number`. The value's bytes are stored unaligned so
/// the number needs no more than pointer alignment in a [`JsonValue`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JsonNumber {
    kind: NumberKind,
    bits: [u8; 8],
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NumberKind {
    PosInt,
    NegInt,
    Float,
}

impl JsonNumber {
    pub fn from_u64(n: u64) -> JsonNumber {
        JsonNumber {
            kind: NumberKind::PosInt,
            bits: n.to_le_bytes(),
        }
    }

    /// Non-negative values are positive integers, as in `serde_json`.
    pub fn from_i64(n: i64) -> JsonNumber {
        match u64::try_from(n) {
            Ok(n) => JsonNumber::from_u64(n),
            Err(_) => JsonNumber {
                kind: NumberKind::NegInt,
                bits: n.to_le_bytes(),
            },
        }
    }

    /// `None` for NaN and infinities, which JSON cannot hold.
    pub fn from_f64(f: f64) -> Option<JsonNumber> {
        f.is_finite().then(|| JsonNumber {
            kind: NumberKind::Float,
            bits: f.to_bits().to_le_bytes(),
        })
    }

    fn word(&self) -> u64 {
        u64::from_le_bytes(self.bits)
    }

    pub fn as_u64(&self) -> Option<u64> {
        (self.kind == NumberKind::PosInt).then(|| self.word())
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self.kind {
            NumberKind::PosInt => i64::try_from(self.word()).ok(),
            NumberKind::NegInt => Some(self.word() as i64),
            NumberKind::Float => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        Some(match self.kind {
            NumberKind::PosInt => self.word() as f64,
            NumberKind::NegInt => self.word() as i64 as f64,
            NumberKind::Float => f64::from_bits(self.word()),
        })
    }

    /// The same number as a `serde_json::Number`.
    pub fn to_number(&self) -> Number {
        match self.kind {
            NumberKind::PosInt => Number::from(self.word()),
            NumberKind::NegInt => Number::from(self.word() as i64),
            NumberKind::Float => {
                Number::from_f64(f64::from_bits(self.word())).unwrap_or_else(|| Number::from(0u64))
            }
        }
    }

    /// From a `serde_json::Number` (always finite).
    pub fn from_number(n: &Number) -> JsonNumber {
        if let Some(u) = n.as_u64() {
            JsonNumber::from_u64(u)
        } else if let Some(i) = n.as_i64() {
            JsonNumber::from_i64(i)
        } else {
            n.as_f64()
                .and_then(JsonNumber::from_f64)
                .unwrap_or(JsonNumber::from_u64(0))
        }
    }
}

impl fmt::Debug for JsonNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_number(), f)
    }
}

impl fmt::Display for JsonNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_number(), f)
    }
}

impl PartialEq<Number> for JsonNumber {
    fn eq(&self, other: &Number) -> bool {
        *self == JsonNumber::from_number(other)
    }
}

impl Serialize for JsonNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.kind {
            NumberKind::PosInt => serializer.serialize_u64(self.word()),
            NumberKind::NegInt => serializer.serialize_i64(self.word() as i64),
            NumberKind::Float => serializer.serialize_f64(f64::from_bits(self.word())),
        }
    }
}

/// A JSON object: its members in the order they were received, each key at
/// most once.
#[derive(Debug, Clone, Default)]
pub struct JsonObject(Box<[(JsonStr, JsonValue)]>);

static NULL: JsonValue = JsonValue::Null;

impl JsonObject {
    /// The member named `key`.
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        let key = key.as_bytes();
        self.0
            .iter()
            .find(|(k, _)| k.as_bytes() == key)
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Members in the order they were received.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &JsonValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &JsonValue> {
        self.0.iter().map(|(_, v)| v)
    }

    /// Builds an object from members; a repeated key keeps its last value
    /// (as `serde_json` does), at the position of its first occurrence.
    pub fn from_members(mut members: Vec<(JsonStr, JsonValue)>) -> JsonObject {
        if has_duplicate_keys(&members) {
            let mut kept: Vec<(JsonStr, JsonValue)> = Vec::with_capacity(members.len());
            for (k, v) in members.drain(..) {
                match kept.iter_mut().find(|(seen, _)| *seen == k) {
                    Some(slot) => slot.1 = v,
                    None => kept.push((k, v)),
                }
            }
            members = kept;
        }
        JsonObject(members.into_boxed_slice())
    }
}

fn has_duplicate_keys(members: &[(JsonStr, JsonValue)]) -> bool {
    if members.len() <= 16 {
        members
            .iter()
            .enumerate()
            .any(|(i, (k, _))| members[..i].iter().any(|(seen, _)| seen == k))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(members.len());
        members.iter().any(|(k, _)| !seen.insert(k.as_bytes()))
    }
}

impl PartialEq for JsonObject {
    /// Equal when both have the same members, in any order (like
    /// `serde_json::Map`).
    fn eq(&self, other: &JsonObject) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl PartialEq for JsonValue {
    fn eq(&self, other: &JsonValue) -> bool {
        match (self, other) {
            (JsonValue::Null, JsonValue::Null) => true,
            (JsonValue::Bool(a), JsonValue::Bool(b)) => a == b,
            (JsonValue::Number(a), JsonValue::Number(b)) => a == b,
            (JsonValue::String(a), JsonValue::String(b)) => a == b,
            (JsonValue::Array(a), JsonValue::Array(b)) => a == b,
            (JsonValue::Object(a), JsonValue::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl JsonValue {
    /// The member `key` of an object; `None` for other values.
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(o) => o.get(key),
            _ => None,
        }
    }

    /// Moves the member `key` out of an object, leaving `null` in its place;
    /// `None` for other values or a missing member.
    pub fn take(&mut self, key: &str) -> Option<JsonValue> {
        match self {
            JsonValue::Object(o) => {
                o.0.iter_mut()
                    .find(|(k, _)| &**k == key)
                    .map(|(_, v)| std::mem::take(v))
            }
            _ => None,
        }
    }

    /// Element `index` of an array; `None` for other values.
    pub fn get_index(&self, index: usize) -> Option<&JsonValue> {
        match self {
            JsonValue::Array(a) => a.get(index),
            _ => None,
        }
    }

    /// RFC 6901 JSON pointer lookup (`/status/containerStatuses/0/ready`),
    /// like `serde_json::Value::pointer`.
    pub fn pointer(&self, pointer: &str) -> Option<&JsonValue> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut target = self;
        for token in rest.split('/') {
            let token: std::borrow::Cow<str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            target = match target {
                JsonValue::Object(o) => o.get(&token)?,
                JsonValue::Array(a) => {
                    if token.len() > 1 && token.starts_with('0') || token.starts_with('+') {
                        return None;
                    }
                    a.get(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(target)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsonValue::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            JsonValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            JsonValue::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            JsonValue::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            JsonValue::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&JsonObject> {
        match self {
            JsonValue::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, JsonValue::Null)
    }

    pub fn is_object(&self) -> bool {
        matches!(self, JsonValue::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, JsonValue::Array(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, JsonValue::String(_))
    }

    /// The same value as a `serde_json::Value` (a deep copy).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            JsonValue::Null => serde_json::Value::Null,
            JsonValue::Bool(b) => serde_json::Value::Bool(*b),
            JsonValue::Number(n) => serde_json::Value::Number(n.to_number()),
            JsonValue::String(s) => serde_json::Value::String(s.to_string()),
            JsonValue::Array(a) => serde_json::Value::Array(a.iter().map(Self::to_json).collect()),
            JsonValue::Object(o) => serde_json::Value::Object(
                o.iter().map(|(k, v)| (k.to_owned(), v.to_json())).collect(),
            ),
        }
    }

    /// Heap bytes this value holds: every allocation (strings, member and
    /// element slices) rounded up to the allocator's 8-byte granule plus one
    /// word of header, as dlmalloc (wasm) and glibc both keep. What history
    /// retention charges, so its byte budget bounds real memory.
    pub fn held_bytes(&self) -> usize {
        match self {
            JsonValue::Null | JsonValue::Bool(_) | JsonValue::Number(_) => 0,
            JsonValue::String(s) => s.held_bytes(),
            JsonValue::Array(a) => {
                allocation(std::mem::size_of_val::<[JsonValue]>(a))
                    + a.iter().map(JsonValue::held_bytes).sum::<usize>()
            }
            JsonValue::Object(o) => {
                allocation(std::mem::size_of_val::<[(JsonStr, JsonValue)]>(&o.0))
                    + o.0
                        .iter()
                        .map(|(k, v)| k.held_bytes() + v.held_bytes())
                        .sum::<usize>()
            }
        }
    }
}

/// What one heap allocation of `len` bytes occupies (0 for none).
pub(crate) fn allocation(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (len + 8).div_ceil(8) * 8
    }
}

impl From<serde_json::Value> for JsonValue {
    fn from(value: serde_json::Value) -> JsonValue {
        match value {
            serde_json::Value::Null => JsonValue::Null,
            serde_json::Value::Bool(b) => JsonValue::Bool(b),
            serde_json::Value::Number(n) => JsonValue::Number(JsonNumber::from_number(&n)),
            serde_json::Value::String(s) => JsonValue::String(JsonStr::from_string(s)),
            serde_json::Value::Array(a) => {
                JsonValue::Array(a.into_iter().map(JsonValue::from).collect())
            }
            serde_json::Value::Object(m) => JsonValue::Object(JsonObject(
                m.into_iter()
                    .map(|(k, v)| (JsonStr::from_string(k), JsonValue::from(v)))
                    .collect(),
            )),
        }
    }
}

impl From<&serde_json::Value> for JsonValue {
    fn from(value: &serde_json::Value) -> JsonValue {
        JsonValue::from(value.clone())
    }
}

impl PartialEq<serde_json::Value> for JsonValue {
    fn eq(&self, other: &serde_json::Value) -> bool {
        match (self, other) {
            (JsonValue::Null, serde_json::Value::Null) => true,
            (JsonValue::Bool(a), serde_json::Value::Bool(b)) => a == b,
            (JsonValue::Number(a), serde_json::Value::Number(b)) => a == b,
            (JsonValue::String(a), serde_json::Value::String(b)) => **a == **b,
            (JsonValue::Array(a), serde_json::Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
            (JsonValue::Object(a), serde_json::Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

impl std::ops::Index<&str> for JsonValue {
    type Output = JsonValue;
    /// The member `key`, or `Null` when there is none (like `serde_json`).
    fn index(&self, key: &str) -> &JsonValue {
        self.get(key).unwrap_or(&NULL)
    }
}

impl std::ops::Index<usize> for JsonValue {
    type Output = JsonValue;
    /// Element `index`, or `Null` when there is none (like `serde_json`).
    fn index(&self, index: usize) -> &JsonValue {
        self.get_index(index).unwrap_or(&NULL)
    }
}

impl fmt::Display for JsonValue {
    /// Compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for JsonValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonValue::Null => serializer.serialize_unit(),
            JsonValue::Bool(b) => serializer.serialize_bool(*b),
            JsonValue::Number(n) => n.serialize(serializer),
            JsonValue::String(s) => serializer.serialize_str(s),
            JsonValue::Array(a) => {
                let mut seq = serializer.serialize_seq(Some(a.len()))?;
                for v in a.iter() {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            JsonValue::Object(o) => o.serialize(serializer),
        }
    }
}

impl Serialize for JsonObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = JsonValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<JsonValue, E> {
        Ok(JsonValue::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<JsonValue, E> {
        Ok(JsonValue::Number(JsonNumber::from_i64(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<JsonValue, E> {
        Ok(JsonValue::Number(JsonNumber::from_u64(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<JsonValue, E> {
        // serde_json never produces a non-finite number; map one to null as it does
        Ok(JsonNumber::from_f64(v).map_or(JsonValue::Null, JsonValue::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<JsonValue, E> {
        Ok(JsonValue::String(JsonStr::new(v)))
    }

    fn visit_string<E>(self, v: String) -> Result<JsonValue, E> {
        Ok(JsonValue::String(JsonStr::from_string(v)))
    }

    fn visit_none<E>(self) -> Result<JsonValue, E> {
        Ok(JsonValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<JsonValue, D::Error> {
        JsonValue::deserialize(d)
    }

    fn visit_unit<E>(self) -> Result<JsonValue, E> {
        Ok(JsonValue::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsonValue, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element::<JsonValue>()? {
            items.push(v);
        }
        Ok(JsonValue::Array(items.into_boxed_slice()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonValue, A::Error> {
        // most Kubernetes maps are small: one allocation, shrunk in place
        let mut members: Vec<(JsonStr, JsonValue)> =
            Vec::with_capacity(map.size_hint().unwrap_or(8).min(4096));
        while let Some(key) = map.next_key::<KeyBox>()? {
            let value = map.next_value::<JsonValue>()?;
            members.push((key.0, value));
        }
        Ok(JsonValue::Object(JsonObject::from_members(members)))
    }
}

/// A map key deserialized straight into a [`JsonStr`] (borrowing the input
/// when it has no escapes, so no intermediate `String`).
struct KeyBox(JsonStr);

impl<'de> Deserialize<'de> for KeyBox {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyBox, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = KeyBox;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyBox, E> {
                Ok(KeyBox(JsonStr::new(v)))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyBox, E> {
                Ok(KeyBox(JsonStr::from_string(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonValue, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_is_three_words() {
        // 24 bytes natively, 12 in wasm32 (where a word is 4 bytes)
        assert!(std::mem::size_of::<JsonValue>() <= 3 * std::mem::size_of::<usize>());
        assert!(std::mem::align_of::<JsonValue>() <= std::mem::align_of::<usize>());
    }

    #[test]
    fn strings_of_every_length_read_back_whole() {
        for len in 0..=3 * INLINE_STR {
            for fill in ["a", "é", "\u{1F600}", "\""] {
                let text: String = fill.repeat(len).chars().take(len).collect();
                let json = serde_json::to_string(&text).unwrap();
                let ours: JsonValue = serde_json::from_str(&json).unwrap();
                assert_eq!(ours.as_str(), Some(text.as_str()), "{len} × {fill:?}");
                assert_eq!(serde_json::to_string(&ours).unwrap(), json);
                let reference = serde_json::Value::String(text.clone());
                assert_eq!(JsonValue::from(reference.clone()), ours);
                assert!(ours == reference);
                assert_eq!(ours.to_json(), reference);
                let inline = text.len() <= INLINE_STR;
                assert_eq!(
                    ours.held_bytes() == 0,
                    inline || text.is_empty(),
                    "{len} × {fill:?}"
                );
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
            assert_eq!(ours.as_u64(), reference.as_u64(), "{text} as_u64");
            assert_eq!(ours.as_i64(), reference.as_i64(), "{text} as_i64");
            assert_eq!(ours.as_f64(), reference.as_f64(), "{text} as_f64");
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
        assert_eq!(JsonNumber::from_i64(5), JsonNumber::from_u64(5));
        assert!(JsonNumber::from_f64(f64::NAN).is_none());
        assert!(JsonNumber::from_f64(f64::INFINITY).is_none());
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
                v.pointer(p).map(JsonValue::to_json),
                reference.pointer(p).cloned(),
                "pointer {p:?}"
            );
        }
        assert_eq!(v["metadata"]["name"].as_str(), Some("a"));
        assert!(v["nope"]["deeper"].is_null());
        assert_eq!(v["spec"]["list"][0]["x"].as_i64(), Some(-1));
        assert_eq!(v["spec"]["replicas"].as_u64(), Some(3));
        assert_eq!(v["spec"]["list"].as_array().map(<[_]>::len), Some(2));
        assert_eq!(
            v["metadata"]["labels"]
                .as_object()
                .map(|o| o.iter().map(|(k, v)| (k, v.as_str())).collect::<Vec<_>>()),
            Some(vec![("app", Some("web"))])
        );
    }

    #[test]
    fn repeated_keys_keep_the_last_value_like_serde_json() {
        let text = r#"{"a":1,"b":2,"a":3}"#;
        let v: JsonValue = serde_json::from_str(text).unwrap();
        let reference: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(v.to_json(), reference);
        assert_eq!(v.as_object().map(JsonObject::len), Some(2));
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

    #[test]
    fn invalid_json_is_an_error() {
        assert!(serde_json::from_str::<JsonValue>("{\"a\":").is_err());
        assert!(serde_json::from_str::<JsonValue>("{1:2}").is_err());
    }
}
