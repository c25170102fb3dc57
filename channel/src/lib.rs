//! The page's channel to `deltascope serve`: one long-lived response that
//! carries the bodies of every watch the page has open, each tagged with its
//! stream, so the page holds one connection however many resources it keeps
//! live (browsers give an origin six HTTP/1.1 connections, and a seventh
//! long-lived request would wait forever).
//!
//! This crate is the wire format only, shared by serve (which writes it) and
//! the page (which reads it), and tested natively on both sides' behalf. It
//! has no I/O: [`encode`] appends a frame to a buffer, [`Decoder`] turns
//! arbitrary chunks of the stream back into [`Event`]s, handing out body
//! bytes as slices of the chunk it was given (a frame may be split anywhere).
//!
//! A frame is a 9-byte header — kind (1 byte), stream (u32, big-endian),
//! payload length (u32, big-endian) — and the payload. The kinds follow the
//! life of one upstream response, so the page can feed each reflector exactly
//! what a connection of its own would have given it: [`Frame::Start`] (status
//! and `Retry-After`), [`Frame::Data`] (body bytes), then [`Frame::End`] (the
//! body ended cleanly) or [`Frame::Fail`] (it broke, with the reason). Stream
//! 0 carries the channel's own frames: [`Frame::Hello`] first (the channel's
//! id, which control requests name), then a [`Frame::Ping`] every
//! [`PING_INTERVAL_MS`] so both ends notice a dead channel within seconds.
//!
//! Watches are opened and closed with small control requests
//! (`POST {CHANNEL_PATH}/{id}` with a JSON [`Control`] body); their answers
//! arrive on the channel, never in the control response.

use serde::{Deserialize, Serialize};

/// `GET` opens a channel; `POST {CHANNEL_PATH}/{id}` controls it.
pub const CHANNEL_PATH: &str = "/_deltascope/channel";

/// The channel response's `Content-Type`: how the page tells a channel from
/// an HTML fallback page served under the same path (e.g. by `trunk serve`).
pub const CONTENT_TYPE: &str = "application/vnd.deltascope.channel";

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 9;

/// serve sends a ping at least this often on an idle channel.
pub const PING_INTERVAL_MS: u64 = 5_000;

/// The page gives up on a channel that sent nothing for this long.
pub const SILENCE_LIMIT_MS: u64 = 3 * PING_INTERVAL_MS;

/// Payload of a non-data frame at most (a Fail's reason, the Hello's id).
pub const MAX_CONTROL_PAYLOAD: u32 = 64 * 1024;

/// One upstream response on the channel, chosen by the page (never 0).
pub type StreamId = u32;

/// The channel's own frames (hello, ping) use this stream.
pub const CHANNEL_STREAM: StreamId = 0;

const KIND_HELLO: u8 = 1;
const KIND_START: u8 = 2;
const KIND_DATA: u8 = 3;
const KIND_END: u8 = 4;
const KIND_FAIL: u8 = 5;
const KIND_PING: u8 = 6;

/// `Retry-After` absent, in a Start frame.
const NO_RETRY_AFTER: u32 = u32::MAX;

/// A frame to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// First on every channel: its id, for control requests.
    Hello { channel: &'a str },
    /// The upstream answered: status and `Retry-After` seconds.
    Start {
        stream: StreamId,
        status: u16,
        retry_after_secs: Option<u32>,
    },
    /// Bytes of the response body, in order.
    Data { stream: StreamId, bytes: &'a [u8] },
    /// The body ended cleanly.
    End { stream: StreamId },
    /// The request or its body failed; nothing more comes for this stream.
    Fail { stream: StreamId, reason: &'a str },
    /// Keeps an idle channel observably alive.
    Ping,
}

/// Appends `frame` to `out`.
pub fn encode(frame: &Frame<'_>, out: &mut Vec<u8>) {
    match frame {
        Frame::Hello { channel } => {
            put(out, KIND_HELLO, CHANNEL_STREAM, channel.as_bytes());
        }
        Frame::Start {
            stream,
            status,
            retry_after_secs,
        } => {
            let mut payload = [0u8; 6];
            payload[..2].copy_from_slice(&status.to_be_bytes());
            let retry = retry_after_secs.map_or(NO_RETRY_AFTER, |s| s.min(NO_RETRY_AFTER - 1));
            payload[2..].copy_from_slice(&retry.to_be_bytes());
            put(out, KIND_START, *stream, &payload);
        }
        Frame::Data { stream, bytes } => put(out, KIND_DATA, *stream, bytes),
        Frame::End { stream } => put(out, KIND_END, *stream, &[]),
        Frame::Fail { stream, reason } => {
            let reason = truncate_utf8(reason, MAX_CONTROL_PAYLOAD as usize);
            put(out, KIND_FAIL, *stream, reason.as_bytes());
        }
        Frame::Ping => put(out, KIND_PING, CHANNEL_STREAM, &[]),
    }
}

/// The header of a data frame of `len` bytes, for writers that send the
/// payload from its own buffer instead of copying it behind the header.
pub fn data_header(stream: StreamId, len: u32) -> [u8; HEADER_LEN] {
    header(KIND_DATA, stream, len)
}

fn header(kind: u8, stream: StreamId, len: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0] = kind;
    h[1..5].copy_from_slice(&stream.to_be_bytes());
    h[5..9].copy_from_slice(&len.to_be_bytes());
    h
}

fn put(out: &mut Vec<u8>, kind: u8, stream: StreamId, payload: &[u8]) {
    if payload.is_empty() {
        out.extend_from_slice(&header(kind, stream, 0));
        return;
    }
    // A body chunk longer than u32::MAX bytes cannot come from one read; split anyway.
    for part in payload.chunks(u32::MAX as usize) {
        out.extend_from_slice(&header(kind, stream, part.len() as u32));
        out.extend_from_slice(part);
    }
}

fn truncate_utf8(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What the reader of a channel learns, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    Hello {
        channel: String,
    },
    Start {
        stream: StreamId,
        status: u16,
        retry_after_secs: Option<u32>,
    },
    /// Part or all of a data frame's payload (never empty).
    Data {
        stream: StreamId,
        bytes: &'a [u8],
    },
    End {
        stream: StreamId,
    },
    Fail {
        stream: StreamId,
        reason: String,
    },
    Ping,
}

/// Why the bytes are not a channel; the reader drops the channel and reconnects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("a channel frame of kind {kind} announces {len} bytes, more than the {max} such a frame may have")]
    ControlTooLong { kind: u8, len: u32, max: u32 },
    #[error("a channel Start frame has {0} bytes instead of 6")]
    BadStart(u32),
    #[error("a channel frame's text is not UTF-8")]
    NotUtf8,
}

/// The frame being read.
#[derive(Debug, Clone, Copy)]
struct Current {
    kind: u8,
    stream: StreamId,
    remaining: u32,
}

/// Reads a channel from chunks split anywhere.
#[derive(Debug, Default)]
pub struct Decoder {
    header: [u8; HEADER_LEN],
    header_len: usize,
    current: Option<Current>,
    /// The payload of a non-data frame read so far.
    small: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// True between frames (a channel that ends here ended cleanly).
    pub fn at_boundary(&self) -> bool {
        self.current.is_none() && self.header_len == 0
    }

    /// Decodes `chunk`, calling `on_event` for every event it completes. After
    /// an error the decoder is unusable (the channel is out of step).
    pub fn feed<'a>(
        &mut self,
        mut chunk: &'a [u8],
        mut on_event: impl FnMut(Event<'a>),
    ) -> Result<(), DecodeError> {
        loop {
            let Some(mut current) = self.current else {
                if chunk.is_empty() {
                    return Ok(());
                }
                let take = (HEADER_LEN - self.header_len).min(chunk.len());
                self.header[self.header_len..self.header_len + take]
                    .copy_from_slice(&chunk[..take]);
                self.header_len += take;
                chunk = &chunk[take..];
                if self.header_len < HEADER_LEN {
                    return Ok(());
                }
                self.header_len = 0;
                let h = self.header;
                let current = Current {
                    kind: h[0],
                    stream: u32::from_be_bytes([h[1], h[2], h[3], h[4]]),
                    remaining: u32::from_be_bytes([h[5], h[6], h[7], h[8]]),
                };
                if current.kind != KIND_DATA && current.remaining > MAX_CONTROL_PAYLOAD {
                    return Err(DecodeError::ControlTooLong {
                        kind: current.kind,
                        len: current.remaining,
                        max: MAX_CONTROL_PAYLOAD,
                    });
                }
                self.small.clear();
                self.current = Some(current);
                continue;
            };
            let take = (current.remaining as usize).min(chunk.len());
            let (part, rest) = chunk.split_at(take);
            chunk = rest;
            current.remaining -= take as u32;
            if current.kind == KIND_DATA {
                if !part.is_empty() {
                    on_event(Event::Data {
                        stream: current.stream,
                        bytes: part,
                    });
                }
            } else {
                self.small.extend_from_slice(part);
            }
            if current.remaining > 0 {
                self.current = Some(current);
                return Ok(());
            }
            self.current = None;
            if let Some(event) = self.finish(current)? {
                on_event(event);
            }
        }
    }

    fn finish(&mut self, frame: Current) -> Result<Option<Event<'static>>, DecodeError> {
        let payload = std::mem::take(&mut self.small);
        let text = |payload: Vec<u8>| String::from_utf8(payload).map_err(|_| DecodeError::NotUtf8);
        Ok(Some(match frame.kind {
            KIND_DATA => return Ok(None),
            KIND_HELLO => Event::Hello {
                channel: text(payload)?,
            },
            KIND_START => {
                let bytes: [u8; 6] = payload
                    .as_slice()
                    .try_into()
                    .map_err(|_| DecodeError::BadStart(payload.len() as u32))?;
                let retry = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
                Event::Start {
                    stream: frame.stream,
                    status: u16::from_be_bytes([bytes[0], bytes[1]]),
                    retry_after_secs: (retry != NO_RETRY_AFTER).then_some(retry),
                }
            }
            KIND_END => Event::End {
                stream: frame.stream,
            },
            KIND_FAIL => Event::Fail {
                stream: frame.stream,
                // A reason is for people: keep what can be read of it.
                reason: String::from_utf8_lossy(&payload).into_owned(),
            },
            KIND_PING => Event::Ping,
            // A kind from a newer serve: skipped, so old pages keep working.
            _ => return Ok(None),
        }))
    }
}

/// The body of a control request: streams to open, then streams to close.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<Open>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub close: Vec<StreamId>,
}

/// Open `stream` as `GET path` (path and query, as the page would fetch it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    pub stream: StreamId,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<String>,
}

#[cfg(test)]
mod tests;
