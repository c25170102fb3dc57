//! `kubectl top` in the pods and nodes tables: the columns it prints (a
//! pod's CPU and MEMORY; a node's CPU, CPU%, MEMORY, MEMORY% of its
//! `status.allocatable`), each cell joined from the metrics API's last
//! window (`crate::api::resource_metrics::UsageList`) by the row's key and
//! written as kubectl writes it — CPU `MilliValue()` (rounded up) as `123m`,
//! memory `Value()` / Mi (rounded down) as `45Mi`, a percentage
//! `int64(usage.Milli / allocatable.Milli * 100)`. The wide view of pods
//! adds the usage against the containers' requests and limits (`CPU%REQ`,
//! `CPU%LIM`, `MEM%REQ`, `MEM%LIM`, as k9s shows them: requests summed over
//! the containers that set one, limits only when every container sets one,
//! else unbounded and empty). A row the window does not measure (a Pending
//! pod) has empty cells. Also what the page says of the
//! metrics API (`[data-testid=metrics-state]`): measured, not served,
//! forbidden, or not answered yet.

use std::rc::Rc;
use std::sync::Arc;

use crate::api::resource_metrics::{Measured, Usage, UsageList};
use crate::informer::JsonRef;
use crate::informer::JsonValue as Value;
use crate::informer::KubeObject;
use crate::model::top_workloads::WorkloadSums;
use crate::model::usage_series::workload_kind;
use deltascope_facts::quantity::{parse_quantity, Quantity};

/// One of `kubectl top`'s columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopColumn {
    Cpu,
    /// Of the node's allocatable.
    CpuPercent,
    Memory,
    /// Of the node's allocatable.
    MemoryPercent,
    CpuOfRequests,
    CpuOfLimits,
    MemoryOfRequests,
    MemoryOfLimits,
}

/// A `kubectl top` column over one window of metrics: it gives each row
/// its cell and the number the column sorts by.
#[derive(Debug, Clone)]
pub struct TopCell {
    pub column: TopColumn,
    pub window: Arc<UsageList>,
    /// A workloads table's: each row's pods summed.
    pub sums: Option<Rc<WorkloadSums>>,
}

/// The tables with usage columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopTable {
    Pods,
    Nodes,
    /// Deployments, StatefulSets, DaemonSets, ReplicaSets or Jobs (the
    /// kind): the sum of the pods each selects.
    Workloads(&'static str),
}

impl TopTable {
    /// The table a route shows, if it has usage columns.
    pub fn of_route(group: &str, version: &str, resource: &str) -> Option<TopTable> {
        match Measured::of_route(group, version, resource) {
            Some(Measured::Pods) => Some(TopTable::Pods),
            Some(Measured::Nodes) => Some(TopTable::Nodes),
            None => workload_kind(group, resource).map(TopTable::Workloads),
        }
    }

    /// What the metrics API is asked for.
    pub fn measured(self) -> Measured {
        match self {
            TopTable::Nodes => Measured::Nodes,
            TopTable::Pods | TopTable::Workloads(_) => Measured::Pods,
        }
    }
}

/// `kubectl top`'s columns for `table`, over `window`; `wide` adds a
/// pod's usage of its requests and limits.
pub fn top_cells(table: TopTable, window: &Arc<UsageList>, wide: bool) -> Vec<TopCell> {
    let sums = match table {
        TopTable::Workloads(kind) => Some(Rc::new(WorkloadSums::new(kind, window))),
        _ => None,
    };
    let columns: &[TopColumn] = match table {
        TopTable::Pods if wide => &[
            TopColumn::Cpu,
            TopColumn::Memory,
            TopColumn::CpuOfRequests,
            TopColumn::CpuOfLimits,
            TopColumn::MemoryOfRequests,
            TopColumn::MemoryOfLimits,
        ],
        TopTable::Pods | TopTable::Workloads(_) => &[TopColumn::Cpu, TopColumn::Memory],
        TopTable::Nodes => &[
            TopColumn::Cpu,
            TopColumn::CpuPercent,
            TopColumn::Memory,
            TopColumn::MemoryPercent,
        ],
    };
    columns
        .iter()
        .map(|&column| TopCell {
            column,
            window: window.clone(),
            sums: sums.clone(),
        })
        .collect()
}

impl TopCell {
    /// The column's title.
    pub fn title(&self) -> &'static str {
        match self.column {
            TopColumn::Cpu => "CPU",
            TopColumn::CpuPercent => "CPU%",
            TopColumn::Memory => "MEMORY",
            TopColumn::MemoryPercent => "MEMORY%",
            TopColumn::CpuOfRequests => "CPU%REQ",
            TopColumn::CpuOfLimits => "CPU%LIM",
            TopColumn::MemoryOfRequests => "MEM%REQ",
            TopColumn::MemoryOfLimits => "MEM%LIM",
        }
    }

    fn usage(&self, object: &KubeObject) -> Option<Usage> {
        match &self.sums {
            Some(sums) => sums.sum(object).map(|(usage, _)| usage),
            None => self.window.usage.get(&object.key).copied(),
        }
    }

    /// The cell of `object` (its allocatable, requests and limits for a
    /// percentage); empty when the window did not measure it.
    pub fn text(&self, object: &KubeObject) -> String {
        let Some(usage) = self.usage(object) else {
            return String::new();
        };
        let usage = &usage;
        let object = &object.value;
        match self.column {
            TopColumn::Cpu => format_cpu(usage.cpu),
            TopColumn::Memory => format_memory(usage.memory),
            _ => self
                .percent(usage, object)
                .map(|percent| format!("{percent}%"))
                .unwrap_or_default(),
        }
    }

    /// What the column sorts by: the exact usage (nanocores, bytes) or the
    /// percentage shown; `None` for a row without metrics.
    pub fn number(&self, object: &KubeObject) -> Option<i128> {
        let usage = &self.usage(object)?;
        let object = &object.value;
        match self.column {
            TopColumn::Cpu => Some(usage.cpu.nanos()),
            TopColumn::Memory => Some(usage.memory.value()),
            _ => self.percent(usage, object).map(i128::from),
        }
    }

    fn percent(&self, usage: &Usage, object: &Value) -> Option<i64> {
        let (cpu, memory) = ((usage.cpu, "cpu"), (usage.memory, "memory"));
        let ((used, resource), of) = match self.column {
            TopColumn::Cpu | TopColumn::Memory => return None,
            TopColumn::CpuPercent => (cpu, Of::Allocatable),
            TopColumn::MemoryPercent => (memory, Of::Allocatable),
            TopColumn::CpuOfRequests => (cpu, Of::Requests),
            TopColumn::CpuOfLimits => (cpu, Of::Limits),
            TopColumn::MemoryOfRequests => (memory, Of::Requests),
            TopColumn::MemoryOfLimits => (memory, Of::Limits),
        };
        let available = match of {
            Of::Allocatable => allocatable(object, resource),
            Of::Requests => containers_total(object, "requests", resource, false),
            Of::Limits => containers_total(object, "limits", resource, true),
        };
        percent_of(used, available?)
    }
}

/// What a percentage is of.
enum Of {
    /// A node's `status.allocatable`.
    Allocatable,
    /// A pod's containers' requests.
    Requests,
    /// A pod's containers' limits.
    Limits,
}

/// The sum of a pod's containers' `resources.{field}.{resource}`: `None`
/// when none sets it, or (`every`) when one does not.
fn containers_total(object: &Value, field: &str, resource: &str, every: bool) -> Option<Quantity> {
    let containers = object.pointer("/spec/containers")?.as_array()?;
    let mut total = None;
    for container in containers.iter() {
        let set = container
            .get("resources")
            .and_then(|r| r.get(field))
            .and_then(|f| f.get(resource))
            .and_then(JsonRef::as_str)
            .and_then(|text| parse_quantity(text).ok());
        match set {
            Some(quantity) => {
                total = Some(quantity.saturating_add(total.unwrap_or_default()));
            }
            None if every => return None,
            None => {}
        }
    }
    total
}

/// A node's `status.allocatable` of `resource`, if it says.
fn allocatable(object: &Value, resource: &str) -> Option<Quantity> {
    let text = object
        .pointer("/status/allocatable")?
        .get(resource)
        .and_then(JsonRef::as_str)?;
    parse_quantity(text).ok()
}

/// CPU as `kubectl top` prints it: millicores rounded up, `123m`.
pub fn format_cpu(cpu: Quantity) -> String {
    format!("{}m", cpu.milli_value())
}

/// Memory as `kubectl top` prints it: whole bytes (rounded up) divided by
/// Mi (rounded down), `45Mi`.
pub fn format_memory(memory: Quantity) -> String {
    format!("{}Mi", memory.value() / (1024 * 1024))
}

/// `used` of `available` in percent as `kubectl top node` computes it
/// (`int64(float64(used.MilliValue()) / float64(available.MilliValue()) * 100)`);
/// `None` when nothing is available (kubectl would divide by zero).
pub fn percent_of(used: Quantity, available: Quantity) -> Option<i64> {
    let available = available.milli_value();
    (available > 0).then(|| (used.milli_value() as f64 / available as f64 * 100.0) as i64)
}

/// What the page knows of the metrics API for the table on screen.
#[derive(Debug, Clone, Default)]
pub enum MetricsState {
    /// Not answered yet (or only failed so far).
    #[default]
    Waiting,
    /// The last window measured.
    Shown(Arc<UsageList>),
    /// The cluster serves no metrics API (404, 503).
    NotServed,
    /// The user may not list the metrics (403).
    Forbidden(Measured),
}

/// `[data-testid=metrics-state]`: `data-state`, `data-window`, the words
/// shown (empty: the element is hidden) and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsNote {
    pub state: &'static str,
    pub window: String,
    pub words: String,
    pub title: String,
}

impl MetricsState {
    /// The window whose columns the table shows, if any.
    pub fn window(&self) -> Option<&Arc<UsageList>> {
        match self {
            MetricsState::Shown(window) => Some(window),
            _ => None,
        }
    }

    /// What the page says of it; `failure` is why the last request failed
    /// (the last window stays shown meanwhile).
    pub fn note(&self, failure: Option<&str>) -> MetricsNote {
        let failure = failure.unwrap_or_default();
        let (state, window, words, title) = match self {
            MetricsState::Waiting => ("waiting", String::new(), String::new(), failure.to_string()),
            MetricsState::Shown(list) => {
                let title = if failure.is_empty() {
                    format!(
                        "CPU and memory as metrics-server measured them at {} (window {})",
                        list.timestamp, list.window
                    )
                } else {
                    format!("measured at {}; since then: {failure}", list.timestamp)
                };
                ("shown", list.timestamp.clone(), String::new(), title)
            }
            MetricsState::NotServed => (
                "none",
                String::new(),
                "this cluster serves no metrics API (metrics-server)".to_string(),
                "kubectl top needs metrics-server; the CPU and memory columns are hidden"
                    .to_string(),
            ),
            MetricsState::Forbidden(measured) => (
                "forbidden",
                String::new(),
                format!(
                    "cannot list {0}: ask for the get/list verbs on {0}",
                    measured.api_name()
                ),
                "the metrics API answered 403 Forbidden".to_string(),
            ),
        };
        MetricsNote {
            state,
            window,
            words,
            title,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value` as the store holds it under `key`.
    fn row(key: &str, value: &Value) -> KubeObject {
        KubeObject {
            key: key.to_string(),
            uid: String::new(),
            resource_version: String::new(),
            value: value.clone(),
            cells: None,
        }
    }
    use crate::api::usage_list_reader::parse_usage_list;

    fn q(text: &str) -> Quantity {
        parse_quantity(text).expect("a quantity")
    }

    fn object(json: &str) -> Value {
        Value::parse(json.as_bytes()).expect("JSON")
    }

    #[test]
    fn cells_are_printed_as_kubectl_top_prints_them() {
        assert_eq!(format_cpu(q("12345678n")), "13m");
        assert_eq!(format_cpu(q("0")), "0m");
        assert_eq!(format_cpu(q("2")), "2000m");
        assert_eq!(format_memory(q("123456Ki")), "120Mi");
        assert_eq!(format_memory(q("1048575")), "0Mi");
        assert_eq!(format_memory(q("1Mi")), "1Mi");
        assert_eq!(format_memory(q("1.5Gi")), "1536Mi");
    }

    #[test]
    fn node_percentages_truncate_as_kubectl_does() {
        assert_eq!(percent_of(q("1500m"), q("4")), Some(37));
        assert_eq!(percent_of(q("3999m"), q("4")), Some(99));
        assert_eq!(percent_of(q("4"), q("4")), Some(100));
        assert_eq!(percent_of(q("5"), q("4")), Some(125));
        assert_eq!(percent_of(q("1Gi"), q("13252124Ki")), Some(7));
        assert_eq!(percent_of(q("1"), q("0")), None);
        // MilliValue rounds both up before dividing.
        assert_eq!(percent_of(q("1n"), q("1m")), Some(100));
    }

    #[test]
    fn rows_join_the_window_by_key() {
        let window = Arc::new(
            parse_usage_list(
                br#"{"items":[
                {"metadata":{"name":"web","namespace":"shop"},"timestamp":"2026-11-28T09:00:00Z","window":"15s",
                 "containers":[{"name":"a","usage":{"cpu":"5m","memory":"10Mi"}},{"name":"b","usage":{"cpu":"1n","memory":"1Ki"}}]}]}"#,
            )
            .expect("a list"),
        );
        let cells = top_cells(TopTable::Pods, &window, false);
        let titles: Vec<_> = cells.iter().map(TopCell::title).collect();
        assert_eq!(titles, ["CPU", "MEMORY"]);
        let pod = object(r#"{"metadata":{"name":"web","namespace":"shop"}}"#);
        assert_eq!(cells[0].text(&row("shop/web", &pod)), "6m");
        assert_eq!(cells[1].text(&row("shop/web", &pod)), "10Mi");
        assert_eq!(cells[0].number(&row("shop/web", &pod)), Some(5_000_001));
        // A pod the window did not measure (Pending) has empty cells.
        assert_eq!(cells[0].text(&row("shop/pending", &pod)), "");
        assert_eq!(cells[0].number(&row("shop/pending", &pod)), None);
    }

    #[test]
    fn nodes_are_measured_against_allocatable() {
        let window = Arc::new(
            parse_usage_list(
                br#"{"items":[{"metadata":{"name":"n1"},"timestamp":"2026-11-28T09:00:00Z","window":"15s","usage":{"cpu":"1500m","memory":"2Gi"}}]}"#,
            )
            .expect("a list"),
        );
        let cells = top_cells(TopTable::Nodes, &window, true);
        let titles: Vec<_> = cells.iter().map(TopCell::title).collect();
        assert_eq!(titles, ["CPU", "CPU%", "MEMORY", "MEMORY%"]);
        let node = object(r#"{"status":{"allocatable":{"cpu":"3920m","memory":"8Gi"}}}"#);
        let texts: Vec<_> = cells.iter().map(|c| c.text(&row("n1", &node))).collect();
        assert_eq!(texts, ["1500m", "38%", "2048Mi", "25%"]);
        let no_allocatable = object(r#"{"status":{}}"#);
        assert_eq!(cells[1].text(&row("n1", &no_allocatable)), "");
        assert_eq!(cells[0].text(&row("n1", &no_allocatable)), "1500m");
    }

    #[test]
    fn the_wide_view_of_pods_measures_against_requests_and_limits() {
        let window = Arc::new(
            parse_usage_list(
                br#"{"items":[{"metadata":{"name":"web","namespace":"shop"},"containers":[
                {"name":"app","usage":{"cpu":"50m","memory":"64Mi"}},
                {"name":"sidecar","usage":{"cpu":"10m","memory":"32Mi"}}]}]}"#,
            )
            .expect("a list"),
        );
        let cells = top_cells(TopTable::Pods, &window, true);
        let titles: Vec<_> = cells.iter().map(TopCell::title).collect();
        assert_eq!(
            titles,
            ["CPU", "MEMORY", "CPU%REQ", "CPU%LIM", "MEM%REQ", "MEM%LIM"]
        );
        // The sidecar sets a memory limit only: CPU has no limit (unbounded).
        let pod = object(
            r#"{"spec":{"containers":[
            {"name":"app","resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}}},
            {"name":"sidecar","resources":{"limits":{"memory":"64Mi"}}}]}}"#,
        );
        let texts: Vec<_> = cells
            .iter()
            .map(|c| c.text(&row("shop/web", &pod)))
            .collect();
        assert_eq!(texts, ["60m", "96Mi", "60%", "", "75%", "30%"]);
        let bare = object(r#"{"spec":{"containers":[{"name":"app"}]}}"#);
        let texts: Vec<_> = cells
            .iter()
            .map(|c| c.text(&row("shop/web", &bare)))
            .collect();
        assert_eq!(texts, ["60m", "96Mi", "", "", "", ""]);
    }

    #[test]
    fn the_note_says_each_state() {
        let none = MetricsState::NotServed.note(None);
        assert_eq!(none.state, "none");
        assert_eq!(
            none.words,
            "this cluster serves no metrics API (metrics-server)"
        );
        let forbidden = MetricsState::Forbidden(Measured::Pods).note(None);
        assert_eq!(forbidden.state, "forbidden");
        assert_eq!(
            forbidden.words,
            "cannot list pods.metrics.k8s.io: ask for the get/list verbs on pods.metrics.k8s.io"
        );
        assert_eq!(MetricsState::Waiting.note(None).state, "waiting");
        let list = UsageList {
            timestamp: "2026-11-28T09:00:15Z".into(),
            window: "15s".into(),
            ..UsageList::default()
        };
        let shown = MetricsState::Shown(Arc::new(list)).note(Some("HTTP 500"));
        assert_eq!(
            (shown.state, shown.window.as_str(), shown.words.as_str()),
            ("shown", "2026-11-28T09:00:15Z", "")
        );
        assert!(shown.title.contains("HTTP 500"));
    }
}
