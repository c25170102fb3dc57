//! Opening a history database: created private, migrated, and refused —
//! left exactly as found — when it is not one deltascope can read or is of
//! a newer schema.

use crate::support;

use deltascope_history::{HistoryError, HistoryStore, HistoryTarget};
use support::{connect, fresh_dir, fresh_store, fresh_target};

async fn a_newer_schema_is_refused_and_left_alone(engine: support::Engine) {
    let target = fresh_target(engine).await;
    let store = HistoryStore::open(&target).await.unwrap();
    store.close().await;
    let pool = connect(&target).await;
    sqlx::query("UPDATE ds_meta SET value = '99' WHERE key = 'schema_version'")
        .execute(&pool)
        .await
        .unwrap();
    let error = HistoryStore::open(&target).await.unwrap_err();
    assert!(
        matches!(
            error,
            HistoryError::NewerSchema {
                found: 99,
                known: deltascope_history::schema::SCHEMA_VERSION,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("newer than this deltascope knows"),
        "{error}"
    );
    let version: String =
        sqlx::query_scalar("SELECT value FROM ds_meta WHERE key = 'schema_version'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(version, "99");
    pool.close().await;
}
on_both_engines!(newer_schema, a_newer_schema_is_refused_and_left_alone);

async fn opening_twice_migrates_once(engine: support::Engine) {
    let (store, target) = fresh_store(engine).await;
    store.close().await;
    let again = HistoryStore::open(&target).await.expect("a second open");
    again.ping().await.unwrap();
    assert!(again.summary().await.unwrap().is_empty());
}
on_both_engines!(reopen, opening_twice_migrates_once);

#[tokio::test]
async fn a_file_that_is_not_a_database_is_left_as_it_is() {
    let path = fresh_dir().join("history.sqlite");
    let garbage: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let error = HistoryStore::open(&HistoryTarget::Sqlite(path.clone()))
        .await
        .unwrap_err();
    assert!(matches!(error, HistoryError::Unreadable { .. }), "{error}");
    assert!(error.to_string().contains("left it as it is"), "{error}");
    assert!(
        error.to_string().contains("not a database"),
        "says why in SQLite's words: {error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
    assert!(!path.with_extension("sqlite-wal").exists());
}

#[tokio::test]
async fn another_programs_database_is_left_as_it_is() {
    let path = fresh_dir().join("theirs.sqlite");
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let before = std::fs::read(&path).unwrap();
    let error = HistoryStore::open(&HistoryTarget::Sqlite(path.clone()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("another program"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[cfg(unix)]
#[tokio::test]
async fn the_sqlite_file_is_private_and_in_wal_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (store, target) = fresh_store(support::Engine::Sqlite).await;
    let HistoryTarget::Sqlite(path) = &target else {
        unreachable!()
    };
    store
        .write(
            &support::cluster(),
            &[support::delta(
                deltascope_informer::DeltaType::Added,
                &support::pod("default", "a", 1, "Pending", 0),
                1,
                None,
            )],
        )
        .await
        .unwrap();
    for file in [path.clone(), path.with_extension("sqlite-wal")] {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    let dir = path.parent().unwrap();
    assert!(dir.exists());
}

#[tokio::test]
async fn an_unreachable_postgres_is_an_open_error_naming_it_without_password() {
    let target = HistoryTarget::Postgres("postgres://someone:hunter2@127.0.0.1:9/nowhere".into());
    let error = HistoryStore::open(&target).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, HistoryError::Open { .. }), "{text}");
    assert!(text.contains("127.0.0.1:9"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

/// A database written at schema version 1 (the (resource, time) index
/// without the delta type) is brought to the current version on open, its
/// records kept and counted right.
async fn a_version_1_database_is_migrated_and_keeps_its_records(engine: support::Engine) {
    let (store, target) = fresh_store(engine).await;
    let pod = support::pod("default", "web-0", 101, "Pending", 0);
    store
        .write(
            &support::cluster(),
            &[support::delta(
                deltascope_informer::DeltaType::Added,
                &pod,
                1_000,
                None,
            )],
        )
        .await
        .unwrap();
    store.close().await;
    let pool = connect(&target).await;
    let mut to_version_1 = VERSION_3_UNDONE.to_vec();
    to_version_1.extend([
        "DROP INDEX ds_deltas_by_time",
        "CREATE INDEX ds_deltas_by_time ON ds_deltas (resource_id, at_ms)",
        "UPDATE ds_meta SET value = '1' WHERE key = 'schema_version'",
    ]);
    // one connection: each sees the schema the one before left
    let mut connection = pool.acquire().await.unwrap();
    for stmt in to_version_1 {
        sqlx::query(stmt).execute(&mut *connection).await.unwrap();
    }
    drop(connection);
    let store = HistoryStore::open(&target).await.expect("migrated");
    let version: String =
        sqlx::query_scalar("SELECT value FROM ds_meta WHERE key = 'schema_version'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        version,
        deltascope_history::schema::SCHEMA_VERSION.to_string()
    );
    let marks = store
        .marks(
            &support::cluster(),
            &deltascope_history::MarksQuery {
                resource: "pods".into(),
                namespace: None,
                since_ms: 0,
                until_ms: 2_000,
                buckets: 2,
            },
        )
        .await
        .unwrap()
        .expect("pods");
    assert_eq!(marks.buckets.len(), 1);
    assert_eq!(marks.buckets[0].0, 1);
    assert_eq!(marks.buckets[0].1.added, 1);
    pool.close().await;
}
on_both_engines!(
    version_1,
    a_version_1_database_is_migrated_and_keeps_its_records
);

/// What schema version 3 added, undone: a database as version 2 left it.
const VERSION_3_UNDONE: [&str; 2] = ["DROP TABLE ds_usage", "DROP TABLE ds_usage_totals"];

/// A database written at schema version 2 (no usage tables) is brought to
/// the current version on open: its deltas kept, and usage written and read
/// back.
async fn a_version_2_database_gets_the_usage_tables(engine: support::Engine) {
    let (store, target) = fresh_store(engine).await;
    let pod = support::pod("default", "web-0", 101, "Running", 0);
    let added = support::delta(deltascope_informer::DeltaType::Added, &pod, 1_000, None);
    store.write(&support::cluster(), &[added]).await.unwrap();
    store.close().await;
    let pool = connect(&target).await;
    for stmt in VERSION_3_UNDONE {
        sqlx::query(stmt).execute(&pool).await.unwrap();
    }
    sqlx::query("UPDATE ds_meta SET value = '2' WHERE key = 'schema_version'")
        .execute(&pool)
        .await
        .unwrap();
    let store = HistoryStore::open(&target).await.expect("migrated");
    let version: String =
        sqlx::query_scalar("SELECT value FROM ds_meta WHERE key = 'schema_version'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        version,
        deltascope_history::schema::SCHEMA_VERSION.to_string()
    );
    let summary = store.summary().await.unwrap();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].deltas, 1);
    assert_eq!(store.usage_summary().await.unwrap(), None);
    let sample = deltascope_history::UsageSample {
        namespace: "default".into(),
        name: "web-0".into(),
        cpu_nanocores: 5,
        memory_bytes: 6,
        containers: Vec::new(),
        controller: "StatefulSet/web".into(),
        workload: "StatefulSet/web".into(),
    };
    let usage = deltascope_history::Write::Usage(deltascope_history::UsageRecord {
        resource: deltascope_history::UsageResource::Pods,
        at_ms: 2_000,
        window_ms: 15_000,
        samples: vec![sample],
    });
    store.write(&support::cluster(), &[usage]).await.unwrap();
    let series = store
        .usage(
            &support::cluster(),
            &deltascope_history::UsageQuery {
                resource: deltascope_history::UsageResource::Pods,
                namespace: Some("default".into()),
                target: deltascope_history::UsageTarget::Owner("StatefulSet/web".into()),
                since_ms: 0,
                until_ms: 3_000,
                points: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(series.points.len(), 1);
    assert_eq!(series.points[0].cpu_nanocores, 5);
    pool.close().await;
}
on_both_engines!(version_2, a_version_2_database_gets_the_usage_tables);
