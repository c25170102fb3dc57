//! The base a [`StoreWriter`] writes: a snapshot of the store in key order
//! (taken a step per poll, [`super::snapshot`]), written a chunk per
//! batch (each chunk's objects' faces gathered as it goes), then its face
//! and its log encoded a batch's worth per poll and written with the
//! meta record that makes it take effect; and, once it ends, its objects
//! released a slice at a time (at 100k objects, each of these done at once
//! would be a long task on the page's thread).

use super::super::codec::BlockWriter;
use super::super::face::face_of;
use super::batch::{BaseInfo, Delete, InFlight, WriteBatch};
use super::blocks::{encode_blocks, BaseObjects};
use super::job::{BaseJob, LogSoFar, RELEASE_STEP};
use super::StoreWriter;
use crate::clock::Millis;
use crate::informer::Informer;
use crate::object::ObjectRef;

impl StoreWriter {
    /// Ends the base under way (written or abandoned): its snapshot goes to
    /// be released a slice at a time.
    pub(super) fn end_base(&mut self) {
        if let Some(snapshotting) = self.snapshotting.take() {
            self.released.extend(snapshotting.into_objects());
        }
        if let Some(job) = self.job.take() {
            if self.released.is_empty() {
                self.released = job.snapshot;
            } else {
                self.released.extend(job.snapshot);
            }
        }
    }

    /// Drops up to [`RELEASE_STEP`] objects an ended base held; true while
    /// some are left (call it between tasks until it says false).
    pub fn release_step(&mut self) -> bool {
        let keep = self.released.len().saturating_sub(RELEASE_STEP);
        self.released.truncate(keep);
        if self.released.is_empty() {
            self.released = Vec::new();
        }
        !self.released.is_empty()
    }

    /// A new base is due (see the module doc).
    pub(super) fn needs_base(&self, informer: &Informer) -> bool {
        let Some(stored) = self.stored.as_ref().filter(|_| !self.replace_all) else {
            // Nothing of ours is stored: a base once there is a state to store.
            return informer.has_synced();
        };
        let history = informer.history();
        // Deltas needed to bring the base up to date were evicted unwritten
        // (the log ends at or after the base, so any delta missing from
        // where it ends is needed).
        let lost = history.first_seq() > stored.next_seq();
        let log_since_base: u64 = stored
            .blocks
            .iter()
            .filter(|b| b.end_seq > stored.base_seq)
            .map(|b| b.bytes)
            .sum();
        lost || log_since_base > (stored.base_bytes / 2).max(self.limits.min_compact_bytes)
    }

    /// Begins writing `snapshot`, the store in key order now (the
    /// restorer needs no order, but rows and keys that come back in order
    /// are appended, not sorted in: a sort of 100k keys in hash order is a
    /// 50–80 ms task in the page).
    pub(super) fn start_base(
        &mut self,
        informer: &Informer,
        now: Millis,
        snapshot: Vec<ObjectRef>,
    ) {
        let generation = self
            .stored
            .as_ref()
            .map_or(1, |stored| stored.generation.wrapping_add(1).max(1));
        self.job = Some(BaseJob {
            generation,
            in_base: BaseObjects::of(&snapshot),
            snapshot,
            base_seq: informer.history().next_seq(),
            next: 0,
            chunks: 0,
            bytes: 0,
            face: BlockWriter::objects(),
            faces: Vec::new(),
            at: now,
            log: None,
        });
    }

    /// The next chunk of the base under way, or its last batch.
    pub(super) fn base_batch(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
    ) -> Option<WriteBatch> {
        let job = self.job.as_ref()?;
        if job.next < job.snapshot.len() || (job.chunks == 0 && job.snapshot.is_empty()) {
            return self.chunk_batch();
        }
        self.last_base_batch(informer, now, shown_at)
    }

    /// The base's next chunk (and the faces of its objects gathered).
    fn chunk_batch(&mut self) -> Option<WriteBatch> {
        let job = self.job.as_mut()?;
        let mut block = BlockWriter::objects();
        while job.next < job.snapshot.len() && block.len() < self.limits.chunk_bytes {
            let object = &job.snapshot[job.next];
            block.push_object(object);
            job.face.push_object(&face_of(object));
            if job.face.len() >= 2 * self.limits.chunk_bytes {
                let full = std::mem::replace(&mut job.face, BlockWriter::objects());
                job.faces.push(full.finish());
            }
            job.next += 1;
        }
        let index = job.chunks;
        let mut batch = WriteBatch::default();
        if index == 0 {
            // left by a base that never finished
            batch.deletes.push(Delete::ChunksOf(job.generation));
        }
        let bytes = block.finish();
        self.in_flight = Some(InFlight::Chunk {
            bytes: bytes.len() as u64,
        });
        batch.chunks.push(((job.generation, index), bytes));
        Some(batch)
    }

    /// The base is written: its last batch writes the deltas it needs and
    /// the meta record pointing at it (`None` while its log is still being
    /// encoded, or when it must start over).
    fn last_base_batch(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
    ) -> Option<WriteBatch> {
        let job = self.job.as_mut()?;
        let history = informer.history();
        if history.first_seq() > job.base_seq {
            // Deltas after the snapshot were evicted unwritten: start over.
            self.end_base();
            return None;
        }
        // The log is rewritten whole with every base: deltas of objects the
        // base holds refer to it, and must never outlive it. It is encoded
        // `batch_bytes` a poll (a relist's deltas, whose objects the base
        // does not hold, are whole objects: 100k of them encoded at once
        // held the page for a quarter of a second), then written with the
        // meta record in the last batch.
        let from = history.first_seq().max(self.min_seq.min(job.base_seq));
        let fresh = || LogSoFar {
            next: from,
            blocks: Vec::new(),
        };
        let log = job.log.get_or_insert_with(fresh);
        if log.next < from {
            // deltas not encoded yet were evicted meanwhile: the log starts
            // again from what is held
            *log = fresh();
        }
        if log.next < history.next_seq() {
            let more = encode_blocks(
                informer,
                log.next,
                (self.limits.block_bytes, self.limits.batch_bytes),
                Some(&job.in_base),
            );
            if let Some((last, _)) = more.last() {
                log.next = last.end_seq;
            }
            log.blocks.extend(more);
            if log.next < history.next_seq() {
                self.encoding = true;
                return None;
            }
        }
        let blocks = std::mem::take(&mut log.blocks);
        let mut faces = std::mem::take(&mut job.faces);
        let last = std::mem::replace(&mut job.face, BlockWriter::objects());
        if !last.is_empty() || faces.is_empty() {
            faces.push(last.finish());
        }
        let (generation, first_face) = (job.generation, job.chunks);
        let base = BaseInfo {
            generation: job.generation,
            base_seq: job.base_seq,
            chunks: job.chunks,
            objects: job.snapshot.len() as u64,
            bytes: job.bytes,
            face_chunks: faces.len() as u32,
            face_bytes: faces.iter().map(|f| f.len() as u64).sum(),
            at: job.at,
        };
        let deletes = vec![Delete::AllLog, Delete::ChunksExcept(base.generation)];
        let mut batch = self.hand_out(informer, now, shown_at, Some(base), true, deletes, blocks);
        batch.chunks.extend(
            (first_face..)
                .zip(faces)
                .map(|(index, face)| ((generation, index), face)),
        );
        Some(batch)
    }
}
