//! The check a compact JSON tape (the `json` module's format) must pass
//! before it becomes a [`JsonValue`](super::JsonValue) again:
//! [`JsonValue::from_compact`](super::JsonValue::from_compact) and
//! [`from_compact_slice`](super::JsonValue::from_compact_slice) call
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
//!   ([`crate::well_known`]; a build with another table also has another
//!   [`crate::well_known::fingerprint`], so its tapes are dropped before
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

use super::tape::tag;
use crate::well_known;

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
        match t {
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
            _ => at += scalar(tape, t, at, limit, known)?,
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

/// The length of the scalar value (anything but an array or object) with
/// tag `t` at `at`, checked (see the module doc); it must end by `limit`.
fn scalar(
    tape: &[u8],
    t: u8,
    at: usize,
    limit: usize,
    known: usize,
) -> Result<usize, CompactError> {
    Ok(match t {
        tag::NULL | tag::FALSE | tag::TRUE => 1,
        tag::UINT => 1 + varint(tape, at + 1, limit, at)?.1,
        tag::NEG_INT => {
            let (n, used) = varint(tape, at + 1, limit, at)?;
            if i64::try_from(n).is_err() {
                return Err(CompactError::NegativeOutOfRange { at });
            }
            1 + used
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
            9
        }
        tag::LONG_STR => {
            let (len, head) = sized(tape, at, limit)?;
            utf8(tape, at + head, len)?;
            head + len
        }
        tag::KNOWN_STR..=tag::KNOWN_STR_END => {
            let low = tape
                .get(at + 1)
                .filter(|_| at + 2 <= limit)
                .ok_or(CompactError::Truncated { at })?;
            let id = (u16::from(t & 0x07) << 8) | u16::from(*low);
            known_id(id, known, at)?;
            2
        }
        tag::FREQUENT_STR..=0x7F => {
            known_id(u16::from(t & 0x3F), known, at)?;
            1
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
            1 + len
        }
        // `tag::SHARED` included: the address it holds means something only
        // in the process that wrote it (`shared`), so no stored tape has one
        _ => return Err(CompactError::BadTag { at, tag: t }),
    })
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
mod tests;
