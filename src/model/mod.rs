//! View models: what the views show, computed from stores and histories
//! with no web dependency, so each is tested natively
//! (`cargo test -p deltascope --lib`). Views read these; these read the
//! informer core, `crate::api` and `crate::address` (the links they write),
//! never the page's state, the transport or the views.
//!
//! - `table`: columns, cells, sorting, filtering, sorted row keys;
//! - `top`: `kubectl top`'s columns in the pods and nodes tables, joined
//!   from the metrics API's last window, and what the page says of it;
//!   `top_workloads`: a workloads table's rows as the sums of their pods;
//! - `usage_series`, `usage_chart`: an object's CPU and memory over time
//!   (the page's samples joined with serve's record) and its chart's
//!   lines, limits and the object's history marks on one time axis;
//! - `printer_columns`: a CRD's additionalPrinterColumns (JSONPath subset);
//! - `timeline`: the visible range, lanes and buckets;
//! - `delta_select`: the delta list's filters and selection;
//! - `timeline_reach`: serve's record counted per bucket, drawn in a lane
//!   before the page's own history;
//! - `delta_list`: the delta list's rows;
//! - `past`: the store at a moment (time travel), with its digest;
//! - `recorded_past`: a moment before the page's own history, from
//!   serve's record (its state read a step at a time) and its words;
//! - `object_details`, `object_text`: the object view (YAML, folded
//!   managedFields, owners, versions and their diffs);
//! - `object_versions`: an object's versions from serve's record joined to
//!   the page's own, never doubled, with the record's gaps;
//! - `first_seen`: how an object's history begins — "created" only when
//!   observed, else "first seen 14:02 (created 20d ago)";
//! - `object_story`, `who_changed`: the object's events (expired ones
//!   kept), related objects, "it and everything it owns" as one history,
//!   and the field managers behind each update (`story_who`: kept across
//!   the story's rebuilds, read within a budget per build);
//! - `status_line`, `plain_error`: the status and failure wording;
//! - `serve_history`: what serve does with the cluster's history, in the
//!   status bar's words;
//! - `connection`: the channel's state and how the watches travel, in words;
//! - `store_digest`: when and how the shown digest is recomputed (large
//!   stores a slice per frame);
//! - `fade`: deleted rows fading out;
//! - `kept_summary`: the kept resources' chips and usage;
//! - `resource_picker`: what the top bar's resource picker offers;
//! - `log_session`, `log_frame`: a logs view's followers, ring and breaks
//!   (sans-IO), and what one frame of it shows;
//! - `decimal`: the text of an `f64` (sizes, seconds, pixels) without the
//!   standard float formatting, which the page's wasm then does not carry.

pub mod connection;
pub mod decimal;
pub mod delta_list;
pub mod delta_select;
pub mod fade;
pub mod first_seen;
pub mod kept_summary;
pub mod log_frame;
pub mod log_session;
pub mod object_details;
pub mod object_related;
pub mod object_story;
pub mod object_text;
pub mod object_versions;
pub mod past;
pub mod plain_error;
pub mod printer_columns;
pub mod recorded_past;
pub mod resource_picker;
pub mod serve_history;
pub mod status_line;
pub mod store_digest;
pub mod story_who;
pub mod table;
pub mod timeline;
pub mod timeline_reach;
pub mod top;
pub mod top_workloads;
pub mod usage_chart;
pub mod usage_series;
pub mod usage_stored;
pub mod who_changed;
