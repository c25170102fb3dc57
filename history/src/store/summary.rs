//! What the database holds, per cluster and resource: the first and last
//! recorded time, the deltas held and their bytes (running totals kept by
//! every write and eviction, so this never scans the deltas), and the gaps.

use serde::Serialize;

use super::HistoryStore;
use crate::error::HistoryError;

/// One cluster's resource in `GET /_deltascope/history/summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    pub cluster: String,
    pub resource: String,
    /// ms since the Unix epoch; `None` before the first delta.
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub deltas: i64,
    /// Bytes the stored bodies take (deflated).
    pub bytes: i64,
    pub gaps: i64,
    /// How far the record is known complete.
    pub through_ms: Option<i64>,
}

type SummaryRow = (
    String,
    String,
    Option<i64>,
    Option<i64>,
    i64,
    i64,
    i64,
    Option<i64>,
);

impl HistoryStore {
    /// Every recorded resource of every cluster, by cluster then resource.
    pub async fn summary(&self) -> Result<Vec<ResourceSummary>, HistoryError> {
        let rows: Vec<SummaryRow> = sqlx::query_as(
            "SELECT c.uid, r.name, r.first_ms, r.last_ms, r.deltas, r.bytes, \
             (SELECT COUNT(*) FROM ds_gaps g WHERE g.resource_id = r.id), \
             (SELECT w.through_ms FROM ds_watermarks w WHERE w.resource_id = r.id) \
             FROM ds_resources r JOIN ds_clusters c ON c.id = r.cluster_id \
             ORDER BY c.uid, r.name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("summed up the record"))?;
        Ok(rows
            .into_iter()
            .map(
                |(cluster, resource, first_ms, last_ms, deltas, bytes, gaps, through_ms)| {
                    ResourceSummary {
                        cluster,
                        resource,
                        first_ms,
                        last_ms,
                        deltas,
                        bytes,
                        gaps,
                        through_ms,
                    }
                },
            )
            .collect())
    }
}
