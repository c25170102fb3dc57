//! The body of a JSON list response, streamed from a snapshot of the listed
//! objects instead of being assembled in one buffer first.
//!
//! A list of 100,000 Pods is ~480 MB of JSON. Assembling it before the first
//! byte goes out costs that much fresh memory per request (page faults and
//! all) and makes the client wait for the whole render; the apiserver, too,
//! encodes a list while it writes it. Here each object's stored JSON is
//! copied into chunks of about [`CHUNK`] bytes, which the allocator reuses,
//! and an object larger than a chunk is sent as it is stored, without a copy.
//! The exact length is known from the start, so the response keeps its
//! `Content-Length`.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};

use super::store::Obj;

/// Bytes gathered before a chunk is handed to the connection.
const CHUNK: usize = 64 * 1024;

/// `{"kind":…,"metadata":{…},"items":[` + the items joined by `,` + `]}`.
pub struct ListBody {
    head: Option<Bytes>,
    items: Vec<Arc<Obj>>,
    next_item: usize,
    tail_sent: bool,
    /// An object too large to copy, to send after the chunk before it.
    pending_large: Option<Bytes>,
    remaining: u64,
}

const TAIL: &[u8] = b"]}";

impl ListBody {
    /// `head` is everything up to and including `"items":[`.
    pub fn new(head: Vec<u8>, items: Vec<Arc<Obj>>) -> ListBody {
        let items_len: usize = items.iter().map(|o| o.json.len()).sum();
        let commas = items.len().saturating_sub(1);
        let remaining = (head.len() + items_len + commas + TAIL.len()) as u64;
        ListBody {
            head: Some(Bytes::from(head)),
            items,
            next_item: 0,
            tail_sent: false,
            pending_large: None,
            remaining,
        }
    }

    /// The next piece of the body, or `None` at its end.
    fn next_piece(&mut self) -> Option<Bytes> {
        if let Some(large) = self.pending_large.take() {
            return Some(large);
        }
        if self.tail_sent {
            return None;
        }
        let mut chunk = BytesMut::with_capacity(CHUNK + 1024);
        if let Some(head) = self.head.take() {
            chunk.extend_from_slice(&head);
        }
        while self.next_item < self.items.len() && chunk.len() < CHUNK {
            let index = self.next_item;
            self.next_item += 1;
            if index > 0 {
                chunk.extend_from_slice(b",");
            }
            let json = &self.items[index].json;
            if json.len() >= CHUNK {
                self.pending_large = Some(json.clone());
                return Some(chunk.freeze());
            }
            chunk.extend_from_slice(json);
        }
        if self.next_item == self.items.len() && chunk.len() < CHUNK {
            chunk.extend_from_slice(TAIL);
            self.tail_sent = true;
            // Done with the snapshot: let the objects go now, not when the
            // connection drops the body.
            self.items = Vec::new();
        }
        Some(chunk.freeze())
    }
}

impl Body for ListBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.next_piece().map(|piece| {
            this.remaining = this.remaining.saturating_sub(piece.len() as u64);
            Ok(Frame::data(piece))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.tail_sent && self.pending_large.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn obj(json: &str) -> Arc<Obj> {
        Arc::new(Obj {
            key: String::new(),
            rev: 0,
            json: Bytes::from(json.to_owned()),
            sel: serde_json::Value::Null,
        })
    }

    async fn collect(body: ListBody) -> (u64, Vec<u8>) {
        let announced = body.size_hint().exact().unwrap_or(u64::MAX);
        let bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        (announced, bytes.to_vec())
    }

    #[tokio::test]
    async fn an_empty_list_is_the_head_and_the_tail() {
        let (len, bytes) = collect(ListBody::new(b"{\"items\":[".to_vec(), vec![])).await;
        assert_eq!(bytes, b"{\"items\":[]}");
        assert_eq!(len, bytes.len() as u64);
    }

    #[tokio::test]
    async fn items_of_every_size_are_joined_in_order_and_the_length_is_exact() {
        let big = format!("\"{}\"", "x".repeat(CHUNK * 2));
        let mut items = Vec::new();
        let mut expected = String::from("{\"items\":[");
        for i in 0..300 {
            let json = match i % 50 {
                7 => big.clone(),
                _ => format!("{{\"n\":{i},\"pad\":\"{}\"}}", "p".repeat(i * 7)),
            };
            if i > 0 {
                expected.push(',');
            }
            expected.push_str(&json);
            items.push(obj(&json));
        }
        expected.push_str("]}");
        let (len, bytes) = collect(ListBody::new(b"{\"items\":[".to_vec(), items)).await;
        assert_eq!(String::from_utf8_lossy(&bytes), expected);
        assert_eq!(len, expected.len() as u64);
        let parsed: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(parsed["items"].as_array().map(Vec::len), Some(300));
    }

    #[tokio::test]
    async fn a_large_last_item_is_followed_by_the_tail() {
        let big = format!("\"{}\"", "y".repeat(CHUNK));
        let (len, bytes) = collect(ListBody::new(b"[".to_vec(), vec![obj("1"), obj(&big)])).await;
        assert_eq!(bytes, format!("[1,{big}]}}").into_bytes());
        assert_eq!(len, bytes.len() as u64);
    }
}
