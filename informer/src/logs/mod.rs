//! Pod logs, followed live, as a sans-IO core like the reflector: a
//! [`LogFollower`] per container asks for `pods/{name}/log` with
//! timestamps, splits the stream into [`LogLine`]s (a blank line is kept,
//! a very long one is truncated and a binary one made readable, never an
//! error), and after any break reconnects from the last timestamp it holds
//! (`sinceTime`) without a duplicated or a missing line, marking the break.
//! A [`LogRing`] holds the lines of one view (one container, all of a pod,
//! or a workload's pods interleaved by timestamp) within a line and a byte
//! bound, counting what it evicts.

mod follower;
mod line;
mod ring;

pub use follower::{LogError, LogEvent, LogFollower, LogOptions, LogSource};
pub use line::{LogLine, LogSplitter, DEFAULT_MAX_LOG_LINE};
pub use ring::{LogRing, RingBounds};
