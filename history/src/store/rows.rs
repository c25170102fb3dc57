//! The delta rows of one write batch, inserted many to a statement.
//!
//! One `INSERT` per delta cost more than everything else a write does (a
//! round trip to SQLite's worker thread or to the PostgreSQL server each);
//! here the objects a batch names are looked up together
//! ([`resolve_objects`]), and its deltas go out as multi-row `INSERT …
//! RETURNING id, object_id` statements of a few rows on SQLite and many on
//! PostgreSQL ([`StatementRows`], [`DeltaRows`]). A statement holds at
//! most one delta per object, so the ids it returns are matched to rows by
//! object, and a full body's id is known before the next version of the
//! same object points at it as its base. The SQL text is built from row
//! counts only, never from data.

use std::collections::{HashMap, HashSet};

use deltascope_informer::DeltaType;
use sqlx::{Any, Row, Transaction};

use super::{Ids, ObjectIds};
use crate::codec::{BodyKind, Chain};
use crate::error::HistoryError;
use crate::record::DeltaRecord;
use crate::schema::Engine;

/// How many rows go in one statement on `engine`. Each statement is a
/// round trip (to SQLite's worker thread, or to the PostgreSQL server), so
/// statements are long; SQLite's can be since their placeholders are
/// anonymous ([`Engine::push_list`]).
#[derive(Debug, Clone, Copy)]
pub struct StatementRows {
    /// Delta rows per `INSERT` (11 parameters each).
    pub deltas: usize,
    /// Objects created or looked up per statement.
    pub objects: usize,
    /// Whose placeholders the statements are written with
    /// ([`Engine::push_rows`]).
    pub engine: Engine,
}

impl StatementRows {
    pub fn for_engine(engine: Engine) -> StatementRows {
        match engine {
            Engine::Sqlite => StatementRows {
                deltas: 64,
                objects: 256,
                engine,
            },
            Engine::Postgres => StatementRows {
                deltas: 200,
                objects: 500,
                engine,
            },
        }
    }
}

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

/// The uid an object is kept under: its `metadata.uid`, or its key when the
/// server sent none.
pub fn object_uid(delta: &DeltaRecord) -> String {
    if delta.uid.is_empty() {
        format!("key:{}/{}", delta.namespace, delta.name)
    } else {
        delta.uid.clone()
    }
}

/// Makes sure every object the `(resource id, delta)` pairs name has its
/// row and its id in `ids`: the unknown ones are created (the first delta's
/// time as `first_ms`) and looked up, many to a statement.
pub async fn resolve_objects(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    per_statement: StatementRows,
    deltas: &[(i64, &DeltaRecord)],
) -> Result<(), HistoryError> {
    let unknown = unknown_objects(ids, deltas);
    for chunk in unknown.chunks(per_statement.objects.max(1)) {
        insert_objects(tx, per_statement, chunk).await?;
        // One lookup per resource among the chunk (nearly always one).
        let mut by_resource: HashMap<i64, Vec<&str>> = HashMap::new();
        for (resource_id, uid, _) in chunk {
            by_resource.entry(*resource_id).or_default().push(uid);
        }
        for (resource_id, uids) in by_resource {
            look_up_objects(tx, ids, per_statement, resource_id, &uids).await?;
        }
    }
    Ok(())
}

/// The objects `deltas` name that `ids` does not hold, each once, in order:
/// resource id, uid, its first delta.
fn unknown_objects<'d>(
    ids: &Ids,
    deltas: &[(i64, &'d DeltaRecord)],
) -> Vec<(i64, String, &'d DeltaRecord)> {
    let mut seen = HashSet::new();
    let mut unknown = Vec::new();
    for (resource_id, delta) in deltas {
        let uid = object_uid(delta);
        if !ids.objects.contains_key(&(*resource_id, uid.clone()))
            && seen.insert((*resource_id, uid.clone()))
        {
            unknown.push((*resource_id, uid, *delta));
        }
    }
    unknown
}

/// Creates the rows of objects not stored yet, in one statement.
async fn insert_objects(
    tx: &mut Transaction<'static, Any>,
    per_statement: StatementRows,
    objects: &[(i64, String, &DeltaRecord)],
) -> Result<(), HistoryError> {
    let mut sql = String::from(
        "INSERT INTO ds_objects (resource_id, uid, namespace, name, first_ms) VALUES ",
    );
    per_statement
        .engine
        .push_rows(&mut sql, 1, objects.len(), 5);
    sql.push_str(" ON CONFLICT (resource_id, uid) DO NOTHING");
    let mut insert = sqlx::query(&sql);
    for (resource_id, uid, delta) in objects {
        insert = insert
            .bind(*resource_id)
            .bind(uid.as_str())
            .bind(delta.namespace.as_str())
            .bind(delta.name.as_str())
            .bind(delta.at_ms);
    }
    insert
        .execute(&mut **tx)
        .await
        .map_err(HistoryError::database("noted objects"))?;
    Ok(())
}

/// Reads the ids (and whether each is deleted) of `resource_id`'s objects
/// `uids` into `ids`, in one statement; their next versions are written
/// whole.
async fn look_up_objects(
    tx: &mut Transaction<'static, Any>,
    ids: &mut Ids,
    per_statement: StatementRows,
    resource_id: i64,
    uids: &[&str],
) -> Result<(), HistoryError> {
    let mut sql = String::from("SELECT id, uid, gone_ms FROM ds_objects WHERE resource_id = ");
    per_statement.engine.push_list(&mut sql, 1, 1);
    sql.push_str(" AND uid IN (");
    per_statement.engine.push_list(&mut sql, 2, uids.len());
    sql.push(')');
    let mut select = sqlx::query(&sql).bind(resource_id);
    for uid in uids {
        select = select.bind(*uid);
    }
    let rows = select
        .fetch_all(&mut **tx)
        .await
        .map_err(HistoryError::database("looked up objects"))?;
    for row in rows {
        let id: i64 = row
            .try_get(0)
            .map_err(HistoryError::database("read an object's id"))?;
        let uid: String = row
            .try_get(1)
            .map_err(HistoryError::database("read an object's uid"))?;
        let gone: Option<i64> = row
            .try_get(2)
            .map_err(HistoryError::database("read an object's deletion"))?;
        ids.objects.insert(
            (resource_id, uid),
            ObjectIds {
                id,
                chain: None,
                gone: gone.is_some(),
            },
        );
    }
    Ok(())
}

/// A body ready to insert.
pub struct Body {
    pub kind: BodyKind,
    pub bytes: Vec<u8>,
    /// Its size once inflated.
    pub inflated: usize,
    /// A patch's text (the chain's patch once it is in), else empty.
    pub patch: Vec<u8>,
}

/// One delta waiting for its statement.
struct Pending {
    resource_id: i64,
    uid: String,
    object: ObjectIds,
    at_ms: i64,
    kind: i64,
    tombstone: bool,
    rv: String,
    store_rv: String,
    managers: String,
    body: Body,
    deleted: bool,
}

/// Deltas gathered for the next multi-row statement (see the module doc).
pub struct DeltaRows {
    per_statement: StatementRows,
    pending: Vec<Pending>,
    objects: HashSet<i64>,
}

impl DeltaRows {
    pub fn new(per_statement: StatementRows) -> DeltaRows {
        DeltaRows {
            per_statement,
            pending: Vec::new(),
            objects: HashSet::new(),
        }
    }

    pub fn per_statement(&self) -> StatementRows {
        self.per_statement
    }

    /// Whether a delta of object `object_id` must wait for the rows
    /// gathered so far to be inserted first (it is among them, or the
    /// statement is full).
    pub fn must_flush_before(&self, object_id: i64) -> bool {
        self.objects.contains(&object_id) || self.pending.len() >= self.per_statement.deltas
    }

    /// Adds a delta whose body is ready, stored at `at_ms`.
    pub fn push(
        &mut self,
        (resource_id, at_ms): (i64, i64),
        uid: String,
        object: ObjectIds,
        delta: &DeltaRecord,
        body: Body,
    ) {
        self.objects.insert(object.id);
        self.pending.push(Pending {
            resource_id,
            uid,
            object,
            at_ms,
            kind: kind_code(delta.kind),
            tombstone: delta.tombstone,
            rv: delta.resource_version.clone(),
            store_rv: delta.store_resource_version.clone(),
            managers: serde_json::to_string(&delta.managers).unwrap_or_else(|_| "[]".into()),
            body,
            deleted: delta.kind == DeltaType::Deleted,
        });
    }

    /// Inserts the gathered rows in one statement, then moves each object's
    /// chain on and notes deletions; the rows are gone after.
    pub async fn flush(
        &mut self,
        tx: &mut Transaction<'static, Any>,
        ids: &mut Ids,
    ) -> Result<(), HistoryError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.objects.clear();
        let inserted = insert_deltas(tx, self.per_statement, &pending).await?;
        for mut row in pending {
            if row.deleted != row.object.gone {
                sqlx::query("UPDATE ds_objects SET gone_ms = $1 WHERE id = $2")
                    .bind(row.deleted.then_some(row.at_ms))
                    .bind(row.object.id)
                    .execute(&mut **tx)
                    .await
                    .map_err(HistoryError::database("noted an object's deletion"))?;
            }
            if row.deleted {
                // A deleted object is looked up again should it come back.
                ids.objects.remove(&(row.resource_id, row.uid));
                continue;
            }
            let chain = row.chain_after(&inserted)?;
            let Pending {
                resource_id,
                uid,
                object,
                ..
            } = row;
            ids.objects.insert(
                (resource_id, uid),
                ObjectIds {
                    id: object.id,
                    chain: Some(chain),
                    gone: false,
                },
            );
        }
        Ok(())
    }
}

/// Inserts `pending` in one statement; returns the id each object's row
/// got, by object id (a statement holds one row per object).
async fn insert_deltas(
    tx: &mut Transaction<'static, Any>,
    per_statement: StatementRows,
    pending: &[Pending],
) -> Result<HashMap<i64, i64>, HistoryError> {
    let mut sql = String::from(
        "INSERT INTO ds_deltas (resource_id, object_id, at_ms, kind, tombstone, rv, \
         store_rv, managers, body_kind, base_id, body) VALUES ",
    );
    per_statement
        .engine
        .push_rows(&mut sql, 1, pending.len(), 11);
    sql.push_str(" RETURNING id, object_id");
    let mut insert = sqlx::query(&sql);
    for row in pending {
        let base_id = match row.body.kind {
            BodyKind::Patch | BodyKind::BasePatch => {
                row.object.chain.as_ref().map(|chain| chain.base_id)
            }
            BodyKind::Full => None,
        };
        insert = insert
            .bind(row.resource_id)
            .bind(row.object.id)
            .bind(row.at_ms)
            .bind(row.kind)
            .bind(i64::from(row.tombstone))
            .bind(row.rv.as_str())
            .bind(row.store_rv.as_str())
            .bind(row.managers.as_str())
            .bind(row.body.kind as i64)
            .bind(base_id)
            .bind(row.body.bytes.as_slice());
    }
    let returned = insert
        .fetch_all(&mut **tx)
        .await
        .map_err(HistoryError::database("stored deltas"))?;
    let mut inserted: HashMap<i64, i64> = HashMap::with_capacity(returned.len());
    for row in returned {
        let id: i64 = row
            .try_get(0)
            .map_err(HistoryError::database("read a delta's id"))?;
        let object_id: i64 = row
            .try_get(1)
            .map_err(HistoryError::database("read a delta's object"))?;
        inserted.insert(object_id, id);
    }
    Ok(inserted)
}

impl Pending {
    /// Its object's chain once this row is in: one patch longer, or a new
    /// chain from this full (its id among `inserted`). Takes the row's
    /// patch text.
    fn chain_after(&mut self, inserted: &HashMap<i64, i64>) -> Result<Chain, HistoryError> {
        if let (BodyKind::Patch | BodyKind::BasePatch, Some(chain)) =
            (self.body.kind, self.object.chain.take())
        {
            return Ok(Chain {
                patches: chain.patches + 1,
                patch_bytes: chain.patch_bytes + self.body.inflated,
                patch: std::mem::take(&mut self.body.patch),
                ..chain
            });
        }
        let Some(id) = inserted.get(&self.object.id) else {
            return Err(HistoryError::Database {
                doing: "matched a stored delta to its object",
                source: sqlx::Error::RowNotFound,
            });
        };
        Ok(Chain::from_full(*id, self.body.inflated))
    }
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
