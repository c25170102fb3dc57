//! The `SHARED` value's encoding: a subtree held once for many documents
//! (`shared`), named from a tape by its buffer's address and length. Read
//! here where `read` splits a container's values, written by `shared`'s
//! rewriter: a file of its own so that both depend on it, not on each
//! other.

use std::sync::Arc;

use super::tape::tag;

/// Bytes of a `SHARED` value: the tag, the address, the length (8 bytes
/// each, little-endian, whatever the pointer width).
pub(super) const SHARED_LEN: usize = 17;

/// The subtree a `SHARED` value at the start of `bytes` names, or `None`
/// when `bytes` does not start with a whole one.
pub(super) fn resolve(bytes: &[u8]) -> Option<&[u8]> {
    let encoded = bytes.get(..SHARED_LEN).filter(|b| b[0] == tag::SHARED)?;
    let address = u64::from_le_bytes(encoded[1..9].try_into().ok()?);
    let len = u64::from_le_bytes(encoded[9..17].try_into().ok()?);
    // SAFETY: a `SHARED` value is only written by `write_reference`, into a
    // tape whose `JsonValue` keeps an `Arc` of that very buffer for as long
    // as the tape lives (`shared`'s rule); `bytes` borrows that tape, so
    // the buffer outlives the slice returned here. Tapes from outside the
    // process never reach a reader with this tag (`check` refuses it).
    Some(unsafe { std::slice::from_raw_parts(address as usize as *const u8, len as usize) })
}

/// Writes a `SHARED` value naming `buffer`; the document being written
/// must keep `buffer` as long as its tape lives.
pub(super) fn write_reference(buffer: &Arc<[u8]>, out: &mut Vec<u8>) {
    out.push(tag::SHARED);
    out.extend_from_slice(&(buffer.as_ptr() as usize as u64).to_le_bytes());
    out.extend_from_slice(&(buffer.len() as u64).to_le_bytes());
}
