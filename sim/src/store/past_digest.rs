//! What the digest at a past resourceVersion is rebuilt from
//! ([`KeyHistory`], `GET /_sim/digest?resource=R&rv=RV`): for every
//! committed change, only its revision, resource, key and the revision the
//! key had before it (none: it did not exist) — no object. The watch log
//! holds whole object versions (a pod's JSON twice over, several KB), so it
//! is short; this costs about 125 bytes a change (key and slack
//! included: 31 MB measured for 250,000) and reaches back much further
//! (`SimConfig::digest_history` changes, 250,000 by default: at the churn
//! of 500 changes a second, about 30,000 revisions a minute, some of two
//! changes — an Event and its events.k8s.io view — it holds several
//! minutes).
//!
//! It is a test oracle — what the cluster was — not what the API serves:
//! the `compact` fault, which empties the watch log, leaves it alone; only
//! its own bound forgets.

use std::collections::{BTreeMap, VecDeque};

use crate::resources::ResIdx;

/// Why a past digest cannot be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PastDigestError {
    #[error("revision {requested} is older than the oldest still known, {oldest}")]
    Forgotten { requested: u64, oldest: u64 },
    #[error("revision {requested} is newer than the current one, {current}")]
    Newer { requested: u64, current: u64 },
}

/// One committed change, as much as a digest needs.
struct Change {
    rev: u64,
    res: ResIdx,
    key: Box<str>,
    /// The key's revision before this change; `None` if it did not exist.
    before: Option<u64>,
}

/// The last `cap` changes of every resource, oldest first.
pub(super) struct KeyHistory {
    changes: VecDeque<Change>,
    cap: usize,
    /// Every change after this revision is held: the oldest revision a
    /// state can be rebuilt at.
    oldest: u64,
}

impl KeyHistory {
    /// Empty, able to rebuild any revision from `start` on.
    pub(super) fn new(cap: usize, start: u64) -> KeyHistory {
        KeyHistory {
            changes: VecDeque::new(),
            cap: cap.max(1),
            oldest: start,
        }
    }

    pub(super) fn oldest(&self) -> u64 {
        self.oldest
    }

    /// Records a change committed at `rev` (revisions never go down),
    /// forgetting the oldest beyond the bound.
    pub(super) fn push(&mut self, rev: u64, res: ResIdx, key: &str, before: Option<u64>) {
        self.changes.push_back(Change {
            rev,
            res,
            key: key.into(),
            before,
        });
        while self.changes.len() > self.cap {
            if let Some(old) = self.changes.pop_front() {
                // the state at old.rev needs only the changes after it
                self.oldest = self.oldest.max(old.rev);
            }
        }
    }

    /// The revision each key of `res` changed after `at` had at `at`
    /// (`None`: it did not exist then). Keys not in the answer are as they
    /// are now. The caller checks `at` against [`KeyHistory::oldest`].
    pub(super) fn before(&self, res: ResIdx, at: u64) -> BTreeMap<&str, Option<u64>> {
        let mut undo = BTreeMap::new();
        // newest first: the oldest change after `at` writes last and wins
        for c in self.changes.iter().rev() {
            if c.rev <= at {
                break;
            }
            if c.res == res {
                undo.insert(&*c.key, c.before);
            }
        }
        undo
    }
}

/// `(key, revision)` of every object of a resource at `at`: `now` (in key
/// order) with `undo` ([`KeyHistory::before`]) applied, in key order.
pub(super) fn state_at<'a>(
    now: impl Iterator<Item = (&'a str, u64)>,
    undo: BTreeMap<&'a str, Option<u64>>,
) -> Vec<(&'a str, u64)> {
    let mut state: BTreeMap<&str, u64> = now.collect();
    for (key, before) in undo {
        match before {
            Some(rev) => state.insert(key, rev),
            None => state.remove(key),
        };
    }
    state.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `changes` (rev, key, new revision or deleted) from nothing
    /// up to `at`: the state a digest at `at` must describe.
    fn replay(changes: &[(u64, &'static str, bool)], at: u64) -> Vec<(&'static str, u64)> {
        let mut state = BTreeMap::new();
        for (rev, key, deleted) in changes.iter().filter(|c| c.0 <= at) {
            if *deleted {
                state.remove(key);
            } else {
                state.insert(*key, *rev);
            }
        }
        state.into_iter().collect()
    }

    #[test]
    fn rebuilds_every_past_state_it_still_holds() {
        // resource 0: a created, b created, a updated, b deleted, c created,
        // a deleted, b created again; resource 1 interleaved
        let changes: &[(u64, &str, bool)] = &[
            (2, "a", false),
            (3, "b", false),
            (5, "a", false),
            (6, "b", true),
            (7, "c", false),
            (9, "a", true),
            (10, "b", false),
        ];
        let mut history = KeyHistory::new(100, 1);
        let mut now: BTreeMap<&str, u64> = BTreeMap::new();
        for (rev, key, deleted) in changes {
            let before = now.get(key).copied();
            history.push(*rev, 0, key, before);
            history.push(*rev, 1, "other", None);
            if *deleted {
                now.remove(key);
            } else {
                now.insert(key, *rev);
            }
        }
        for at in 1..=10 {
            let undo = history.before(0, at);
            let got = state_at(now.iter().map(|(k, r)| (*k, *r)), undo);
            assert_eq!(got, replay(changes, at), "at {at}");
        }
    }

    #[test]
    fn forgets_the_oldest_beyond_its_bound() {
        let mut history = KeyHistory::new(3, 1);
        for rev in 2..=5 {
            history.push(rev, 0, "k", Some(rev - 1));
        }
        // 2 is forgotten: the state at 2 needs only 3, 4, 5
        assert_eq!(history.oldest(), 2);
        assert_eq!(history.before(0, 2).get("k"), Some(&Some(2)));
        // two changes at one revision (an Event and its events.k8s.io view)
        history.push(6, 0, "e", None);
        history.push(6, 1, "e", None);
        assert_eq!(history.oldest(), 4);
    }
}
