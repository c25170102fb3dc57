//! [`HistoryStore`]: one database (SQLite or PostgreSQL, through sqlx's
//! Any driver) opened, migrated and shared by the recorder, which writes
//! (`write`), and serve's history routes, which read (`state`, `lines`,
//! `marks`, `summary`, `usage`); `retention` evicts the oldest records.
//!
//! The store keeps a little in memory to write fast: the ids of clusters,
//! resources and objects it has seen, and each object's [`Chain`] since its
//! last full body. A failed write forgets the chains (the rows they point
//! at may not exist), so the next version of every object is written whole.

mod lines;
mod marks;
mod retention;
mod rows;
mod state;
mod summary;
mod usage;
mod write;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyConnection, AnyPool, Connection};

use crate::codec::Chain;
use crate::error::HistoryError;
use crate::schema::{self, Engine};
use crate::target::{prepare_sqlite_file, HistoryTarget};

pub use lines::{HistoryQuery, LINE_QUEUE};
pub use marks::{BucketCounts, MarkGap, Marks, MarksQuery, MAX_MARK_BUCKETS};
pub use retention::{Retention, RetentionReport};
pub use state::{PastState, StateError, StateRows};
pub use summary::ResourceSummary;

/// How long the first connection may take (a server that does not answer).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An open, migrated history database.
pub struct HistoryStore {
    pool: AnyPool,
    engine: Engine,
    /// The target as the user may see it (no password).
    label: String,
    ids: Mutex<Ids>,
    /// Written before schema version 4: a window's reader fetches the
    /// chains of patches between versions ahead (`lines`).
    between_version_patches: bool,
}

/// Ids already looked up, and where each object's chain stands.
#[derive(Default)]
struct Ids {
    clusters: HashMap<String, i64>,
    resources: HashMap<(i64, String), i64>,
    /// Each resource's last stored time: a delta is never stored before it
    /// (see [`Ids::stored_time`]).
    last_ms: HashMap<i64, i64>,
    objects: HashMap<(i64, String), ObjectIds>,
}

impl Ids {
    /// The time a delta of `resource_id` that arrived at `at_ms` is stored
    /// at: never before the resource's last one. Within a process the
    /// recorder's clock never goes back, but a restart reads the system
    /// clock again, which may have been set back; an object's rows in
    /// time order are then still its rows in id order, which is what lets
    /// a chain be read through the (object, time) index alone.
    fn stored_time(&mut self, resource_id: i64, at_ms: i64) -> i64 {
        let last = self.last_ms.entry(resource_id).or_insert(i64::MIN);
        *last = (*last).max(at_ms);
        *last
    }
}

#[derive(Debug, Clone)]
struct ObjectIds {
    id: i64,
    /// `None`: its next version is written whole.
    chain: Option<Chain>,
    gone: bool,
}

impl std::fmt::Debug for HistoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryStore")
            .field("engine", &self.engine)
            .field("label", &self.label)
            .finish()
    }
}

/// SQLite reads the file through a memory map, not a `pread` copy of
/// each page: its own page cache is 2 MB a connection, so every query read
/// its pages again from the kernel. One namespace's 10-minute window of a
/// million-delta store took 150–240 ms instead of 240–300 ms (A/B,
/// alternating runs). The pages touched count in the process's RSS as file
/// pages (the kernel's cache, shared and reclaimable), not as memory of its
/// own. SQLite's build caps the map at just under 2 GiB; a larger file reads
/// its remainder as before.
const MMAP_SIZE: &str = "PRAGMA mmap_size = 2147418112";

impl HistoryStore {
    /// Opens (creating a SQLite file 0600 in a 0700 folder if missing) and
    /// migrates the database `target` names. `Off` is the caller's to
    /// handle: it is refused here.
    pub async fn open(target: &HistoryTarget) -> Result<HistoryStore, HistoryError> {
        sqlx::any::install_default_drivers();
        let label = target.to_string();
        let (engine, url, connections) = match target {
            HistoryTarget::Off => {
                return Err(HistoryError::BadTarget {
                    given: label,
                    problem: "no database to open",
                })
            }
            HistoryTarget::Sqlite(path) => (Engine::Sqlite, sqlite_url(path, &label)?, 4),
            HistoryTarget::Postgres(url) => (Engine::Postgres, url.clone(), 8),
        };
        // One connection first: a file that is not a database, or a server
        // that does not answer, is said at once and in its own words (a
        // pool would retry until its timeout and say only that).
        let probe = tokio::time::timeout(CONNECT_TIMEOUT, AnyConnection::connect(&url)).await;
        let probe = match probe {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(source)) => Err(source),
            Err(_) => Err(sqlx::Error::PoolTimedOut),
        };
        let mut probe = probe.map_err(|source| match engine {
            Engine::Sqlite => HistoryError::Unreadable {
                target: label.clone(),
                detail: source.to_string(),
            },
            Engine::Postgres => HistoryError::Open {
                target: label.clone(),
                source,
            },
        })?;
        if engine == Engine::Sqlite {
            prepare_sqlite(&mut probe, &label).await?;
        }
        let _ = probe.close().await;
        let mut options = AnyPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(Duration::from_secs(10));
        if engine == Engine::Sqlite {
            options = options.after_connect(|conn, _| {
                Box::pin(async move {
                    use sqlx::Executor;
                    conn.execute("PRAGMA busy_timeout = 10000").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    conn.execute(MMAP_SIZE).await?;
                    Ok(())
                })
            });
        }
        let pool = options
            .connect(&url)
            .await
            .map_err(|source| HistoryError::Open {
                target: label.clone(),
                source,
            })?;
        schema::migrate(&pool, engine, &label).await?;
        let between_version_patches = schema::may_hold_between_version_patches(&pool).await?;
        Ok(HistoryStore {
            pool,
            engine,
            label,
            ids: Mutex::new(Ids::default()),
            between_version_patches,
        })
    }

    /// The database as the user may see it (`sqlite:/…`, a PostgreSQL URL
    /// without its password).
    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Whether the database answers now (the recorder's probe while it
    /// waits for an unavailable one to come back).
    pub async fn ping(&self) -> Result<(), HistoryError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(HistoryError::database("checked the database answers"))
    }

    /// Closes every connection (the end of serve or a test).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn forget_chains(&self) {
        if let Ok(mut ids) = self.ids.lock() {
            *ids = Ids::default();
        }
    }

    /// A resource's id, if anything was ever recorded for it.
    async fn find_resource(
        &self,
        cluster: &str,
        resource: &str,
    ) -> Result<Option<i64>, HistoryError> {
        sqlx::query_scalar(
            "SELECT r.id FROM ds_resources r JOIN ds_clusters c ON c.id = r.cluster_id \
             WHERE c.uid = $1 AND r.name = $2",
        )
        .bind(cluster)
        .bind(resource)
        .fetch_optional(&self.pool)
        .await
        .map_err(HistoryError::database("looked up a resource"))
    }
}

/// `sqlite://PATH?mode=rwc` after creating the file privately; paths sqlx
/// would read as URL syntax are refused rather than misread.
fn sqlite_url(path: &Path, label: &str) -> Result<String, HistoryError> {
    let text = path.to_str().ok_or_else(|| HistoryError::BadTarget {
        given: label.to_string(),
        problem: "the SQLite path is not valid UTF-8",
    })?;
    if text.contains(['?', '#', '%']) {
        return Err(HistoryError::BadTarget {
            given: label.to_string(),
            problem: "the SQLite path may not hold ?, # or %",
        });
    }
    prepare_sqlite_file(path)?;
    Ok(format!("sqlite://{text}?mode=rwc"))
}

/// A SQLite file: refuse one that is not a database or holds another
/// program's tables (left as it is), then WAL mode and incremental vacuum
/// (set before the first table, so retention can give pages back).
async fn prepare_sqlite(connection: &mut AnyConnection, label: &str) -> Result<(), HistoryError> {
    let unreadable = |detail: String| HistoryError::Unreadable {
        target: label.to_string(),
        detail,
    };
    let foreign = schema::holds_foreign_tables(&mut *connection)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    if foreign {
        return Err(unreadable("it holds tables of another program".to_string()));
    }
    let check: String = sqlx::query_scalar("PRAGMA quick_check")
        .fetch_one(&mut *connection)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    if check != "ok" {
        return Err(unreadable(format!("SQLite's check says: {check}")));
    }
    for pragma in [
        "PRAGMA auto_vacuum = INCREMENTAL",
        "PRAGMA journal_mode = WAL",
    ] {
        sqlx::query(pragma)
            .execute(&mut *connection)
            .await
            .map_err(|e| unreadable(e.to_string()))?;
    }
    Ok(())
}
