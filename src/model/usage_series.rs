//! An object's resource usage over time, as its chart reads it: the
//! samples the page measured itself (one per metrics window while the
//! object view is open) joined with those serve's recorder kept from
//! before (`crate::api::usage_history`), one per window, oldest first,
//! bounded. Also what is measured (a pod, a node, or a workload's pods
//! through its label selector) and the sample of it in one metrics list.
//!
//! Pure and tested natively; the requests are `crate::service::object_usage`'s.

use std::collections::VecDeque;

use crate::address::log_route::WORKLOADS;
use crate::api::resource_metrics::{Measured, Usage, UsageList};
use crate::api::usage_history::{usage_path, UsageQuery};
pub use crate::api::usage_history::{ContainerUsage, Metric, SampleSource, UsageSample};
use crate::informer::relations::pod_selector;
use crate::informer::{JsonRef, Millis};

/// The most samples held per object: a day of 15 s windows.
pub const MAX_SAMPLES: usize = 5_760;

/// What an object's chart measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageSubject {
    Pod {
        namespace: String,
        name: String,
    },
    Node {
        name: String,
    },
    /// A Deployment, StatefulSet, DaemonSet, ReplicaSet or Job: the sum of
    /// the pods its selector picks.
    Workload {
        namespace: String,
        kind: String,
        name: String,
        selector: String,
    },
}

/// The kind of the workload `group`/`resource` lists, if it is one whose
/// pods are summed.
pub fn workload_kind(group: &str, resource: &str) -> Option<&'static str> {
    WORKLOADS
        .iter()
        .find(|(g, plural, _)| *g == group && *plural == resource)
        .map(|(_, _, kind)| *kind)
}

impl UsageSubject {
    /// What is measured of `object` of `group`/`resource`, if anything:
    /// pods and nodes themselves, a workload through its selector.
    pub fn of(group: &str, resource: &str, object: JsonRef<'_>) -> Option<UsageSubject> {
        let name = object.pointer("/metadata/name")?.as_str()?.to_string();
        let namespace = || {
            object
                .pointer("/metadata/namespace")
                .and_then(|n| n.as_str())
                .map(str::to_string)
        };
        match (group, resource) {
            ("", "pods") => Some(UsageSubject::Pod {
                namespace: namespace()?,
                name,
            }),
            ("", "nodes") => Some(UsageSubject::Node { name }),
            _ => {
                let kind = workload_kind(group, resource)?;
                let selector = pod_selector(kind, object)?.to_query()?;
                Some(UsageSubject::Workload {
                    namespace: namespace()?,
                    kind: kind.to_string(),
                    name,
                    selector,
                })
            }
        }
    }

    pub fn measured(&self) -> Measured {
        match self {
            UsageSubject::Node { .. } => Measured::Nodes,
            _ => Measured::Pods,
        }
    }

    /// The metrics list that holds it: its namespace's pods (a workload's
    /// through its selector), or every node.
    pub fn list_path(&self) -> String {
        match self {
            UsageSubject::Pod { namespace, .. } => Measured::Pods.list_path(Some(namespace), None),
            UsageSubject::Node { .. } => Measured::Nodes.list_path(None, None),
            UsageSubject::Workload {
                namespace,
                selector,
                ..
            } => Measured::Pods.list_path(Some(namespace), Some(selector)),
        }
    }

    /// serve's recorded usage of it over `range`.
    pub fn history_path(&self, range: (Millis, Millis)) -> String {
        let owner;
        let query = match self {
            UsageSubject::Pod { namespace, name } => UsageQuery::Name {
                resource: "pods",
                namespace: Some(namespace),
                name,
            },
            UsageSubject::Node { name } => UsageQuery::Name {
                resource: "nodes",
                namespace: None,
                name,
            },
            UsageSubject::Workload {
                namespace,
                kind,
                name,
                ..
            } => {
                owner = format!("{kind}/{name}");
                UsageQuery::Owner {
                    namespace,
                    owner: &owner,
                }
            }
        };
        usage_path(&query, range)
    }

    /// Its sample in `list` (asked with [`Self::list_path`], containers
    /// kept), measured at `at` over `window`; none when it is not in it.
    pub fn sample_in(&self, list: &UsageList, at: Millis, window: Millis) -> Option<UsageSample> {
        let sample =
            |usage: Usage, pods: Option<u32>, containers: Vec<ContainerUsage>| UsageSample {
                at,
                window,
                cpu_nanocores: nanos(usage.cpu),
                memory_bytes: whole(usage.memory),
                pods,
                containers,
                source: SampleSource::Page,
            };
        match self {
            UsageSubject::Pod { namespace, name } => {
                let key = format!("{namespace}/{name}");
                let containers = list.containers.get(&key).map_or_else(Vec::new, |c| {
                    c.iter()
                        .map(|(name, usage)| ContainerUsage {
                            name: name.clone(),
                            cpu_nanocores: nanos(usage.cpu),
                            memory_bytes: whole(usage.memory),
                        })
                        .collect()
                });
                Some(sample(*list.usage.get(&key)?, None, containers))
            }
            UsageSubject::Node { name } => Some(sample(*list.usage.get(name)?, None, Vec::new())),
            UsageSubject::Workload { .. } => {
                // The list was asked with the workload's selector: every
                // pod in it is one of the workload's.
                let total = list
                    .usage
                    .values()
                    .fold(Usage::default(), |sum, usage| Usage {
                        cpu: sum.cpu.saturating_add(usage.cpu),
                        memory: sum.memory.saturating_add(usage.memory),
                    });
                let pods = u32::try_from(list.usage.len()).unwrap_or(u32::MAX);
                (pods > 0).then(|| sample(total, Some(pods), Vec::new()))
            }
        }
    }
}

fn nanos(quantity: deltascope_facts::quantity::Quantity) -> u64 {
    u64::try_from(quantity.nanos().max(0)).unwrap_or(u64::MAX)
}

fn whole(quantity: deltascope_facts::quantity::Quantity) -> u64 {
    u64::try_from(quantity.value().max(0)).unwrap_or(u64::MAX)
}

/// One object's samples, oldest first, one per window time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageSeries {
    samples: VecDeque<UsageSample>,
}

impl UsageSeries {
    /// Adds a sample; one of the same time replaces a recorded one (the
    /// page's own measurement wins), else is left. The oldest go past
    /// [`MAX_SAMPLES`].
    pub fn add(&mut self, sample: UsageSample) {
        let at = sample.at;
        let index = self.samples.partition_point(|s| s.at < at);
        match self.samples.get_mut(index) {
            Some(same) if same.at == at => {
                if same.source == SampleSource::Recorder {
                    *same = sample;
                }
            }
            _ => self.samples.insert(index, sample),
        }
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// Adds what serve's recorder held over a range.
    pub fn add_recorded(&mut self, samples: impl IntoIterator<Item = UsageSample>) {
        for mut sample in samples {
            sample.source = SampleSource::Recorder;
            self.add(sample);
        }
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Every sample, oldest first.
    pub fn samples(&self) -> impl ExactSizeIterator<Item = &UsageSample> {
        self.samples.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The samples measured in `[since, until]`, oldest first.
    pub fn in_range(&self, since: Millis, until: Millis) -> impl Iterator<Item = &UsageSample> {
        let start = self.samples.partition_point(|s| s.at < since);
        self.samples
            .range(start..)
            .take_while(move |s| s.at <= until)
    }

    pub fn first_at(&self) -> Option<Millis> {
        self.first().map(|s| s.at)
    }

    pub fn first(&self) -> Option<&UsageSample> {
        self.samples.front()
    }

    pub fn last(&self) -> Option<&UsageSample> {
        self.samples.back()
    }

    /// The containers measured, in the order first seen.
    pub fn containers(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for sample in &self.samples {
            for container in &sample.containers {
                if !names.contains(&container.name) {
                    names.push(container.name.clone());
                }
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource_metrics::Keep;
    use crate::api::usage_list_reader::parse_usage_list_keeping;
    use crate::informer::JsonValue;

    fn sample(at: Millis, memory: u64, source: SampleSource) -> UsageSample {
        UsageSample {
            at,
            window: 15_000,
            cpu_nanocores: 1,
            memory_bytes: memory,
            pods: None,
            containers: Vec::new(),
            source,
        }
    }

    fn object(text: &str) -> JsonValue {
        JsonValue::parse(text.as_bytes()).expect("json")
    }

    #[test]
    fn samples_are_kept_in_time_order_once_each_and_the_pages_win() {
        let mut series = UsageSeries::default();
        series.add(sample(30, 3, SampleSource::Page));
        series.add_recorded([
            sample(10, 1, SampleSource::Page),
            sample(30, 99, SampleSource::Page),
        ]);
        series.add(sample(20, 2, SampleSource::Page));
        let memory: Vec<u64> = series.in_range(0, 100).map(|s| s.memory_bytes).collect();
        assert_eq!(memory, [1, 2, 3], "the page's own sample of 30 stays");
        assert_eq!(series.in_range(10, 10).count(), 1);
        assert_eq!(
            series.in_range(0, 10).next().map(|s| s.source),
            Some(SampleSource::Recorder)
        );
        series.add(sample(10, 11, SampleSource::Page));
        assert_eq!(
            series.in_range(0, 10).next().map(|s| s.memory_bytes),
            Some(11)
        );
    }

    #[test]
    fn the_oldest_go_past_the_bound() {
        let mut series = UsageSeries::default();
        for at in 0..(MAX_SAMPLES as Millis + 10) {
            series.add(sample(at, at, SampleSource::Page));
        }
        assert_eq!(series.len(), MAX_SAMPLES);
        assert_eq!(series.first_at(), Some(10));
    }

    #[test]
    fn subjects_and_their_lists() {
        let pod = object(r#"{"metadata":{"name":"web-1","namespace":"shop"}}"#);
        let subject = UsageSubject::of("", "pods", pod.root()).expect("a pod");
        assert_eq!(
            subject.list_path(),
            "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"
        );
        let deployment = object(
            r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{"selector":{"matchLabels":{"app":"web"},
                "matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]},{"key":"canary","operator":"DoesNotExist"}]}}}"#,
        );
        let subject =
            UsageSubject::of("apps", "deployments", deployment.root()).expect("a workload");
        assert!(
            matches!(&subject, UsageSubject::Workload { kind, selector, .. }
            if kind == "Deployment" && selector == "app=web,tier in (a,b),!canary")
        );
        let service = object(
            r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{"selector":{"app":"web"}}}"#,
        );
        assert_eq!(UsageSubject::of("", "services", service.root()), None);
        let odd = object(
            r#"{"metadata":{"name":"w","namespace":"s"},"spec":{"selector":{"matchExpressions":[{"key":"k","operator":"Gt"}]}}}"#,
        );
        assert_eq!(UsageSubject::of("apps", "deployments", odd.root()), None);
    }

    #[test]
    fn a_pods_sample_has_its_containers_and_a_workloads_sums_its_pods() {
        let keep = Keep {
            containers: true,
            labels: false,
        };
        let list = parse_usage_list_keeping(
            br#"{"items":[
              {"metadata":{"name":"web-1","namespace":"shop"},"timestamp":"2026-11-28T09:00:00Z","window":"15s",
               "containers":[{"name":"app","usage":{"cpu":"100m","memory":"10Mi"}},{"name":"proxy","usage":{"cpu":"5m","memory":"1Mi"}}]},
              {"metadata":{"name":"web-2","namespace":"shop"},"timestamp":"2026-11-28T09:00:00Z","window":"15s",
               "containers":[{"name":"app","usage":{"cpu":"200m","memory":"20Mi"}}]}]}"#,
            keep,
        )
        .expect("a list");
        let pod = UsageSubject::Pod {
            namespace: "shop".into(),
            name: "web-1".into(),
        };
        let one = pod.sample_in(&list, 5, 15_000).expect("measured");
        assert_eq!(one.cpu_nanocores, 105_000_000);
        assert_eq!(one.value(Metric::Memory, Some("proxy")), Some(1 << 20));
        assert_eq!(one.value(Metric::Memory, Some("gone")), None);
        let workload = UsageSubject::Workload {
            namespace: "shop".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            selector: "app=web".into(),
        };
        let sum = workload.sample_in(&list, 5, 15_000).expect("summed");
        assert_eq!((sum.cpu_nanocores, sum.pods), (305_000_000, Some(2)));
        let absent = UsageSubject::Pod {
            namespace: "shop".into(),
            name: "nope".into(),
        };
        assert_eq!(absent.sample_in(&list, 5, 15_000), None);
    }
}
