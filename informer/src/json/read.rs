//! Reading the compact form: varints, a value's length, strings (short,
//! long, well-known), and the `JsonRef` / `JsonObject` / `JsonArray` read
//! API that mirrors `serde_json::Value`.

use super::reference::{resolve, SHARED_LEN};
use super::tape::{tag, EncodedMember, JsonArray, JsonKind, JsonNumber, JsonObject, JsonRef};
use crate::well_known;

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
#[inline]
fn value_len(bytes: &[u8]) -> Option<usize> {
    let t = *bytes.first()?;
    let len = match t {
        tag::NULL | tag::FALSE | tag::TRUE => 1,
        tag::UINT | tag::NEG_INT => 1 + read_varint(bytes.get(1..)?)?.1,
        tag::FLOAT => 9,
        tag::SHARED => SHARED_LEN,
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

/// Splits the first value off `bytes`; a shared subtree is followed, so the
/// value is always its own encoding.
fn split_value(bytes: &[u8]) -> Option<(JsonRef<'_>, &[u8])> {
    let (value, rest) = split_raw(bytes)?;
    let value = if value[0] == tag::SHARED {
        resolve(value)?
    } else {
        value
    };
    Some((JsonRef { bytes: value }, rest))
}

/// Splits the first value's encoding off `bytes`, as held (a shared
/// subtree not followed).
fn split_raw(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = value_len(bytes)?;
    Some(bytes.split_at(len))
}

/// The encodings of the values of a container's body, as held (an object's
/// keys and values in turn).
pub(super) fn raw_values(mut body: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (value, rest) = split_raw(body)?;
        body = rest;
        Some(value)
    })
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
pub(super) struct Members<'a> {
    pub(super) rest: &'a [u8],
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

/// Splits the first member (key, value) off an object body.
fn take_member<'a>(rest: &mut &'a [u8]) -> Option<EncodedMember<'a>> {
    let whole = *rest;
    let (key, after_key) = split_value(whole)?;
    let (value, after) = split_value(after_key)?;
    *rest = after;
    Some(EncodedMember {
        key,
        value,
        bytes: &whole[..whole.len() - after.len()],
    })
}

/// The encoded length of the member (key, value) that starts `bytes`.
fn member_len(bytes: &[u8]) -> Option<usize> {
    let key = value_len(bytes)?;
    Some(key + value_len(bytes.get(key..)?)?)
}

/// How many leading bytes `a` and `b` share, compared 32 at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const RUN: usize = 32;
    let chunks = a
        .chunks_exact(RUN)
        .zip(b.chunks_exact(RUN))
        .take_while(|(x, y)| <&[u8; RUN]>::try_from(*x).ok() == <&[u8; RUN]>::try_from(*y).ok())
        .count();
    let start = chunks * RUN;
    let tail = a[start..]
        .iter()
        .zip(&b[start..])
        .take_while(|(x, y)| x == y)
        .count();
    start + tail
}

/// The member pairs of two objects that differ
/// ([`JsonObject::differing_members`]).
pub struct DifferingMembers<'a> {
    left: &'a [u8],
    right: &'a [u8],
}

impl<'a> DifferingMembers<'a> {
    /// The members not paired yet, of each object.
    pub fn rest(
        self,
    ) -> (
        impl Iterator<Item = EncodedMember<'a>>,
        impl Iterator<Item = EncodedMember<'a>>,
    ) {
        let (mut left, mut right) = (self.left, self.right);
        (
            std::iter::from_fn(move || take_member(&mut left)),
            std::iter::from_fn(move || take_member(&mut right)),
        )
    }
}

impl<'a> Iterator for DifferingMembers<'a> {
    /// The next pair whose bytes differ: a member of each object at the
    /// same place, or of one only where the other has no more.
    type Item = (Option<EncodedMember<'a>>, Option<EncodedMember<'a>>);

    fn next(&mut self) -> Option<Self::Item> {
        // Members wholly inside the shared bytes are the same in both (and
        // sit at the same offsets): pass over them.
        let shared = common_prefix(self.left, self.right);
        let mut same = 0;
        while let Some(len) = self.left.get(same..).and_then(member_len) {
            if same + len > shared {
                break;
            }
            same += len;
        }
        self.left = &self.left[same..];
        self.right = &self.right[same..];
        match (take_member(&mut self.left), take_member(&mut self.right)) {
            (None, None) => None,
            pair => Some(pair),
        }
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

    /// A container's body as held; empty for any other value.
    pub(super) fn raw_body(self) -> &'a [u8] {
        self.body()
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
            JsonKind::Object(o) => {
                // inserted one by one: collecting would sort the members
                // with a copy of the standard sort of its own
                let mut map = serde_json::Map::new();
                for (k, v) in o.iter() {
                    map.insert(k.to_owned(), v.to_json());
                }
                serde_json::Value::Object(map)
            }
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

    /// The members of this object and `other` side by side, in order,
    /// passing over every pair that is byte for byte the same: what two
    /// versions of an object differ by, found by comparing their bytes in
    /// long runs rather than member by member. Each member comes with its
    /// key still the string value the document holds (`as_str` reads it):
    /// keys of two documents written by the same encoder compare by their
    /// bytes.
    pub fn differing_members(self, other: JsonObject<'a>) -> DifferingMembers<'a> {
        DifferingMembers {
            left: self.body,
            right: other.body,
        }
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
