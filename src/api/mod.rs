//! Formats the page reads and writes, below the transport and the views:
//! API discovery documents (`resources`), recordings of a history
//! (`recording`, which also reads the lines of serve's
//! `GET /_deltascope/history`), serve's history summary
//! (`history_summary`) and one object's record from serve
//! (`object_record`: its versions and gaps, and the request's path). No web
//! dependency; tested natively.

pub mod history_summary;
pub mod object_record;
pub mod recording;
pub mod resources;
