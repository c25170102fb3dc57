//! The usage model: what each running container and each node uses in one
//! metrics window, a pure function of the seed, the container's identity
//! (namespace, pod, container) and the window's index, so two reads in one
//! window agree and a test can compute what it should see. Most containers
//! are steady with a little noise; about one in twenty with a CPU limit is
//! hot (88–98 % of it); the leaking container's memory climbs from a low
//! to its limit over the leak's windows (`leak`). A node uses what its
//! running pods use plus the system's own overhead.

use crate::store::{hash_parts, splitmix};

/// What a container or a node uses in one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_nanocores: u64,
    pub memory_bytes: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage {
            cpu_nanocores: self.cpu_nanocores + other.cpu_nanocores,
            memory_bytes: self.memory_bytes + other.memory_bytes,
        }
    }
}

/// What the model knows of a container: its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub cpu_nanocores: Option<u64>,
    pub memory_bytes: Option<u64>,
}

/// Percent of the containers with a CPU limit that run hot.
pub const HOT_PERCENT: u64 = 5;

/// Memory is counted in whole pages, as the working set is.
const PAGE: u64 = 4096;
const MI: u64 = 1024 * 1024;
const MILLICORE: u64 = 1_000_000;

/// A number in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

fn pages(bytes: f64) -> u64 {
    (bytes.max(PAGE as f64) as u64) / PAGE * PAGE
}

/// The identity hash of a container (the same for all its windows).
pub fn identity(seed: u64, namespace: &str, pod: &str, container: &str) -> u64 {
    hash_parts(seed, &[namespace, pod, container])
}

/// Is the container of this identity hot (near its CPU limit)?
pub fn is_hot(identity: u64, limits: Limits) -> bool {
    limits.cpu_nanocores.is_some() && splitmix(identity ^ 0x407) % 100 < HOT_PERCENT
}

/// What a (not leaking) container uses in `window`.
pub fn container(identity: u64, limits: Limits, window: u64) -> Usage {
    let noise = splitmix(identity ^ splitmix(window));
    let cpu_wobble = 0.9 + 0.2 * unit(noise);
    let memory_wobble = 0.98 + 0.04 * unit(splitmix(noise));
    let cpu = match limits.cpu_nanocores {
        Some(limit) if is_hot(identity, limits) => limit as f64 * (0.88 + 0.1 * unit(noise)),
        Some(_) => (5 + splitmix(identity) % 116) as f64 * MILLICORE as f64 * cpu_wobble,
        // a sidecar without a limit: a few millicores
        None => (1 + splitmix(identity) % 8) as f64 * MILLICORE as f64 * cpu_wobble,
    };
    let steady = match limits.memory_bytes {
        Some(limit) => limit as f64 * (0.2 + 0.45 * unit(splitmix(identity ^ 0x3e3))),
        None => (64 + splitmix(identity ^ 0x3e3) % 128) as f64 * MI as f64,
    };
    let mut memory = pages(steady * memory_wobble);
    if let Some(limit) = limits.memory_bytes {
        memory = memory.min(limit.saturating_sub(PAGE * 64));
    }
    Usage {
        cpu_nanocores: cpu as u64,
        memory_bytes: memory,
    }
}

/// Where the leaking container's memory starts after each (re)start: a
/// fifth of its limit.
pub fn leak_low(limit: u64) -> u64 {
    pages(limit as f64 / 5.0)
}

/// The leaking container's memory `k` windows into its run of `n`: from
/// [`leak_low`] up to exactly `limit` in the last window (k = n − 1; later
/// windows stay there until the kill is written).
pub fn leaking_memory(limit: u64, k: u64, n: u64) -> u64 {
    let n = n.max(2);
    let k = k.min(n - 1);
    let low = leak_low(limit);
    if k == n - 1 {
        return limit;
    }
    pages(low as f64 + (limit - low) as f64 * k as f64 / (n - 1) as f64)
}

/// What a node's system (kubelet, runtime, kernel) uses besides its pods.
pub fn node_overhead(seed: u64, node: &str, window: u64) -> Usage {
    let identity = hash_parts(seed, &["node", node]);
    let noise = splitmix(identity ^ splitmix(window));
    let cpu = (120 + splitmix(identity) % 140) as f64 * MILLICORE as f64;
    let memory = (700 + splitmix(identity ^ 0x3e3) % 400) as f64 * MI as f64;
    Usage {
        cpu_nanocores: (cpu * (0.9 + 0.2 * unit(noise))) as u64,
        memory_bytes: pages(memory * (0.98 + 0.04 * unit(splitmix(noise)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: Limits = Limits {
        cpu_nanocores: Some(500 * MILLICORE),
        memory_bytes: Some(256 * MI),
    };
    const SIDECAR: Limits = Limits {
        cpu_nanocores: None,
        memory_bytes: Some(64 * MI),
    };

    #[test]
    fn one_window_one_value_and_windows_differ() {
        let id = identity(1, "shop", "cart-abc-x1", "cart");
        assert_eq!(container(id, APP, 7), container(id, APP, 7));
        assert_ne!(container(id, APP, 7), container(id, APP, 8));
        assert_ne!(
            container(id, APP, 7),
            container(identity(2, "shop", "cart-abc-x1", "cart"), APP, 7)
        );
    }

    #[test]
    fn usage_stays_plausible() {
        let mut hot = 0;
        for i in 0..2000u64 {
            let id = identity(1, "shop", &format!("pod-{i}"), "app");
            for w in 0..3 {
                let u = container(id, APP, w);
                assert!(u.cpu_nanocores <= 500 * MILLICORE, "{u:?}");
                assert!(u.cpu_nanocores >= 4 * MILLICORE, "{u:?}");
                assert!(
                    u.memory_bytes < 256 * MI && u.memory_bytes >= 40 * MI,
                    "{u:?}"
                );
                assert_eq!(u.memory_bytes % PAGE, 0);
                let s = container(id, SIDECAR, w);
                assert!(s.cpu_nanocores < 10 * MILLICORE && s.memory_bytes < 64 * MI);
            }
            if is_hot(id, APP) {
                hot += 1;
                assert!(container(id, APP, 0).cpu_nanocores >= 440 * MILLICORE);
            }
            assert!(!is_hot(id, SIDECAR));
        }
        // about HOT_PERCENT of 2000
        assert!((50..=150).contains(&hot), "{hot} hot containers");
    }

    #[test]
    fn steady_containers_wobble_a_little() {
        let id = identity(3, "data", "etl-1", "etl");
        let first = container(id, APP, 0);
        for w in 1..50 {
            let u = container(id, APP, w);
            let ratio = u.memory_bytes as f64 / first.memory_bytes as f64;
            assert!((0.95..1.05).contains(&ratio), "memory {ratio}");
        }
    }

    #[test]
    fn the_leak_climbs_to_the_limit() {
        let limit = 256 * MI;
        let n = 6;
        let climb: Vec<u64> = (0..n).map(|k| leaking_memory(limit, k, n)).collect();
        assert_eq!(climb[0], leak_low(limit));
        assert!(climb[0] < limit / 4);
        assert!(climb.windows(2).all(|w| w[0] < w[1]), "{climb:?}");
        assert_eq!(climb[n as usize - 1], limit);
        assert_eq!(leaking_memory(limit, n + 3, n), limit);
        assert_eq!(leaking_memory(limit, 1, 1), limit, "n is at least 2");
    }

    #[test]
    fn node_overhead_is_steady_per_node() {
        let a = node_overhead(1, "node-0", 5);
        assert_eq!(a, node_overhead(1, "node-0", 5));
        assert_ne!(a, node_overhead(1, "node-1", 5));
        assert!(a.cpu_nanocores > 100 * MILLICORE && a.cpu_nanocores < 300 * MILLICORE);
        assert!(a.memory_bytes > 600 * MI && a.memory_bytes < 1200 * MI);
    }
}
