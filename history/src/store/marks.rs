//! Marks: how many deltas of each type the record of a resource holds in
//! each of N equal buckets of a time range, and its gaps there — what the
//! page's timeline draws for the time before it opened. Counted by the
//! database from the (resource, time, type) index alone, bucket by bucket,
//! so a range of a million deltas is a few hundred small counts, not a
//! million rows sent (nor one sort of them all); a namespace, which is the
//! objects' column, is one grouped scan joined to them. PostgreSQL hashes
//! one grouped scan instead (see `bucket_rows`).

use deltascope_informer::DeltaType;

use super::rows::kind_of;
use super::{Engine, HistoryStore};
use crate::error::HistoryError;
use crate::record::{ClusterId, GapReason};

/// Buckets counted by one statement (SQLite allows 500 terms in a
/// compound SELECT).
const BUCKETS_PER_STATEMENT: i64 = 400;

/// PostgreSQL's memory for the marks' grouping, for the one transaction
/// that counts (its default, 4 MB, makes it sort instead of hashing).
const HASH_MEMORY: &str = "SET LOCAL work_mem = '32MB'";

/// The most buckets one request may ask for.
pub const MAX_MARK_BUCKETS: usize = 4096;

/// What [`HistoryStore::marks`] counts: `[since_ms, until_ms)` cut into
/// `buckets` equal parts, optionally one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarksQuery {
    pub resource: String,
    pub namespace: Option<String>,
    pub since_ms: i64,
    pub until_ms: i64,
    pub buckets: usize,
}

/// The deltas of one bucket, by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketCounts {
    pub added: u64,
    pub updated: u64,
    pub deleted: u64,
    pub replaced: u64,
    pub sync: u64,
}

impl BucketCounts {
    fn add(&mut self, kind: DeltaType, count: u64) {
        let slot = match kind {
            DeltaType::Added => &mut self.added,
            DeltaType::Updated => &mut self.updated,
            DeltaType::Deleted => &mut self.deleted,
            DeltaType::Replaced => &mut self.replaced,
            DeltaType::Sync => &mut self.sync,
        };
        *slot += count;
    }

    /// Every delta of the bucket.
    pub fn total(&self) -> u64 {
        self.added + self.updated + self.deleted + self.replaced + self.sync
    }
}

/// A span the record does not cover, clipped to nothing: as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkGap {
    pub from_ms: i64,
    pub to_ms: i64,
    pub reason: GapReason,
}

/// The record's marks over a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    /// The non-empty buckets, by index, in order.
    pub buckets: Vec<(usize, BucketCounts)>,
    /// Gaps that overlap the range, in time order.
    pub gaps: Vec<MarkGap>,
    /// The first recorded time of the resource (`None`: nothing yet).
    pub first_ms: Option<i64>,
}

impl HistoryStore {
    /// Counts `query`'s deltas per bucket and type, with the gaps over the
    /// range; `Ok(None)` when the resource was never recorded for `cluster`.
    pub async fn marks(
        &self,
        cluster: &ClusterId,
        query: &MarksQuery,
    ) -> Result<Option<Marks>, HistoryError> {
        let Some(resource_id) = self.find_resource(&cluster.0, &query.resource).await? else {
            return Ok(None);
        };
        let span = (query.until_ms - query.since_ms).max(1);
        let buckets = query.buckets.clamp(1, MAX_MARK_BUCKETS) as i64;
        let rows = self.bucket_rows(resource_id, query, span, buckets).await?;
        let mut counts: Vec<(usize, BucketCounts)> = Vec::new();
        for (bucket, code, count) in rows {
            let (Some(kind), Ok(bucket)) = (kind_of(code), usize::try_from(bucket)) else {
                continue;
            };
            match counts.last_mut() {
                Some((last, slot)) if *last == bucket => slot.add(kind, count.max(0) as u64),
                _ => {
                    let mut slot = BucketCounts::default();
                    slot.add(kind, count.max(0) as u64);
                    counts.push((bucket, slot));
                }
            }
        }
        let gaps = self.gaps_over(resource_id, query).await?;
        let first_ms: Option<i64> =
            sqlx::query_scalar("SELECT first_ms FROM ds_resources WHERE id = $1")
                .bind(resource_id)
                .fetch_one(&self.pool)
                .await
                .map_err(HistoryError::database("read a resource's first time"))?;
        Ok(Some(Marks {
            buckets: counts,
            gaps,
            first_ms,
        }))
    }

    /// How many deltas of `resource` arrived in `[since_ms, until_ms)`: the
    /// bare count over the same index range the marks group (what the
    /// marks' cost is measured against).
    pub async fn count_deltas(
        &self,
        cluster: &ClusterId,
        resource: &str,
        (since_ms, until_ms): (i64, i64),
    ) -> Result<u64, HistoryError> {
        let Some(resource_id) = self.find_resource(&cluster.0, resource).await? else {
            return Ok(0);
        };
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM ds_deltas WHERE resource_id = $1 AND at_ms >= $2 AND at_ms < $3",
        )
        .bind(resource_id)
        .bind(since_ms)
        .bind(until_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(HistoryError::database("counted a range's deltas"))?;
        Ok(count.max(0) as u64)
    }

    /// (bucket, kind code, count) in bucket order.
    async fn bucket_rows(
        &self,
        resource_id: i64,
        query: &MarksQuery,
        span: i64,
        buckets: i64,
    ) -> Result<Vec<(i64, i64, i64)>, HistoryError> {
        if self.engine == Engine::Sqlite && query.namespace.is_none() {
            return self
                .bucket_by_bucket(resource_id, query, span, buckets)
                .await;
        }
        // One grouped scan of the resource's range (a namespace is the
        // objects' column: joined to them). PostgreSQL cannot tell how few
        // buckets the expression makes, so it guesses most rows are a group
        // of their own and sorts them all (to disk: 200,000 deltas, 213 ms
        // against a bare count's 64 ms); given the memory to hash, it counts
        // them in one pass (84–204 ms on a busy 2-core machine), faster than
        // a count per bucket as SQLite does (200–335 ms as one statement,
        // 328 ms in 600 `UNION ALL` terms).
        let namespace_join = if query.namespace.is_some() {
            " JOIN ds_objects o ON o.id = d.object_id AND o.namespace = $6"
        } else {
            ""
        };
        let sql = format!(
            "SELECT ((d.at_ms - $2) * $4 / $5) AS b, CAST(d.kind AS BIGINT), COUNT(*) \
             FROM ds_deltas d{namespace_join} \
             WHERE d.resource_id = $1 AND d.at_ms >= $2 AND d.at_ms < $3 \
             GROUP BY b, d.kind ORDER BY b"
        );
        let mut statement = sqlx::query_as(&sql)
            .bind(resource_id)
            .bind(query.since_ms)
            .bind(query.until_ms)
            .bind(buckets)
            .bind(span);
        if let Some(namespace) = &query.namespace {
            statement = statement.bind(namespace.clone());
        }
        let failed = || HistoryError::database("counted a range's deltas");
        if self.engine == Engine::Sqlite {
            return statement.fetch_all(&self.pool).await.map_err(failed());
        }
        let mut transaction = self.pool.begin().await.map_err(failed())?;
        sqlx::query(HASH_MEMORY)
            .execute(&mut *transaction)
            .await
            .map_err(failed())?;
        let rows = statement
            .fetch_all(&mut *transaction)
            .await
            .map_err(failed())?;
        transaction.commit().await.map_err(failed())?;
        Ok(rows)
    }

    /// Each bucket counted on its own from the (resource, time, type) index
    /// alone, all in one statement (a `UNION ALL` of one small grouped
    /// count per bucket, every bound a parameter): a grouped scan of the
    /// whole range sorts every row by its bucket (1 million deltas: 290 ms
    /// on SQLite), while a bucket's few rows group in place.
    async fn bucket_by_bucket(
        &self,
        resource_id: i64,
        query: &MarksQuery,
        span: i64,
        buckets: i64,
    ) -> Result<Vec<(i64, i64, i64)>, HistoryError> {
        // Bucket b holds the times t with (t - since) * buckets / span = b.
        let start_of = |b: i64| query.since_ms + (b * span + buckets - 1) / buckets;
        let mut rows: Vec<(i64, i64, i64)> = Vec::new();
        let mut first = 0;
        while first < buckets {
            let last = (first + BUCKETS_PER_STATEMENT).min(buckets);
            let sql = (first..last)
                .enumerate()
                .map(|(i, b)| {
                    format!(
                        "SELECT CAST({b} AS BIGINT), CAST(kind AS BIGINT), COUNT(*) FROM ds_deltas \
                         WHERE resource_id = $1 AND at_ms >= ${} AND at_ms < ${} GROUP BY kind",
                        i + 2,
                        i + 3
                    )
                })
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let mut statement = sqlx::query_as(&sql).bind(resource_id);
            for b in first..=last {
                statement = statement.bind(start_of(b).min(query.until_ms));
            }
            let counted: Vec<(i64, i64, i64)> = statement
                .fetch_all(&self.pool)
                .await
                .map_err(HistoryError::database("counted a range's deltas"))?;
            rows.extend(counted);
            first = last;
        }
        rows.sort_unstable();
        Ok(rows)
    }

    /// The gaps of `resource_id` that overlap the query's range.
    async fn gaps_over(
        &self,
        resource_id: i64,
        query: &MarksQuery,
    ) -> Result<Vec<MarkGap>, HistoryError> {
        self.gaps_between(resource_id, (query.since_ms, query.until_ms))
            .await
    }

    /// The gaps of `resource_id` that overlap `[since_ms, until_ms)`, in
    /// time order.
    pub(super) async fn gaps_between(
        &self,
        resource_id: i64,
        (since_ms, until_ms): (i64, i64),
    ) -> Result<Vec<MarkGap>, HistoryError> {
        let rows: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT from_ms, to_ms, reason FROM ds_gaps \
             WHERE resource_id = $1 AND to_ms > $2 AND from_ms < $3 ORDER BY from_ms",
        )
        .bind(resource_id)
        .bind(since_ms)
        .bind(until_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("read a range's gaps"))?;
        Ok(rows
            .into_iter()
            .map(|(from_ms, to_ms, reason)| MarkGap {
                from_ms,
                to_ms,
                reason: GapReason::parse(&reason).unwrap_or(GapReason::NotKept),
            })
            .collect())
    }
}
