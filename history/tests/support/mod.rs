//! What the storage tests share: a store on each engine — a SQLite file in
//! a fresh folder, and a fresh database on the PostgreSQL server
//! `cargo xtask test` starts (its URL in `DELTASCOPE_TEST_POSTGRES`) — and
//! deltas to write.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use deltascope_history::{ClusterId, DeltaRecord, HistoryStore, HistoryTarget, Write};
use deltascope_informer::{DeltaType, JsonValue};
use serde_json::{json, Value};

/// The engines every storage test runs on.
#[derive(Debug, Clone, Copy)]
pub enum Engine {
    Sqlite,
    Postgres,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A name no other test takes, in this run or an earlier one: the process
/// id and a counter alone repeat once the system reuses a process id (each
/// test runs in a process of its own), and a folder left by an earlier run
/// then held another test's database.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The superuser URL of the test run's PostgreSQL; a test without it fails
/// saying how to get one.
pub fn postgres_server() -> String {
    std::env::var("DELTASCOPE_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "DELTASCOPE_TEST_POSTGRES is not set: these tests need a real PostgreSQL server. \
             `cargo xtask test` installs and starts one and sets it; to run them alone, start \
             one and set DELTASCOPE_TEST_POSTGRES=postgres://USER@127.0.0.1:PORT/postgres"
        )
    })
}

/// A fresh, empty database on the test server; its URL.
pub async fn fresh_postgres_database() -> String {
    let server = postgres_server();
    let name = unique("ds_test");
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&server)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL at {server}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("create a test database");
    pool.close().await;
    let (base, _) = server.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{name}")
}

/// A folder of its own under the system's temporary folder.
pub fn fresh_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("ds-history"));
    // never an earlier run's: a store found there would not be fresh
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// Where a fresh store of `engine` lives.
pub async fn fresh_target(engine: Engine) -> HistoryTarget {
    match engine {
        Engine::Sqlite => HistoryTarget::Sqlite(fresh_dir().join("history.sqlite")),
        Engine::Postgres => HistoryTarget::Postgres(fresh_postgres_database().await),
    }
}

pub async fn fresh_store(engine: Engine) -> (HistoryStore, HistoryTarget) {
    let target = fresh_target(engine).await;
    let store = HistoryStore::open(&target)
        .await
        .unwrap_or_else(|e| panic!("open {target}: {e}"));
    (store, target)
}

/// A pool of the database `target` names, beside the store.
pub async fn connect(target: &HistoryTarget) -> sqlx::AnyPool {
    let url = match target {
        HistoryTarget::Sqlite(path) => format!("sqlite://{}", path.display()),
        HistoryTarget::Postgres(url) => url.clone(),
        HistoryTarget::Off => unreachable!(),
    };
    sqlx::AnyPool::connect(&url).await.unwrap()
}

pub fn cluster() -> ClusterId {
    ClusterId("4f7c-cluster".into())
}

/// A pod as a watch would send it.
pub fn pod(namespace: &str, name: &str, rv: u64, phase: &str, restarts: u64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}"),
                     "resourceVersion": rv.to_string(), "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "nginx:1.27"}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "restartCount": restarts}]}
    })
}

/// `value` in the informer's compact form, as the recorder hands objects.
pub fn compact(value: &Value) -> JsonValue {
    JsonValue::parse(value.to_string().as_bytes()).expect("JSON")
}

/// A delta of `object` at `at_ms`, patched against `previous` when given.
pub fn delta(kind: DeltaType, object: &Value, at_ms: i64, previous: Option<&Value>) -> Write {
    let meta = &object["metadata"];
    let rv = meta["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Write::Delta(DeltaRecord {
        resource: "pods".into(),
        namespace: meta["namespace"].as_str().unwrap_or_default().into(),
        name: meta["name"].as_str().unwrap_or_default().into(),
        uid: meta["uid"].as_str().unwrap_or_default().into(),
        resource_version: rv.clone(),
        store_resource_version: rv,
        kind,
        tombstone: false,
        at_ms,
        managers: vec!["kubelet".into()],
        object: compact(object),
        previous: previous.map(compact),
    })
}

/// Runs a storage test on both engines, each in a runtime of its own.
#[macro_export]
macro_rules! on_both_engines {
    ($name:ident, $body:ident) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $body(support::Engine::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $body(support::Engine::Postgres).await;
            }
        }
    };
}
