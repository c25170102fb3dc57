//! When the page recomputes the `data-digest` it shows (DESIGN §4), and
//! how, without freezing it: a small store is hashed at once on every
//! change (exact at every frame); a large one once changes pause (or when
//! the shown digest grows too stale while they stream), from a snapshot in
//! key order hashed a slice per frame (issue 21: 100k pairs at once held
//! the page for about 100 ms). No web dependency: tested natively.

use deltascope_facts::digest::DigestBuilder;

use crate::informer::{Indexer, ObjectRef};

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
    /// A snapshot in key order, the next index, the hash so far.
    job: Option<(Vec<ObjectRef>, usize, DigestBuilder)>,
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
            let snapshot = store.list().cloned().collect();
            self.job = Some((snapshot, 0, DigestBuilder::default()));
        }
        let Some((objects, next, builder)) = self.job.as_mut() else {
            return;
        };
        let end = (*next + SLICE).min(objects.len());
        for object in &objects[*next..end] {
            builder.push(&object.key, &object.resource_version);
        }
        *next = end;
        if end == objects.len() {
            if let Some((_, _, builder)) = self.job.take() {
                self.shown = builder.finish();
                self.at = Some(now_ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        // the first time is overdue: it starts at once, a slice a frame
        assert!(digest.pending() && digest.shown().is_empty());
        digest.refresh(&large, 1_016.0, 900.0);
        assert!(digest.pending());
        digest.refresh(&large, 1_032.0, 900.0);
        assert_eq!(digest.shown(), large.digest(), "three slices of 10,000");
        assert!(!digest.pending());

        // a change while streaming: nothing until a pause (or 5 s)
        let changed = store(25_000, "2");
        digest.changed();
        digest.refresh(&changed, 2_000.0, 1_990.0);
        assert_eq!(digest.shown(), large.digest(), "not quiet yet");
        for frame in 0..3 {
            digest.refresh(&changed, 2_300.0 + f64::from(frame) * 16.0, 1_990.0);
        }
        assert_eq!(digest.shown(), changed.digest());
    }
}
