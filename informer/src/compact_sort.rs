//! Stable sorting of short lists through one compiled sort.
//!
//! Each `slice::sort_by` call with its own closure is compiled into its own
//! copy of the standard library's driftsort: about 4 KB of wasm each, which
//! the page downloads. The lists the page sorts for display (an object's
//! events, its story rows, the timeline's lanes, a pod's log sources) are
//! short and sorted rarely, so they share one copy: [`sort_by`] sorts the
//! positions `0..n` with the comparison behind a pointer, then moves the
//! items into that order by following its cycles. Hot sorts (a table's
//! 100,000 rows, store keys, digests) keep the standard, inlined sort.
//!
//! No crate does this (it is a size trade, not an algorithm); the standard
//! sort still does the sorting.

use std::cmp::Ordering;

/// Sorts `items` by `compare`, keeping equal items in their order (stable),
/// like `slice::sort_by`.
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    sort_positions(&mut order, &mut |a, b| compare(&items[a], &items[b]));
    put_in_order(items, &mut order);
}

/// Sorts `items` in their order, like `slice::sort` (for values whose equal
/// ones are alike, as numbers, also like `sort_unstable`).
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// Sorts `items` by the key `key` gives, stable, like `slice::sort_by_key`.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// The one compiled sort: positions, compared through a pointer.
#[inline(never)]
fn sort_positions(order: &mut [usize], compare: &mut dyn FnMut(usize, usize) -> Ordering) {
    order.sort_by(|a, b| compare(*a, *b));
}

/// Moves `items[order[i]]` to `i` for every `i`, in place: each cycle of
/// the permutation is walked once, a swap per step; `order` is spent.
fn put_in_order<T>(items: &mut [T], order: &mut [usize]) {
    for start in 0..order.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_stably_by_a_comparison_and_by_a_key() {
        let mut words = vec!["pear", "fig", "apple", "kiwi", "date", "plum"];
        sort_by_key(&mut words, |w| w.len());
        assert_eq!(words, ["fig", "pear", "kiwi", "date", "plum", "apple"]);
        sort_by(&mut words, |a, b| b.cmp(a));
        assert_eq!(words, ["plum", "pear", "kiwi", "fig", "date", "apple"]);
        let mut empty: Vec<u8> = Vec::new();
        sort_by_key(&mut empty, |b| *b);
        assert!(empty.is_empty());
    }

    proptest! {
        /// The same order as the standard stable sort, equal keys included
        /// (each item carries its first position, so stability shows).
        #[test]
        fn orders_as_the_standard_stable_sort(keys in proptest::collection::vec(0u8..8, 0..200)) {
            let items: Vec<(u8, usize)> = keys.into_iter().enumerate().map(|(i, k)| (k, i)).collect();
            let mut ours = items.clone();
            sort_by_key(&mut ours, |item| item.0);
            let mut standard = items;
            standard.sort_by_key(|item| item.0);
            prop_assert_eq!(ours, standard);
        }
    }
}
