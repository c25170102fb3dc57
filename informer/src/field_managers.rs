//! Who changed an object: its `metadata.managedFields` read exactly, and an
//! update's changed fields attributed to the field managers that made it.
//!
//! Each managed-fields entry names a manager (`kubectl-client-side-apply`,
//! `kube-controller-manager`), an operation (`Apply`/`Update`), a
//! subresource (`status`, `scale`, or none), a time, and the set of fields
//! it owns as a FieldsV1 trie: keys `f:<field>`, `k:<json of a list item's
//! keys>`, `v:<json of a set item>`, `i:<index>`, and `.` for the node
//! itself (structured-merge-diff's format). An update is attributed like
//! this: the changed fields are the paths of the JSON patch between the two
//! versions (the diff the page shows, walked here without copying a value;
//! `metadata.managedFields` and `metadata.resourceVersion` are bookkeeping
//! and left out, unwalked); the managers
//! of the update are those whose entry is new or differs (time, fields)
//! from the previous version; each changed field goes to those of them
//! whose set claims it (the field, a field above it, or one inside it) —
//! in the new version for a field set or changed, in the old one for a
//! field removed. A field no changed manager claims is unattributed: it is
//! never guessed.
//!
//! Everything here reads the informer's compact documents ([`JsonRef`]) as
//! the history holds them: an unchanged subtree or managers' entry is one
//! comparison of its bytes, and nothing is converted to a
//! `serde_json::Value` but the few changed values a line shows.

use std::collections::{BTreeMap, HashMap};

use crate::json::{EncodedMember, JsonKind, JsonObject, JsonRef};
use serde_json::{Map, Value};

/// One managed-fields entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: String,
    /// `""` for the main resource.
    pub subresource: String,
    pub time: Option<String>,
    pub fields: FieldSet,
}

/// One managed-fields entry as the object holds it, its field set not read
/// yet: an update reads only the sets of the managers that made it.
#[derive(Clone, Copy)]
struct EntryRef<'a> {
    value: JsonRef<'a>,
    manager: &'a str,
    operation: &'a str,
    subresource: &'a str,
}

impl<'a> EntryRef<'a> {
    /// Manager, operation and subresource: what identifies an entry.
    fn identity(&self) -> (&'a str, &'a str, &'a str) {
        (self.manager, self.operation, self.subresource)
    }

    fn text(&self, key: &str) -> Option<&'a str> {
        self.value.get(key).and_then(JsonRef::as_str)
    }

    fn fields(&self) -> Result<FieldSet, FieldsError> {
        match self.value.get("fieldsV1") {
            Some(fields) => FieldSet::parse(fields),
            None => Ok(FieldSet::default()),
        }
    }
}

/// The entries of `object`'s `metadata.managedFields` (none without it).
fn entry_refs(object: JsonRef<'_>) -> Result<Vec<EntryRef<'_>>, FieldsError> {
    let Some(entries) = object.pointer("/metadata/managedFields") else {
        return Ok(Vec::new());
    };
    let entries = entries.as_array().ok_or(FieldsError::NotAList)?;
    entries
        .iter()
        .map(|value| {
            let text = |key: &str| value.get(key).and_then(JsonRef::as_str);
            Ok(EntryRef {
                value,
                manager: text("manager").ok_or(FieldsError::NoManager)?,
                operation: text("operation").unwrap_or_default(),
                subresource: text("subresource").unwrap_or_default(),
            })
        })
        .collect()
}

/// One step into a FieldsV1 trie.
#[derive(Debug, Clone, PartialEq)]
pub enum PathElement {
    /// `f:name`: a field of a struct, or a key of a map.
    Field(String),
    /// `k:{"name":"web"}`: the list item whose key fields have these values.
    Key(Map<String, Value>),
    /// `v:"a"`: the set item equal to this value.
    Value(Value),
    /// `i:3`: the list item at this position.
    Index(usize),
}

impl PathElement {
    fn parse(key: &str) -> Option<PathElement> {
        let (kind, rest) = key.split_once(':')?;
        match kind {
            "f" => Some(PathElement::Field(rest.to_owned())),
            "k" => match serde_json::from_slice(rest.as_bytes()).ok()? {
                Value::Object(keys) => Some(PathElement::Key(keys)),
                _ => None,
            },
            "v" => serde_json::from_slice(rest.as_bytes())
                .ok()
                .map(PathElement::Value),
            "i" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }

    /// Whether this element names `item`, the list item at `index`.
    fn names_item(&self, index: usize, item: JsonRef<'_>) -> bool {
        match self {
            PathElement::Index(i) => *i == index,
            PathElement::Value(v) => item == *v,
            PathElement::Key(keys) => keys
                .iter()
                .all(|(k, v)| item.get(k).is_some_and(|field| field == *v)),
            PathElement::Field(_) => false,
        }
    }
}

/// A FieldsV1 set: whether the node itself is a member, and its children.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSet {
    /// `"."` was present, or the node is a leaf (`{}`): the node itself is owned.
    pub owns_self: bool,
    pub children: Vec<(PathElement, FieldSet)>,
}

impl FieldSet {
    fn parse(value: JsonRef<'_>) -> Result<FieldSet, FieldsError> {
        let Some(members) = value.as_object() else {
            return Err(FieldsError::NotAnObject);
        };
        let mut set = FieldSet {
            owns_self: members.is_empty(),
            children: Vec::new(),
        };
        for (key, child) in members.iter() {
            if key == "." {
                set.owns_self = true;
                continue;
            }
            let element =
                PathElement::parse(key).ok_or_else(|| FieldsError::BadKey(key.to_owned()))?;
            set.children.push((element, FieldSet::parse(child)?));
        }
        Ok(set)
    }

    /// Whether this set claims a change at `path` (steps resolved against
    /// the object): it owns the path, a node above it, or something inside.
    fn claims(&self, path: &[Step<'_>]) -> bool {
        let Some((step, rest)) = path.split_first() else {
            return self.owns_self || !self.children.is_empty();
        };
        if self.owns_self && self.children.is_empty() {
            return true; // an atomic field: everything inside is its
        }
        self.children
            .iter()
            .filter(|(element, _)| step.matches(element))
            .any(|(_, child)| child.claims(rest))
    }
}

/// Why managed fields could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsError {
    #[error("metadata.managedFields is not a list")]
    NotAList,
    #[error("a managedFields entry has no manager")]
    NoManager,
    #[error("a fieldsV1 node is not an object")]
    NotAnObject,
    #[error("a fieldsV1 key {0:?} is none of f:, k:, v:, i: or .")]
    BadKey(String),
}

/// The managed-fields entries of an object (none if it has no
/// `metadata.managedFields`).
pub fn managed_fields(object: JsonRef<'_>) -> Result<Vec<ManagedFieldsEntry>, FieldsError> {
    entry_refs(object)?
        .into_iter()
        .map(|entry| {
            Ok(ManagedFieldsEntry {
                manager: entry.manager.to_owned(),
                operation: entry.operation.to_owned(),
                subresource: entry.subresource.to_owned(),
                time: entry.text("time").map(str::to_owned),
                fields: entry.fields()?,
            })
        })
        .collect()
}

/// One step of a changed path, resolved against the object it is in (the
/// new version for a field set or changed, the old one for a removal).
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Field(&'a str),
    Item { index: usize, item: JsonRef<'a> },
}

impl Step<'_> {
    fn matches(&self, element: &PathElement) -> bool {
        match (self, element) {
            (Step::Field(name), PathElement::Field(field)) => name == field,
            (Step::Item { index, item }, element) => element.names_item(*index, *item),
            _ => false,
        }
    }
}

/// One changed field: where, and its value before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    /// `.spec.replicas`, `.spec.containers[name=web].image`.
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// A manager of an update and the changed fields it owns.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerChange {
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub time: Option<String>,
    pub changes: Vec<FieldChange>,
}

/// Who made an update.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attribution {
    /// Managers whose entry is new or changed, in the new version's order.
    pub managers: Vec<ManagerChange>,
    /// Changed fields no changed manager claims.
    pub unattributed: Vec<FieldChange>,
}

/// Attributes the update `old` → `new` to its field managers. Only the
/// field sets of the managers that made it are read (in `old` too, for a
/// field removed): a set nobody changed is not looked at, however large.
pub fn attribute(old: JsonRef<'_>, new: JsonRef<'_>) -> Result<Attribution, FieldsError> {
    let old_entries = entry_refs(old)?;
    let new_entries = entry_refs(new)?;
    // Inserted one by one rather than collected: `collect` into a BTreeMap
    // sorts first, a copy of the standard sort the page would download for
    // a handful of entries.
    let mut before = BTreeMap::new();
    for entry in &old_entries {
        before.insert(entry.identity(), entry);
    }
    let changed: Vec<&EntryRef<'_>> = new_entries
        .iter()
        .filter(|e| before.get(&e.identity()).is_none_or(|b| b.value != e.value))
        .collect();
    let new_sets: Vec<FieldSet> = changed
        .iter()
        .map(|e| e.fields())
        .collect::<Result<_, _>>()?;
    // The same managers' sets in `old`, read at the first field removed.
    let mut old_sets: Option<Vec<FieldSet>> = None;
    let mut attribution = Attribution {
        managers: changed
            .iter()
            .map(|e| ManagerChange {
                manager: e.manager.to_owned(),
                operation: e.operation.to_owned(),
                subresource: e.subresource.to_owned(),
                time: e.text("time").map(str::to_owned),
                changes: Vec::new(),
            })
            .collect(),
        unattributed: Vec::new(),
    };
    for path in changed_paths(old, new) {
        let sets: &[FieldSet] = if path.removed {
            if old_sets.is_none() {
                let sets = changed
                    .iter()
                    .zip(&new_sets)
                    .map(|(e, new_set)| match before.get(&e.identity()) {
                        Some(b) => b.fields(),
                        None => Ok(new_set.clone()),
                    })
                    .collect::<Result<_, _>>()?;
                old_sets = Some(sets);
            }
            old_sets.as_deref().unwrap_or_default()
        } else {
            &new_sets
        };
        let steps = path.steps();
        let change = FieldChange {
            path: display_path(&steps),
            old: path.old.map(JsonRef::to_json),
            new: path.new.map(JsonRef::to_json),
        };
        let mut claimers = attribution
            .managers
            .iter_mut()
            .zip(sets)
            .filter(|(_, set)| set.claims(&steps))
            .map(|(manager, _)| manager);
        match claimers.next() {
            None => attribution.unattributed.push(change),
            Some(mut claimer) => {
                for next in claimers {
                    claimer.changes.push(change.clone());
                    claimer = next;
                }
                claimer.changes.push(change);
            }
        }
    }
    Ok(attribution)
}

/// One path of the JSON patch between two versions: where (the walk's
/// steps to it), whether the field was removed (else added or replaced),
/// and its two values.
struct ChangedPath<'a> {
    path: Vec<Token<'a>>,
    removed: bool,
    old: Option<JsonRef<'a>>,
    new: Option<JsonRef<'a>>,
}

impl<'a> ChangedPath<'a> {
    /// The steps, resolved against the version the field is in: the new
    /// one for a field set or changed, the old one for a removal.
    fn steps(&self) -> Vec<Step<'a>> {
        self.path
            .iter()
            .filter_map(|token| match *token {
                Token::Key(key) => Some(Step::Field(key)),
                Token::Index {
                    index, old, new, ..
                } => {
                    let item = if self.removed { old } else { new };
                    item.map(|item| Step::Item { index, item })
                }
            })
            .collect()
    }

    /// json-patch's JSON-pointer tokens.
    #[cfg(test)]
    fn tokens(&self) -> Vec<String> {
        self.path
            .iter()
            .map(|token| match token {
                Token::Key(key) => (*key).to_owned(),
                Token::Index { patch_index, .. } => patch_index.to_string(),
            })
            .collect()
    }
}

/// One step of a path being walked: a key, or a list position with the
/// item there in each version.
#[derive(Clone, Copy)]
enum Token<'a> {
    Key(&'a str),
    Index {
        /// json-patch's position: a list item removed shifts the ones after
        /// it (the tests hold the walk to json-patch's paths with it).
        #[cfg_attr(not(test), allow(dead_code))]
        patch_index: usize,
        index: usize,
        old: Option<JsonRef<'a>>,
        new: Option<JsonRef<'a>>,
    },
}

/// The paths of `json_patch::diff(old, new)`, with its positions (a list
/// item removed shifts the ones after it) and in its order for members
/// that come in key order, less the server's bookkeeping, which is not
/// walked: `managedFields` is often most of an object. Equal subtrees are
/// passed over on one comparison of their bytes; no value is copied.
fn changed_paths<'a>(old: JsonRef<'a>, new: JsonRef<'a>) -> Vec<ChangedPath<'a>> {
    let mut out = Vec::new();
    walk(old, new, &mut Vec::new(), &mut out);
    out
}

fn walk<'a>(
    left: JsonRef<'a>,
    right: JsonRef<'a>,
    path: &mut Vec<Token<'a>>,
    out: &mut Vec<ChangedPath<'a>>,
) {
    if left.bytes == right.bytes || is_bookkeeping(path) {
        return;
    }
    match (left.kind(), right.kind()) {
        (JsonKind::Object(lefts), JsonKind::Object(rights)) => {
            walk_members(lefts, rights, path, out)
        }
        (JsonKind::Array(lefts), JsonKind::Array(rights)) => {
            let (mut lefts, mut rights) = (lefts.iter(), rights.iter());
            let (mut index, mut shift) = (0, 0);
            loop {
                let (old, new) = (lefts.next(), rights.next());
                if old.is_none() && new.is_none() {
                    break;
                }
                path.push(Token::Index {
                    patch_index: index - shift,
                    index,
                    old,
                    new,
                });
                match (old, new) {
                    (Some(old), Some(new)) => walk(old, new, path, out),
                    (Some(_), None) => {
                        shift += 1;
                        push(path, old, None, out);
                    }
                    _ => push(path, None, new, out),
                }
                path.pop();
                index += 1;
            }
        }
        _ if left == right => {}
        _ => push(path, Some(left), Some(right), out),
    }
}

/// The members of two versions of an object: each member of `rights` with
/// the member of `lefts` of the same key (walked when their bytes differ)
/// or added; then the members of `lefts` left over, removed.
fn walk_members<'a>(
    lefts: JsonObject<'a>,
    rights: JsonObject<'a>,
    path: &mut Vec<Token<'a>>,
    out: &mut Vec<ChangedPath<'a>>,
) {
    let mut step = |key: JsonRef<'a>, old: Option<JsonRef<'a>>, new: Option<JsonRef<'a>>| {
        path.push(Token::Key(key.as_str().unwrap_or_default()));
        match (old, new) {
            (Some(old), Some(new)) => walk(old, new, path, out),
            _ => push(path, old, new, out),
        }
        path.pop();
    };
    // Two versions almost always list their members in the same order:
    // pair them in order while the keys agree (`JsonRef`'s equality: their
    // bytes, else their text), passing over equal members on long
    // comparisons of their bytes.
    let mut pairs = lefts.differing_members(rights);
    let parted = loop {
        match pairs.next() {
            None => return,
            Some((Some(left), Some(right))) if left.key == right.key => {
                step(right.key, Some(left.value), Some(right.value));
            }
            Some(parted) => break parted,
        }
    };
    let (left_members, right_members) = pairs.rest();
    // The orders parted (or one version has more): the rest by key.
    let rest: Vec<(&'a str, EncodedMember<'a>)> = parted
        .0
        .into_iter()
        .chain(left_members)
        .map(|member| (member.key.as_str().unwrap_or_default(), member))
        .collect();
    let by_key: HashMap<&str, usize> = rest.iter().enumerate().map(|(i, (k, _))| (*k, i)).collect();
    let mut matched = vec![false; rest.len()];
    for right in parted.1.into_iter().chain(right_members) {
        match by_key.get(right.key.as_str().unwrap_or_default()) {
            Some(&i) => {
                matched[i] = true;
                step(right.key, Some(rest[i].1.value), Some(right.value));
            }
            None => step(right.key, None, Some(right.value)),
        }
    }
    for ((_, left), _) in rest.iter().zip(&matched).filter(|(_, m)| !**m) {
        step(left.key, Some(left.value), None);
    }
}

/// Records the changed path `path`: removed when it has no new value.
fn push<'a>(
    path: &[Token<'a>],
    old: Option<JsonRef<'a>>,
    new: Option<JsonRef<'a>>,
    out: &mut Vec<ChangedPath<'a>>,
) {
    if is_bookkeeping(path) {
        return;
    }
    out.push(ChangedPath {
        path: path.to_vec(),
        removed: new.is_none(),
        old,
        new,
    });
}

/// `metadata.managedFields` and `metadata.resourceVersion` change with
/// every write: the server's bookkeeping, not anyone's change.
fn is_bookkeeping(path: &[Token<'_>]) -> bool {
    matches!(
        path,
        [
            Token::Key("metadata"),
            Token::Key("managedFields" | "resourceVersion"),
            ..
        ]
    )
}

/// `.spec.containers[name=web].image`: list items by their `name` when
/// they have one, else by position.
fn display_path(steps: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Step::Item { index, item } => match item.get("name").and_then(JsonRef::as_str) {
                Some(name) => out.push_str(&format!("[name={name}]")),
                None => out.push_str(&format!("[{index}]")),
            },
        }
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

/// The field managers that wrote `new` over `old`: those whose
/// `managedFields` entry (manager, operation, subresource) is new or whose
/// time or field set changed — the managers of an update, read without
/// parsing the field sets or diffing the objects, so it is cheap enough to
/// keep for every recorded delta (the delta list filters by it). With no
/// `old` (a creation) every manager of `new` wrote it. In `new`'s order.
pub fn writers(old: Option<JsonRef<'_>>, new: JsonRef<'_>) -> Vec<String> {
    fn entries(object: JsonRef<'_>) -> Vec<JsonRef<'_>> {
        object
            .pointer("/metadata/managedFields")
            .and_then(JsonRef::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }
    fn text<'a>(entry: JsonRef<'a>, field: &str) -> &'a str {
        entry.get(field).and_then(JsonRef::as_str).unwrap_or("")
    }
    let identity = |e: JsonRef<'_>| {
        (
            text(e, "manager").to_owned(),
            text(e, "operation").to_owned(),
            text(e, "subresource").to_owned(),
        )
    };
    let before = old.map(entries).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for entry in entries(new) {
        let id = identity(entry);
        let previous = before.iter().find(|b| identity(**b) == id);
        let changed = match previous {
            None => true,
            Some(previous) => {
                text(*previous, "time") != text(entry, "time")
                    || previous.get("fieldsV1") != entry.get("fieldsV1")
            }
        };
        if changed && !out.contains(&id.0) {
            out.push(id.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::json::JsonValue;
    use serde_json::json;

    /// [`attribute`] of two versions written as `serde_json` values.
    fn attribute_values(old: &Value, new: &Value) -> Result<Attribution, FieldsError> {
        attribute(JsonValue::from(old).root(), JsonValue::from(new).root())
    }

    /// [`managed_fields`] of an object written as a `serde_json` value.
    fn managed_fields_of(object: &Value) -> Result<Vec<ManagedFieldsEntry>, FieldsError> {
        managed_fields(JsonValue::from(object).root())
    }

    fn deployment(
        replicas: u64,
        ready: u64,
        image: &str,
        entries: Value,
        resource_version: &str,
    ) -> Value {
        json!({
            "metadata": {"name": "web", "resourceVersion": resource_version, "managedFields": entries},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "web", "image": image}, {"name": "sidecar", "image": "envoy"}]}}},
            "status": {"readyReplicas": ready}
        })
    }

    fn apply_entry(time: &str) -> Value {
        json!({"manager": "kubectl-client-side-apply", "operation": "Update", "time": time,
               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {
                   "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}})
    }

    fn status_entry(time: &str) -> Value {
        json!({"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
               "time": time, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:readyReplicas": {}}}})
    }

    #[test]
    fn reads_fieldsv1_exactly() {
        let object = deployment(3, 3, "nginx", json!([apply_entry("t1")]), "1");
        let entries = managed_fields_of(&object).expect("valid managed fields");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].manager, "kubectl-client-side-apply");
        let spec = &entries[0].fields.children[0];
        assert_eq!(spec.0, PathElement::Field("spec".into()));
        let containers = &spec.1.children[1].1.children[0].1.children[0].1;
        let (key, item) = &containers.children[0];
        assert_eq!(
            key,
            &PathElement::Key(
                json!({"name": "web"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
        assert!(item.owns_self);
        assert_eq!(
            PathElement::parse("v:\"a\""),
            Some(PathElement::Value(json!("a")))
        );
        assert_eq!(PathElement::parse("i:3"), Some(PathElement::Index(3)));
        assert_eq!(PathElement::parse("x:3"), None);
    }

    #[test]
    fn each_changed_field_goes_to_the_manager_that_owns_it() {
        let old = deployment(
            3,
            3,
            "nginx",
            json!([apply_entry("t1"), status_entry("t1")]),
            "1",
        );
        // kubectl scaled to 5; the controller reported 4 ready
        let new = deployment(
            5,
            4,
            "nginx",
            json!([apply_entry("t2"), status_entry("t2")]),
            "2",
        );
        let who = attribute_values(&old, &new).expect("attributed");
        assert_eq!(who.managers.len(), 2);
        let kubectl = &who.managers[0];
        assert_eq!(kubectl.manager, "kubectl-client-side-apply");
        assert_eq!(kubectl.changes.len(), 1);
        assert_eq!(kubectl.changes[0].path, ".spec.replicas");
        assert_eq!(kubectl.changes[0].old, Some(json!(3)));
        assert_eq!(kubectl.changes[0].new, Some(json!(5)));
        let controller = &who.managers[1];
        assert_eq!(
            (
                controller.subresource.as_str(),
                controller.changes[0].path.as_str()
            ),
            ("status", ".status.readyReplicas")
        );
        assert!(who.unattributed.is_empty());
    }

    #[test]
    fn only_managers_whose_entry_changed_made_the_update() {
        let old = deployment(
            3,
            3,
            "nginx",
            json!([apply_entry("t1"), status_entry("t1")]),
            "1",
        );
        let new = deployment(
            3,
            4,
            "nginx",
            json!([apply_entry("t1"), status_entry("t2")]),
            "2",
        );
        let who = attribute_values(&old, &new).expect("attributed");
        assert_eq!(who.managers.len(), 1, "kubectl's entry did not change");
        assert_eq!(who.managers[0].manager, "kube-controller-manager");
    }

    #[test]
    fn list_items_are_matched_by_their_keys_not_their_position() {
        let old = deployment(3, 3, "nginx:1", json!([apply_entry("t1")]), "1");
        let new = deployment(3, 3, "nginx:2", json!([apply_entry("t2")]), "2");
        let who = attribute_values(&old, &new).expect("attributed");
        assert_eq!(
            who.managers[0].changes[0].path,
            ".spec.template.spec.containers[name=web].image"
        );

        // the sidecar (position 1) is nobody's in these entries
        let mut moved = new.clone();
        moved["spec"]["template"]["spec"]["containers"][1]["image"] = json!("envoy:2");
        let who = attribute_values(&new, &moved).expect("attributed");
        assert!(who.managers.is_empty(), "no entry changed");
        assert_eq!(
            who.unattributed[0].path,
            ".spec.template.spec.containers[name=sidecar].image"
        );
    }

    #[test]
    fn fields_nobody_claims_are_unattributed_and_bookkeeping_is_ignored() {
        let old = deployment(3, 3, "nginx", json!([status_entry("t1")]), "1");
        let mut new = deployment(5, 3, "nginx", json!([status_entry("t2")]), "2");
        new["metadata"]["labels"] = json!({"app": "web"});
        let who = attribute_values(&old, &new).expect("attributed");
        assert_eq!(who.managers.len(), 1);
        assert!(
            who.managers[0].changes.is_empty(),
            "the controller touched no changed field"
        );
        let paths: Vec<&str> = who.unattributed.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, vec![".metadata.labels", ".spec.replicas"]);
    }

    #[test]
    fn a_removed_field_goes_to_the_manager_that_owned_it() {
        let owner = json!({"manager": "helm", "operation": "Update", "time": "t1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:tier": {}}}}});
        let mut old = deployment(3, 3, "nginx", json!([owner]), "1");
        old["metadata"]["labels"] = json!({"tier": "web", "app": "x"});
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"app": "x"});
        new["metadata"]["managedFields"] = json!([{"manager": "helm", "operation": "Update", "time": "t2",
            "fieldsV1": {"f:metadata": {"f:labels": {}}}}]);
        let who = attribute_values(&old, &new).expect("attributed");
        assert_eq!(who.managers[0].changes[0].path, ".metadata.labels.tier");
        assert_eq!(who.managers[0].changes[0].new, None);
    }

    #[test]
    fn members_are_paired_by_key_when_the_versions_order_them_differently() {
        // As the server sent them, not sorted: the walk pairs members by key.
        let tape = |text: &str| serde_json::from_str::<JsonValue>(text).expect("json");
        let old = tape(r#"{"spec":{"b":1,"a":2,"c":3,"gone":0}}"#);
        let new = tape(r#"{"spec":{"a":2,"c":4,"b":1,"d":5}}"#);
        let changed: Vec<(String, bool)> = changed_paths(old.root(), new.root())
            .iter()
            .map(|c| (display_path(&c.steps()), c.removed))
            .collect();
        assert_eq!(
            changed,
            [
                (".spec.c".to_string(), false),
                (".spec.d".to_string(), false),
                (".spec.gone".to_string(), true)
            ]
        );
    }

    #[test]
    fn removed_list_items_are_shown_as_the_items_they_were() {
        let old = json!({"spec": {"containers": [{"name": "web"}, {"name": "a"}, {"name": "b"}]}});
        let new = json!({"spec": {"containers": [{"name": "web"}]}});
        let who = attribute_values(&old, &new).expect("attributed");
        let paths: Vec<&str> = who.unattributed.iter().map(|c| c.path.as_str()).collect();
        // json-patch removes /spec/containers/1 twice; the second was "b".
        assert_eq!(
            paths,
            [".spec.containers[name=a]", ".spec.containers[name=b]"]
        );
        assert_eq!(who.unattributed[1].old, Some(json!({"name": "b"})));
    }

    #[test]
    fn malformed_managed_fields_are_errors_not_panics() {
        let bad =
            |entries: Value| managed_fields_of(&json!({"metadata": {"managedFields": entries}}));
        assert_eq!(bad(json!({})), Err(FieldsError::NotAList));
        assert_eq!(
            bad(json!([{"operation": "Update"}])),
            Err(FieldsError::NoManager)
        );
        assert_eq!(
            bad(json!([{"manager": "m", "fieldsV1": {"q:x": {}}}])),
            Err(FieldsError::BadKey("q:x".into()))
        );
        assert_eq!(
            bad(json!([{"manager": "m", "fieldsV1": {"f:x": 1}}])),
            Err(FieldsError::NotAnObject)
        );
        assert_eq!(managed_fields_of(&json!({"metadata": {}})), Ok(Vec::new()));
    }

    #[test]
    fn the_writers_of_an_update_are_the_managers_whose_entry_changed() {
        let entry = |manager: &str, time: &str, fields: Value| {
            json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time,
                   "fieldsType": "FieldsV1", "fieldsV1": fields})
        };
        let object = |entries: Vec<Value>| {
            JsonValue::from(json!({"metadata": {"name": "web", "managedFields": entries}}))
        };
        let helm = entry(
            "helm",
            "2026-01-01T00:00:00Z",
            json!({"f:spec": {"f:replicas": {}, "f:template": {}}}),
        );
        let created = object(vec![helm.clone()]);
        assert_eq!(writers(None, created.root()), ["helm"]);
        // ops-cli takes .spec.replicas: a new entry, and helm's set shrinks (same time)
        let scaled = object(vec![
            entry(
                "helm",
                "2026-01-01T00:00:00Z",
                json!({"f:spec": {"f:template": {}}}),
            ),
            entry(
                "ops-cli",
                "2026-01-01T00:05:00Z",
                json!({"f:spec": {"f:replicas": {}}}),
            ),
        ]);
        assert_eq!(
            writers(Some(created.root()), scaled.root()),
            ["helm", "ops-cli"]
        );
        // the kubelet's status write: only its entry's time moves
        let mut with_status = scaled.root().to_json();
        with_status["metadata"]["managedFields"]
            .as_array_mut()
            .expect("entries")
            .push(entry(
                "kubelet",
                "2026-01-01T00:06:00Z",
                json!({"f:status": {}}),
            ));
        let mut status_again = with_status.clone();
        status_again["metadata"]["managedFields"][2]["time"] = json!("2026-01-01T00:07:00Z");
        let (a, b) = (JsonValue::from(with_status), JsonValue::from(status_again));
        assert_eq!(writers(Some(a.root()), b.root()), ["kubelet"]);
        assert!(
            writers(Some(b.root()), b.root()).is_empty(),
            "nothing changed"
        );
        assert!(
            writers(None, JsonValue::from(json!({"metadata": {}})).root()).is_empty(),
            "no managedFields, no writers"
        );
    }

    /// Small JSON values: scalars, lists and objects over a few keys, so two
    /// of them share paths often.
    fn small_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0u8..3).prop_map(|n| json!(n)),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[abm]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The paths walked for attribution are json-patch's diff, in its
        /// order, less the server's bookkeeping.
        #[test]
        fn changed_paths_are_the_json_patch_less_bookkeeping(
            old in small_json(), new in small_json(), meta in proptest::bool::ANY,
        ) {
            let (old, new) = if meta {
                (json!({"metadata": {"resourceVersion": "1", "managedFields": old.clone(), "m": old}}),
                 json!({"metadata": {"resourceVersion": "2", "managedFields": new.clone(), "m": new}}))
            } else {
                (old, new)
            };
            let (old_tape, new_tape) = (JsonValue::from(&old), JsonValue::from(&new));
            let ours: Vec<(Vec<String>, bool)> = changed_paths(old_tape.root(), new_tape.root())
                .into_iter()
                .map(|c| (c.tokens(), c.removed))
                .collect();
            let theirs: Vec<(Vec<String>, bool)> = json_patch::diff(&old, &new)
                .0
                .iter()
                .map(|op| {
                    let tokens: Vec<String> =
                        op.path().tokens().map(|t| t.decoded().into_owned()).collect();
                    (tokens, matches!(op, json_patch::PatchOperation::Remove(_)))
                })
                .filter(|(tokens, _)| {
                    !matches!(tokens.as_slice(), [m, f, ..] if m == "metadata"
                        && (f == "managedFields" || f == "resourceVersion"))
                })
                .collect();
            proptest::prop_assert_eq!(ours, theirs);
        }

        /// Fields under `spec`, each owned by one of three managers or by
        /// nobody; an update changes or removes some, and bumps the entry
        /// of every manager that owns one of them (and maybe of a bystander).
        /// Every changed field is attributed to exactly its owner when the
        /// owner's entry changed (and is still there), else to nobody;
        /// never to anyone else.
        #[test]
        fn every_changed_field_goes_to_its_owner_or_to_nobody(
            owners in proptest::collection::vec(proptest::option::of(0usize..3), 1..8),
            edits in proptest::collection::vec(0u8..3, 1..8),
            bystander in proptest::option::of(0usize..3),
        ) {
            let fields = owners.len();
            let edit = |i: usize| edits.get(i).copied().unwrap_or(0); // 0 same, 1 changed, 2 removed
            let managers = ["helm", "kubectl", "ops-cli"];
            // A manager that owns nothing has no entry (the apiserver drops it).
            let owns = |m: usize, present: &dyn Fn(usize) -> bool| {
                (0..fields).any(|i| owners[i] == Some(m) && present(i))
            };
            let entries = |bumped: &dyn Fn(usize) -> bool, present: &dyn Fn(usize) -> bool| -> Value {
                let list: Vec<Value> = (0..3)
                    .filter(|&m| owns(m, present))
                    .map(|m| {
                        let owned: serde_json::Map<String, Value> = (0..fields)
                            .filter(|&i| owners[i] == Some(m) && present(i))
                            .map(|i| (format!("f:f{i}"), json!({})))
                            .collect();
                        json!({"manager": managers[m], "operation": "Update",
                               "time": if bumped(m) { "2026-01-01T00:01:00Z" } else { "2026-01-01T00:00:00Z" },
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": owned}})
                    })
                    .collect();
                Value::Array(list)
            };
            let spec = |new: bool| -> Value {
                let members: serde_json::Map<String, Value> = (0..fields)
                    .filter(|&i| !(new && edit(i) == 2))
                    .map(|i| (format!("f{i}"), json!(if new && edit(i) == 1 { 2 } else { 1 })))
                    .collect();
                Value::Object(members)
            };
            let writes = |m: usize| (0..fields).any(|i| owners[i] == Some(m) && edit(i) != 0) || bystander == Some(m);
            let old = json!({"metadata": {"name": "o", "managedFields": entries(&|_| false, &|_| true)}, "spec": spec(false)});
            let new = json!({"metadata": {"name": "o", "managedFields": entries(&writes, &|i| edit(i) != 2)}, "spec": spec(true)});
            let attribution = attribute_values(&old, &new).expect("readable");
            for i in (0..fields).filter(|&i| edit(i) != 0) {
                let path = format!(".spec.f{i}");
                let to: Vec<&str> = attribution
                    .managers
                    .iter()
                    .filter(|m| m.changes.iter().any(|c| c.path == path))
                    .map(|m| m.manager.as_str())
                    .collect();
                let unattributed = attribution.unattributed.iter().any(|c| c.path == path);
                // the owner's entry is in the new version, changed
                let wrote = owners[i].filter(|&m| owns(m, &|i| edit(i) != 2));
                match wrote {
                    Some(owner) => {
                        proptest::prop_assert_eq!(&to, &vec![managers[owner]], "{} owned by {}", path, managers[owner]);
                        proptest::prop_assert!(!unattributed);
                    }
                    None => {
                        proptest::prop_assert!(to.is_empty(), "{} owned by nobody went to {:?}", path, to);
                        proptest::prop_assert!(unattributed);
                    }
                }
            }
        }
    }
}
