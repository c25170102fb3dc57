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
//!   every object repeats ([`crate::well_known`]: `name`, `True`,
//!   `lastTransitionTime`, …) is one or two bytes;
//! - an array or object is a tag, the varint byte length of its body (so a
//!   reader skips it in one step) and its elements, or its members as key
//!   string then value, in the order the server sent them (a repeated key
//!   keeps its last value at its first position, as `serde_json` does).
//!
//! A realistic Pod takes about 0.4× its JSON text (a tree of boxed slices
//! takes about 1.5× in wasm32). Lookups by key scan the members,
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
//! when every reader here can read it (`check`).

//! The files: `tape` (the tags and the types), `read` (the read API),
//! `write` (building a tape, and `JsonValue`'s own methods), `parse` (JSON
//! text straight into a tape), `check` (a stored tape checked before it is
//! read), `compare` (equality, `Serialize`, `Display`, `Debug`), `patch`
//! (the JSON Patch from one document to another), `apply` (a JSON Patch
//! applied to a document on its tape), `text` (a document written as JSON
//! text).

mod apply;
pub mod check;
mod compare;
pub mod parse;
mod patch;
mod read;
mod reference;
mod shared;
pub mod skip;
mod tape;
mod text;
mod write;

pub use apply::PatchApplyError;
pub use check::CompactError;
pub use parse::{ParseError, ParsedText};
pub use patch::patch_between;
pub use read::{DifferingMembers, Elements};
pub use shared::shared_buffers;
pub use tape::{EncodedMember, JsonArray, JsonKind, JsonNumber, JsonObject, JsonRef, JsonValue};
pub(crate) use write::allocation;

#[cfg(test)]
mod tests;
