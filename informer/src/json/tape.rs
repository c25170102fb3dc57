//! The compact form's vocabulary: the tag bytes and the types every part of
//! `json` shares — the owned [`JsonValue`], the [`JsonRef`] view of one value
//! in it, [`JsonKind`] to match on, [`JsonNumber`], and the [`JsonObject`] /
//! [`JsonArray`] views of a container's body. It defines them and nothing
//! else, so the readers (`read`), the writers (`write`, `parse`), the check
//! (`check`) and the comparisons (`compare`) all depend on it and not on
//! each other's files.

use std::sync::Arc;

use serde_json::Number;

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
    /// 8 bytes address, 8 bytes length, little-endian: a subtree held once
    /// for many documents (`shared`); never in a stored tape
    pub const SHARED: u8 = 0x09;
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
    pub(super) tape: Box<[u8]>,
    /// The buffers the tape's `SHARED` values name (`shared`'s rule: held
    /// as long as the tape is); empty for most documents.
    pub(super) shared: Box<[Arc<[u8]>]>,
}

impl JsonValue {
    /// The document whose tape is `tape`, which names no shared subtree.
    pub(super) fn plain(tape: Box<[u8]>) -> JsonValue {
        JsonValue {
            tape,
            shared: Box::default(),
        }
    }
}

impl Default for JsonValue {
    /// `null`.
    fn default() -> JsonValue {
        JsonValue::plain(Box::new([tag::NULL]))
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

    pub(super) fn from_number(n: &Number) -> Option<JsonNumber> {
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
    pub(super) body: &'a [u8],
}

/// One member of an object as the document holds it
/// ([`JsonObject::differing_members`]).
#[derive(Clone, Copy)]
pub struct EncodedMember<'a> {
    /// The key, a string value.
    pub key: JsonRef<'a>,
    pub value: JsonRef<'a>,
    /// Key and value together, as encoded.
    pub bytes: &'a [u8],
}

/// The elements of an array.
#[derive(Clone, Copy)]
pub struct JsonArray<'a> {
    pub(super) body: &'a [u8],
}
