//! The recorded history: what the recorder (`deltascope serve` or
//! `deltascope record`) writes and serve's history routes read back, kept
//! in a real database — a SQLite file by default, PostgreSQL for a team —
//! through one library for both, sqlx (its Any driver: the same statements
//! on both engines, only two column types differ; see `schema`).
//!
//! - `record`: the facts one recorded change is made of (a delta, a gap, a
//!   watermark), for one cluster and resource.
//! - `target`: where `--history` points (`off`, `sqlite:PATH`,
//!   `postgres://…`) and the default file.
//! - `schema`: the tables and their versioned migrations.
//! - `codec`: a full body now and then, JSON Patches against it between,
//!   compressed; `compose` keeps a chain's patch against its full as
//!   versions come; `rebuild` reads a version back from its rows,
//!   `splice` applying a patch on the full's text.
//! - `usage`: resource usage over time (`kubectl top`'s numbers, per
//!   metrics window), its records and queries.
//! - `store`: [`HistoryStore`] — open, write, read back (a history as
//!   NDJSON lines, the state at a moment, a summary) and retention.

pub mod codec;
pub mod compose;
pub mod error;
pub mod rebuild;
pub mod record;
pub mod schema;
pub mod splice;
pub mod store;
pub mod target;
#[cfg(test)]
mod test_json;
pub mod usage;

pub use error::HistoryError;
pub use record::{
    ClusterId, DeltaRecord, GapReason, GapRecord, RecordedState, WatermarkRecord, Write,
};
pub use store::{
    BucketCounts, HistoryQuery, HistoryStore, MarkGap, Marks, MarksQuery, PastState,
    ResourceSummary, Retention, RetentionReport, StateError, StateRows, MAX_MARK_BUCKETS,
};
pub use target::{default_sqlite_path, HistoryTarget};
pub use usage::{
    ContainerUsage, UsagePoint, UsageQuery, UsageRecord, UsageResource, UsageSample, UsageSeries,
    UsageSummary, UsageTarget, MAX_USAGE_POINTS,
};
