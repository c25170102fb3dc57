//! What the two recorded-history benches (`history`, `history_scale`)
//! share: a fresh database on the PostgreSQL server they are given (and
//! settled after it is filled), the delta the recorder would hand the store for a pod, writes handed to the
//! store in batches, the reference every read figure is held to (parsing
//! the versions' JSON from memory) and that figure, and a GET through serve
//! timed with its body read whole.

#![allow(dead_code)]

use std::time::Instant;

use deltascope_history::{ClusterId, DeltaRecord, HistoryStore, HistoryTarget, Write};
use deltascope_informer::{DeltaType, JsonValue};
use serde_json::Value;

use crate::common::{self, Figure, HttpClient};

/// A fresh database named `PREFIX_PID` on the PostgreSQL `server`.
pub async fn fresh_postgres(server: &str, prefix: &str) -> HistoryTarget {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(server)
        .await
        .expect("the PostgreSQL server");
    let name = format!("{prefix}_{}", std::process::id());
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
        .execute(&pool)
        .await;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("a database");
    pool.close().await;
    let (base, _) = server.rsplit_once('/').expect("a URL with a database");
    HistoryTarget::Postgres(format!("{base}/{name}"))
}

/// A PostgreSQL database just filled, brought to the steady state a
/// recorder's database reads in: its statistics gathered and its dirty
/// pages written (`VACUUM ANALYZE`, `CHECKPOINT`). Read at once, the bulk
/// load's autovacuum and checkpoint run beside the reads: one namespace's
/// window read 386 ms in the bench then, 125–156 ms from the same database
/// a few minutes later. Nothing to do for SQLite.
pub async fn settle(target: &HistoryTarget) {
    let HistoryTarget::Postgres(url) = target else {
        return;
    };
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url)
        .await
        .expect("the PostgreSQL server");
    for statement in ["VACUUM ANALYZE", "CHECKPOINT"] {
        if let Err(error) = sqlx::query(statement).execute(&pool).await {
            eprintln!("history: {statement} before the reads failed: {error}");
        }
    }
    pool.close().await;
}

/// The delta the recorder hands the store for the pod `object` (in the
/// informer's compact form, as its store holds it).
pub fn record(
    object: JsonValue,
    kind: DeltaType,
    at_ms: i64,
    previous: Option<JsonValue>,
) -> Write {
    let meta = object.root().get("metadata");
    let field = |name: &str| {
        meta.and_then(|m| m.get(name))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let rv = field("resourceVersion");
    Write::Delta(DeltaRecord {
        resource: "pods".into(),
        namespace: field("namespace"),
        name: field("name"),
        uid: field("uid"),
        resource_version: rv.clone(),
        store_resource_version: rv,
        kind,
        tombstone: false,
        at_ms,
        managers: vec!["kubelet".into()],
        object,
        previous,
    })
}

/// Writes handed to the store in batches of 1,000.
pub struct Batches<'a> {
    store: &'a HistoryStore,
    cluster: &'a ClusterId,
    batch: Vec<Write>,
}

impl<'a> Batches<'a> {
    pub fn new(store: &'a HistoryStore, cluster: &'a ClusterId) -> Batches<'a> {
        Batches {
            store,
            cluster,
            batch: Vec::with_capacity(1_000),
        }
    }

    /// Adds `write`, writing the batch once it holds 1,000.
    pub async fn push(&mut self, write: Write) {
        self.batch.push(write);
        if self.batch.len() == 1_000 {
            self.flush().await;
        }
    }

    /// Writes what the batch holds (`last` after it, however many that
    /// makes), even nothing.
    pub async fn flush_with(&mut self, last: Option<Write>) {
        self.batch.extend(last);
        self.flush().await;
    }

    async fn flush(&mut self) {
        self.store
            .write(self.cluster, &self.batch)
            .await
            .expect("write");
        self.batch.clear();
    }
}

/// A read of the store: `ours` ms against parsing the versions' JSON from
/// memory (`reference` ms), held to `goal_ms`.
pub fn read_figure(
    id: String,
    figure: String,
    (ours, reference): (f64, f64),
    goal_ms: f64,
    note: String,
) -> Figure {
    Figure {
        id,
        figure,
        unit: "ms",
        ours,
        reference,
        reference_name: "parsing those versions' JSON from memory".into(),
        ratio: ours / reference,
        goal: format!("≤ {goal_ms} ms"),
        met: ours <= goal_ms,
        note,
    }
}

/// GETs `target` and reads its body whole: the status, the body and the
/// ms it all took.
pub async fn timed_get(client: &HttpClient, target: &str) -> (u16, bytes::Bytes, f64) {
    let clock = Instant::now();
    let response = client
        .request(common::get(target))
        .await
        .expect("a response");
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("a body")
        .to_bytes();
    (status, body, clock.elapsed().as_secs_f64() * 1e3)
}

/// The best of 5 parses of `versions` into `serde_json` values (ms).
pub fn parse_ms<S: AsRef<str>>(versions: &[S]) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let clock = Instant::now();
        for text in versions {
            let value: Value = serde_json::from_str(text.as_ref()).expect("JSON");
            std::hint::black_box(value);
        }
        best = best.min(clock.elapsed().as_secs_f64() * 1e3);
    }
    best.max(1e-3)
}
