//! How the page's watches reach the cluster, as plain data and in words: the
//! state of the page's one channel to deltascope serve ([`ChannelStatus`],
//! which the transport keeps and the service reads), and the sentences the
//! status bar and the settings say about it — the streams on the channel,
//! or, without one, how many watches have a connection of their own and
//! how many wait for one. Here rather than in the transport so the words are
//! tested natively.

/// What the page knows of its channel, for the status line and the chips.
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelStatus {
    /// No watch has asked for it yet.
    Idle,
    Connecting,
    Open,
    /// It broke at `since` (Unix ms); it reconnects when a watch asks.
    Broken {
        since_unix_ms: f64,
        reason: String,
    },
    /// serve offers none: watches go on connections of their own, a few at a time.
    Unavailable {
        reason: String,
    },
}

/// Watches without a channel: on connections of their own, and waiting
/// (paused by the browser's connection limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnConnections {
    pub running: usize,
    pub paused: usize,
}

/// The channel in the status bar: `[data-testid=channel-state]`'s
/// `data-state` and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelWords {
    /// idle / connecting / open / broken / unavailable.
    pub state: &'static str,
    pub words: String,
}

/// The channel's state in plain words: `streams` open on it (the views'),
/// or without one the watches on connections of their own; `clock` writes
/// a Unix time in ms as the user's clock shows it.
pub fn channel_words(
    status: &ChannelStatus,
    streams: usize,
    own: OwnConnections,
    clock: impl FnOnce(f64) -> String,
) -> ChannelWords {
    let (state, words) = match status {
        ChannelStatus::Idle => ("idle", String::new()),
        ChannelStatus::Connecting => (
            "connecting",
            "connecting the channel to deltascope serve…".into(),
        ),
        ChannelStatus::Open => (
            "open",
            format!(
                "{streams} watch{} on one channel",
                if streams == 1 { "" } else { "es" }
            ),
        ),
        ChannelStatus::Broken {
            since_unix_ms,
            reason,
        } => (
            "broken",
            format!(
                "channel to deltascope serve broken since {}: {reason} — reconnecting",
                clock(*since_unix_ms)
            ),
        ),
        ChannelStatus::Unavailable { reason } => (
            "unavailable",
            format!(
                "no channel ({reason}): {} watches on connections of their own, {} paused by the \
                 browser's connection limit",
                own.running, own.paused
            ),
        ),
    };
    ChannelWords { state, words }
}

/// How the kept resources' watches travel, for the settings; without a
/// channel at most `own_connection_watches` get a connection of their own.
pub fn transport_words(status: &ChannelStatus, own_connection_watches: usize) -> String {
    match status {
        ChannelStatus::Unavailable { .. } => format!(
            "serve offers no channel, so at most {own_connection_watches} watches get a connection \
             of their own and the rest wait, paused (browsers give a page six connections)."
        ),
        _ => {
            "Their watches all share one channel to deltascope serve (one connection).".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(status: ChannelStatus, streams: usize) -> ChannelWords {
        let own = OwnConnections {
            running: 4,
            paused: 3,
        };
        channel_words(&status, streams, own, |ms| format!("t={ms}"))
    }

    #[test]
    fn the_channel_says_its_state_and_what_travels_on_it() {
        assert_eq!(words(ChannelStatus::Idle, 0).state, "idle");
        assert_eq!(
            words(ChannelStatus::Open, 1).words,
            "1 watch on one channel"
        );
        assert_eq!(
            words(ChannelStatus::Open, 5).words,
            "5 watches on one channel"
        );
        let broken = ChannelStatus::Broken {
            since_unix_ms: 1500.0,
            reason: "reset".into(),
        };
        assert_eq!(
            words(broken, 5),
            ChannelWords {
                state: "broken",
                words: "channel to deltascope serve broken since t=1500: reset — reconnecting"
                    .into()
            }
        );
        let none = ChannelStatus::Unavailable {
            reason: "404".into(),
        };
        assert_eq!(
            words(none, 0).words,
            "no channel (404): 4 watches on connections of their own, 3 paused by the browser's \
             connection limit"
        );
    }

    #[test]
    fn the_settings_say_how_the_watches_travel() {
        let none = ChannelStatus::Unavailable {
            reason: "404".into(),
        };
        assert!(transport_words(&none, 4).starts_with("serve offers no channel, so at most 4 "));
        assert_eq!(
            transport_words(&ChannelStatus::Connecting, 4),
            "Their watches all share one channel to deltascope serve (one connection)."
        );
    }
}
