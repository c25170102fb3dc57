//! Which resources the page keeps live, with no web dependency so the
//! bookkeeping is tested natively. Opening a resource view starts its
//! informer; switching to another resource keeps the first one running (its
//! store and history keep growing, so the timeline can draw a lane for it)
//! until more than its capacity ([`KEPT_CAPACITY`] by default, settable)
//! have been opened: then the least recently shown one is evicted, and the
//! caller stops it. The user may stop any kept resource but the one on screen.
//!
//! Also here: [`Spans`], each informer's record of when it was blind (not
//! watching after its first sync) and when it relisted, for the timeline.

use crate::informer::compact_sort;
use crate::informer::Millis;

/// Resources kept live at most by default (each with its own watch, store
/// and history; all watches share the page's one channel to serve).
pub const KEPT_CAPACITY: usize = 32;

/// The most resources a user may ask to keep live ("keep everything live"
/// asks for every listable resource discovery names; a cluster rarely serves
/// more than a few hundred).
pub const MAX_KEPT_CAPACITY: usize = 1_000;

/// A capacity the user typed, read: a whole number from 1 to
/// [`MAX_KEPT_CAPACITY`], else what to tell them.
pub fn parse_capacity(typed: &str) -> Result<usize, String> {
    match typed.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_KEPT_CAPACITY).contains(&n) => Ok(n),
        _ => Err(format!(
            "Type a whole number from 1 to {MAX_KEPT_CAPACITY}."
        )),
    }
}

/// The capacity saved in the browser (`None`: nothing saved), brought
/// within 1 to [`MAX_KEPT_CAPACITY`]; [`KEPT_CAPACITY`] when nothing
/// readable was saved.
pub fn saved_capacity(saved: Option<&str>) -> usize {
    saved
        .and_then(|text| text.trim().parse::<usize>().ok())
        .map_or(KEPT_CAPACITY, |n| n.clamp(1, MAX_KEPT_CAPACITY))
}

/// Blind spans and relists kept per informer at most (the oldest go first).
pub const MAX_SPANS: usize = 1_000;

/// One kept resource: a stable id (never reused), the key it was opened
/// with, and what the caller keeps for it (the running informer).
#[derive(Debug)]
pub struct Kept<K, T> {
    pub id: u64,
    pub key: K,
    pub value: T,
}

/// The kept resources, most recently shown first.
#[derive(Debug)]
pub struct KeptSet<K, T> {
    capacity: usize,
    next_id: u64,
    entries: Vec<Kept<K, T>>,
}

/// What [`KeptSet::open`] did.
#[derive(Debug)]
pub struct Opened<T> {
    pub id: u64,
    /// The resource was new (its value was just made).
    pub started: bool,
    /// Least recently shown resources pushed out to make room; stop them.
    pub evicted: Vec<T>,
}

impl<K: PartialEq, T> KeptSet<K, T> {
    /// Keeps at most `capacity` (at least 1) resources.
    pub fn new(capacity: usize) -> Self {
        KeptSet {
            capacity: capacity.max(1),
            next_id: 1,
            entries: Vec::new(),
        }
    }

    /// Shows `key`: the kept one moves to the front, or `make(id)` starts a
    /// new one, evicting the least recently shown beyond the capacity.
    pub fn open(&mut self, key: K, make: impl FnOnce(u64) -> T) -> Opened<T> {
        if let Some(index) = self.entries.iter().position(|e| e.key == key) {
            let entry = self.entries.remove(index);
            let id = entry.id;
            self.entries.insert(0, entry);
            return Opened {
                id,
                started: false,
                evicted: Vec::new(),
            };
        }
        let id = self.next_id;
        self.next_id += 1;
        let value = make(id);
        self.entries.insert(0, Kept { id, key, value });
        Opened {
            id,
            started: true,
            evicted: self.beyond_capacity(),
        }
    }

    /// Keeps `key` live without showing it: added as the least recently
    /// shown (nothing is evicted for it: false when the set is full or it is
    /// kept already).
    pub fn keep(&mut self, key: K, make: impl FnOnce(u64) -> T) -> bool {
        if self.entries.len() >= self.capacity || self.entries.iter().any(|e| e.key == key) {
            return false;
        }
        let id = self.next_id;
        self.next_id += 1;
        let value = make(id);
        self.entries.push(Kept { id, key, value });
        true
    }

    /// A new capacity (at least 1); the least recently shown beyond it are
    /// returned for the caller to stop.
    pub fn set_capacity(&mut self, capacity: usize) -> Vec<T> {
        self.capacity = capacity.max(1);
        self.beyond_capacity()
    }

    /// Takes out the least recently shown beyond the capacity.
    fn beyond_capacity(&mut self) -> Vec<T> {
        if self.entries.len() <= self.capacity {
            return Vec::new();
        }
        self.entries
            .split_off(self.capacity)
            .into_iter()
            .map(|e| e.value)
            .collect()
    }

    /// Stops keeping `id`; its value, for the caller to stop.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        let index = self.entries.iter().position(|e| e.id == id)?;
        Some(self.entries.remove(index).value)
    }

    /// Every kept value, for the caller to stop (the set is empty after).
    pub fn drain(&mut self) -> Vec<T> {
        self.entries.drain(..).map(|e| e.value).collect()
    }

    pub fn get(&self, id: u64) -> Option<&Kept<K, T>> {
        self.entries.iter().find(|e| e.id == id)
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut Kept<K, T>> {
        self.entries.iter_mut().find(|e| e.id == id)
    }

    /// Most recently shown first.
    pub fn iter(&self) -> impl Iterator<Item = &Kept<K, T>> {
        self.entries.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Kept<K, T>> {
        self.entries.iter_mut()
    }

    /// In the order they were first opened (stable lanes on the timeline).
    pub fn by_age(&self) -> Vec<&Kept<K, T>> {
        let mut entries: Vec<&Kept<K, T>> = self.entries.iter().collect();
        compact_sort::sort_by_key(&mut entries, |e| e.id);
        entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// When one informer was blind and when it relisted, as it is observed
/// frame by frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spans {
    gaps: Vec<(Millis, Millis)>,
    blind_since: Option<Millis>,
    relists: Vec<Millis>,
    relists_seen: u32,
}

impl Spans {
    /// Takes in the informer's state at `now`: watching or not, synced once,
    /// and its relist counter. True when the spans changed (redraw).
    pub fn observe(&mut self, now: Millis, watching: bool, synced: bool, relists: u32) -> bool {
        let mut changed = false;
        if relists > self.relists_seen {
            self.relists_seen = relists;
            push_bounded(&mut self.relists, now);
            changed = true;
        }
        match (watching, self.blind_since) {
            (false, None) if synced => {
                self.blind_since = Some(now);
                changed = true;
            }
            (true, Some(since)) => {
                push_bounded(&mut self.gaps, (since, now));
                self.blind_since = None;
                changed = true;
            }
            _ => {}
        }
        changed
    }

    /// The closed blind spans, and the open one up to `now`.
    pub fn gaps_until(&self, now: Millis) -> Vec<(Millis, Millis)> {
        let mut gaps = self.gaps.clone();
        gaps.extend(self.blind_since.map(|since| (since, now.max(since))));
        gaps
    }

    pub fn relists(&self) -> &[Millis] {
        &self.relists
    }

    /// Blind right now (the open span grows with time).
    pub fn is_blind(&self) -> bool {
        self.blind_since.is_some()
    }

    /// Since when it is blind (not watching after having synced), if it is.
    pub fn blind_since(&self) -> Option<Millis> {
        self.blind_since
    }
}

fn push_bounded<T>(list: &mut Vec<T>, item: T) {
    if list.len() >= MAX_SPANS {
        list.drain(..list.len() + 1 - MAX_SPANS);
    }
    list.push(item);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_typed_capacity_is_a_whole_number_in_range_else_a_hint() {
        assert_eq!(parse_capacity(" 12 "), Ok(12));
        assert_eq!(parse_capacity("1000"), Ok(MAX_KEPT_CAPACITY));
        for typed in ["0", "1001", "-3", "2.5", "many", ""] {
            assert_eq!(
                parse_capacity(typed),
                Err("Type a whole number from 1 to 1000.".to_string()),
                "{typed:?}"
            );
        }
    }

    #[test]
    fn a_saved_capacity_is_brought_in_range_and_nothing_readable_is_the_default() {
        assert_eq!(saved_capacity(Some("7")), 7);
        assert_eq!(saved_capacity(Some("0")), 1);
        assert_eq!(saved_capacity(Some("5000")), MAX_KEPT_CAPACITY);
        assert_eq!(saved_capacity(Some("x")), KEPT_CAPACITY);
        assert_eq!(saved_capacity(None), KEPT_CAPACITY);
    }

    #[test]
    fn keeping_without_showing_and_a_smaller_capacity() {
        let mut set: KeptSet<&str, String> = KeptSet::new(3);
        set.open("pods", |id| format!("pods#{id}"));
        assert!(set.keep("nodes", |id| format!("nodes#{id}")));
        assert!(!set.keep("pods", |_| unreachable!("kept already")));
        assert!(set.keep("services", |id| format!("services#{id}")));
        assert!(!set.keep("events", |_| unreachable!(
            "full: nothing is evicted to keep"
        )));
        // Kept ones come after the shown one, in the order they were kept.
        let mru: Vec<&str> = set.iter().map(|e| e.key).collect();
        assert_eq!(mru, ["pods", "nodes", "services"]);
        assert_eq!(set.set_capacity(1), ["nodes#2", "services#3"]);
        assert_eq!(set.capacity(), 1);
        assert!(set.set_capacity(0).is_empty(), "at least one is kept");
        assert_eq!(set.capacity(), 1);
    }

    #[test]
    fn reopening_moves_to_the_front_and_the_least_recent_is_evicted() {
        let mut set: KeptSet<&str, String> = KeptSet::new(3);
        let pods = set.open("pods", |id| format!("pods#{id}"));
        assert!(pods.started && pods.evicted.is_empty());
        set.open("deployments", |id| format!("deployments#{id}"));
        set.open("services", |id| format!("services#{id}"));
        // Back to pods: the same informer, nothing started or stopped.
        let again = set.open("pods", |_| unreachable!("pods is kept"));
        assert_eq!((again.id, again.started), (pods.id, false));
        assert!(again.evicted.is_empty());
        // A fourth: deployments was shown least recently.
        let nodes = set.open("nodes", |id| format!("nodes#{id}"));
        assert_eq!(nodes.evicted, ["deployments#2"]);
        let mru: Vec<&str> = set.iter().map(|e| e.key).collect();
        assert_eq!(mru, ["nodes", "pods", "services"]);
        // Lanes keep the order resources were first opened in.
        let lanes: Vec<&str> = set.by_age().iter().map(|e| e.key).collect();
        assert_eq!(lanes, ["pods", "services", "nodes"]);
        // Reopening an evicted resource starts a new one with a new id.
        let back = set.open("deployments", |id| format!("deployments#{id}"));
        assert!(back.started);
        assert_eq!(back.id, 5);
        assert_eq!(back.evicted, ["services#3"]);
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn removing_and_draining_hand_back_what_to_stop() {
        let mut set: KeptSet<u8, u8> = KeptSet::new(8);
        let a = set.open(1, |_| 10).id;
        set.open(2, |_| 20);
        assert_eq!(set.remove(a), Some(10));
        assert_eq!(set.remove(a), None);
        assert!(set.get(a).is_none());
        assert_eq!(set.drain(), [20]);
        assert!(set.is_empty());
    }

    #[test]
    fn spans_record_blindness_after_sync_and_relists() {
        let mut spans = Spans::default();
        // Listing before the first sync is not blindness.
        assert!(!spans.observe(0, false, false, 0));
        assert!(!spans.observe(100, true, true, 0));
        assert!(spans.observe(200, false, true, 0));
        assert!(spans.is_blind());
        assert_eq!(spans.gaps_until(250), [(200, 250)]);
        assert!(spans.observe(300, true, true, 1));
        assert_eq!(spans.gaps_until(1_000), [(200, 300)]);
        assert_eq!(spans.relists(), [300]);
        assert!(!spans.observe(400, true, true, 1), "nothing new");
    }

    #[test]
    fn spans_stay_bounded() {
        let mut spans = Spans::default();
        for i in 0..(MAX_SPANS as u64 * 3) {
            spans.observe(i * 10, false, true, i as u32);
            spans.observe(i * 10 + 5, true, true, i as u32);
        }
        assert_eq!(spans.gaps_until(u64::MAX).len(), MAX_SPANS);
        assert!(spans.relists().len() <= MAX_SPANS);
        assert_eq!(
            spans.gaps_until(u64::MAX).last(),
            Some(&(MAX_SPANS as u64 * 30 - 10, MAX_SPANS as u64 * 30 - 5))
        );
    }

    proptest! {
        /// Any sequence of opens and stops: never more than the capacity,
        /// ids unique, every started value is either kept or handed back
        /// exactly once, and the resource just opened is always kept.
        #[test]
        fn the_set_is_a_bounded_lru(ops in proptest::collection::vec((0u8..12, any::<bool>()), 0..200)) {
            let mut set: KeptSet<u8, u64> = KeptSet::new(KEPT_CAPACITY);
            let mut started = Vec::new();
            let mut handed_back = Vec::new();
            let mut recency: Vec<u8> = Vec::new();
            for (key, stop) in ops {
                if stop {
                    let id = set.iter().find(|e| e.key == key).map(|e| e.id);
                    if let Some(id) = id {
                        handed_back.extend(set.remove(id));
                        recency.retain(|k| *k != key);
                    }
                    continue;
                }
                let opened = set.open(key, |id| { started.push(id); id });
                recency.retain(|k| *k != key);
                recency.insert(0, key);
                for value in &opened.evicted {
                    let evicted_key = recency.pop().expect("something to evict");
                    prop_assert!(evicted_key != key);
                    handed_back.push(*value);
                }
                prop_assert!(set.len() <= KEPT_CAPACITY);
                prop_assert_eq!(set.iter().next().map(|e| e.key), Some(key));
                let keys: Vec<u8> = set.iter().map(|e| e.key).collect();
                prop_assert_eq!(&keys, &recency);
            }
            let mut all: Vec<u64> = set.iter().map(|e| e.value).chain(handed_back).collect();
            all.sort_unstable();
            prop_assert_eq!(all, started);
        }
    }
}
