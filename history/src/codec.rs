//! How one recorded version is kept: the whole object now and then (a
//! *full* body), and between two fulls a JSON Patch (RFC 6902, written from
//! the informer's compact documents by `JsonValue::patch_to`, applied back
//! with the `json-patch` crate) against the version before it, each
//! deflated (`flate2`). Pod-status churn changes a few fields of a 4 KiB object, so
//! most versions cost the bytes of those fields.
//!
//! [`Chain`] decides when a full is due: after [`MAX_CHAIN`] patches, or
//! once the patches since the last full add up to half of it — bounding
//! both what reading one version costs and what a run of large patches
//! wastes.

use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::{Compress, Compression, FlushCompress, Status};
use serde_json::Value;

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
    #[error("its patch does not apply to the version before it: {0}")]
    Patch(json_patch::PatchError),
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

fn deflate_once(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(bytes.len() / 3), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Inflates a stored body, refusing one that grows past [`MAX_INFLATED`].
pub fn inflate(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(bytes.len() * 4);
    DeflateDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(CodecError::Inflate)?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(CodecError::TooLarge);
    }
    Ok(out)
}

/// Reads a stored body onto `current`: a full replaces it, a patch applies
/// to it (which must then be the version before).
pub fn apply_body(current: &mut Option<Value>, kind: i64, body: &[u8]) -> Result<(), CodecError> {
    let text = inflate(body)?;
    match BodyKind::from_code(kind) {
        Some(BodyKind::Full) => {
            *current = Some(serde_json::from_slice(&text).map_err(CodecError::Json)?);
        }
        Some(BodyKind::Patch) => {
            let patch: json_patch::Patch =
                serde_json::from_slice(&text).map_err(CodecError::Json)?;
            let Some(value) = current.as_mut() else {
                return Err(CodecError::NoBase);
            };
            json_patch::patch(value, &patch).map_err(CodecError::Patch)?;
        }
        None => return Err(CodecError::Kind(kind)),
    }
    Ok(())
}

/// One object's version rebuilt from its stored bodies (a full, then the
/// patches after it), kept as the full's text until a patch needs it as a
/// value: most versions in a past state are a lone full, and their text
/// goes out as stored, checked but never re-serialized.
#[derive(Debug, Default)]
pub struct Rebuild {
    text: Option<Vec<u8>>,
    value: Option<Value>,
}

impl Rebuild {
    /// Reads the next stored body of the object onto it.
    pub fn apply(&mut self, kind: i64, body: &[u8]) -> Result<(), CodecError> {
        let inflated = inflate(body)?;
        match BodyKind::from_code(kind) {
            Some(BodyKind::Full) => {
                serde_json::from_slice::<serde::de::IgnoredAny>(&inflated)
                    .map_err(CodecError::Json)?;
                self.text = Some(inflated);
                self.value = None;
            }
            Some(BodyKind::Patch) => {
                let mut value = match (self.value.take(), self.text.take()) {
                    (Some(value), _) => value,
                    (None, Some(text)) => {
                        serde_json::from_slice(&text).map_err(CodecError::Json)?
                    }
                    (None, None) => return Err(CodecError::NoBase),
                };
                let patch: json_patch::Patch =
                    serde_json::from_slice(&inflated).map_err(CodecError::Json)?;
                json_patch::patch(&mut value, &patch).map_err(CodecError::Patch)?;
                self.value = Some(value);
            }
            None => return Err(CodecError::Kind(kind)),
        }
        Ok(())
    }

    /// The version as JSON text; `None` before any body.
    pub fn into_text(self) -> Option<String> {
        match (self.value, self.text) {
            (Some(value), _) => Some(value.to_string()),
            (None, Some(text)) => String::from_utf8(text).ok(),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltascope_informer::JsonValue;
    use proptest::prelude::*;
    use serde_json::json;

    /// The patch the store writes from `a` to `b` (diffed on their tapes).
    fn patch_between(a: &Value, b: &Value) -> String {
        let tape = |v: &Value| JsonValue::parse(v.to_string().as_bytes()).unwrap();
        String::from_utf8(tape(a).patch_to(&tape(b))).unwrap()
    }

    #[test]
    fn a_full_then_patches_read_back_every_version() {
        let versions = [
            json!({"metadata": {"name": "a", "resourceVersion": "1"}, "status": {"phase": "Pending"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "2"}, "status": {"phase": "Running", "ip": "10.0.0.1"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "3", "labels": {"x": "y"}}, "status": {"phase": "Running"}}),
        ];
        let mut current = None;
        apply_body(
            &mut current,
            0,
            &deflate(versions[0].to_string().as_bytes()),
        )
        .unwrap();
        assert_eq!(current.as_ref(), Some(&versions[0]));
        for pair in versions.windows(2) {
            let patch = patch_between(&pair[0], &pair[1]);
            apply_body(&mut current, 1, &deflate(patch.as_bytes())).unwrap();
            assert_eq!(current.as_ref(), Some(&pair[1]));
        }
    }

    #[test]
    fn a_rebuild_gives_a_lone_full_as_stored_and_a_patched_one_as_its_value() {
        let full = br#"{"b": 1,  "a": [1, 2]}"#;
        let mut lone = Rebuild::default();
        lone.apply(0, &deflate(full)).unwrap();
        assert_eq!(lone.into_text().unwrap().as_bytes(), full);
        let mut patched = Rebuild::default();
        patched.apply(0, &deflate(full)).unwrap();
        patched
            .apply(1, &deflate(br#"[{"op":"replace","path":"/b","value":2}]"#))
            .unwrap();
        let text = patched.into_text().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"a": [1, 2], "b": 2})
        );
        let mut broken = Rebuild::default();
        assert!(matches!(
            broken.apply(0, &deflate(b"{\"a\":")),
            Err(CodecError::Json(_))
        ));
        assert!(matches!(
            Rebuild::default().apply(1, &deflate(b"[]")),
            Err(CodecError::NoBase)
        ));
        assert_eq!(Rebuild::default().into_text(), None);
    }

    #[test]
    fn bad_bodies_are_errors_not_panics() {
        let mut current = None;
        assert!(matches!(
            apply_body(&mut current, 0, b"not deflate"),
            Err(CodecError::Inflate(_)) | Err(CodecError::Json(_))
        ));
        assert!(matches!(
            apply_body(&mut current, 7, &deflate(b"{}")),
            Err(CodecError::Kind(7))
        ));
        assert!(matches!(
            apply_body(&mut current, 1, &deflate(b"[]")),
            Err(CodecError::NoBase)
        ));
        let mut some = Some(json!({"a": 1}));
        let patch = r#"[{"op":"remove","path":"/b"}]"#;
        assert!(matches!(
            apply_body(&mut some, 1, &deflate(patch.as_bytes())),
            Err(CodecError::Patch(_))
        ));
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
            let mut current = Some(a.clone());
            let patch = patch_between(&a, &b);
            apply_body(&mut current, 1, &deflate(patch.as_bytes())).unwrap();
            prop_assert_eq!(current, Some(b));
        }
    }
}
