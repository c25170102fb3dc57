//! [`JsonValue`]: the compact, read-only JSON document the informer holds
//! every object in, and [`JsonRef`], a view of one value inside it.
//!
//! A document is one exactly-sized byte buffer in a private tagged format,
//! written while `serde_json` parses (no tree of allocations, nothing to walk
//! when it is freed):
//! - each value starts with a tag byte; `null`, `false`, `true` are the tag
//!   alone;
//! - integers are a LEB128 varint (negative ones stored as `-1 - n`), floats
//!   their 8 bytes;
//! - a string of up to 127 bytes is a tag holding its length and the bytes;
//!   a longer one a tag, a varint length and the bytes; one of the strings
//!   every object repeats ([`super::well_known`]: `name`, `True`,
//!   `lastTransitionTime`, …) is one or two bytes;
//! - an array or object is a tag, the varint byte length of its body (so a
//!   reader skips it in one step) and its elements, or its members as key
//!   string then value, in the order the server sent them (a repeated key
//!   keeps its last value at its first position, as `serde_json` does).
//!
//! A realistic Pod takes about 0.4× its JSON text (the tree of boxed slices
//! this replaced took about 1.5× in wasm32). Lookups by key scan the members,
//! skipping each value by its length, which is as fast as the tree for the
//! handful of keys a Kubernetes map has.
//!
//! The read API mirrors `serde_json::Value` (`get`, `pointer`, `as_str`,
//! `as_array`, `as_u64`, …) on [`JsonRef`]; [`JsonRef::kind`] gives an enum to
//! match on, and [`JsonValue::to_json`] a `serde_json::Value` for the rare
//! callers that need one (diffs, pretty printing).
//!
//! [`JsonValue::compact_bytes`] is the tape itself, to store; a stored tape
//! comes back through [`JsonValue::from_compact`], which accepts it only
//! when every reader here can read it ([`super::json_check`]).

use std::cell::RefCell;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Number;

use super::json_check::{self, CompactError};
use super::well_known;

/// Tag bytes of the compact form.
pub(crate) mod tag {
    pub const NULL: u8 = 0x00;
    pub const FALSE: u8 = 0x01;
    pub const TRUE: u8 = 0x02;
    /// varint
    pub const UINT: u8 = 0x03;
    /// varint of `-1 - n`
    pub const NEG_INT: u8 = 0x04;
    /// 8 bytes, little-endian `f64` bits
    pub const FLOAT: u8 = 0x05;
    /// varint body length, body
    pub const ARRAY: u8 = 0x06;
    /// varint body length, body
    pub const OBJECT: u8 = 0x07;
    /// varint length, bytes
    pub const LONG_STR: u8 = 0x08;
    /// `0x10 | id >> 8`, then `id & 0xFF`: a well-known string
    pub const KNOWN_STR: u8 = 0x10;
    pub const KNOWN_STR_END: u8 = 0x17;
    /// `0x40 | id`: one of the first 64 well-known strings
    pub const FREQUENT_STR: u8 = 0x40;
    /// `0x80 | len`, bytes: a string of up to 127 bytes
    pub const SHORT_STR: u8 = 0x80;
}

/// An owned JSON document in compact form.
#[derive(Clone)]
pub struct JsonValue {
    tape: Box<[u8]>,
}

impl Default for JsonValue {
    /// `null`.
    fn default() -> JsonValue {
        JsonValue {
            tape: Box::new([tag::NULL]),
        }
    }
}

/// A view of one value inside a [`JsonValue`].
#[derive(Clone, Copy)]
pub struct JsonRef<'a> {
    /// Exactly the value's encoding.
    pub(crate) bytes: &'a [u8],
}

/// What a value is, to match on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JsonKind<'a> {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(&'a str),
    Array(JsonArray<'a>),
    Object(JsonObject<'a>),
}

/// A JSON number as `serde_json` reads one: a non-negative integer, a
/// negative integer or a finite float (an integer and a float are different
/// numbers, as there).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JsonNumber {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl JsonNumber {
    pub fn as_u64(self) -> Option<u64> {
        match self {
            JsonNumber::PosInt(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        match self {
            JsonNumber::PosInt(n) => i64::try_from(n).ok(),
            JsonNumber::NegInt(n) => Some(n),
            JsonNumber::Float(_) => None,
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            JsonNumber::PosInt(n) => n as f64,
            JsonNumber::NegInt(n) => n as f64,
            JsonNumber::Float(f) => f,
        }
    }

    /// The same number as a `serde_json::Number`.
    pub fn to_number(self) -> Number {
        match self {
            JsonNumber::PosInt(n) => Number::from(n),
            JsonNumber::NegInt(n) => Number::from(n),
            JsonNumber::Float(f) => Number::from_f64(f).unwrap_or_else(|| Number::from(0u64)),
        }
    }

    fn from_number(n: &Number) -> Option<JsonNumber> {
        if let Some(u) = n.as_u64() {
            Some(JsonNumber::PosInt(u))
        } else if let Some(i) = n.as_i64() {
            Some(JsonNumber::NegInt(i))
        } else {
            n.as_f64().map(JsonNumber::Float)
        }
    }
}

/// The members of an object, in the order they were received.
#[derive(Clone, Copy)]
pub struct JsonObject<'a> {
    body: &'a [u8],
}

/// The elements of an array.
#[derive(Clone, Copy)]
pub struct JsonArray<'a> {
    body: &'a [u8],
}

// ---------------------------------------------------------------- reading

fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Length of a varint-prefixed payload: (header length incl. tag, payload length).
fn prefixed(bytes: &[u8]) -> Option<(usize, usize)> {
    let (len, n) = read_varint(bytes.get(1..)?)?;
    Some((1 + n, usize::try_from(len).ok()?))
}

/// Total encoded length of the value that starts `bytes`.
fn value_len(bytes: &[u8]) -> Option<usize> {
    let t = *bytes.first()?;
    let len = match t {
        tag::NULL | tag::FALSE | tag::TRUE => 1,
        tag::UINT | tag::NEG_INT => 1 + read_varint(bytes.get(1..)?)?.1,
        tag::FLOAT => 9,
        tag::ARRAY | tag::OBJECT | tag::LONG_STR => {
            let (head, body) = prefixed(bytes)?;
            head.checked_add(body)?
        }
        tag::KNOWN_STR..=tag::KNOWN_STR_END => 2,
        tag::FREQUENT_STR..=0x7F => 1,
        tag::SHORT_STR..=0xFF => 1 + usize::from(t & 0x7F),
        _ => return None,
    };
    (len <= bytes.len()).then_some(len)
}

/// Splits the first value off `bytes`.
fn split_value(bytes: &[u8]) -> Option<(JsonRef<'_>, &[u8])> {
    let len = value_len(bytes)?;
    let (value, rest) = bytes.split_at(len);
    Some((JsonRef { bytes: value }, rest))
}

/// The text of a string value: its bytes in the tape, or a well-known
/// string.
enum StrText<'a> {
    Bytes(&'a [u8]),
    Known(&'static str),
}

fn str_text(bytes: &[u8]) -> Option<StrText<'_>> {
    let t = *bytes.first()?;
    match t {
        tag::SHORT_STR..=0xFF => {
            let len = usize::from(t & 0x7F);
            bytes.get(1..1 + len).map(StrText::Bytes)
        }
        tag::FREQUENT_STR..=0x7F => well_known::by_id(u16::from(t & 0x3F)).map(StrText::Known),
        tag::KNOWN_STR..=tag::KNOWN_STR_END => {
            let id = (u16::from(t & 0x07) << 8) | u16::from(*bytes.get(1)?);
            well_known::by_id(id).map(StrText::Known)
        }
        tag::LONG_STR => {
            let (head, len) = prefixed(bytes)?;
            bytes.get(head..head.checked_add(len)?).map(StrText::Bytes)
        }
        _ => None,
    }
}

fn is_str_tag(t: u8) -> bool {
    matches!(t, tag::SHORT_STR..=0xFF | tag::FREQUENT_STR..=0x7F | tag::KNOWN_STR..=tag::KNOWN_STR_END | tag::LONG_STR)
}

/// Does the string value at the start of `bytes` read `text`?
fn str_equals(bytes: &[u8], text: &[u8]) -> bool {
    match str_text(bytes) {
        Some(StrText::Bytes(b)) => b == text,
        Some(StrText::Known(k)) => k.as_bytes() == text,
        None => false,
    }
}

/// Iterates the (key, value) members of an object body.
struct Members<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Members<'a> {
    type Item = (JsonRef<'a>, JsonRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, rest) = split_value(self.rest)?;
        let (value, rest) = split_value(rest)?;
        self.rest = rest;
        Some((key, value))
    }
}

/// Iterates the elements of an array body.
pub struct Elements<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Elements<'a> {
    type Item = JsonRef<'a>;

    fn next(&mut self) -> Option<JsonRef<'a>> {
        let (value, rest) = split_value(self.rest)?;
        self.rest = rest;
        Some(value)
    }
}

static NULL_TAPE: [u8; 1] = [tag::NULL];

impl<'a> JsonRef<'a> {
    /// A `null` that belongs to no document.
    pub fn null() -> JsonRef<'static> {
        JsonRef { bytes: &NULL_TAPE }
    }

    /// What this value is.
    pub fn kind(self) -> JsonKind<'a> {
        let Some(&t) = self.bytes.first() else {
            return JsonKind::Null;
        };
        match t {
            tag::FALSE => JsonKind::Bool(false),
            tag::TRUE => JsonKind::Bool(true),
            tag::UINT => match read_varint(&self.bytes[1..]) {
                Some((n, _)) => JsonKind::Number(JsonNumber::PosInt(n)),
                None => JsonKind::Null,
            },
            tag::NEG_INT => match read_varint(&self.bytes[1..]) {
                Some((n, _)) => JsonKind::Number(JsonNumber::NegInt(-1 - n as i64)),
                None => JsonKind::Null,
            },
            tag::FLOAT => match self
                .bytes
                .get(1..9)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
            {
                Some(b) => JsonKind::Number(JsonNumber::Float(f64::from_le_bytes(b))),
                None => JsonKind::Null,
            },
            tag::ARRAY => JsonKind::Array(JsonArray { body: self.body() }),
            tag::OBJECT => JsonKind::Object(JsonObject { body: self.body() }),
            _ if is_str_tag(t) => match self.as_str() {
                Some(s) => JsonKind::String(s),
                None => JsonKind::Null,
            },
            _ => JsonKind::Null,
        }
    }

    fn body(self) -> &'a [u8] {
        prefixed(self.bytes)
            .and_then(|(head, len)| self.bytes.get(head..head.checked_add(len)?))
            .unwrap_or_default()
    }

    fn tag(self) -> u8 {
        self.bytes.first().copied().unwrap_or(tag::NULL)
    }

    /// The member `key` of an object; `None` for other values.
    pub fn get(self, key: &str) -> Option<JsonRef<'a>> {
        self.as_object()?.get(key)
    }

    /// Element `index` of an array; `None` for other values.
    pub fn get_index(self, index: usize) -> Option<JsonRef<'a>> {
        self.as_array()?.get(index)
    }

    /// RFC 6901 JSON pointer lookup (`/status/containerStatuses/0/ready`),
    /// like `serde_json::Value::pointer`.
    pub fn pointer(self, pointer: &str) -> Option<JsonRef<'a>> {
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
            target = match target.tag() {
                tag::OBJECT => target.get(&token)?,
                tag::ARRAY => {
                    if token.len() > 1 && token.starts_with('0') || token.starts_with('+') {
                        return None;
                    }
                    target.get_index(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(target)
    }

    /// The text of a string value.
    pub fn as_str(self) -> Option<&'a str> {
        match str_text(self.bytes)? {
            StrText::Bytes(b) => std::str::from_utf8(b).ok(),
            StrText::Known(k) => Some(k),
        }
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.tag() {
            tag::TRUE => Some(true),
            tag::FALSE => Some(false),
            _ => None,
        }
    }

    pub fn as_number(self) -> Option<JsonNumber> {
        match self.kind() {
            JsonKind::Number(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_u64(self) -> Option<u64> {
        self.as_number()?.as_u64()
    }

    pub fn as_i64(self) -> Option<i64> {
        self.as_number()?.as_i64()
    }

    pub fn as_f64(self) -> Option<f64> {
        self.as_number().map(JsonNumber::as_f64)
    }

    pub fn as_array(self) -> Option<JsonArray<'a>> {
        (self.tag() == tag::ARRAY).then(|| JsonArray { body: self.body() })
    }

    pub fn as_object(self) -> Option<JsonObject<'a>> {
        (self.tag() == tag::OBJECT).then(|| JsonObject { body: self.body() })
    }

    pub fn is_null(self) -> bool {
        self.tag() == tag::NULL
    }

    pub fn is_object(self) -> bool {
        self.tag() == tag::OBJECT
    }

    pub fn is_array(self) -> bool {
        self.tag() == tag::ARRAY
    }

    pub fn is_string(self) -> bool {
        is_str_tag(self.tag())
    }

    /// The same value as a `serde_json::Value` (a deep copy).
    pub fn to_json(self) -> serde_json::Value {
        match self.kind() {
            JsonKind::Null => serde_json::Value::Null,
            JsonKind::Bool(b) => serde_json::Value::Bool(b),
            JsonKind::Number(n) => serde_json::Value::Number(n.to_number()),
            JsonKind::String(s) => serde_json::Value::String(s.to_owned()),
            JsonKind::Array(a) => serde_json::Value::Array(a.iter().map(Self::to_json).collect()),
            JsonKind::Object(o) => serde_json::Value::Object(
                o.iter().map(|(k, v)| (k.to_owned(), v.to_json())).collect(),
            ),
        }
    }

    /// A document of its own holding a copy of this value.
    pub fn to_owned_value(self) -> JsonValue {
        JsonValue {
            tape: self.bytes.into(),
        }
    }
}

impl<'a> JsonObject<'a> {
    /// The member named `key`.
    pub fn get(self, key: &str) -> Option<JsonRef<'a>> {
        let key = key.as_bytes();
        Members { rest: self.body }
            .find(|(k, _)| str_equals(k.bytes, key))
            .map(|(_, v)| v)
    }

    pub fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(self) -> usize {
        Members { rest: self.body }.count()
    }

    pub fn is_empty(self) -> bool {
        self.body.is_empty()
    }

    /// Members in the order they were received.
    pub fn iter(self) -> impl Iterator<Item = (&'a str, JsonRef<'a>)> {
        Members { rest: self.body }.map(|(k, v)| (k.as_str().unwrap_or_default(), v))
    }

    pub fn keys(self) -> impl Iterator<Item = &'a str> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(self) -> impl Iterator<Item = JsonRef<'a>> {
        Members { rest: self.body }.map(|(_, v)| v)
    }
}

impl<'a> JsonArray<'a> {
    pub fn iter(self) -> Elements<'a> {
        Elements { rest: self.body }
    }

    pub fn get(self, index: usize) -> Option<JsonRef<'a>> {
        self.iter().nth(index)
    }

    pub fn len(self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(self) -> bool {
        self.body.is_empty()
    }
}

impl<'a> IntoIterator for JsonArray<'a> {
    type Item = JsonRef<'a>;
    type IntoIter = Elements<'a>;

    fn into_iter(self) -> Elements<'a> {
        self.iter()
    }
}

// ---------------------------------------------------------------- writing

/// The LEB128 bytes of `value`: a buffer and how many of its bytes are used.
fn varint_bytes(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut used = 0;
    while value >= 0x80 {
        bytes[used] = (value as u8 & 0x7F) | 0x80;
        value >>= 7;
        used += 1;
    }
    bytes[used] = value as u8;
    (bytes, used + 1)
}

fn write_varint(out: &mut Vec<u8>, value: u64) {
    let (bytes, used) = varint_bytes(value);
    out.extend_from_slice(&bytes[..used]);
}

pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    write_utf8(out, text.as_bytes());
}

/// [`write_str`] of bytes the caller knows are UTF-8.
pub(crate) fn write_utf8(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() >= 2 {
        if let Some(id) = well_known::id_of(bytes) {
            if id < well_known::ONE_BYTE_IDS {
                out.push(tag::FREQUENT_STR | id as u8);
            } else {
                out.push(tag::KNOWN_STR | (id >> 8) as u8);
                out.push(id as u8);
            }
            return;
        }
    }
    if bytes.len() <= 0x7F {
        out.push(tag::SHORT_STR | bytes.len() as u8);
    } else {
        out.push(tag::LONG_STR);
        write_varint(out, bytes.len() as u64);
    }
    out.extend_from_slice(bytes);
}

pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    out.push(tag::UINT);
    write_varint(out, n);
}

pub(crate) fn write_i64(out: &mut Vec<u8>, n: i64) {
    match u64::try_from(n) {
        Ok(n) => write_u64(out, n),
        Err(_) => {
            out.push(tag::NEG_INT);
            // -1 - n is in 0..=i64::MAX for negative n
            write_varint(out, (-1 - n) as u64);
        }
    }
}

pub(crate) fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_finite() {
        out.push(tag::FLOAT);
        out.extend_from_slice(&f.to_le_bytes());
    } else {
        // serde_json never produces one; map it to null as it does
        out.push(tag::NULL);
    }
}

/// Opens an array or object: its tag and a one-byte length placeholder.
pub(crate) fn open_container(out: &mut Vec<u8>, container: u8) -> usize {
    out.push(container);
    out.push(0);
    out.len() - 1
}

/// Writes the body length of the container opened at `len_at`, widening
/// the placeholder when the length needs more than one byte.
pub(crate) fn close_container(out: &mut Vec<u8>, len_at: usize) {
    let body = (out.len() - len_at - 1) as u64;
    if body < 0x80 {
        out[len_at] = body as u8;
        return;
    }
    let (len, used) = varint_bytes(body);
    out.splice(len_at..len_at + 1, len[..used].iter().copied());
}

/// Makes the object body starting at `body_start` hold each key once, keeping
/// the last value at the position of the key's first occurrence.
pub(crate) fn dedup_members(out: &mut Vec<u8>, body_start: usize, count: usize) {
    if count < 2 || !has_repeated_key(&out[body_start..], count) {
        return;
    }
    let mut kept: Vec<(&[u8], &[u8])> = Vec::with_capacity(count);
    for (k, v) in (Members {
        rest: &out[body_start..],
    }) {
        match kept.iter_mut().find(|(seen, _)| *seen == k.bytes) {
            Some(slot) => slot.1 = v.bytes,
            None => kept.push((k.bytes, v.bytes)),
        }
    }
    let rebuilt: Vec<u8> = kept
        .iter()
        .flat_map(|(k, v)| k.iter().chain(v.iter()))
        .copied()
        .collect();
    out.truncate(body_start);
    out.extend_from_slice(&rebuilt);
}

/// Does a key occur twice in this object body? (A string always has the same
/// encoding, so encoded keys compare as the strings do.) Without allocating
/// for the small maps Kubernetes objects are made of.
fn has_repeated_key(body: &[u8], count: usize) -> bool {
    const SMALL: usize = 16;
    if count <= SMALL {
        let mut keys: [&[u8]; SMALL] = [&[]; SMALL];
        for (i, (key, _)) in (Members { rest: body }).enumerate().take(SMALL) {
            if keys[..i].contains(&key.bytes) {
                return true;
            }
            keys[i] = key.bytes;
        }
        false
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        (Members { rest: body }).any(|(key, _)| !seen.insert(key.bytes))
    }
}

/// Writes one value into the tape as the deserializer produces it.
struct ValueWriter<'b>(&'b mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for ValueWriter<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueWriter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(if v { tag::TRUE } else { tag::FALSE });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        write_i64(self.0, v);
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        write_u64(self.0, v);
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        write_f64(self.0, v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write_str(self.0, v);
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.0.push(tag::NULL);
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(tag::NULL);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        let len_at = open_container(out, tag::ARRAY);
        while seq.next_element_seed(ValueWriter(&mut *out))?.is_some() {}
        close_container(out, len_at);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        let len_at = open_container(out, tag::OBJECT);
        let mut count = 0;
        while map.next_key_seed(KeyWriter(&mut *out))?.is_some() {
            map.next_value_seed(ValueWriter(&mut *out))?;
            count += 1;
        }
        dedup_members(out, len_at + 1, count);
        close_container(out, len_at);
        Ok(())
    }
}

/// Writes a map key (borrowed from the input when it has no escapes).
struct KeyWriter<'b>(&'b mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for KeyWriter<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyWriter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write_str(self.0, v);
        Ok(())
    }
}

thread_local! {
    /// Where a document is written before it is copied into its exact-size
    /// allocation; kept between documents so parsing allocates once per
    /// object.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl JsonValue {
    /// The document's root value.
    pub fn root(&self) -> JsonRef<'_> {
        JsonRef { bytes: &self.tape }
    }

    /// The member `key` of the root object.
    pub fn get(&self, key: &str) -> Option<JsonRef<'_>> {
        self.root().get(key)
    }

    /// [`JsonRef::pointer`] from the root.
    pub fn pointer(&self, pointer: &str) -> Option<JsonRef<'_>> {
        self.root().pointer(pointer)
    }

    pub fn is_null(&self) -> bool {
        self.root().is_null()
    }

    /// The same value as a `serde_json::Value` (a deep copy).
    pub fn to_json(&self) -> serde_json::Value {
        self.root().to_json()
    }

    /// Bytes of the compact form (what [`JsonValue::held_bytes`] charges
    /// besides the allocation's header).
    pub fn compact_len(&self) -> usize {
        self.tape.len()
    }

    /// Heap bytes this value holds: its one allocation rounded up to the
    /// allocator's 8-byte granule plus one word of header, as dlmalloc (wasm)
    /// and glibc both keep. What history retention charges, so its byte
    /// budget bounds real memory.
    pub fn held_bytes(&self) -> usize {
        allocation(self.tape.len())
    }

    /// The compact form, exactly as held: what to store, and what
    /// [`JsonValue::from_compact`] takes back (in a build whose
    /// [`well_known::fingerprint`] is the same).
    pub fn compact_bytes(&self) -> &[u8] {
        &self.tape
    }

    /// The document whose compact form is `tape`, if `tape` is exactly one
    /// well-formed value (see [`super::json_check`]); untrusted bytes (read
    /// back from storage) never make a reader panic once accepted.
    pub fn from_compact(tape: Box<[u8]>) -> Result<JsonValue, CompactError> {
        json_check::check(&tape)?;
        Ok(JsonValue { tape })
    }

    /// [`JsonValue::from_compact`] of a copy of `bytes` (copied only when
    /// they are accepted).
    pub fn from_compact_slice(bytes: &[u8]) -> Result<JsonValue, CompactError> {
        json_check::check(bytes)?;
        Ok(JsonValue { tape: bytes.into() })
    }

    /// An object of `members`, in order, each value copied as it is held
    /// (no re-encoding): a part of a document kept on its own. The keys
    /// must differ, as they do when taken from one object.
    pub fn object_of<'v>(members: impl IntoIterator<Item = (&'v str, JsonRef<'v>)>) -> JsonValue {
        let built = JsonValue::build(|out| {
            let len_at = open_container(out, tag::OBJECT);
            for (key, value) in members {
                write_str(out, key);
                out.extend_from_slice(value.bytes);
            }
            close_container(out, len_at);
            Ok::<(), std::convert::Infallible>(())
        });
        match built {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// Builds a document with `write` on the per-thread scratch buffer.
    pub(crate) fn build<E>(
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<JsonValue, E> {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut buffer) => {
                buffer.clear();
                write(&mut buffer)?;
                let tape: Box<[u8]> = buffer.as_slice().into();
                if buffer.capacity() > 1 << 20 {
                    // one huge object should not pin its size for the thread's life
                    *buffer = Vec::new();
                }
                Ok(JsonValue { tape })
            }
            Err(_) => {
                let mut buffer = Vec::new();
                write(&mut buffer)?;
                Ok(JsonValue {
                    tape: buffer.into_boxed_slice(),
                })
            }
        })
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
        JsonValue::from(&value)
    }
}

impl From<&serde_json::Value> for JsonValue {
    /// The same writer as parsing: a `serde_json::Value` is a deserializer.
    fn from(value: &serde_json::Value) -> JsonValue {
        JsonValue::deserialize(value).unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonValue, D::Error> {
        JsonValue::build(|out| ValueWriter(out).deserialize(d))
    }
}

// ------------------------------------------------------- comparing, printing

impl PartialEq for JsonRef<'_> {
    /// Structural equality; objects are equal when they have the same
    /// members in any order (like `serde_json::Map`).
    fn eq(&self, other: &JsonRef<'_>) -> bool {
        if self.bytes == other.bytes {
            return true;
        }
        match (self.kind(), other.kind()) {
            (JsonKind::Null, JsonKind::Null) => true,
            (JsonKind::Bool(a), JsonKind::Bool(b)) => a == b,
            (JsonKind::Number(a), JsonKind::Number(b)) => a == b,
            (JsonKind::String(a), JsonKind::String(b)) => a == b,
            (JsonKind::Array(a), JsonKind::Array(b)) => a == b,
            (JsonKind::Object(a), JsonKind::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for JsonArray<'_> {
    fn eq(&self, other: &JsonArray<'_>) -> bool {
        let (mut a, mut b) = (self.iter(), other.iter());
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if x == y => {}
                _ => return false,
            }
        }
    }
}

impl PartialEq for JsonObject<'_> {
    fn eq(&self, other: &JsonObject<'_>) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl PartialEq for JsonValue {
    fn eq(&self, other: &JsonValue) -> bool {
        self.root() == other.root()
    }
}

impl PartialEq<serde_json::Value> for JsonRef<'_> {
    fn eq(&self, other: &serde_json::Value) -> bool {
        match (self.kind(), other) {
            (JsonKind::Null, serde_json::Value::Null) => true,
            (JsonKind::Bool(a), serde_json::Value::Bool(b)) => a == *b,
            (JsonKind::Number(a), serde_json::Value::Number(b)) => {
                Some(a) == JsonNumber::from_number(b)
            }
            (JsonKind::String(a), serde_json::Value::String(b)) => a == b,
            (JsonKind::Array(a), serde_json::Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == *y)
            }
            (JsonKind::Object(a), serde_json::Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v == *w))
            }
            _ => false,
        }
    }
}

impl PartialEq<serde_json::Value> for JsonValue {
    fn eq(&self, other: &serde_json::Value) -> bool {
        self.root() == *other
    }
}

impl Serialize for JsonRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.kind() {
            JsonKind::Null => serializer.serialize_unit(),
            JsonKind::Bool(b) => serializer.serialize_bool(b),
            JsonKind::Number(JsonNumber::PosInt(n)) => serializer.serialize_u64(n),
            JsonKind::Number(JsonNumber::NegInt(n)) => serializer.serialize_i64(n),
            JsonKind::Number(JsonNumber::Float(f)) => serializer.serialize_f64(f),
            JsonKind::String(s) => serializer.serialize_str(s),
            JsonKind::Array(a) => {
                let mut seq = serializer.serialize_seq(None)?;
                for v in a.iter() {
                    seq.serialize_element(&v)?;
                }
                seq.end()
            }
            JsonKind::Object(o) => {
                let mut map = serializer.serialize_map(None)?;
                for (k, v) in o.iter() {
                    map.serialize_entry(k, &v)?;
                }
                map.end()
            }
        }
    }
}

impl Serialize for JsonValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.root().serialize(serializer)
    }
}

impl fmt::Display for JsonRef<'_> {
    /// Compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl fmt::Display for JsonValue {
    /// Compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.root(), f)
    }
}

impl fmt::Debug for JsonRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.root(), f)
    }
}

impl fmt::Debug for JsonObject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl fmt::Debug for JsonArray<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_is_one_allocation_smaller_than_its_text() {
        assert_eq!(
            std::mem::size_of::<JsonValue>(),
            2 * std::mem::size_of::<usize>()
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
        let v: JsonValue =
            serde_json::from_str(r#"{"a":[1,"xyz",{"b":null}],"c":"True"}"#).unwrap();
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
}
