//! One object's record from deltascope serve: the answer to
//! `GET /_deltascope/history?resource=R&namespace=NS&name=N[&until=T]`
//! (ARCHITECTURE.md's History contracts) read into versions the object
//! view can show beside the page's own — each line's time (`time`, RFC 3339
//! with milliseconds), client-go delta type, resourceVersion, field managers
//! and the object itself — and the record's gap lines
//! (`{"gap":{"from":T,"to":T,"reason":R}}`), spans the recorder did not
//! watch. Strict where the page would show something wrong (a line that is
//! neither, an object without a name, a time that is none: the whole answer
//! is refused with the line's number), lenient about fields serve adds
//! later. Which versions are shown, and how they join the page's own, is
//! `crate::model::object_versions`; the request's path is written here too
//! ([`object_history_path`]) so the query's format lives in one place.

use serde::Deserialize;

use crate::informer::json::JsonValue;
use crate::informer::{DeltaType, KubeObject, ObjectRef};
use deltascope_facts::percent::encode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};

/// serve's history of objects.
pub const HISTORY_PATH: &str = "/_deltascope/history";

/// One recorded version of the object.
#[derive(Debug, Clone)]
pub struct RecordedVersion {
    /// When serve's recorder received it (ms since the Unix epoch).
    pub time_ms: i64,
    pub kind: DeltaType,
    /// A relist found it gone (the object is its last known state).
    pub tombstone: bool,
    /// The field managers serve recorded for it (none for a relist's or a
    /// deletion's line).
    pub managers: Vec<String>,
    pub object: ObjectRef,
}

impl RecordedVersion {
    pub fn resource_version(&self) -> &str {
        &self.object.resource_version
    }
}

/// A span the recorder did not watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordGap {
    pub from_ms: i64,
    pub to_ms: i64,
    /// `not-running`, `unreachable`, `expired`, `database-unavailable`, `not-kept`.
    pub reason: String,
}

/// The object's record, in serve's (time) order.
#[derive(Debug, Clone, Default)]
pub struct ObjectRecord {
    pub versions: Vec<RecordedVersion>,
    pub gaps: Vec<RecordGap>,
}

/// Why an answer is not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("line {line} of serve's record is not a recorded delta: {message}")]
    BadLine { line: usize, message: String },
}

/// A delta line, as serve writes it (fields the page does not use ignored).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaLine {
    time: String,
    delta_type: String,
    #[serde(default)]
    managers: Vec<String>,
    #[serde(default)]
    tombstone: bool,
    /// Read straight into the informer's compact form (no `serde_json::Value` between).
    object: JsonValue,
}

#[derive(Deserialize)]
struct GapLine {
    gap: GapFields,
}

/// A gap as serve's history routes write it: `{"from","to","reason"}`,
/// times in RFC 3339 (read by the marks and usage answers too).
#[derive(Deserialize)]
pub struct GapFields {
    from: String,
    to: String,
    #[serde(default)]
    reason: String,
}

impl GapFields {
    /// The gap, or the text that is not an RFC 3339 time.
    pub fn read(self) -> Result<RecordGap, String> {
        let time = |text: String| parse_rfc3339_millis(&text).ok_or(text);
        Ok(RecordGap {
            from_ms: time(self.from)?,
            to_ms: time(self.to)?,
            reason: self.reason,
        })
    }
}

/// `GET /_deltascope/history` for one object (`namespace` empty for a
/// cluster-scoped one), up to `until_ms` when given, only its `newest`
/// versions there when given.
pub fn object_history_path(
    resource: &str,
    namespace: &str,
    name: &str,
    until_ms: Option<i64>,
    newest: Option<usize>,
) -> String {
    let mut path = format!("{HISTORY_PATH}?resource={}", encode_query_value(resource));
    if !namespace.is_empty() {
        path.push_str("&namespace=");
        path.push_str(&encode_query_value(namespace));
    }
    path.push_str("&name=");
    path.push_str(&encode_query_value(name));
    push_time(&mut path, "until", until_ms);
    if let Some(newest) = newest {
        path.push_str(&format!("&newest={newest}"));
    }
    path
}

/// The path of a resource's record (of one namespace when given) from
/// `since_ms` to `until_ms` (ms since the Unix epoch; serve's whole record
/// when not given), e.g. what an export or a story reaches back for.
pub fn resource_history_path(
    resource: &str,
    namespace: Option<&str>,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
) -> String {
    let mut path = format!("{HISTORY_PATH}?resource={}", encode_query_value(resource));
    if let Some(namespace) = namespace {
        path.push_str("&namespace=");
        path.push_str(&encode_query_value(namespace));
    }
    push_time(&mut path, "since", since_ms);
    push_time(&mut path, "until", until_ms);
    path
}

/// `&name=T` with the time in RFC 3339 (nothing for a time that is none).
fn push_time(path: &mut String, name: &str, ms: Option<i64>) {
    if let Some(time) = ms.and_then(format_rfc3339_millis) {
        path.push('&');
        path.push_str(name);
        path.push('=');
        path.push_str(&encode_query_value(&time));
    }
}

/// Reads serve's answer (NDJSON); errors name the line.
pub fn parse_object_record(body: &[u8]) -> Result<ObjectRecord, RecordError> {
    let text = std::str::from_utf8(body).map_err(|e| RecordError::BadLine {
        line: 1 + body[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count(),
        message: "not UTF-8".into(),
    })?;
    let mut record = ObjectRecord::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| RecordError::BadLine {
            line: index + 1,
            message,
        };
        if line.trim_start().starts_with("{\"gap\"") {
            let gap: GapLine =
                serde_json::from_slice(line.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let gap = gap
                .gap
                .read()
                .map_err(|text| bad(format!("{text:?} is not an RFC 3339 time")))?;
            record.gaps.push(gap);
            continue;
        }
        let delta: DeltaLine =
            serde_json::from_slice(line.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let kind = delta_type(&delta.delta_type)
            .ok_or_else(|| bad(format!("unknown deltaType {:?}", delta.delta_type)))?;
        let object = KubeObject::from_json(delta.object).map_err(|e| bad(e.to_string()))?;
        record.versions.push(RecordedVersion {
            time_ms: time(&delta.time).map_err(&bad)?,
            kind,
            tombstone: delta.tombstone,
            managers: delta.managers,
            object: object.into_ref(),
        });
    }
    Ok(record)
}

fn time(text: &str) -> Result<i64, String> {
    parse_rfc3339_millis(text).ok_or_else(|| format!("{text:?} is not an RFC 3339 time"))
}

fn delta_type(text: &str) -> Option<DeltaType> {
    Some(match text {
        "Added" => DeltaType::Added,
        "Updated" => DeltaType::Updated,
        "Deleted" => DeltaType::Deleted,
        "Replaced" => DeltaType::Replaced,
        "Sync" => DeltaType::Sync,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as serve writes them (`deltascope serve --demo --history …`,
    /// objects cut short).
    const RECORD: &str = concat!(
        r#"{"at":0,"time":"2026-11-28T01:15:28.336Z","type":"ADDED","deltaType":"Replaced","resource":"deployments.apps","resourceVersion":"30","managers":[],"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cart","namespace":"shop","uid":"d1","resourceVersion":"30","creationTimestamp":"2026-11-13T13:55:01Z"},"spec":{"replicas":2}}}"#,
        "\n",
        r#"{"gap":{"from":"2026-11-28T01:16:00.000Z","to":"2026-11-28T01:16:05.500Z","reason":"expired"}}"#,
        "\n\n",
        r#"{"at":9088,"time":"2026-11-28T01:15:37.424Z","type":"MODIFIED","deltaType":"Updated","resource":"deployments.apps","resourceVersion":"81","managers":["ops-cli"],"newField":1,"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cart","namespace":"shop","uid":"d1","resourceVersion":"81"},"spec":{"replicas":3}}}"#,
        "\n",
    );

    #[test]
    fn reads_versions_and_gaps() {
        let record = parse_object_record(RECORD.as_bytes()).expect("a record");
        assert_eq!(record.versions.len(), 2);
        let first = &record.versions[0];
        assert_eq!(first.kind, DeltaType::Replaced);
        assert_eq!(first.resource_version(), "30");
        assert_eq!(first.object.key, "shop/cart");
        assert_eq!(first.time_ms, 1_795_828_528_336);
        assert!(first.managers.is_empty() && !first.tombstone);
        let update = &record.versions[1];
        assert_eq!(
            (update.kind, update.managers.as_slice()),
            (DeltaType::Updated, ["ops-cli".to_string()].as_slice())
        );
        assert_eq!(
            record.gaps,
            [RecordGap {
                from_ms: 1_795_828_560_000,
                to_ms: 1_795_828_565_500,
                reason: "expired".into()
            }]
        );
        let empty = parse_object_record(b"").expect("an empty record");
        assert!(empty.versions.is_empty() && empty.gaps.is_empty());
    }

    #[test]
    fn a_malformed_line_is_refused_by_its_number() {
        let cut = &RECORD[..RECORD.len() - 40];
        assert!(matches!(
            parse_object_record(cut.as_bytes()),
            Err(RecordError::BadLine { line: 4, .. })
        ));
        let html = b"<!DOCTYPE html><html></html>";
        assert!(matches!(
            parse_object_record(html),
            Err(RecordError::BadLine { line: 1, .. })
        ));
        let no_name =
            br#"{"time":"2026-11-28T01:15:28.336Z","deltaType":"Added","object":{"metadata":{}}}"#;
        assert!(parse_object_record(no_name).is_err());
        let bad_time =
            br#"{"time":"yesterday","deltaType":"Added","object":{"metadata":{"name":"a"}}}"#;
        assert!(parse_object_record(bad_time).is_err());
        let bad_type = br#"{"time":"2026-11-28T01:15:28.336Z","deltaType":"Renamed","object":{"metadata":{"name":"a"}}}"#;
        assert!(parse_object_record(bad_type).is_err());
    }

    #[test]
    fn the_path_names_the_object_and_the_end() {
        assert_eq!(
            object_history_path("deployments.apps", "shop", "cart", None, None),
            "/_deltascope/history?resource=deployments.apps&namespace=shop&name=cart"
        );
        assert_eq!(
            object_history_path("nodes", "", "node-1", Some(1_795_828_528_336), Some(100)),
            "/_deltascope/history?resource=nodes&name=node-1&until=2026-11-28T01%3A15%3A28.336Z&newest=100"
        );
    }
}
