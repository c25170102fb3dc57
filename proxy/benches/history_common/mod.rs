//! What the two recorded-history benches (`history`, `history_scale`)
//! share: a fresh database on the PostgreSQL server they are given, the
//! delta the recorder would hand the store for a pod, and the reference
//! every read figure is held to (parsing the versions' JSON from memory).

#![allow(dead_code)]

use std::time::Instant;

use deltascope_history::{DeltaRecord, HistoryTarget, Write};
use deltascope_informer::{DeltaType, JsonValue};
use serde_json::Value;

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
