//! Objects of any kind (built-in or CRD) as the informer holds them, and the
//! description of *what* to list and watch.
//!
//! An object stays JSON so that every kind works without generated
//! types — a compact [`JsonValue`] document (about 0.4× its JSON text), not a
//! `serde_json::Value`, which is ten times larger; the three fields everything else needs — the store key
//! (`namespace/name` or `name`), the uid and the resourceVersion — are pulled
//! out once, when the object enters the informer, and shared from then on
//! through an [`ObjectRef`] (`Arc`), so the DeltaFIFO, the store and the
//! history never deep-copy an object.

use deltascope_facts::percent::encode_query_value;
use std::sync::Arc;

use serde_json::Value;

use super::json::{JsonKind, JsonObject, JsonRef, JsonValue};
use super::table::RowCells;

/// An object of any kind with its store key, uid and resourceVersion
/// extracted once.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeObject {
    /// `namespace/name` for namespaced objects, `name` for cluster-scoped ones.
    pub key: String,
    /// `metadata.uid`, empty if the server sent none.
    pub uid: String,
    /// `metadata.resourceVersion`, an opaque string (never compared as a number).
    pub resource_version: String,
    /// The whole object as the server sent it.
    pub value: JsonValue,
    /// The cells of the object's Table row when the server printed it
    /// (table mode, `includeObject=Object`); `None` for plain objects.
    pub cells: Option<RowCells>,
}

/// Shared handle to an object: the store, the DeltaFIFO and the history all
/// point at the same allocation.
pub type ObjectRef = Arc<KubeObject>;

/// Why a JSON value is not usable as a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    #[error("the object is not a JSON object (found {found})")]
    NotAnObject { found: &'static str },
    #[error("the object has no `metadata` map")]
    MissingMetadata,
    #[error("the object has no `metadata.name` (or it is empty or not a string)")]
    MissingName,
    #[error("`metadata.{field}` is not a string")]
    NotAString { field: &'static str },
}

fn kind_of(v: JsonRef<'_>) -> &'static str {
    match v.kind() {
        JsonKind::Null => "null",
        JsonKind::Bool(_) => "a boolean",
        JsonKind::Number(_) => "a number",
        JsonKind::String(_) => "a string",
        JsonKind::Array(_) => "an array",
        JsonKind::Object(_) => "an object",
    }
}

fn opt_str<'a>(meta: JsonObject<'a>, field: &'static str) -> Result<Option<&'a str>, ObjectError> {
    match meta.get(field).map(JsonRef::kind) {
        None | Some(JsonKind::Null) => Ok(None),
        Some(JsonKind::String(s)) => Ok(Some(s)),
        Some(_) => Err(ObjectError::NotAString { field }),
    }
}

/// The store key of an object: `namespace/name`, or `name` when the namespace
/// is absent or empty (client-go's `MetaNamespaceKeyFunc`).
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => {
            let mut k = String::with_capacity(ns.len() + 1 + name.len());
            k.push_str(ns);
            k.push('/');
            k.push_str(name);
            k
        }
        _ => name.to_owned(),
    }
}

impl KubeObject {
    /// Heap bytes held by this object (its shared allocation, the extracted
    /// strings and the compact JSON document).
    pub fn held_bytes(&self) -> usize {
        use super::json::allocation;
        allocation(std::mem::size_of::<KubeObject>() + 16)
            + allocation(self.key.len())
            + allocation(self.uid.len())
            + allocation(self.resource_version.len())
            + self.value.held_bytes()
    }

    /// Extracts key, uid and resourceVersion from `value` (converted to the
    /// compact form). Fails (never panics) if the value has no
    /// `metadata.name`.
    pub fn from_value(value: Value) -> Result<KubeObject, ObjectError> {
        KubeObject::from_json(JsonValue::from(value))
    }

    /// [`KubeObject::from_value`] for a value already in compact form (what
    /// the decoders produce).
    pub fn from_json(value: JsonValue) -> Result<KubeObject, ObjectError> {
        // every object the informer holds comes through here: its
        // managedFields' sets and container specs are held once
        let value = value.with_shared_subtrees();
        let root = value.root();
        let Some(obj) = root.as_object() else {
            return Err(ObjectError::NotAnObject {
                found: kind_of(root),
            });
        };
        let Some(meta) = obj.get("metadata").and_then(JsonRef::as_object) else {
            return Err(ObjectError::MissingMetadata);
        };
        let name = match opt_str(meta, "name")? {
            Some(n) if !n.is_empty() => n,
            _ => return Err(ObjectError::MissingName),
        };
        let key = object_key(opt_str(meta, "namespace")?, name);
        let uid = opt_str(meta, "uid")?.unwrap_or_default().to_owned();
        let resource_version = opt_str(meta, "resourceVersion")?
            .unwrap_or_default()
            .to_owned();
        Ok(KubeObject {
            key,
            uid,
            resource_version,
            value,
            cells: None,
        })
    }

    /// The same object with the cells of its Table row.
    pub fn with_cells(mut self, cells: RowCells) -> KubeObject {
        self.cells = Some(cells);
        self
    }

    /// Convenience: `from_value` wrapped in an [`ObjectRef`].
    pub fn into_ref(self) -> ObjectRef {
        Arc::new(self)
    }

    fn meta(&self) -> Option<JsonObject<'_>> {
        self.value.get("metadata").and_then(JsonRef::as_object)
    }

    /// The namespace, `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        match self.key.find('/') {
            Some(i) => Some(&self.key[..i]),
            None => None,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match self.key.find('/') {
            Some(i) => &self.key[i + 1..],
            None => &self.key,
        }
    }

    /// `metadata.labels` as `(key, value)` pairs (non-string values skipped).
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.meta()
            .and_then(|m| m.get("labels"))
            .and_then(JsonRef::as_object)
            .into_iter()
            .flat_map(JsonObject::iter)
            .filter_map(|(k, v)| v.as_str().map(|v| (k, v)))
    }

    /// The uids of `metadata.ownerReferences`.
    pub fn owner_uids(&self) -> impl Iterator<Item = &str> {
        self.meta()
            .and_then(|m| m.get("ownerReferences"))
            .and_then(JsonRef::as_array)
            .into_iter()
            .flat_map(|a| a.iter())
            .filter_map(|r| r.get("uid").and_then(JsonRef::as_str))
    }
}

/// Which API resource an informer lists and watches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceRef {
    /// API group, `""` for the core group.
    pub group: String,
    pub version: String,
    /// Plural resource name as used in URLs (`pods`, `deployments`).
    pub plural: String,
    pub namespaced: bool,
}

impl ResourceRef {
    pub fn new(group: &str, version: &str, plural: &str, namespaced: bool) -> ResourceRef {
        ResourceRef {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            namespaced,
        }
    }

    /// The collection path: `/api/v1/pods`, `/api/v1/namespaces/ns/pods`,
    /// `/apis/apps/v1/deployments`. The namespace is ignored for
    /// cluster-scoped resources. Path segments are percent-encoded.
    pub fn api_path(&self, namespace: Option<&str>) -> String {
        let mut p = String::new();
        if self.group.is_empty() {
            p.push_str("/api/");
        } else {
            p.push_str("/apis/");
            p.push_str(&encode_query_value(&self.group));
            p.push('/');
        }
        p.push_str(&encode_query_value(&self.version));
        if self.namespaced {
            if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
                p.push_str("/namespaces/");
                p.push_str(&encode_query_value(ns));
            }
        }
        p.push('/');
        p.push_str(&encode_query_value(&self.plural));
        p
    }

    /// The name used by the `store-stats` DOM hook: `pods`,
    /// `deployments.apps`.
    pub fn stats_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_is_namespace_slash_name_or_name() {
        // client-go MetaNamespaceKeyFunc
        let o = KubeObject::from_value(
            json!({"metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7"}}),
        )
        .unwrap();
        assert_eq!(o.key, "ns/a");
        assert_eq!(o.namespace(), Some("ns"));
        assert_eq!(o.name(), "a");
        assert_eq!(o.uid, "u");
        assert_eq!(o.resource_version, "7");
        let o = KubeObject::from_value(json!({"metadata":{"name":"n1"}})).unwrap();
        assert_eq!(o.key, "n1");
        assert_eq!(o.namespace(), None);
        let o = KubeObject::from_value(json!({"metadata":{"name":"n1","namespace":""}})).unwrap();
        assert_eq!(o.key, "n1");
    }

    #[test]
    fn bad_objects_are_errors_not_panics() {
        assert!(matches!(
            KubeObject::from_value(json!([1])),
            Err(ObjectError::NotAnObject { .. })
        ));
        assert_eq!(
            KubeObject::from_value(json!({})),
            Err(ObjectError::MissingMetadata)
        );
        assert_eq!(
            KubeObject::from_value(json!({"metadata":{}})),
            Err(ObjectError::MissingName)
        );
        assert_eq!(
            KubeObject::from_value(json!({"metadata":{"name":"a","namespace":3}})),
            Err(ObjectError::NotAString { field: "namespace" })
        );
    }

    #[test]
    fn labels_and_owners() {
        let o = KubeObject::from_value(json!({"metadata":{"name":"a","labels":{"app":"web","n":1},
            "ownerReferences":[{"uid":"o1"},{"uid":"o2"}]}}))
        .unwrap();
        assert_eq!(o.labels().collect::<Vec<_>>(), vec![("app", "web")]);
        assert_eq!(o.owner_uids().collect::<Vec<_>>(), vec!["o1", "o2"]);
    }

    #[test]
    fn api_paths_and_stats_names() {
        let pods = ResourceRef::new("", "v1", "pods", true);
        assert_eq!(pods.api_path(None), "/api/v1/pods");
        assert_eq!(pods.api_path(Some("ns")), "/api/v1/namespaces/ns/pods");
        assert_eq!(pods.stats_name(), "pods");
        let d = ResourceRef::new("apps", "v1", "deployments", true);
        assert_eq!(d.api_path(None), "/apis/apps/v1/deployments");
        assert_eq!(d.stats_name(), "deployments.apps");
        let n = ResourceRef::new("", "v1", "nodes", false);
        assert_eq!(n.api_path(Some("ns")), "/api/v1/nodes");
    }
}
