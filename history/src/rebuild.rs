//! One object's version rebuilt from its stored bodies: its chain's full,
//! then either its own patch against that full ([`BodyKind::BasePatch`],
//! what deltascope writes) or the patches between versions one after the
//! other ([`BodyKind::Patch`], what earlier versions wrote).
//!
//! A full is kept as its text: a lone full's text goes out as stored,
//! checked but never re-serialized, and a patch against a full proven by
//! its checksum is spliced into that text (`splice`: nothing parsed, the
//! unchanged parts copied as bytes). A patch the text does not take, or a
//! patch between versions, is applied on the informer's compact tape
//! (`JsonValue::apply_patch`), the full parsed into one once and kept; one
//! that holds an operation the tape does not apply goes through the
//! `json-patch` crate instead.

use deltascope_informer::{JsonValue, PatchApplyError};

use crate::codec::{decompress, BodyKind, CodecError};
use crate::splice::splice;

/// An object's chain as read so far, and the version it stands at.
#[derive(Debug, Default, Clone)]
pub struct Rebuild {
    /// The chain's full as stored.
    full: Option<Vec<u8>>,
    /// Whether `full` was checked to be JSON.
    checked: bool,
    /// The full as a document, once a patch needed it.
    full_tape: Option<JsonValue>,
    /// The version, when it is not the full itself.
    patched: Option<Version>,
}

/// A patched version: the full's text with the patch spliced in, or a
/// document.
#[derive(Debug, Clone)]
enum Version {
    Text(Vec<u8>),
    Tape(JsonValue),
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
                self.full = Some(inflated);
                self.checked = proved;
                self.full_tape = None;
                self.patched = None;
            }
            Some(BodyKind::BasePatch) => {
                let spliced = match (&self.full, self.checked) {
                    (Some(full), true) => splice(full, &inflated),
                    _ => None,
                };
                let patched = match spliced {
                    Some(text) => Version::Text(text),
                    None => Version::Tape(apply_patch(self.full_tape()?, &inflated)?),
                };
                self.patched = Some(patched);
            }
            Some(BodyKind::Patch) => {
                let patched = match &self.patched {
                    Some(Version::Tape(version)) => apply_patch(version, &inflated)?,
                    Some(Version::Text(text)) => {
                        let version = JsonValue::parse(text).map_err(CodecError::Parse)?;
                        apply_patch(&version, &inflated)?
                    }
                    None => apply_patch(self.full_tape()?, &inflated)?,
                };
                self.patched = Some(Version::Tape(patched));
            }
            None => return Err(CodecError::Kind(kind)),
        }
        Ok(())
    }

    /// The full as a document, parsed the first time it is asked for.
    fn full_tape(&mut self) -> Result<&JsonValue, CodecError> {
        if self.full_tape.is_none() {
            let text = self.full.as_deref().ok_or(CodecError::NoBase)?;
            self.full_tape = Some(JsonValue::parse(text).map_err(CodecError::Parse)?);
            self.checked = true;
        }
        self.full_tape.as_ref().ok_or(CodecError::NoBase)
    }

    /// The length of the version's text when it is held as text.
    pub fn text_len(&self) -> Option<usize> {
        match (&self.patched, &self.full) {
            (Some(Version::Text(text)), _) | (None, Some(text)) => Some(text.len()),
            _ => None,
        }
    }

    /// Whether no body was read yet.
    pub fn is_empty(&self) -> bool {
        self.full.is_none() && self.patched.is_none()
    }

    /// Checks that a full that goes out as stored is JSON (a patch's base
    /// is checked by parsing it; a zstd full's checksum proved it).
    pub fn check(&mut self) -> Result<(), CodecError> {
        if let (None, Some(text), false) = (&self.patched, &self.full, self.checked) {
            serde_json::from_slice::<serde::de::IgnoredAny>(text).map_err(CodecError::Json)?;
            self.checked = true;
        }
        Ok(())
    }

    /// Appends the version's JSON text to `out` (nothing before any body),
    /// once [`Rebuild::check`]ed.
    pub fn write_json(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.check()?;
        match (&self.patched, &self.full) {
            (Some(Version::Tape(version)), _) => version.write_text(out),
            (Some(Version::Text(text)), _) | (None, Some(text)) => out.extend_from_slice(text),
            (None, None) => {}
        }
        Ok(())
    }

    /// The version as JSON text; `None` before any body.
    pub fn into_text(mut self) -> Result<Option<String>, CodecError> {
        self.check()?;
        Ok(match (self.patched, self.full) {
            (Some(Version::Tape(version)), _) => Some(version.to_string()),
            (Some(Version::Text(text)), _) | (None, Some(text)) => String::from_utf8(text).ok(),
            (None, None) => None,
        })
    }
}

/// `base` with the JSON Patch `patch` (text) applied.
fn apply_patch(base: &JsonValue, patch: &[u8]) -> Result<JsonValue, CodecError> {
    let parsed = JsonValue::parse(patch).map_err(CodecError::Parse)?;
    match base.apply_patch(&parsed) {
        Err(PatchApplyError::Unsupported { .. }) => patch_as_values(base, patch),
        other => other.map_err(CodecError::TapePatch),
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
    use crate::codec::{deflate, Compressor};
    use crate::compose::compose;
    use crate::test_json::{json_value, patch_between};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The version a rebuild holds, as a value.
    fn value_of(rebuild: &Rebuild) -> Value {
        let mut text = Vec::new();
        rebuild.clone().write_json(&mut text).unwrap();
        serde_json::from_slice(&text).unwrap()
    }

    fn versions() -> [Value; 4] {
        [
            json!({"metadata": {"name": "a", "resourceVersion": "1"}, "status": {"phase": "Pending"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "2"}, "status": {"phase": "Running", "ip": "10.0.0.1"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "3", "labels": {"x": "y"}}, "status": {"phase": "Running"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "4"}, "status": {"phase": "Failed"}}),
        ]
    }

    #[test]
    fn a_full_then_patches_between_versions_read_back_every_version() {
        let versions = versions();
        let mut current = Rebuild::default();
        current
            .apply(0, &deflate(versions[0].to_string().as_bytes()))
            .unwrap();
        assert_eq!(value_of(&current), versions[0]);
        for pair in versions.windows(2) {
            let patch = patch_between(&pair[0], &pair[1]);
            current.apply(1, &deflate(&patch)).unwrap();
            assert_eq!(value_of(&current), pair[1]);
        }
    }

    #[test]
    fn a_full_then_patches_against_it_read_back_every_version_in_any_order() {
        let versions = versions();
        let mut patches = Vec::new();
        let mut cumulative = b"[]".to_vec();
        for pair in versions.windows(2) {
            let step = patch_between(&pair[0], &pair[1]);
            cumulative = compose(&cumulative, &step).unwrap();
            patches.push(deflate(&cumulative));
        }
        // a deflated full goes through the tape, a zstd one (proven by its
        // checksum) has the patch spliced into its text
        let text = versions[0].to_string();
        for full in [
            deflate(text.as_bytes()),
            Compressor::new().full(text.as_bytes()),
        ] {
            let mut chain = Rebuild::default();
            chain.apply(0, &full).unwrap();
            let proven = full.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]);
            // each version from the full alone: those between are not needed
            for (patch, version) in patches.iter().zip(&versions[1..]).rev() {
                chain.apply(2, patch).unwrap();
                assert_eq!(value_of(&chain), *version);
            }
            // a patch the text takes is spliced into a proven full's text;
            // a deflated full is proven only once parsed for a patch
            let mut fresh = Rebuild::default();
            fresh.apply(0, &full).unwrap();
            let rv = br#"[{"op":"replace","path":"/metadata/resourceVersion","value":"9"}]"#;
            fresh.apply(2, &deflate(rv)).unwrap();
            assert_eq!(matches!(fresh.patched, Some(Version::Text(_))), proven);
            fresh.apply(2, &deflate(rv)).unwrap();
            assert!(matches!(fresh.patched, Some(Version::Text(_))));
            assert_eq!(value_of(&fresh)["metadata"]["resourceVersion"], "9");
        }
        assert!(matches!(
            Rebuild::default().apply(2, &deflate(b"[]")),
            Err(CodecError::NoBase)
        ));
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
        let patch = br#"[{"op":"remove","path":"/b"}]"#;
        for kind in [1, 2] {
            assert!(matches!(
                current.apply(kind, &deflate(patch)),
                Err(CodecError::TapePatch(_))
            ));
            assert!(matches!(
                current.apply(kind, &deflate(b"[{\"op\":")),
                Err(CodecError::Parse(_))
            ));
        }
        let moved = r#"[{"op":"move","from":"/b","path":"/c"}]"#;
        assert!(matches!(
            current.apply(1, &deflate(moved.as_bytes())),
            Err(CodecError::Patch(_))
        ));
        // the version held is still the full
        assert_eq!(value_of(&current), json!({"a": 1}));
    }

    proptest! {
        #[test]
        fn any_version_reads_back_from_its_patch(a in json_value(), b in json_value()) {
            for kind in [1, 2] {
                let mut current = Rebuild::default();
                current.apply(0, &deflate(a.to_string().as_bytes())).unwrap();
                let patch = patch_between(&a, &b);
                current.apply(kind, &deflate(&patch)).unwrap();
                prop_assert_eq!(value_of(&current), b.clone());
            }
        }
    }
}
