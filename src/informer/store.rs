//! The Store / Indexer: the informer's current view of every object, keyed by
//! `namespace/name`, with named secondary indexes (client-go's `Store`,
//! `Indexer`, `threadSafeStore`). Built-in indexes: `namespace`, `label`
//! (values `key=value`) and `owner` (owner uid). Objects are kept in a hash
//! map (an update — the common case — is one hash lookup) beside a
//! `BTreeSet` of the keys, so `list()` and the digest walk keys in byte order
//! without sorting.

use std::collections::{BTreeMap, BTreeSet};

use super::key_hash::{KeyMap, KeySet};

use super::delta_fifo::KnownObjects;
use super::digest::digest_of_sorted;
use super::object::{KubeObject, ObjectRef};

/// Computes the index values of an object.
pub type IndexFunc = Box<dyn Fn(&KubeObject) -> Vec<String>>;

pub const NAMESPACE_INDEX: &str = "namespace";
pub const LABEL_INDEX: &str = "label";
pub const OWNER_INDEX: &str = "owner";

struct Index {
    func: IndexFunc,
    /// value → keys (hashed: index maintenance is on the hot path, lookups
    /// by value are rare and sort their result)
    values: KeyMap<String, KeySet<String>>,
    /// key → the values its object is indexed under (only non-empty ones),
    /// so an update or delete need not run `func` on the old object again
    by_key: KeyMap<String, Vec<String>>,
}

impl Index {
    fn new(func: IndexFunc) -> Index {
        Index {
            func,
            values: KeyMap::default(),
            by_key: KeyMap::default(),
        }
    }

    fn insert_values(&mut self, key: &str, values: &[String]) {
        for v in values {
            let keys = match self.values.get_mut(v) {
                Some(keys) => keys,
                None => self.values.entry(v.clone()).or_default(),
            };
            if !keys.contains(key) {
                keys.insert(key.to_owned());
            }
        }
    }

    fn remove_values(&mut self, key: &str, values: &[String]) {
        for v in values {
            if let Some(keys) = self.values.get_mut(v) {
                keys.remove(key);
                if keys.is_empty() {
                    self.values.remove(v);
                }
            }
        }
    }

    fn insert(&mut self, obj: &KubeObject) {
        let values = (self.func)(obj);
        self.set(&obj.key, values);
    }

    /// Indexes `key` under `values` (its previous values must be gone).
    fn set(&mut self, key: &str, values: Vec<String>) {
        if values.is_empty() {
            return;
        }
        self.insert_values(key, &values);
        self.by_key.insert(key.to_owned(), values);
    }

    fn remove(&mut self, key: &str) {
        if let Some(old_values) = self.by_key.remove(key) {
            self.remove_values(key, &old_values);
        }
    }

    /// Replaces `old`'s entries by `new`'s (same key); nothing to do when
    /// the index values did not change, the common case for updates.
    fn update(&mut self, new: &KubeObject) {
        let new_values = (self.func)(new);
        let old_values: &[String] = self.by_key.get(&new.key).map_or(&[], Vec::as_slice);
        if old_values == new_values.as_slice() {
            return;
        }
        self.remove(&new.key);
        self.set(&new.key, new_values);
    }

    fn clear(&mut self) {
        self.values.clear();
        self.by_key.clear();
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("there is no index named {0:?}")]
    NoSuchIndex(String),
    #[error("an index named {0:?} already exists")]
    Exists(String),
}

/// Objects by key plus named indexes.
pub struct Indexer {
    items: KeyMap<String, ObjectRef>,
    /// The keys of `items`, in byte order.
    order: BTreeSet<String>,
    indexes: BTreeMap<String, Index>,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("len", &self.items.len())
            .field("indexes", &self.indexes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for Indexer {
    fn default() -> Self {
        Indexer::new()
    }
}

impl Indexer {
    /// An indexer with the built-in `namespace`, `label` and `owner` indexes.
    pub fn new() -> Indexer {
        let mut ix = Indexer::without_indexes();
        let _ = ix.add_index(
            NAMESPACE_INDEX,
            Box::new(|o| o.namespace().map(str::to_owned).into_iter().collect()),
        );
        let _ = ix.add_index(
            LABEL_INDEX,
            Box::new(|o| {
                o.labels()
                    .map(|(k, v)| {
                        let mut value = String::with_capacity(k.len() + 1 + v.len());
                        value.push_str(k);
                        value.push('=');
                        value.push_str(v);
                        value
                    })
                    .collect()
            }),
        );
        let _ = ix.add_index(
            OWNER_INDEX,
            Box::new(|o| o.owner_uids().map(str::to_owned).collect()),
        );
        ix
    }

    /// A plain store without indexes.
    pub fn without_indexes() -> Indexer {
        Indexer {
            items: KeyMap::default(),
            order: BTreeSet::new(),
            indexes: BTreeMap::new(),
        }
    }

    /// Adds a named index; existing objects are indexed immediately.
    pub fn add_index(&mut self, name: &str, func: IndexFunc) -> Result<(), IndexError> {
        if self.indexes.contains_key(name) {
            return Err(IndexError::Exists(name.to_owned()));
        }
        let mut index = Index::new(func);
        for o in self.items.values() {
            index.insert(o);
        }
        self.indexes.insert(name.to_owned(), index);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds or replaces by key; returns the previous object.
    pub fn add(&mut self, obj: ObjectRef) -> Option<ObjectRef> {
        let old = match self.items.get_mut(&obj.key) {
            Some(slot) => Some(std::mem::replace(slot, obj.clone())),
            None => {
                self.order.insert(obj.key.clone());
                self.items.insert(obj.key.clone(), obj.clone())
            }
        };
        for index in self.indexes.values_mut() {
            match &old {
                Some(_) => index.update(&obj),
                None => index.insert(&obj),
            }
        }
        old
    }

    /// Same as [`Indexer::add`] (client-go's Update).
    pub fn update(&mut self, obj: ObjectRef) -> Option<ObjectRef> {
        self.add(obj)
    }

    /// Removes the object with `obj`'s key.
    pub fn delete(&mut self, obj: &KubeObject) -> Option<ObjectRef> {
        self.delete_key(&obj.key)
    }

    pub fn delete_key(&mut self, key: &str) -> Option<ObjectRef> {
        let old = self.items.remove(key)?;
        self.order.remove(key);
        for index in self.indexes.values_mut() {
            index.remove(key);
        }
        Some(old)
    }

    /// Objects in key order.
    pub fn list(&self) -> impl Iterator<Item = &ObjectRef> {
        self.order.iter().filter_map(|k| self.items.get(k))
    }

    /// Keys in byte order.
    pub fn list_keys(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// The stored object with the same key as `obj`.
    pub fn get(&self, obj: &KubeObject) -> Option<&ObjectRef> {
        self.items.get(&obj.key)
    }

    pub fn get_by_key(&self, key: &str) -> Option<&ObjectRef> {
        self.items.get(key)
    }

    /// Replaces the whole content.
    pub fn replace(&mut self, list: Vec<ObjectRef>) {
        self.items.clear();
        self.order.clear();
        for index in self.indexes.values_mut() {
            index.clear();
        }
        for o in list {
            self.add(o);
        }
    }

    /// Nothing to do for a plain store (client-go's Store.Resync is a no-op
    /// outside the DeltaFIFO).
    pub fn resync(&mut self) {}

    /// Objects whose `index` contains `value` (empty if the index does not
    /// exist; see [`Indexer::try_by_index`]).
    pub fn by_index(&self, index: &str, value: &str) -> Vec<ObjectRef> {
        self.try_by_index(index, value).unwrap_or_default()
    }

    pub fn try_by_index(&self, index: &str, value: &str) -> Result<Vec<ObjectRef>, IndexError> {
        let ix = self
            .indexes
            .get(index)
            .ok_or_else(|| IndexError::NoSuchIndex(index.to_owned()))?;
        let mut keys: Vec<&String> = ix
            .values
            .get(value)
            .into_iter()
            .flat_map(|k| k.iter())
            .collect();
        keys.sort_unstable();
        Ok(keys
            .into_iter()
            .filter_map(|k| self.items.get(k).cloned())
            .collect())
    }

    /// Keys whose `index` contains `value`, sorted.
    pub fn index_keys(&self, index: &str, value: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .indexes
            .get(index)
            .and_then(|ix| ix.values.get(value))
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        keys.sort_unstable();
        keys
    }

    /// All values of an index (e.g. every namespace present), sorted.
    pub fn index_values(&self, index: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .indexes
            .get(index)
            .map(|ix| ix.values.keys().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// DESIGN §4 digest of the store.
    pub fn digest(&self) -> String {
        digest_of_sorted(
            self.order
                .iter()
                .filter_map(|k| Some((k.as_str(), self.items.get(k)?.resource_version.as_str()))),
        )
    }
}

impl KnownObjects for Indexer {
    fn known_keys(&self) -> Vec<String> {
        self.order.iter().cloned().collect()
    }

    fn known_object(&self, key: &str) -> Option<ObjectRef> {
        self.items.get(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::digest::digest_of;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(ns: &str, name: &str, rv: &str, app: &str, owner: &str) -> ObjectRef {
        Arc::new(
            KubeObject::from_value(
                json!({"metadata":{"name":name,"namespace":ns,"resourceVersion":rv,
                "labels":{"app":app},"ownerReferences":[{"uid":owner}]}}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn crud_and_indexes_follow_updates() {
        // client-go threadSafeStore.updateIndices: old index values removed on update/delete
        let mut s = Indexer::new();
        s.add(pod("a", "p1", "1", "web", "rs1"));
        s.add(pod("b", "p2", "2", "web", "rs2"));
        assert_eq!(s.len(), 2);
        assert_eq!(s.by_index("namespace", "a").len(), 1);
        assert_eq!(s.by_index("label", "app=web").len(), 2);
        assert_eq!(s.by_index("owner", "rs2")[0].key, "b/p2");
        s.update(pod("a", "p1", "3", "db", "rs1"));
        assert_eq!(s.by_index("label", "app=web").len(), 1);
        assert_eq!(s.by_index("label", "app=db").len(), 1);
        assert_eq!(s.get_by_key("a/p1").unwrap().resource_version, "3");
        s.delete_key("b/p2");
        assert!(s.by_index("owner", "rs2").is_empty());
        assert!(s.by_index("namespace", "b").is_empty());
        assert_eq!(s.index_values("namespace"), vec!["a".to_string()]);
        assert_eq!(
            s.try_by_index("nope", "x"),
            Err(IndexError::NoSuchIndex("nope".into()))
        );
    }

    #[test]
    fn replace_resets_content_and_indexes() {
        let mut s = Indexer::new();
        s.add(pod("a", "p1", "1", "web", "rs1"));
        s.replace(vec![pod("c", "p3", "4", "x", "rs3")]);
        assert_eq!(s.list_keys().collect::<Vec<_>>(), vec!["c/p3"]);
        assert!(s.by_index("label", "app=web").is_empty());
    }

    #[test]
    fn digest_matches_free_function() {
        let mut s = Indexer::new();
        s.add(pod("b", "p", "10", "x", "o"));
        s.add(pod("a", "p", "9", "x", "o"));
        assert_eq!(
            s.digest(),
            digest_of([("b/p", "10"), ("a/p", "9")].into_iter())
        );
    }

    #[test]
    fn custom_index_covers_existing_objects() {
        let mut s = Indexer::without_indexes();
        s.add(pod("a", "p1", "1", "web", "rs1"));
        s.add_index("rv", Box::new(|o| vec![o.resource_version.clone()]))
            .unwrap();
        assert_eq!(s.by_index("rv", "1").len(), 1);
        assert!(s.add_index("rv", Box::new(|_| vec![])).is_err());
    }
}
