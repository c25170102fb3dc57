//! Decoding of what the API server sends: watch event lines
//! (`{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": …}`), list
//! bodies (`{"metadata": {"resourceVersion", "continue"}, "items": […]}`) and
//! `Status` error bodies.
//!
//! `Status` and `ListMeta` are small hand-written serde structs rather than
//! kube-core's: kube-core pulls in k8s-openapi/http/chrono and a feature
//! choice of Kubernetes version, which costs far more build time than the
//! handful of fields read here, and we need objects to stay untyped JSON
//! (any kind, CRDs) anyway. Every decode failure is an error value, never a
//! panic.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::json::JsonValue;
use super::object::{KubeObject, ObjectError, ObjectRef};

/// The annotation on the BOOKMARK that ends a streaming list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A `metav1.Status` as sent in error bodies and watch ERROR events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Status {
    pub status: String,
    pub message: String,
    pub reason: String,
    pub code: u16,
    pub details: Option<StatusDetails>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct StatusDetails {
    pub name: String,
    pub kind: String,
    pub causes: Vec<StatusCause>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct StatusCause {
    #[serde(rename = "reason")]
    pub kind: String,
    pub message: String,
    pub field: String,
}

impl Status {
    /// Parses an error body; `None` if it is not a Status (e.g. an HTML page
    /// from a proxy).
    pub fn from_body(body: &[u8]) -> Option<Status> {
        let v: Value = serde_json::from_slice(body).ok()?;
        if v.get("kind").and_then(Value::as_str) != Some("Status") && v.get("code").is_none() {
            return None;
        }
        serde_json::from_value(v).ok()
    }

    /// 410 Gone / reason Expired or Gone: the requested resourceVersion is no
    /// longer in the server's history.
    pub fn is_expired(&self) -> bool {
        self.code == 410 || self.reason == "Expired" || self.reason == "Gone"
    }

    /// The apiserver's "resourceVersion too large" (504 with cause
    /// `ResourceVersionTooLarge`), which client-go treats like expired.
    pub fn is_too_large_rv(&self) -> bool {
        self.message.contains("Too large resource version")
            || self
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.kind == "ResourceVersionTooLarge"))
    }
}

/// One decoded watch event.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(ObjectRef),
    Modified(ObjectRef),
    Deleted(ObjectRef),
    /// Progress notification: only the resourceVersion is meaningful.
    Bookmark {
        resource_version: String,
        /// carries `k8s.io/initial-events-end: "true"` (end of a streaming list)
        initial_events_end: bool,
    },
    Error(Status),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the watch event is not valid JSON: {0}")]
    Json(String),
    #[error("the watch event has an unknown type {0:?}")]
    UnknownType(String),
    #[error("the watch event has no object")]
    MissingObject,
    #[error("the watch event's object is unusable: {0}")]
    Object(#[from] ObjectError),
    #[error("the list response is not valid JSON: {0}")]
    ListJson(String),
    #[error("item {index} of the list is unusable: {source}")]
    ListItem { index: usize, source: ObjectError },
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    /// borrowed when the line has no escapes (always, for real events)
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default)]
    object: Option<JsonValue>,
}

fn bookmark_of(object: &JsonValue) -> WatchEvent {
    let meta = object.get("metadata");
    let resource_version = meta
        .and_then(|m| m.get("resourceVersion"))
        .and_then(JsonValue::as_str)
        .unwrap_or_default()
        .to_owned();
    let initial_events_end = meta
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(INITIAL_EVENTS_END))
        .and_then(JsonValue::as_str)
        == Some("true");
    WatchEvent::Bookmark {
        resource_version,
        initial_events_end,
    }
}

/// Decodes one watch line.
pub fn decode_event(line: &[u8]) -> Result<WatchEvent, DecodeError> {
    let raw: RawEvent =
        serde_json::from_slice(line).map_err(|e| DecodeError::Json(e.to_string()))?;
    let object = raw.object.ok_or(DecodeError::MissingObject)?;
    let obj = |v: JsonValue| KubeObject::from_json(v).map(Arc::new);
    Ok(match raw.kind.as_ref() {
        "ADDED" => WatchEvent::Added(obj(object)?),
        "MODIFIED" => WatchEvent::Modified(obj(object)?),
        "DELETED" => WatchEvent::Deleted(obj(object)?),
        "BOOKMARK" => bookmark_of(&object),
        "ERROR" => WatchEvent::Error(serde_json::from_value(object.to_json()).unwrap_or_default()),
        other => return Err(DecodeError::UnknownType(other.to_owned())),
    })
}

/// One page of a list response.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    pub resource_version: String,
    /// `metadata.continue`; `None` when this is the last page.
    pub continue_token: Option<String>,
    pub items: Vec<ObjectRef>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Option<Vec<JsonValue>>,
}

/// Decodes a list body.
pub fn decode_list(body: &[u8]) -> Result<ListPage, DecodeError> {
    let raw: RawList =
        serde_json::from_slice(body).map_err(|e| DecodeError::ListJson(e.to_string()))?;
    let values = raw.items.unwrap_or_default();
    let mut items = Vec::with_capacity(values.len());
    for (index, v) in values.into_iter().enumerate() {
        items.push(Arc::new(
            KubeObject::from_json(v).map_err(|source| DecodeError::ListItem { index, source })?,
        ));
    }
    Ok(ListPage {
        resource_version: raw.metadata.resource_version,
        continue_token: raw.metadata.continue_token.filter(|c| !c.is_empty()),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_all_event_types() {
        // client-go watch.EventType: Added/Modified/Deleted/Bookmark/Error
        let a = decode_event(br#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}}"#).unwrap();
        assert!(matches!(&a, WatchEvent::Added(o) if o.key == "n/a" && o.resource_version == "5"));
        assert!(matches!(
            decode_event(br#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}"#),
            Ok(WatchEvent::Modified(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"DELETED","object":{"metadata":{"name":"a"}}}"#),
            Ok(WatchEvent::Deleted(_))
        ));
        assert_eq!(
            decode_event(br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}"#).unwrap(),
            WatchEvent::Bookmark { resource_version: "12".into(), initial_events_end: true }
        );
        assert_eq!(
            decode_event(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"13"}}}"#)
                .unwrap(),
            WatchEvent::Bookmark {
                resource_version: "13".into(),
                initial_events_end: false
            }
        );
        let e = decode_event(br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}}"#).unwrap();
        match e {
            WatchEvent::Error(s) => {
                assert!(s.is_expired());
                assert_eq!(s.message, "too old resource version: 1 (5)");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn undecodable_lines_are_errors() {
        assert!(matches!(
            decode_event(b"garbage"),
            Err(DecodeError::Json(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"WAT","object":{}}"#),
            Err(DecodeError::UnknownType(_))
        ));
        assert!(matches!(
            decode_event(br#"{"type":"ADDED"}"#),
            Err(DecodeError::MissingObject)
        ));
        assert!(matches!(
            decode_event(br#"{"type":"ADDED","object":{"metadata":{}}}"#),
            Err(DecodeError::Object(_))
        ));
    }

    #[test]
    fn list_pages() {
        let p = decode_list(br#"{"kind":"PodList","metadata":{"resourceVersion":"9","continue":"tok"},"items":[{"metadata":{"name":"a"}}]}"#).unwrap();
        assert_eq!(p.resource_version, "9");
        assert_eq!(p.continue_token.as_deref(), Some("tok"));
        assert_eq!(p.items.len(), 1);
        let p = decode_list(br#"{"metadata":{"resourceVersion":"9","continue":""},"items":null}"#)
            .unwrap();
        assert_eq!(p.continue_token, None);
        assert!(p.items.is_empty());
        assert!(decode_list(br#"{"items":[{"metadata":{}}]}"#).is_err());
        assert!(decode_list(b"<html>").is_err());
    }

    #[test]
    fn status_bodies() {
        let s = Status::from_body(br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}"#).unwrap();
        assert_eq!(s.code, 403);
        assert_eq!(s.reason, "Forbidden");
        assert!(Status::from_body(b"<html>").is_none());
        let s = Status::from_body(br#"{"kind":"Status","code":504,"details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"x"}]}}"#).unwrap();
        assert!(s.is_too_large_rv());
    }
}
