//! The numbers of serve's memory bound, in one place: what one channel, one
//! session and the whole process may hold however a signed-in client behaves
//! (a frozen tab, a buggy script, a hostile local process with the token).
//!
//! Everything a client can make serve hold is counted here, by kind:
//!
//! - **queued frames** — bytes waiting in serve to be written to a channel:
//!   at most [`STREAM_BUFFER`] per stream, [`CHANNEL_BUFFER`] per channel and
//!   [`SESSION_BUFFER`] per session, every frame by its encoded size (data
//!   and Status bodies alike; upstream chunks are cut into frames of at most
//!   [`MAX_DATA_FRAME`] bytes first, so no single frame crosses a budget);
//! - **streams** — channel streams, open or finished but not yet written: at
//!   most [`MAX_STREAMS_PER_CHANNEL`] per channel and
//!   [`MAX_STREAMS_PER_SESSION`] per session, refused at control time beyond;
//! - **upstream requests in flight** — watches and followed logs take one of
//!   the session's `--max-watches` slots, every other request (lists, gets,
//!   logs) one of its `--max-requests` slots, on the channel or on a
//!   connection of its own alike; each holds at most one upstream read buffer
//!   ([`WATCH_READ_SIZE`] for a watch, at most [`MAX_UPSTREAM_READ`] otherwise)
//!   and the chunk being cut into frames;
//! - **control bodies** being read: at most [`MAX_CONTROLS_PER_SESSION`] of
//!   at most [`MAX_CONTROL_BYTES`] each;
//! - **connections**: `--max-connections`, each with its buffers
//!   ([`CONNECTION_COST`]), whoever holds them.
//!
//! [`SessionBound`] adds these up with a fixed cost per item; ARCHITECTURE.md
//! states the result and a test holds the text to it.

/// A stream's queue in serve, in bytes, before its upstream is no longer read.
pub const STREAM_BUFFER: usize = 256 * 1024;

/// The most data one frame carries; an upstream chunk is cut into such frames.
pub const MAX_DATA_FRAME: usize = 64 * 1024;

/// Everything queued on one channel, over all its streams.
pub const CHANNEL_BUFFER: usize = 4 * 1024 * 1024;

/// Everything queued on all of one session's channels.
pub const SESSION_BUFFER: usize = 8 * 1024 * 1024;

/// Channels one session may hold at once (one per tab); the oldest is closed beyond.
pub const MAX_CHANNELS_PER_SESSION: usize = 16;

/// Streams one channel may hold at once, finished but unwritten ones included.
pub const MAX_STREAMS_PER_CHANNEL: usize = 1024;

/// Streams one session may hold at once over all its channels.
pub const MAX_STREAMS_PER_SESSION: usize = 2048;

/// A channel control request's body at most (a page opens a few dozen
/// streams at once; 1,024 opens of 250-byte paths fit).
pub const MAX_CONTROL_BYTES: usize = 256 * 1024;

/// Control requests one session may have being read at once (one per tab
/// at a time is what the page sends).
pub const MAX_CONTROLS_PER_SESSION: usize = MAX_CHANNELS_PER_SESSION;

/// Default of `--max-watches`: watches and followed logs per session.
pub const DEFAULT_MAX_WATCHES: usize = 256;

/// Default of `--max-requests`: other upstream requests in flight per session.
pub const DEFAULT_MAX_REQUESTS: usize = 64;

/// Read size of an upstream watch connection (see `forward.rs`).
pub const WATCH_READ_SIZE: usize = 4096;

/// The largest read buffer of an upstream connection for other requests
/// (hyper's adaptive buffer otherwise grows to about 400 KiB).
pub const MAX_UPSTREAM_READ: usize = 64 * 1024;

/// Browser sessions kept at once; the least recently used is signed out beyond.
pub const MAX_SESSIONS: usize = 256;

/// What serve holds for one watch besides its read buffer: the upstream
/// connection, the relay task, the redactor's line (measured: 1,000 idle
/// watches on one session cost serve 20 KiB each, read buffers included).
pub const WATCH_COST: usize = 24 * 1024;

/// What serve holds for one other request: its read buffer, the chunk being
/// cut into frames (which may keep a previous read buffer alive) and the
/// connection.
pub const REQUEST_COST: usize = 2 * MAX_UPSTREAM_READ + 32 * 1024;

/// What one stream's entry costs besides its queue: its table slot, its
/// task, the frames' headers.
pub const STREAM_COST: usize = 2 * 1024;

/// What one browser connection holds besides what is counted above: hyper's
/// read buffer (request heads are at most 16 KiB), its write buffer (a
/// channel write is at most 64 KiB plus one frame) and the task.
pub const CONNECTION_COST: usize = 160 * 1024;

/// Whole Secret responses (lists) buffered for redaction at once, in the
/// whole process: each holds the upstream's whole response, whose size the
/// cluster decides, so the clients together may not multiply it.
pub const WHOLE_REDACTIONS: usize = 2;

// A frame fits a stream's queue, a stream's queue a channel's, a channel's a
// session's; so does a channel's stream count.
const _: () = assert!(MAX_DATA_FRAME < STREAM_BUFFER && STREAM_BUFFER < CHANNEL_BUFFER);
const _: () = assert!(CHANNEL_BUFFER <= SESSION_BUFFER);
const _: () = assert!(MAX_STREAMS_PER_CHANNEL <= MAX_STREAMS_PER_SESSION);

/// The bound of one session with the given flags, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBound {
    pub queued: usize,
    pub watches: usize,
    pub requests: usize,
    pub streams: usize,
    pub controls: usize,
}

impl SessionBound {
    pub fn new(max_watches: usize, max_requests: usize) -> Self {
        SessionBound {
            queued: SESSION_BUFFER,
            watches: max_watches * WATCH_COST,
            requests: max_requests * REQUEST_COST,
            streams: MAX_STREAMS_PER_SESSION * STREAM_COST,
            controls: MAX_CONTROLS_PER_SESSION * MAX_CONTROL_BYTES,
        }
    }

    /// The defaults of `deltascope serve`.
    pub fn default_flags() -> Self {
        SessionBound::new(DEFAULT_MAX_WATCHES, DEFAULT_MAX_REQUESTS)
    }

    pub fn total(&self) -> usize {
        self.queued + self.watches + self.requests + self.streams + self.controls
    }

    /// Every session at its bound at once, and every connection open.
    pub fn all_sessions(&self, max_connections: usize) -> usize {
        self.total() * MAX_SESSIONS + max_connections * CONNECTION_COST
    }
}

/// What one channel may hold at most: its queue and its streams' entries
/// (the requests its streams make are counted against their session).
pub const fn channel_bound() -> usize {
    CHANNEL_BUFFER + MAX_STREAMS_PER_CHANNEL * STREAM_COST
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mib(bytes: usize) -> String {
        format!("{} MiB", bytes / (1024 * 1024))
    }

    /// ARCHITECTURE.md states the bound; the text must say what the code does.
    #[test]
    fn architecture_md_states_these_numbers() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ARCHITECTURE.md"))
                .expect("ARCHITECTURE.md beside the workspace");
        let bound = SessionBound::default_flags();
        for (what, figure) in [
            ("per channel", mib(channel_bound())),
            ("per session", mib(bound.total())),
            (
                "every session at its limit",
                format!(
                    "{:.1} GiB",
                    bound.all_sessions(crate::conn::DEFAULT_MAX_CONNECTIONS) as f64
                        / f64::from(1 << 30)
                ),
            ),
            ("stream buffer", format!("{} KiB", STREAM_BUFFER / 1024)),
            ("channel buffer", mib(CHANNEL_BUFFER)),
            ("session buffer", mib(SESSION_BUFFER)),
        ] {
            let line = format!("{what}: {figure}");
            assert!(
                text.contains(&line),
                "ARCHITECTURE.md should say `{line}` (the bound serve enforces)"
            );
        }
    }

    #[test]
    fn the_parts_add_up() {
        let bound = SessionBound::new(1, 1);
        assert_eq!(
            bound.total(),
            SESSION_BUFFER
                + WATCH_COST
                + REQUEST_COST
                + MAX_STREAMS_PER_SESSION * STREAM_COST
                + MAX_CONTROLS_PER_SESSION * MAX_CONTROL_BYTES
        );
    }
}
