//! `metav1.Status`: the body of every Kubernetes API error and of watch
//! `ERROR` events. The simulated cluster and `deltascope serve` build them
//! with [`Status::failure`]; the page's reflector reads them with
//! [`Status::from_body`] and decides from [`Status::is_expired`] and
//! [`Status::is_too_large_rv`] whether to relist. One type for both sides,
//! so what the servers write is exactly what the reader understands.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A `metav1.Status`. Fields absent from a body read as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Status {
    /// `Failure` or `Success`.
    pub status: String,
    pub message: String,
    /// A CamelCase machine-readable reason: `NotFound`, `Expired`, `Forbidden`…
    pub reason: String,
    /// The HTTP status code the response carried.
    pub code: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
}

/// `metav1.StatusDetails`: which object the error is about, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait (429, 503); 0 when absent.
    #[serde(skip_serializing_if = "is_zero")]
    pub retry_after_seconds: u64,
}

/// `metav1.StatusCause`. Empty fields are omitted, as the apiserver
/// (`omitempty`) writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusCause {
    #[serde(rename = "reason", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Status {
    /// A `status: Failure` with its HTTP code, reason and message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Status {
        Status {
            status: "Failure".to_string(),
            message: message.into(),
            reason: reason.to_string(),
            code,
            details: None,
        }
    }

    /// The same with `details` set.
    pub fn with_details(mut self, details: StatusDetails) -> Status {
        self.details = Some(details);
        self
    }

    /// The full object as the apiserver writes it (`kind`, `apiVersion`,
    /// empty `metadata`, then the fields).
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}});
        if let (Value::Object(object), Ok(Value::Object(fields))) =
            (&mut value, serde_json::to_value(self))
        {
            object.extend(fields);
        }
        value
    }

    /// [`Status::to_value`] as bytes for a response body.
    pub fn to_body(&self) -> Vec<u8> {
        self.to_value().to_string().into_bytes()
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn written_as_the_apiserver_writes_it() {
        let status =
            Status::failure(404, "NotFound", "pods \"x\" not found").with_details(StatusDetails {
                name: "x".into(),
                kind: "pods".into(),
                ..StatusDetails::default()
            });
        assert_eq!(
            status.to_value(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "pods \"x\" not found", "reason": "NotFound", "code": 404,
                   "details": {"name": "x", "kind": "pods"}})
        );
    }

    #[test]
    fn what_is_written_reads_back() {
        let status =
            Status::failure(429, "TooManyRequests", "slow down").with_details(StatusDetails {
                retry_after_seconds: 3,
                ..StatusDetails::default()
            });
        assert_eq!(Status::from_body(&status.to_body()), Some(status));
    }

    #[test]
    fn non_status_bodies_are_not_statuses() {
        assert_eq!(Status::from_body(b"<html>bad gateway</html>"), None);
        assert_eq!(Status::from_body(br#"{"kind":"PodList"}"#), None);
    }

    #[test]
    fn expiry_and_too_large_resource_versions() {
        assert!(Status::failure(410, "Expired", "too old").is_expired());
        assert!(Status::failure(500, "Gone", "").is_expired());
        assert!(!Status::failure(500, "InternalError", "").is_expired());
        let too_large = Status::from_body(
            &serde_json::to_vec(&json!({"kind": "Status", "code": 504, "reason": "Timeout",
                "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]}}))
            .unwrap_or_default(),
        );
        assert!(too_large.is_some_and(|s| s.is_too_large_rv()));
    }
}
