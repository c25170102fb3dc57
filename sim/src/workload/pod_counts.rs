//! Per-app pod counts in a Fenwick tree, so the workload picks "the n-th
//! pod" and counts pods in O(log apps) instead of scanning every app on each
//! write (20k apps at 100k pods).

/// Per-app pod counts in a Fenwick tree: the total, an update and "which
/// app holds the n-th pod" each take O(log apps).
#[derive(Default)]
pub(super) struct PodCounts {
    /// 1-based Fenwick array over the apps.
    tree: Vec<usize>,
    pub(super) apps: usize,
    pub(super) total: usize,
}

impl PodCounts {
    pub(super) fn build(sizes: impl ExactSizeIterator<Item = usize>) -> PodCounts {
        let mut counts = PodCounts {
            tree: vec![0; sizes.len() + 1],
            apps: sizes.len(),
            total: 0,
        };
        for (a, size) in sizes.enumerate() {
            counts.add(a, size as isize);
        }
        counts
    }

    pub(super) fn add(&mut self, app: usize, delta: isize) {
        self.total = self.total.saturating_add_signed(delta);
        let mut i = app + 1;
        while i <= self.apps {
            self.tree[i] = self.tree[i].saturating_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The app holding pod `n` (0-based, counting apps in order) and the
    /// pod's index in it; `None` when `n` is not below the total.
    pub(super) fn find(&self, mut n: usize) -> Option<(usize, usize)> {
        if n >= self.total {
            return None;
        }
        let mut position = 0;
        let mut step = self.apps.checked_ilog2().map_or(0, |log| 1usize << log);
        while step > 0 {
            let next = position + step;
            if next <= self.apps && self.tree[next] <= n {
                position = next;
                n -= self.tree[next];
            }
            step >>= 1;
        }
        Some((position, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The tree answers "which app holds pod n" as a scan of the apps does,
    /// through random growth and shrinking of random apps.
    #[test]
    fn the_fenwick_tree_agrees_with_a_scan() {
        let mut rng = StdRng::seed_from_u64(7);
        for apps in [0usize, 1, 2, 3, 7, 8, 9, 33] {
            let mut sizes: Vec<usize> = (0..apps).map(|_| rng.gen_range(0..5)).collect();
            let mut counts = PodCounts {
                tree: vec![0; apps + 1],
                apps,
                total: 0,
            };
            for (a, n) in sizes.iter().enumerate() {
                counts.add(a, *n as isize);
            }
            for _ in 0..200 {
                let total: usize = sizes.iter().sum();
                assert_eq!(counts.total, total);
                for n in 0..=total {
                    let mut rest = n;
                    let mut scan = None;
                    for (app, size) in sizes.iter().enumerate() {
                        if rest < *size {
                            scan = Some((app, rest));
                            break;
                        }
                        rest -= size;
                    }
                    assert_eq!(counts.find(n), scan, "pod {n} of {sizes:?}");
                }
                if apps == 0 {
                    break;
                }
                let a = rng.gen_range(0..apps);
                if rng.gen_bool(0.5) {
                    sizes[a] += 1;
                    counts.add(a, 1);
                } else if sizes[a] > 0 {
                    sizes[a] -= 1;
                    counts.add(a, -1);
                }
            }
        }
    }
}
