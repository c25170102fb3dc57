//! ExpirationCache (client-go `expiration_cache.go` with a TTL policy): a
//! keyed cache whose entries expire a fixed time after they were stored.
//! Time is the caller's [`Millis`]; an expired entry is never returned and
//! is removed when it is looked at (or by [`ExpirationCache::purge`]).
//!
//! Nothing in deltascope uses it today — the page keeps no expiring cache;
//! discovery is refreshed on a schedule and objects come from informers. It
//! is a library part of the informer core, kept with its tests for the
//! core's users, so the core offers what client-go's `tools/cache` does.

use std::collections::HashMap;

use crate::clock::Millis;

#[derive(Debug, Clone)]
struct Entry<V> {
    value: V,
    stored_at: Millis,
}

#[derive(Debug, Clone)]
pub struct ExpirationCache<V> {
    ttl: Millis,
    entries: HashMap<String, Entry<V>>,
}

impl<V> ExpirationCache<V> {
    /// Entries live for `ttl` milliseconds (an entry stored at `t` is
    /// expired from `t + ttl` on).
    pub fn new(ttl: Millis) -> ExpirationCache<V> {
        ExpirationCache {
            ttl,
            entries: HashMap::new(),
        }
    }

    pub fn ttl(&self) -> Millis {
        self.ttl
    }

    fn expired(&self, e: &Entry<V>, now: Millis) -> bool {
        now.saturating_sub(e.stored_at) >= self.ttl
    }

    /// Stores (or refreshes) `key`.
    pub fn insert(&mut self, key: impl Into<String>, value: V, now: Millis) {
        self.entries.insert(
            key.into(),
            Entry {
                value,
                stored_at: now,
            },
        );
    }

    /// The live value for `key`; an expired one is removed.
    pub fn get(&mut self, key: &str, now: Millis) -> Option<&V> {
        let expired = self.entries.get(key).is_some_and(|e| self.expired(e, now));
        if expired {
            self.entries.remove(key);
            return None;
        }
        self.entries.get(key).map(|e| &e.value)
    }

    /// The live value without removing expired entries.
    pub fn peek(&self, key: &str, now: Millis) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|e| !self.expired(e, now))
            .map(|e| &e.value)
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.entries.remove(key).map(|e| e.value)
    }

    /// Drops every expired entry; returns how many.
    pub fn purge(&mut self, now: Millis) -> usize {
        let before = self.entries.len();
        let ttl = self.ttl;
        self.entries
            .retain(|_, e| now.saturating_sub(e.stored_at) < ttl);
        before - self.entries.len()
    }

    /// Live keys, sorted.
    pub fn keys(&self, now: Millis) -> Vec<&str> {
        let mut k: Vec<&str> = self
            .entries
            .iter()
            .filter(|(_, e)| !self.expired(e, now))
            .map(|(k, _)| k.as_str())
            .collect();
        k.sort_unstable();
        k
    }

    /// Entries held, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_ttl_on_a_fake_clock() {
        // client-go TTLPolicy: expired when now - timestamp >= ttl; expired items are deleted on Get
        let mut c = ExpirationCache::new(1_000);
        c.insert("apis", 1, 100);
        assert_eq!(c.get("apis", 1_099), Some(&1));
        assert_eq!(c.peek("apis", 1_100), None);
        assert_eq!(c.len(), 1);
        assert_eq!(c.get("apis", 1_100), None);
        assert_eq!(c.len(), 0);
        c.insert("a", 1, 0);
        c.insert("b", 2, 500);
        assert_eq!(c.keys(1_200), vec!["b"]);
        assert_eq!(c.purge(1_200), 1);
        c.insert("b", 3, 1_400); // refresh
        assert_eq!(c.get("b", 2_000), Some(&3));
        assert_eq!(c.remove("b"), Some(3));
        assert!(c.is_empty());
    }
}
