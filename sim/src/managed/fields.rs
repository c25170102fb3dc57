//! FieldsV1 sets, the format of `metadata.managedFields[].fieldsV1`: a trie
//! whose keys are `f:<field>` and `k:<list item's keys as JSON>`, with `.`
//! marking a node that is itself a member (a leaf `{}` is one). Built from
//! objects with the list keys the Kubernetes types declare (containers by
//! `name`, ports by `containerPort`+`protocol`, conditions by `type`, …);
//! a list without known keys is atomic (one member), as
//! structured-merge-diff treats `listType=atomic`. Owns the set algebra the
//! write bookkeeping in `managed` needs: every member of an object, what a
//! write changed and removed, union and difference.
//!
//! `diff` walks two values together: `diff_members` compares objects member
//! by member and `diff_keyed_items` keyed lists item by item (an item that
//! moved is written whole where it now is); anything else, an atomic list
//! included, is `replaced` wholesale.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A set of fields: whether this node is a member, and its children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    own: bool,
    children: BTreeMap<String, Fields>,
}

impl Fields {
    pub fn is_empty(&self) -> bool {
        !self.own && self.children.is_empty()
    }

    fn child(&mut self, key: String) -> &mut Fields {
        self.children.entry(key).or_default()
    }

    /// Reads a `fieldsV1` value (anything malformed is skipped: the sim
    /// writes these itself, or a merge patch may have replaced them).
    #[cfg(test)]
    pub fn from_json(value: &Value) -> Fields {
        let Value::Object(members) = value else {
            return Fields::default();
        };
        let mut set = Fields {
            own: members.is_empty(),
            children: BTreeMap::new(),
        };
        for (key, child) in members {
            if key == "." {
                set.own = true;
            } else {
                let child = Fields::from_json(child);
                if !child.is_empty() {
                    set.children.insert(key.clone(), child);
                }
            }
        }
        set
    }

    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if self.own && !self.children.is_empty() {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (key, child) in &self.children {
            if !child.is_empty() {
                out.insert(key.clone(), child.to_json());
            }
        }
        Value::Object(out)
    }

    pub fn union(&mut self, other: &Fields) {
        self.own |= other.own;
        for (key, child) in &other.children {
            self.child(key.clone()).union(child);
        }
    }

    /// Removes every member of `other`.
    pub fn subtract(&mut self, other: &Fields) {
        if other.own {
            self.own = false;
        }
        for (key, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(key) {
                mine.subtract(theirs);
                if mine.is_empty() {
                    self.children.remove(key);
                }
            }
        }
    }

    /// The members under the path `steps` (`f:` names only), as a set
    /// rooted where this one is.
    pub fn under(&self, steps: &[&str]) -> Fields {
        let Some((first, rest)) = steps.split_first() else {
            return self.clone();
        };
        let key = format!("f:{first}");
        match self.children.get(&key) {
            Some(child) => {
                let inner = child.under(rest);
                let mut out = Fields::default();
                if !inner.is_empty() {
                    out.children.insert(key, inner);
                }
                out
            }
            None => Fields::default(),
        }
    }
}

/// Removes the members of `set` from a `fieldsV1` node as stored (without
/// reading the rest of it); true if anything was removed.
pub fn subtract_raw(node: &mut Map<String, Value>, set: &Fields) -> bool {
    let mut removed = set.own && node.remove(".").is_some();
    for (key, theirs) in &set.children {
        let Some(Value::Object(mine)) = node.get_mut(key) else {
            continue;
        };
        if mine.is_empty() {
            // a leaf, owned whole: gone only if `set` has it whole too
            if theirs.own {
                node.remove(key);
                removed = true;
            }
            continue;
        }
        if subtract_raw(mine, theirs) {
            removed = true;
            if mine.is_empty() {
                node.remove(key);
            } else if mine.len() == 1 && mine.contains_key(".") {
                mine.clear(); // the node alone: a leaf
            }
        }
    }
    removed
}

/// Adds the members of `set` to a `fieldsV1` node as stored.
pub fn union_raw(node: &mut Map<String, Value>, set: &Fields) {
    for (key, theirs) in &set.children {
        match node.get_mut(key) {
            Some(Value::Object(mine)) => {
                if mine.is_empty() && !theirs.children.is_empty() {
                    mine.insert(".".to_string(), Value::Object(Map::new()));
                }
                union_raw(mine, theirs);
            }
            _ => {
                let mut mine = Map::new();
                if theirs.own && !theirs.children.is_empty() {
                    mine.insert(".".to_string(), Value::Object(Map::new()));
                }
                union_raw(&mut mine, theirs);
                node.insert(key.clone(), Value::Object(mine));
            }
        }
    }
}

/// The list-map keys of a list field, as the Kubernetes types declare them;
/// `None` for an atomic list. `top` is true for a field of the object's root
/// (an EndpointSlice's `ports` and `endpoints` are atomic).
fn list_keys(field: &str, top: bool, items: &[Value]) -> Option<&'static [&'static str]> {
    let first = items.first()?;
    let keys: &'static [&'static str] = match field {
        "containers" | "initContainers" | "ephemeralContainers" | "env" | "volumes" => &["name"],
        "volumeMounts" => &["mountPath"],
        "conditions" => &["type"],
        "ownerReferences" => &["uid"],
        "podIPs" | "hostIPs" => &["ip"],
        "ports" if !top && first.get("containerPort").is_some() => &["containerPort", "protocol"],
        "ports" if !top && first.get("port").is_some() => &["port", "protocol"],
        _ => return None,
    };
    let all_keyed = items
        .iter()
        .all(|item| item.is_object() && item.get(keys[0]).is_some());
    all_keyed.then_some(keys)
}

/// `k:{"containerPort":8080,"protocol":"TCP"}`: the item's key fields, in
/// the (sorted) order given.
fn item_key(keys: &[&str], item: &Value) -> String {
    let mut out = String::from("k:{");
    let mut first = true;
    for key in keys {
        if let Some(v) = item.get(*key) {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&Value::String((*key).to_string()).to_string());
            out.push(':');
            out.push_str(&v.to_string());
        }
    }
    out.push('}');
    out
}

fn keyed<'a>(keys: &[&str], items: &'a [Value]) -> Option<Vec<(String, &'a Value)>> {
    let out: Vec<(String, &Value)> = items.iter().map(|i| (item_key(keys, i), i)).collect();
    let mut seen = std::collections::BTreeSet::new();
    out.iter()
        .all(|(k, _)| seen.insert(k.as_str()))
        .then_some(out)
}

/// A list's items with their keys (`k:…`), when the list is keyed: its
/// field has list keys and no two items share a key.
fn keyed_items<'a>(field: &str, top: bool, items: &'a [Value]) -> Option<Vec<(String, &'a Value)>> {
    list_keys(field, top, items).and_then(|keys| keyed(keys, items))
}

/// A keyed list's item, itself a member, and every member of it, into the
/// node for its key under `out`.
fn whole_item(item: &Value, key: String, out: &mut Fields) {
    let node = out.child(key);
    node.own = true;
    all_fields(item, "", false, node);
}

/// Every member of `value` (the field called `field`) into `out`, the node
/// for it: each leaf, each atomic list, each keyed list item itself.
pub fn all_fields(value: &Value, field: &str, top: bool, out: &mut Fields) {
    match value {
        Value::Object(members) if !members.is_empty() => {
            for (name, child) in members {
                all_fields(child, name, false, out.child(format!("f:{name}")));
            }
        }
        Value::Array(items) => match keyed_items(field, top, items) {
            Some(entries) => {
                for (key, item) in entries {
                    whole_item(item, key, out);
                }
            }
            None => out.own = true,
        },
        _ => out.own = true,
    }
}

/// The members of an object (its root): every field but the identity and
/// bookkeeping the apiserver keeps out of managedFields.
pub fn object_fields(object: &Value) -> Fields {
    let mut out = Fields::default();
    all_fields(object, "", true, &mut out);
    prune_server_owned(&mut out);
    out
}

/// What the apiserver keeps out of managedFields, as structured-merge-diff
/// strips it: `apiVersion`, `kind` and the metadata the server owns.
const SERVER_OWNED: &[&str] = &[
    "f:name",
    "f:namespace",
    "f:uid",
    "f:resourceVersion",
    "f:generation",
    "f:creationTimestamp",
    "f:managedFields",
    "f:selfLink",
];

/// Drops the server-owned fields from a set of an object's root (cheaper
/// than copying the object without them before diffing).
pub fn prune_server_owned(set: &mut Fields) {
    set.children.remove("f:apiVersion");
    set.children.remove("f:kind");
    if let Some(meta) = set.children.get_mut("f:metadata") {
        for key in SERVER_OWNED {
            meta.children.remove(*key);
        }
        if meta.is_empty() {
            set.children.remove("f:metadata");
        }
    }
}

/// What a write changed (set or replaced) and removed, between two values
/// of the field `field`, into the nodes for it.
pub fn diff(
    old: &Value,
    new: &Value,
    field: &str,
    top: bool,
    changed: &mut Fields,
    removed: &mut Fields,
) {
    if old == new {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) if !a.is_empty() && !b.is_empty() => {
            diff_members(a, b, changed, removed);
        }
        (Value::Array(a), Value::Array(b)) => {
            match (keyed_items(field, top, a), keyed_items(field, top, b)) {
                (Some(old_items), Some(new_items)) => {
                    diff_keyed_items(&old_items, &new_items, changed, removed);
                }
                // Atomic (or no longer keyed): the list is one member.
                _ => replaced(old, new, field, top, changed, removed),
            }
        }
        _ => replaced(old, new, field, top, changed, removed),
    }
}

/// [`diff`] of two objects, member by member: a member in both is diffed
/// (if it differs), one only `new` has is changed whole, one only `old`
/// has is removed whole.
fn diff_members(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    changed: &mut Fields,
    removed: &mut Fields,
) {
    for (name, nv) in new {
        let key = format!("f:{name}");
        match old.get(name) {
            Some(ov) if ov == nv => {}
            Some(ov) => diff_under(&key, changed, removed, |c, r| {
                diff(ov, nv, name, false, c, r);
            }),
            None => all_fields(nv, name, false, changed.child(key)),
        }
    }
    for (name, ov) in old {
        if !new.contains_key(name) {
            all_fields(ov, name, false, removed.child(format!("f:{name}")));
        }
    }
}

/// [`diff`] of two keyed lists, item by item: an item at the same position
/// in both is diffed; one that moved is written whole where it now is (a
/// positional diff sees it changed there), less what it lost; a new item is
/// changed whole, and one gone is removed whole.
fn diff_keyed_items(
    old_items: &[(String, &Value)],
    new_items: &[(String, &Value)],
    changed: &mut Fields,
    removed: &mut Fields,
) {
    let before: BTreeMap<&str, (usize, &Value)> = old_items
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (k.as_str(), (i, *v)))
        .collect();
    for (j, (key, item)) in new_items.iter().enumerate() {
        match before.get(key.as_str()) {
            Some((i, was)) if *i == j => diff_under(key, changed, removed, |c, r| {
                diff(was, item, "", false, c, r);
            }),
            Some((_, was)) => diff_under(key, changed, removed, |c, r| {
                replaced(was, item, "", false, c, r);
                c.own = true;
            }),
            None => whole_item(item, key.clone(), changed),
        }
    }
    let now: std::collections::BTreeSet<&str> = new_items.iter().map(|(k, _)| k.as_str()).collect();
    for (key, item) in old_items {
        if !now.contains(key.as_str()) {
            whole_item(item, key.clone(), removed);
        }
    }
}

/// Runs a diff of one child into fresh nodes, then puts what it changed and
/// removed under `key` (nothing for an empty one).
fn diff_under(
    key: &str,
    changed: &mut Fields,
    removed: &mut Fields,
    diff_child: impl FnOnce(&mut Fields, &mut Fields),
) {
    let mut c = Fields::default();
    let mut r = Fields::default();
    diff_child(&mut c, &mut r);
    put(changed, key, c);
    put(removed, key, r);
}

/// `old` replaced by `new` wholesale: every member of `new` changed, and
/// those of `old` that `new` lacks removed.
fn replaced(
    old: &Value,
    new: &Value,
    field: &str,
    top: bool,
    changed: &mut Fields,
    removed: &mut Fields,
) {
    let mut now = Fields::default();
    all_fields(new, field, top, &mut now);
    let mut gone = Fields::default();
    all_fields(old, field, top, &mut gone);
    gone.subtract(&now);
    changed.union(&now);
    removed.union(&gone);
}

fn put(parent: &mut Fields, key: &str, child: Fields) {
    if !child.is_empty() {
        parent.child(key.to_string()).union(&child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_is_read_with_its_list_keys() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "uid": "u", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx",
                "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                "tolerations": [{"key": "a"}]}});
        let fields = object_fields(&pod).to_json();
        assert_eq!(
            fields,
            json!({"f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}}},
                    "f:tolerations": {}}})
        );
        assert_eq!(Fields::from_json(&fields).to_json(), fields);
    }

    #[test]
    fn a_diff_finds_changed_and_removed_members() {
        let old = json!({"spec": {"replicas": 3, "paused": false},
            "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False", "reason": "x"}]}});
        let new = json!({"spec": {"replicas": 5},
            "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}, {"type": "C", "status": "True"}]}});
        let (mut c, mut r) = (Fields::default(), Fields::default());
        diff(&old, &new, "", true, &mut c, &mut r);
        assert_eq!(
            c.to_json(),
            json!({"f:spec": {"f:replicas": {}}, "f:status": {"f:conditions": {
                "k:{\"type\":\"B\"}": {"f:status": {}},
                "k:{\"type\":\"C\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
        );
        assert_eq!(
            r.to_json(),
            json!({"f:spec": {"f:paused": {}}, "f:status": {"f:conditions": {"k:{\"type\":\"B\"}": {"f:reason": {}}}}})
        );
        let mut all = object_fields(&old);
        all.subtract(&r);
        all.union(&c);
        assert_eq!(all, object_fields(&new));
        // the same on the stored form
        let mut raw = object_fields(&old).to_json();
        if let Some(node) = raw.as_object_mut() {
            assert!(subtract_raw(node, &r));
            union_raw(node, &c);
        }
        assert_eq!(Fields::from_json(&raw), object_fields(&new));
        assert_eq!(raw, object_fields(&new).to_json());
    }

    #[test]
    fn a_moved_item_is_written_whole_where_it_now_is() {
        let old = [
            json!({"type": "A", "status": "x", "reason": "r"}),
            json!({"type": "B", "status": "y"}),
        ];
        let new = [
            json!({"type": "B", "status": "y"}),
            json!({"type": "A", "status": "z"}),
            json!({"type": "C"}),
        ];
        let keys = &["type"][..];
        let (old_items, new_items) = (keyed(keys, &old).unwrap(), keyed(keys, &new).unwrap());
        let (mut c, mut r) = (Fields::default(), Fields::default());
        diff_keyed_items(&old_items, &new_items, &mut c, &mut r);
        // B moved unchanged and A moved changed: both whole, not just what
        // differs; C is new
        assert_eq!(
            c.to_json(),
            json!({"k:{\"type\":\"A\"}": {".": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"B\"}": {".": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"C\"}": {".": {}, "f:type": {}}})
        );
        // what A lost is removed, not the item itself
        assert_eq!(r.to_json(), json!({"k:{\"type\":\"A\"}": {"f:reason": {}}}));
        // in place, the same change is only what differs
        let (mut c, mut r) = (Fields::default(), Fields::default());
        let in_place = [new[1].clone(), new[0].clone()];
        let moved_back = keyed(keys, &in_place).unwrap();
        diff_keyed_items(&old_items, &moved_back, &mut c, &mut r);
        assert_eq!(c.to_json(), json!({"k:{\"type\":\"A\"}": {"f:status": {}}}));
        assert_eq!(r.to_json(), json!({"k:{\"type\":\"A\"}": {"f:reason": {}}}));
    }
}
