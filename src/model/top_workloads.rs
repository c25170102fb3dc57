//! `kubectl top`'s CPU and MEMORY for a workloads table (Deployments,
//! StatefulSets, DaemonSets, ReplicaSets, Jobs): each row the sum of the
//! pods its `spec.selector` picks in its namespace, from one metrics list
//! of the pods with their labels (metrics-server copies a pod's labels
//! onto its metrics). The pods are indexed by namespace and label once
//! per window, so a row looks only at the pods carrying its selector's
//! first label; a row's sum is worked out once per window (sorting asks
//! every row).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::api::resource_metrics::{Usage, UsageList};
use crate::informer::relations::pod_selector;
use crate::informer::{JsonValue, KubeObject};

/// One window's pods, ready to be summed per workload.
#[derive(Debug)]
pub struct WorkloadSums {
    /// `Deployment`, `StatefulSet`, …
    kind: &'static str,
    /// (namespace, labels, usage) of each pod measured.
    pods: Vec<(String, JsonValue, Usage)>,
    /// (namespace, label, value) → indexes into `pods`.
    by_label: HashMap<(String, String, String), Vec<usize>>,
    /// (namespace) → indexes into `pods` (a selector without `matchLabels`).
    by_namespace: HashMap<String, Vec<usize>>,
    /// Each row's sum and pods counted, once worked out.
    sums: RefCell<HashMap<String, Option<(Usage, usize)>>>,
}

impl WorkloadSums {
    /// Indexes `window` (asked with the pods' labels kept) for `kind`.
    pub fn new(kind: &'static str, window: &UsageList) -> WorkloadSums {
        let mut sums = WorkloadSums {
            kind,
            pods: Vec::with_capacity(window.labels.len()),
            by_label: HashMap::new(),
            by_namespace: HashMap::new(),
            sums: RefCell::default(),
        };
        for (key, labels) in &window.labels {
            let (Some((namespace, _)), Some(usage)) = (key.split_once('/'), window.usage.get(key))
            else {
                continue;
            };
            let index = sums.pods.len();
            if let Some(map) = labels.root().as_object() {
                for (label, value) in map.iter() {
                    let Some(value) = value.as_str() else {
                        continue;
                    };
                    let at = (namespace.to_string(), label.to_string(), value.to_string());
                    sums.by_label.entry(at).or_default().push(index);
                }
            }
            sums.by_namespace
                .entry(namespace.to_string())
                .or_default()
                .push(index);
            sums.pods
                .push((namespace.to_string(), labels.clone(), *usage));
        }
        sums
    }

    /// The usage of the pods `object` (a row of the table) selects, and how
    /// many; `None` when it selects none that were measured.
    pub fn sum(&self, object: &KubeObject) -> Option<(Usage, usize)> {
        if let Some(known) = self.sums.borrow().get(&object.key) {
            return *known;
        }
        let sum = self.work_out(object);
        self.sums.borrow_mut().insert(object.key.clone(), sum);
        sum
    }

    fn work_out(&self, object: &KubeObject) -> Option<(Usage, usize)> {
        let root = object.value.root();
        let selector = pod_selector(self.kind, root)?;
        let namespace = root.pointer("/metadata/namespace")?.as_str()?.to_string();
        let candidates = match selector.match_labels.first() {
            Some((label, value)) => self
                .by_label
                .get(&(namespace, label.clone(), value.clone())),
            None => self.by_namespace.get(&namespace),
        }?;
        let mut total = Usage::default();
        let mut count = 0;
        for &index in candidates {
            let (_, labels, usage) = &self.pods[index];
            if selector.matches(Some(labels.root())) {
                total.cpu = total.cpu.saturating_add(usage.cpu);
                total.memory = total.memory.saturating_add(usage.memory);
                count += 1;
            }
        }
        (count > 0).then_some((total, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource_metrics::Keep;
    use crate::api::usage_list_reader::parse_usage_list_keeping;

    fn deployment(namespace: &str, name: &str, selector: &str) -> KubeObject {
        let text = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"{namespace}","uid":"u","resourceVersion":"1"}},"spec":{{"selector":{selector}}}}}"#
        );
        let value = JsonValue::parse(text.as_bytes()).expect("JSON");
        KubeObject::from_json(value).expect("an object")
    }

    #[test]
    fn a_row_sums_the_pods_its_selector_picks_in_its_namespace() {
        let keep = Keep {
            containers: false,
            labels: true,
        };
        let window = parse_usage_list_keeping(
            br#"{"items":[
              {"metadata":{"name":"web-1","namespace":"a","labels":{"app":"web","track":"stable"}},"containers":[{"name":"c","usage":{"cpu":"100m","memory":"10Mi"}}]},
              {"metadata":{"name":"web-2","namespace":"a","labels":{"app":"web","track":"canary"}},"containers":[{"name":"c","usage":{"cpu":"200m","memory":"20Mi"}}]},
              {"metadata":{"name":"web-1","namespace":"b","labels":{"app":"web"}},"containers":[{"name":"c","usage":{"cpu":"400m","memory":"40Mi"}}]},
              {"metadata":{"name":"db-1","namespace":"a","labels":{"app":"db"}},"containers":[{"name":"c","usage":{"cpu":"800m","memory":"80Mi"}}]}]}"#,
            keep,
        )
        .expect("a list");
        let sums = WorkloadSums::new("Deployment", &window);
        let web = sums
            .sum(&deployment("a", "web", r#"{"matchLabels":{"app":"web"}}"#))
            .expect("summed");
        assert_eq!(
            (web.0.cpu.milli_value(), web.1),
            (300, 2),
            "namespace b's pod is not a's"
        );
        let stable = deployment(
            "a",
            "web-stable",
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"track","operator":"NotIn","values":["canary"]}]}"#,
        );
        assert_eq!(sums.sum(&stable).map(|s| s.1), Some(1));
        let by_expression = deployment(
            "a",
            "any",
            r#"{"matchExpressions":[{"key":"app","operator":"In","values":["db","web"]}]}"#,
        );
        assert_eq!(sums.sum(&by_expression).map(|s| s.1), Some(3));
        assert_eq!(
            sums.sum(&deployment(
                "a",
                "none",
                r#"{"matchLabels":{"app":"cache"}}"#
            )),
            None
        );
        // a row's sum is kept for the window
        assert_eq!(
            sums.sum(&deployment(
                "a",
                "web",
                r#"{"matchLabels":{"app":"cache"}}"#
            ))
            .map(|s| s.1),
            Some(2)
        );
    }
}
