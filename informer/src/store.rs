//! The Store / Indexer: the informer's current view of every object, keyed by
//! `namespace/name`, with named secondary indexes (client-go's `Store`,
//! `Indexer`, `threadSafeStore`). Built-in indexes: `namespace`, `label`
//! (values `key=value`) and `owner` (owner uid). Objects are kept in a hash
//! map (an update — the common case — is one hash lookup). The keys in byte
//! order, which `list()` and the digest walk, are kept by `KeyOrder`: new
//! keys are only noted, and merged into the last sorted order when the order
//! is next asked for, so a list or a stream of events pays no ordered-set
//! insertions and a later walk sorts only what changed. Each object's slot
//! also holds the values it is indexed under, so an update is one lookup
//! plus an allocation-free check that the values did not change.

use std::sync::{Arc, OnceLock};

use super::key_hash::{KeyMap, KeySet};

use super::delta_fifo::KnownObjects;
use super::object::{KubeObject, ObjectRef};
use deltascope_facts::digest_of_sorted;

/// Computes the index values of an object.
pub type IndexFunc = Box<dyn Fn(&KubeObject) -> Vec<String>>;

pub const NAMESPACE_INDEX: &str = "namespace";
pub const LABEL_INDEX: &str = "label";
pub const OWNER_INDEX: &str = "owner";

/// How an index computes its values. The built-in ones can also tell, without
/// allocating, whether an updated object keeps the values it had — the
/// common case, checked on every update.
enum IndexKind {
    Namespace,
    /// `key=value` per label
    Label,
    /// owner uids
    Owner,
    Custom(IndexFunc),
}

impl IndexKind {
    /// Calls `each` with every value of `obj`, in order; the built-in
    /// kinds allocate nothing (a label's `key=value` is written in
    /// `scratch`).
    fn each_value(&self, obj: &KubeObject, scratch: &mut String, mut each: impl FnMut(&str)) {
        match self {
            IndexKind::Namespace => obj.namespace().into_iter().for_each(each),
            IndexKind::Label => {
                for (k, v) in obj.labels() {
                    scratch.clear();
                    scratch.push_str(k);
                    scratch.push('=');
                    scratch.push_str(v);
                    each(scratch);
                }
            }
            IndexKind::Owner => obj.owner_uids().for_each(each),
            IndexKind::Custom(func) => func(obj).iter().for_each(|v| each(v)),
        }
    }

    /// Are `obj`'s values exactly `old` (same order)?
    fn unchanged(&self, obj: &KubeObject, old: &[Arc<str>]) -> bool {
        fn same<'a>(mut new: impl Iterator<Item = &'a str>, old: &[Arc<str>]) -> bool {
            old.iter().all(|o| new.next() == Some(&**o)) && new.next().is_none()
        }
        match self {
            IndexKind::Namespace => same(obj.namespace().into_iter(), old),
            IndexKind::Owner => same(obj.owner_uids(), old),
            IndexKind::Label => {
                let mut labels = obj.labels();
                old.iter().all(|o| {
                    labels.next().is_some_and(|(k, v)| {
                        o.len() == k.len() + 1 + v.len()
                            && o.starts_with(k)
                            && o.as_bytes()[k.len()] == b'='
                            && o.ends_with(v)
                    })
                }) && labels.next().is_none()
            }
            IndexKind::Custom(func) => func(obj)
                .iter()
                .map(String::as_str)
                .eq(old.iter().map(|o| &**o)),
        }
    }
}

/// The keys indexed under one value, and the value itself, shared with
/// every slot that holds it (an object's values cost no allocation once
/// another object has them: 100k pods restored from the browser's
/// database spent half their store time allocating label strings).
struct Indexed {
    value: Arc<str>,
    keys: KeySet<Arc<str>>,
}

struct Index {
    name: String,
    kind: IndexKind,
    /// value → keys (hashed: index maintenance is on the hot path, lookups
    /// by value are rare and sort their result)
    values: KeyMap<Arc<str>, Indexed>,
}

impl Index {
    /// Indexes `obj` under `key`; the values it is indexed under.
    fn insert_object(&mut self, key: &Arc<str>, obj: &KubeObject) -> Vec<Arc<str>> {
        let mut held = Vec::new();
        let mut scratch = String::new();
        let values = &mut self.values;
        self.kind.each_value(obj, &mut scratch, |value| {
            let indexed = match values.get_mut(value) {
                Some(indexed) => indexed,
                None => {
                    let value: Arc<str> = Arc::from(value);
                    values.entry(value.clone()).or_insert_with(|| Indexed {
                        value,
                        keys: KeySet::default(),
                    })
                }
            };
            indexed.keys.insert(key.clone());
            held.push(indexed.value.clone());
        });
        held
    }

    fn remove_values(&mut self, key: &str, values: &[Arc<str>]) {
        for v in values {
            if let Some(indexed) = self.values.get_mut(&**v) {
                indexed.keys.remove(key);
                if indexed.keys.is_empty() {
                    self.values.remove(&**v);
                }
            }
        }
    }
}

/// One stored object with the values it is indexed under (one list per
/// index, in index order), so an update or delete need not compute the old
/// object's values again.
struct Slot {
    /// the map's own key, for index entries added on update
    key: Arc<str>,
    object: ObjectRef,
    index_values: Box<[Vec<Arc<str>>]>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("there is no index named {0:?}")]
    NoSuchIndex(String),
    #[error("an index named {0:?} already exists")]
    Exists(String),
}

/// The store's keys in byte order, kept without an ordered set: a key added
/// or removed is only noted, and the order is brought up to date when it is
/// next asked for, in one linear merge of the last order with the keys
/// added since (sorted: few) minus the keys removed since and not back (few
/// too). A store that is never walked (the native benchmarks) never sorts;
/// one walked now and then (the page's digest every few seconds over 100k
/// Pods under churn) pays a merge, not a sort of every key nor a lookup of
/// every key (a hash lookup per key to drop the removed ones would make
/// the walk a long task on the page's thread).
#[derive(Default)]
struct KeyOrder {
    /// The order as of the last walk; may hold keys removed since.
    merged: Vec<Arc<str>>,
    /// Keys added since the last walk, unsorted.
    added: Vec<Arc<str>>,
    /// Keys removed since the last walk (some may be back in the store).
    removed: Vec<Arc<str>>,
    /// More was noted than twice the store holds: the notes were dropped
    /// and the next walk sorts the store's keys afresh (so the notes of a
    /// store never walked stay bounded by its size).
    stale: bool,
    /// The current order, once asked for; moved to `merged` by the next
    /// change.
    current: OnceLock<Vec<Arc<str>>>,
}

/// Notes kept in any case, however small the store.
const MIN_NOTES_KEPT: usize = 4_096;

impl KeyOrder {
    /// Notes a key new to a store of `len` keys.
    fn added(&mut self, key: &Arc<str>, len: usize) {
        if self.start_change(len) {
            self.added.push(key.clone());
        }
    }

    /// Notes that a key left a store of `len` keys.
    fn removed(&mut self, key: &Arc<str>, len: usize) {
        if self.start_change(len) {
            self.removed.push(key.clone());
        }
    }

    /// The first change after a walk makes that walk's order the base.
    /// False once the notes are too many to be worth keeping.
    fn start_change(&mut self, len: usize) -> bool {
        if let Some(current) = self.current.take() {
            self.merged = current;
            // new lists, not cleared ones: the first list's notes are one
            // per key, and their room would stay held for good
            self.added = Vec::new();
            self.removed = Vec::new();
            self.stale = false;
        }
        if !self.stale && self.added.len() + self.removed.len() >= 2 * len + MIN_NOTES_KEPT {
            self.stale = true;
            self.merged = Vec::new();
            self.added = Vec::new();
            self.removed = Vec::new();
        }
        !self.stale
    }

    /// The keys in byte order; `present` says whether a removed key is back
    /// in the store; `all` gives every key (when the notes were dropped).
    fn sorted(
        &self,
        present: impl Fn(&str) -> bool,
        all: impl FnOnce() -> Vec<Arc<str>>,
    ) -> &[Arc<str>] {
        self.current.get_or_init(|| {
            if self.stale {
                let mut keys = all();
                keys.sort_unstable();
                return keys;
            }
            // A list arrives in key order (etcd's), so the keys of a first
            // list are one sorted run: sorting them is a linear check.
            let mut added = self.added.clone();
            added.sort_unstable();
            added.dedup();
            // owned (a count each), to share `keys`' sort
            let mut gone: Vec<Arc<str>> = self
                .removed
                .iter()
                .filter(|key| !present(key))
                .cloned()
                .collect();
            gone.sort_unstable();
            gone.dedup();
            merge_keys(&self.merged, &added, &gone)
        })
    }
}

/// `base` and `added` (each sorted, without repeats; a key may be in both)
/// merged into one sorted list without repeats, leaving out `gone` (sorted).
fn merge_keys(base: &[Arc<str>], added: &[Arc<str>], gone: &[Arc<str>]) -> Vec<Arc<str>> {
    use std::cmp::Ordering;
    let mut out = Vec::with_capacity(base.len() + added.len());
    let (mut b, mut a, mut g) = (0, 0, 0);
    loop {
        let next = match (base.get(b), added.get(a)) {
            (None, None) => break,
            (Some(key), None) => {
                b += 1;
                key
            }
            (None, Some(key)) => {
                a += 1;
                key
            }
            (Some(from_base), Some(from_added)) => match from_base.cmp(from_added) {
                Ordering::Less => {
                    b += 1;
                    from_base
                }
                Ordering::Greater => {
                    a += 1;
                    from_added
                }
                Ordering::Equal => {
                    b += 1;
                    a += 1;
                    from_base
                }
            },
        };
        while g < gone.len() && *gone[g] < **next {
            g += 1;
        }
        if g < gone.len() && *gone[g] == **next {
            continue;
        }
        out.push(next.clone());
    }
    out
}

/// Objects by key plus named indexes. Each key is allocated once and shared
/// (`Arc<str>`) by the map, the key order and every index entry.
pub struct Indexer {
    items: KeyMap<Arc<str>, Slot>,
    /// The keys of `items` in byte order.
    order: KeyOrder,
    indexes: Vec<Index>,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("len", &self.items.len())
            .field(
                "indexes",
                &self.indexes.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
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
        for (name, kind) in [
            (NAMESPACE_INDEX, IndexKind::Namespace),
            (LABEL_INDEX, IndexKind::Label),
            (OWNER_INDEX, IndexKind::Owner),
        ] {
            let _ = ix.push_index(name, kind);
        }
        ix
    }

    /// A plain store without indexes.
    pub fn without_indexes() -> Indexer {
        Indexer {
            items: KeyMap::default(),
            order: KeyOrder::default(),
            indexes: Vec::new(),
        }
    }

    /// Adds a named index; existing objects are indexed immediately.
    pub fn add_index(&mut self, name: &str, func: IndexFunc) -> Result<(), IndexError> {
        self.push_index(name, IndexKind::Custom(func))
    }

    fn push_index(&mut self, name: &str, kind: IndexKind) -> Result<(), IndexError> {
        if self.indexes.iter().any(|i| i.name == name) {
            return Err(IndexError::Exists(name.to_owned()));
        }
        let mut index = Index {
            name: name.to_owned(),
            kind,
            values: KeyMap::default(),
        };
        for (key, slot) in self.items.iter_mut() {
            let values = index.insert_object(key, &slot.object);
            let mut all = std::mem::take(&mut slot.index_values).into_vec();
            all.push(values);
            slot.index_values = all.into_boxed_slice();
        }
        self.indexes.push(index);
        Ok(())
    }

    fn index(&self, name: &str) -> Option<&Index> {
        self.indexes.iter().find(|i| i.name == name)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds or replaces by key; returns the previous object.
    pub fn add(&mut self, obj: ObjectRef) -> Option<ObjectRef> {
        if let Some(slot) = self.items.get_mut(obj.key.as_str()) {
            for (index, old_values) in self.indexes.iter_mut().zip(slot.index_values.iter_mut()) {
                if !index.kind.unchanged(&obj, old_values) {
                    index.remove_values(&slot.key, old_values);
                    *old_values = index.insert_object(&slot.key, &obj);
                }
            }
            return Some(std::mem::replace(&mut slot.object, obj));
        }
        let key: Arc<str> = Arc::from(obj.key.as_str());
        let index_values: Box<[Vec<Arc<str>>]> = self
            .indexes
            .iter_mut()
            .map(|index| index.insert_object(&key, &obj))
            .collect();
        self.insert_slot(key, obj, index_values);
        None
    }

    /// A key new to the store, with the values it is indexed under.
    fn insert_slot(
        &mut self,
        key: Arc<str>,
        object: ObjectRef,
        index_values: Box<[Vec<Arc<str>>]>,
    ) {
        self.order.added(&key, self.items.len());
        self.items.insert(
            key.clone(),
            Slot {
                key,
                object,
                index_values,
            },
        );
    }

    /// Adds a stand-in for an object not yet indexed: a face restored from
    /// the browser's database (`persist::face`), shown until the whole
    /// object replaces it through [`Indexer::add`], which indexes it then
    /// (its slot holds no values, so none is taken out). Until then no
    /// `by_index` finds it. Indexing 100k faces took ~0.4 s of the 1 s a
    /// warm reopen has to show its table; the whole objects need it once.
    pub fn add_unindexed(&mut self, obj: ObjectRef) -> Option<ObjectRef> {
        if let Some(slot) = self.items.get_mut(obj.key.as_str()) {
            return Some(std::mem::replace(&mut slot.object, obj));
        }
        let key: Arc<str> = Arc::from(obj.key.as_str());
        let unindexed = vec![Vec::new(); self.indexes.len()].into_boxed_slice();
        self.insert_slot(key, obj, unindexed);
        None
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
        let slot = self.items.remove(key)?;
        self.order.removed(&slot.key, self.items.len());
        for (index, values) in self.indexes.iter_mut().zip(slot.index_values.iter()) {
            index.remove_values(key, values);
        }
        Some(slot.object)
    }

    /// Keys in byte order, to keep (a clone holds the keys, not the objects).
    pub fn keys_in_order(&self) -> &[Arc<str>] {
        self.order.sorted(
            |key| self.items.contains_key(key),
            || self.items.keys().cloned().collect(),
        )
    }

    /// Objects in key order.
    pub fn list(&self) -> impl Iterator<Item = &ObjectRef> {
        self.keys_in_order()
            .iter()
            .filter_map(|k| self.items.get(k).map(|slot| &slot.object))
    }

    /// Objects in no particular order: no sort and no lookup per key, for
    /// a snapshot of a large store taken in one task (100k pods listed in
    /// key order take tens of milliseconds in the page).
    pub fn objects(&self) -> impl Iterator<Item = &ObjectRef> {
        self.items.values().map(|slot| &slot.object)
    }

    /// Keys in byte order.
    pub fn list_keys(&self) -> impl Iterator<Item = &str> {
        self.keys_in_order().iter().map(|k| &**k)
    }

    /// The stored object with the same key as `obj`.
    pub fn get(&self, obj: &KubeObject) -> Option<&ObjectRef> {
        self.get_by_key(&obj.key)
    }

    pub fn get_by_key(&self, key: &str) -> Option<&ObjectRef> {
        self.items.get(key).map(|slot| &slot.object)
    }

    /// Replaces the whole content.
    pub fn replace(&mut self, list: Vec<ObjectRef>) {
        self.items.clear();
        self.order = KeyOrder::default();
        for index in &mut self.indexes {
            index.values.clear();
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
            .index(index)
            .ok_or_else(|| IndexError::NoSuchIndex(index.to_owned()))?;
        // owned (a count each), to share the store's one sort of keys
        let mut keys: Vec<Arc<str>> = ix
            .values
            .get(value)
            .into_iter()
            .flat_map(|indexed| indexed.keys.iter().cloned())
            .collect();
        keys.sort_unstable();
        Ok(keys
            .into_iter()
            .filter_map(|k| self.get_by_key(&k).cloned())
            .collect())
    }

    /// Keys whose `index` contains `value`, sorted.
    pub fn index_keys(&self, index: &str, value: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .index(index)
            .and_then(|ix| ix.values.get(value))
            .map(|indexed| indexed.keys.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        keys
    }

    /// All values of an index (e.g. every namespace present), sorted.
    pub fn index_values(&self, index: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .index(index)
            .map(|ix| ix.values.keys().map(|v| v.to_string()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The store's digest (`deltascope_facts::digest`: keys and
    /// resourceVersions in key order), compared with the cluster's by the tests.
    pub fn digest(&self) -> String {
        digest_of_sorted(
            self.keys_in_order()
                .iter()
                .filter_map(|k| Some((&**k, self.get_by_key(k)?.resource_version.as_str()))),
        )
    }
}

impl KnownObjects for Indexer {
    fn known_keys(&self) -> Vec<Arc<str>> {
        self.keys_in_order().to_vec()
    }

    fn known_object(&self, key: &str) -> Option<ObjectRef> {
        self.get_by_key(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltascope_facts::digest_of;
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

    /// The key order across walks far apart: keys removed and back, added
    /// and gone, and more changes between two walks than the last order
    /// held (the notes are dropped and the next walk sorts afresh).
    #[test]
    fn the_key_order_survives_churn_between_rare_walks() {
        let mut s = Indexer::without_indexes();
        let mut model = std::collections::BTreeSet::new();
        let add = |s: &mut Indexer, model: &mut std::collections::BTreeSet<String>, i: usize| {
            s.add(pod(
                &format!("ns{}", i % 7),
                &format!("p{i}"),
                "1",
                "a",
                "o",
            ));
            model.insert(format!("ns{}/p{i}", i % 7));
        };
        for i in 0..50 {
            add(&mut s, &mut model, i);
        }
        assert!(s.list_keys().eq(model.iter().map(String::as_str)));
        // few changes: removed and back, added then gone, removed for good
        s.delete_key("ns3/p10");
        add(&mut s, &mut model, 10);
        add(&mut s, &mut model, 60);
        s.delete_key("ns4/p60");
        model.remove("ns4/p60");
        s.delete_key("ns0/p0");
        model.remove("ns0/p0");
        s.delete_key("ns0/p0");
        assert!(s.list_keys().eq(model.iter().map(String::as_str)));
        // a long churn unwalked: the notes outgrow the store, are dropped,
        // and the walk sorts afresh
        for i in 100..6_000 {
            add(&mut s, &mut model, i);
            let key = format!("ns{}/p{}", (i - 50) % 7, i - 50);
            s.delete_key(&key);
            model.remove(&key);
        }
        assert!(s.order.stale, "the notes were dropped");
        assert!(s.order.added.is_empty() && s.order.removed.is_empty());
        assert!(s.list_keys().eq(model.iter().map(String::as_str)));
        assert_eq!(s.list_keys().count(), s.len());
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
    fn a_stand_in_is_indexed_once_its_whole_object_replaces_it() {
        let mut s = Indexer::new();
        s.add_unindexed(pod("a", "p1", "1", "web", "rs1"));
        s.add_unindexed(pod("a", "p2", "1", "web", "rs1"));
        assert_eq!(s.len(), 2);
        assert_eq!(s.get_by_key("a/p1").unwrap().resource_version, "1");
        assert!(s.by_index("label", "app=web").is_empty());
        assert!(s.index_values("namespace").is_empty());
        s.add(pod("a", "p1", "1", "web", "rs1"));
        assert_eq!(s.by_index("label", "app=web").len(), 1);
        assert_eq!(s.by_index("owner", "rs1")[0].key, "a/p1");
        // a stand-in never indexed leaves nothing behind when it goes
        s.delete_key("a/p2");
        s.delete_key("a/p1");
        assert!(s.is_empty());
        assert!(s.index_values("label").is_empty());
        assert!(s.index_values("namespace").is_empty());
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

    proptest::proptest! {
        /// Random adds, updates, deletes and order queries against a
        /// `BTreeMap` model: the key order, `list()`, the digest and the
        /// namespace index always agree with it, whenever they are asked.
        #[test]
        fn the_store_agrees_with_a_sorted_model(
            ops in proptest::collection::vec((0u8..4, 0u8..3, 0u8..12, 0u8..4), 0..120)
        ) {
            let mut s = Indexer::new();
            let mut model: std::collections::BTreeMap<String, String> = Default::default();
            for (step, (op, ns, name, query)) in ops.into_iter().enumerate() {
                let (ns, name) = (format!("ns{ns}"), format!("p{name}"));
                let key = format!("{ns}/{name}");
                match op {
                    0 | 1 => {
                        let rv = step.to_string();
                        s.add(pod(&ns, &name, &rv, "a", "o"));
                        model.insert(key, rv);
                    }
                    2 => {
                        proptest::prop_assert_eq!(s.delete_key(&key).is_some(), model.remove(&key).is_some());
                    }
                    _ => s.replace(
                        model
                            .keys()
                            .filter(|k| !k.starts_with(&ns))
                            .map(|k| {
                                let (kn, kname) = k.split_once('/').unwrap_or_default();
                                pod(kn, kname, &model[k], "a", "o")
                            })
                            .collect(),
                    ),
                }
                if op == 3 {
                    model.retain(|k, _| !k.starts_with(&ns));
                }
                if query == 0 {
                    continue; // let several changes pile up unobserved
                }
                let keys: Vec<&str> = s.list_keys().collect();
                proptest::prop_assert_eq!(keys, model.keys().map(String::as_str).collect::<Vec<_>>());
                let rvs: Vec<&str> = s.list().map(|o| o.resource_version.as_str()).collect();
                proptest::prop_assert_eq!(rvs, model.values().map(String::as_str).collect::<Vec<_>>());
                proptest::prop_assert_eq!(
                    s.digest(),
                    digest_of(model.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                );
                proptest::prop_assert_eq!(
                    s.index_keys("namespace", &ns),
                    model.keys().filter(|k| k.starts_with(&format!("{ns}/"))).cloned().collect::<Vec<_>>()
                );
            }
        }
    }
}
