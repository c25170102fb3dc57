//! When the page recomputes the `data-digest` it shows (the store's digest,
//! which the browser tests compare with the cluster's), and
//! how, without freezing it: a small store is hashed at once on every
//! change (exact at every frame); a large one once changes pause (or when
//! the shown digest grows too stale while they stream), a slice of keys per
//! frame (100k pairs at once held the page for about 100 ms, and
//! taking a snapshot of 100k objects in key order alone took 45 ms). A
//! recomputation the store changed under is not shown: it would be the
//! digest of no state the store was ever in. No web dependency: tested
//! natively.

use deltascope_facts::digest::DigestBuilder;

use std::sync::Arc;

use crate::informer::Indexer;

/// A large store's digest is recomputed once no change arrived for this long…
const QUIET_MS: f64 = 250.0;
/// …or when it is this stale while changes keep streaming.
const MAX_STALE_MS: f64 = 5_000.0;
/// Stores this small are hashed at once.
const ALWAYS_BELOW: usize = 5_000;
/// Pairs a large store's digest hashes per frame.
pub const SLICE: usize = 10_000;

/// The digest shown and its recomputation in progress.
#[derive(Default)]
pub struct StoreDigest {
    shown: String,
    /// The store changed since the digest shown was started.
    dirty: bool,
    /// When the digest shown was finished.
    at: Option<f64>,
    job: Option<DigestJob>,
}

/// A recomputation under way.
struct DigestJob {
    /// The store's keys in order when it started.
    keys: Vec<Arc<str>>,
    /// The next key to hash.
    next: usize,
    hashed: DigestBuilder,
}

impl StoreDigest {
    /// A store not hashed yet.
    pub fn new() -> StoreDigest {
        StoreDigest {
            dirty: true,
            ..StoreDigest::default()
        }
    }

    /// The digest shown (empty before the first).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The store changed.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// Not up to date yet: more frames are wanted.
    pub fn pending(&self) -> bool {
        self.dirty || self.job.is_some()
    }

    /// One frame's work at `now_ms`: starts a recomputation when due
    /// (`last_change_ms`: when the store last changed) and hashes a slice.
    pub fn refresh(&mut self, store: &Indexer, now_ms: f64, last_change_ms: f64) {
        let small = store.len() <= ALWAYS_BELOW;
        let quiet = now_ms - last_change_ms >= QUIET_MS;
        let overdue = self.at.is_none_or(|at| now_ms - at >= MAX_STALE_MS);
        if self.dirty && self.job.is_none() && (small || quiet || overdue) {
            self.dirty = false;
            if small {
                self.shown = store.digest();
                self.at = Some(now_ms);
                return;
            }
            self.job = Some(DigestJob {
                keys: store.keys_in_order().to_vec(),
                next: 0,
                hashed: DigestBuilder::default(),
            });
            // Ordering the keys may have meant sorting them all: that is
            // this frame's share.
            return;
        }
        let Some(job) = self.job.as_mut() else {
            return;
        };
        let end = (job.next + SLICE).min(job.keys.len());
        for key in &job.keys[job.next..end] {
            if let Some(object) = store.get_by_key(key) {
                job.hashed.push(key, &object.resource_version);
            }
        }
        job.next = end;
        if end < job.keys.len() {
            return;
        }
        if let Some(job) = self.job.take() {
            // The store changed since the job started (`dirty` again): the
            // digest shown stays, and the next one is due when changes
            // pause or in `MAX_STALE_MS`.
            if !self.dirty {
                self.shown = job.hashed.finish();
            }
            self.at = Some(now_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::KubeObject;

    fn store(n: usize, rv: &str) -> Indexer {
        let mut store = Indexer::new();
        for i in 0..n {
            let value = serde_json::json!({"metadata": {"name": format!("p{i:06}"), "namespace": "ns",
                "resourceVersion": rv}});
            store.add(Arc::new(KubeObject::from_value(value).expect("object")));
        }
        store
    }

    #[test]
    fn a_small_store_is_hashed_at_once_on_every_change() {
        let small = store(10, "1");
        let mut digest = StoreDigest::new();
        digest.refresh(&small, 0.0, 0.0);
        assert_eq!(digest.shown(), small.digest());
        assert!(!digest.pending());
    }

    #[test]
    fn a_large_store_is_hashed_a_slice_per_frame_once_changes_pause() {
        let large = store(25_000, "1");
        let mut digest = StoreDigest::new();
        digest.refresh(&large, 1_000.0, 900.0);
        // the first time is overdue: it starts at once (the keys in order
        // this frame), then a slice a frame
        assert!(digest.pending() && digest.shown().is_empty());
        for frame in 1..3 {
            digest.refresh(&large, 1_000.0 + f64::from(frame) * 16.0, 900.0);
            assert!(digest.pending());
        }
        digest.refresh(&large, 1_048.0, 900.0);
        assert_eq!(digest.shown(), large.digest(), "three slices of 10,000");
        assert!(!digest.pending());

        // a change while streaming: nothing until a pause (or 5 s)
        let changed = store(25_000, "2");
        digest.changed();
        digest.refresh(&changed, 2_000.0, 1_990.0);
        assert_eq!(digest.shown(), large.digest(), "not quiet yet");
        for frame in 0..4 {
            digest.refresh(&changed, 2_300.0 + f64::from(frame) * 16.0, 1_990.0);
        }
        assert_eq!(digest.shown(), changed.digest());
    }

    #[test]
    fn a_recomputation_the_store_changed_under_is_not_shown() {
        let before = store(25_000, "1");
        let mut digest = StoreDigest::new();
        for frame in 0..4 {
            digest.refresh(&before, 1_000.0 + f64::from(frame) * 16.0, 0.0);
        }
        assert_eq!(digest.shown(), before.digest());

        // the store changes after the first slice of a recomputation
        let after = store(25_000, "2");
        digest.changed();
        digest.refresh(&before, 2_000.0, 0.0);
        digest.refresh(&before, 2_016.0, 0.0);
        digest.changed();
        digest.refresh(&after, 2_032.0, 2_020.0);
        digest.refresh(&after, 2_048.0, 2_020.0);
        assert_eq!(
            digest.shown(),
            before.digest(),
            "a mix of both stores is never shown"
        );
        assert!(digest.pending());
        // once changes pause, the new state's digest
        for frame in 0..4 {
            digest.refresh(&after, 2_300.0 + f64::from(frame) * 16.0, 2_020.0);
        }
        assert_eq!(digest.shown(), after.digest());
    }
}
