//! Serve's history routes, behind the session like every other route:
//!
//! - `GET /_deltascope/history?resource=R[&namespace=NS][&name=N][&since=T][&until=T][&newest=K]`
//!   → `application/x-ndjson`: the recorded deltas and gaps in time order,
//!   streamed as the database yields them (`deltascope_history`'s lines);
//!   with `newest`, only the range's newest K deltas (and the rest of the
//!   oldest one's millisecond) and the gaps of the span they cover.
//! - `GET /_deltascope/history/state?resource=R&at=T[&namespace=NS]` → a
//!   `List` of the resource as recorded at T, its `resourceVersion` the
//!   last recorded at or before T, streamed a batch of objects at a time;
//!   409 with a Status when the record does not cover T (a gap, before its
//!   start, after what is known complete).
//! - `GET /_deltascope/history/summary` → per cluster and resource what is
//!   held, and the recorder's state.
//! - `GET /_deltascope/history/marks?resource=R&since=T&until=T&buckets=N[&namespace=NS]`
//!   → the deltas of the range counted per bucket and type, and its gaps
//!   ([`crate::history_marks`]).
//! - `GET /_deltascope/history/usage?resource=pods|nodes&since=T&until=T…`
//!   → resource usage over the range ([`crate::history_usage`]).
//!
//! Each takes `cluster=NAME`, serve's name of one of its clusters (as in
//! `/clusters/{name}/…`; 404 for a name it does not serve): that cluster's
//! record, under its own identity. Without it, the default cluster's.
//!
//! Times are RFC 3339 (`2026-11-27T10:00:00.250Z`). Every parameter is
//! checked before the database is asked (400 with a Status naming it);
//! values reach SQL only as bound parameters. What the routes share (their
//! state, common answers, the summary) is `crate::history_access`'s.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::response::Response;
use deltascope_facts::percent::decode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};
use deltascope_history::{ClusterId, HistoryQuery, HistoryStore, PastState, StateError};
use futures_util::StreamExt;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::history_access::{
    database_failed, is_label, is_object_name, json_response, no_cluster_yet, no_store,
    split_cluster_param, summary, HistoryAccess,
};
use crate::status::status;

/// Which history route a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryRoute {
    Lines,
    State,
    Summary,
    /// Deltas counted per bucket and type ([`crate::history_marks`]).
    Marks,
    /// Resource usage over a range ([`crate::history_usage`]).
    Usage,
}

/// A request's parameters, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryParams {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub at_ms: Option<i64>,
    /// How many buckets `since..until` is cut into (marks only).
    pub buckets: Option<usize>,
    /// Only the newest this many deltas of the range (lines only).
    pub newest: Option<usize>,
}

/// Why the parameters are refused (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown parameter {0:?}; the history routes take cluster, resource, namespace, name, since, until, at, buckets and newest")]
    Unknown(String),
    #[error("parameter {0} is given more than once")]
    Repeated(&'static str),
    #[error("parameter {0} is not validly percent-encoded UTF-8")]
    Encoding(&'static str),
    #[error("resource= is required, written as in data-resource: pods, deployments.apps")]
    NoResource,
    #[error("{name}={value:?} is not a {what}")]
    Invalid {
        name: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("since= is after until=")]
    Inverted,
    #[error("since= and until= are the same moment: there is no range to count")]
    EmptyRange,
    #[error("at= is required: the moment, in RFC 3339")]
    NoMoment,
    #[error("{0}= is not taken by this route")]
    NotHere(&'static str),
    #[error("{0}= is required by this route")]
    Required(&'static str),
}

const NAMES: [&str; 8] = [
    "resource",
    "namespace",
    "name",
    "since",
    "until",
    "at",
    "buckets",
    "newest",
];

/// The most deltas `newest=` may ask for.
pub const MAX_NEWEST: usize = 10_000;

/// Reads a query string strictly: known names, each once, valid values.
pub fn parse_params(query: &str, route: HistoryRoute) -> Result<HistoryParams, ParamError> {
    let mut values: [Option<String>; 8] = Default::default();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(index) = NAMES.iter().position(|name| *name == key) else {
            let shown: String = key.chars().take(40).collect();
            return Err(ParamError::Unknown(shown));
        };
        let name = NAMES[index];
        if values[index].is_some() {
            return Err(ParamError::Repeated(name));
        }
        values[index] = Some(decode_query_value(value).ok_or(ParamError::Encoding(name))?);
    }
    let [resource, namespace, name, since, until, at, buckets, newest] = values;
    let resource = resource.ok_or(ParamError::NoResource)?;
    check(
        &resource,
        "resource",
        "resource (lowercase, as in pods or deployments.apps)",
        is_resource,
    )?;
    if let Some(namespace) = &namespace {
        check(namespace, "namespace", "namespace name", is_label)?;
    }
    if let Some(name) = &name {
        check(name, "name", "object name", is_object_name)?;
    }
    let time = |value: Option<String>, name: &'static str| -> Result<Option<i64>, ParamError> {
        value
            .map(|text| {
                parse_rfc3339_millis(&text).ok_or(ParamError::Invalid {
                    name,
                    value: text.chars().take(64).collect(),
                    what: "time in RFC 3339 (2026-11-27T10:00:00.250Z)",
                })
            })
            .transpose()
    };
    let params = HistoryParams {
        resource,
        namespace,
        name,
        since_ms: time(since, "since")?,
        until_ms: time(until, "until")?,
        at_ms: time(at, "at")?,
        buckets: buckets.map(|text| parse_buckets(&text)).transpose()?,
        newest: newest.map(|text| parse_newest(&text)).transpose()?,
    };
    check_route(&params, route)?;
    Ok(params)
}

/// What each route takes and requires.
fn check_route(params: &HistoryParams, route: HistoryRoute) -> Result<(), ParamError> {
    if route != HistoryRoute::Marks && params.buckets.is_some() {
        return Err(ParamError::NotHere("buckets"));
    }
    if route != HistoryRoute::Lines && params.newest.is_some() {
        return Err(ParamError::NotHere("newest"));
    }
    let inverted = matches!((params.since_ms, params.until_ms), (Some(s), Some(u)) if s > u);
    match route {
        HistoryRoute::Lines => {
            if params.at_ms.is_some() {
                return Err(ParamError::NotHere("at"));
            }
            if inverted {
                return Err(ParamError::Inverted);
            }
        }
        HistoryRoute::State => {
            for (given, name) in [
                (params.name.is_some(), "name"),
                (params.since_ms.is_some(), "since"),
                (params.until_ms.is_some(), "until"),
            ] {
                if given {
                    return Err(ParamError::NotHere(name));
                }
            }
            if params.at_ms.is_none() {
                return Err(ParamError::NoMoment);
            }
        }
        HistoryRoute::Marks => {
            for (given, name) in [
                (params.name.is_some(), "name"),
                (params.at_ms.is_some(), "at"),
            ] {
                if given {
                    return Err(ParamError::NotHere(name));
                }
            }
            for (given, name) in [
                (params.since_ms.is_some(), "since"),
                (params.until_ms.is_some(), "until"),
                (params.buckets.is_some(), "buckets"),
            ] {
                if !given {
                    return Err(ParamError::Required(name));
                }
            }
            if inverted {
                return Err(ParamError::Inverted);
            }
            if params.since_ms == params.until_ms {
                return Err(ParamError::EmptyRange);
            }
        }
        // the usage route reads its own parameters (crate::history_usage)
        HistoryRoute::Summary | HistoryRoute::Usage => {}
    }
    Ok(())
}

/// `buckets=`: 1 to [`deltascope_history::MAX_MARK_BUCKETS`].
fn parse_buckets(text: &str) -> Result<usize, ParamError> {
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=deltascope_history::MAX_MARK_BUCKETS).contains(n))
        .ok_or(ParamError::Invalid {
            name: "buckets",
            value: text.chars().take(64).collect(),
            what: "number of buckets from 1 to 4096",
        })
}

/// `newest=`: 1 to [`MAX_NEWEST`].
fn parse_newest(text: &str) -> Result<usize, ParamError> {
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_NEWEST).contains(n))
        .ok_or(ParamError::Invalid {
            name: "newest",
            value: text.chars().take(64).collect(),
            what: "number of deltas from 1 to 10000",
        })
}

fn check(
    value: &str,
    name: &'static str,
    what: &'static str,
    valid: fn(&str) -> bool,
) -> Result<(), ParamError> {
    if valid(value) {
        Ok(())
    } else {
        Err(ParamError::Invalid {
            name,
            value: value.chars().take(64).collect(),
            what,
        })
    }
}

/// `pods`, `deployments.apps`, `widgets.example.com`.
fn is_resource(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_label)
}

/// Answers a history route. Each takes `cluster=NAME` (serve's name of one
/// of its clusters; without it, the default one) besides its own
/// parameters.
pub async fn answer(access: &HistoryAccess, route: HistoryRoute, query: Option<&str>) -> Response {
    let named = split_cluster_param(query.unwrap_or(""));
    let asked = named.and_then(|(name, rest)| Ok((access.cluster_named(name.as_deref())?, rest)));
    let (asked, query) = match asked {
        Ok(asked) => asked,
        Err(refused) => return refused.into_response(),
    };
    match route {
        HistoryRoute::Summary => return summary(access, asked).await,
        HistoryRoute::Usage => return crate::history_usage::answer(access, asked, &query).await,
        _ => {}
    }
    let params = match parse_params(&query, route) {
        Ok(params) => params,
        Err(error) => return status(StatusCode::BAD_REQUEST, "BadRequest", error.to_string()),
    };
    let Some(store) = access.store.borrow().clone() else {
        return no_store(access);
    };
    let Some(cluster) = asked.cluster.borrow().clone() else {
        return no_cluster_yet();
    };
    let recorded = match store.has_resource(&cluster, &params.resource).await {
        Ok(recorded) => recorded,
        Err(error) => return database_failed(&error),
    };
    if !recorded {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!(
                "{} is not a resource recorded for this cluster; GET /_deltascope/history/summary lists them",
                params.resource
            ),
        );
    }
    match route {
        HistoryRoute::Lines => lines(&store, &cluster, params),
        HistoryRoute::Marks => marks(&store, &cluster, params).await,
        _ => state(&store, &cluster, params).await,
    }
}

fn streamed(
    content_type: &'static str,
    lines: mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> Response {
    let mut response = Response::new(Body::from_stream(ReceiverStream::new(lines)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn lines(store: &Arc<HistoryStore>, cluster: &ClusterId, params: HistoryParams) -> Response {
    let query = HistoryQuery {
        resource: params.resource,
        namespace: params.namespace,
        name: params.name,
        since_ms: params.since_ms.unwrap_or(i64::MIN),
        until_ms: params.until_ms.unwrap_or(i64::MAX),
        newest: params.newest,
    };
    let receiver = store.lines(cluster, query);
    let (send, body) = mpsc::channel(4);
    tokio::spawn(async move {
        let mut lines = ReceiverStream::new(receiver);
        while let Some(line) = lines.next().await {
            let chunk = match line {
                Ok(text) => Ok(Bytes::from(text)),
                // Cut the body: a reader sees an incomplete response, not a short history.
                Err(error) => Err(std::io::Error::other(error.to_string())),
            };
            let failed = chunk.is_err();
            if send.send(chunk).await.is_err() || failed {
                return;
            }
        }
    });
    streamed("application/x-ndjson", body)
}

/// The marks route's answer ([`crate::history_marks`]).
async fn marks(store: &Arc<HistoryStore>, cluster: &ClusterId, params: HistoryParams) -> Response {
    let (Some(since_ms), Some(until_ms), Some(buckets)) =
        (params.since_ms, params.until_ms, params.buckets)
    else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "since=, until= and buckets= are required",
        );
    };
    let query = deltascope_history::MarksQuery {
        resource: params.resource,
        namespace: params.namespace,
        since_ms,
        until_ms,
        buckets,
    };
    match crate::history_marks::marks(store, cluster, &query).await {
        Ok(Some(body)) => json_response(&body),
        Ok(None) => status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!(
                "{} is not a resource recorded for this cluster",
                query.resource
            ),
        ),
        Err(error) => database_failed(&error),
    }
}

/// Batches of a past state read ahead of the one being sent.
const STATE_BATCHES_AHEAD: usize = 2;

async fn state(store: &Arc<HistoryStore>, cluster: &ClusterId, params: HistoryParams) -> Response {
    let at_ms = params.at_ms.unwrap_or(i64::MAX);
    let past = match store
        .state_at(
            cluster,
            &params.resource,
            params.namespace.as_deref(),
            at_ms,
        )
        .await
    {
        Ok(past) => past,
        Err(StateError::History(error)) => return database_failed(&error),
        Err(error) => return status(StatusCode::CONFLICT, "Conflict", uncovered(&error)),
    };
    let (send, body) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let store = Arc::clone(store);
    tokio::spawn(async move {
        // Cut the body on a failure: a reader sees an incomplete response,
        // not a shorter list.
        if let Err(error) = send_state(&store, &past, &send).await {
            let _ = send.send(Err(std::io::Error::other(error))).await;
        }
    });
    streamed("application/json", body)
}

/// The List of a past state, sent as it is rebuilt. Batches are read in
/// turn and rebuilt on the blocking pool, the next read while the one before
/// is rebuilt: decompressing and checking the objects takes a core of its
/// own. `Ok` also when the reader went away.
async fn send_state(
    store: &HistoryStore,
    past: &PastState,
    send: &mpsc::Sender<Result<Bytes, std::io::Error>>,
) -> Result<(), String> {
    let head = format!(
        "{{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":{}}},\"items\":[",
        serde_json::Value::String(past.resource_version.clone())
    );
    if send.send(Ok(Bytes::from(head))).await.is_err() {
        return Ok(());
    }
    let mut after = 0;
    let mut first = true;
    let mut rebuilding = std::collections::VecDeque::new();
    let mut read_all = false;
    loop {
        if !read_all && rebuilding.len() < STATE_BATCHES_AHEAD {
            match store
                .state_rows(past, after)
                .await
                .map_err(|e| e.to_string())?
            {
                Some((rows, last)) => {
                    after = last;
                    rebuilding
                        .push_back(tokio::task::spawn_blocking(move || rows.rebuild_joined()));
                }
                None => read_all = true,
            }
            continue;
        }
        let Some(next) = rebuilding.pop_front() else {
            break;
        };
        let (objects, count) = next
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        if count == 0 {
            continue;
        }
        // One chunk per batch (a chunk per object cost more in the body's
        // channel and frames than the object itself), its objects written
        // joined where they were rebuilt.
        if !first && send.send(Ok(Bytes::from_static(b","))).await.is_err() {
            return Ok(());
        }
        first = false;
        if send.send(Ok(Bytes::from(objects))).await.is_err() {
            return Ok(());
        }
    }
    let _ = send.send(Ok(Bytes::from_static(b"]}\n"))).await;
    Ok(())
}

/// Why the record does not cover a moment, with times a person reads.
fn uncovered(error: &StateError) -> String {
    let time = |ms: i64| format_rfc3339_millis(ms).unwrap_or_else(|| ms.to_string());
    match error {
        StateError::InGap {
            resource,
            from_ms,
            to_ms,
            reason,
        } => format!(
            "the record of {resource} has a gap from {} to {} ({}): changes then may be missing",
            time(*from_ms),
            time(*to_ms),
            reason.as_str()
        ),
        StateError::Before { resource, first_ms } => {
            format!("the record of {resource} starts at {}", time(*first_ms))
        }
        StateError::After {
            resource,
            through_ms,
        } => format!(
            "the record of {resource} is known complete up to {}",
            time(*through_ms)
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lines(query: &str) -> Result<HistoryParams, ParamError> {
        parse_params(query, HistoryRoute::Lines)
    }

    #[test]
    fn good_queries_read_as_meant() {
        let params = lines("resource=deployments.apps&namespace=shop&name=web&since=2026-11-27T10:00:00Z&until=2026-11-27T10%3A10%3A00.5Z").unwrap();
        assert_eq!(params.resource, "deployments.apps");
        assert_eq!(params.namespace.as_deref(), Some("shop"));
        assert_eq!(params.name.as_deref(), Some("web"));
        assert_eq!(params.until_ms.unwrap() - params.since_ms.unwrap(), 600_500);
        let state =
            parse_params("resource=pods&at=2026-11-27T10:00:00Z", HistoryRoute::State).unwrap();
        assert!(state.at_ms.is_some());
        assert!(lines(
            "resource=clusterroles.rbac.authorization.k8s.io&name=system:controller:job-controller"
        )
        .is_ok());
    }

    #[test]
    fn marks_take_a_range_and_a_number_of_buckets() {
        let marks = |query: &str| parse_params(query, HistoryRoute::Marks);
        let params = marks(
            "resource=pods&namespace=shop&since=2026-11-27T10:00:00Z&until=2026-11-27T11:00:00Z&buckets=1000",
        )
        .unwrap();
        assert_eq!(params.buckets, Some(1000));
        assert_eq!(
            params.until_ms.unwrap() - params.since_ms.unwrap(),
            3_600_000
        );
        let range = "since=2026-11-27T10:00:00Z&until=2026-11-27T11:00:00Z";
        for (query, expected) in [
            (
                "resource=pods&until=2026-11-27T11:00:00Z&buckets=10".to_string(),
                ParamError::Required("since"),
            ),
            (
                format!("resource=pods&{range}"),
                ParamError::Required("buckets"),
            ),
            (
                format!("resource=pods&{range}&buckets=10&name=web"),
                ParamError::NotHere("name"),
            ),
            (
                "resource=pods&since=2026-11-27T10:00:00Z&until=2026-11-27T10:00:00Z&buckets=1"
                    .to_string(),
                ParamError::EmptyRange,
            ),
        ] {
            assert_eq!(marks(&query).unwrap_err(), expected, "{query}");
        }
        for buckets in ["0", "4097", "-1", "ten", "1e3"] {
            let query = format!("resource=pods&{range}&buckets={buckets}");
            assert!(
                matches!(
                    marks(&query),
                    Err(ParamError::Invalid {
                        name: "buckets",
                        ..
                    })
                ),
                "{query}"
            );
        }
        assert_eq!(
            lines("resource=pods&buckets=10").unwrap_err(),
            ParamError::NotHere("buckets")
        );
    }

    #[test]
    fn lines_take_a_number_of_newest_deltas() {
        let params = lines("resource=pods&namespace=shop&name=web&newest=100").unwrap();
        assert_eq!(params.newest, Some(100));
        assert_eq!(
            lines("resource=pods&newest=10000").unwrap().newest,
            Some(10_000)
        );
        for newest in ["0", "10001", "-1", "many", "1e2", ""] {
            let query = format!("resource=pods&newest={newest}");
            assert!(
                matches!(
                    lines(&query),
                    Err(ParamError::Invalid { name: "newest", .. })
                ),
                "{query}"
            );
        }
        assert_eq!(
            parse_params(
                "resource=pods&at=2026-11-27T10:00:00Z&newest=5",
                HistoryRoute::State
            )
            .unwrap_err(),
            ParamError::NotHere("newest")
        );
    }

    #[test]
    fn bad_queries_say_what_is_wrong() {
        for (query, expected) in [
            ("", ParamError::NoResource),
            (
                "resource=pods&resource=pods",
                ParamError::Repeated("resource"),
            ),
            (
                "resource=pods&since=2026-11-27T10:00:01Z&until=2026-11-27T10:00:00Z",
                ParamError::Inverted,
            ),
            (
                "resource=pods&at=2026-11-27T10:00:00Z",
                ParamError::NotHere("at"),
            ),
        ] {
            assert_eq!(lines(query).unwrap_err(), expected, "{query}");
        }
        for query in [
            "resource=Pods",
            "resource=pods;DROP TABLE ds_deltas",
            "resource=pods%27%20OR%201%3D1--",
            "resource=pods&namespace=a%2Fb",
            "resource=pods&name=..",
            "resource=pods&name=a%2F..",
            "resource=pods&since=yesterday",
            "resource=pods&since=1732700000",
            "resource=pods&sort=name",
            "resource=%ff",
        ] {
            assert!(lines(query).is_err(), "{query} was taken");
        }
        assert_eq!(
            parse_params("resource=pods", HistoryRoute::State).unwrap_err(),
            ParamError::NoMoment
        );
    }

    proptest! {
        #[test]
        fn any_query_is_read_or_refused_never_a_panic(query in "[a-z=&%0-9A-F:.\\-;' ]{0,80}") {
            for route in [HistoryRoute::Lines, HistoryRoute::State] {
                let _ = parse_params(&query, route);
            }
        }
    }
}
