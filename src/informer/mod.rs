//! The informer core: client-go's `tools/cache` machinery, sans-IO and with no
//! web dependency. Bytes go in (`framer`), typed watch events come out
//! (`event`), the `reflector` decides what to request next, the `delta_fifo`
//! queues per-key deltas, the `store` holds the current objects with indexes,
//! and `history` keeps every delta for the timeline.
