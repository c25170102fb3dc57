//! An object's usage as serve's recorder kept it: the path of
//! `GET /_deltascope/history/usage?resource=pods|nodes&since=T&until=T[&namespace=NS][&name=N|&owner=KIND/NAME][&points=N]`
//! ([`usage_path`]; ARCHITECTURE.md's History contracts) and its answer
//! — `{"samples":[{"at","window","cpu","memory","pods","containers"}],"gaps":[…],"thinned"}`
//! — read into [`RecordedUsage`]. Strict where the chart would draw
//! something wrong (a time that is none, a negative amount: refused,
//! naming what), lenient about fields serve adds later. When the page asks
//! is `crate::service::object_usage`'s.

use serde::Deserialize;

use crate::api::object_record::{GapFields, RecordGap};
use crate::informer::Millis;
use deltascope_facts::percent::encode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};

/// One container's usage in a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    pub name: String,
    pub cpu_nanocores: u64,
    pub memory_bytes: u64,
}

/// Who measured a sample (`data-source` of the chart's points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleSource {
    Page,
    Recorder,
}

/// One metrics window of the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageSample {
    /// When the window was measured (the metrics' `timestamp`), ms since
    /// the Unix epoch.
    pub at: Millis,
    pub window: Millis,
    pub cpu_nanocores: u64,
    pub memory_bytes: u64,
    /// A workload's: how many of its pods were measured.
    pub pods: Option<u32>,
    /// A pod's containers (empty for a node or a workload).
    pub containers: Vec<ContainerUsage>,
    pub source: SampleSource,
}

/// CPU or memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Cpu,
    Memory,
}

impl UsageSample {
    /// The value of `metric`, the whole object's or `container`'s (none
    /// when the container was not measured in this window).
    pub fn value(&self, metric: Metric, container: Option<&str>) -> Option<u64> {
        let pick = |cpu: u64, memory: u64| match metric {
            Metric::Cpu => cpu,
            Metric::Memory => memory,
        };
        match container {
            None => Some(pick(self.cpu_nanocores, self.memory_bytes)),
            Some(name) => self
                .containers
                .iter()
                .find(|c| c.name == name)
                .map(|c| pick(c.cpu_nanocores, c.memory_bytes)),
        }
    }
}

/// serve's recorded usage.
pub const USAGE_PATH: &str = "/_deltascope/history/usage";

/// How many points the page asks for at most: a chart is ~1,000 px wide.
pub const POINTS: usize = 2_000;

/// Whose usage is asked for: an object by name, or a workload's pods by
/// their owner (`Deployment/web`: serve sums them per window).
#[derive(Debug, Clone, Copy)]
pub enum UsageQuery<'a> {
    Name {
        resource: &'a str,
        namespace: Option<&'a str>,
        name: &'a str,
    },
    Owner {
        namespace: &'a str,
        owner: &'a str,
    },
}

/// `GET /_deltascope/history/usage` for `query` over `[since, until)`.
pub fn usage_path(query: &UsageQuery<'_>, (since, until): (Millis, Millis)) -> String {
    let time = |ms: Millis| {
        format_rfc3339_millis(ms as i64)
            .map(|t| encode_query_value(&t))
            .unwrap_or_default()
    };
    let (resource, namespace, which) = match *query {
        UsageQuery::Name {
            resource,
            namespace,
            name,
        } => (resource, namespace, ("name", name)),
        UsageQuery::Owner { namespace, owner } => ("pods", Some(namespace), ("owner", owner)),
    };
    let mut path = format!(
        "{USAGE_PATH}?resource={resource}&since={}&until={}&points={POINTS}",
        time(since),
        time(until),
    );
    if let Some(namespace) = namespace {
        path.push_str("&namespace=");
        path.push_str(&encode_query_value(namespace));
    }
    path.push_str(&format!("&{}={}", which.0, encode_query_value(which.1)));
    path
}

/// What the recorder held over a range.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedUsage {
    pub samples: Vec<UsageSample>,
    pub gaps: Vec<RecordGap>,
    /// More windows than asked for: each sample is its bucket's peak.
    pub thinned: bool,
}

/// Why an answer is not usage the chart can draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordedUsageError {
    #[error("serve's recorded usage is not JSON of the expected shape: {0}")]
    Shape(String),
    #[error("serve's recorded usage names {0:?}, not a time in RFC 3339")]
    Time(String),
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    samples: Vec<SampleLine>,
    #[serde(default)]
    gaps: Vec<GapFields>,
    #[serde(default)]
    thinned: bool,
}

#[derive(Deserialize)]
struct SampleLine {
    at: String,
    #[serde(default)]
    window: Millis,
    cpu: u64,
    memory: u64,
    #[serde(default)]
    pods: Option<u32>,
    #[serde(default)]
    containers: Vec<ContainerLine>,
}

#[derive(Deserialize)]
struct ContainerLine {
    name: String,
    cpu: u64,
    memory: u64,
}

fn time(text: &str) -> Result<Millis, RecordedUsageError> {
    parse_rfc3339_millis(text)
        .and_then(|ms| Millis::try_from(ms).ok())
        .ok_or_else(|| RecordedUsageError::Time(text.chars().take(40).collect()))
}

/// Reads serve's answer.
pub fn parse_recorded_usage(body: &[u8]) -> Result<RecordedUsage, RecordedUsageError> {
    let body: Body =
        serde_json::from_slice(body).map_err(|e| RecordedUsageError::Shape(e.to_string()))?;
    let samples = body
        .samples
        .into_iter()
        .map(|line| {
            Ok(UsageSample {
                at: time(&line.at)?,
                window: line.window,
                cpu_nanocores: line.cpu,
                memory_bytes: line.memory,
                pods: line.pods,
                containers: line
                    .containers
                    .into_iter()
                    .map(|c| ContainerUsage {
                        name: c.name,
                        cpu_nanocores: c.cpu,
                        memory_bytes: c.memory,
                    })
                    .collect(),
                source: SampleSource::Recorder,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let gaps = body
        .gaps
        .into_iter()
        .map(|gap| {
            gap.read()
                .map_err(|text| RecordedUsageError::Time(text.chars().take(40).collect()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RecordedUsage {
        samples,
        gaps,
        thinned: body.thinned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_object_or_its_owner() {
        let pod = UsageQuery::Name {
            resource: "pods",
            namespace: Some("shop"),
            name: "web 1",
        };
        assert_eq!(
            usage_path(&pod, (0, 1_000)),
            "/_deltascope/history/usage?resource=pods&since=1970-01-01T00%3A00%3A00.000Z&until=1970-01-01T00%3A00%3A01.000Z&points=2000&namespace=shop&name=web%201"
        );
        let workload = UsageQuery::Owner {
            namespace: "shop",
            owner: "Deployment/web",
        };
        assert!(usage_path(&workload, (0, 1)).ends_with("&namespace=shop&owner=Deployment%2Fweb"));
        let node = UsageQuery::Name {
            resource: "nodes",
            namespace: None,
            name: "n1",
        };
        let path = usage_path(&node, (0, 1));
        assert!(
            path.contains("resource=nodes")
                && path.ends_with("&name=n1")
                && !path.contains("namespace")
        );
    }

    #[test]
    fn an_answer_is_read_and_a_bad_time_refused() {
        let body = br#"{"resource":"pods","samples":[
            {"at":"2026-11-28T09:00:00.000Z","window":15000,"cpu":5000000,"memory":1048576,
             "containers":[{"name":"app","cpu":5000000,"memory":1048576}]}],
            "gaps":[{"from":"2026-11-28T08:00:00Z","to":"2026-11-28T08:30:00Z","reason":"not-running"}],
            "thinned":true,"future":1}"#;
        let usage = parse_recorded_usage(body).expect("read");
        assert!(usage.thinned);
        assert_eq!(usage.samples.len(), 1);
        assert_eq!(usage.samples[0].source, SampleSource::Recorder);
        assert_eq!(usage.samples[0].containers[0].name, "app");
        assert_eq!(usage.gaps[0].reason, "not-running");
        let bad = br#"{"samples":[{"at":"yesterday","cpu":1,"memory":1}]}"#;
        assert_eq!(
            parse_recorded_usage(bad),
            Err(RecordedUsageError::Time("yesterday".into()))
        );
        assert!(matches!(
            parse_recorded_usage(
                br#"{"samples":[{"at":"2026-11-28T09:00:00Z","cpu":-1,"memory":1}]}"#
            ),
            Err(RecordedUsageError::Shape(_))
        ));
    }
}
