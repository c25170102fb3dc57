//! Writing the compact form: varints, strings, numbers and containers
//! (used here while `serde_json` parses, and by the streaming parser in
//! `parse`), and the owned `JsonValue` built from them.

use std::cell::RefCell;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::check::{self, CompactError};
use super::read::Members;
use super::tape::{tag, JsonRef, JsonValue};
use crate::well_known;

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

    /// Bytes of the compact form as held, a shared subtree counted as the
    /// 17 bytes naming it (what [`JsonValue::held_bytes`] charges for the
    /// tape besides the allocation's header).
    pub fn compact_len(&self) -> usize {
        self.tape.len()
    }

    /// Heap bytes this value holds: its tape's allocation (and its list of
    /// shared subtrees', when it has one) rounded up to the allocator's
    /// 8-byte granule plus one word of header, as dlmalloc (wasm) and glibc
    /// both keep. What history retention charges, so its byte budget bounds
    /// real memory.
    ///
    /// A shared subtree ([`JsonValue::with_shared_subtrees`]) is charged as
    /// the slot naming it, not its bytes: those are held once for every
    /// document.
    pub fn held_bytes(&self) -> usize {
        allocation(self.tape.len())
            + allocation(std::mem::size_of_val::<[std::sync::Arc<[u8]>]>(
                &self.shared,
            ))
    }

    /// The compact form, every shared subtree written out in full: what to
    /// store, and what [`JsonValue::from_compact`] takes back (in a build
    /// whose [`well_known::fingerprint`] is the same). Borrowed as held
    /// when the document shares no subtree.
    pub fn compact_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        self.self_contained()
    }

    /// The document whose compact form is `tape`, if `tape` is exactly one
    /// well-formed value (see [`super::check`]); untrusted bytes (read
    /// back from storage) never make a reader panic once accepted.
    pub fn from_compact(tape: Box<[u8]>) -> Result<JsonValue, CompactError> {
        check::check(&tape)?;
        Ok(JsonValue::plain(tape))
    }

    /// [`JsonValue::from_compact`] of a copy of `bytes` (copied only when
    /// they are accepted).
    pub fn from_compact_slice(bytes: &[u8]) -> Result<JsonValue, CompactError> {
        check::check(bytes)?;
        Ok(JsonValue::plain(bytes.into()))
    }

    /// [`JsonValue::build`] for a writer that cannot fail.
    pub(crate) fn build_with(write: impl FnOnce(&mut Vec<u8>)) -> JsonValue {
        let built = JsonValue::build(|out| {
            write(out);
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
                Ok(JsonValue::plain(tape))
            }
            Err(_) => {
                let mut buffer = Vec::new();
                write(&mut buffer)?;
                Ok(JsonValue::plain(buffer.into_boxed_slice()))
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
