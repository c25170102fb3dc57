//! `metadata.managedFields`, kept right on every write the store makes: who
//! (manager, operation `Update`/`Apply`, subresource) owns which fields, in
//! the apiserver's FieldsV1 format (see `fields`).
//!
//! Why here and not in each writer: every write goes through
//! [`Store::create`](super::store::Store::create) and
//! [`Store::update`](super::store::Store::update) with its [`Authors`], and
//! the store calls [`on_create`] / [`on_update`], so no write can leave the
//! entries stale. The rules are structured-merge-diff's for updates, kept
//! simple: a write's changed fields move into its writer's entry (and out
//! of every other entry), removed fields leave every entry, an entry left
//! with no fields is dropped, and the writer's entry gets the write's time.
//!
//! Times carry microseconds (`2026-11-23T00:45:27.123456Z`) and strictly
//! increase across the process: with whole seconds, two writes by one
//! manager within a second would leave its entry unchanged and the write
//! could not be told apart by a reader attributing updates to the managers
//! whose entry changed. Every client parses fractional RFC 3339 seconds (Go's
//! `time.Parse` accepts them even with the RFC3339 layout).

pub mod fields;

use std::sync::atomic::{AtomicI64, Ordering};

#[cfg(test)]
use serde_json::Map;
use serde_json::{json, Value};

use fields::Fields;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One field manager making a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub operation: Operation,
    /// `Some("status")` for a write of the status subresource.
    pub subresource: Option<&'static str>,
}

impl<'a> Writer<'a> {
    pub const fn update(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            operation: Operation::Update,
            subresource: None,
        }
    }

    pub const fn apply(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            operation: Operation::Apply,
            subresource: None,
        }
    }

    pub const fn status(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            operation: Operation::Update,
            subresource: Some("status"),
        }
    }

    pub const fn scale(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            operation: Operation::Update,
            subresource: Some("scale"),
        }
    }

    /// Whether an entry's (manager, operation, subresource) are this writer's.
    fn is_identity(&self, (manager, operation, subresource): (&str, &str, Option<&str>)) -> bool {
        manager == self.manager
            && operation == self.operation.as_str()
            && subresource == self.subresource
    }
}

/// The simulated cluster's field managers.
pub mod managers {
    use super::Writer;

    /// The deployment and replicaset controllers (spec writes, pods created).
    pub const CONTROLLER: Writer<'static> = Writer::update("kube-controller-manager");
    /// Deployment, replicaset, job … status.
    pub const CONTROLLER_STATUS: Writer<'static> = Writer::status("kube-controller-manager");
    /// The horizontal pod autoscaler scaling a deployment.
    pub const AUTOSCALER: Writer<'static> = Writer::scale("kube-controller-manager");
    pub const SCHEDULER: Writer<'static> = Writer::update("kube-scheduler");
    pub const KUBELET: Writer<'static> = Writer::update("kubelet");
    pub const KUBELET_STATUS: Writer<'static> = Writer::status("kubelet");
    pub const ENDPOINTSLICES: Writer<'static> = Writer::update("endpointslice-controller");
    pub const WIDGET_OPERATOR: Writer<'static> = Writer::status("widget-operator");
    pub const KUBECTL_LABEL: Writer<'static> = Writer::update("kubectl-label");
    pub const KUBECTL_CREATE: Writer<'static> = Writer::update("kubectl-create");
    pub const CLIENT_SIDE_APPLY: Writer<'static> = Writer::update("kubectl-client-side-apply");
    pub const SERVER_SIDE_APPLY: Writer<'static> = Writer::apply("kubectl");
    pub const HELM: Writer<'static> = Writer::update("helm");
    pub const APISERVER: Writer<'static> = Writer::update("kube-apiserver");
    pub const APISERVER_STATUS: Writer<'static> = Writer::status("kube-apiserver");
}

/// Who wrote which part of an object: each part (a path of field names,
/// e.g. `["status"]` or `["spec", "nodeName"]`) by its writer, the longest
/// matching part winning, and everything else by `main`.
#[derive(Debug, Clone, Copy)]
pub struct Authors<'a> {
    pub main: Writer<'a>,
    pub parts: &'a [(&'a [&'a str], Writer<'a>)],
}

impl<'a> From<Writer<'a>> for Authors<'a> {
    fn from(main: Writer<'a>) -> Authors<'a> {
        Authors { main, parts: &[] }
    }
}

impl<'a> Authors<'a> {
    /// `set` split among the writers (empty shares left out).
    fn split(&self, set: &Fields) -> Vec<(Writer<'a>, Fields)> {
        let mut parts: Vec<&(&[&str], Writer<'a>)> = self.parts.iter().collect();
        parts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        let mut rest = set.clone();
        let mut out: Vec<(Writer<'a>, Fields)> = Vec::new();
        for (path, writer) in parts {
            let share = rest.under(path);
            if share.is_empty() {
                continue;
            }
            rest.subtract(&share);
            match out.iter_mut().find(|(w, _)| w == writer) {
                Some((_, mine)) => mine.union(&share),
                None => out.push((*writer, share)),
            }
        }
        if !rest.is_empty() {
            match out.iter_mut().find(|(w, _)| *w == self.main) {
                Some((_, mine)) => mine.union(&rest),
                None => out.insert(0, (self.main, rest)),
            }
        }
        out
    }
}

/// One managedFields entry, read from and written back to JSON.
struct Entry {
    manager: String,
    operation: String,
    subresource: Option<String>,
    api_version: String,
    time: String,
    fields: Fields,
}

impl Entry {
    fn new(writer: &Writer<'_>, api_version: &str, time: &str, fields: Fields) -> Entry {
        Entry {
            manager: writer.manager.to_string(),
            operation: writer.operation.as_str().to_string(),
            subresource: writer.subresource.map(str::to_string),
            api_version: api_version.to_string(),
            time: time.to_string(),
            fields,
        }
    }

    /// (manager, operation, subresource) of a stored entry.
    fn read_identity(v: &Value) -> Option<(&str, &str, Option<&str>)> {
        Some((
            v.get("manager")?.as_str()?,
            v.get("operation")
                .and_then(Value::as_str)
                .unwrap_or("Update"),
            v.get("subresource").and_then(Value::as_str),
        ))
    }

    fn to_json(&self) -> Value {
        let mut e = json!({
            "manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
            "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": self.fields.to_json()
        });
        if let Some(sub) = &self.subresource {
            e["subresource"] = json!(sub);
        }
        e
    }
}

/// Microseconds of the last time handed out: times strictly increase.
static LAST_MICROS: AtomicI64 = AtomicI64::new(0);

/// Now, as `2026-11-23T00:45:27.123456Z`, later than any time given before.
pub fn micro_time_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    let mut last = LAST_MICROS.load(Ordering::Relaxed);
    let micros = loop {
        let next = now.max(last + 1);
        match LAST_MICROS.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(seen) => last = seen,
        }
    };
    micro_time(micros)
}

/// RFC 3339 with microseconds, as metav1.MicroTime writes it.
pub fn micro_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let whole = super::objects::rfc3339(secs);
    format!("{}.{frac:06}Z", whole.trim_end_matches('Z'))
}

/// Sets the managedFields of a new object: each author owns its part.
pub fn on_create(object: &mut Value, authors: &Authors<'_>, api_version: &str) {
    let set = fields::object_fields(object);
    let time = micro_time_now();
    let entries: Vec<Value> = authors
        .split(&set)
        .into_iter()
        .map(|(writer, share)| Entry::new(&writer, api_version, &time, share).to_json())
        .collect();
    object["metadata"]["managedFields"] = Value::Array(entries);
}

/// Sets the managedFields of `next`, written over `prev` by `authors`:
/// the changed fields move to their writers, removed fields leave every
/// entry, the writers' entries get the time. `next` carries `prev`'s
/// entries; they are edited where they are stored, and only along the
/// changed paths.
pub fn on_update(prev: &Value, next: &mut Value, authors: &Authors<'_>, api_version: &str) {
    let mut changed = Fields::default();
    let mut removed = Fields::default();
    fields::diff(prev, next, "", true, &mut changed, &mut removed);
    fields::prune_server_owned(&mut changed);
    fields::prune_server_owned(&mut removed);
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let mut entries = match next["metadata"]["managedFields"].take() {
        Value::Array(entries) => entries,
        _ => Vec::new(),
    };
    for entry in &mut entries {
        if let Some(Value::Object(set)) = entry.get_mut("fieldsV1") {
            fields::subtract_raw(set, &changed);
            fields::subtract_raw(set, &removed);
        }
    }
    let time = micro_time_now();
    let mut shares = authors.split(&changed);
    if shares.is_empty() {
        // Only removals: the writer's entry, if it has one, says when.
        shares.push((authors.main, Fields::default()));
    }
    for (writer, share) in shares {
        let mine = entries
            .iter_mut()
            .find(|e| Entry::read_identity(e).is_some_and(|id| writer.is_identity(id)));
        match mine {
            Some(entry) => {
                if let Some(Value::Object(set)) = entry.get_mut("fieldsV1") {
                    fields::union_raw(set, &share);
                }
                entry["time"] = json!(time);
                entry["apiVersion"] = json!(api_version);
            }
            None if !share.is_empty() => {
                entries.push(Entry::new(&writer, api_version, &time, share).to_json())
            }
            None => {}
        }
    }
    entries.retain(|e| e["fieldsV1"].as_object().is_some_and(|set| !set.is_empty()));
    next["metadata"]["managedFields"] = Value::Array(entries);
}

/// The `fieldsV1` an object's entry for `manager` holds.
#[cfg(test)]
fn entry_of<'v>(object: &'v Value, manager: &str) -> Option<&'v Map<String, Value>> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)?
        .get("fieldsV1")?
        .as_object()
}

#[cfg(test)]
mod tests {
    use super::managers::*;
    use super::*;

    #[test]
    fn a_write_moves_the_fields_it_changed_to_its_writer() {
        let mut d = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "paused": false}, "status": {"readyReplicas": 2}});
        let parts: &[(&[&str], Writer)] = &[(&["status"], CONTROLLER_STATUS)];
        on_create(&mut d, &Authors { main: HELM, parts }, "apps/v1");
        let helm = entry_of(&d, "helm").cloned().map(Value::Object);
        assert_eq!(
            helm,
            Some(
                json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:paused": {}, "f:replicas": {}}})
            )
        );
        let mut next = d.clone();
        next["spec"]["replicas"] = json!(5);
        on_update(&d, &mut next, &Writer::update("ops-cli").into(), "apps/v1");
        assert_eq!(
            entry_of(&next, "ops-cli").cloned().map(Value::Object),
            Some(json!({"f:spec": {"f:replicas": {}}}))
        );
        assert_eq!(
            entry_of(&next, "helm").cloned().map(Value::Object),
            Some(json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:paused": {}}}))
        );
        let entries = next["metadata"]["managedFields"].as_array().cloned();
        let entries = entries.unwrap_or_default();
        assert_eq!(entries.len(), 3);
        assert!(entries.iter().any(|e| e["subresource"] == "status"));
        // a second write by the same manager changes its entry's time
        let mut again = next.clone();
        again["spec"]["replicas"] = json!(6);
        on_update(
            &next,
            &mut again,
            &Writer::update("ops-cli").into(),
            "apps/v1",
        );
        let time = |o: &Value| {
            o["metadata"]["managedFields"]
                .as_array()
                .and_then(|es| es.iter().find(|e| e["manager"] == "ops-cli"))
                .map(|e| e["time"].clone())
        };
        assert_ne!(time(&next), time(&again));
    }

    #[test]
    fn micro_times_are_rfc3339_with_microseconds() {
        assert_eq!(
            micro_time(1_700_000_000_000_042),
            "2023-11-14T22:13:20.000042Z"
        );
        let (a, b) = (micro_time_now(), micro_time_now());
        assert!(a < b, "{a} then {b}");
    }
}
