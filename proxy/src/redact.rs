//! Secret redaction: replaces the values of `data` and `stringData` by
//! `"<redacted: N bytes>"` (keeping the keys), blanks the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (it holds a
//! copy of the values), and marks each redacted object with the annotation
//! `deltascope.io/redacted: "true"`.
//!
//! It walks whatever JSON the apiserver sent for a `secrets` path — a Secret,
//! a list, a watch event, a Table whose rows carry objects, partial metadata —
//! so it does not need to know the shape in advance. Watch bodies go through
//! [`StreamRedactor`], which emits every complete JSON value as soon as its
//! closing line arrives and buffers nothing more than one value. Anything it
//! cannot parse is an error: redaction fails closed.

use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};

/// The annotation added to every object whose values were redacted.
pub const REDACTED_ANNOTATION: &str = "deltascope.io/redacted";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The largest single JSON value (one watch event, or a whole list) accepted.
pub const MAX_VALUE_BYTES: usize = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("the Secret response is not valid JSON ({0}); refusing to pass it through unredacted")]
    Json(#[from] serde_json::Error),
    #[error("a Secret response value exceeds {MAX_VALUE_BYTES} bytes; refusing to buffer it")]
    TooLarge,
    #[error("the Secret response ended in the middle of a JSON value")]
    Truncated,
}

/// Redacts every Secret-like object inside `value`; returns whether anything changed.
pub fn redact_value(value: &mut Value) -> bool {
    match value {
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= redact_value(item);
            }
            changed
        }
        Value::Object(map) => redact_object(map),
        _ => false,
    }
}

fn redact_object(map: &mut Map<String, Value>) -> bool {
    // Only objects that had values to hide are marked: a BOOKMARK's bare
    // Secret or a Secret without data is left as it came.
    let mut changed = false;
    let mut hidden = false;
    for field in ["data", "stringData"] {
        if let Some(values) = map.get_mut(field) {
            hidden |= redact_values(values, field == "data");
        }
    }
    // Partial metadata has no `data`, but a last-applied annotation would still
    // hold a copy of the values.
    let has_last_applied = map
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
        .is_some();
    if hidden || has_last_applied {
        if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
            mark(metadata);
            changed = true;
        }
    }
    for (key, child) in map.iter_mut() {
        if key != "data" && key != "stringData" {
            changed |= redact_value(child);
        }
    }
    changed
}

fn redact_values(values: &mut Value, base64: bool) -> bool {
    match values {
        Value::Null => false,
        Value::Object(entries) => {
            for entry in entries.values_mut() {
                let len = match &*entry {
                    Value::String(s) if base64 => decoded_len(s),
                    Value::String(s) => s.len(),
                    Value::Null => continue,
                    other => other.to_string().len(),
                };
                *entry = Value::String(format!("<redacted: {len} bytes>"));
            }
            true
        }
        other => {
            *other = Value::String("<redacted>".to_owned());
            true
        }
    }
}

fn mark(metadata: &mut Map<String, Value>) {
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Value::Object(annotations) = annotations {
        if annotations.contains_key(LAST_APPLIED) {
            annotations.insert(LAST_APPLIED.to_owned(), Value::String("<redacted>".into()));
        }
        annotations.insert(REDACTED_ANNOTATION.to_owned(), Value::String("true".into()));
    }
}

/// Length of the bytes a base64 string decodes to (approximate if malformed).
fn decoded_len(s: &str) -> usize {
    let s = s.trim();
    let pad = s.bytes().rev().take_while(|&b| b == b'=').count();
    let extra = match s.len() % 4 {
        2 => 1,
        3 => 2,
        _ => 0,
    };
    ((s.len() / 4) * 3 + extra).saturating_sub(pad)
}

/// Redacts one complete JSON document.
pub fn redact_bytes(body: &[u8]) -> Result<Bytes, RedactError> {
    let mut out = Vec::with_capacity(body.len());
    let mut stream = StreamRedactor::new(false);
    stream.push(body, &mut out)?;
    stream.finish(&mut out)?;
    Ok(Bytes::from(out))
}

/// Redacts a stream of concatenated JSON values (a watch body, or one
/// document delivered in pieces), emitting each value once it is complete.
#[derive(Debug)]
pub struct StreamRedactor {
    buffer: BytesMut,
    /// Try to emit values whenever a newline arrives (watch bodies); otherwise
    /// wait for the end (a list is one value and cannot be emitted early).
    eager: bool,
}

impl StreamRedactor {
    pub fn new(eager: bool) -> Self {
        StreamRedactor {
            buffer: BytesMut::new(),
            eager,
        }
    }

    /// Feeds a chunk; appends whatever complete values it finished to `out`,
    /// one redacted JSON value per line.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), RedactError> {
        self.buffer.extend_from_slice(chunk);
        if self.eager && chunk.contains(&b'\n') {
            self.drain(out, false)?;
        }
        if self.buffer.len() > MAX_VALUE_BYTES {
            return Err(RedactError::TooLarge);
        }
        Ok(())
    }

    /// Bytes held back so far, waiting for the end of their value.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// The input ended: emits what remains, which must be complete values.
    pub fn finish(mut self, out: &mut Vec<u8>) -> Result<(), RedactError> {
        self.drain(out, true)
    }

    fn drain(&mut self, out: &mut Vec<u8>, at_end: bool) -> Result<(), RedactError> {
        let mut values = serde_json::Deserializer::from_slice(&self.buffer).into_iter::<Value>();
        let mut consumed = 0;
        loop {
            match values.next() {
                None => {
                    consumed = self.buffer.len();
                    break;
                }
                Some(Ok(mut value)) => {
                    consumed = values.byte_offset();
                    redact_value(&mut value);
                    serde_json::to_writer(&mut *out, &value)?;
                    out.push(b'\n');
                }
                Some(Err(error)) if error.is_eof() => {
                    if at_end {
                        return Err(RedactError::Truncated);
                    }
                    break;
                }
                Some(Err(error)) => return Err(RedactError::Json(error)),
            }
        }
        let _ = self.buffer.split_to(consumed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_secret_and_list_and_table() {
        let mut v = json!({
            "kind": "SecretList",
            "items": [{"metadata": {"name": "a"}, "data": {"password": "aHVudGVyMg=="}, "stringData": {"x": "plain"}}],
        });
        assert!(redact_value(&mut v));
        let s = v.to_string();
        assert!(!s.contains("aHVudGVyMg"), "{s}");
        assert!(!s.contains("plain"), "{s}");
        assert!(s.contains("<redacted: 7 bytes>"), "{s}");
        assert!(s.contains("<redacted: 5 bytes>"), "{s}");
        assert!(s.contains(REDACTED_ANNOTATION));

        let mut table = json!({"kind": "Table", "rows": [{"cells": ["a"], "object": {
            "kind": "Secret", "metadata": {"name": "a", "annotations": {LAST_APPLIED: "{\"data\":{\"k\":\"c2VjcmV0\"}}"}},
            "data": {"k": "c2VjcmV0"}}}]});
        redact_value(&mut table);
        assert!(!table.to_string().contains("c2VjcmV0"));
    }

    #[test]
    fn bookmarks_and_status_pass_unmarked() {
        let mut bookmark = json!({"type": "BOOKMARK", "object": {"kind": "Secret", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "annotations": {"k8s.io/initial-events-end": "true"}}}});
        let before = bookmark.clone();
        assert!(!redact_value(&mut bookmark));
        assert_eq!(bookmark, before);
        let mut error = json!({"type": "ERROR", "object": {"kind": "Status", "code": 410}});
        assert!(!redact_value(&mut error));
    }

    #[test]
    fn decoded_lengths() {
        assert_eq!(decoded_len(""), 0);
        assert_eq!(decoded_len("YQ=="), 1);
        assert_eq!(decoded_len("YWI="), 2);
        assert_eq!(decoded_len("YWJj"), 3);
        assert_eq!(decoded_len("YWJjZA"), 4);
    }

    #[test]
    fn stream_emits_per_line_and_fails_closed() {
        let mut r = StreamRedactor::new(true);
        let mut out = Vec::new();
        r.push(
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Secret\",\"data\":{\"k\":\"c2Vj",
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
        r.push(b"cmV0\"}}}\n{\"type\":", &mut out).unwrap();
        let first = String::from_utf8(out.clone()).unwrap();
        assert!(
            first.ends_with('\n') && !first.contains("c2VjcmV0"),
            "{first}"
        );
        out.clear();
        assert!(r.finish(&mut out).is_err());

        let mut r = StreamRedactor::new(true);
        assert!(r.push(b"{\"data\": nope}\n", &mut out).is_err());
    }
}
