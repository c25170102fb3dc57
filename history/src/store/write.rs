//! Writing what the recorder hands over: a batch of [`Write`]s in one
//! transaction, all or nothing. Each delta's object gets its row in
//! `ds_objects` the first time it is seen; its body is a full or a patch
//! (`codec`); the resource's running totals move once per batch.

use std::collections::HashMap;

use deltascope_informer::DeltaType;
use sqlx::{Any, Transaction};

use super::{HistoryStore, Ids, ObjectIds};
use crate::codec::{deflate, patch_between, BodyKind, Chain};
use crate::error::HistoryError;
use crate::record::{ClusterId, DeltaRecord, Write};

/// The code a delta type is stored as (and read back from: [`kind_of`]).
pub fn kind_code(kind: DeltaType) -> i64 {
    match kind {
        DeltaType::Added => 0,
        DeltaType::Updated => 1,
        DeltaType::Deleted => 2,
        DeltaType::Replaced => 3,
        DeltaType::Sync => 4,
    }
}

/// The delta type a stored code names.
pub fn kind_of(code: i64) -> Option<DeltaType> {
    Some(match code {
        0 => DeltaType::Added,
        1 => DeltaType::Updated,
        2 => DeltaType::Deleted,
        3 => DeltaType::Replaced,
        4 => DeltaType::Sync,
        _ => return None,
    })
}

/// What one batch added to a resource.
#[derive(Default)]
struct Totals {
    deltas: i64,
    bytes: i64,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
}

/// A body ready to insert.
struct Body {
    kind: BodyKind,
    bytes: Vec<u8>,
    inflated: usize,
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

    async fn write_batch(&self, cluster: &ClusterId, writes: &[Write]) -> Result<(), HistoryError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(HistoryError::database("began a write"))?;
        let mut ids = std::mem::take(&mut *self.ids.lock().map_err(|_| poisoned())?);
        let outcome = async {
            let cluster_id = cluster_id(&mut tx, &mut ids, &cluster.0).await?;
            let mut totals: HashMap<i64, Totals> = HashMap::new();
            for write in writes {
                let resource_id =
                    resource_id(&mut tx, &mut ids, cluster_id, write.resource()).await?;
                match write {
                    Write::Delta(delta) => {
                        let stored = insert_delta(&mut tx, &mut ids, resource_id, delta).await?;
                        let total = totals.entry(resource_id).or_default();
                        total.deltas += 1;
                        total.bytes += stored as i64;
                        total.first_ms.get_or_insert(delta.at_ms);
                        total.last_ms = Some(delta.at_ms);
                    }
                    Write::Gap(gap) => {
                        sqlx::query(
                            "INSERT INTO ds_gaps (resource_id, from_ms, to_ms, reason) \
                             VALUES ($1, $2, $3, $4)",
                        )
                        .bind(resource_id)
                        .bind(gap.from_ms)
                        .bind(gap.to_ms.max(gap.from_ms))
                        .bind(gap.reason.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(HistoryError::database("stored a gap"))?;
                    }
                    Write::Watermark(mark) => {
                        sqlx::query(
                            "INSERT INTO ds_watermarks (resource_id, store_rv, through_ms) \
                             VALUES ($1, $2, $3) ON CONFLICT (resource_id) DO UPDATE \
                             SET store_rv = excluded.store_rv, through_ms = excluded.through_ms",
                        )
                        .bind(resource_id)
                        .bind(&mark.store_resource_version)
                        .bind(mark.through_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(HistoryError::database("stored a watermark"))?;
                    }
                }
            }
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
                .execute(&mut *tx)
                .await
                .map_err(HistoryError::database("counted a resource's deltas"))?;
            }
            Ok::<(), HistoryError>(())
        }
        .await;
        let outcome = match outcome {
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
    let id: i64 =
        sqlx::query_scalar("SELECT id FROM ds_resources WHERE cluster_id = $1 AND name = $2")
            .bind(cluster_id)
            .bind(name)
            .fetch_one(&mut **tx)
            .await
            .map_err(HistoryError::database("looked up a resource"))?;
    ids.resources.insert((cluster_id, name.to_string()), id);
    Ok(id)
}

/// The uid an object is kept under: its `metadata.uid`, or its key when the
/// server sent none.
fn object_uid(delta: &DeltaRecord) -> String {
    if delta.uid.is_empty() {
        format!("key:{}/{}", delta.namespace, delta.name)
    } else {
        delta.uid.clone()
    }
}

async fn object_ids(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    resource_id: i64,
    delta: &DeltaRecord,
) -> Result<ObjectIds, HistoryError> {
    let uid = object_uid(delta);
    if let Some(found) = ids.objects.get(&(resource_id, uid.clone())) {
        return Ok(*found);
    }
    sqlx::query(
        "INSERT INTO ds_objects (resource_id, uid, namespace, name, first_ms) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (resource_id, uid) DO NOTHING",
    )
    .bind(resource_id)
    .bind(&uid)
    .bind(&delta.namespace)
    .bind(&delta.name)
    .bind(delta.at_ms)
    .execute(&mut **tx)
    .await
    .map_err(HistoryError::database("noted an object"))?;
    let (id, gone): (i64, Option<i64>) =
        sqlx::query_as("SELECT id, gone_ms FROM ds_objects WHERE resource_id = $1 AND uid = $2")
            .bind(resource_id)
            .bind(&uid)
            .fetch_one(&mut **tx)
            .await
            .map_err(HistoryError::database("looked up an object"))?;
    let found = ObjectIds {
        id,
        chain: None,
        gone: gone.is_some(),
    };
    ids.objects.insert((resource_id, uid), found);
    Ok(found)
}

/// The body to store: a patch against `previous` when the chain takes it.
fn body_for(delta: &DeltaRecord, chain: Option<Chain>) -> Body {
    let full = || Body {
        kind: BodyKind::Full,
        bytes: deflate(delta.object.as_bytes()),
        inflated: delta.object.len(),
    };
    let (Some(chain), Some(previous)) = (chain, delta.previous.as_deref()) else {
        return full();
    };
    let (Ok(before), Ok(after)) = (
        serde_json::from_str::<serde_json::Value>(previous),
        serde_json::from_str::<serde_json::Value>(&delta.object),
    ) else {
        return full();
    };
    let patch = patch_between(&before, &after);
    if !chain.takes_patch(patch.len()) {
        return full();
    }
    Body {
        kind: BodyKind::Patch,
        bytes: deflate(patch.as_bytes()),
        inflated: patch.len(),
    }
}

/// Inserts one delta; returns the bytes its body takes.
async fn insert_delta(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    resource_id: i64,
    delta: &DeltaRecord,
) -> Result<usize, HistoryError> {
    let object = object_ids(tx, ids, resource_id, delta).await?;
    let body = body_for(delta, object.chain);
    let base_id = match body.kind {
        BodyKind::Patch => object.chain.map(|chain| chain.base_id),
        BodyKind::Full => None,
    };
    let managers = serde_json::to_string(&delta.managers).unwrap_or_else(|_| "[]".into());
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO ds_deltas (resource_id, object_id, at_ms, kind, tombstone, rv, store_rv, \
         managers, body_kind, base_id, body) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
    )
    .bind(resource_id)
    .bind(object.id)
    .bind(delta.at_ms)
    .bind(kind_code(delta.kind))
    .bind(i64::from(delta.tombstone))
    .bind(&delta.resource_version)
    .bind(&delta.store_resource_version)
    .bind(managers)
    .bind(body.kind as i64)
    .bind(base_id)
    .bind(&body.bytes)
    .fetch_one(&mut **tx)
    .await
    .map_err(HistoryError::database("stored a delta"))?;
    let deleted = delta.kind == DeltaType::Deleted;
    if deleted != object.gone {
        sqlx::query("UPDATE ds_objects SET gone_ms = $1 WHERE id = $2")
            .bind(deleted.then_some(delta.at_ms))
            .bind(object.id)
            .execute(&mut **tx)
            .await
            .map_err(HistoryError::database("noted an object's deletion"))?;
    }
    let chain = match (body.kind, object.chain) {
        (BodyKind::Patch, Some(chain)) => Chain {
            patches: chain.patches + 1,
            patch_bytes: chain.patch_bytes + body.inflated,
            ..chain
        },
        _ => Chain {
            base_id: id,
            full_bytes: body.inflated,
            patches: 0,
            patch_bytes: 0,
        },
    };
    let stored = body.bytes.len();
    ids.objects.insert(
        (resource_id, object_uid(delta)),
        ObjectIds {
            id: object.id,
            chain: Some(chain),
            gone: deleted,
        },
    );
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_delta_type_reads_back_from_its_code() {
        for kind in [
            DeltaType::Added,
            DeltaType::Updated,
            DeltaType::Deleted,
            DeltaType::Replaced,
            DeltaType::Sync,
        ] {
            assert_eq!(kind_of(kind_code(kind)), Some(kind));
        }
        assert_eq!(kind_of(9), None);
    }
}
