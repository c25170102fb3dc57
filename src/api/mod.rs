//! Formats the page reads and writes, below the transport and the views:
//! API discovery documents (`resources`), recordings of a history
//! (`recording`, which also reads the lines of serve's
//! `GET /_deltascope/history`) and serve's history summary
//! (`history_summary`). No web dependency; tested natively.

pub mod history_summary;
pub mod recording;
pub mod resources;
