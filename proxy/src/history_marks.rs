//! `GET /_deltascope/history/marks?resource=R&since=T&until=T&buckets=N[&namespace=NS]`:
//! the recorded deltas of `[since, until)` counted per bucket and type, and
//! the record's gaps there — what the page's timeline draws for the time
//! before it opened, without a body sent. Parameters are checked by
//! `crate::history_api::parse_params`; the answer:
//!
//! ```json
//! {"resource":"pods","since":T,"until":T,"buckets":N,
//!  "types":["Added","Updated","Deleted","Replaced","Sync"],
//!  "counts":[[bucket,added,updated,deleted,replaced,sync],…],
//!  "gaps":[{"from":T,"to":T,"reason":"unreachable"}],"first":T|null}
//! ```
//!
//! `counts` lists only buckets with deltas, in order; bucket `b` covers
//! `since + b·(until−since)/N` up to the next one.

use std::sync::Arc;

use deltascope_facts::time::format_rfc3339_millis;
use deltascope_history::{ClusterId, HistoryError, HistoryStore, Marks, MarksQuery};
use serde_json::{json, Value};

/// The marks of `query` as the route answers them (see the module doc);
/// `None` when the resource was never recorded for `cluster`.
pub async fn marks(
    store: &Arc<HistoryStore>,
    cluster: &ClusterId,
    query: &MarksQuery,
) -> Result<Option<Value>, HistoryError> {
    Ok(store
        .marks(cluster, query)
        .await?
        .map(|marks| body(query, &marks)))
}

fn time(ms: i64) -> Value {
    format_rfc3339_millis(ms).map_or(Value::Null, Value::String)
}

/// The answer's JSON (see the module doc).
pub fn body(query: &MarksQuery, marks: &Marks) -> Value {
    let counts: Vec<Value> = marks
        .buckets
        .iter()
        .map(|(bucket, c)| json!([bucket, c.added, c.updated, c.deleted, c.replaced, c.sync]))
        .collect();
    let gaps: Vec<Value> = marks
        .gaps
        .iter()
        .map(|gap| json!({"from": time(gap.from_ms), "to": time(gap.to_ms), "reason": gap.reason.as_str()}))
        .collect();
    json!({
        "resource": query.resource,
        "since": time(query.since_ms),
        "until": time(query.until_ms),
        "buckets": query.buckets.clamp(1, deltascope_history::MAX_MARK_BUCKETS),
        "types": ["Added", "Updated", "Deleted", "Replaced", "Sync"],
        "counts": counts,
        "gaps": gaps,
        "first": marks.first_ms.map_or(Value::Null, time),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltascope_history::{BucketCounts, GapReason, MarkGap};

    #[test]
    fn the_answer_names_its_columns_and_lists_only_buckets_with_deltas() {
        let query = MarksQuery {
            resource: "pods".into(),
            namespace: None,
            since_ms: 0,
            until_ms: 10_000,
            buckets: 10,
        };
        let marks = Marks {
            buckets: vec![(
                3,
                BucketCounts {
                    added: 2,
                    sync: 1,
                    ..Default::default()
                },
            )],
            gaps: vec![MarkGap {
                from_ms: 1_000,
                to_ms: 2_000,
                reason: GapReason::NotRunning,
            }],
            first_ms: Some(500),
        };
        let value = body(&query, &marks);
        assert_eq!(value["counts"], json!([[3, 2, 0, 0, 0, 1]]));
        assert_eq!(value["types"][4], "Sync");
        assert_eq!(value["gaps"][0]["reason"], "not-running");
        assert_eq!(value["gaps"][0]["from"], "1970-01-01T00:00:01.000Z");
        assert_eq!(value["first"], "1970-01-01T00:00:00.500Z");
        assert_eq!(value["buckets"], 10);
    }
}
