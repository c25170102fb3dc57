//! The *face* of a stored base: each object cut down to what its table row
//! needs — its identity (key, uid, resourceVersion, labels, owners, times)
//! and the server's cells — stored beside the base, in a few chunks after
//! its own. A warm reopen reads it first and shows every row at once (a
//! face is about a thirteenth of its object, so 100k pods' faces read back
//! in well under a second where their whole base takes seconds); the
//! base's chunks then replace each face with its whole object.
//!
//! What is left out: `metadata.managedFields` and `metadata.annotations`
//! (most of an object's metadata, and no row shows them) and, when the
//! server printed the row's cells, everything outside `apiVersion`, `kind`
//! and `metadata`. Without cells the columns are computed from the object,
//! so the rest of it stays.

use crate::json::{JsonRef, JsonValue};
use crate::object::KubeObject;

/// Members of `metadata` no face keeps.
const LEFT_OUT_OF_METADATA: [&str; 2] = ["managedFields", "annotations"];

/// Root members a face keeps when the row's cells came from the server.
const KEPT_WITH_CELLS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The face of `object`: the same key, uid, resourceVersion and cells,
/// over the value cut down as the module doc says.
pub fn face_of(object: &KubeObject) -> KubeObject {
    let root = object.value.root();
    let Some(members) = root.as_object() else {
        return object.clone();
    };
    let metadata = root
        .get("metadata")
        .and_then(JsonRef::as_object)
        .map(|metadata| {
            JsonValue::object_of(
                metadata
                    .iter()
                    .filter(|(key, _)| !LEFT_OUT_OF_METADATA.contains(key)),
            )
        });
    let with_cells = object.cells.is_some();
    let value = JsonValue::object_of(
        members
            .iter()
            .filter(|(key, _)| !with_cells || KEPT_WITH_CELLS.contains(key))
            .map(|(key, value)| match (key, &metadata) {
                ("metadata", Some(metadata)) => (key, metadata.root()),
                _ => (key, value),
            }),
    );
    KubeObject {
        key: object.key.clone(),
        uid: object.uid.clone(),
        resource_version: object.resource_version.clone(),
        value,
        cells: object.cells.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::RowCells;
    use serde_json::json;

    fn pod() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-1", "namespace": "shop", "uid": "u-1",
                "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "web"},
                "ownerReferences": [{"uid": "rs-1", "kind": "ReplicaSet", "name": "web"}],
                "annotations": {"note": "x".repeat(500)},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running"}
        })
    }

    /// `pod()` without what no face keeps; without `spec` and `status`
    /// too when `with_cells`.
    fn expected_face(with_cells: bool) -> serde_json::Value {
        let mut expected = pod();
        let root = expected.as_object_mut().expect("an object");
        if with_cells {
            root.remove("spec");
            root.remove("status");
        }
        let metadata = root["metadata"].as_object_mut().expect("metadata");
        metadata.remove("annotations");
        metadata.remove("managedFields");
        expected
    }

    #[test]
    fn a_face_with_cells_keeps_identity_and_cells_only() {
        let object = KubeObject::from_json(JsonValue::from(pod()))
            .expect("a pod")
            .with_cells(RowCells::from_texts(["web-1", "1/1", "Running"]));
        let face = face_of(&object);
        assert_eq!(face.value.to_json(), expected_face(true));
        assert_eq!(
            face.value.to_json()["metadata"]["ownerReferences"][0]["uid"],
            "rs-1"
        );
        assert_eq!(
            (&face.key, &face.uid, &face.resource_version, &face.cells),
            (
                &object.key,
                &object.uid,
                &object.resource_version,
                &object.cells
            )
        );
        assert!(face.value.compact_bytes().len() * 2 < object.value.compact_bytes().len());
        let again = KubeObject::from_json(face.value.clone()).expect("a face reads as an object");
        assert_eq!(again.key, object.key);
    }

    #[test]
    fn a_face_without_cells_keeps_what_columns_are_computed_from() {
        let object = KubeObject::from_json(JsonValue::from(pod())).expect("a pod");
        assert_eq!(face_of(&object).value.to_json(), expected_face(false));
    }
}
