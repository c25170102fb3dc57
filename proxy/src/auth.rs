//! Session auth for `deltascope serve`.
//!
//! One secret token per start (256 random bits, hex) or `--token`. The browser
//! exchanges it once, at `GET /?token=T`, for a session cookie (HttpOnly,
//! SameSite=Strict) holding a separate random session id, so the token leaves
//! the address bar and never travels again. CLI clients send
//! `Authorization: Bearer T` instead; they all share one session. Every
//! comparison of a secret is constant-time.
//!
//! A token in the query string is only looked at on `/`: on API paths it would
//! end up in logs and histories, so it is ignored there.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http::header::{AUTHORIZATION, COOKIE};
use http::HeaderMap;
use rand::RngCore;
use subtle::ConstantTimeEq;

/// Name of the session cookie.
pub const COOKIE_NAME: &str = "deltascope_session";

/// Sessions kept at once; the oldest is signed out beyond this.
const MAX_SESSIONS: usize = 256;

/// 256 random bits, lowercase hex.
pub fn random_hex_256() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Constant-time string equality (length may leak, content does not).
pub fn secret_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// One signed-in browser (or all bearer clients together).
#[derive(Debug)]
pub struct Session {
    id: String,
    watches: AtomicUsize,
}

impl Session {
    pub(crate) fn new(id: String) -> Self {
        Session {
            id,
            watches: AtomicUsize::new(0),
        }
    }

    /// Reserves one watch slot if fewer than `limit` are open.
    pub fn try_open_watch(self: &Arc<Self>, limit: usize) -> Option<WatchSlot> {
        self.watches
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| WatchSlot {
                session: Arc::clone(self),
            })
    }

    /// Watches open in this session now.
    pub fn open_watches(&self) -> usize {
        self.watches.load(Ordering::Acquire)
    }
}

/// An open watch; frees its slot when dropped (the stream ended or the client left).
#[derive(Debug)]
pub struct WatchSlot {
    session: Arc<Session>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.session.watches.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The token, the sessions it has opened, and the bearer session.
#[derive(Debug)]
pub struct Auth {
    token: String,
    bearer: Arc<Session>,
    sessions: Mutex<VecDeque<Arc<Session>>>,
}

impl Auth {
    /// `token`: `None` generates a random one.
    pub fn new(token: Option<String>) -> Self {
        Auth {
            token: token.unwrap_or_else(random_hex_256),
            bearer: Arc::new(Session::new(String::new())),
            sessions: Mutex::new(VecDeque::new()),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn token_matches(&self, candidate: &str) -> bool {
        secret_eq(&self.token, candidate)
    }

    /// Opens a session after a correct `?token=`; returns the `Set-Cookie` value.
    pub fn open_session(&self) -> String {
        let session = Arc::new(Session::new(random_hex_256()));
        let cookie = format!(
            "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/",
            session.id
        );
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(session);
        cookie
    }

    /// The session the request's cookie or bearer token proves, if any.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<Arc<Session>> {
        if let Some(token) = bearer_token(headers) {
            if self.token_matches(token) {
                return Some(Arc::clone(&self.bearer));
            }
        }
        let ids = session_cookies(headers);
        if ids.is_empty() {
            return None;
        }
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        // Look at every session for every candidate so timing says nothing.
        let mut found = None;
        for session in sessions.iter() {
            for id in &ids {
                if secret_eq(&session.id, id) {
                    found = Some(Arc::clone(session));
                }
            }
        }
        found
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn session_cookies(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim_matches('"'))
        .collect()
}

/// The value of `token` in a query string, if present.
pub fn query_token(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn token_cookie_and_bearer() {
        let auth = Auth::new(Some("t0k".into()));
        let cookie = auth.open_session();
        let id = cookie
            .strip_prefix("deltascope_session=")
            .and_then(|s| s.split(';').next())
            .unwrap()
            .to_owned();
        let mut h = HeaderMap::new();
        assert!(auth.authenticate(&h).is_none());
        h.insert(
            COOKIE,
            HeaderValue::from_str(&format!("a=b; deltascope_session={id}")).unwrap(),
        );
        assert!(auth.authenticate(&h).is_some());
        h.insert(COOKIE, HeaderValue::from_static("deltascope_session=nope"));
        assert!(auth.authenticate(&h).is_none());
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t0k"));
        assert!(auth.authenticate(&h).is_some());
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t0kk"));
        assert!(auth.authenticate(&h).is_none());
        assert_eq!(random_hex_256().len(), 64);
    }

    #[test]
    fn watch_slots() {
        let s = Arc::new(Session::new("x".into()));
        let a = s.try_open_watch(2).unwrap();
        let _b = s.try_open_watch(2).unwrap();
        assert!(s.try_open_watch(2).is_none());
        drop(a);
        assert!(s.try_open_watch(2).is_some());
    }
}
