//! The store digest (docs/contracts.md): lowercase hex SHA-256 over the lines
//! `KEY RV\n` of every object, sorted by KEY in byte order. The page shows it
//! (`data-digest`) and tests compare it with the server's; the simulated
//! cluster, the tests and the page's store all compute it here.

use sha2::{Digest, Sha256};

/// The digest of an empty store: SHA-256 of no bytes.
pub const EMPTY_DIGEST: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Digest of `(key, resourceVersion)` pairs in any order.
pub fn digest_of<K, R>(pairs: impl Iterator<Item = (K, R)>) -> String
where
    K: AsRef<str>,
    R: AsRef<str>,
{
    let mut v: Vec<(K, R)> = pairs.collect();
    v.sort_by(|a, b| a.0.as_ref().as_bytes().cmp(b.0.as_ref().as_bytes()));
    digest_of_sorted(v.iter().map(|(k, r)| (k.as_ref(), r.as_ref())))
}

/// Digest of pairs already sorted by key (byte order).
pub fn digest_of_sorted<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut builder = DigestBuilder::default();
    for (k, rv) in pairs {
        builder.push(k, rv);
    }
    builder.finish()
}

/// The digest built a pair at a time, so a large store can be hashed in
/// slices (a page hashing 100k pairs at once holds its thread for tens of
/// milliseconds). Push the pairs sorted by key (byte order).
#[derive(Default, Clone)]
pub struct DigestBuilder {
    hasher: Sha256,
}

impl DigestBuilder {
    pub fn push(&mut self, key: &str, resource_version: &str) {
        self.hasher.update(key.as_bytes());
        self.hasher.update(b" ");
        self.hasher.update(resource_version.as_bytes());
        self.hasher.update(b"\n");
    }

    /// Lowercase hex SHA-256 of what was pushed.
    pub fn finish(self) -> String {
        let out = self.hasher.finalize();
        let mut s = String::with_capacity(64);
        for b in out {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_store_is_sha256_of_nothing() {
        assert_eq!(
            digest_of(std::iter::empty::<(&str, &str)>()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(digest_of_sorted(std::iter::empty()), EMPTY_DIGEST);
    }

    #[test]
    fn known_value_and_order_independence() {
        // sha256("a 1\nb 2\n")
        let d = digest_of([("b", "2"), ("a", "1")].into_iter());
        assert_eq!(d, digest_of([("a", "1"), ("b", "2")].into_iter()));
        let want: String = Sha256::digest(b"a 1\nb 2\n")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(d, want);
        assert_ne!(d, digest_of([("a", "1"), ("b", "3")].into_iter()));
    }

    #[test]
    fn sort_is_byte_order() {
        // "B" (0x42) sorts before "a" (0x61); "ns/a" vs "ns-b": '/' 0x2f > '-' 0x2d
        let a = digest_of([("a", "1"), ("B", "1")].into_iter());
        let b = digest_of_sorted([("B", "1"), ("a", "1")].into_iter());
        assert_eq!(a, b);
        let c = digest_of([("ns/a", "1"), ("ns-b", "1")].into_iter());
        assert_eq!(
            c,
            digest_of_sorted([("ns-b", "1"), ("ns/a", "1")].into_iter())
        );
    }
}
