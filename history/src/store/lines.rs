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
//! Lines go through a bounded channel ([`LINE_QUEUE`]) from a task that
//! reads the rows in order; objects are rebuilt from their chains as they
//! pass, with at most [`HELD_OBJECTS`] last versions held.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deltascope_facts::time::format_rfc3339_millis;
use deltascope_informer::DeltaType;
use futures_util::TryStreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::rows::kind_of;
use super::HistoryStore;
use crate::codec::{apply_body, BodyKind};
use crate::error::HistoryError;
use crate::record::ClusterId;

/// Lines read ahead of the one being sent.
pub const LINE_QUEUE: usize = 64;

/// Last versions held to rebuild the next patch without reading back.
const HELD_OBJECTS: usize = 20_000;

/// What `GET /_deltascope/history` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub since_ms: i64,
    pub until_ms: i64,
}

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
);

impl HistoryStore {
    /// The lines of `query`, read by a task of their own; the receiver ends
    /// after the last line, or after an `Err` it gets if reading fails.
    /// Nothing recorded gives no lines.
    pub fn lines(
        self: &Arc<Self>,
        cluster: &ClusterId,
        query: HistoryQuery,
    ) -> mpsc::Receiver<Result<String, HistoryError>> {
        let (send, receive) = mpsc::channel(LINE_QUEUE);
        let store = Arc::clone(self);
        let cluster = cluster.clone();
        tokio::spawn(async move {
            if let Err(error) = store.send_lines(&cluster, &query, &send).await {
                let _ = send.send(Err(error)).await;
            }
        });
        receive
    }

    async fn send_lines(
        &self,
        cluster: &ClusterId,
        query: &HistoryQuery,
        send: &mpsc::Sender<Result<String, HistoryError>>,
    ) -> Result<(), HistoryError> {
        let Some(resource_id) = self.find_resource(&cluster.0, &query.resource).await? else {
            return Ok(());
        };
        let mut gaps: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT from_ms, to_ms, reason FROM ds_gaps WHERE resource_id = $1 \
             AND to_ms >= $2 AND from_ms <= $3 ORDER BY from_ms DESC",
        )
        .bind(resource_id)
        .bind(query.since_ms)
        .bind(query.until_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("read the gaps"))?;
        // One object (by name): its rows through the object index; else the
        // resource's rows in the time window, a namespace filtered on the way.
        let namespace_param = if query.namespace.is_some() { "$4" } else { "" };
        let name_param = match query.namespace {
            Some(_) => "$5",
            None => "$4",
        };
        let selection = match (&query.namespace, &query.name) {
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
        };
        let sql = format!(
            "SELECT d.id, d.object_id, d.at_ms, d.kind, d.tombstone, d.rv, d.managers, \
             d.body_kind, d.base_id, d.body FROM ds_deltas d JOIN ds_objects o ON o.id = d.object_id \
             WHERE {selection} ORDER BY d.at_ms, d.id"
        );
        // Each object whose first row in the window is a patch needs the
        // rows of its chain before it: all of them in one statement, not
        // one per object.
        let lead_in_sql = format!(
            "WITH firsts AS (SELECT d.object_id, MIN(d.id) AS first_id FROM ds_deltas d \
             JOIN ds_objects o ON o.id = d.object_id WHERE {selection} GROUP BY d.object_id) \
             SELECT p.object_id, p.body_kind, p.body FROM firsts f \
             JOIN ds_deltas x ON x.id = f.first_id \
             JOIN ds_deltas p ON p.object_id = f.object_id AND p.id >= x.base_id AND p.id < f.first_id \
             WHERE x.body_kind = {patch} ORDER BY p.object_id, p.id",
            patch = BodyKind::Patch as i64
        );
        let mut lead_ins = sqlx::query_as::<_, (i64, i64, Vec<u8>)>(&lead_in_sql)
            .bind(resource_id)
            .bind(query.since_ms)
            .bind(query.until_ms);
        let mut rows = sqlx::query_as::<_, Row>(&sql)
            .bind(resource_id)
            .bind(query.since_ms)
            .bind(query.until_ms);
        if let Some(namespace) = &query.namespace {
            rows = rows.bind(namespace.as_str());
            lead_ins = lead_ins.bind(namespace.as_str());
        }
        if let Some(name) = &query.name {
            rows = rows.bind(name.as_str());
            lead_ins = lead_ins.bind(name.as_str());
        }
        let mut held: HashMap<i64, Value> = HashMap::new();
        let mut lead_ins = lead_ins.fetch(&self.pool);
        while let Some((object_id, body_kind, body)) = lead_ins.try_next().await.map_err(
            HistoryError::database("read the versions before the window"),
        )? {
            let mut current = held.remove(&object_id);
            apply_body(&mut current, body_kind, &body).map_err(|error| HistoryError::Corrupt {
                resource: query.resource.clone(),
                object: object_id.to_string(),
                detail: error.to_string(),
            })?;
            if let Some(object) = current {
                held.insert(object_id, object);
            }
        }
        drop(lead_ins);
        let mut rows = rows.fetch(&self.pool);
        let mut seen: HashSet<i64> = HashSet::new();
        let mut start: Option<i64> = None;
        while let Some(row) = rows
            .try_next()
            .await
            .map_err(HistoryError::database("read the history"))?
        {
            let (id, object_id, at_ms, kind, tombstone, rv, managers, body_kind, base_id, body) =
                row;
            while gaps.last().is_some_and(|gap| gap.0 <= at_ms) {
                if let Some(gap) = gaps.pop() {
                    if send.send(Ok(gap_line(&gap))).await.is_err() {
                        return Ok(());
                    }
                }
            }
            let mut current = held.remove(&object_id);
            if body_kind == BodyKind::Patch as i64 && current.is_none() {
                current = self.rebuild_before(object_id, base_id, id).await?;
            }
            apply_body(&mut current, body_kind, &body).map_err(|error| HistoryError::Corrupt {
                resource: query.resource.clone(),
                object: object_id.to_string(),
                detail: error.to_string(),
            })?;
            let Some(object) = current else { continue };
            let kind = kind_of(kind).unwrap_or(DeltaType::Updated);
            let event_type = match kind {
                DeltaType::Deleted => "DELETED",
                _ if seen.contains(&object_id) => "MODIFIED",
                _ => "ADDED",
            };
            if kind == DeltaType::Deleted {
                seen.remove(&object_id);
            } else {
                seen.insert(object_id);
            }
            let start = *start.get_or_insert(at_ms);
            let line = delta_line(&DeltaLine {
                at: at_ms - start,
                time: format_rfc3339_millis(at_ms),
                event_type,
                delta_type: kind.as_str(),
                resource: &query.resource,
                resource_version: &rv,
                managers: &managers,
                tombstone: tombstone != 0,
                object: &object,
            });
            if held.len() >= HELD_OBJECTS {
                held.clear();
            }
            held.insert(object_id, object);
            if send.send(Ok(line)).await.is_err() {
                return Ok(());
            }
        }
        while let Some(gap) = gaps.pop() {
            if send.send(Ok(gap_line(&gap))).await.is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// An object's version just before row `id`, from its chain's full
    /// (`base_id`) on.
    async fn rebuild_before(
        &self,
        object_id: i64,
        base_id: Option<i64>,
        id: i64,
    ) -> Result<Option<Value>, HistoryError> {
        let Some(base_id) = base_id else {
            return Ok(None);
        };
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
            "SELECT body_kind, body FROM ds_deltas WHERE object_id = $1 AND id >= $2 AND id < $3 \
             ORDER BY id",
        )
        .bind(object_id)
        .bind(base_id)
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(HistoryError::database("read an object's earlier versions"))?;
        let mut current = None;
        for (kind, body) in rows {
            apply_body(&mut current, kind, &body).map_err(|error| HistoryError::Corrupt {
                resource: String::new(),
                object: object_id.to_string(),
                detail: error.to_string(),
            })?;
        }
        Ok(current)
    }
}

/// One delta's line (fields as the module doc names them).
struct DeltaLine<'a> {
    at: i64,
    time: Option<String>,
    event_type: &'a str,
    delta_type: &'a str,
    resource: &'a str,
    resource_version: &'a str,
    /// As stored: a JSON array of names.
    managers: &'a str,
    tombstone: bool,
    object: &'a Value,
}

/// The line's text, the object written from the value held (never copied
/// into the line first).
fn delta_line(line: &DeltaLine<'_>) -> String {
    use serde::ser::{SerializeMap, Serializer};
    let mut out = Vec::with_capacity(4_096);
    let mut writer = serde_json::Serializer::new(&mut out);
    let written = (|| {
        let mut map = writer.serialize_map(None)?;
        map.serialize_entry("at", &line.at)?;
        map.serialize_entry("time", &line.time)?;
        map.serialize_entry("type", line.event_type)?;
        map.serialize_entry("deltaType", line.delta_type)?;
        map.serialize_entry("resource", line.resource)?;
        map.serialize_entry("resourceVersion", line.resource_version)?;
        let managers: Vec<&str> = serde_json::from_str(line.managers).unwrap_or_default();
        map.serialize_entry("managers", &managers)?;
        if line.tombstone {
            map.serialize_entry("tombstone", &true)?;
        }
        map.serialize_entry("object", line.object)?;
        map.end()
    })();
    match written {
        // serde_json writes UTF-8 only.
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

fn gap_line((from_ms, to_ms, reason): &(i64, i64, String)) -> String {
    json!({"gap": {
        "from": format_rfc3339_millis(*from_ms),
        "to": format_rfc3339_millis(*to_ms),
        "reason": reason,
    }})
    .to_string()
}
