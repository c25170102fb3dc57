//! A resource as it was at a moment: every object alive then, each rebuilt
//! from its last full body and the patches after it, and the
//! resourceVersion the record stood at — what
//! `GET /_deltascope/history/state` answers and what a restarting recorder
//! resumes from ([`HistoryStore::recorded_state`]).
//!
//! Objects are rebuilt a batch at a time, in one query per batch that reads
//! each object's full and its version's patch against it (or, for a chain
//! written before schema version 4, the patches between versions up to the
//! moment), so the whole state is never held as rows and values at once.

use super::HistoryStore;
use crate::codec::{BodyKind, CodecError};
use crate::error::HistoryError;
use crate::rebuild::Rebuild;
use crate::record::{ClusterId, GapReason, RecordedState};
use deltascope_informer::DeltaType;

/// Objects rebuilt per query.
const OBJECTS_PER_BATCH: i64 = 500;

/// The head of a past state: its resourceVersion; the objects follow
/// through [`HistoryStore::state_objects`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastState {
    pub resource_id: i64,
    /// The last recorded resourceVersion at or before the moment.
    pub resource_version: String,
    pub at_ms: i64,
    pub namespace: Option<String>,
}

/// Why no state can be given for a moment.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("nothing of {resource} is recorded for this cluster")]
    NotRecorded { resource: String },
    #[error("the record of {resource} starts at {first_ms} ms, after the moment asked for")]
    Before { resource: String, first_ms: i64 },
    #[error("the record of {resource} is known complete only up to {through_ms} ms")]
    After { resource: String, through_ms: i64 },
    #[error("the moment falls in a gap of the record of {resource} from {from_ms} to {to_ms} ms ({})", reason.as_str())]
    InGap {
        resource: String,
        from_ms: i64,
        to_ms: i64,
        reason: GapReason,
    },
    #[error(transparent)]
    History(#[from] HistoryError),
}

impl HistoryStore {
    /// Where the record of `resource` stood at `at_ms`, or why it cannot
    /// say: never recorded, before its start, after what is known complete,
    /// or inside a gap.
    pub async fn state_at(
        &self,
        cluster: &ClusterId,
        resource: &str,
        namespace: Option<&str>,
        at_ms: i64,
    ) -> Result<PastState, StateError> {
        let not_recorded = || StateError::NotRecorded {
            resource: resource.to_string(),
        };
        let resource_id = self
            .find_resource(&cluster.0, resource)
            .await?
            .ok_or_else(not_recorded)?;
        let (first_ms, through_ms) = self.span(resource_id).await?;
        let first_ms = first_ms.ok_or_else(not_recorded)?;
        if at_ms < first_ms {
            return Err(StateError::Before {
                resource: resource.to_string(),
                first_ms,
            });
        }
        if at_ms > through_ms {
            return Err(StateError::After {
                resource: resource.to_string(),
                through_ms,
            });
        }
        let gap: Option<(i64, i64, String)> = sqlx::query_as(
            "SELECT from_ms, to_ms, reason FROM ds_gaps \
             WHERE resource_id = $1 AND from_ms < $2 AND to_ms > $2 ORDER BY from_ms LIMIT 1",
        )
        .bind(resource_id)
        .bind(at_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(HistoryError::database("looked for a gap"))?;
        if let Some((from_ms, to_ms, reason)) = gap {
            return Err(StateError::InGap {
                resource: resource.to_string(),
                from_ms,
                to_ms,
                reason: GapReason::parse(&reason).unwrap_or(GapReason::NotKept),
            });
        }
        let resource_version = self.resource_version_at(resource_id, at_ms).await?;
        Ok(PastState {
            resource_id,
            resource_version,
            at_ms,
            namespace: namespace.map(str::to_string),
        })
    }

    /// The first recorded time and the last moment known complete (the
    /// later of the watermark and the last delta).
    async fn span(&self, resource_id: i64) -> Result<(Option<i64>, i64), HistoryError> {
        let (first, last): (Option<i64>, Option<i64>) =
            sqlx::query_as("SELECT first_ms, last_ms FROM ds_resources WHERE id = $1")
                .bind(resource_id)
                .fetch_one(&self.pool)
                .await
                .map_err(HistoryError::database("read a resource's span"))?;
        let mark: Option<i64> =
            sqlx::query_scalar("SELECT through_ms FROM ds_watermarks WHERE resource_id = $1")
                .bind(resource_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(HistoryError::database("read a watermark"))?;
        let through = last.unwrap_or(i64::MIN).max(mark.unwrap_or(i64::MIN));
        Ok((first.or(mark), through))
    }

    /// The resourceVersion the record stood at at `at_ms`: the last delta's,
    /// or the watermark's if it is later and not after the moment.
    async fn resource_version_at(
        &self,
        resource_id: i64,
        at_ms: i64,
    ) -> Result<String, HistoryError> {
        let delta: Option<(String, i64)> = sqlx::query_as(
            "SELECT store_rv, at_ms FROM ds_deltas WHERE resource_id = $1 AND at_ms <= $2 \
             ORDER BY at_ms DESC, id DESC LIMIT 1",
        )
        .bind(resource_id)
        .bind(at_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(HistoryError::database("read a past resourceVersion"))?;
        let mark: Option<(String, i64)> = sqlx::query_as(
            "SELECT store_rv, through_ms FROM ds_watermarks WHERE resource_id = $1 AND through_ms <= $2",
        )
        .bind(resource_id)
        .bind(at_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(HistoryError::database("read a watermark"))?;
        Ok(match (delta, mark) {
            (Some(delta), Some(mark)) if mark.1 > delta.1 => mark.0,
            (Some(delta), _) => delta.0,
            (None, Some(mark)) => mark.0,
            (None, None) => String::new(),
        })
    }

    /// The objects of a past state, a batch at a time in object order:
    /// `each` gets every object rebuilt (as JSON text); a batch's objects
    /// are handed over before the next is read.
    pub async fn state_objects(
        &self,
        state: &PastState,
        mut each: impl FnMut(Vec<String>) -> bool,
    ) -> Result<(), HistoryError> {
        let mut after: i64 = 0;
        loop {
            let (objects, last) = self.object_batch(state, after).await?;
            let Some(last) = last else { return Ok(()) };
            after = last;
            if !each(objects) {
                return Ok(());
            }
        }
    }

    /// The next batch of a past state's objects after object id `after`
    /// (start at 0), rebuilt, and the id to go on after; `None` when no
    /// objects are left. For a reader that sends each batch before it reads
    /// the next.
    pub async fn state_batch(
        &self,
        state: &PastState,
        after: i64,
    ) -> Result<Option<(Vec<String>, i64)>, HistoryError> {
        let (objects, last) = self.object_batch(state, after).await?;
        Ok(last.map(|last| (objects, last)))
    }

    /// Whether anything of `resource` was ever recorded for `cluster`.
    pub async fn has_resource(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> Result<bool, HistoryError> {
        Ok(self.find_resource(&cluster.0, resource).await?.is_some())
    }

    /// Up to [`OBJECTS_PER_BATCH`] objects with ids above `after`, rebuilt;
    /// and the last object id looked at (`None`: no more).
    async fn object_batch(
        &self,
        state: &PastState,
        after: i64,
    ) -> Result<(Vec<String>, Option<i64>), HistoryError> {
        match self.state_rows(state, after).await? {
            Some((rows, last)) => Ok((rows.rebuild()?, Some(last))),
            None => Ok((Vec::new(), None)),
        }
    }

    /// The stored bodies of the next batch of a past state's objects after
    /// object id `after`, not rebuilt yet ([`StateRows::rebuild`], work for
    /// a core of its own while the next batch is read), and the id to go on
    /// after; `None` when no objects are left.
    pub async fn state_rows(
        &self,
        state: &PastState,
        after: i64,
    ) -> Result<Option<(StateRows, i64)>, HistoryError> {
        let namespace_clause = if state.namespace.is_some() {
            "AND o.namespace = $5"
        } else {
            ""
        };
        let picked: Vec<i64> = {
            let sql = format!(
                "SELECT o.id FROM ds_objects o WHERE +o.resource_id = $1 AND o.id > $2 \
                 AND o.first_ms <= $3 AND (o.gone_ms IS NULL OR o.gone_ms > $3) {namespace_clause} \
                 ORDER BY o.id LIMIT $4"
            );
            let mut query = sqlx::query_scalar(&sql)
                .bind(state.resource_id)
                .bind(after)
                .bind(state.at_ms)
                .bind(OBJECTS_PER_BATCH);
            if let Some(namespace) = &state.namespace {
                query = query.bind(namespace.as_str());
            }
            query
                .fetch_all(&self.pool)
                .await
                .map_err(HistoryError::database("listed a past state's objects"))?
        };
        let Some(&last) = picked.last() else {
            return Ok(None);
        };
        let first = picked[0];
        // Each object's last row at the moment (computed once, numbers
        // only), then one row an object: its chain's full with the last
        // row's patch against it beside (none when the last row is the
        // full, which is then read once); or, for a chain of patches
        // between versions (before schema version 4), the rows from the
        // full to the last, in order.
        let rows_sql = format!(
            "WITH picked AS (SELECT o.id AS object_id FROM ds_objects o \
               WHERE +o.resource_id = $1 AND o.id >= $2 AND o.id <= $4 AND o.first_ms <= $3 \
               AND (o.gone_ms IS NULL OR o.gone_ms > $3) {namespace_clause}), \
             latest AS (SELECT p.object_id, (SELECT d.id FROM ds_deltas d \
               WHERE d.object_id = p.object_id AND d.at_ms <= $3 \
               ORDER BY d.at_ms DESC, d.id DESC LIMIT 1) AS last_id FROM picked p), \
             chain AS MATERIALIZED (SELECT l.object_id, l.last_id, d.at_ms AS last_at, \
               COALESCE(d.base_id, d.id) AS base_id, d.kind AS last_kind, \
               d.body_kind AS last_body FROM latest l JOIN ds_deltas d ON d.id = l.last_id) \
             SELECT c.object_id, c.last_kind, b.body_kind, b.body, b.id, v.body \
               FROM chain c JOIN ds_deltas b ON b.id = c.base_id \
               LEFT JOIN ds_deltas v ON v.id = c.last_id AND c.last_id <> c.base_id \
               WHERE c.last_body <> {between} \
             UNION ALL \
             SELECT c.object_id, c.last_kind, d.body_kind, d.body, d.id, NULL FROM chain c \
               JOIN ds_deltas b ON b.id = c.base_id \
               JOIN ds_deltas d ON d.object_id = c.object_id \
               AND d.at_ms >= b.at_ms AND d.at_ms <= c.last_at \
               AND d.id >= c.base_id AND d.id <= c.last_id WHERE c.last_body = {between} \
             ORDER BY 1, 5",
            between = BodyKind::Patch as i64
        );
        let mut query = sqlx::query_as::<_, StoredBody>(&rows_sql)
            .bind(state.resource_id)
            .bind(first)
            .bind(state.at_ms)
            .bind(last);
        if let Some(namespace) = &state.namespace {
            query = query.bind(namespace.as_str());
        }
        let rows = query
            .fetch_all(&self.pool)
            .await
            .map_err(HistoryError::database("read a past state's versions"))?;
        Ok(Some((
            StateRows {
                resource_id: state.resource_id,
                rows,
            },
            last,
        )))
    }

    /// The resource as last recorded, for a recorder that starts again.
    pub async fn recorded_state(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> Result<Option<RecordedState>, HistoryError> {
        let Some(resource_id) = self.find_resource(&cluster.0, resource).await? else {
            return Ok(None);
        };
        let (first, through_ms) = self.span(resource_id).await?;
        if first.is_none() {
            return Ok(None);
        }
        let state = PastState {
            resource_id,
            resource_version: self.resource_version_at(resource_id, i64::MAX).await?,
            at_ms: i64::MAX,
            namespace: None,
        };
        let mut objects = Vec::new();
        self.state_objects(&state, |batch| {
            objects.extend(batch);
            true
        })
        .await?;
        Ok(Some(RecordedState {
            store_resource_version: state.resource_version,
            through_ms,
            objects,
        }))
    }
}

/// One stored body of a past state: object id, the kind of its last delta
/// at the moment, body kind, body, row id, and the version's patch against
/// that body when it is the chain's full and the version is not.
type StoredBody = (i64, i64, i64, Vec<u8>, i64, Option<Vec<u8>>);

/// A batch of a past state's objects as stored ([`HistoryStore::state_rows`]).
pub struct StateRows {
    resource_id: i64,
    rows: Vec<StoredBody>,
}

impl StateRows {
    /// Each object rebuilt (its full, then its patches) as JSON text, the
    /// ones deleted at the moment left out.
    pub fn rebuild(self) -> Result<Vec<String>, HistoryError> {
        let mut objects = Vec::new();
        self.each_alive(|rebuild| {
            if let Some(text) = rebuild.into_text()? {
                objects.push(text);
            }
            Ok(())
        })?;
        Ok(objects)
    }

    /// The objects alive at the moment, rebuilt and written as one run of
    /// a JSON array's elements (`a,b,c`) — what a List's `items` are sent
    /// as, without a copy per object; and how many there are.
    pub fn rebuild_joined(self) -> Result<(Vec<u8>, usize), HistoryError> {
        let mut joined = Vec::with_capacity(self.rows.iter().map(|row| row.3.len() * 4).sum());
        let mut count = 0;
        self.each_alive(|mut rebuild| {
            if count > 0 {
                joined.push(b',');
            }
            count += 1;
            rebuild.write_json(&mut joined)
        })?;
        Ok((joined, count))
    }

    /// Rebuilds each object and hands the ones alive at the moment to
    /// `alive`, in object order.
    fn each_alive(
        self,
        mut alive: impl FnMut(Rebuild) -> Result<(), CodecError>,
    ) -> Result<(), HistoryError> {
        let resource_id = self.resource_id;
        let corrupt = |object_id: i64, error: CodecError| HistoryError::Corrupt {
            resource: resource_id.to_string(),
            object: object_id.to_string(),
            detail: error.to_string(),
        };
        let mut hand_over = |(object_id, last_kind, rebuild): (i64, i64, Rebuild)| {
            let deleted = super::rows::kind_of(last_kind) == Some(DeltaType::Deleted);
            if deleted || rebuild.is_empty() {
                return Ok(());
            }
            alive(rebuild).map_err(|error| corrupt(object_id, error))
        };
        let mut current: Option<(i64, i64, Rebuild)> = None;
        for (object_id, last_kind, body_kind, body, _, patch) in self.rows {
            if current.as_ref().map(|c| c.0) != Some(object_id) {
                if let Some(done) = current.take() {
                    hand_over(done)?;
                }
                current = Some((object_id, last_kind, Rebuild::default()));
            }
            if let Some((_, _, rebuild)) = current.as_mut() {
                rebuild
                    .apply(body_kind, &body)
                    .map_err(|error| corrupt(object_id, error))?;
                if let Some(patch) = patch {
                    rebuild
                        .apply(BodyKind::BasePatch as i64, &patch)
                        .map_err(|error| corrupt(object_id, error))?;
                }
            }
        }
        match current {
            Some(done) => hand_over(done),
            None => Ok(()),
        }
    }
}
