//! What a kept informer leaves in the browser's database so that a reload
//! starts warm, sans-IO like the rest of the core: the page's IndexedDB code
//! only carries out the writes planned here and hands back the bytes it read.
//!
//! One resource is stored as
//! - a **base**: a snapshot of its store at history sequence number
//!   `base_seq`, in chunks of about [`CHUNK_BYTES`] (`chunks` records keyed
//!   by generation and index; a new base is a new generation);
//! - its **face** ([`face`]): every object of the base cut down to its
//!   table row, in a few chunks after the base's, read first so that a reopen shows every row
//!   at once;
//! - a **log**: the history's deltas from the oldest held or `base_seq`,
//!   whichever is older, in blocks (`log` records keyed by their first
//!   sequence number). Deltas from `base_seq` on bring the base up to date;
//!   those still held by retention are the history;
//! - a **meta** record ([`StoredMeta`]): the resourceVersion the store is
//!   current at after the whole log, the history's counters, the gaps, the
//!   server's columns, when it was last known current, and which chunks and
//!   blocks exist.
//!
//! Each delta is written once (the log is the history), and a store of
//! 100,000 objects is read back as ~100 chunks rather than 100,000 records
//! (measured in headless Chromium: 530 MB as 100,000 records took 7.0 s to
//! read, as 100 chunks 1.4 s). [`StoreWriter`] decides what to write and
//! when a new base is due (the log outgrew half the base, or deltas needed
//! to rebuild the store were evicted before they were written);
//! [`Restorer`] checks and decodes what was read. Bytes read back are
//! untrusted: every record is validated ([`codec`]), a record that fails is
//! a [`PersistError`] and the page drops that resource's stored data.
//!
//! The format is versioned by [`FORMAT_VERSION`] and the well-known string
//! table's fingerprint (the compact JSON tapes refer to it); either
//! changing makes stored data another format, dropped cleanly.

pub mod codec;
pub mod face;
mod meta;
mod restorer;
mod writer;

#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_ahead_tests;

pub use meta::{
    BlockInfo, PersistError, StoredMeta, BLOCK_BYTES, CHUNK_BYTES, FORMAT_VERSION,
    MIN_COMPACT_BYTES,
};
pub use restorer::{Restored, Restorer};
pub use writer::{Delete, Limits, StoreWriter, WriteBatch, WriteFailure, META_EVERY, RELEASE_STEP};
