//! The page's own state and decisions, with no web dependency (tested
//! natively): which browser database holds the cluster's stored history and
//! when to ask again who the cluster is (`cluster_identity`), when to ask
//! serve for its clusters again (`clusters_poll`), the `:` commands, which resources are kept live and how many
//! (`kept_set`), retention settings, when API discovery runs again
//! (`discovery_schedule`), what the address names and how the page moves
//! between addresses (`navigation`), the UI state with the actions that
//! change it (`state`), where its scroll areas are (`scroll`), the
//! logs view's display state (`log_ui`), and when the page asks serve about
//! the history it records and what its answer means (`serve_history`), and
//! when the object view asks serve for the object's recorded past
//! (`object_reach`), and what the object view reads for its relatives
//! (`related_reads`), and when time travel asks serve for the shown
//! resource as it was at a moment (`recorded_travel`), and when the
//! timeline asks serve for a lane's record counted per bucket
//! (`recorded_marks`), and when the pods and nodes tables ask the metrics
//! API for `kubectl top`'s numbers (`metrics_poll`), and when an object's
//! usage chart asks serve for the samples its recorder kept (`usage_reach`). The addresses themselves are
//! formats, one layer up (`crate::address`).

pub mod cluster_identity;
pub mod clusters_poll;
pub mod command;
pub mod discovery_schedule;
pub mod family_reach;
pub mod kept_set;
pub mod log_ui;
pub mod metrics_poll;
pub mod navigation;
pub mod object_reach;
pub mod recorded_deltas;
pub mod recorded_export;
pub mod recorded_marks;
pub mod recorded_travel;
pub mod related_reads;
pub mod retention;
pub mod scroll;
pub mod serve_history;
pub mod state;
pub mod usage_reach;
