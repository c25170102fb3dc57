//! Time as the informer core sees it: milliseconds on the caller's
//! monotonic clock, handed in with every input. Nothing in the crate reads
//! a clock itself; this is the one type every part counts time in.

/// Milliseconds on the caller's monotonic clock (`performance.now()` in the
/// page).
pub type Millis = u64;
