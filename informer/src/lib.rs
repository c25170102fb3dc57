//! The informer core: client-go's `tools/cache` machinery, sans-IO and with no
//! web dependency. Bytes go in (`framer`), typed watch events come out
//! (`event`), the `reflector` decides what to request next, the `delta_fifo`
//! queues per-key deltas, the `store` holds the current objects with indexes,
//! `history` keeps every delta for the timeline, and `informer` ties them
//! together and fans changes out to handlers. Time comes in from the caller
//! as [`Millis`]; nothing here reads a clock, spawns or does I/O, so it
//! builds for `wasm32-unknown-unknown` unchanged.

pub mod backoff;
pub mod clock;
pub mod compact_sort;
pub mod config;
pub mod delta_fifo;
pub mod event;
pub mod expiration_cache;
pub mod field_managers;
pub mod framer;
pub mod history;
#[allow(clippy::module_inception)]
pub mod informer;
pub mod json;
pub mod key_hash;
pub mod logs;
pub mod object;
pub mod object_events;
pub mod persist;
pub mod reflector;
pub mod relations;
pub mod store;
pub mod table;
pub mod undelta_store;
pub mod well_known;

#[cfg(test)]
mod failure_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod table_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use backoff::{Backoff, BackoffConfig, SplitMix64};
pub use clock::Millis;
pub use config::{InformerConfig, InformerKey};
pub use delta_fifo::{
    Delta, DeltaFifo, DeltaObject, DeltaType, Deltas, KnownObjects, PopResult, ProcessResult,
};
pub use deltascope_facts::digest::{digest_of, digest_of_sorted};
pub use event::{
    decode_event, decode_event_with_columns, decode_list, DecodeError, ListPage, Status, WatchEvent,
};
pub use expiration_cache::ExpirationCache;
pub use framer::{FramerError, LineFramer, DEFAULT_MAX_LINE};
pub use history::{Gap, History, HistoryConfig, HistoryEntry, RestoreError, StoredHistory};
pub use informer::{
    ChangeCursor, ChangeKind, ChangeRead, EventHandler, Informer, Resume, StoreChange,
    DEFAULT_CHANGE_LOG_CAPACITY,
};
/// The check and the parser moved into `json`; their old paths stay.
pub use json::{check as json_check, parse as json_parse};
pub use json::{
    CompactError, JsonArray, JsonKind, JsonNumber, JsonObject, JsonRef, JsonValue, PatchApplyError,
};
pub use object::{KubeObject, ObjectError, ObjectRef, ResourceRef};
pub use reflector::{
    Action, Input, Op, Phase, Reflector, ReflectorError, ReflectorStatus, RequestId, RequestKind,
    StoreOp,
};
pub use store::{IndexError, IndexFunc, Indexer};
pub use table::{ColumnDefinition, RowCells, TABLE_ACCEPT};
pub use undelta_store::{PushFunc, UndeltaStore};
