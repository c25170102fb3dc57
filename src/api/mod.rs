//! Formats the page reads and writes, below the transport and the views:
//! who the cluster is (`cluster_identity`: the kube-system uid, serve's
//! name for it),
//! API discovery documents (`resources`), recordings of a history
//! (`recording`, which also reads the lines of serve's
//! `GET /_deltascope/history`), serve's history summary
//! (`history_summary`), one object's record from serve
//! (`object_record`: its versions and gaps, and the request's path) and a
//! resource's state at a moment from serve (`history_state`: read a few
//! items at a time, and what its 409 says) and its record counted per
//! bucket for the timeline (`history_marks`), and the metrics API's lists
//! (`resource_metrics`: what `kubectl top` reads; quantities are
//! `deltascope_facts::quantity`) and an object's usage as serve's recorder
//! kept it (`usage_history`). No web dependency; tested natively.

pub mod cluster_identity;
pub mod history_marks;
pub mod history_state;
pub mod history_summary;
pub mod object_record;
pub mod recording;
pub mod resource_metrics;
pub mod resources;
pub mod usage_history;
pub mod usage_list_reader;
