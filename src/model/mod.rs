//! View models: what the views show, computed from stores and histories
//! with no web dependency, so each is tested natively
//! (`cargo test -p deltascope --lib`). Views read these; these read the
//! informer core and `crate::api`, never the transport or the views.
//!
//! - `table`: columns, cells, sorting, filtering, sorted row keys;
//! - `printer_columns`: a CRD's additionalPrinterColumns (JSONPath subset);
//! - `timeline`: lanes, buckets and the delta list's selection;
//! - `past`: the store at a moment (time travel);
//! - `object_details`, `object_text`: the object view (YAML, folded
//!   managedFields, owners, versions and their diffs);
//! - `object_story`, `who_changed`: the object's events (expired ones
//!   kept), related objects, "it and everything it owns" as one history,
//!   and the field managers behind each update;
//! - `status_line`, `plain_error`: the status and failure wording;
//! - `store_digest`: when and how the shown digest is recomputed (large
//!   stores a slice per frame);
//! - `fade`: deleted rows fading out;
//! - `kept_summary`: the kept resources' chips and usage;
//! - `log_session`, `log_frame`: a logs view's followers, ring and breaks
//!   (sans-IO), and what one frame of it shows.

pub mod fade;
pub mod kept_summary;
pub mod log_frame;
pub mod log_session;
pub mod object_details;
pub mod object_story;
pub mod object_text;
pub mod past;
pub mod plain_error;
pub mod printer_columns;
pub mod status_line;
pub mod store_digest;
pub mod table;
pub mod timeline;
pub mod who_changed;
