//! Writing what the recorder hands over: a batch of [`Write`]s in one
//! transaction, all or nothing. Each delta's object gets its row in
//! `ds_objects` the first time it is seen; its body is a full or a patch
//! (`codec`); the rows go out many to a statement (`rows`); the resource's
//! running totals move once per batch. Usage samples go to their own table
//! (`usage`).

use std::collections::HashMap;

use sqlx::{Any, Transaction};

use super::rows::{object_uid, resolve_objects, Body, DeltaRows, StatementRows};
use super::usage::store_usage;
use super::{HistoryStore, Ids};
use crate::codec::{BodyKind, Chain, Compressor};
use crate::compose::compose;
use crate::error::HistoryError;
use crate::record::{ClusterId, DeltaRecord, GapRecord, WatermarkRecord, Write};

/// What one batch added to a resource.
#[derive(Default)]
struct Totals {
    deltas: i64,
    bytes: i64,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
}

impl HistoryStore {
    /// Appends `writes` for `cluster`, in order, in one transaction.
    pub async fn write(&self, cluster: &ClusterId, writes: &[Write]) -> Result<(), HistoryError> {
        let result = self.write_batch(cluster, writes).await;
        if result.is_err() {
            self.forget_chains();
        }
        result
    }

    /// The batch in one transaction; the ids it learnt are kept only once
    /// it is committed.
    async fn write_batch(&self, cluster: &ClusterId, writes: &[Write]) -> Result<(), HistoryError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(HistoryError::database("began a write"))?;
        let mut ids = std::mem::take(&mut *self.ids.lock().map_err(|_| poisoned())?);
        let outcome = match self.write_in(&mut tx, &mut ids, cluster, writes).await {
            Ok(()) => tx
                .commit()
                .await
                .map_err(HistoryError::database("committed a write")),
            Err(error) => Err(error),
        };
        if outcome.is_ok() {
            if let Ok(mut held) = self.ids.lock() {
                *held = ids;
            }
        }
        outcome
    }

    /// Writes the batch's statements in `tx`: the cluster, resources and
    /// objects it names, then each write in order (the delta rows gathered
    /// many to a statement), then the resources' totals.
    async fn write_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &mut Ids,
        cluster: &ClusterId,
        writes: &[Write],
    ) -> Result<(), HistoryError> {
        let cluster_id = cluster_id(tx, ids, &cluster.0).await?;
        // usage is no resource's record: it names none (see `usage`)
        let mut resource_ids = Vec::with_capacity(writes.len());
        for write in writes {
            resource_ids.push(match write {
                Write::Usage(_) => 0,
                _ => resource_id(tx, ids, cluster_id, write.resource()).await?,
            });
        }
        let deltas: Vec<(i64, &DeltaRecord)> = writes
            .iter()
            .zip(&resource_ids)
            .filter_map(|(write, id)| match write {
                Write::Delta(delta) => Some((*id, delta)),
                _ => None,
            })
            .collect();
        let per_statement = StatementRows::for_engine(self.engine);
        resolve_objects(tx, ids, per_statement, &deltas).await?;
        let mut totals: HashMap<i64, Totals> = HashMap::new();
        let mut compressor = Compressor::new();
        let mut rows = DeltaRows::new(per_statement);
        for (write, &resource_id) in writes.iter().zip(&resource_ids) {
            match write {
                Write::Delta(delta) => {
                    let at_ms = ids.stored_time(resource_id, delta.at_ms);
                    let stored = add_delta(
                        tx,
                        ids,
                        &mut rows,
                        &mut compressor,
                        (resource_id, at_ms),
                        delta,
                    )
                    .await?;
                    totals.entry(resource_id).or_default().add(at_ms, stored);
                }
                Write::Gap(gap) => store_gap(tx, resource_id, gap).await?,
                Write::Watermark(mark) => store_watermark(tx, resource_id, mark).await?,
                Write::Usage(usage) => {
                    store_usage(tx, per_statement, cluster_id, usage).await?;
                }
            }
        }
        rows.flush(tx, ids).await?;
        add_totals(tx, totals).await
    }
}

impl Totals {
    /// One more delta, stored at `at_ms`, its body `stored` bytes.
    fn add(&mut self, at_ms: i64, stored: usize) {
        self.deltas += 1;
        self.bytes += stored as i64;
        self.first_ms.get_or_insert(at_ms);
        self.last_ms = Some(at_ms);
    }
}

/// Stores a gap of `resource_id`. A gap that goes on where one of the same
/// reason ended (a restore's, once caught up) extends it.
async fn store_gap(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    gap: &GapRecord,
) -> Result<(), HistoryError> {
    let to_ms = gap.to_ms.max(gap.from_ms);
    let joined = sqlx::query(
        "UPDATE ds_gaps SET to_ms = $1 WHERE resource_id = $2 \
         AND to_ms = $3 AND reason = $4",
    )
    .bind(to_ms)
    .bind(resource_id)
    .bind(gap.from_ms)
    .bind(gap.reason.as_str())
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("extended a gap"))?;
    if joined.rows_affected() == 0 {
        sqlx::query(
            "INSERT INTO ds_gaps (resource_id, from_ms, to_ms, reason) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(resource_id)
        .bind(gap.from_ms)
        .bind(to_ms)
        .bind(gap.reason.as_str())
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("stored a gap"))?;
    }
    Ok(())
}

/// Stores `resource_id`'s watermark in place of the one before.
async fn store_watermark(
    tx: &mut Transaction<'static, Any>,
    resource_id: i64,
    mark: &WatermarkRecord,
) -> Result<(), HistoryError> {
    sqlx::query(
        "INSERT INTO ds_watermarks (resource_id, store_rv, through_ms) \
         VALUES ($1, $2, $3) ON CONFLICT (resource_id) DO UPDATE \
         SET store_rv = excluded.store_rv, through_ms = excluded.through_ms",
    )
    .bind(resource_id)
    .bind(&mark.store_resource_version)
    .bind(mark.through_ms)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("stored a watermark"))?;
    Ok(())
}

/// Moves each resource's running totals on by what the batch added.
async fn add_totals(
    tx: &mut Transaction<'static, Any>,
    totals: HashMap<i64, Totals>,
) -> Result<(), HistoryError> {
    for (resource_id, total) in totals {
        sqlx::query(
            "UPDATE ds_resources SET deltas = deltas + $1, bytes = bytes + $2, \
             first_ms = COALESCE(first_ms, $3), last_ms = $4 WHERE id = $5",
        )
        .bind(total.deltas)
        .bind(total.bytes)
        .bind(total.first_ms)
        .bind(total.last_ms)
        .bind(resource_id)
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("counted a resource's deltas"))?;
    }
    Ok(())
}

fn poisoned() -> HistoryError {
    HistoryError::Database {
        doing: "took the store's ids",
        source: sqlx::Error::PoolClosed,
    }
}

async fn cluster_id(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    uid: &str,
) -> Result<i64, HistoryError> {
    if let Some(id) = ids.clusters.get(uid) {
        return Ok(*id);
    }
    sqlx::query("INSERT INTO ds_clusters (uid) VALUES ($1) ON CONFLICT (uid) DO NOTHING")
        .bind(uid)
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("noted a cluster"))?;
    let id: i64 = sqlx::query_scalar("SELECT id FROM ds_clusters WHERE uid = $1")
        .bind(uid)
        .fetch_one(&mut **tx)
        .await
        .map_err(HistoryError::database("looked up a cluster"))?;
    ids.clusters.insert(uid.to_string(), id);
    Ok(id)
}

async fn resource_id(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    cluster_id: i64,
    name: &str,
) -> Result<i64, HistoryError> {
    if let Some(id) = ids.resources.get(&(cluster_id, name.to_string())) {
        return Ok(*id);
    }
    sqlx::query(
        "INSERT INTO ds_resources (cluster_id, name) VALUES ($1, $2) \
         ON CONFLICT (cluster_id, name) DO NOTHING",
    )
    .bind(cluster_id)
    .bind(name)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("noted a resource"))?;
    let (id, last_ms): (i64, Option<i64>) =
        sqlx::query_as("SELECT id, last_ms FROM ds_resources WHERE cluster_id = $1 AND name = $2")
            .bind(cluster_id)
            .bind(name)
            .fetch_one(&mut **tx)
            .await
            .map_err(HistoryError::database("looked up a resource"))?;
    ids.resources.insert((cluster_id, name.to_string()), id);
    if let Some(last_ms) = last_ms {
        ids.stored_time(id, last_ms);
    }
    Ok(id)
}

/// The body to store: a patch against the chain's full when the chain
/// takes it — the patch from `previous` composed onto the chain's patch so
/// far — else a full.
fn body_for(delta: &DeltaRecord, chain: Option<&Chain>, compressor: &mut Compressor) -> Body {
    if let (Some(chain), Some(previous)) = (chain, delta.previous.as_ref()) {
        let step = previous.patch_to(&delta.object);
        // The chain's own patches always compose; should one not, the
        // version is stored whole.
        if let Ok(patch) = compose(&chain.patch, &step) {
            if chain.takes_patch(patch.len()) {
                return Body {
                    kind: BodyKind::BasePatch,
                    bytes: compressor.patch(&patch),
                    inflated: patch.len(),
                    patch,
                };
            }
        }
    }
    let mut text = Vec::with_capacity(delta.object.compact_len() * 2);
    delta.object.write_text(&mut text);
    Body {
        kind: BodyKind::Full,
        bytes: compressor.full(&text),
        inflated: text.len(),
        patch: Vec::new(),
    }
}

/// Prepares one delta's row (its body against its object's chain) and
/// gathers it, inserting the rows gathered before first when they hold the
/// same object; returns the bytes its body takes.
async fn add_delta(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    rows: &mut DeltaRows,
    compressor: &mut Compressor,
    (resource_id, at_ms): (i64, i64),
    delta: &DeltaRecord,
) -> Result<usize, HistoryError> {
    let uid = object_uid(delta);
    let key = (resource_id, uid);
    let known = ids.objects.get(&key).map(|object| object.id);
    if known.is_none_or(|id| rows.must_flush_before(id)) {
        // The object's last rows must be in (and a deleted one looked up
        // again) before this version is diffed against them.
        rows.flush(tx, ids).await?;
        if !ids.objects.contains_key(&key) {
            resolve_objects(tx, ids, rows.per_statement(), &[(resource_id, delta)]).await?;
        }
    }
    let Some(object) = ids.objects.get(&key).cloned() else {
        return Err(HistoryError::Database {
            doing: "looked up an object",
            source: sqlx::Error::RowNotFound,
        });
    };
    let body = body_for(delta, object.chain.as_ref(), compressor);
    let stored = body.bytes.len();
    rows.push((resource_id, at_ms), key.1, object, delta, body);
    Ok(stored)
}
