//! The bytes of stored chunks and log blocks, and their checks on the way
//! back. Every object is its compact JSON tape as the informer holds it
//! (no re-encoding, so writing is a copy) plus its Table cells; key, uid
//! and resourceVersion are read from the tape again when it comes back, as
//! when it first arrived. A log entry whose object is one of the base's
//! (the same version) refers to it by key and resourceVersion instead of
//! repeating it.
//!
//! ```text
//! block   := "DSB" version:u8 kind:u8 fingerprint:u64le count:varint record*
//! object  := tape:bytes cells
//! cells   := 0 | 1 count:varint text:bytes*
//! entry   := seq:varint at:varint kind:u8 flags:u8 writers:varint text:bytes* (object | key:bytes rv:bytes)
//! bytes   := len:varint byte*
//! ```
//!
//! Reading is a `Reader` over untrusted bytes: every length is checked,
//! every string must be UTF-8, every tape passes
//! [`JsonValue::from_compact_slice`], and a block must hold exactly its
//! records. It never panics.

use std::sync::Arc;

use super::meta::{PersistError, FORMAT_VERSION};
use crate::delta_fifo::DeltaType;
use crate::history::HistoryEntry;
use crate::json::JsonValue;
use crate::object::{KubeObject, ObjectRef};
use crate::table::RowCells;
use crate::well_known;

const MAGIC: &[u8; 3] = b"DSB";
const KIND_OBJECTS: u8 = 1;
const KIND_ENTRIES: u8 = 2;
const FLAG_TOMBSTONE: u8 = 1;
const FLAG_BASE_REF: u8 = 2;
/// What a block's header takes before its records (for sizing).
const HEADER_BYTES: usize = 3 + 1 + 1 + 8 + 5;

/// Writes one block: a header, then records pushed one at a time.
pub struct BlockWriter {
    out: Vec<u8>,
    count: u64,
    kind: u8,
}

impl BlockWriter {
    /// A block of objects (a base chunk).
    pub fn objects() -> BlockWriter {
        BlockWriter::new(KIND_OBJECTS)
    }

    /// A block of history entries (a log block).
    pub fn entries() -> BlockWriter {
        BlockWriter::new(KIND_ENTRIES)
    }

    fn new(kind: u8) -> BlockWriter {
        BlockWriter {
            out: Vec::with_capacity(64 * 1024),
            count: 0,
            kind,
        }
    }

    /// Bytes written so far (header included).
    pub fn len(&self) -> usize {
        HEADER_BYTES + self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn push_object(&mut self, object: &KubeObject) {
        debug_assert_eq!(self.kind, KIND_OBJECTS);
        write_object(&mut self.out, object);
        self.count += 1;
    }

    /// An entry; `in_base` says its object is the base's own version of
    /// it, written as a reference.
    pub fn push_entry(&mut self, entry: &HistoryEntry, in_base: bool) {
        debug_assert_eq!(self.kind, KIND_ENTRIES);
        let out = &mut self.out;
        write_varint(out, entry.seq);
        write_varint(out, entry.at);
        out.push(delta_type_byte(entry.kind));
        let mut flags = 0;
        if entry.tombstone {
            flags |= FLAG_TOMBSTONE;
        }
        if in_base {
            flags |= FLAG_BASE_REF;
        }
        out.push(flags);
        write_varint(out, entry.writers.len() as u64);
        for writer in entry.writers.iter() {
            write_bytes(out, writer.as_bytes());
        }
        if in_base {
            write_bytes(out, entry.object.key.as_bytes());
            write_bytes(out, entry.object.resource_version.as_bytes());
        } else {
            write_object(out, &entry.object);
        }
        self.count += 1;
    }

    /// The finished block.
    pub fn finish(self) -> Vec<u8> {
        let mut block = Vec::with_capacity(self.len());
        block.extend_from_slice(MAGIC);
        block.push(FORMAT_VERSION as u8);
        block.push(self.kind);
        block.extend_from_slice(&well_known::fingerprint().to_le_bytes());
        write_varint(&mut block, self.count);
        block.extend_from_slice(&self.out);
        block
    }
}

fn write_object(out: &mut Vec<u8>, object: &KubeObject) {
    write_bytes(out, &object.value.compact_bytes());
    match &object.cells {
        None => out.push(0),
        Some(cells) => {
            out.push(1);
            write_varint(out, cells.iter().count() as u64);
            for cell in cells.iter() {
                write_bytes(out, cell.as_bytes());
            }
        }
    }
}

fn delta_type_byte(kind: DeltaType) -> u8 {
    match kind {
        DeltaType::Added => 0,
        DeltaType::Updated => 1,
        DeltaType::Deleted => 2,
        DeltaType::Replaced => 3,
        DeltaType::Sync => 4,
    }
}

fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7F) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Decodes a base chunk. `what` names it in errors ("pods' chunk 3").
pub fn decode_objects(bytes: &[u8], what: &str) -> Result<Vec<ObjectRef>, PersistError> {
    let mut objects = ObjectReader::new(bytes, what.to_owned())?;
    objects.next_objects(usize::MAX)
}

/// A block of objects decoded a few at a time, so that a large one (a
/// base's face: 100k objects) is taken over many tasks.
pub struct ObjectReader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: String,
    left: usize,
}

impl<'a> ObjectReader<'a> {
    /// Checks the block's header; `what` names it in errors.
    pub fn new(bytes: &'a [u8], what: String) -> Result<ObjectReader<'a>, PersistError> {
        let mut reader = Reader::new(bytes, &what);
        let left = reader.header(KIND_OBJECTS)?;
        let at = reader.at;
        Ok(ObjectReader {
            bytes,
            at,
            what,
            left,
        })
    }

    /// Objects not read yet.
    pub fn left(&self) -> usize {
        self.left
    }

    /// The next `most` objects (fewer at the end); with the last, the
    /// block must end.
    pub fn next_objects(&mut self, most: usize) -> Result<Vec<ObjectRef>, PersistError> {
        let mut reader = Reader {
            bytes: self.bytes,
            at: self.at,
            what: &self.what,
        };
        let count = most.min(self.left);
        let mut objects = Vec::with_capacity(count.min(4_096));
        for _ in 0..count {
            objects.push(Arc::new(reader.object()?));
        }
        self.left -= count;
        if self.left == 0 {
            reader.end()?;
        }
        self.at = reader.at;
        Ok(objects)
    }
}

/// Decodes a log block. `resolve(key, rv)` finds the base's object for an
/// entry written as a reference.
pub fn decode_entries(
    bytes: &[u8],
    what: &str,
    resolve: &dyn Fn(&str, &str) -> Option<ObjectRef>,
) -> Result<Vec<HistoryEntry>, PersistError> {
    let mut reader = Reader::new(bytes, what);
    let count = reader.header(KIND_ENTRIES)?;
    let mut entries = Vec::with_capacity(count.min(bytes.len() / 8));
    for _ in 0..count {
        entries.push(reader.entry(resolve)?);
    }
    reader.end()?;
    Ok(entries)
}

/// A cursor over untrusted bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'a str) -> Reader<'a> {
        Reader { bytes, at: 0, what }
    }

    fn damaged(&self, problem: impl Into<String>) -> PersistError {
        PersistError::Damaged {
            what: self.what.to_owned(),
            offset: self.at,
            problem: problem.into(),
        }
    }

    fn header(&mut self, kind: u8) -> Result<usize, PersistError> {
        if self.take(3)? != MAGIC {
            return Err(self.damaged("not a deltascope block"));
        }
        let version = self.byte()?;
        if u32::from(version) != FORMAT_VERSION {
            return Err(PersistError::OtherFormat {
                found: u32::from(version),
                expected: FORMAT_VERSION,
            });
        }
        if self.byte()? != kind {
            return Err(self.damaged("a block of the wrong kind"));
        }
        let fingerprint = self.take(8)?;
        if fingerprint != well_known::fingerprint().to_le_bytes() {
            return Err(PersistError::OtherFormat {
                found: FORMAT_VERSION,
                expected: FORMAT_VERSION,
            });
        }
        let count = self.varint()?;
        // every record takes at least two bytes
        if count > (self.bytes.len() - self.at) as u64 / 2 {
            return Err(self.damaged(format!("{count} records cannot fit")));
        }
        Ok(count as usize)
    }

    fn end(&self) -> Result<(), PersistError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(self.damaged("bytes after the last record"))
        }
    }

    fn byte(&mut self) -> Result<u8, PersistError> {
        let byte = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| self.damaged("cut short"))?;
        self.at += 1;
        Ok(byte)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], PersistError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| self.damaged("cut short"))?;
        let bytes = &self.bytes[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn varint(&mut self) -> Result<u64, PersistError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7F);
            if shift == 63 && bits > 1 {
                return Err(self.damaged("a number too large"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.damaged("a number too long"))
    }

    fn length(&mut self) -> Result<usize, PersistError> {
        let len = self.varint()?;
        usize::try_from(len)
            .ok()
            .filter(|len| *len <= self.bytes.len() - self.at)
            .ok_or_else(|| self.damaged("a length past the end"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], PersistError> {
        let len = self.length()?;
        self.take(len)
    }

    fn text(&mut self) -> Result<&'a str, PersistError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| self.damaged("text that is not UTF-8"))
    }

    fn object(&mut self) -> Result<KubeObject, PersistError> {
        let tape = self.bytes()?;
        let value = JsonValue::from_compact_slice(tape)
            .map_err(|e| self.damaged(format!("an object: {e}")))?;
        let object =
            KubeObject::from_json(value).map_err(|e| self.damaged(format!("an object: {e}")))?;
        match self.byte()? {
            0 => Ok(object),
            1 => {
                let count = self.varint()?;
                if count > (self.bytes.len() - self.at) as u64 {
                    return Err(self.damaged("more cells than bytes"));
                }
                let mut cells = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    cells.push(self.text()?);
                }
                Ok(object.with_cells(RowCells::from_texts(cells)))
            }
            other => Err(self.damaged(format!("cells marked {other}"))),
        }
    }

    fn entry(
        &mut self,
        resolve: &dyn Fn(&str, &str) -> Option<ObjectRef>,
    ) -> Result<HistoryEntry, PersistError> {
        let seq = self.varint()?;
        let at = self.varint()?;
        let kind = match self.byte()? {
            0 => DeltaType::Added,
            1 => DeltaType::Updated,
            2 => DeltaType::Deleted,
            3 => DeltaType::Replaced,
            4 => DeltaType::Sync,
            other => return Err(self.damaged(format!("a delta of kind {other}"))),
        };
        let flags = self.byte()?;
        if flags & !(FLAG_TOMBSTONE | FLAG_BASE_REF) != 0 {
            return Err(self.damaged(format!("flags {flags:#x}")));
        }
        let writer_count = self.varint()?;
        if writer_count > (self.bytes.len() - self.at) as u64 {
            return Err(self.damaged("more writers than bytes"));
        }
        let mut writers = Vec::with_capacity(writer_count as usize);
        for _ in 0..writer_count {
            writers.push(Arc::<str>::from(self.text()?));
        }
        let object = if flags & FLAG_BASE_REF != 0 {
            let key = self.text()?;
            let rv = self.text()?;
            resolve(key, rv).ok_or_else(|| {
                self.damaged(format!(
                    "a delta of {key} at resourceVersion {rv} refers to a version the base does not hold"
                ))
            })?
        } else {
            Arc::new(self.object()?)
        };
        Ok(HistoryEntry {
            seq,
            at,
            kind,
            object,
            tombstone: flags & FLAG_TOMBSTONE != 0,
            // recomputed when the history is restored
            bytes: 0,
            writers: writers.into(),
        })
    }
}
