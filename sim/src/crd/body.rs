//! The body of `POST /_sim/crd`, read and checked before anything is
//! written: `{"installed": BOOL}` (the demo CRD), `{"remove": "PLURAL.GROUP"}`,
//! or a CRD to add —
//! `{"group": G, "version": V, "kind": K, "plural": P, "namespaced": B,
//! "objects": [OBJECT, …]}` (`objects` optional) — with the names held to
//! the apiserver's rules for a CustomResourceDefinition and its objects.
//! Whatever is wrong is a [`BodyError`] (400, said in a Status).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Map, Value};

/// Most objects one added CRD may bring.
pub const MAX_OBJECTS: usize = 1_000;

/// What a `POST /_sim/crd` asks.
#[derive(Debug, Clone, PartialEq)]
pub enum CrdRequest {
    /// Install (`true`) or uninstall the demo CRD.
    Installed(bool),
    /// Add this CRD.
    Add(NewCrd),
    /// Remove the CRD of this name (`plural.group`).
    Remove(String),
}

/// A CRD to add, checked: its resource's names and scope, and its objects
/// (each with `apiVersion`, `kind`, `metadata.name` and, when namespaced,
/// `metadata.namespace` set).
#[derive(Debug, Clone, PartialEq)]
pub struct NewCrd {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    pub objects: Vec<Value>,
}

impl NewCrd {
    /// `plural.group`: the CRD's name.
    pub fn name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddBody {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
    #[serde(default)]
    objects: Vec<Value>,
}

/// Why a body was refused.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("invalid JSON body ({0}); {EXPECTED}")]
    Json(#[source] serde_json::Error),
    #[error("the body must be a JSON object; {EXPECTED}")]
    NotAnObject,
    #[error("{key:?} cannot be combined with other fields; {EXPECTED}")]
    Mixed { key: &'static str },
    #[error("\"installed\" must be a boolean, {{\"installed\": false}} or {{\"installed\": true}}, not {0}")]
    Installed(Value),
    #[error("\"remove\" must name a CRD as PLURAL.GROUP (e.g. \"gadgets.example.com\"), not {0}")]
    Remove(Value),
    #[error("{field} {value:?} is not valid: {why}")]
    Name {
        field: &'static str,
        value: String,
        why: String,
    },
    #[error("at most {MAX_OBJECTS} objects can come with a CRD, not {0}")]
    TooManyObjects(usize),
    #[error("objects[{index}]: {why}")]
    Object { index: usize, why: String },
}

const EXPECTED: &str = r#"expected {"group": "example.com", "version": "v1", "kind": "Gadget", "plural": "gadgets", "namespaced": true, "objects": [{"metadata": {"name": "g1", "namespace": "default"}, "spec": {}}]}, {"remove": "gadgets.example.com"} or {"installed": false}"#;

/// Reads and checks a `POST /_sim/crd` body.
pub fn parse(body: &[u8]) -> Result<CrdRequest, BodyError> {
    let value: Value = serde_json::from_slice(body).map_err(BodyError::Json)?;
    let Value::Object(fields) = value else {
        return Err(BodyError::NotAnObject);
    };
    if let Some(installed) = only(&fields, "installed")? {
        return match installed {
            Value::Bool(b) => Ok(CrdRequest::Installed(*b)),
            other => Err(BodyError::Installed(other.clone())),
        };
    }
    if let Some(remove) = only(&fields, "remove")? {
        return match remove.as_str() {
            Some(name) if name.contains('.') => Ok(CrdRequest::Remove(name.to_string())),
            _ => Err(BodyError::Remove(remove.clone())),
        };
    }
    let add: AddBody = serde_json::from_value(Value::Object(fields)).map_err(BodyError::Json)?;
    check_names(&add)?;
    if add.objects.len() > MAX_OBJECTS {
        return Err(BodyError::TooManyObjects(add.objects.len()));
    }
    let api_version = format!("{}/{}", add.group, add.version);
    let mut keys = BTreeSet::new();
    let mut objects = Vec::with_capacity(add.objects.len());
    for (index, object) in add.objects.into_iter().enumerate() {
        let object = object_of(object, &api_version, &add.kind, add.namespaced)
            .map_err(|why| BodyError::Object { index, why })?;
        let key = (
            object["metadata"]["namespace"].as_str().map(str::to_string),
            object["metadata"]["name"].as_str().map(str::to_string),
        );
        if !keys.insert(key) {
            return Err(BodyError::Object {
                index,
                why: "an earlier object has the same name and namespace".to_string(),
            });
        }
        objects.push(object);
    }
    Ok(CrdRequest::Add(NewCrd {
        group: add.group,
        version: add.version,
        kind: add.kind,
        plural: add.plural,
        namespaced: add.namespaced,
        objects,
    }))
}

/// `fields[key]` when the body holds it, alone.
fn only<'a>(
    fields: &'a Map<String, Value>,
    key: &'static str,
) -> Result<Option<&'a Value>, BodyError> {
    match fields.get(key) {
        Some(_) if fields.len() > 1 => Err(BodyError::Mixed { key }),
        found => Ok(found),
    }
}

/// The apiserver's rules for a CRD's names: the group a DNS subdomain with a
/// dot and outside the Kubernetes project's own domains (those need an API
/// review), the version and plural DNS-1035 labels, the kind one in any case.
fn check_names(add: &AddBody) -> Result<(), BodyError> {
    let bad = |field: &'static str, value: &str, why: &str| BodyError::Name {
        field,
        value: value.to_string(),
        why: why.to_string(),
    };
    if !is_dns_subdomain(&add.group) || !add.group.contains('.') {
        return Err(bad(
            "group",
            &add.group,
            "it must be a DNS subdomain with at least one dot, such as example.com",
        ));
    }
    let protected = ["k8s.io", "kubernetes.io"];
    if protected
        .iter()
        .any(|p| add.group == *p || add.group.ends_with(&format!(".{p}")))
    {
        return Err(bad(
            "group",
            &add.group,
            "groups under k8s.io and kubernetes.io belong to the Kubernetes project",
        ));
    }
    let label = "it must be a DNS-1035 label: lower case letters, digits and '-', starting with a letter (at most 63)";
    if !is_dns1035_label(&add.version) {
        return Err(bad("version", &add.version, label));
    }
    if !is_dns1035_label(&add.plural) {
        return Err(bad("plural", &add.plural, label));
    }
    if !is_dns1035_label(&add.kind.to_ascii_lowercase()) || add.kind.ends_with("List") {
        return Err(bad(
            "kind",
            &add.kind,
            "it must be letters, digits and '-' starting with a letter (such as Gadget), and not end in List",
        ));
    }
    if add.plural.len() + 1 + add.group.len() > 253 {
        return Err(bad(
            "plural",
            &add.plural,
            "the CRD's name PLURAL.GROUP must be at most 253 characters",
        ));
    }
    Ok(())
}

/// One object of the CRD, with `apiVersion`, `kind` and (when namespaced,
/// `default` unless given) its namespace filled in.
fn object_of(
    object: Value,
    api_version: &str,
    kind: &str,
    namespaced: bool,
) -> Result<Value, String> {
    let Value::Object(mut object) = object else {
        return Err("an object must be a JSON object".to_string());
    };
    for (field, want) in [("apiVersion", api_version), ("kind", kind)] {
        match object.get(field) {
            None => {
                object.insert(field.to_string(), Value::String(want.to_string()));
            }
            Some(Value::String(s)) if s == want => {}
            Some(other) => return Err(format!("{field} must be {want:?}, not {other}")),
        }
    }
    let meta = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err("metadata must be a JSON object".to_string());
    };
    match meta.get("name").and_then(Value::as_str) {
        Some(name) if is_dns_subdomain(name) => {}
        Some(name) => return Err(format!("metadata.name {name:?} must be a DNS subdomain (lower case letters, digits, '-' and '.')")),
        None => return Err("metadata.name is required (a string)".to_string()),
    }
    match (namespaced, meta.get("namespace")) {
        (true, None) => {
            meta.insert("namespace".to_string(), Value::String("default".to_string()));
        }
        (true, Some(Value::String(ns))) if is_dns1123_label(ns) => {}
        (true, Some(other)) => {
            return Err(format!(
                "metadata.namespace must be a DNS label (lower case letters, digits and '-'), not {other}"
            ))
        }
        (false, None) => {}
        (false, Some(_)) => {
            return Err("the CRD is cluster-scoped: its objects have no metadata.namespace".to_string())
        }
    }
    Ok(Value::Object(object))
}

/// Lower case letters, digits and '-', starting and ending with a letter
/// or digit, at most 63.
fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 label that starts with a letter.
fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// DNS-1123 labels joined by dots, at most 253.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(body: &str) -> Result<NewCrd, BodyError> {
        match parse(body.as_bytes())? {
            CrdRequest::Add(crd) => Ok(crd),
            other => panic!("not an add: {other:?}"),
        }
    }

    #[test]
    fn the_three_shapes() {
        assert_eq!(
            parse(br#"{"installed": false}"#).ok(),
            Some(CrdRequest::Installed(false))
        );
        assert_eq!(
            parse(br#"{"remove": "gadgets.example.com"}"#).ok(),
            Some(CrdRequest::Remove("gadgets.example.com".into()))
        );
        let crd = add(r#"{"group": "example.com", "version": "v1", "kind": "Gadget", "plural": "gadgets", "namespaced": true, "objects": [{"metadata": {"name": "g1"}, "spec": {"size": 1}}]}"#)
            .expect("a good body");
        assert_eq!(crd.name(), "gadgets.example.com");
        assert_eq!(crd.objects[0]["apiVersion"], "example.com/v1");
        assert_eq!(crd.objects[0]["kind"], "Gadget");
        assert_eq!(crd.objects[0]["metadata"]["namespace"], "default");
        assert_eq!(crd.objects[0]["spec"]["size"], 1);
    }

    #[test]
    fn bad_bodies_say_what_is_wrong() {
        let base = r#""version": "v1", "kind": "Gadget", "plural": "gadgets", "namespaced": true"#;
        for (body, says) in [
            ("not json".to_string(), "invalid JSON body"),
            ("[1]".to_string(), "must be a JSON object"),
            (r#"{"installed": "yes"}"#.to_string(), "must be a boolean"),
            (r#"{"remove": 3}"#.to_string(), "PLURAL.GROUP"),
            (r#"{"remove": "gadgets"}"#.to_string(), "PLURAL.GROUP"),
            (r#"{"remove": "a.b", "installed": true}"#.to_string(), "cannot be combined"),
            (format!(r#"{{"group": "apps", {base}}}"#), "at least one dot"),
            (format!(r#"{{"group": "Example.com", {base}}}"#), "DNS subdomain"),
            (format!(r#"{{"group": "x.k8s.io", {base}}}"#), "Kubernetes project"),
            (r#"{"group": "example.com", "version": "1", "kind": "G", "plural": "gs", "namespaced": true}"#.to_string(), "version"),
            (r#"{"group": "example.com", "version": "v1", "kind": "G", "plural": "Gs", "namespaced": true}"#.to_string(), "plural"),
            (r#"{"group": "example.com", "version": "v1", "kind": "GList", "plural": "gs", "namespaced": true}"#.to_string(), "kind"),
            (r#"{"group": "example.com", "version": "v1", "kind": "G", "plural": "gs"}"#.to_string(), "namespaced"),
            (format!(r#"{{"group": "example.com", {base}, "color": 1}}"#), "unknown field"),
            (format!(r#"{{"group": "example.com", {base}, "objects": [1]}}"#), "objects[0]"),
            (format!(r#"{{"group": "example.com", {base}, "objects": [{{"metadata": {{}}}}]}}"#), "metadata.name is required"),
            (format!(r#"{{"group": "example.com", {base}, "objects": [{{"kind": "Other", "metadata": {{"name": "a"}}}}]}}"#), "kind must be"),
            (format!(r#"{{"group": "example.com", {base}, "objects": [{{"metadata": {{"name": "a"}}}}, {{"metadata": {{"name": "a", "namespace": "default"}}}}]}}"#), "same name"),
            (r#"{"group": "example.com", "version": "v1", "kind": "G", "plural": "gs", "namespaced": false, "objects": [{"metadata": {"name": "a", "namespace": "x"}}]}"#.to_string(), "cluster-scoped"),
        ] {
            let err = parse(body.as_bytes()).expect_err(&body).to_string();
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
