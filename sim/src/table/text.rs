//! How a Table cell writes a value, as kubectl prints it: a field as text
//! (`<none>` when absent or empty), a timestamp as an age.

use deltascope_facts::time;
use serde_json::Value;

/// kubectl's age of an RFC 3339 timestamp field; `<unknown>` if absent.
pub(super) fn age_of(ts: &Value, now: i64) -> String {
    ts.as_str()
        .map(|t| time::age_of(t, now))
        .unwrap_or_else(|| "<unknown>".to_string())
}

pub(super) fn s(v: &Value) -> String {
    match v {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "<none>".to_string(),
    }
}
