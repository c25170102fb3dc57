//! The meta record of one stored resource ([`StoredMeta`]: which base,
//! face chunks and log blocks exist, the resourceVersion the store is
//! current at, the history's counters and gaps) with the check a record
//! read back must pass, the sizes records are cut to, the format's version,
//! and [`PersistError`], why stored data cannot be used. Every other part
//! of `persist` builds on these; they depend on none of it.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::history::Gap;
use crate::table::ColumnDefinition;

/// The stored format's version: bump it whenever what is written changes.
pub const FORMAT_VERSION: u32 = 1;

/// About how many bytes one base chunk holds.
pub const CHUNK_BYTES: usize = 2 << 20;

/// About how many bytes one log block holds at most (a larger write is
/// split into several blocks in one transaction). One block is encoded a
/// poll, small enough that encoding it (after a relist of 100k pods, whose
/// deltas are whole objects) is no long task on the page's thread.
pub const BLOCK_BYTES: usize = 2 << 20;

/// A new base is written once the log since the last one holds more than
/// half the base, but never for less than this.
pub const MIN_COMPACT_BYTES: u64 = 8 << 20;

/// The meta record of one stored resource (JSON; small).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMeta {
    /// [`FORMAT_VERSION`] of the writer.
    pub format: u32,
    /// [`crate::well_known::fingerprint`] of the writer.
    pub fingerprint: u64,
    /// The kept view this is (its route's data key).
    pub resource: String,
    /// When the view was last shown (the caller's clock): kept views come
    /// back in this order, the most recent first.
    pub shown_at: Millis,
    /// The base's generation: its chunks are `(generation, 0..chunks)`.
    pub generation: u32,
    /// The base is the store after the deltas before this sequence number.
    pub base_seq: u64,
    pub base_chunks: u32,
    pub base_objects: u64,
    pub base_bytes: u64,
    /// The base's face ([`face`](super::face)), stored as the chunks after the base's
    /// last (`(generation, base_chunks + i)`); none in a record written
    /// before faces were.
    #[serde(default)]
    pub face_chunks: u32,
    #[serde(default)]
    pub face_bytes: u64,
    /// When the base's snapshot was taken (the caller's clock): the face
    /// shows the store as of then.
    #[serde(default)]
    pub base_at: Millis,
    /// The log's blocks, oldest first.
    pub blocks: Vec<BlockInfo>,
    /// The store after the whole log is current at this resourceVersion
    /// (unless `log_cut`).
    pub resource_version: String,
    /// The log stops short of the informer's state when this was written:
    /// a batch's budget cut it, and the next batches write the rest. The
    /// store it rebuilds was never the server's at `resource_version`, so a
    /// restore lists again instead of watching from there (a watch would
    /// never bring the deltas the log lacks).
    #[serde(default)]
    pub log_cut: bool,
    /// The history held: sequence numbers from here to the log's end.
    pub history_first_seq: u64,
    pub recorded: u64,
    pub dropped: u64,
    pub gaps: Vec<Gap>,
    /// The server's Table columns (table mode), for the stored rows' cells.
    pub columns: Option<Vec<ColumnDefinition>>,
    /// When this record was written (the caller's clock).
    pub saved_at: Millis,
    /// The last moment the stored store was known current: written while
    /// the informer was watching (a resume's gap, if any, starts here).
    pub current_at: Millis,
}

impl StoredMeta {
    /// Sequence numbers the log covers: `first..end`.
    pub fn log_span(&self) -> Option<(u64, u64)> {
        Some((self.blocks.first()?.first_seq, self.blocks.last()?.end_seq))
    }

    /// The sequence number after the log (and the base): where the next
    /// recorded delta continues.
    pub fn next_seq(&self) -> u64 {
        log_end(&self.blocks, self.base_seq)
    }

    /// Where a restored informer's watch resumes: the stored
    /// resourceVersion, or nowhere (empty: it lists again) when the log was
    /// cut short.
    pub fn resume_from(&self) -> &str {
        if self.log_cut {
            ""
        } else {
            &self.resource_version
        }
    }

    /// Bytes stored: the base, its face and the log.
    pub fn stored_bytes(&self) -> u64 {
        self.base_bytes + self.face_bytes + self.blocks.iter().map(|b| b.bytes).sum::<u64>()
    }

    /// Deltas stored in the log.
    pub fn stored_deltas(&self) -> u64 {
        self.log_span().map_or(0, |(first, end)| end - first)
    }

    /// Refuses another format or a record that cannot be true, saying why.
    pub fn check(&self) -> Result<(), PersistError> {
        if self.format != FORMAT_VERSION || self.fingerprint != crate::well_known::fingerprint() {
            return Err(PersistError::OtherFormat {
                found: self.format,
                expected: FORMAT_VERSION,
            });
        }
        let mut expected = None;
        for block in &self.blocks {
            if block.end_seq <= block.first_seq || expected.is_some_and(|e| e != block.first_seq) {
                return Err(PersistError::Meta(format!(
                    "the log's blocks are not consecutive at sequence number {}",
                    block.first_seq
                )));
            }
            expected = Some(block.end_seq);
        }
        let covered = |seq: u64| match self.log_span() {
            Some((first, end)) => first <= seq && seq <= end,
            None => seq == self.base_seq,
        };
        if !covered(self.base_seq) {
            return Err(PersistError::Meta(format!(
                "the log does not continue the base (at sequence number {})",
                self.base_seq
            )));
        }
        if self.history_first_seq > self.next_seq()
            || !(covered(self.history_first_seq) || self.history_first_seq == self.next_seq())
        {
            return Err(PersistError::Meta(format!(
                "the history's first delta ({}) is not in the log",
                self.history_first_seq
            )));
        }
        if self.resource_version.is_empty() {
            return Err(PersistError::Meta("no resourceVersion".into()));
        }
        Ok(())
    }
}

/// Where a log of `blocks` after a base at `base_seq` ends: the sequence
/// number the next delta continues from.
pub(crate) fn log_end(blocks: &[BlockInfo], base_seq: u64) -> u64 {
    blocks.last().map_or(base_seq, |b| b.end_seq)
}

/// One log block: deltas `first_seq..end_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockInfo {
    pub first_seq: u64,
    pub end_seq: u64,
    pub bytes: u64,
}

/// Why stored data cannot be used. Any of these drops the resource's stored
/// data with a message; none is a crash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersistError {
    #[error("stored by another version of deltascope (format {found}, this one reads {expected})")]
    OtherFormat { found: u32, expected: u32 },
    #[error("its meta record is unreadable: {0}")]
    Meta(String),
    #[error("{what} is damaged at byte {offset}: {problem}")]
    Damaged {
        what: String,
        offset: usize,
        problem: String,
    },
    #[error("{0} is missing")]
    Missing(String),
    #[error("its history cannot be taken back: {0}")]
    History(#[from] crate::history::RestoreError),
}
