//! Pod logs: `GET /api/v1/namespaces/{ns}/pods/{name}/log` with
//! `container`, `follow`, `previous`, `timestamps`, `tailLines`,
//! `sinceSeconds`, `sinceTime` and `limitBytes`, answered as the apiserver
//! and kubelet answer: `text/plain`, chunked while following, lines in time
//! order, `timestamps=true` puts the kubelet's RFC 3339 stamp with nine
//! fractional digits and a space before each line; `tailLines` is applied
//! before `sinceSeconds`/`sinceTime` (second resolution), as the kubelet
//! seeks its file first; `limitBytes` cuts the body (mid-line if so).
//!
//! The lines are a pure function of the run and the rate schedule (`lines`),
//! so nothing is stored per container and every path (`kubectl` straight,
//! through `kubectl proxy`, through serve) reads the same lines for the same
//! time range. `POST /_sim/logs {"lines_per_sec": N}` (0–10,000, across all
//! containers) changes the rate from now on; `GET /_sim/logs` reports it and
//! how many lines have been served.
//!
//! Files: `run` (which container and run, and the errors), `lines` (the
//! generator), `schedule` (the rate schedule and the lines served), this
//! file (the request, the stream, the control).

pub mod lines;
pub mod run;
pub mod schedule;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::cluster::{Inner, Shared};
use crate::resources::{PODS, RESOURCES};
use crate::status::ApiError;
use lines::{stamp, Epoch, Line, NANOS};
use run::{container_of, invalid, run_of, Chosen};

/// The most `POST /_sim/logs` accepts, lines per second across all containers.
pub const MAX_LINES_PER_SEC: f64 = 10_000.0;

/// Containers in each demo pod (the app and its `log-shipper`): the total
/// rate is spread over `pods × this`.
const CONTAINERS_PER_POD: f64 = 2.0;

/// How often a follower looks for new lines.
const FOLLOW_TICK: Duration = Duration::from_millis(50);

/// How often a follower checks that its container still runs the same run.
const FOLLOW_CHECK: Duration = Duration::from_secs(1);

pub fn now_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// The query of a log request, validated as `PodLogOptions` are.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LogQuery {
    pub container: Option<String>,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<usize>,
    /// Unix nanoseconds: lines before it are left out.
    pub since: Option<i128>,
    pub limit_bytes: Option<u64>,
}

impl LogQuery {
    pub fn parse(q: &HashMap<String, String>, pod: &str, now: i128) -> Result<LogQuery, ApiError> {
        let flag = |name: &str| -> Result<bool, ApiError> {
            match q.get(name).map(String::as_str) {
                None | Some("0" | "false" | "False" | "FALSE") => Ok(false),
                Some("" | "1" | "true" | "True" | "TRUE") => Ok(true),
                Some(other) => Err(ApiError::bad_request(format!(
                    "invalid value {other:?} for {name}: use true or false"
                ))),
            }
        };
        let int = |name: &str| -> Result<Option<i64>, ApiError> {
            q.get(name)
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.parse().map_err(|_| {
                        ApiError::bad_request(format!(
                            "invalid value {v:?} for {name}: expected an integer"
                        ))
                    })
                })
                .transpose()
        };
        let tail = int("tailLines")?;
        let since_seconds = int("sinceSeconds")?;
        let limit = int("limitBytes")?;
        let since_time = match q.get("sinceTime").filter(|v| !v.is_empty()) {
            None => None,
            Some(text) => Some(deltascope_facts::time::parse_rfc3339(text).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid value {text:?} for sinceTime: expected an RFC 3339 time such as 2026-11-25T10:00:00Z"
                ))
            })?),
        };
        if tail.is_some_and(|n| n < 0) {
            return Err(invalid(
                pod,
                &format!(
                    "tailLines: Invalid value: {}: must be greater than or equal to 0",
                    tail.unwrap_or_default()
                ),
            ));
        }
        if let Some(s) = since_seconds.filter(|s| *s < 1) {
            return Err(invalid(
                pod,
                &format!("sinceSeconds: Invalid value: {s}: must be greater than 0"),
            ));
        }
        if let Some(b) = limit.filter(|b| *b < 1) {
            return Err(invalid(
                pod,
                &format!("limitBytes: Invalid value: {b}: must be greater than 0"),
            ));
        }
        if since_seconds.is_some() && since_time.is_some() {
            return Err(invalid(
                pod,
                "[]: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        }
        let since = since_seconds
            .map(|s| now - i128::from(s) * NANOS)
            .or(since_time.map(|t| i128::from(t) * NANOS));
        Ok(LogQuery {
            container: q.get("container").cloned(),
            follow: flag("follow")?,
            previous: flag("previous")?,
            timestamps: flag("timestamps")?,
            tail_lines: tail.map(|n| n as usize),
            since,
            limit_bytes: limit.map(|b| b as u64),
        })
    }
}

/// What the request reads: the lines held now, then (following) new ones.
fn held(chosen: &Chosen, query: &LogQuery, epochs: &[Epoch], now: i128) -> Vec<Line> {
    let mut lines = match query.tail_lines {
        Some(n) => chosen.run.last(epochs, now + 1, n),
        None => chosen.run.kept(epochs, now + 1),
    };
    if let Some(since) = query.since {
        lines.retain(|l| l.at >= since);
    }
    lines
}

/// Writes lines as the kubelet does, within `limitBytes`.
struct Writer {
    timestamps: bool,
    left: Option<u64>,
}

impl Writer {
    /// The bytes for `lines`, and whether the byte limit has been reached.
    fn write(&mut self, lines: &[Line]) -> (Vec<u8>, usize, bool) {
        let mut out = Vec::new();
        let mut count = 0;
        for line in lines {
            let start = out.len();
            if self.timestamps {
                out.extend_from_slice(stamp(line.at, 9).as_bytes());
                out.push(b' ');
            }
            out.extend_from_slice(line.text.as_bytes());
            out.push(b'\n');
            count += 1;
            if let Some(left) = self.left {
                let written = (out.len() - start) as u64;
                if written >= left {
                    out.truncate(start + left as usize);
                    self.left = Some(0);
                    return (out, count, true);
                }
                self.left = Some(left - written);
            }
        }
        (out, count, false)
    }
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log`.
pub async fn serve(
    inner: Shared,
    namespace: &str,
    name: &str,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let now = now_nanos();
    let r = &RESOURCES[PODS];
    if inner.config.forbids(&r.plural, &r.group) || inner.config.forbids("pods/log", "") {
        return Err(ApiError::forbidden("get", "pods/log", "", Some(namespace)));
    }
    let pod = read_pod(&inner, namespace, name)
        .ok_or_else(|| ApiError::object_not_found("pods", "", name))?;
    let query = LogQuery::parse(q, name, now)?;
    let container = container_of(&pod, name, query.container.as_deref())?;
    let chosen = run_of(&pod, name, &container, query.previous, inner.config.seed)?;
    let epochs = inner.logs.epochs();
    let first = held(&chosen, &query, &epochs, now);
    let mut writer = Writer {
        timestamps: query.timestamps,
        left: query.limit_bytes,
    };
    let (bytes, count, full) = writer.write(&first);
    inner
        .logs
        .lines_served
        .fetch_add(count as u64, Ordering::Relaxed);
    if !query.follow || full || chosen.run.end.is_some() {
        return Ok(plain(Body::from(bytes)));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let follow = Follow {
        inner: inner.clone(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        chosen,
        writer,
        cursor: now + 1,
    };
    tokio::spawn(follow.run(tx, bytes));
    Ok(plain(Body::from_stream(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )))
}

fn read_pod(inner: &Inner, namespace: &str, name: &str) -> Option<Value> {
    let obj = inner.store.get(PODS, &format!("{namespace}/{name}"))?;
    serde_json::from_slice(&obj.json).ok()
}

fn plain(body: Body) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// A follower: new lines as they are written, until the client leaves, the
/// byte limit is reached, the container's run ends (restart, pod deleted) or
/// the sim is "restarted" by a fault.
struct Follow {
    inner: Shared,
    namespace: String,
    name: String,
    chosen: Chosen,
    writer: Writer,
    /// Lines before this (Unix ns) have been written.
    cursor: i128,
}

impl Follow {
    async fn run(
        mut self,
        tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
        first: Vec<u8>,
    ) {
        if !first.is_empty() && tx.send(Ok(Bytes::from(first))).await.is_err() {
            return;
        }
        let mut restart = self.inner.restart.subscribe();
        let mut last_check = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(FOLLOW_TICK) => {}
                _ = restart.changed() => return,
                _ = tx.closed() => return,
            }
            let mut end = None;
            if last_check.elapsed() >= FOLLOW_CHECK {
                last_check = tokio::time::Instant::now();
                end = self.ended();
            }
            let now = now_nanos();
            let upto = end.map_or(now + 1, |e: i128| e.min(now + 1));
            let epochs = self.inner.logs.epochs();
            let lines = self.chosen.run.between(&epochs, self.cursor, upto);
            self.cursor = upto;
            let (bytes, count, full) = self.writer.write(&lines);
            self.inner
                .logs
                .lines_served
                .fetch_add(count as u64, Ordering::Relaxed);
            if !bytes.is_empty() && tx.send(Ok(Bytes::from(bytes))).await.is_err() {
                return;
            }
            if full || end.is_some() {
                return;
            }
        }
    }

    /// When the followed run ended (container restarted or stopped, pod
    /// gone): its last moment, else `None` while it runs.
    fn ended(&self) -> Option<i128> {
        let now = now_nanos();
        let Some(pod) = read_pod(&self.inner, &self.namespace, &self.name) else {
            return Some(now);
        };
        match run_of(
            &pod,
            &self.name,
            &self.chosen.container,
            false,
            self.inner.config.seed,
        ) {
            Ok(current)
                if current.container_id == self.chosen.container_id
                    && current.run.end.is_none() =>
            {
                None
            }
            Ok(current) if current.container_id == self.chosen.container_id => current.run.end,
            _ => {
                // Another run now: the one followed ended when the next started
                // or, failing that, now.
                let previous = run_of(
                    &pod,
                    &self.name,
                    &self.chosen.container,
                    true,
                    self.inner.config.seed,
                );
                Some(match previous {
                    Ok(p) if p.container_id == self.chosen.container_id => p.run.end.unwrap_or(now),
                    _ => now,
                })
            }
        }
    }
}

/// `/_sim/logs`: the rate of log lines.
pub fn router(inner: Shared) -> Router {
    Router::new()
        .route("/_sim/logs", get(rate).post(set_rate))
        .with_state(inner)
}

async fn rate(State(inner): State<Shared>) -> Response {
    let period = inner.logs.epochs().last().and_then(|e| e.period);
    let per_container = period.map_or(0.0, |p| NANOS as f64 / p as f64);
    let set = *inner
        .logs
        .total
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    answer(
        StatusCode::OK,
        json!({
            "lines_per_sec": set.unwrap_or(per_container * containers(&inner)),
            "per_container_per_sec": per_container,
            "containers": containers(&inner),
            "lines_served": inner.logs.lines_served.load(Ordering::Relaxed),
        }),
    )
}

fn containers(inner: &Inner) -> f64 {
    inner.store.count(PODS) as f64 * CONTAINERS_PER_POD
}

async fn set_rate(State(inner): State<Shared>, body: Bytes) -> Response {
    let total = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["lines_per_sec"].as_f64())
        .filter(|n| (0.0..=MAX_LINES_PER_SEC).contains(n));
    let Some(total) = total else {
        return ApiError::bad_request(format!(
            "expected {{\"lines_per_sec\": N}} with N from 0 to {MAX_LINES_PER_SEC} (lines per second across all containers)"
        ))
        .into_response();
    };
    let per_container = total / containers(&inner).max(1.0);
    inner.logs.set_rate(now_nanos(), per_container);
    *inner
        .logs
        .total
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(total);
    tracing::info!(total, per_container, "log rate set");
    answer(
        StatusCode::OK,
        json!({"lines_per_sec": total, "per_container_per_sec": per_container}),
    )
}

fn answer(code: StatusCode, v: Value) -> Response {
    let mut resp = (code, v.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<LogQuery, ApiError> {
        let q = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LogQuery::parse(&q, "web-1", 100 * NANOS)
    }

    #[test]
    fn options_are_validated_as_the_apiserver_does() {
        let e = query(&[("tailLines", "-1")])
            .err()
            .map(|e| (e.code.as_u16(), e.message));
        assert_eq!(
            e,
            Some((422, "PodLogOptions \"web-1\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0".to_string()))
        );
        assert!(query(&[("sinceSeconds", "0")]).is_err());
        assert!(query(&[("limitBytes", "0")]).is_err());
        assert!(query(&[("sinceSeconds", "5"), ("sinceTime", "2026-11-25T10:00:00Z")]).is_err());
        let q = query(&[
            ("sinceSeconds", "5"),
            ("follow", "true"),
            ("tailLines", "3"),
        ]);
        assert_eq!(
            q.map(|q| (q.since, q.follow, q.tail_lines)).ok(),
            Some((Some(95 * NANOS), true, Some(3)))
        );
        // sinceTime is read to the second.
        let q = query(&[("sinceTime", "1970-01-01T00:00:07.9Z")]);
        assert_eq!(q.map(|q| q.since).ok(), Some(Some(7 * NANOS)));
    }

    #[test]
    fn limit_bytes_cuts_mid_line() {
        let mut w = Writer {
            timestamps: false,
            left: Some(5),
        };
        let lines = [
            Line {
                at: 0,
                text: "abc".into(),
            },
            Line {
                at: 1,
                text: "defg".into(),
            },
        ];
        let (bytes, count, full) = w.write(&lines);
        assert_eq!((bytes.as_slice(), count, full), (&b"abc\nd"[..], 2, true));
    }
}
