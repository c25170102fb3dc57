//! How the simulated cluster starts ([`SimConfig`]): its seed and size,
//! churn, resourceVersion prefix, history windows (watches', and the
//! digests' at a past resourceVersion), watch buffers and
//! timeouts, the resources it forbids, the events' time to live, whether
//! objects carry managedFields and whether (and how often) it serves the
//! metrics API. `deltascope sim`'s and `serve --demo`'s flags fill it in.

use std::time::Duration;

/// metrics-server's default `--metric-resolution`.
pub const DEFAULT_METRICS_RESOLUTION: Duration = Duration::from_secs(15);

/// The leaking container fills its limit in 16 windows: 4 minutes at 15 s.
pub const DEFAULT_LEAK_WINDOWS: u32 = 16;

/// How the simulated cluster starts.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub initial_pods: usize,
    pub churn_per_sec: f64,
    /// Prepended to every resourceVersion ("" = plain numbers).
    pub rv_prefix: String,
    pub minor_version: u32,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Events kept for watches resuming from a resourceVersion and for
    /// consistent continued lists; older ones are compacted away.
    pub history: usize,
    /// Changes whose keys and revisions are kept for digests at a past
    /// resourceVersion (`GET /_sim/digest?rv=RV`): about 125 bytes each,
    /// objects not included. The `compact` fault does not shorten it.
    pub digest_history: usize,
    /// Serve streaming lists (`sendInitialEvents=true`). When false, such a
    /// watch is refused with 422 Invalid, as an apiserver with the WatchList
    /// feature gate off does, so clients list page by page (`--no-watch-list`).
    pub watch_list: bool,
    /// Events a watch may fall behind the store before it is closed.
    pub watch_lag_limit: usize,
    /// Encoded events buffered per watch connection.
    pub watch_buffer: usize,
    /// A watch whose buffer stays full this long is closed as too slow.
    pub slow_watch_timeout: Duration,
    /// Resources every request for is answered `403 Forbidden`, as RBAC would
    /// (`--forbid`): plurals, or `plural.group` for a named group.
    pub forbidden: Vec<String>,
    /// Events are deleted this long after their last write (the
    /// apiserver's `--event-ttl`; `deltascope sim --event-ttl SECS`, and
    /// `POST /_sim/events {"ttl_secs": N}` at runtime).
    pub event_ttl: Duration,
    /// Write `metadata.managedFields` on every object (about 4 KB of a
    /// pod's 9 KB); off, objects carry none (for benchmarks that want the
    /// bytes of the objects alone).
    pub managed_fields: bool,
    /// Serve the metrics API (`metrics.k8s.io/v1beta1`, as metrics-server
    /// does); off (`--no-metrics`), the group is absent from discovery and
    /// its paths answer 404, as in a cluster without metrics-server.
    pub metrics: bool,
    /// How long one metrics window lasts: the values change once per
    /// window (metrics-server's `--metric-resolution`; `--metrics-resolution
    /// SECS`). At least a millisecond.
    pub metrics_resolution: Duration,
    /// Windows the leaking container (`metrics`) takes to climb from its
    /// low to its memory limit, where it is OOMKilled (at least 2;
    /// `--metrics-leak-windows N`).
    pub metrics_leak_windows: u32,
}

impl SimConfig {
    /// Does `--forbid` name this resource (`pods`, or `widgets.demo.deltascope.dev`)?
    pub fn forbids(&self, plural: &str, group: &str) -> bool {
        self.forbidden.iter().any(|name| {
            let name = name.trim();
            name == plural || (!group.is_empty() && name == format!("{plural}.{group}"))
        })
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            initial_pods: 200,
            churn_per_sec: 5.0,
            rv_prefix: String::new(),
            minor_version: 32,
            bookmark_interval: Duration::from_secs(1),
            history: 5000,
            // 31 MB at most; several minutes of churn at 500 changes a second
            digest_history: 250_000,
            watch_list: true,
            watch_lag_limit: 4096,
            watch_buffer: 64,
            slow_watch_timeout: Duration::from_secs(10),
            forbidden: Vec::new(),
            event_ttl: crate::workload::events::DEFAULT_TTL,
            managed_fields: true,
            metrics: true,
            metrics_resolution: DEFAULT_METRICS_RESOLUTION,
            metrics_leak_windows: DEFAULT_LEAK_WINDOWS,
        }
    }
}
