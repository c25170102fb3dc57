//! How the page's channel ends, and what each end does to the streams on
//! it: a break (its streams fail, their reflectors back off and re-watch
//! from their last resourceVersion, and it reconnects when one asks), no
//! channel at all (every waiting watch goes to the connection budget, each
//! feed to a fetch of its own), serve refusing it (every stream gets that
//! answer as its own, so its reflector says why), and a channel gone silent
//! for longer than serve's pings allow.

use deltascope_channel::{Event, StreamId, PING_INTERVAL_MS, SILENCE_LIMIT_MS};

use super::super::{budget, timer, InFlight};
use super::{deliver, feeds, now, with, ChannelStatus, Target};

/// The channel broke: its streams fail (their reflectors back off and
/// re-watch), and it reconnects when one asks.
pub(super) fn broken(generation: u64, reason: String) {
    let streams = with(|c| {
        let live = matches!(c.status, ChannelStatus::Connecting | ChannelStatus::Open);
        if c.generation != generation || !live {
            return None;
        }
        if let Some(controller) = c.abort.take() {
            controller.abort();
        }
        c.status = ChannelStatus::Broken {
            since_unix_ms: js_sys::Date::now(),
            reason: reason.clone(),
        };
        c.failures += 1;
        c.channel_id = None;
        c.posting = false;
        c.to_open.clear();
        c.to_close.clear();
        let mut streams: Vec<StreamId> = c.sinks.keys().copied().collect();
        crate::informer::compact_sort::sort(&mut streams);
        Some(streams)
    });
    for stream in streams.unwrap_or_default() {
        deliver(Event::Fail {
            stream,
            reason: format!("{reason}; reconnecting"),
        });
    }
}

/// serve offers no channel: every waiting watch goes to the connection budget.
pub(super) fn unavailable(generation: u64, reason: String) {
    let sinks = with(|c| {
        if c.generation != generation {
            return Vec::new();
        }
        c.abort = None;
        c.status = ChannelStatus::Unavailable { reason };
        c.to_open.clear();
        c.to_close.clear();
        c.sinks.drain().collect::<Vec<_>>()
    });
    for (stream, sink) in sinks {
        let driver = match sink.target {
            Target::Feed(feed) => {
                feeds::fetch_own(stream, sink.id, sink.path, sink.accept, feed);
                continue;
            }
            Target::Driver(driver) => driver,
        };
        let Some(driver) = driver.upgrade() else {
            continue;
        };
        let ours = driver.borrow_mut().in_flight.remove(&sink.id);
        if matches!(ours, Some(InFlight::Channel(_))) {
            budget::request_watch(&driver, sink.id, sink.path, sink.accept);
        }
    }
}

/// serve refused the channel itself (401 after a restart, 403, 5xx): every
/// waiting stream gets that answer as its own, so its reflector says why.
pub(super) fn refused(generation: u64, status: u16, retry_after_secs: Option<u64>, body: String) {
    let streams = with(|c| {
        if c.generation != generation {
            return None;
        }
        c.abort = None;
        c.status = ChannelStatus::Broken {
            since_unix_ms: js_sys::Date::now(),
            reason: format!("deltascope serve refused the channel (HTTP {status})"),
        };
        c.failures += 1;
        c.to_open.clear();
        let mut streams: Vec<StreamId> = c.sinks.keys().copied().collect();
        crate::informer::compact_sort::sort(&mut streams);
        Some(streams)
    });
    for stream in streams.unwrap_or_default() {
        deliver(Event::Start {
            stream,
            status,
            retry_after_secs: retry_after_secs.map(|s| s.min(u32::MAX as u64) as u32),
        });
        if !body.is_empty() {
            deliver(Event::Data {
                stream,
                bytes: body.as_bytes(),
            });
        }
        deliver(Event::End { stream });
    }
}

/// Ends a channel that has been silent for longer than serve's pings allow.
pub(super) async fn watchdog(generation: u64) {
    loop {
        timer::sleep_ms(PING_INTERVAL_MS).await;
        let silent_for = with(|c| {
            let live = matches!(c.status, ChannelStatus::Connecting | ChannelStatus::Open);
            (c.generation == generation && live).then(|| now() - c.last_received)
        });
        match silent_for {
            None => return,
            Some(silence) if silence > SILENCE_LIMIT_MS as f64 => {
                broken(
                    generation,
                    format!(
                        "the channel to deltascope serve went silent for {} s",
                        crate::model::decimal::short((silence / 1000.0).round())
                    ),
                );
                return;
            }
            Some(_) => {}
        }
    }
}
