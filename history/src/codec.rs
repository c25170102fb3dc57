//! How one recorded version is kept: the whole object now and then (a
//! *full* body), and between two fulls a JSON Patch (RFC 6902, written from
//! the informer's compact documents by `JsonValue::patch_to`, applied back
//! on them by `JsonValue::apply_patch`) against the chain's full — the
//! patch between versions composed onto the one before (`compose`), so a
//! version reads back from two rows however long its chain. Earlier
//! versions of deltascope wrote each patch against the version before it
//! ([`BodyKind::Patch`]); those chains read as before (`rebuild`). Pod-
//! status churn changes a few fields of a 4 KiB object, so most versions
//! cost the bytes of those fields.
//!
//! A full is compressed with zstd (level 1, with the frame's checksum): it
//! decompresses several times faster than deflate — reading a past state is
//! mostly decompressing fulls — and the checksum proves the text is the
//! JSON that was written, so it goes out without being parsed again. A patch
//! is a zstd frame too, without the checksum (four bytes on a body of a
//! hundred; a patch is parsed when applied anyway), compressed by a context
//! of its own that stays set up for small bodies: earlier versions deflated
//! patches (`flate2`), and resetting the deflater for each patch (zlib-rs
//! clears a 64 KiB hash table) cost more than deflating it: the store's
//! writes of 150,000 pod status changes took 7–15 % longer that way (a
//! native probe, three paired runs), and a status change's row 5 % more
//! bytes (`cargo xtask bench --only history`). Reading a patch back costs
//! about a microsecond more (zstd sets up its tables for each frame). A body says which it is by its first bytes (a zstd
//! frame's magic number, which a raw deflate stream from zlib never starts
//! with); bodies deflated by earlier versions are read as before, and a
//! deflated full is checked as JSON when it goes out as stored.
//!
//! [`Chain`] decides when a full is due: after [`MAX_CHAIN`] patches, once
//! the patch against the full is half its size, or once the chain's
//! patches together weigh as much as the full — bounding what a run of
//! large patches wastes.

use std::cell::RefCell;
use std::io::Write;

use deltascope_informer::PatchApplyError;
use flate2::write::DeflateEncoder;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Patches at most between two fulls of one object. Reading a version
/// costs its full and its own patch whatever the chain's length; earlier
/// chains of patches between versions were at most 8 long.
pub const MAX_CHAIN: u32 = 16;

/// Bytes a stored body may inflate to (a Kubernetes object is at most
/// about 1.5 MiB; anything far larger is not one of ours).
pub const MAX_INFLATED: u64 = 64 * 1024 * 1024;

/// What a stored body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// The whole object's JSON.
    Full = 0,
    /// A JSON Patch against the same object's previous stored version
    /// (written by earlier versions of deltascope; read, not written).
    Patch = 1,
    /// A JSON Patch against its chain's full (`base_id`).
    BasePatch = 2,
}

impl BodyKind {
    pub fn from_code(code: i64) -> Option<BodyKind> {
        match code {
            0 => Some(BodyKind::Full),
            1 => Some(BodyKind::Patch),
            2 => Some(BodyKind::BasePatch),
            _ => None,
        }
    }
}

/// Where one object's stored versions stand since its last full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The row of the last full.
    pub base_id: i64,
    /// Its inflated size.
    pub full_bytes: usize,
    /// Patches stored after it.
    pub patches: u32,
    /// Their inflated bytes together.
    pub patch_bytes: usize,
    /// The last version's patch against the full (JSON Patch text), which
    /// the next version's is composed onto.
    pub patch: Vec<u8>,
}

impl Chain {
    /// A chain from the full stored as row `base_id`, `full_bytes` once
    /// inflated.
    pub fn from_full(base_id: i64, full_bytes: usize) -> Chain {
        Chain {
            base_id,
            full_bytes,
            patches: 0,
            patch_bytes: 0,
            patch: b"[]".to_vec(),
        }
    }

    /// Whether a patch against the full of `patch_bytes` may follow, or a
    /// full is due.
    pub fn takes_patch(&self, patch_bytes: usize) -> bool {
        self.patches < MAX_CHAIN
            && patch_bytes * 2 <= self.full_bytes
            && self.patch_bytes + patch_bytes <= self.full_bytes
    }
}

/// Why a stored body cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("its body does not inflate: {0}")]
    Inflate(std::io::Error),
    #[error("its body inflates past {MAX_INFLATED} bytes")]
    TooLarge,
    #[error("its body is not JSON: {0}")]
    Json(serde_json::Error),
    #[error("its body is not JSON: {0}")]
    Parse(deltascope_informer::json_parse::ParseError),
    #[error("its patch does not apply to the version before it: {0}")]
    Patch(json_patch::PatchError),
    #[error("its patch does not apply to the version before it: {0}")]
    TapePatch(PatchApplyError),
    #[error("it is a patch with no full version before it")]
    NoBase,
    #[error("its body kind {0} is not one deltascope writes")]
    Kind(i64),
}

/// Deflates `bytes` (the fastest level: the recorder runs on every change
/// of the cluster, and level 1 keeps most of the gain on JSON). A batch of
/// bodies goes through one [`Deflater`] instead.
pub fn deflate(bytes: &[u8]) -> Vec<u8> {
    Deflater::new().deflate(bytes)
}

/// One compressor reused for many bodies: setting up its tables costs more
/// than deflating a small patch (flate2 on the `zlib-rs` backend).
pub struct Deflater {
    compress: Compress,
}

impl Default for Deflater {
    fn default() -> Self {
        Deflater::new()
    }
}

impl Deflater {
    pub fn new() -> Deflater {
        Deflater {
            compress: Compress::new(Compression::fast(), false),
        }
    }

    /// `bytes` deflated, as a raw deflate stream.
    pub fn deflate(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.compress.reset();
        // Room for the worst case (stored blocks: 5 bytes per 64 KiB) and
        // the stream's end, so one call finishes it.
        let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16_000 * 5 + 64);
        loop {
            let before = self.compress.total_in();
            let consumed = usize::try_from(before).unwrap_or(usize::MAX);
            match self.compress.compress_vec(
                bytes.get(consumed..).unwrap_or_default(),
                &mut out,
                FlushCompress::Finish,
            ) {
                Ok(Status::StreamEnd) => return out,
                Ok(_) => out.reserve(out.capacity().max(64)),
                // Compressing into a Vec with room cannot fail; should it,
                // the stream is started again on a one-shot encoder.
                Err(_) => return deflate_once(bytes),
            }
        }
    }
}

/// What a batch of bodies is written with: a zstd compressor for fulls
/// (with the checksum) and one for patches (without), each set up once.
pub struct Compressor {
    /// Used only if zstd could not set up a context (out of memory): the
    /// bodies are then deflated, as earlier versions wrote them.
    deflater: Deflater,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    zstd_patches: Option<zstd::bulk::Compressor<'static>>,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor::new()
    }
}

impl Compressor {
    pub fn new() -> Compressor {
        // The frame says its content's size: the reader sizes its buffer
        // from it, and refuses one past MAX_INFLATED before inflating.
        let context = |checksum: bool| {
            zstd::bulk::Compressor::new(1).ok().and_then(|mut context| {
                context.include_checksum(checksum).ok()?;
                context.include_contentsize(true).ok()?;
                Some(context)
            })
        };
        Compressor {
            deflater: Deflater::new(),
            zstd: context(true),
            zstd_patches: context(false),
        }
    }

    /// A patch's body.
    pub fn patch(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.zstd_patches.as_mut().map(|zstd| zstd.compress(bytes)) {
            Some(Ok(frame)) => frame,
            _ => self.deflater.deflate(bytes),
        }
    }

    /// A full's body.
    pub fn full(&mut self, text: &[u8]) -> Vec<u8> {
        match self.zstd.as_mut().map(|zstd| zstd.compress(text)) {
            Some(Ok(frame)) => frame,
            _ => self.deflater.deflate(text),
        }
    }
}

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

fn deflate_once(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(bytes.len() / 3), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// A stored body decompressed, refusing one that grows past
/// [`MAX_INFLATED`]; and whether its checksum proved it (a zstd full; a
/// zstd patch carries none).
pub fn decompress(bytes: &[u8]) -> Result<(Vec<u8>, bool), CodecError> {
    if bytes.starts_with(&ZSTD_MAGIC) {
        return unzstd(bytes).map(|text| (text, has_checksum(bytes)));
    }
    inflate(bytes).map(|text| (text, false))
}

/// Whether a zstd frame carries its content's checksum: bit 2 of the
/// frame header's descriptor, the byte after the magic number (RFC 8878,
/// 3.1.1.1.1).
fn has_checksum(frame: &[u8]) -> bool {
    frame
        .get(ZSTD_MAGIC.len())
        .is_some_and(|descriptor| descriptor & 0b100 != 0)
}

/// A zstd frame decompressed (its checksum checked by zstd).
fn unzstd(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    thread_local! {
        static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            RefCell::new(zstd::bulk::Decompressor::new().ok());
    }
    let size = match zstd::zstd_safe::get_frame_content_size(bytes) {
        Ok(Some(size)) => size,
        _ => {
            return Err(CodecError::Inflate(std::io::Error::other(
                "a zstd frame without its size",
            )))
        }
    };
    if size > MAX_INFLATED {
        return Err(CodecError::TooLarge);
    }
    let capacity = usize::try_from(size).map_err(|_| CodecError::TooLarge)?;
    DECOMPRESSOR.with(|decompressor| match decompressor.borrow_mut().as_mut() {
        Some(decompressor) => decompressor
            .decompress(bytes, capacity)
            .map_err(CodecError::Inflate),
        None => zstd::bulk::decompress(bytes, capacity).map_err(CodecError::Inflate),
    })
}

/// Inflates a deflated body, refusing one that grows past [`MAX_INFLATED`].
/// One decompressor per thread is reused: setting one up (its window and
/// tables) cost more than inflating a small patch.
pub fn inflate(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    thread_local! {
        static INFLATER: RefCell<Decompress> = RefCell::new(Decompress::new(false));
    }
    INFLATER.with(|inflater| {
        let mut inflater = inflater.borrow_mut();
        inflater.reset(false);
        let mut out = Vec::with_capacity(bytes.len().saturating_mul(4).max(256));
        loop {
            let consumed = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX);
            let input = bytes.get(consumed..).unwrap_or_default();
            let before_out = inflater.total_out();
            let status = inflater
                .decompress_vec(input, &mut out, FlushDecompress::Finish)
                .map_err(|error| CodecError::Inflate(std::io::Error::other(error)))?;
            if out.len() as u64 > MAX_INFLATED {
                return Err(CodecError::TooLarge);
            }
            match status {
                Status::StreamEnd => return Ok(out),
                // More room, unless nothing moved: the body ends too soon.
                _ if out.len() == out.capacity() => out.reserve(out.capacity()),
                _ if inflater.total_out() == before_out
                    && usize::try_from(inflater.total_in()).unwrap_or(usize::MAX) == consumed =>
                {
                    return Err(CodecError::Inflate(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the deflate stream ends before its last block",
                    )));
                }
                _ => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebuild::Rebuild;

    #[test]
    fn a_full_is_zstd_with_its_checksum_and_an_older_deflated_one_still_reads() {
        let text = br#"{"kind":"Pod","metadata":{"name":"a","labels":{"app":"web"}},"spec":{}}"#;
        let mut compressor = Compressor::new();
        let frame = compressor.full(text);
        assert!(frame.starts_with(&ZSTD_MAGIC));
        assert_eq!(decompress(&frame).unwrap(), (text.to_vec(), true));
        let mut zstd_full = Rebuild::default();
        zstd_full.apply(0, &frame).unwrap();
        assert_eq!(zstd_full.into_text().unwrap().unwrap().as_bytes(), text);
        // a patch is a zstd frame without the checksum: nothing proved
        let patch = br#"[{"op":"add","path":"/spec/x","value":1}]"#;
        let patch_frame = compressor.patch(patch);
        assert!(patch_frame.starts_with(&ZSTD_MAGIC));
        assert_eq!(decompress(&patch_frame).unwrap(), (patch.to_vec(), false));
        // a full or a patch deflated by an earlier version reads as before
        assert_eq!(decompress(&deflate(text)).unwrap(), (text.to_vec(), false));
        assert_eq!(
            decompress(&deflate(patch)).unwrap(),
            (patch.to_vec(), false)
        );
        // one changed byte of a zstd full fails its checksum
        let mut damaged = frame.clone();
        let at = damaged.len() - 6;
        damaged[at] ^= 0x20;
        assert!(matches!(decompress(&damaged), Err(CodecError::Inflate(_))));
        let mut cut = frame;
        cut.truncate(cut.len() - 3);
        assert!(matches!(decompress(&cut), Err(CodecError::Inflate(_))));
    }

    #[test]
    fn a_body_that_inflates_past_the_bound_is_refused() {
        let huge = vec![b' '; (MAX_INFLATED + 10) as usize];
        assert!(matches!(
            inflate(&deflate(&huge)),
            Err(CodecError::TooLarge)
        ));
    }

    #[test]
    fn a_full_is_due_after_the_chain_half_the_bytes_or_a_full_of_patches() {
        let chain = Chain::from_full(1, 1000);
        assert!(chain.takes_patch(100));
        assert!(chain.takes_patch(500));
        assert!(!chain.takes_patch(501));
        assert!(!Chain {
            patches: MAX_CHAIN,
            ..chain.clone()
        }
        .takes_patch(1));
        assert!(Chain {
            patch_bytes: 900,
            ..chain.clone()
        }
        .takes_patch(100));
        assert!(!Chain {
            patch_bytes: 950,
            ..chain
        }
        .takes_patch(60));
    }
}
