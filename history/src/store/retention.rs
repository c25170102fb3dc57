//! Retention: `--history-retention DURATION` and `--history-max-size SIZE`
//! evict the oldest records, and the evicted span of each resource becomes
//! a gap with reason `not-kept` (never silence).
//!
//! Usage samples (`ds_usage`) of a window before the cut go too.
//!
//! Eviction keeps what the state after the cut needs: for each object
//! alive at the cut, its last version before it and the chain that version
//! is rebuilt from; an object deleted before the cut goes whole. So
//! `state?at=T` answers for every T after the cut exactly as before, and
//! says "not kept" before it.
//!
//! The size is what the records take: for SQLite the file's pages in use
//! (freed pages are handed back by incremental vacuum); for PostgreSQL the
//! stored bodies plus a per-row allowance ([`PG_ROW_BYTES`]), since its
//! table sizes only shrink after a vacuum the server runs on its own.

use std::time::Duration;

use sqlx::{Any, Transaction};

use super::HistoryStore;
use crate::error::HistoryError;
use crate::record::GapReason;
use crate::schema::Engine;

/// A PostgreSQL row's bytes beyond its body: tuple header, the other
/// columns and two index entries.
pub const PG_ROW_BYTES: i64 = 160;

/// A PostgreSQL usage sample's bytes: tuple header, its columns, and the
/// entries of its key and three indexes.
pub const PG_USAGE_ROW_BYTES: i64 = 240;

/// Rounds of eviction at most per call when the size is over (each evicts
/// about a tenth of what is held).
const SIZE_ROUNDS: usize = 8;

/// What to keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Records older than this go.
    pub max_age: Option<Duration>,
    /// The oldest records go until the database takes at most this.
    pub max_bytes: Option<u64>,
}

/// What one pass evicted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub deltas_evicted: u64,
    /// The cut: nothing before it is kept (`None`: nothing evicted).
    pub cut_ms: Option<i64>,
    pub bytes_after: u64,
}

impl HistoryStore {
    /// Bytes the records take now (see the module doc).
    pub async fn used_bytes(&self) -> Result<u64, HistoryError> {
        let used: i64 = match self.engine {
            Engine::Sqlite => {
                let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(HistoryError::database("read the file's size"))?;
                let free: i64 = sqlx::query_scalar("PRAGMA freelist_count")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(HistoryError::database("read the file's free pages"))?;
                let size: i64 = sqlx::query_scalar("PRAGMA page_size")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(HistoryError::database("read the page size"))?;
                (pages - free) * size
            }
            Engine::Postgres => {
                let (bytes, deltas): (Option<i64>, Option<i64>) = sqlx::query_as(
                    "SELECT CAST(SUM(bytes) AS BIGINT), CAST(SUM(deltas) AS BIGINT) FROM ds_resources",
                )
                .fetch_one(&self.pool)
                .await
                .map_err(HistoryError::database("summed the stored bytes"))?;
                let samples = self.usage_samples().await?;
                bytes.unwrap_or(0)
                    + deltas.unwrap_or(0) * PG_ROW_BYTES
                    + samples * PG_USAGE_ROW_BYTES
            }
        };
        Ok(used.max(0) as u64)
    }

    /// Evicts what `retention` no longer keeps, as of `now_ms`.
    pub async fn enforce(
        &self,
        retention: Retention,
        now_ms: i64,
    ) -> Result<RetentionReport, HistoryError> {
        let mut report = RetentionReport::default();
        if let Some(age) = retention.max_age {
            let cut = now_ms.saturating_sub(age.as_millis().min(i64::MAX as u128) as i64);
            report.deltas_evicted += self.evict_before(cut).await?;
            report.cut_ms = Some(cut);
        }
        if let Some(max) = retention.max_bytes {
            for _ in 0..SIZE_ROUNDS {
                if self.used_bytes().await? <= max {
                    break;
                }
                let Some(cut) = self.tenth_cut().await? else {
                    break;
                };
                let evicted = self.evict_before(cut).await?;
                report.cut_ms = Some(report.cut_ms.map_or(cut, |c| c.max(cut)));
                report.deltas_evicted += evicted;
                if evicted == 0 {
                    break;
                }
            }
        }
        report.bytes_after = self.used_bytes().await?;
        Ok(report)
    }

    /// The time before which about a tenth of the held deltas lie (at
    /// least one past the oldest).
    async fn tenth_cut(&self) -> Result<Option<i64>, HistoryError> {
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ds_deltas")
            .fetch_one(&self.pool)
            .await
            .map_err(HistoryError::database("counted the deltas"))?;
        if total == 0 {
            return Ok(None);
        }
        let at: Option<i64> =
            sqlx::query_scalar("SELECT at_ms FROM ds_deltas ORDER BY at_ms LIMIT 1 OFFSET $1")
                .bind(total / 10)
                .fetch_optional(&self.pool)
                .await
                .map_err(HistoryError::database("found the oldest tenth"))?;
        Ok(at.map(|at| at + 1))
    }

    /// Evicts every resource's records before `cut`; returns the deltas
    /// evicted.
    async fn evict_before(&self, cut: i64) -> Result<u64, HistoryError> {
        let resources: Vec<(i64, Option<i64>)> =
            sqlx::query_as("SELECT id, first_ms FROM ds_resources WHERE first_ms < $1")
                .bind(cut)
                .fetch_all(&self.pool)
                .await
                .map_err(HistoryError::database("listed what to evict"))?;
        let mut evicted = 0;
        for (resource_id, first_ms) in resources {
            evicted += self
                .evict_resource(resource_id, first_ms.unwrap_or(cut), cut)
                .await?;
        }
        // usage samples go at the same cut (their span is the pods' and
        // nodes' not-kept gap)
        let samples = self.evict_usage_before(cut).await?;
        self.forget_chains();
        if self.engine == Engine::Sqlite && evicted + samples > 0 {
            sqlx::query("PRAGMA incremental_vacuum")
                .execute(&self.pool)
                .await
                .map_err(HistoryError::database("gave freed pages back"))?;
        }
        Ok(evicted)
    }

    /// Evicts one resource's records before `cut` in one transaction: its
    /// objects deleted before the cut, then the versions superseded before
    /// it, the evicted span noted as one `not-kept` gap and its totals
    /// recounted. Returns the deltas evicted.
    async fn evict_resource(
        &self,
        resource_id: i64,
        first_ms: i64,
        cut: i64,
    ) -> Result<u64, HistoryError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(HistoryError::database("began an eviction"))?;
        let gone = evict_deleted_objects(&mut tx, resource_id, cut).await?;
        let superseded = evict_superseded(&mut tx, resource_id, cut).await?;
        note_not_kept(&mut tx, resource_id, first_ms, cut).await?;
        recount(&mut tx, resource_id, cut).await?;
        tx.commit()
            .await
            .map_err(HistoryError::database("committed an eviction"))?;
        Ok(gone + superseded)
    }
}

/// Deletes the rows of `resource_id`'s objects deleted before `cut`, and
/// the objects; returns the deltas deleted.
async fn evict_deleted_objects(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    cut: i64,
) -> Result<u64, HistoryError> {
    let gone = sqlx::query(
        "DELETE FROM ds_deltas WHERE resource_id = $1 AND object_id IN \
         (SELECT id FROM ds_objects WHERE resource_id = $1 AND gone_ms < $2)",
    )
    .bind(resource_id)
    .bind(cut)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("evicted deleted objects"))?
    .rows_affected();
    sqlx::query("DELETE FROM ds_objects WHERE resource_id = $1 AND gone_ms < $2")
        .bind(resource_id)
        .bind(cut)
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("evicted deleted objects"))?;
    Ok(gone)
}

/// Deletes `resource_id`'s rows before `cut` older than the chain of each
/// object's last version before it; returns how many.
async fn evict_superseded(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    cut: i64,
) -> Result<u64, HistoryError> {
    let superseded = sqlx::query(
        "DELETE FROM ds_deltas WHERE resource_id = $1 AND at_ms < $2 AND id < \
         (SELECT COALESCE(l.base_id, l.id) FROM ds_deltas l \
          WHERE l.object_id = ds_deltas.object_id AND l.at_ms < $2 \
          ORDER BY l.at_ms DESC, l.id DESC LIMIT 1)",
    )
    .bind(resource_id)
    .bind(cut)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("evicted superseded versions"))?
    .rows_affected();
    Ok(superseded)
}

/// Replaces `resource_id`'s gaps before `cut` and its `not-kept` gap by one
/// `not-kept` gap from the earliest of that gap and `first_ms` to `cut`.
async fn note_not_kept(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    first_ms: i64,
    cut: i64,
) -> Result<(), HistoryError> {
    let (from_ms,): (Option<i64>,) =
        sqlx::query_as("SELECT MIN(from_ms) FROM ds_gaps WHERE resource_id = $1 AND reason = $2")
            .bind(resource_id)
            .bind(GapReason::NotKept.as_str())
            .fetch_one(&mut **tx)
            .await
            .map_err(HistoryError::database("read the not-kept gap"))?;
    sqlx::query("DELETE FROM ds_gaps WHERE resource_id = $1 AND (to_ms <= $2 OR reason = $3)")
        .bind(resource_id)
        .bind(cut)
        .bind(GapReason::NotKept.as_str())
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("dropped gaps before the cut"))?;
    sqlx::query(
        "INSERT INTO ds_gaps (resource_id, from_ms, to_ms, reason) VALUES ($1, $2, $3, $4)",
    )
    .bind(resource_id)
    .bind(from_ms.unwrap_or(first_ms).min(first_ms))
    .bind(cut)
    .bind(GapReason::NotKept.as_str())
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("stored the not-kept gap"))?;
    Ok(())
}

/// Sets `resource_id`'s totals to what is left, its first time to `cut`.
async fn recount(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    cut: i64,
) -> Result<(), HistoryError> {
    let (deltas, bytes): (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), CAST(SUM(LENGTH(body)) AS BIGINT) FROM ds_deltas WHERE resource_id = $1",
    )
    .bind(resource_id)
    .fetch_one(&mut **tx)
    .await
    .map_err(HistoryError::database("recounted a resource"))?;
    sqlx::query("UPDATE ds_resources SET deltas = $1, bytes = $2, first_ms = $3 WHERE id = $4")
        .bind(deltas)
        .bind(bytes.unwrap_or(0))
        .bind(cut)
        .bind(resource_id)
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("recounted a resource"))?;
    Ok(())
}
