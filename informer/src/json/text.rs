//! A compact document written as JSON text straight from its tape, byte for
//! byte what `serde_json::to_writer` writes for the same value (same
//! escapes, same number forms), without going through `Serialize`.
//!
//! This is what the history store does for every version it reads back
//! (a 4 KiB Pod many thousand times for a window of history), and the
//! generic path — a `Serializer` call per value, each string escaped a
//! character class at a time — was a third of that. Here runs of bytes that
//! need no escape are copied whole.

use super::tape::{JsonKind, JsonNumber, JsonRef, JsonValue};

impl JsonValue {
    /// Appends the document's compact JSON text to `out`.
    pub fn write_text(&self, out: &mut Vec<u8>) {
        self.root().write_text(out);
    }
}

impl JsonRef<'_> {
    /// Appends the value's compact JSON text to `out`.
    pub fn write_text(self, out: &mut Vec<u8>) {
        match self.kind() {
            JsonKind::Null => out.extend_from_slice(b"null"),
            JsonKind::Bool(true) => out.extend_from_slice(b"true"),
            JsonKind::Bool(false) => out.extend_from_slice(b"false"),
            JsonKind::Number(number) => write_number(number, out),
            JsonKind::String(text) => write_string(text, out),
            JsonKind::Array(array) => {
                out.push(b'[');
                for (index, element) in array.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    element.write_text(out);
                }
                out.push(b']');
            }
            JsonKind::Object(object) => {
                out.push(b'{');
                for (index, (key, value)) in object.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write_string(key, out);
                    out.push(b':');
                    value.write_text(out);
                }
                out.push(b'}');
            }
        }
    }
}

fn write_number(number: JsonNumber, out: &mut Vec<u8>) {
    match number {
        JsonNumber::PosInt(n) => write_decimal(n, false, out),
        JsonNumber::NegInt(n) => write_decimal(n.unsigned_abs(), n < 0, out),
        // Floats are rare in Kubernetes objects: serde_json's own form.
        JsonNumber::Float(f) => {
            let _ = serde_json::to_writer(out, &f);
        }
    }
}

fn write_decimal(mut n: u64, negative: bool, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// A JSON string with serde_json's escapes: `\"`, `\\`, `\b`, `\f`, `\n`,
/// `\r`, `\t`, and `\u00XX` (lowercase hex) for the other control bytes.
fn write_string(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0C => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..at]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xF)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn text_of(value: &Value) -> String {
        let mut out = Vec::new();
        JsonValue::from(value).write_text(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_numbers_and_nesting_as_serde_json_writes_them() {
        let value = json!({"s": "a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}/é😀", "n": [0, 7, -1,
            u64::MAX, i64::MIN, 1.5, -0.25, 1e300], "e": {}, "a": [], "z": null, "t": true, "f": false});
        assert_eq!(text_of(&value), value.to_string());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_text_is_serde_jsons(value in json_value()) {
            prop_assert_eq!(text_of(&value), value.to_string());
        }
    }
}
