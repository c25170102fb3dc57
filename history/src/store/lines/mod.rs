//! One resource's recorded history as NDJSON lines, streamed:
//! `GET /_deltascope/history` sends them as they are read, and the page's
//! *Import recording* replays a file of them.
//!
//! A line is the page's recording format (`at`: ms since the first line,
//! `type` as a watch says it, `deltaType`, `object`) with the record's own
//! fields: `time` (RFC 3339, ms), `resource`, `resourceVersion`,
//! `managers`, and `tombstone` when a relist found the object gone. Gaps
//! come as `{"gap":{"from":T,"to":T,"reason":R}}` in time order among them.
//!
//! A task reads the rows in order and hands them in batches to a writer on
//! a blocking thread (`writer`), which rebuilds each object from its chain
//! as it passes and sends the lines, many to a message, through a bounded
//! channel ([`LINE_QUEUE`]): reading and rebuilding run on two cores.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use futures_util::TryStreamExt;
use sqlx::any::AnyArguments;
use sqlx::query::QueryAs;
use sqlx::Any;
use tokio::sync::mpsc;

use super::HistoryStore;
use crate::codec::BodyKind;
use crate::error::HistoryError;
use crate::rebuild::Rebuild;
use crate::record::ClusterId;
use crate::schema::Engine;
use writer::LineWriter;

mod writer;

/// Messages of lines (about 64 KB each) written ahead of the one being
/// sent.
pub const LINE_QUEUE: usize = 8;

/// Rows read per batch handed to the writer.
const ROWS_PER_BATCH: usize = 256;

/// Batches read ahead of the one being written.
const BATCH_QUEUE: usize = 4;

/// What `GET /_deltascope/history` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub since_ms: i64,
    pub until_ms: i64,
    /// Only the newest this many deltas of the window (with every other
    /// delta of the oldest one's millisecond), in time order; the gaps
    /// sent are those of the span they cover.
    pub newest: Option<usize>,
}

/// One stored delta as the window's query reads it: id, object id, time,
/// delta kind, tombstone, resourceVersion, managers, body kind, the row of
/// its chain's full, body, and for a patch against its chain's full that
/// full's body kind and body.
type Row = (
    i64,
    i64,
    i64,
    i64,
    i64,
    String,
    String,
    i64,
    Option<i64>,
    Vec<u8>,
    Option<i64>,
    Option<Vec<u8>>,
);

/// What the reader hands the writer, in order.
enum Work {
    /// The query's gaps, latest first (sent before any row).
    Gaps(Vec<(i64, i64, String)>),
    /// Rows of chains before the window: object id, body kind, body, row
    /// id.
    LeadIns(Vec<(i64, i64, Vec<u8>, i64)>),
    /// The window's rows, in time order.
    Rows(Vec<Row>),
    /// Reading failed: the last thing sent.
    Failed(HistoryError),
}

impl HistoryStore {
    /// The lines of `query`, read by a task of their own, as NDJSON text:
    /// each message one or more whole lines, each ending in `\n`. The
    /// receiver ends after the last line, or after an `Err` it gets if
    /// reading fails. Nothing recorded gives no lines.
    pub fn lines(
        self: &Arc<Self>,
        cluster: &ClusterId,
        query: HistoryQuery,
    ) -> mpsc::Receiver<Result<String, HistoryError>> {
        let (send, receive) = mpsc::channel(LINE_QUEUE);
        let (work, work_received) = mpsc::channel(BATCH_QUEUE);
        let store = Arc::clone(self);
        let cluster = cluster.clone();
        let writer = LineWriter::new(query.resource.clone(), Arc::clone(self));
        tokio::task::spawn_blocking(move || writer.run(work_received, send));
        tokio::spawn(async move {
            if let Err(error) = store.read_rows(&cluster, &query, &work).await {
                let _ = work.send(Work::Failed(error)).await;
            }
        });
        receive
    }

    /// Reads the query's gaps and rows and hands them to the writer: the
    /// gaps, then the rows of the chains before the window, then the
    /// window's rows, each in batches of [`ROWS_PER_BATCH`]. A writer gone
    /// stops the reading.
    async fn read_rows(
        &self,
        cluster: &ClusterId,
        query: &HistoryQuery,
        work: &mpsc::Sender<Work>,
    ) -> Result<(), HistoryError> {
        let Some(resource_id) = self.find_resource(&cluster.0, &query.resource).await? else {
            return Ok(());
        };
        let narrowed;
        let query = match query.newest {
            Some(newest) => {
                narrowed = self.narrow_to_newest(resource_id, query, newest).await?;
                &narrowed
            }
            None => query,
        };
        let gaps = self.read_gaps(resource_id, query).await?;
        if work.send(Work::Gaps(gaps)).await.is_err() {
            return Ok(());
        }
        let selection = window_selection(query);
        // The reader sends rows in batches; the writer (a blocking thread)
        // rebuilds and writes them, so the two share the machine's cores.
        if self.between_version_patches {
            let lead_in_sql = lead_in_sql(&selection);
            let lead_ins = sqlx::query_as::<_, (i64, i64, Vec<u8>, i64)>(&lead_in_sql);
            let lead_ins = bind_window(lead_ins, resource_id, query).fetch(&self.pool);
            let lead_ins = send_in_batches(
                lead_ins,
                work,
                Work::LeadIns,
                "read the versions before the window",
            );
            if !lead_ins.await? {
                return Ok(());
            }
        }
        let window_sql = window_sql(&selection, self.engine);
        let rows = sqlx::query_as::<_, Row>(&window_sql);
        let rows = bind_window(rows, resource_id, query).fetch(&self.pool);
        send_in_batches(rows, work, Work::Rows, "read the history").await?;
        Ok(())
    }

    /// `query` from the time of its window's `newest`th newest delta on
    /// (unchanged when the window holds fewer).
    async fn narrow_to_newest(
        &self,
        resource_id: i64,
        query: &HistoryQuery,
        newest: usize,
    ) -> Result<HistoryQuery, HistoryError> {
        let selection = window_selection(query);
        let offset_param =
            4 + usize::from(query.namespace.is_some()) + usize::from(query.name.is_some());
        let sql = format!(
            "SELECT d.at_ms FROM ds_deltas d \
             WHERE {selection} ORDER BY d.at_ms DESC, d.id DESC LIMIT 1 OFFSET ${offset_param}"
        );
        let offset = i64::try_from(newest.saturating_sub(1)).unwrap_or(i64::MAX);
        let oldest: Option<(i64,)> = bind_window(sqlx::query_as(&sql), resource_id, query)
            .bind(offset)
            .fetch_optional(&self.pool)
            .await
            .map_err(HistoryError::database("found the newest deltas"))?;
        let mut narrowed = query.clone();
        if let Some((oldest_ms,)) = oldest {
            narrowed.since_ms = narrowed.since_ms.max(oldest_ms);
        }
        Ok(narrowed)
    }

    /// The resource's gaps that touch the query's window, latest first.
    async fn read_gaps(
        &self,
        resource_id: i64,
        query: &HistoryQuery,
    ) -> Result<Vec<(i64, i64, String)>, HistoryError> {
        sqlx::query_as(
            "SELECT from_ms, to_ms, reason FROM ds_gaps WHERE resource_id = $1 \
             AND to_ms >= $2 AND from_ms <= $3 ORDER BY from_ms DESC",
        )
        .bind(resource_id)
        .bind(query.since_ms)
        .bind(query.until_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("read the gaps"))
    }

    /// What an object's chain holds before row `id`, a patch of
    /// `body_kind`: its full (`base_id`) for a patch against the full, the
    /// rows from the full on for a patch against the version before.
    pub(super) async fn rebuild_before(
        &self,
        object_id: i64,
        (base_id, body_kind): (Option<i64>, i64),
        id: i64,
    ) -> Result<Rebuild, HistoryError> {
        let Some(base_id) = base_id else {
            return Ok(Rebuild::default());
        };
        let rows: Vec<(i64, Vec<u8>)> = if body_kind == BodyKind::BasePatch as i64 {
            sqlx::query_as("SELECT body_kind, body FROM ds_deltas WHERE id = $1")
                .bind(base_id)
                .fetch_all(&self.pool)
                .await
        } else {
            sqlx::query_as(
                "SELECT body_kind, body FROM ds_deltas WHERE object_id = $1 AND id >= $2 \
                 AND id < $3 AND at_ms >= (SELECT at_ms FROM ds_deltas WHERE id = $2) \
                 AND at_ms <= (SELECT at_ms FROM ds_deltas WHERE id = $3) ORDER BY id",
            )
            .bind(object_id)
            .bind(base_id)
            .bind(id)
            .fetch_all(&self.pool)
            .await
        }
        .map_err(HistoryError::database("read an object's earlier versions"))?;
        let mut current = Rebuild::default();
        for (kind, body) in rows {
            current
                .apply(kind, &body)
                .map_err(|error| HistoryError::Corrupt {
                    resource: String::new(),
                    object: object_id.to_string(),
                    detail: error.to_string(),
                })?;
        }
        Ok(current)
    }
}

/// The `WHERE` clause of the query's rows (`d` the deltas; a namespace or
/// a name is a subquery on the objects, so no statement joins them): one
/// object (by name) through the object index; else the resource's rows in
/// the time window, a namespace filtered on the way.
/// Its parameters are bound by [`bind_window`].
fn window_selection(query: &HistoryQuery) -> String {
    let namespace_param = if query.namespace.is_some() { "$4" } else { "" };
    let name_param = match query.namespace {
        Some(_) => "$5",
        None => "$4",
    };
    match (&query.namespace, &query.name) {
        (_, Some(_)) => {
            let namespace = if query.namespace.is_some() {
                format!(" AND namespace = {namespace_param}")
            } else {
                String::new()
            };
            format!(
                "d.object_id IN (SELECT id FROM ds_objects WHERE resource_id = $1 \
                 AND name = {name_param}{namespace}) AND d.at_ms >= $2 AND d.at_ms <= $3"
            )
        }
        // Through the object index, one range per object of the
        // namespace: the window's rows of other namespaces are never read.
        (Some(_), None) => format!(
            "d.object_id IN (SELECT id FROM ds_objects WHERE resource_id = $1 \
             AND namespace = {namespace_param}) AND d.at_ms >= $2 AND d.at_ms <= $3"
        ),
        (None, None) => "d.resource_id = $1 AND d.at_ms >= $2 AND d.at_ms <= $3".to_string(),
    }
}

/// The window's rows ([`Row`]) that `selection` picks, in time order, each
/// patch against its chain's full with that full: the writer starts an
/// object from it when it holds no earlier version, so no statement runs
/// ahead to find each object's first row.
///
/// The rows' keys are put in order first and their bodies read after, row
/// by row in that order, so the sort moves keys, not bodies, and the first
/// row comes as soon as the keys are sorted. One namespace's 10-minute
/// window of a million-delta store in SQLite's shell: 54 ms sorting the
/// bodies, 26 ms this way, 15 ms of it before the first row. SQLite reads
/// the ordered subquery (`LIMIT -1` keeps it from being merged into the
/// outer query) in its order, so the outer query does not sort again;
/// PostgreSQL is told the order, and keeps the subquery's through its
/// nested loop. A full is read again for each of its patches in the
/// window: at most a chain's length.
fn window_sql(selection: &str, engine: Engine) -> String {
    let (keep, order) = match engine {
        Engine::Sqlite => ("LIMIT -1", ""),
        Engine::Postgres => ("", "ORDER BY w.at_ms, w.id"),
    };
    format!(
        "SELECT d.id, d.object_id, d.at_ms, d.kind, d.tombstone, d.rv, d.managers, \
         d.body_kind, d.base_id, d.body, b.body_kind, b.body \
         FROM (SELECT d.id, d.at_ms FROM ds_deltas d \
         WHERE {selection} ORDER BY d.at_ms, d.id {keep}) w \
         JOIN ds_deltas d ON d.id = w.id \
         LEFT JOIN ds_deltas b ON b.id = d.base_id AND d.body_kind = {against_full} {order}",
        against_full = BodyKind::BasePatch as i64
    )
}

/// Each object whose first row in the window is a patch needs what its
/// chain holds before it: its full for a patch against the full, the rows
/// from the full on for a chain of patches between versions (written before
/// schema version 4). All of them in one statement, not one per object
/// (object id, body kind, body, row id). Run only on a database written
/// before version 4; the window's rows bring their fulls themselves.
fn lead_in_sql(selection: &str) -> String {
    format!(
        "WITH firsts AS (SELECT d.object_id, MIN(d.id) AS first_id FROM ds_deltas d \
         WHERE {selection} GROUP BY d.object_id) \
         SELECT x.object_id, b.body_kind, b.body, b.id FROM firsts f \
         JOIN ds_deltas x ON x.id = f.first_id \
         JOIN ds_deltas b ON b.id = x.base_id WHERE x.body_kind = {against_full} \
         UNION ALL \
         SELECT p.object_id, p.body_kind, p.body, p.id FROM firsts f \
         JOIN ds_deltas x ON x.id = f.first_id \
         JOIN ds_deltas b ON b.id = x.base_id \
         JOIN ds_deltas p ON p.object_id = f.object_id \
         AND p.at_ms >= b.at_ms AND p.at_ms <= x.at_ms \
         AND p.id >= x.base_id AND p.id < f.first_id \
         WHERE x.body_kind = {between} ORDER BY 1, 4",
        against_full = BodyKind::BasePatch as i64,
        between = BodyKind::Patch as i64
    )
}

/// Binds [`window_selection`]'s parameters: the resource, the window, then
/// the namespace and the name when the query gives them.
fn bind_window<'q, O>(
    statement: QueryAs<'q, Any, O, AnyArguments<'q>>,
    resource_id: i64,
    query: &'q HistoryQuery,
) -> QueryAs<'q, Any, O, AnyArguments<'q>> {
    let mut statement = statement
        .bind(resource_id)
        .bind(query.since_ms)
        .bind(query.until_ms);
    if let Some(namespace) = &query.namespace {
        statement = statement.bind(namespace.as_str());
    }
    if let Some(name) = &query.name {
        statement = statement.bind(name.as_str());
    }
    statement
}

/// Hands what `rows` reads to the writer in batches of [`ROWS_PER_BATCH`],
/// each wrapped by `batch_of`; the statement is done with (its connection
/// back in the pool) before the last batch goes. `false`: the writer is
/// gone.
async fn send_in_batches<T>(
    mut rows: BoxStream<'_, Result<T, sqlx::Error>>,
    work: &mpsc::Sender<Work>,
    batch_of: fn(Vec<T>) -> Work,
    doing: &'static str,
) -> Result<bool, HistoryError> {
    let mut batch = Vec::with_capacity(ROWS_PER_BATCH);
    while let Some(row) = rows
        .try_next()
        .await
        .map_err(HistoryError::database(doing))?
    {
        batch.push(row);
        if batch.len() == ROWS_PER_BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(ROWS_PER_BATCH));
            if work.send(batch_of(full)).await.is_err() {
                return Ok(false);
            }
        }
    }
    drop(rows);
    Ok(batch.is_empty() || work.send(batch_of(batch)).await.is_ok())
}
