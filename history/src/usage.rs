//! Resource usage over time (what `kubectl top` shows, kept): the facts the
//! recorder's usage sampler hands the store, one [`UsageRecord`] per metrics
//! window and resource (`pods` or `nodes`), and what serve's usage route
//! reads back ([`UsageQuery`] → [`UsageSeries`]). Owned here, apart from the
//! deltas, because a sample is not a change of an object: it is a
//! measurement the metrics API makes once per window, stored in a table of
//! its own (`ds_usage`, schema version 3) with no chains and no bodies.
//!
//! Also here, with no I/O: the compact form a pod's per-container usage is
//! stored in ([`pack_containers`], [`unpack_containers`]) and the thinning of
//! a long series into equal time buckets ([`thin`]).

/// Which metrics API resource a sample is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UsageResource {
    Pods,
    Nodes,
}

impl UsageResource {
    /// As stored, and as the route's `resource=` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageResource::Pods => "pods",
            UsageResource::Nodes => "nodes",
        }
    }

    /// The metrics API's name of it (`pods.metrics.k8s.io`).
    pub fn api_name(self) -> &'static str {
        match self {
            UsageResource::Pods => "pods.metrics.k8s.io",
            UsageResource::Nodes => "nodes.metrics.k8s.io",
        }
    }

    pub fn parse(word: &str) -> Option<UsageResource> {
        match word {
            "pods" => Some(UsageResource::Pods),
            "nodes" => Some(UsageResource::Nodes),
            _ => None,
        }
    }
}

/// One container's usage in a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    pub name: String,
    pub cpu_nanocores: i64,
    pub memory_bytes: i64,
}

/// One object's usage in a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageSample {
    /// Empty for a node.
    pub namespace: String,
    pub name: String,
    /// The whole object's: a pod's containers summed.
    pub cpu_nanocores: i64,
    pub memory_bytes: i64,
    /// A pod's containers (none for a node).
    pub containers: Vec<ContainerUsage>,
    /// A pod's controller (`ReplicaSet/web-7d9`), empty when unknown.
    pub controller: String,
    /// A pod's top workload (`Deployment/web`; the controller itself when
    /// nothing controls it), empty when unknown.
    pub workload: String,
}

impl UsageSample {
    /// About what it takes in memory (the writer's queue counts it).
    pub fn held_bytes(&self) -> usize {
        96 + self.namespace.len()
            + self.name.len()
            + self.controller.len()
            + self.workload.len()
            + self
                .containers
                .iter()
                .map(|c| 40 + c.name.len())
                .sum::<usize>()
    }
}

/// One metrics window of one resource (or a part of it: the sampler hands
/// a large window over a few hundred samples at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    pub resource: UsageResource,
    /// The window's timestamp (the answer's newest), ms since the Unix epoch.
    pub at_ms: i64,
    /// How long the window was, ms.
    pub window_ms: i64,
    pub samples: Vec<UsageSample>,
}

impl UsageRecord {
    pub fn held_bytes(&self) -> usize {
        64 + self
            .samples
            .iter()
            .map(UsageSample::held_bytes)
            .sum::<usize>()
    }
}

/// Whose usage a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageTarget {
    /// One object.
    Name(String),
    /// The pods whose controller or top workload is this `Kind/name`,
    /// summed per window.
    Owner(String),
}

/// What [`crate::HistoryStore::usage`] reads: `[since_ms, until_ms)`, at
/// most `points` samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageQuery {
    pub resource: UsageResource,
    /// Pods' (required for them); `None` for nodes.
    pub namespace: Option<String>,
    pub target: UsageTarget,
    pub since_ms: i64,
    pub until_ms: i64,
    pub points: usize,
}

/// The most points a query may ask for.
pub const MAX_USAGE_POINTS: usize = 10_000;

/// One point of a series: a window, or (thinned) a bucket's peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsagePoint {
    pub at_ms: i64,
    pub window_ms: i64,
    pub cpu_nanocores: i64,
    pub memory_bytes: i64,
    /// An owner's: how many pods were summed.
    pub pods: Option<i64>,
    /// A pod's (by name) containers.
    pub containers: Vec<ContainerUsage>,
}

/// What the record holds for a query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageSeries {
    /// In time order.
    pub points: Vec<UsagePoint>,
    /// The newest window's length (ms), before any thinning.
    pub window_ms: Option<i64>,
    /// More windows than `points`: each point is its bucket's peak.
    pub thinned: bool,
    /// The spans the pods' (or nodes') record has gaps in over the range.
    pub gaps: Vec<crate::MarkGap>,
}

/// Samples held, and the first and last window's time (all clusters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    pub samples: i64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

/// Why a stored container blob cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a stored container usage is malformed at byte {0}")]
pub struct UnpackError(pub usize);

/// The packed form's version byte.
const PACKED_V1: u8 = 1;

/// A pod's containers, packed: a version byte, then for each container its
/// name's length and bytes, CPU and memory, all numbers as LEB128 varints
/// (`main`, 12 ms of CPU, 80 MiB: 14 bytes with the version). Empty for none.
pub fn pack_containers(containers: &[ContainerUsage]) -> Vec<u8> {
    if containers.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(1 + containers.len() * 16);
    out.push(PACKED_V1);
    for c in containers {
        push_varint(&mut out, c.name.len() as u64);
        out.extend_from_slice(c.name.as_bytes());
        push_varint(&mut out, c.cpu_nanocores.max(0) as u64);
        push_varint(&mut out, c.memory_bytes.max(0) as u64);
    }
    out
}

/// The containers [`pack_containers`] packed.
pub fn unpack_containers(bytes: &[u8]) -> Result<Vec<ContainerUsage>, UnpackError> {
    let Some((&version, mut rest)) = bytes.split_first() else {
        return Ok(Vec::new());
    };
    if version != PACKED_V1 {
        return Err(UnpackError(0));
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        let at = bytes.len() - rest.len();
        let len = read_varint(&mut rest).ok_or(UnpackError(at))? as usize;
        if len > rest.len() {
            return Err(UnpackError(at));
        }
        let (name, after) = rest.split_at(len);
        rest = after;
        let name = std::str::from_utf8(name).map_err(|_| UnpackError(at))?;
        let cpu = read_varint(&mut rest).ok_or(UnpackError(at))?;
        let memory = read_varint(&mut rest).ok_or(UnpackError(at))?;
        out.push(ContainerUsage {
            name: name.to_string(),
            cpu_nanocores: i64::try_from(cpu).map_err(|_| UnpackError(at))?,
            memory_bytes: i64::try_from(memory).map_err(|_| UnpackError(at))?,
        });
    }
    Ok(out)
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_varint(rest: &mut &[u8]) -> Option<u64> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, after) = rest.split_first()?;
        *rest = after;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// `points` (in time order, within `[since_ms, until_ms)`) thinned to at
/// most `buckets` equal time buckets: each bucket's point is at its last
/// sample's time and window, with the bucket's largest CPU and largest
/// memory (and each container's largest), its pods the last sample's.
/// Returns the points unchanged when there are no more than `buckets`.
pub fn thin(
    points: Vec<UsagePoint>,
    (since_ms, until_ms): (i64, i64),
    buckets: usize,
) -> (Vec<UsagePoint>, bool) {
    let buckets = buckets.max(1);
    if points.len() <= buckets {
        return (points, false);
    }
    let span = i128::from(until_ms.saturating_sub(since_ms).max(1));
    let bucket_of = |at: i64| {
        let offset = i128::from(at.saturating_sub(since_ms)).max(0);
        (offset * buckets as i128 / span).min(buckets as i128 - 1)
    };
    let mut out: Vec<(i128, UsagePoint)> = Vec::with_capacity(buckets);
    for point in points {
        let bucket = bucket_of(point.at_ms);
        match out.last_mut() {
            Some((last, peak)) if *last == bucket => fold_peak(peak, point),
            _ => out.push((bucket, point)),
        }
    }
    (out.into_iter().map(|(_, point)| point).collect(), true)
}

/// `next` (later) folded into its bucket's `peak`.
fn fold_peak(peak: &mut UsagePoint, next: UsagePoint) {
    peak.at_ms = next.at_ms;
    peak.window_ms = next.window_ms;
    peak.pods = next.pods;
    peak.cpu_nanocores = peak.cpu_nanocores.max(next.cpu_nanocores);
    peak.memory_bytes = peak.memory_bytes.max(next.memory_bytes);
    for container in next.containers {
        match peak
            .containers
            .iter_mut()
            .find(|c| c.name == container.name)
        {
            Some(held) => {
                held.cpu_nanocores = held.cpu_nanocores.max(container.cpu_nanocores);
                held.memory_bytes = held.memory_bytes.max(container.memory_bytes);
            }
            None => peak.containers.push(container),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, cpu: i64, memory: i64) -> ContainerUsage {
        ContainerUsage {
            name: name.into(),
            cpu_nanocores: cpu,
            memory_bytes: memory,
        }
    }

    #[test]
    fn containers_pack_small_and_read_back() {
        let containers = vec![
            container("main", 12_000_000, 80 << 20),
            container("sidecar-ü", 0, i64::MAX),
        ];
        let packed = pack_containers(&containers);
        assert_eq!(pack_containers(&containers[..1]).len(), 14);
        assert_eq!(unpack_containers(&packed), Ok(containers));
        assert_eq!(unpack_containers(&[]), Ok(Vec::new()));
        assert!(unpack_containers(&packed[..packed.len() - 1]).is_err());
        assert!(unpack_containers(&[9, 1, b'a', 0, 0]).is_err());
        assert!(unpack_containers(&[1, 200, 1]).is_err());
    }

    fn point(at_ms: i64, cpu: i64, memory: i64) -> UsagePoint {
        UsagePoint {
            at_ms,
            window_ms: 1_000,
            cpu_nanocores: cpu,
            memory_bytes: memory,
            pods: Some(at_ms),
            containers: vec![container("main", cpu, memory)],
        }
    }

    #[test]
    fn thinning_keeps_each_buckets_peak_at_its_last_time() {
        let points: Vec<UsagePoint> = (0..10).map(|i| point(i * 100, 10 - i, i)).collect();
        let (same, thinned) = thin(points.clone(), (0, 1_000), 10);
        assert!(!thinned);
        assert_eq!(same, points);
        let (two, thinned) = thin(points, (0, 1_000), 2);
        assert!(thinned);
        assert_eq!(two.len(), 2);
        assert_eq!(
            (two[0].at_ms, two[0].cpu_nanocores, two[0].memory_bytes),
            (400, 10, 4)
        );
        assert_eq!(
            (two[1].at_ms, two[1].cpu_nanocores, two[1].memory_bytes),
            (900, 5, 9)
        );
        assert_eq!(two[1].pods, Some(900));
        assert_eq!(two[0].containers, vec![container("main", 10, 4)]);
    }
}
