//! The database's tables, their version, and the steps that bring an older
//! database up to this binary's version at start. A database of a newer
//! version than [`SCHEMA_VERSION`] is refused, never touched; nothing here
//! deletes or rewrites a database wholesale.
//!
//! One statement text serves both engines: only the type of an
//! auto-numbered key and of bytes differ (`{id}`, `{bytes}`), and the
//! placeholders of the statements whose rows are counted out as they are
//! written ([`Engine::push_rows`]).
//!
//! The tables:
//! - `ds_meta`: key/value facts about the database (`schema_version`, and
//!   `between_version_patches` when it was written before version 4).
//! - `ds_clusters`: one row per cluster identity (the `kube-system` uid).
//! - `ds_resources`: one row per cluster and resource, with running totals
//!   (deltas, stored bytes, first and last time) so the summary never scans.
//! - `ds_objects`: one row per object (resource and uid) with its namespace,
//!   name, first recorded time and, once deleted, when.
//! - `ds_deltas`: one row per delta; `body` is a compressed full object or
//!   a JSON Patch against the full its chain starts at (before version 4:
//!   against the same object's previous row), `base_id` that full's row
//!   (`codec`).
//! - `ds_gaps`: spans of a resource with no record, and why.
//! - `ds_watermarks`: per resource, how far its record is known complete.
//! - `ds_usage` (version 3): one row per object and metrics window — a
//!   pod's or node's CPU (nanocores) and memory (bytes), a pod's containers
//!   packed (`usage::pack_containers`), its controller and top workload —
//!   keyed by (cluster, resource, namespace, name, window time);
//!   `ds_usage_totals` its running count and first and last time per
//!   cluster and resource, so the summary never scans it.

use sqlx::AnyPool;

use crate::error::HistoryError;

/// The schema this binary writes and reads.
pub const SCHEMA_VERSION: i64 = 4;

/// Which engine a database is: where their SQL differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// `stmt` with the engine's types in place of `{id}` and `{bytes}`.
    fn dialect(self, stmt: &str) -> String {
        let (id, bytes) = match self {
            Engine::Sqlite => ("INTEGER PRIMARY KEY", "BLOB"),
            Engine::Postgres => ("BIGSERIAL PRIMARY KEY", "BYTEA"),
        };
        stmt.replace("{id}", id).replace("{bytes}", bytes)
    }

    /// `count` rows of `width` placeholders each, `(…), (…)`, the first
    /// one the statement's `first`th parameter.
    pub fn push_rows(self, sql: &mut String, first: usize, count: usize, width: usize) {
        for row in 0..count {
            if row > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            self.push_list(sql, first + row * width, width);
            sql.push(')');
        }
    }

    /// `count` placeholders, `a, b, c`, the first one the statement's
    /// `first`th parameter: `$first` on, on PostgreSQL; on SQLite `?`, bound
    /// in order. sqlx binds a named or numbered SQLite parameter (`$n`) by
    /// asking SQLite its name, which SQLite finds by walking the
    /// statement's list of names — a cost that grows with the square of
    /// their number, and that kept SQLite's statements at 8 rows while
    /// they were numbered.
    pub fn push_list(self, sql: &mut String, first: usize, count: usize) {
        for n in 0..count {
            if n > 0 {
                sql.push_str(", ");
            }
            match self {
                Engine::Sqlite => sql.push('?'),
                Engine::Postgres => {
                    sql.push('$');
                    sql.push_str(&(first + n).to_string());
                }
            }
        }
    }
}

/// Version 1, statement by statement.
const VERSION_1: &[&str] = &[
    "CREATE TABLE ds_clusters (id {id}, uid TEXT NOT NULL UNIQUE)",
    "CREATE TABLE ds_resources (id {id}, cluster_id BIGINT NOT NULL, name TEXT NOT NULL, \
     deltas BIGINT NOT NULL DEFAULT 0, bytes BIGINT NOT NULL DEFAULT 0, \
     first_ms BIGINT, last_ms BIGINT, UNIQUE (cluster_id, name))",
    "CREATE TABLE ds_objects (id {id}, resource_id BIGINT NOT NULL, uid TEXT NOT NULL, \
     namespace TEXT NOT NULL, name TEXT NOT NULL, first_ms BIGINT NOT NULL, gone_ms BIGINT, \
     UNIQUE (resource_id, uid))",
    "CREATE INDEX ds_objects_by_name ON ds_objects (resource_id, namespace, name)",
    "CREATE TABLE ds_deltas (id {id}, resource_id BIGINT NOT NULL, object_id BIGINT NOT NULL, \
     at_ms BIGINT NOT NULL, kind SMALLINT NOT NULL, tombstone SMALLINT NOT NULL, \
     rv TEXT NOT NULL, store_rv TEXT NOT NULL, managers TEXT NOT NULL, \
     body_kind SMALLINT NOT NULL, base_id BIGINT, body {bytes} NOT NULL)",
    "CREATE INDEX ds_deltas_by_time ON ds_deltas (resource_id, at_ms)",
    "CREATE INDEX ds_deltas_by_object ON ds_deltas (object_id, at_ms)",
    "CREATE TABLE ds_gaps (id {id}, resource_id BIGINT NOT NULL, from_ms BIGINT NOT NULL, \
     to_ms BIGINT NOT NULL, reason TEXT NOT NULL)",
    "CREATE INDEX ds_gaps_by_time ON ds_gaps (resource_id, to_ms)",
    "CREATE TABLE ds_watermarks (resource_id BIGINT PRIMARY KEY, store_rv TEXT NOT NULL, \
     through_ms BIGINT NOT NULL)",
];

/// Version 2: the (resource, time) index carries the delta type too, so the
/// timeline's marks (deltas per bucket and type over a range) are counted
/// from the index alone, without reading a row (1 million deltas: 400 ms
/// reading rows, see the marks figure in BENCHMARKS.md).
const VERSION_2: &[&str] = &[
    "DROP INDEX ds_deltas_by_time",
    "CREATE INDEX ds_deltas_by_time ON ds_deltas (resource_id, at_ms, kind)",
];

/// Version 3: resource usage over time (`ds_usage`), apart from the deltas.
/// The key reads one object's windows in time order; the workload and
/// controller indexes sum an owner's pods per window; the time index is
/// retention's cut.
const VERSION_3: &[&str] = &[
    "CREATE TABLE ds_usage (cluster_id BIGINT NOT NULL, resource TEXT NOT NULL, \
     namespace TEXT NOT NULL, name TEXT NOT NULL, at_ms BIGINT NOT NULL, \
     window_ms BIGINT NOT NULL, cpu BIGINT NOT NULL, memory BIGINT NOT NULL, \
     containers {bytes} NOT NULL, controller TEXT NOT NULL, workload TEXT NOT NULL, \
     PRIMARY KEY (cluster_id, resource, namespace, name, at_ms))",
    "CREATE INDEX ds_usage_by_workload ON ds_usage (cluster_id, namespace, workload, at_ms)",
    "CREATE INDEX ds_usage_by_controller ON ds_usage (cluster_id, namespace, controller, at_ms)",
    "CREATE INDEX ds_usage_by_time ON ds_usage (at_ms)",
    "CREATE TABLE ds_usage_totals (cluster_id BIGINT NOT NULL, resource TEXT NOT NULL, \
     samples BIGINT NOT NULL, first_ms BIGINT, last_ms BIGINT, \
     PRIMARY KEY (cluster_id, resource))",
];

/// Version 4: a patch is stored against its chain's full (body kind 2,
/// `codec::BodyKind::BasePatch`) instead of against the version before it.
/// No table changes, and the rows written before read as they are; a binary
/// of version 3 would misread the new rows, so the version says so.
const VERSION_4: &[&str] = &[];

/// The `ds_meta` key set when a database that held tables before version 4
/// was brought to it: its chains may hold patches between versions, which
/// a window's reader fetches ahead ([`may_hold_between_version_patches`]).
const BETWEEN_VERSION_PATCHES: &str = "between_version_patches";

/// Every version's statements, oldest first; `MIGRATIONS[n]` brings version
/// `n` to `n + 1`.
const MIGRATIONS: &[&[&str]] = &[VERSION_1, VERSION_2, VERSION_3, VERSION_4];

/// Brings the database to [`SCHEMA_VERSION`], or refuses a newer one.
/// `label` names the database in errors.
pub async fn migrate(pool: &AnyPool, engine: Engine, label: &str) -> Result<(), HistoryError> {
    let unreadable = |source: sqlx::Error| HistoryError::Unreadable {
        target: label.to_string(),
        detail: source.to_string(),
    };
    sqlx::query("CREATE TABLE IF NOT EXISTS ds_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        .execute(pool)
        .await
        .map_err(unreadable)?;
    let found: Option<String> =
        sqlx::query_scalar("SELECT value FROM ds_meta WHERE key = 'schema_version'")
            .fetch_optional(pool)
            .await
            .map_err(unreadable)?;
    let found = match found {
        None => 0,
        Some(text) => text.parse::<i64>().map_err(|_| HistoryError::Unreadable {
            target: label.to_string(),
            detail: format!("its schema_version is {text:?}, not a number"),
        })?,
    };
    if found > SCHEMA_VERSION {
        return Err(HistoryError::NewerSchema {
            target: label.to_string(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (from, statements) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        let mut tx = pool
            .begin()
            .await
            .map_err(HistoryError::database("began a schema migration"))?;
        for stmt in statements.iter() {
            sqlx::query(&engine.dialect(stmt))
                .execute(&mut *tx)
                .await
                .map_err(HistoryError::database("migrated the schema"))?;
        }
        let mut facts = vec![("schema_version", (from as i64 + 1).to_string())];
        if from == 3 && found > 0 {
            facts.push((BETWEEN_VERSION_PATCHES, "1".to_string()));
        }
        for (key, value) in facts {
            sqlx::query(
                "INSERT INTO ds_meta (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .bind(key)
            .bind(value)
            .execute(&mut *tx)
            .await
            .map_err(HistoryError::database("noted the schema version"))?;
        }
        tx.commit()
            .await
            .map_err(HistoryError::database("committed a schema migration"))?;
    }
    Ok(())
}

/// Whether the database was written before version 4, so some of its
/// chains may be patches between versions (`codec::BodyKind::Patch`).
pub async fn may_hold_between_version_patches(pool: &AnyPool) -> Result<bool, HistoryError> {
    let found: Option<String> = sqlx::query_scalar("SELECT value FROM ds_meta WHERE key = $1")
        .bind(BETWEEN_VERSION_PATCHES)
        .fetch_optional(pool)
        .await
        .map_err(HistoryError::database("read the database's facts"))?;
    Ok(found.is_some())
}

/// Whether a SQLite file already holds tables that are not deltascope's
/// (another program's database given by mistake): then it is left alone.
pub async fn holds_foreign_tables(
    connection: &mut sqlx::AnyConnection,
) -> Result<bool, sqlx::Error> {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(connection)
            .await?;
    Ok(names
        .iter()
        .any(|name| !name.starts_with("ds_") && !name.starts_with("sqlite_")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_gets_its_own_key_and_bytes_types() {
        let stmt = "CREATE TABLE t (id {id}, b {bytes})";
        assert_eq!(
            Engine::Sqlite.dialect(stmt),
            "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)"
        );
        assert_eq!(
            Engine::Postgres.dialect(stmt),
            "CREATE TABLE t (id BIGSERIAL PRIMARY KEY, b BYTEA)"
        );
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }

    #[test]
    fn placeholders_are_numbered_on_postgres_and_anonymous_on_sqlite() {
        for (engine, rows, list) in [
            (Engine::Postgres, "($1, $2, $3), ($4, $5, $6)", "$2, $3, $4"),
            (Engine::Sqlite, "(?, ?, ?), (?, ?, ?)", "?, ?, ?"),
        ] {
            let mut sql = String::new();
            engine.push_rows(&mut sql, 1, 2, 3);
            assert_eq!(sql, rows);
            let mut sql = String::new();
            engine.push_list(&mut sql, 2, 3);
            assert_eq!(sql, list);
        }
    }
}
