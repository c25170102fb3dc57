//! [`Restorer`]: takes back one resource's stored records, checking each
//! against its meta record as it comes. The page reads the base's chunks in
//! order (each decoded chunk goes straight into the informer's store, so a
//! large store comes back over many tasks), then every log block, then
//! [`Restorer::finish`] gives what the informer resumes from: the deltas
//! after the base to apply to the store, and the history.

use super::codec::{decode_entries, decode_objects, ObjectReader};
use super::meta::{BlockInfo, PersistError, StoredMeta};
use crate::history::{HistoryEntry, StoredHistory};
use crate::informer::Resume;
use crate::object::ObjectRef;

/// What a stored resource gives back.
#[derive(Debug)]
pub struct Restored {
    /// Deltas recorded after the base, oldest first: apply each to the
    /// restored store ([`crate::Informer::restore_delta`]) before resuming.
    pub replay: Vec<HistoryEntry>,
    pub resume: Resume,
}

/// Checks and decodes one resource's stored records (see the module doc).
pub struct Restorer {
    meta: StoredMeta,
    chunks: u32,
    objects: u64,
    /// Face chunks and rows read.
    face_blocks: u32,
    faces: u64,
    blocks: usize,
    entries: Vec<HistoryEntry>,
}

impl Restorer {
    /// Starts from the meta record's JSON text; another format or a record
    /// that cannot be true is refused.
    pub fn from_json(text: &str) -> Result<Restorer, PersistError> {
        let meta: StoredMeta = serde_json::from_slice(text.as_bytes())
            .map_err(|e| PersistError::Meta(e.to_string()))?;
        Restorer::new(meta)
    }

    pub fn new(meta: StoredMeta) -> Result<Restorer, PersistError> {
        meta.check()?;
        Ok(Restorer {
            meta,
            chunks: 0,
            objects: 0,
            face_blocks: 0,
            faces: 0,
            blocks: 0,
            entries: Vec::new(),
        })
    }

    pub fn meta(&self) -> &StoredMeta {
        &self.meta
    }

    /// The next base chunk to read: its key `(generation, index)`, `None`
    /// once all are read.
    pub fn next_chunk(&self) -> Option<(u32, u32)> {
        (self.chunks < self.meta.base_chunks).then_some((self.meta.generation, self.chunks))
    }

    /// The chunks that hold the base's face, if one is stored (of the
    /// base's generation): read them first, and [`Restorer::face`] gives
    /// every row to show before the base's chunks come.
    pub fn face_chunks(&self) -> std::ops::Range<u32> {
        let first = self.meta.base_chunks;
        first..first.saturating_add(self.meta.face_chunks)
    }

    /// One of [`Restorer::face_chunks`], in order, as read: objects cut
    /// down to their rows, to take a batch at a time and put in the store
    /// ([`crate::Informer::restore_faces`]); the base's chunks replace
    /// each with its whole object later.
    pub fn face<'a>(&mut self, bytes: &'a [u8]) -> Result<ObjectReader<'a>, PersistError> {
        let what = format!("{}'s stored face", self.meta.resource);
        let faces = ObjectReader::new(bytes, what.clone())?;
        self.faces += faces.left() as u64;
        let last = self.face_blocks + 1 == self.meta.face_chunks;
        self.face_blocks += 1;
        if self.faces > self.meta.base_objects || (last && self.faces != self.meta.base_objects) {
            return Err(PersistError::Damaged {
                what,
                offset: 0,
                problem: format!(
                    "it holds {} rows for a snapshot of {} objects",
                    self.faces, self.meta.base_objects
                ),
            });
        }
        Ok(faces)
    }

    /// The base chunk [`Restorer::next_chunk`] named, as read: its objects.
    pub fn chunk(&mut self, bytes: &[u8]) -> Result<Vec<ObjectRef>, PersistError> {
        let what = format!("{}'s stored chunk {}", self.meta.resource, self.chunks);
        let objects = decode_objects(bytes, &what)?;
        self.chunks += 1;
        self.objects += objects.len() as u64;
        Ok(objects)
    }

    /// The log blocks to read, oldest first (by their first sequence number).
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.meta.blocks
    }

    /// The next log block, as read. `base(key, rv)` finds the base's object
    /// for a delta stored as a reference to it (the store as restored from
    /// the chunks, before any delta is applied).
    pub fn block(
        &mut self,
        bytes: &[u8],
        base: &dyn Fn(&str, &str) -> Option<ObjectRef>,
    ) -> Result<(), PersistError> {
        let Some(info) = self.meta.blocks.get(self.blocks).copied() else {
            return Err(PersistError::Meta("more log blocks than it lists".into()));
        };
        let what = format!(
            "{}'s stored deltas {}..{}",
            self.meta.resource, info.first_seq, info.end_seq
        );
        let entries = decode_entries(bytes, &what, base)?;
        let consecutive = entries.len() as u64 == info.end_seq - info.first_seq
            && entries
                .iter()
                .zip(info.first_seq..)
                .all(|(entry, seq)| entry.seq == seq);
        if !consecutive {
            return Err(PersistError::Damaged {
                what,
                offset: 0,
                problem: "its deltas are not the ones its meta record lists".into(),
            });
        }
        self.entries.extend(entries);
        self.blocks += 1;
        Ok(())
    }

    /// Everything was read: the deltas to replay and what to resume from.
    pub fn finish(self) -> Result<Restored, PersistError> {
        let resource = &self.meta.resource;
        if self.chunks != self.meta.base_chunks || self.objects != self.meta.base_objects {
            return Err(PersistError::Missing(format!(
                "part of {resource}'s stored snapshot ({} of {} objects read)",
                self.objects, self.meta.base_objects
            )));
        }
        if self.blocks != self.meta.blocks.len() {
            return Err(PersistError::Missing(format!(
                "part of {resource}'s stored history ({} of {} blocks read)",
                self.blocks,
                self.meta.blocks.len()
            )));
        }
        let base_seq = self.meta.base_seq;
        let first = self.meta.history_first_seq;
        let replay = self
            .entries
            .iter()
            .filter(|e| e.seq >= base_seq)
            .cloned()
            .collect();
        let history = StoredHistory {
            entries: self
                .entries
                .into_iter()
                .filter(|e| e.seq >= first)
                .collect(),
            first_seq: first,
            recorded: self.meta.recorded,
            dropped: self.meta.dropped,
            gaps: self.meta.gaps.clone(),
        };
        Ok(Restored {
            replay,
            resume: Resume {
                resource_version: self.meta.resume_from().to_owned(),
                as_of: self.meta.current_at,
                history,
                columns: self.meta.columns.clone(),
            },
        })
    }
}
