//! Resource usage in the database (`ds_usage`, schema version 3): the
//! sampler's windows written many rows to a statement inside the writer's
//! batch, read back for one object or summed per window for an owner's
//! pods, thinned to the points asked for, evicted by retention's cut, and
//! counted in `ds_usage_totals` so the summary never scans the samples.
//!
//! A window stored twice (a sampler restarted within it) is kept once: the
//! key is (cluster, resource, namespace, name, window time).

use sqlx::{Any, Transaction};

use super::rows::StatementRows;
use super::HistoryStore;
use crate::error::HistoryError;
use crate::record::ClusterId;
use crate::usage::{
    pack_containers, thin, unpack_containers, UsagePoint, UsageQuery, UsageRecord, UsageSeries,
    UsageSummary, UsageTarget, MAX_USAGE_POINTS,
};

/// Parameters of one sample's row.
const COLUMNS: usize = 11;

/// Stores `record`'s samples for `cluster_id` in `tx`, `per_statement` rows
/// to a statement, and moves the totals on by the rows that were new.
pub(super) async fn store_usage(
    tx: &mut Transaction<'static, Any>,
    per_statement: StatementRows,
    cluster_id: i64,
    record: &UsageRecord,
) -> Result<(), HistoryError> {
    let mut inserted: u64 = 0;
    for chunk in record.samples.chunks(per_statement.deltas.max(1)) {
        let mut sql = String::from(
            "INSERT INTO ds_usage (cluster_id, resource, namespace, name, at_ms, window_ms, \
             cpu, memory, containers, controller, workload) VALUES ",
        );
        per_statement
            .engine
            .push_rows(&mut sql, 1, chunk.len(), COLUMNS);
        sql.push_str(" ON CONFLICT (cluster_id, resource, namespace, name, at_ms) DO NOTHING");
        let packed: Vec<Vec<u8>> = chunk
            .iter()
            .map(|s| pack_containers(&s.containers))
            .collect();
        let mut insert = sqlx::query(&sql);
        for (sample, containers) in chunk.iter().zip(&packed) {
            insert = insert
                .bind(cluster_id)
                .bind(record.resource.as_str())
                .bind(sample.namespace.as_str())
                .bind(sample.name.as_str())
                .bind(record.at_ms)
                .bind(record.window_ms)
                .bind(sample.cpu_nanocores)
                .bind(sample.memory_bytes)
                .bind(containers.as_slice())
                .bind(sample.controller.as_str())
                .bind(sample.workload.as_str());
        }
        inserted += insert
            .execute(&mut **tx)
            .await
            .map_err(HistoryError::database("stored usage samples"))?
            .rows_affected();
    }
    if inserted == 0 {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO ds_usage_totals (cluster_id, resource, samples, first_ms, last_ms) \
         VALUES ($1, $2, $3, $4, $4) ON CONFLICT (cluster_id, resource) DO UPDATE SET \
         samples = ds_usage_totals.samples + excluded.samples, \
         first_ms = CASE WHEN ds_usage_totals.first_ms IS NULL \
           OR excluded.first_ms < ds_usage_totals.first_ms \
           THEN excluded.first_ms ELSE ds_usage_totals.first_ms END, \
         last_ms = CASE WHEN ds_usage_totals.last_ms IS NULL \
           OR excluded.last_ms > ds_usage_totals.last_ms \
           THEN excluded.last_ms ELSE ds_usage_totals.last_ms END",
    )
    .bind(cluster_id)
    .bind(record.resource.as_str())
    .bind(i64::try_from(inserted).unwrap_or(i64::MAX))
    .bind(record.at_ms)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("counted usage samples"))?;
    Ok(())
}

/// A sample's row as read for one object.
type ObjectRow = (i64, i64, i64, i64, Vec<u8>);
/// An owner's window: time, window, CPU and memory summed, pods.
type OwnerRow = (i64, i64, i64, i64, i64);

impl HistoryStore {
    /// `query`'s samples in time order (thinned to `query.points`), with the
    /// gaps of the pods' (or nodes') record over the range; an empty series
    /// when nothing was recorded for it.
    pub async fn usage(
        &self,
        cluster: &ClusterId,
        query: &UsageQuery,
    ) -> Result<UsageSeries, HistoryError> {
        let cluster_id: Option<i64> =
            sqlx::query_scalar("SELECT id FROM ds_clusters WHERE uid = $1")
                .bind(&cluster.0)
                .fetch_optional(&self.pool)
                .await
                .map_err(HistoryError::database("looked up a cluster"))?;
        let Some(cluster_id) = cluster_id else {
            return Ok(UsageSeries::default());
        };
        let points = match &query.target {
            UsageTarget::Name(name) => self.object_usage(cluster_id, query, name).await?,
            UsageTarget::Owner(owner) => self.owner_usage(cluster_id, query, owner).await?,
        };
        let window_ms = points.last().map(|p| p.window_ms);
        let range = (query.since_ms, query.until_ms);
        let (points, thinned) = thin(points, range, query.points.clamp(1, MAX_USAGE_POINTS));
        let gaps = match self
            .find_resource(&cluster.0, query.resource.as_str())
            .await?
        {
            Some(resource_id) => self.gaps_between(resource_id, range).await?,
            None => Vec::new(),
        };
        Ok(UsageSeries {
            points,
            window_ms,
            thinned,
            gaps,
        })
    }

    /// One object's windows, read through the key.
    async fn object_usage(
        &self,
        cluster_id: i64,
        query: &UsageQuery,
        name: &str,
    ) -> Result<Vec<UsagePoint>, HistoryError> {
        let rows: Vec<ObjectRow> = sqlx::query_as(
            "SELECT at_ms, window_ms, cpu, memory, containers FROM ds_usage \
             WHERE cluster_id = $1 AND resource = $2 AND namespace = $3 AND name = $4 \
             AND at_ms >= $5 AND at_ms < $6 ORDER BY at_ms",
        )
        .bind(cluster_id)
        .bind(query.resource.as_str())
        .bind(query.namespace.clone().unwrap_or_default())
        .bind(name)
        .bind(query.since_ms)
        .bind(query.until_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("read an object's usage"))?;
        rows.into_iter()
            .map(|(at_ms, window_ms, cpu, memory, containers)| {
                let containers =
                    unpack_containers(&containers).map_err(|error| HistoryError::Corrupt {
                        resource: query.resource.api_name().to_string(),
                        object: name.to_string(),
                        detail: error.to_string(),
                    })?;
                Ok(UsagePoint {
                    at_ms,
                    window_ms,
                    cpu_nanocores: cpu,
                    memory_bytes: memory,
                    pods: None,
                    containers,
                })
            })
            .collect()
    }

    /// An owner's pods summed per window: those whose controller or top
    /// workload is `owner` (each pod once, whichever matched).
    async fn owner_usage(
        &self,
        cluster_id: i64,
        query: &UsageQuery,
        owner: &str,
    ) -> Result<Vec<UsagePoint>, HistoryError> {
        let rows: Vec<OwnerRow> = sqlx::query_as(
            "SELECT at_ms, MAX(window_ms), CAST(SUM(cpu) AS BIGINT), CAST(SUM(memory) AS BIGINT), \
             COUNT(*) FROM ds_usage \
             WHERE cluster_id = $1 AND resource = $2 AND namespace = $3 \
             AND (workload = $4 OR controller = $4) AND at_ms >= $5 AND at_ms < $6 \
             GROUP BY at_ms ORDER BY at_ms",
        )
        .bind(cluster_id)
        .bind(query.resource.as_str())
        .bind(query.namespace.clone().unwrap_or_default())
        .bind(owner)
        .bind(query.since_ms)
        .bind(query.until_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("summed an owner's usage"))?;
        Ok(rows
            .into_iter()
            .map(|(at_ms, window_ms, cpu, memory, pods)| UsagePoint {
                at_ms,
                window_ms,
                cpu_nanocores: cpu,
                memory_bytes: memory,
                pods: Some(pods),
                containers: Vec::new(),
            })
            .collect())
    }

    /// Samples held in the whole database; `None` when there are none.
    pub async fn usage_summary(&self) -> Result<Option<UsageSummary>, HistoryError> {
        let (samples, first_ms, last_ms): (Option<i64>, Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT CAST(SUM(samples) AS BIGINT), MIN(first_ms), MAX(last_ms) \
                 FROM ds_usage_totals",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(HistoryError::database("summed up the usage samples"))?;
        Ok(samples.filter(|n| *n > 0).map(|samples| UsageSummary {
            samples,
            first_ms,
            last_ms,
        }))
    }

    /// Evicts every sample of a window before `cut`; returns how many.
    pub(super) async fn evict_usage_before(&self, cut: i64) -> Result<u64, HistoryError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(HistoryError::database("began a usage eviction"))?;
        let groups: Vec<(i64, String, i64)> = sqlx::query_as(
            "SELECT cluster_id, resource, COUNT(*) FROM ds_usage WHERE at_ms < $1 \
             GROUP BY cluster_id, resource",
        )
        .bind(cut)
        .fetch_all(&mut *tx)
        .await
        .map_err(HistoryError::database("counted the usage to evict"))?;
        if groups.is_empty() {
            return Ok(0);
        }
        let evicted = sqlx::query("DELETE FROM ds_usage WHERE at_ms < $1")
            .bind(cut)
            .execute(&mut *tx)
            .await
            .map_err(HistoryError::database("evicted usage samples"))?
            .rows_affected();
        for (cluster_id, resource, count) in groups {
            sqlx::query(
                // what is left starts at the cut or after, as a resource's
                // deltas do after an eviction
                "UPDATE ds_usage_totals SET samples = samples - $1, \
                 first_ms = CASE WHEN samples - $1 > 0 THEN $4 ELSE NULL END, \
                 last_ms = CASE WHEN samples - $1 > 0 THEN last_ms ELSE NULL END \
                 WHERE cluster_id = $2 AND resource = $3",
            )
            .bind(count)
            .bind(cluster_id)
            .bind(resource)
            .bind(cut)
            .execute(&mut *tx)
            .await
            .map_err(HistoryError::database("recounted the usage samples"))?;
        }
        tx.commit()
            .await
            .map_err(HistoryError::database("committed a usage eviction"))?;
        Ok(evicted)
    }

    /// Samples held, from the totals (PostgreSQL's size estimate).
    pub(super) async fn usage_samples(&self) -> Result<i64, HistoryError> {
        Ok(self.usage_summary().await?.map_or(0, |s| s.samples))
    }
}
