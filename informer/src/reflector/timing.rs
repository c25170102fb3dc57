//! How long the reflector waits for what: the streaming-list fallback's
//! deadlines, when a resumed watch counts as caught up, when a watch is a
//! failure for being short or presumed hung, and the caps on what it keeps
//! of an error and honours of a Retry-After.

use crate::clock::Millis;

/// Maximum bytes kept of an error body.
pub(super) const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest Retry-After honoured.
pub(super) const MAX_RETRY_AFTER_SECS: u64 = 600;
/// A watch shorter than this with no events is an error.
pub(super) const SHORT_WATCH: Millis = 1_000;
/// Streaming-list fallback: once events flow, the `initial-events-end`
/// bookmark is expected no earlier than this after the start ...
pub const STREAMING_MIN_WAIT: Millis = 3_000;
/// ... and at the latest this long after the stream went quiet ...
pub const STREAMING_QUIET: Millis = 2_000;
/// ... and, however busy the stream, at the latest this long after the
/// start (past an older server's first periodic bookmark, about a minute).
pub const STREAMING_MAX: Millis = 90_000;
/// A resumed watch whose stream has been quiet this long has caught up.
pub const CATCH_UP_QUIET: Millis = 1_000;
/// A resumed watch has caught up this long after it was sent at the latest
/// (a server that sends no bookmark, under steady churn).
pub const CATCH_UP_MAX: Millis = 30_000;
/// A watch still open this long after its `timeoutSeconds` is presumed hung
/// (a proxy that never closes): it is cancelled and re-opened.
pub(super) const WATCH_GRACE_SECS: u64 = 60;
