//! Comparing and printing compact values: equality between them and with
//! `serde_json::Value`, `Serialize`, `Display` and `Debug`.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::tape::{JsonArray, JsonKind, JsonNumber, JsonObject, JsonRef, JsonValue};

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
        let mut text = Vec::with_capacity(self.bytes.len() * 2);
        self.write_text(&mut text);
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
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
