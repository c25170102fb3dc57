//! Exponential backoff with jitter, on the caller's clock, and the tiny seeded
//! PRNG (splitmix64) that supplies jitter and watch timeouts — no OS entropy,
//! so the core builds for `wasm32-unknown-unknown` and every run is
//! reproducible from `InformerConfig::seed`.
//!
//! Shape follows client-go's reflector backoff manager: 800 ms initial, ×2 per
//! failure, capped at 30 s, and reset to the initial delay once 2 minutes have
//! passed since the last failure (i.e. after 2 minutes of health).

use crate::clock::Millis;

/// splitmix64: a small, good-enough, seedable generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`; `lo` if the range is empty.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo)
    }
}

/// Backoff parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    pub initial: Millis,
    pub max: Millis,
    pub factor: f64,
    /// Each delay is stretched by a random fraction in `[0, jitter)` of itself
    /// (never beyond `max`).
    pub jitter: f64,
    /// The delay resets to `initial` once this long has passed since the
    /// previous failure.
    pub reset_after: Millis,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: 800,
            max: 30_000,
            factor: 2.0,
            jitter: 0.25,
            reset_after: 120_000,
        }
    }
}

/// Backoff state.
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    /// un-jittered delay to use for the next failure
    current: Millis,
    last_failure: Option<Millis>,
}

impl Backoff {
    pub fn new(config: BackoffConfig) -> Backoff {
        let current = config.initial.max(1);
        Backoff {
            config,
            current,
            last_failure: None,
        }
    }

    /// Records a failure at `now` and returns how long to wait.
    pub fn next_delay(&mut self, now: Millis, rng: &mut SplitMix64) -> Millis {
        if let Some(last) = self.last_failure {
            if now.saturating_sub(last) >= self.config.reset_after {
                self.current = self.config.initial.max(1);
            }
        }
        self.last_failure = Some(now);
        let base = self.current.min(self.config.max.max(1));
        let stretch = (base as f64 * self.config.jitter.max(0.0) * rng.next_f64()) as Millis;
        let delay = base.saturating_add(stretch).min(self.config.max.max(1));
        let grown = (self.current as f64 * self.config.factor.max(1.0)) as Millis;
        self.current = grown.clamp(1, self.config.max.max(1));
        delay
    }

    /// Forgets all failures.
    pub fn reset(&mut self) {
        self.current = self.config.initial.max(1);
        self.last_failure = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_factor_with_jitter_and_caps_at_max() {
        // client-go: initial 800ms, factor 2, cap 30s
        let mut b = Backoff::new(BackoffConfig::default());
        let mut rng = SplitMix64::new(1);
        let mut now = 0;
        let mut bases = vec![];
        for _ in 0..10 {
            let d = b.next_delay(now, &mut rng);
            bases.push(d);
            now += d;
        }
        let expect = [
            800u64, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 30000,
        ];
        for (d, e) in bases.iter().zip(expect) {
            assert!(
                *d >= e && *d <= (e as f64 * 1.25) as u64 && *d <= 30_000,
                "{d} vs {e}"
            );
        }
    }

    #[test]
    fn jitter_varies() {
        let mut rng = SplitMix64::new(7);
        let ds: std::collections::BTreeSet<u64> = (0..20)
            .map(|_| Backoff::new(BackoffConfig::default()).next_delay(0, &mut rng))
            .collect();
        assert!(ds.len() > 5);
        assert!(ds.iter().all(|d| (800..1000).contains(d)));
    }

    #[test]
    fn resets_after_two_minutes_of_health() {
        let cfg = BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        };
        let mut b = Backoff::new(cfg);
        let mut rng = SplitMix64::new(1);
        assert_eq!(b.next_delay(0, &mut rng), 800);
        assert_eq!(b.next_delay(1_000, &mut rng), 1600);
        assert_eq!(b.next_delay(3_000, &mut rng), 3200);
        // less than 2 min since the last failure: keeps growing
        assert_eq!(b.next_delay(3_000 + 119_999, &mut rng), 6400);
        // 2 min of health: back to the start
        assert_eq!(b.next_delay(3_000 + 119_999 + 120_000, &mut rng), 800);
    }

    #[test]
    fn splitmix_is_deterministic_and_ranges_hold() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            let r = a.range(300, 600);
            b.range(300, 600);
            assert!((300..600).contains(&r));
            let f = a.next_f64();
            b.next_f64();
            assert!((0.0..1.0).contains(&f));
        }
        assert_eq!(a.range(5, 5), 5);
    }
}
