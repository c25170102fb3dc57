//! A fast, non-cryptographic hasher for the informer's hash maps keyed by
//! object keys (`namespace/name`) and index values.
//!
//! The standard `SipHash` defends against hash flooding by untrusted input;
//! here the keys come from the cluster the user is looking at and every
//! delta hashes a key several times (DeltaFIFO, store, indexes, history), so
//! a multiply-rotate hash over 8-byte words is used instead.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hasher over 8-byte little-endian words.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl KeyHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // the length keeps "a\0" and "a" apart
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // spread the well-mixed high bits into the low bits hashbrown indexes by
        self.0 ^ (self.0 >> 32)
    }
}

pub type BuildKeyHasher = BuildHasherDefault<KeyHasher>;
pub type KeyMap<K, V> = HashMap<K, V, BuildKeyHasher>;
pub type KeySet<K> = HashSet<K, BuildKeyHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn distinct_keys_spread_over_buckets() {
        let build = BuildKeyHasher::default();
        let mut low_bits = HashSet::new();
        let mut all = HashSet::new();
        for i in 0..4096 {
            let h = build.hash_one(format!("team-{}/settings-{i}", i % 25));
            all.insert(h);
            low_bits.insert(h & 4095);
        }
        assert_eq!(all.len(), 4096);
        // a good spread fills most of 4096 buckets with 4096 keys (~63% expected)
        assert!(
            low_bits.len() > 2300,
            "only {} buckets used",
            low_bits.len()
        );
        assert_ne!(build.hash_one("a"), build.hash_one("a\0"));
    }

    #[test]
    fn works_as_a_map_hasher() {
        let mut m: KeyMap<String, u32> = KeyMap::default();
        m.insert("ns/a".into(), 1);
        m.insert("ns/b".into(), 2);
        assert_eq!(m.get("ns/a"), Some(&1));
        assert_eq!(m.get("ns/c"), None);
    }
}
