//! Formats the page reads and writes, below the transport and the views:
//! API discovery documents (`resources`) and recordings of a history
//! (`recording`). No web dependency; tested natively.

pub mod recording;
pub mod resources;
