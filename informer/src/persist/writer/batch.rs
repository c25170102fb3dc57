//! What a poll of the [`StoreWriter`](super::StoreWriter) hands out — one
//! [`WriteBatch`], a transaction: deletions, records, the meta record — what
//! it remembers of the batch in flight until the page reports it written,
//! the base a meta record points at, and why a batch failed.

use super::super::meta::StoredMeta;
use crate::clock::Millis;

/// Records to delete, before the batch's records are put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delete {
    /// Every chunk of this generation (left by a base that never finished).
    ChunksOf(u32),
    /// Every chunk of every other generation.
    ChunksExcept(u32),
    /// Log blocks whose first sequence number is below this.
    LogBelow(u64),
    /// Every log block (another tab's lineage is replaced).
    AllLog,
}

/// One transaction's worth of writes for one resource.
#[derive(Debug, Default)]
pub struct WriteBatch {
    pub deletes: Vec<Delete>,
    /// Base chunks: ((generation, index), bytes).
    pub chunks: Vec<((u32, u32), Vec<u8>)>,
    /// Log blocks: (first sequence number, bytes).
    pub blocks: Vec<(u64, Vec<u8>)>,
    /// The meta record, written last (`None`: a chunk of a base under way).
    pub meta: Option<StoredMeta>,
}

impl WriteBatch {
    /// Bytes of records it puts.
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(|(_, b)| b.len()).sum::<usize>()
            + self.blocks.iter().map(|(_, b)| b.len()).sum::<usize>()
    }
}

/// What the batch handed out was.
pub(super) enum InFlight {
    Chunk { bytes: u64 },
    Meta(Box<StoredMeta>),
}

/// The base a meta record points at.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BaseInfo {
    pub(super) generation: u32,
    pub(super) base_seq: u64,
    pub(super) chunks: u32,
    pub(super) objects: u64,
    pub(super) bytes: u64,
    pub(super) face_chunks: u32,
    pub(super) face_bytes: u64,
    /// When its snapshot was taken.
    pub(super) at: Millis,
}

/// Why a batch could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteFailure {
    /// The browser's storage quota is exhausted.
    Quota,
    Other(String),
}
