//! A base while it is written ([`BaseJob`]): the snapshot it holds, the
//! chunks and faces written so far, and its log being encoded a poll at a
//! time. Data only; `base` writes it.

use super::super::codec::BlockWriter;
use super::super::meta::BlockInfo;
use super::blocks::BaseObjects;
use crate::clock::Millis;
use crate::object::ObjectRef;

/// A base being written.
pub(super) struct BaseJob {
    pub(super) generation: u32,
    /// The store at `base_seq`, shared with it.
    pub(super) snapshot: Vec<ObjectRef>,
    /// Addresses of the snapshot's objects: a delta whose object is one of
    /// them is written as a reference.
    pub(super) in_base: BaseObjects,
    pub(super) base_seq: u64,
    pub(super) next: usize,
    pub(super) chunks: u32,
    pub(super) bytes: u64,
    /// The face of the objects chunked so far, in blocks of about two
    /// chunks (the browser hands each read back in one task), written
    /// with the last batch.
    pub(super) face: BlockWriter,
    pub(super) faces: Vec<Vec<u8>>,
    /// When the snapshot was taken.
    pub(super) at: Millis,
    /// Once every chunk is written: the log encoded so far.
    pub(super) log: Option<LogSoFar>,
}

/// A base's log being encoded a poll at a time.
pub(super) struct LogSoFar {
    /// The next delta to encode.
    pub(super) next: u64,
    pub(super) blocks: Vec<(BlockInfo, Vec<u8>)>,
}

/// Objects one [`StoreWriter::release_step`](super::StoreWriter::release_step) drops.
pub const RELEASE_STEP: usize = 4_096;
