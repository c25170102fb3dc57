//! Deleted rows fade out: a row whose object the informer deleted stays in
//! the table for [`FADE_MS`] with the last state it had, styled as deleted,
//! then goes. The bookkeeping has no web dependency so it is tested
//! natively; the table reads it to render the row (its key stays among the
//! row keys while it fades, so virtualisation and sorting place it like any
//! other row) and the store, its count and its digest never see it.
//!
//! A mass deletion (a relist that drops thousands of objects, a scale to
//! zero) fades at most [`MAX_FADING`] rows; the rest go at once, so a frame
//! never renders or sorts an unbounded number of ghosts.

use std::collections::HashMap;

/// How long a deleted row stays (ms), matching the CSS fade-out.
pub const FADE_MS: f64 = 1_500.0;

/// Rows fading at once at most.
pub const MAX_FADING: usize = 256;

/// The rows fading out, each with its last object and when it was deleted.
#[derive(Debug, Clone)]
pub struct Fading<T> {
    rows: HashMap<String, (T, f64)>,
}

impl<T> Default for Fading<T> {
    fn default() -> Self {
        Fading {
            rows: HashMap::new(),
        }
    }
}

impl<T> Fading<T> {
    /// The object of `key` was deleted at `now`; `last` is what its row
    /// showed. True when the row fades (keep its key among the rows), false
    /// when too many are fading already (remove it at once).
    pub fn deleted(&mut self, key: &str, last: T, now: f64) -> bool {
        if self.rows.len() >= MAX_FADING && !self.rows.contains_key(key) {
            return false;
        }
        self.rows.insert(key.to_string(), (last, now));
        true
    }

    /// True when another row may start fading (else it goes at once).
    pub fn has_room(&self) -> bool {
        self.rows.len() < MAX_FADING
    }

    /// The key is back in the store (re-created while fading): it is a
    /// live row again.
    pub fn revived(&mut self, key: &str) -> bool {
        // asked for every added or updated row: with nothing fading (the
        // usual case) the key is not even hashed (a relist of 100k pods)
        !self.rows.is_empty() && self.rows.remove(key).is_some()
    }

    /// Ends the fades that have run their time at `now`; the keys to remove
    /// from the rows.
    pub fn expire(&mut self, now: f64) -> Vec<String> {
        let done: Vec<String> = self
            .rows
            .iter()
            .filter(|(_, (_, at))| now - at >= FADE_MS)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &done {
            self.rows.remove(key);
        }
        done
    }

    /// The last object of a fading row.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.rows.get(key).map(|(last, _)| last)
    }

    /// The last object of a fading row and when it was deleted.
    pub fn get_with_time(&self, key: &str) -> Option<(&T, f64)> {
        self.rows.get(key).map(|(last, at)| (last, *at))
    }

    pub fn contains(&self, key: &str) -> bool {
        self.rows.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Forgets every fading row (a new view); the keys to remove.
    pub fn clear(&mut self) -> Vec<String> {
        self.rows.drain().map(|(key, _)| key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::table::SortedKeys;
    use proptest::prelude::*;

    #[test]
    fn a_deleted_row_stays_for_the_fade_then_goes() {
        let mut fading = Fading::default();
        assert!(fading.deleted("shop/web-1", "rv 7", 1_000.0));
        assert_eq!(fading.get("shop/web-1"), Some(&"rv 7"));
        assert!(fading.expire(1_000.0 + FADE_MS - 1.0).is_empty());
        assert_eq!(fading.expire(1_000.0 + FADE_MS), ["shop/web-1"]);
        assert!(fading.is_empty());
        assert!(fading.get("shop/web-1").is_none());
    }

    #[test]
    fn a_re_created_object_is_live_again() {
        let mut fading = Fading::default();
        fading.deleted("shop/web-1", 1, 0.0);
        assert!(fading.revived("shop/web-1"));
        assert!(!fading.revived("shop/web-1"));
        assert!(fading.expire(10_000.0).is_empty(), "nothing left to remove");
    }

    #[test]
    fn a_mass_deletion_fades_only_the_first_rows() {
        let mut fading = Fading::default();
        let faded = (0..MAX_FADING * 2)
            .filter(|i| fading.deleted(&format!("k{i}"), *i, 0.0))
            .count();
        assert_eq!(faded, MAX_FADING);
        assert_eq!(fading.len(), MAX_FADING);
        // A key already fading is refreshed, not refused.
        assert!(fading.deleted("k0", 0, 5.0));
        assert_eq!(fading.expire(FADE_MS).len(), MAX_FADING - 1);
        assert_eq!(fading.expire(FADE_MS + 5.0), ["k0"]);
    }

    proptest! {
        /// The table's bookkeeping through any sequence of adds, deletes and
        /// frames: the rows are always the store's keys plus the fading
        /// ones, nothing fades longer than FADE_MS, and once the fades have
        /// run the rows are exactly the store.
        #[test]
        fn rows_are_the_store_plus_the_fading(ops in proptest::collection::vec((0u8..20, 0u8..3, 0u16..800), 0..150)) {
            let mut store = std::collections::BTreeSet::new();
            let mut rows = SortedKeys::default();
            let mut fading = Fading::default();
            let mut deleted_at: HashMap<String, f64> = HashMap::new();
            let mut now = 0.0;
            for (key, op, wait) in ops {
                let key = format!("ns/p{key}");
                match op {
                    0 => {
                        store.insert(key.clone());
                        fading.revived(&key);
                        deleted_at.remove(&key);
                        rows.insert(&key);
                    }
                    1 if store.remove(&key) => {
                        if fading.deleted(&key, (), now) {
                            deleted_at.insert(key.clone(), now);
                        } else {
                            rows.remove(&key);
                        }
                    }
                    _ => {
                        now += f64::from(wait);
                        for gone in fading.expire(now) {
                            deleted_at.remove(&gone);
                            rows.remove(&gone);
                        }
                    }
                }
                let expected: std::collections::BTreeSet<String> =
                    store.iter().cloned().chain(deleted_at.keys().cloned()).collect();
                let shown: std::collections::BTreeSet<String> = rows.iter().map(|k| k.to_string()).collect();
                prop_assert_eq!(&shown, &expected);
                for at in deleted_at.values() {
                    prop_assert!(now - at < FADE_MS);
                }
            }
            for gone in fading.expire(now + FADE_MS) {
                rows.remove(&gone);
            }
            let shown: Vec<String> = rows.iter().map(|k| k.to_string()).collect();
            let store: Vec<String> = store.into_iter().collect();
            prop_assert_eq!(shown, store);
        }
    }
}
