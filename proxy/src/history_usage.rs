//! `GET /_deltascope/history/usage?resource=pods|nodes&since=T&until=T[&namespace=NS][&name=N|&owner=KIND/NAME][&points=N]`:
//! the resource usage the recorder's sampler kept (`kubectl top`'s numbers,
//! per metrics window) for one pod or node, or summed per window over the
//! pods an owner controls (`owner=Deployment/web` matches a pod's
//! controller or its top workload). Owned apart from the other history
//! routes because it reads no resource's deltas and takes its own
//! parameters; every one is checked before the database is asked (400 with
//! a Status naming it). The answer:
//!
//! ```json
//! {"resource":"pods","namespace":"shop","name":"web-0","owner":null,
//!  "since":T,"until":T,"window":15000,"thinned":false,
//!  "samples":[{"at":T,"window":15000,"cpu":12345678,"memory":83886080,
//!              "containers":[{"name":"main","cpu":12345678,"memory":83886080}]}],
//!  "gaps":[{"from":T,"to":T,"reason":"not-running"}]}
//! ```
//!
//! CPU in nanocores, memory in bytes, times RFC 3339 to the millisecond,
//! windows in ms. An owner's samples carry `"pods": n` and no containers; a
//! node's no containers. More windows than `points` (default 2000) in
//! `[since, until)`: each of `points` equal time buckets reports its
//! largest CPU and largest memory at its last window's time, and
//! `"thinned": true`. Gaps are the pods' (or nodes') record's over the
//! range. Nothing recorded for the object: 200 with no samples.

use axum::response::Response;
use deltascope_facts::percent::decode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};
use deltascope_history::{
    UsagePoint, UsageQuery, UsageResource, UsageSeries, UsageTarget, MAX_USAGE_POINTS,
};
use http::StatusCode;
use serde_json::{json, Value};

use crate::history_access::{
    database_failed, is_label, is_object_name, json_response, no_cluster_yet, no_store,
    ClusterAccess, HistoryAccess,
};
use crate::status::status;

/// Points when `points=` is not given.
pub const DEFAULT_POINTS: usize = 2_000;

/// Why the parameters are refused (400); each names its parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageParamError {
    #[error("unknown parameter {0:?}; the usage route takes cluster, resource, namespace, name, owner, since, until and points")]
    Unknown(String),
    #[error("parameter {0} is given more than once")]
    Repeated(&'static str),
    #[error("parameter {0} is not validly percent-encoded UTF-8")]
    Encoding(&'static str),
    #[error("{0}= is required by the usage route")]
    Required(&'static str),
    #[error("{name}={value:?} is not a {what}")]
    Invalid {
        name: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("since= must be before until=")]
    NotBefore,
    #[error("{0}= is not taken for nodes")]
    NotForNodes(&'static str),
    #[error("name= or owner= is required for pods (exactly one of them)")]
    NoTarget,
    #[error("name= and owner= are both given: give exactly one of them")]
    BothTargets,
}

const NAMES: [&str; 7] = [
    "resource",
    "namespace",
    "name",
    "owner",
    "since",
    "until",
    "points",
];

fn invalid(name: &'static str, value: &str, what: &'static str) -> UsageParamError {
    UsageParamError::Invalid {
        name,
        value: value.chars().take(64).collect(),
        what,
    }
}

/// Reads the query string strictly: known names, each once, valid values.
pub fn parse_usage_params(query: &str) -> Result<UsageQuery, UsageParamError> {
    let mut values: [Option<String>; 7] = Default::default();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(index) = NAMES.iter().position(|name| *name == key) else {
            return Err(UsageParamError::Unknown(key.chars().take(40).collect()));
        };
        if values[index].is_some() {
            return Err(UsageParamError::Repeated(NAMES[index]));
        }
        let decoded = decode_query_value(value).ok_or(UsageParamError::Encoding(NAMES[index]))?;
        values[index] = Some(decoded);
    }
    let [resource, namespace, name, owner, since, until, points] = values;
    let resource = resource.ok_or(UsageParamError::Required("resource"))?;
    let resource = UsageResource::parse(&resource)
        .ok_or_else(|| invalid("resource", &resource, "resource with usage: pods or nodes"))?;
    if let Some(namespace) = &namespace {
        if !is_label(namespace) {
            return Err(invalid("namespace", namespace, "namespace name"));
        }
    }
    if let Some(name) = &name {
        if !is_object_name(name) {
            return Err(invalid("name", name, "object name"));
        }
    }
    if let Some(owner) = &owner {
        if !is_owner(owner) {
            return Err(invalid(
                "owner",
                owner,
                "owner as KIND/NAME (Deployment/web)",
            ));
        }
    }
    let time = |value: Option<String>, name: &'static str| {
        let text = value.ok_or(UsageParamError::Required(name))?;
        parse_rfc3339_millis(&text)
            .ok_or_else(|| invalid(name, &text, "time in RFC 3339 (2026-11-27T10:00:00.250Z)"))
    };
    let (since_ms, until_ms) = (time(since, "since")?, time(until, "until")?);
    if since_ms >= until_ms {
        return Err(UsageParamError::NotBefore);
    }
    let points = match points {
        None => DEFAULT_POINTS,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_USAGE_POINTS).contains(n))
            .ok_or_else(|| invalid("points", &text, "number of points from 1 to 10000"))?,
    };
    let target = target_of(resource, namespace.is_some(), name, owner)?;
    Ok(UsageQuery {
        resource,
        namespace,
        target,
        since_ms,
        until_ms,
        points,
    })
}

/// What each resource takes: pods a namespace and one of name and owner;
/// nodes a name only.
fn target_of(
    resource: UsageResource,
    namespaced: bool,
    name: Option<String>,
    owner: Option<String>,
) -> Result<UsageTarget, UsageParamError> {
    match resource {
        UsageResource::Nodes => {
            if namespaced {
                return Err(UsageParamError::NotForNodes("namespace"));
            }
            if owner.is_some() {
                return Err(UsageParamError::NotForNodes("owner"));
            }
            name.map(UsageTarget::Name)
                .ok_or(UsageParamError::Required("name"))
        }
        UsageResource::Pods => {
            if !namespaced {
                return Err(UsageParamError::Required("namespace"));
            }
            match (name, owner) {
                (Some(name), None) => Ok(UsageTarget::Name(name)),
                (None, Some(owner)) => Ok(UsageTarget::Owner(owner)),
                (Some(_), Some(_)) => Err(UsageParamError::BothTargets),
                (None, None) => Err(UsageParamError::NoTarget),
            }
        }
    }
}

/// `Kind/name`: a kind (a letter, then letters and digits) and an object
/// name.
fn is_owner(text: &str) -> bool {
    let Some((kind, name)) = text.split_once('/') else {
        return false;
    };
    kind.len() <= 63
        && kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
        && is_object_name(name)
}

/// Answers the route (see the module doc).
pub async fn answer(access: &HistoryAccess, asked: &ClusterAccess, query: &str) -> Response {
    let query = match parse_usage_params(query) {
        Ok(query) => query,
        Err(error) => return status(StatusCode::BAD_REQUEST, "BadRequest", error.to_string()),
    };
    let Some(store) = access.store.borrow().clone() else {
        return no_store(access);
    };
    let Some(cluster) = asked.cluster.borrow().clone() else {
        return no_cluster_yet();
    };
    match store.usage(&cluster, &query).await {
        Ok(series) => json_response(&body(&query, &series)),
        Err(error) => database_failed(&error),
    }
}

fn time(ms: i64) -> Value {
    format_rfc3339_millis(ms).map_or(Value::Null, Value::String)
}

fn sample(query: &UsageQuery, point: &UsagePoint) -> Value {
    let mut sample = json!({
        "at": time(point.at_ms),
        "window": point.window_ms,
        "cpu": point.cpu_nanocores,
        "memory": point.memory_bytes,
    });
    match (&query.target, query.resource) {
        (UsageTarget::Owner(_), _) => sample["pods"] = json!(point.pods.unwrap_or(0)),
        (UsageTarget::Name(_), UsageResource::Pods) => {
            let containers: Vec<Value> = point
                .containers
                .iter()
                .map(|c| json!({"name": c.name, "cpu": c.cpu_nanocores, "memory": c.memory_bytes}))
                .collect();
            sample["containers"] = Value::Array(containers);
        }
        (UsageTarget::Name(_), UsageResource::Nodes) => {}
    }
    sample
}

/// The answer's JSON (see the module doc).
pub fn body(query: &UsageQuery, series: &UsageSeries) -> Value {
    let (name, owner) = match &query.target {
        UsageTarget::Name(name) => (Some(name), None),
        UsageTarget::Owner(owner) => (None, Some(owner)),
    };
    let samples: Vec<Value> = series.points.iter().map(|p| sample(query, p)).collect();
    let gaps: Vec<Value> = series
        .gaps
        .iter()
        .map(|gap| json!({"from": time(gap.from_ms), "to": time(gap.to_ms), "reason": gap.reason.as_str()}))
        .collect();
    json!({
        "resource": query.resource.as_str(),
        "namespace": query.namespace,
        "name": name,
        "owner": owner,
        "since": time(query.since_ms),
        "until": time(query.until_ms),
        "window": series.window_ms,
        "thinned": series.thinned,
        "samples": samples,
        "gaps": gaps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltascope_history::ContainerUsage;

    const RANGE: &str = "since=2026-11-27T10:00:00Z&until=2026-11-27T11:00:00Z";

    #[test]
    fn good_queries_read_as_meant() {
        let pod = parse_usage_params(&format!(
            "resource=pods&namespace=shop&name=web-0&{RANGE}&points=10"
        ))
        .unwrap();
        assert_eq!(pod.target, UsageTarget::Name("web-0".into()));
        assert_eq!((pod.until_ms - pod.since_ms, pod.points), (3_600_000, 10));
        let owner = parse_usage_params(&format!(
            "resource=pods&namespace=shop&owner=Deployment%2Fweb&{RANGE}"
        ))
        .unwrap();
        assert_eq!(owner.target, UsageTarget::Owner("Deployment/web".into()));
        assert_eq!(owner.points, DEFAULT_POINTS);
        let node = parse_usage_params(&format!("resource=nodes&name=node-1&{RANGE}")).unwrap();
        assert_eq!(node.namespace, None);
    }

    #[test]
    fn bad_queries_name_the_parameter() {
        let pods = format!("resource=pods&namespace=shop&{RANGE}");
        for (query, named) in [
            (format!("{pods}&name=web&sort=cpu"), "sort"),
            (format!("{pods}&name=web&name=web"), "name"),
            (format!("resource=secrets&{RANGE}&name=x"), "resource"),
            (format!("resource=pods&name=web&{RANGE}"), "namespace"),
            (format!("{pods}&name=a%2Fb"), "name"),
            (format!("{pods}&owner=web"), "owner"),
            (format!("{pods}&owner=Deploy%20ment%2Fweb"), "owner"),
            (format!("{pods}&name=web&owner=Deployment%2Fweb"), "owner"),
            (pods.to_string(), "owner"),
            (format!("{pods}&name=web&points=0"), "points"),
            (format!("{pods}&name=web&points=10001"), "points"),
            (format!("resource=nodes&name=n&namespace=shop&{RANGE}"), "namespace"),
            (format!("resource=nodes&owner=Node%2Fn&{RANGE}"), "owner"),
            (format!("resource=nodes&{RANGE}"), "name"),
            ("resource=pods&namespace=shop&name=web&until=2026-11-27T11:00:00Z".to_string(), "since"),
            ("resource=pods&namespace=shop&name=web&since=2026-11-27T11:00:00Z".to_string(), "until"),
            ("resource=pods&namespace=shop&name=web&since=yesterday&until=2026-11-27T11:00:00Z".to_string(), "since"),
            ("resource=pods&namespace=shop&name=web&since=2026-11-27T11:00:00Z&until=2026-11-27T11:00:00Z".to_string(), "until"),
        ] {
            let error = parse_usage_params(&query).unwrap_err().to_string();
            assert!(error.contains(named), "{query}: {error}");
        }
    }

    #[test]
    fn the_answer_says_what_each_sample_holds() {
        let query = parse_usage_params(&format!("resource=pods&namespace=shop&name=web-0&{RANGE}"))
            .unwrap();
        let point = UsagePoint {
            at_ms: query.since_ms + 1_500,
            window_ms: 15_000,
            cpu_nanocores: 7,
            memory_bytes: 8,
            pods: None,
            containers: vec![ContainerUsage {
                name: "main".into(),
                cpu_nanocores: 7,
                memory_bytes: 8,
            }],
        };
        let series = UsageSeries {
            points: vec![point.clone()],
            window_ms: Some(15_000),
            ..UsageSeries::default()
        };
        let value = body(&query, &series);
        assert_eq!(value["samples"][0]["at"], "2026-11-27T10:00:01.500Z");
        assert_eq!(value["samples"][0]["containers"][0]["memory"], 8);
        assert_eq!(
            (value["owner"].clone(), value["window"].clone()),
            (Value::Null, json!(15_000))
        );
        let by_owner = UsageQuery {
            target: UsageTarget::Owner("Deployment/web".into()),
            ..query
        };
        let owned = UsageSeries {
            points: vec![UsagePoint {
                pods: Some(3),
                containers: Vec::new(),
                ..point
            }],
            ..series
        };
        let value = body(&by_owner, &owned);
        assert_eq!(value["samples"][0]["pods"], 3);
        assert!(value["samples"][0].get("containers").is_none());
        assert_eq!(value["owner"], "Deployment/web");
    }
}
