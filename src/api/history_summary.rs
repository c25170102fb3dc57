//! What `GET /_deltascope/history/summary` answers (serve's recorded
//! history, ARCHITECTURE.md's History contracts): the cluster, the
//! database (`history`, no password), why serve keeps none
//! (`unavailable`), what its recorder is doing (`recording`) and each
//! recorded resource's counts. Read leniently — a field serve adds later is
//! ignored, one it leaves out is its default — but a body that is not a JSON
//! object with at least one of the summary's own fields is refused: an HTML
//! page (`trunk serve` answers unknown paths with `index.html`) or another
//! server's JSON is no summary. What the page says about it is
//! `crate::model::serve_history`.

use serde::Deserialize;

/// The summary, as serve writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HistorySummary {
    /// The `kube-system` namespace's uid, once serve knows it.
    #[serde(default)]
    pub cluster: Option<String>,
    /// The database serve keeps the history in (`sqlite:/…`,
    /// `postgres://user@host/db`); `None` when it keeps none.
    #[serde(default)]
    pub history: Option<String>,
    /// Why serve keeps no history although one was asked for.
    #[serde(default)]
    pub unavailable: Option<String>,
    /// The recorder's state; `None` when this serve does not record.
    #[serde(default)]
    pub recording: Option<RecorderSummary>,
    /// One entry per recorded resource of every cluster.
    #[serde(default)]
    pub resources: Vec<ResourceSummary>,
    /// serve's named clusters, the default first, each with its identity
    /// and recorder (empty: the one cluster of a plain `--upstream`, or a
    /// serve older than several clusters).
    #[serde(default)]
    pub clusters: Vec<ClusterSummary>,
}

/// One of serve's clusters, in `clusters`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ClusterSummary {
    /// serve's name for it, as in `/clusters/{name}/…` and routes (one
    /// without is no cluster the page can name, and is passed over).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub default: bool,
    /// Its `kube-system` uid, once serve knows it.
    #[serde(default)]
    pub cluster: Option<String>,
    /// Its recorder's state; `None` when this serve does not record.
    #[serde(default)]
    pub recording: Option<RecorderSummary>,
}

/// `recording`: what serve's recorder is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecorderSummary {
    /// serve's one line about it: "recording 16 resources; 556 deltas
    /// stored", "recorder starting", "recorder paused: …".
    #[serde(default)]
    pub state: String,
    /// Resources being recorded now.
    #[serde(default)]
    pub resources: u64,
    #[serde(default)]
    pub deltas_written: u64,
    /// When the database last took a batch (ms since the Unix epoch).
    #[serde(default)]
    pub last_write_ms: Option<i64>,
}

/// One recorded resource of one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    #[serde(default)]
    pub cluster: String,
    /// As in `data-resource`: `pods`, `deployments.apps`.
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub deltas: i64,
    #[serde(default)]
    pub bytes: i64,
    #[serde(default)]
    pub gaps: i64,
    /// Its first and last recorded delta (ms since the Unix epoch).
    #[serde(default)]
    pub first_ms: Option<i64>,
    #[serde(default)]
    pub last_ms: Option<i64>,
    /// How far its record is known complete.
    #[serde(default)]
    pub through_ms: Option<i64>,
}

/// Why a body is not a summary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("the history summary is not JSON: {0}")]
    NotJson(String),
    #[error("the answer is JSON but not a history summary (none of its fields)")]
    NotSummary,
}

/// The fields that make a JSON object a summary (any one of them).
const OWN_FIELDS: [&str; 4] = ["history", "unavailable", "recording", "resources"];

/// Reads a summary body.
pub fn parse_summary(body: &[u8]) -> Result<HistorySummary, SummaryError> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| SummaryError::NotJson(e.to_string()))?;
    let is_summary = value
        .as_object()
        .is_some_and(|object| OWN_FIELDS.iter().any(|field| object.contains_key(*field)));
    if !is_summary {
        return Err(SummaryError::NotSummary);
    }
    // read again from the bytes, not from `value`: the page reads no other
    // type from a `Value`, and `from_value` linked serde_json's deserializer
    // of a `Value` for this one
    serde_json::from_slice(body).map_err(|e| SummaryError::NotJson(e.to_string()))
}

/// The `message` of a Kubernetes `Status` body (serve's error answers), if
/// the body is one.
pub fn status_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("Status") {
        return None;
    }
    Some(value.get("message")?.as_str()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serve's answer while recording (copied from `deltascope serve --demo
    /// --history sqlite:…`, two of its sixteen resources kept).
    const RECORDING: &str = r#"{"cluster":"01fb9c4b-7c47-4c4e-86cc-d4d3ebce5985","history":"sqlite:/tmp/ds-sample.sqlite","recording":{"deltasWritten":556,"lastWriteMs":1795809112701,"resources":16,"state":"recording 16 resources; 556 deltas stored"},"resources":[{"bytes":15073,"cluster":"01fb9c4b-7c47-4c4e-86cc-d4d3ebce5985","deltas":40,"firstMs":1795809101355,"gaps":0,"lastMs":1795809101355,"resource":"configmaps","throughMs":1795809101517},{"bytes":103378,"cluster":"01fb9c4b-7c47-4c4e-86cc-d4d3ebce5985","deltas":47,"firstMs":1795809101572,"gaps":0,"lastMs":1795809112078,"resource":"deployments.apps","throughMs":1795809112599}],"unavailable":null}"#;

    /// serve's answer for a file that is not a database.
    const UNAVAILABLE: &str = r#"{"cluster":null,"history":null,"recording":null,"resources":[],"unavailable":"no history: the history database sqlite:/tmp/ds-garbage.sqlite cannot be read (file is not a database); deltascope left it as it is; serving live only"}"#;

    #[test]
    fn reads_what_serve_says_while_recording() {
        let summary = parse_summary(RECORDING.as_bytes()).expect("a summary");
        assert_eq!(
            summary.history.as_deref(),
            Some("sqlite:/tmp/ds-sample.sqlite")
        );
        assert_eq!(summary.unavailable, None);
        let recording = summary.recording.expect("recording");
        assert_eq!(recording.resources, 16);
        assert_eq!(recording.deltas_written, 556);
        assert_eq!(recording.state, "recording 16 resources; 556 deltas stored");
        assert_eq!(recording.last_write_ms, Some(1_795_809_112_701));
        assert_eq!(summary.resources.len(), 2);
        assert_eq!(summary.resources[1].resource, "deployments.apps");
        assert_eq!(summary.resources[1].deltas, 47);
        assert_eq!(summary.resources[1].first_ms, Some(1_795_809_101_572));
        assert_eq!(summary.resources[1].through_ms, Some(1_795_809_112_599));
    }

    #[test]
    fn reads_why_serve_keeps_none() {
        let summary = parse_summary(UNAVAILABLE.as_bytes()).expect("a summary");
        assert_eq!(summary.history, None);
        assert_eq!(summary.recording, None);
        assert!(summary
            .unavailable
            .as_deref()
            .is_some_and(|why| why.starts_with("no history: ")));
        let off = parse_summary(
            br#"{"cluster":"u","history":null,"recording":null,"resources":[],"unavailable":null}"#,
        )
        .expect("a summary");
        assert_eq!(
            (off.history, off.unavailable, off.recording),
            (None, None, None)
        );
    }

    #[test]
    fn fields_added_later_are_ignored() {
        let summary = parse_summary(
            br#"{"history":"postgres://team@db/history","recording":null,"retention":{"days":14},"resources":[{"resource":"pods","newField":1}]}"#,
        )
        .expect("a summary");
        assert_eq!(summary.resources[0].resource, "pods");
    }

    #[test]
    fn what_is_not_a_summary_is_refused() {
        let html = b"<!DOCTYPE html><html><head><title>deltascope</title></head></html>";
        assert!(matches!(parse_summary(html), Err(SummaryError::NotJson(_))));
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}"#;
        assert_eq!(parse_summary(status), Err(SummaryError::NotSummary));
        assert_eq!(parse_summary(b"[1,2]"), Err(SummaryError::NotSummary));
        assert!(parse_summary(br#"{"recording":"yes"}"#).is_err());
    }

    #[test]
    fn a_status_body_gives_its_message() {
        let status = br#"{"apiVersion":"v1","code":404,"kind":"Status","message":"this serve keeps no history (--history off)","metadata":{},"reason":"NotFound","status":"Failure"}"#;
        assert_eq!(
            status_message(status).as_deref(),
            Some("this serve keeps no history (--history off)")
        );
        assert_eq!(status_message(b"404 page not found"), None);
        assert_eq!(status_message(br#"{"message":"not a Status"}"#), None);
    }
}
