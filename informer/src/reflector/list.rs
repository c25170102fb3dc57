//! The paginated LIST: send the first page from a [`ListFrom`], accumulate
//! pages by `continue` token, and on the last one replace the store and
//! start the watch. Also the fallback from a streaming list to paging.

use super::protocol::RequestKind;
use super::request::ListFrom;
use super::state::{ListMode, ListSoFar, ListState, Next, Sent, State};
use super::status::{Op, Phase, ReflectorError};
use super::Reflector;
use crate::clock::Millis;
use crate::event::decode_list;

impl Reflector {
    pub(super) fn send_first_page(&mut self, from: ListFrom, now: Millis) {
        self.send_list_page(from, None, ListSoFar::default(), now);
    }

    fn send_list_page(
        &mut self,
        from: ListFrom,
        continue_token: Option<String>,
        so_far: ListSoFar,
        now: Millis,
    ) {
        let id = self.new_id();
        let request = self.requests.list_page(&from, continue_token.as_deref());
        self.status.phase = Phase::Listing {
            pages: so_far.pages,
            items: so_far.items.len() as u64,
            bytes: so_far.bytes,
        };
        self.state = State::Listing(ListState {
            sent: Sent::new(id, now),
            from,
            continue_token,
            so_far,
        });
        self.send(id, RequestKind::List, request);
    }

    /// The server does not do streaming lists: LIST + WATCH from now on.
    pub(super) fn fallback_to_paginated(&mut self, from: ListFrom, now: Millis) {
        self.list_mode = ListMode::Paginated;
        self.send_first_page(from, now);
    }

    /// The open streaming list turned out to be a plain watch (the server
    /// ignores `sendInitialEvents`): it is cancelled and the list starts
    /// again page by page.
    pub(super) fn abandon_streaming_list(&mut self, now: Millis) {
        let State::StreamingList(s) = &self.state else {
            return;
        };
        let from = s.from.clone();
        self.cancel_current();
        self.fallback_to_paginated(from, now);
    }

    pub(super) fn list_chunk(&mut self, bytes: &[u8]) {
        let State::Listing(l) = &mut self.state else {
            return;
        };
        if !l.sent.ok() {
            l.sent.keep_error_bytes(bytes);
            return;
        }
        l.sent.body.extend_from_slice(bytes);
        l.so_far.bytes += bytes.len() as u64;
        self.status.phase = Phase::Listing {
            pages: l.so_far.pages,
            items: l.so_far.items.len() as u64,
            bytes: l.so_far.bytes,
        };
    }

    /// A page's body is complete.
    pub(super) fn list_end(&mut self, l: ListState, now: Millis) {
        if !l.sent.ok() {
            self.list_refused(l, now);
            return;
        }
        let page = match decode_list(&l.sent.body) {
            Ok(page) => page,
            Err(e) => {
                let err = ReflectorError::Decode {
                    op: Op::List,
                    resource: self.resource_name.clone(),
                    message: e.to_string(),
                };
                self.fail(err, Next::List(l.from), None, now);
                return;
            }
        };
        let mut so_far = l.so_far;
        so_far.items.extend(page.items);
        so_far.pages += 1;
        so_far
            .printed
            .saw(page.columns.is_some(), page.columns, &mut self.columns);
        match page.continue_token {
            Some(token) => self.send_list_page(l.from, Some(token), so_far, now),
            None => {
                so_far.printed.finish(&mut self.columns);
                let rv = page.resource_version;
                self.list_done(so_far.items, &rv, now);
                self.send_watch(rv, now);
            }
        }
    }

    /// The server refused a page.
    pub(super) fn list_refused(&mut self, l: ListState, now: Millis) {
        let (err, status) = self.http_error(Op::List, &l.sent);
        let code = l.sent.http_status.unwrap_or(0);
        let expired = code == 410 || status.is_expired() || status.is_too_large_rv();
        if expired && (l.continue_token.is_some() || l.from != ListFrom::Latest) {
            // 410 on continue, or the RV expired/too large: relist from the latest
            self.status.last_error = Some(err);
            self.status.relists += 1;
            self.send_first_page(ListFrom::Latest, now);
            return;
        }
        let retry_after = if code == 429 {
            l.sent.retry_after
        } else {
            None
        };
        self.fail(err, Next::List(l.from), retry_after, now);
    }
}
