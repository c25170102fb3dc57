//! How one recorded version is kept: the whole object now and then (a
//! *full* body), and between two fulls a JSON Patch (RFC 6902, written from
//! the informer's compact documents by `JsonValue::patch_to`, applied back
//! on them by `JsonValue::apply_patch`) against the version before it.
//! Pod-status churn changes a few fields of a 4 KiB object, so most
//! versions cost the bytes of those fields.
//!
//! A full is compressed with zstd (level 1, with the frame's checksum): it
//! decompresses several times faster than deflate — reading a past state is
//! mostly decompressing fulls — and the checksum proves the text is the
//! JSON that was written, so it goes out without being parsed again. A patch
//! is deflated (`flate2`): for a hundred bytes a zstd frame's header and
//! checksum would cost more than they save. A body says which it is by its
//! first bytes (a zstd frame's magic number, which a raw deflate stream
//! from zlib never starts with); fulls deflated by earlier versions are
//! read as before, and checked as JSON when they go out as stored.
//!
//! [`Chain`] decides when a full is due: after [`MAX_CHAIN`] patches, or
//! once the patches since the last full add up to half of it — bounding
//! both what reading one version costs and what a run of large patches
//! wastes.

use std::cell::RefCell;
use std::io::Write;

use deltascope_informer::{JsonValue, PatchApplyError};
use flate2::write::DeflateEncoder;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Patches at most between two fulls of one object.
pub const MAX_CHAIN: u32 = 8;

/// Bytes a stored body may inflate to (a Kubernetes object is at most
/// about 1.5 MiB; anything far larger is not one of ours).
pub const MAX_INFLATED: u64 = 64 * 1024 * 1024;

/// What a stored body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// The whole object's JSON.
    Full = 0,
    /// A JSON Patch against the same object's previous stored version.
    Patch = 1,
}

impl BodyKind {
    pub fn from_code(code: i64) -> Option<BodyKind> {
        match code {
            0 => Some(BodyKind::Full),
            1 => Some(BodyKind::Patch),
            _ => None,
        }
    }
}

/// Where one object's stored versions stand since its last full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// The row of the last full.
    pub base_id: i64,
    /// Its inflated size.
    pub full_bytes: usize,
    /// Patches stored after it.
    pub patches: u32,
    /// Their inflated bytes together.
    pub patch_bytes: usize,
}

impl Chain {
    /// Whether a patch of `patch_bytes` may follow, or a full is due.
    pub fn takes_patch(&self, patch_bytes: usize) -> bool {
        self.patches < MAX_CHAIN && (self.patch_bytes + patch_bytes) * 2 <= self.full_bytes
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

/// What a batch of bodies is written with: a [`Deflater`] for patches and
/// a zstd compressor for fulls, each set up once.
pub struct Compressor {
    deflater: Deflater,
    /// `None` if zstd could not set up its context (out of memory): fulls
    /// are then deflated, as earlier versions wrote them.
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor::new()
    }
}

impl Compressor {
    pub fn new() -> Compressor {
        let zstd = zstd::bulk::Compressor::new(1).ok().and_then(|mut zstd| {
            zstd.include_checksum(true).ok()?;
            zstd.include_contentsize(true).ok()?;
            Some(zstd)
        });
        Compressor {
            deflater: Deflater::new(),
            zstd,
        }
    }

    /// A patch's body.
    pub fn patch(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.deflater.deflate(bytes)
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
/// [`MAX_INFLATED`]; and whether its checksum proved it (a zstd full).
pub fn decompress(bytes: &[u8]) -> Result<(Vec<u8>, bool), CodecError> {
    if bytes.starts_with(&ZSTD_MAGIC) {
        return unzstd(bytes).map(|text| (text, true));
    }
    inflate(bytes).map(|text| (text, false))
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

/// One object's version rebuilt from its stored bodies (a full, then the
/// patches after it). A full is kept as its text until a patch needs it as
/// a document: most versions in a past state are a lone full, and their
/// text goes out as stored, checked but never re-serialized. A patch is
/// applied on the informer's compact tape (`JsonValue::apply_patch`: the
/// unchanged parts copied as bytes, no tree of allocations); one that holds
/// an operation the tape does not apply goes through the `json-patch`
/// crate instead.
#[derive(Debug, Default, Clone)]
pub struct Rebuild {
    text: Option<Vec<u8>>,
    /// Whether `text` was checked to be JSON.
    checked: bool,
    tape: Option<JsonValue>,
}

impl Rebuild {
    /// Reads the next stored body of the object onto it; on an error it
    /// holds the version it held.
    pub fn apply(&mut self, kind: i64, body: &[u8]) -> Result<(), CodecError> {
        let (inflated, proved) = decompress(body)?;
        match BodyKind::from_code(kind) {
            Some(BodyKind::Full) => {
                // A deflated full is checked when it goes out as text
                // (`check`); a patch parses it anyway.
                self.text = Some(inflated);
                self.checked = proved;
                self.tape = None;
            }
            Some(BodyKind::Patch) => {
                let parsed;
                let base = match (&self.tape, &self.text) {
                    (Some(tape), _) => tape,
                    (None, Some(text)) => {
                        parsed = JsonValue::parse(text).map_err(CodecError::Parse)?;
                        &parsed
                    }
                    (None, None) => return Err(CodecError::NoBase),
                };
                let patch = JsonValue::parse(&inflated).map_err(CodecError::Parse)?;
                let patched = match base.apply_patch(&patch) {
                    Err(PatchApplyError::Unsupported { .. }) => patch_as_values(base, &inflated)?,
                    other => other.map_err(CodecError::TapePatch)?,
                };
                self.tape = Some(patched);
                self.text = None;
            }
            None => return Err(CodecError::Kind(kind)),
        }
        Ok(())
    }

    /// Whether no body was read yet.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.tape.is_none()
    }

    /// Checks that a full that goes out as stored is JSON (a patch's base
    /// is checked by parsing it; a zstd full's checksum proved it).
    pub fn check(&mut self) -> Result<(), CodecError> {
        if let (None, Some(text), false) = (&self.tape, &self.text, self.checked) {
            serde_json::from_slice::<serde::de::IgnoredAny>(text).map_err(CodecError::Json)?;
            self.checked = true;
        }
        Ok(())
    }

    /// Appends the version's JSON text to `out` (nothing before any body),
    /// once [`Rebuild::check`]ed.
    pub fn write_json(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.check()?;
        match (&self.tape, &self.text) {
            (Some(tape), _) => tape.write_text(out),
            (None, Some(text)) => out.extend_from_slice(text),
            (None, None) => {}
        }
        Ok(())
    }

    /// The version as JSON text; `None` before any body.
    pub fn into_text(mut self) -> Result<Option<String>, CodecError> {
        self.check()?;
        Ok(match (self.tape, self.text) {
            (Some(tape), _) => Some(tape.to_string()),
            (None, Some(text)) => String::from_utf8(text).ok(),
            (None, None) => None,
        })
    }
}

/// A patch with an operation the tape does not apply (`move`, `copy`,
/// `test`: none the recorder writes), applied by the `json-patch` crate.
fn patch_as_values(base: &JsonValue, patch: &[u8]) -> Result<JsonValue, CodecError> {
    let patch: json_patch::Patch = serde_json::from_slice(patch).map_err(CodecError::Json)?;
    let mut value = base.to_json();
    json_patch::patch(&mut value, &patch).map_err(CodecError::Patch)?;
    Ok(JsonValue::from(&value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The patch the store writes from `a` to `b` (diffed on their tapes).
    fn patch_between(a: &Value, b: &Value) -> String {
        let tape = |v: &Value| JsonValue::parse(v.to_string().as_bytes()).unwrap();
        String::from_utf8(tape(a).patch_to(&tape(b))).unwrap()
    }

    /// The version a rebuild holds, as a value.
    fn value_of(rebuild: &Rebuild) -> Value {
        let mut text = Vec::new();
        rebuild.clone().write_json(&mut text).unwrap();
        serde_json::from_slice(&text).unwrap()
    }

    #[test]
    fn a_full_then_patches_read_back_every_version() {
        let versions = [
            json!({"metadata": {"name": "a", "resourceVersion": "1"}, "status": {"phase": "Pending"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "2"}, "status": {"phase": "Running", "ip": "10.0.0.1"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "3", "labels": {"x": "y"}}, "status": {"phase": "Running"}}),
        ];
        let mut current = Rebuild::default();
        current
            .apply(0, &deflate(versions[0].to_string().as_bytes()))
            .unwrap();
        assert_eq!(value_of(&current), versions[0]);
        for pair in versions.windows(2) {
            let patch = patch_between(&pair[0], &pair[1]);
            current.apply(1, &deflate(patch.as_bytes())).unwrap();
            assert_eq!(value_of(&current), pair[1]);
        }
    }

    #[test]
    fn a_rebuild_gives_a_lone_full_as_stored_and_a_patched_one_as_its_value() {
        let full = br#"{"b": 1,  "a": [1, 2]}"#;
        let mut lone = Rebuild::default();
        lone.apply(0, &deflate(full)).unwrap();
        assert_eq!(lone.into_text().unwrap().unwrap().as_bytes(), full);
        let mut patched = Rebuild::default();
        patched.apply(0, &deflate(full)).unwrap();
        patched
            .apply(1, &deflate(br#"[{"op":"replace","path":"/b","value":2}]"#))
            .unwrap();
        // on the tape: the members stay where they were
        assert_eq!(
            patched.clone().into_text().unwrap().unwrap(),
            r#"{"b":2,"a":[1,2]}"#
        );
        // an operation the tape does not apply goes through json-patch
        patched
            .apply(1, &deflate(br#"[{"op":"move","from":"/b","path":"/c"}]"#))
            .unwrap();
        assert_eq!(value_of(&patched), json!({"a": [1, 2], "c": 2}));
        let mut broken = Rebuild::default();
        broken.apply(0, &deflate(b"{\"a\":")).unwrap();
        assert!(matches!(broken.check(), Err(CodecError::Json(_))));
        assert!(matches!(broken.into_text(), Err(CodecError::Json(_))));
        assert!(matches!(
            Rebuild::default().apply(1, &deflate(b"[]")),
            Err(CodecError::NoBase)
        ));
        assert!(Rebuild::default().is_empty());
        assert_eq!(Rebuild::default().into_text().unwrap(), None);
    }

    #[test]
    fn bad_bodies_are_errors_not_panics() {
        let mut current = Rebuild::default();
        assert!(matches!(
            current.apply(0, b"not deflate"),
            Err(CodecError::Inflate(_))
        ));
        let cut = deflate(br#"{"a": "a long enough body to be cut short"}"#);
        assert!(matches!(
            current.apply(0, &cut[..cut.len() / 2]),
            Err(CodecError::Inflate(_))
        ));
        assert!(matches!(
            current.apply(7, &deflate(b"{}")),
            Err(CodecError::Kind(7))
        ));
        assert!(matches!(
            current.apply(1, &deflate(b"[]")),
            Err(CodecError::NoBase)
        ));
        current.apply(0, &deflate(br#"{"a":1}"#)).unwrap();
        let patch = r#"[{"op":"remove","path":"/b"}]"#;
        assert!(matches!(
            current.apply(1, &deflate(patch.as_bytes())),
            Err(CodecError::TapePatch(_))
        ));
        assert!(matches!(
            current.apply(1, &deflate(b"[{\"op\":")),
            Err(CodecError::Parse(_))
        ));
        let moved = r#"[{"op":"move","from":"/b","path":"/c"}]"#;
        assert!(matches!(
            current.apply(1, &deflate(moved.as_bytes())),
            Err(CodecError::Patch(_))
        ));
    }

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
        // a patch stays deflated: a zstd frame would outweigh it
        let patch = br#"[{"op":"add","path":"/spec/x","value":1}]"#;
        assert!(!compressor.patch(patch).starts_with(&ZSTD_MAGIC));
        // a full deflated by an earlier version reads as before
        assert_eq!(decompress(&deflate(text)).unwrap(), (text.to_vec(), false));
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
    fn a_full_is_due_after_the_chain_or_half_the_bytes() {
        let chain = Chain {
            base_id: 1,
            full_bytes: 1000,
            patches: 0,
            patch_bytes: 0,
        };
        assert!(chain.takes_patch(100));
        assert!(!chain.takes_patch(501));
        assert!(!Chain {
            patches: MAX_CHAIN,
            ..chain
        }
        .takes_patch(1));
        assert!(!Chain {
            patch_bytes: 450,
            ..chain
        }
        .takes_patch(60));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c~/]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_version_reads_back_from_its_patch(a in json_value(), b in json_value()) {
            let mut current = Rebuild::default();
            current.apply(0, &deflate(a.to_string().as_bytes())).unwrap();
            let patch = patch_between(&a, &b);
            current.apply(1, &deflate(patch.as_bytes())).unwrap();
            prop_assert_eq!(value_of(&current), b);
        }
    }
}
