//! FieldsV1 sets, the format of `metadata.managedFields[].fieldsV1`: a trie
//! whose keys are `f:<field>` and `k:<list item's keys as JSON>`, with `.`
//! marking a node that is itself a member (a leaf `{}` is one). Built from
//! objects with the list keys the Kubernetes types declare (containers by
//! `name`, ports by `containerPort`+`protocol`, conditions by `type`, …);
//! a list without known keys is atomic (one member), as
//! structured-merge-diff treats `listType=atomic`. Owns the set algebra the
//! write bookkeeping in `managed` needs: every member of an object, what a
//! write changed and removed, union and difference.

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

/// Every member of `value` (the field called `field`) into `out`, the node
/// for it: each leaf, each atomic list, each keyed list item itself.
pub fn all_fields(value: &Value, field: &str, top: bool, out: &mut Fields) {
    match value {
        Value::Object(members) if !members.is_empty() => {
            for (name, child) in members {
                all_fields(child, name, false, out.child(format!("f:{name}")));
            }
        }
        Value::Array(items) => {
            match list_keys(field, top, items).and_then(|keys| keyed(keys, items)) {
                Some(entries) => {
                    for (key, item) in entries {
                        let node = out.child(key);
                        node.own = true;
                        all_fields(item, "", false, node);
                    }
                }
                None => out.own = true,
            }
        }
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
            for (name, nv) in b {
                let key = format!("f:{name}");
                match a.get(name) {
                    Some(ov) if ov == nv => {}
                    Some(ov) => {
                        let mut c = Fields::default();
                        let mut r = Fields::default();
                        diff(ov, nv, name, false, &mut c, &mut r);
                        put(changed, &key, c);
                        put(removed, &key, r);
                    }
                    None => all_fields(nv, name, false, changed.child(key)),
                }
            }
            for (name, ov) in a {
                if !b.contains_key(name) {
                    all_fields(ov, name, false, removed.child(format!("f:{name}")));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let old_items = list_keys(field, top, a).and_then(|keys| keyed(keys, a));
            let new_items = list_keys(field, top, b).and_then(|keys| keyed(keys, b));
            let (Some(old_items), Some(new_items)) = (old_items, new_items) else {
                // Atomic (or no longer keyed): the list is one member.
                replaced(old, new, field, top, changed, removed);
                return;
            };
            let before: BTreeMap<&str, (usize, &Value)> = old_items
                .iter()
                .enumerate()
                .map(|(i, (k, v))| (k.as_str(), (i, *v)))
                .collect();
            for (j, (key, item)) in new_items.iter().enumerate() {
                match before.get(key.as_str()) {
                    Some((i, was)) if *i == j => {
                        let mut c = Fields::default();
                        let mut r = Fields::default();
                        diff(was, item, "", false, &mut c, &mut r);
                        put(changed, key, c);
                        put(removed, key, r);
                    }
                    // Moved: whoever wrote the list wrote the item where it
                    // now is (a positional diff sees it changed there).
                    Some((_, was)) => {
                        let mut c = Fields::default();
                        let mut r = Fields::default();
                        replaced(was, item, "", false, &mut c, &mut r);
                        c.own = true;
                        put(changed, key, c);
                        put(removed, key, r);
                    }
                    None => {
                        let node = changed.child(key.clone());
                        node.own = true;
                        all_fields(item, "", false, node);
                    }
                }
            }
            let now: std::collections::BTreeSet<&str> =
                new_items.iter().map(|(k, _)| k.as_str()).collect();
            for (key, item) in &old_items {
                if !now.contains(key.as_str()) {
                    let node = removed.child(key.clone());
                    node.own = true;
                    all_fields(item, "", false, node);
                }
            }
        }
        _ => replaced(old, new, field, top, changed, removed),
    }
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
}
