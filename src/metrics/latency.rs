//! [`LatencyHistogram`]: latencies in 1 ms buckets, weighted by how many
//! events each one stands for, and their quantiles. The page keeps its
//! event→DOM latencies in one (`transport::metrics`).

/// Event→DOM latencies in 1 ms buckets (the last one holds everything
/// slower than [`LatencyHistogram::BUCKETS`] − 1 ms).
#[derive(Default)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    total: u64,
    max: f64,
}

impl LatencyHistogram {
    pub const BUCKETS: usize = 10_000;

    pub fn add(&mut self, ms: f64, count: u64) {
        if count == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; Self::BUCKETS];
        }
        let bucket = (ms.max(0.0) as usize).min(Self::BUCKETS - 1);
        self.counts[bucket] += count;
        self.total += count;
        self.max = self.max.max(ms);
    }

    /// The upper edge (ms) of the bucket holding quantile `q` (NaN when empty).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((self.total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return (bucket + 1) as f64;
            }
        }
        self.max
    }

    /// How many events were added.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The slowest latency added (ms; 0 when empty).
    pub fn max(&self) -> f64 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::LatencyHistogram;

    #[test]
    fn quantiles_weigh_each_event() {
        let mut histogram = LatencyHistogram::default();
        assert!(histogram.quantile(0.99).is_nan());
        histogram.add(3.5, 98);
        histogram.add(120.2, 1);
        histogram.add(20_000.0, 1);
        assert_eq!(histogram.quantile(0.5), 4.0);
        assert_eq!(histogram.quantile(0.99), 121.0);
        assert_eq!(histogram.quantile(1.0), LatencyHistogram::BUCKETS as f64);
        assert_eq!(histogram.max(), 20_000.0);
        histogram.add(-1.0, 0);
        assert_eq!(histogram.total(), 100);
    }
}
