//! Session auth for `deltascope serve`.
//!
//! **The token.** One secret per start: 256 random bits (hex) or the operator's
//! own, at least [`MIN_TOKEN_BYTES`] bytes, from `--token`, `--token-file` or
//! `DELTASCOPE_TOKEN` (the last two keep it out of `ps`). CLI clients send
//! `Authorization: Bearer TOKEN` on every request; they all share one session,
//! which never expires and cannot sign out.
//!
//! **Browsers** trade a one-time code or the token for a session cookie once.
//! Two ways, both answered with `303 /` and the cookie:
//!
//! - the **sign-in link** `GET /?code=CODE` that serve prints. The code is not
//!   the token: 128 random bits that open *one* session, once, within 5
//!   minutes ([`crate::sign_in_code`]), and nothing else ever. So the copy the
//!   browser keeps in its history and the terminal keeps in its scrollback
//!   open nothing later. Opening a link from a browser that still has its
//!   session just goes to `/` (the code is spent all the same); a used,
//!   expired or unknown code shows the sign-in page, which says which. A
//!   restarted serve knows none of the old codes (state is per process).
//! - the **sign-in form** on that page: `POST /` with the form field `token`
//!   (typed or pasted, never in a URL, so never in a history). This is how a
//!   second browser signs in with the token. Like every request it must pass
//!   the Host, Origin and fetch-metadata checks, so only the page itself can
//!   submit it (serve's HTML documents use `Referrer-Policy: same-origin` so
//!   that a browser sends their real origin with a form, not `Origin: null`).
//!
//! **New links**: `POST /_deltascope/sign-in-link`. With the token (bearer)
//! or a session it answers `{"url": …, "expiresInSeconds": …}`; without, it
//! is the sign-in page's button, and serve prints the new link in its
//! terminal (at most one every few seconds), where only whoever could read
//! the first one sees it.
//!
//! **The token** is never in a URL: `?token=` signs nothing in (on `/` the
//! sign-in page says that links carry a code now; on API paths it is ignored
//! like any unknown parameter). It stays valid for bearer clients until serve
//! stops. serve prints it nowhere: an operator's own token is theirs, and a
//! generated one is written to a file only its user can read
//! ([`crate::token_file`]), whose path serve prints.
//!
//! **The cookie** (HttpOnly, SameSite=Strict, `Path=/`) is named per listen
//! port, [`cookie_name`], because browsers do not scope cookies by port: two
//! servers on one machine would otherwise overwrite each other's session. Its
//! value is a random session id; serve keeps only its SHA-256 and finds the
//! session by that digest in a hash map, so a request costs one hash per
//! candidate cookie whatever the number of sessions, and timing can tell an
//! attacker at most about digests, never about ids. Only well-formed values
//! under our name are candidates, at most [`MAX_COOKIE_CANDIDATES`] of them.
//!
//! **Ending sessions.** A session ends when it has been unused for the idle
//! timeout (`--session-idle-timeout`, default 12 h; a session with a response
//! still streaming — a watch, the page's channel — is in use), when the page
//! signs out (`POST /_deltascope/sign-out`), or when [`MAX_SESSIONS`] newer
//! ones push it out. An ended session's streaming responses are cut
//! ([`Session::ended`]).
//!
//! Every comparison of the token is constant-time.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::header::{AUTHORIZATION, COOKIE};
use http::HeaderMap;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::limits::SESSION_BUFFER;

/// The session cookie's name without its port suffix (see [`cookie_name`]).
pub const COOKIE_NAME: &str = "deltascope_session";

/// The shortest token accepted from the operator.
pub const MIN_TOKEN_BYTES: usize = 32;

/// Default of `--session-idle-timeout`.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);

pub use crate::limits::MAX_SESSIONS;

/// Session cookies looked up per request at most. A browser sends one; more
/// come only from cookies other local pages set under our name.
pub const MAX_COOKIE_CANDIDATES: usize = 8;

/// `name=value` pairs of `Cookie` headers looked at per request at most
/// (browsers keep 180 cookies per host).
const MAX_COOKIE_PAIRS: usize = 512;

/// The session cookie's name for a server listening on `port`.
pub fn cookie_name(port: u16) -> String {
    format!("{COOKIE_NAME}_{port}")
}

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

/// Why an operator's token is refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "the session token has {len} bytes; it needs at least {MIN_TOKEN_BYTES} \
         (omit --token for a random 256-bit one)"
    )]
    TooShort { len: usize },
    #[error("the session token must not contain spaces or control characters")]
    Unprintable,
    #[error("cannot read the token file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token file {path} is empty")]
    EmptyFile { path: PathBuf },
}

/// Checks an operator's token: long enough, and nothing a header or a form
/// would mangle.
pub fn check_token(token: &str) -> Result<(), TokenError> {
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TokenError::Unprintable);
    }
    if token.len() < MIN_TOKEN_BYTES {
        return Err(TokenError::TooShort { len: token.len() });
    }
    Ok(())
}

/// The token in `path` (its first line; a trailing newline is not part of it).
pub fn read_token_file(path: &Path) -> Result<String, TokenError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::File {
        path: path.to_owned(),
        source,
    })?;
    warn_if_readable_by_others(path);
    let token = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if token.is_empty() {
        return Err(TokenError::EmptyFile {
            path: path.to_owned(),
        });
    }
    check_token(token)?;
    Ok(token.to_owned())
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                "the token file is readable by other users; `chmod 600` it"
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// One signed-in browser (or all bearer clients together).
#[derive(Debug)]
pub struct Session {
    /// SHA-256 of the cookie's id; `None` for the bearer session.
    digest: Option<[u8; 32]>,
    /// Open slots by [`SlotKind`].
    slots: [AtomicUsize; 4],
    /// Bytes the session's channels may still queue ([`SESSION_BUFFER`] in all).
    queue_room: Semaphore,
    /// Milliseconds since the [`Auth`]'s epoch of the last request (or of the
    /// last sweep that found it in use).
    last_used_ms: AtomicU64,
    ended: tokio::sync::watch::Sender<bool>,
}

/// What a session holds a bounded number of at once (see [`crate::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// A watch or a followed log (`--max-watches`).
    Watch,
    /// Any other upstream request in flight (`--max-requests`).
    Request,
    /// A stream on one of the session's channels.
    Stream,
    /// A channel control request whose body is being read.
    Control,
}

impl Session {
    #[cfg(test)]
    pub(crate) fn new(id: String) -> Self {
        Session::with_digest(Some(digest(&id)), 0)
    }

    fn with_digest(digest: Option<[u8; 32]>, now_ms: u64) -> Self {
        Session {
            digest,
            slots: Default::default(),
            queue_room: Semaphore::new(SESSION_BUFFER),
            last_used_ms: AtomicU64::new(now_ms),
            ended: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Reserves `count` slots of `kind` if that leaves at most `limit` open;
    /// all or none.
    pub fn try_take(
        self: &Arc<Self>,
        kind: SlotKind,
        count: usize,
        limit: usize,
    ) -> Option<Vec<Slot>> {
        self.slots[kind as usize]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n + count <= limit).then_some(n + count)
            })
            .ok()
            .map(|_| {
                (0..count)
                    .map(|_| Slot {
                        session: Arc::clone(self),
                        kind,
                    })
                    .collect()
            })
    }

    /// Reserves one slot of `kind` if fewer than `limit` are open.
    pub fn try_take_one(self: &Arc<Self>, kind: SlotKind, limit: usize) -> Option<Slot> {
        self.try_take(kind, 1, limit)?.pop()
    }

    /// Slots of `kind` open in this session now.
    pub fn open_slots(&self, kind: SlotKind) -> usize {
        self.slots[kind as usize].load(Ordering::Acquire)
    }

    /// Watches open in this session now.
    pub fn open_watches(&self) -> usize {
        self.open_slots(SlotKind::Watch)
    }

    /// The bytes the session's channels may still queue, shared by all of
    /// them; a channel takes permits for each frame it queues and gives them
    /// back once the frame is written or dropped.
    pub fn queue_room(&self) -> &Semaphore {
        &self.queue_room
    }

    /// The shared session of `Authorization: Bearer` clients.
    pub fn is_bearer(&self) -> bool {
        self.digest.is_none()
    }

    /// Signed out, expired or pushed out.
    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Resolves when the session ends. Holds the session (so it counts as in
    /// use) for as long as the future lives.
    pub fn ended(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let mut ended = self.ended.subscribe();
        let session = Arc::clone(self);
        async move {
            let _in_use = session;
            // The sender lives in the session held above: it cannot close.
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }

    fn end(&self) {
        self.ended.send_replace(true);
    }

    fn touch(&self, now_ms: u64) {
        self.last_used_ms.fetch_max(now_ms, Ordering::AcqRel);
    }
}

/// One of a session's bounded slots; freed when dropped (the stream ended,
/// the request finished or the client left).
#[derive(Debug)]
pub struct Slot {
    session: Arc<Session>,
    kind: SlotKind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.session.slots[self.kind as usize].fetch_sub(1, Ordering::AcqRel);
    }
}

/// The token, the sessions it has opened, and the bearer session.
#[derive(Debug)]
pub struct Auth {
    token: String,
    cookie_name: String,
    idle_timeout: Duration,
    epoch: Instant,
    bearer: Arc<Session>,
    sessions: Mutex<HashMap<[u8; 32], Arc<Session>>>,
}

impl Auth {
    /// `token`: `None` generates a random one. Cookies are named `cookie_name`.
    pub fn new(token: Option<String>, cookie_name: String, idle_timeout: Duration) -> Self {
        Auth {
            token: token.unwrap_or_else(random_hex_256),
            cookie_name,
            idle_timeout,
            epoch: Instant::now(),
            bearer: Arc::new(Session::with_digest(None, 0)),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn cookie_name(&self) -> &str {
        &self.cookie_name
    }

    pub fn token_matches(&self, candidate: &str) -> bool {
        secret_eq(&self.token, candidate)
    }

    /// Cookie sessions open now.
    pub fn session_count(&self) -> usize {
        self.lock().len()
    }

    /// Opens a session (after a link's code or the form); returns the `Set-Cookie` value.
    pub fn open_session(&self) -> String {
        let id = random_hex_256();
        let now = self.now_ms();
        let session = Arc::new(Session::with_digest(Some(digest(&id)), now));
        let mut sessions = self.lock();
        self.sweep_locked(&mut sessions, now);
        if sessions.len() >= MAX_SESSIONS {
            // Pushed out: the least recently used, one not streaming if any.
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| {
                    (
                        Arc::strong_count(s) > 1,
                        s.last_used_ms.load(Ordering::Acquire),
                    )
                })
                .map(|(key, _)| *key);
            if let Some(ended) = oldest.and_then(|key| sessions.remove(&key)) {
                ended.end();
            }
        }
        if let Some(key) = session.digest {
            sessions.insert(key, session);
        }
        format!(
            "{}={id}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name
        )
    }

    /// The `Set-Cookie` value that removes the session cookie from the browser.
    pub fn clearing_cookie(&self) -> String {
        format!(
            "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
            self.cookie_name
        )
    }

    /// Ends a cookie session (sign-out); false for the bearer session, which
    /// lasts as long as the token.
    pub fn end_session(&self, session: &Arc<Session>) -> bool {
        let Some(key) = session.digest else {
            return false;
        };
        let removed = self.lock().remove(&key);
        session.end();
        removed.is_some()
    }

    /// The session the request's cookie or bearer token proves, if any.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<Arc<Session>> {
        if let Some(token) = bearer_token(headers) {
            if self.token_matches(token) {
                return Some(Arc::clone(&self.bearer));
            }
        }
        // Hash outside the lock: the lock is held for map lookups only.
        let keys: Vec<[u8; 32]> = session_cookies(headers, &self.cookie_name)
            .map(digest)
            .collect();
        if keys.is_empty() {
            return None;
        }
        let now = self.now_ms();
        let mut sessions = self.lock();
        for key in keys {
            let Some(session) = sessions.get(&key) else {
                continue;
            };
            if self.expired(session, now) {
                if let Some(ended) = sessions.remove(&key) {
                    ended.end();
                }
                continue;
            }
            session.touch(now);
            return Some(Arc::clone(session));
        }
        None
    }

    /// Ends the sessions idle past the timeout and refreshes the ones in use;
    /// run every [`Auth::sweep_interval`].
    pub fn sweep(&self) {
        let now = self.now_ms();
        self.sweep_locked(&mut self.lock(), now);
    }

    /// How often [`Auth::sweep`] should run: a session is ended at most this
    /// late, and its last use is known to within this.
    pub fn sweep_interval(&self) -> Duration {
        (self.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(60))
    }

    fn sweep_locked(&self, sessions: &mut HashMap<[u8; 32], Arc<Session>>, now: u64) {
        sessions.retain(|_, session| {
            let keep = !self.expired(session, now);
            if !keep {
                session.end();
            }
            keep
        });
    }

    /// Unused for the idle timeout. Anything holding the session besides the
    /// table (a request being served, a streaming response, the page's
    /// channel) counts as a use.
    fn expired(&self, session: &Arc<Session>, now: u64) -> bool {
        if Arc::strong_count(session) > 1 {
            session.touch(now);
            return false;
        }
        let idle = now.saturating_sub(session.last_used_ms.load(Ordering::Acquire));
        Duration::from_millis(idle) >= self.idle_timeout
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Values of the cookies named `name` that could be session ids (64 lowercase
/// hex digits), at most [`MAX_COOKIE_CANDIDATES`], from the first
/// [`MAX_COOKIE_PAIRS`] pairs.
fn session_cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .take(MAX_COOKIE_PAIRS)
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value.trim_matches('"'))
        .filter(|value| {
            value.len() == 64
                && value
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
        .take(MAX_COOKIE_CANDIDATES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const TOKEN: &str = "t0k-0123456789abcdef0123456789abcdef";

    fn auth(idle: Duration) -> Auth {
        Auth::new(Some(TOKEN.into()), cookie_name(8080), idle)
    }

    fn cookie_pair(set_cookie: &str) -> String {
        set_cookie.split(';').next().unwrap().to_owned()
    }

    #[test]
    fn token_cookie_and_bearer() {
        let auth = auth(DEFAULT_SESSION_IDLE);
        let cookie = auth.open_session();
        assert!(cookie.starts_with("deltascope_session_8080="), "{cookie}");
        let pair = cookie_pair(&cookie);
        let mut h = HeaderMap::new();
        assert!(auth.authenticate(&h).is_none());
        h.insert(
            COOKIE,
            HeaderValue::from_str(&format!("a=b; {pair}")).unwrap(),
        );
        assert!(auth.authenticate(&h).is_some_and(|s| !s.is_bearer()));
        // Another port's cookie with the same id is not ours.
        let other = pair.replace("_8080=", "_8081=");
        h.insert(COOKIE, HeaderValue::from_str(&other).unwrap());
        assert!(auth.authenticate(&h).is_none());
        h.insert(
            COOKIE,
            HeaderValue::from_str(&format!("deltascope_session_8080={}", "0".repeat(64))).unwrap(),
        );
        assert!(auth.authenticate(&h).is_none());
        h.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap(),
        );
        assert!(auth.authenticate(&h).is_some_and(|s| s.is_bearer()));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t0k"));
        assert!(auth.authenticate(&h).is_none());
        assert_eq!(random_hex_256().len(), 64);
    }

    #[test]
    fn the_real_cookie_is_found_among_junk_under_our_name() {
        let auth = auth(DEFAULT_SESSION_IDLE);
        let pair = cookie_pair(&auth.open_session());
        let junk: Vec<String> = (0..3)
            .map(|_| format!("deltascope_session_8080={}", random_hex_256()))
            .collect();
        let header = format!(
            "{}; x=1; deltascope_session_8080=nothex; {pair}",
            junk.join("; ")
        );
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_str(&header).unwrap());
        assert!(auth.authenticate(&h).is_some());
    }

    #[test]
    fn sessions_end_when_idle_but_not_while_in_use() {
        let auth = auth(Duration::from_millis(40));
        let pair = cookie_pair(&auth.open_session());
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_str(&pair).unwrap());
        let held = auth.authenticate(&h).unwrap();
        std::thread::sleep(Duration::from_millis(80));
        auth.sweep();
        assert!(auth.authenticate(&h).is_some(), "in use: not idle");
        drop(held);
        std::thread::sleep(Duration::from_millis(80));
        auth.sweep();
        assert!(auth.authenticate(&h).is_none());
        assert_eq!(auth.session_count(), 0);
    }

    #[test]
    fn sign_out_ends_the_session() {
        let auth = auth(DEFAULT_SESSION_IDLE);
        let pair = cookie_pair(&auth.open_session());
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_str(&pair).unwrap());
        let session = auth.authenticate(&h).unwrap();
        assert!(auth.end_session(&session));
        assert!(session.has_ended());
        assert!(auth.authenticate(&h).is_none());
        assert!(!auth.end_session(&auth.bearer.clone()));
    }

    #[test]
    fn tokens_are_checked() {
        assert!(matches!(
            check_token("short"),
            Err(TokenError::TooShort { len: 5 })
        ));
        assert!(check_token(&"x".repeat(MIN_TOKEN_BYTES)).is_ok());
        assert!(matches!(
            check_token(&format!("{} ", "x".repeat(40))),
            Err(TokenError::Unprintable)
        ));
    }

    #[test]
    fn slots_are_counted_by_kind_and_taken_all_or_none() {
        let s = Arc::new(Session::new("x".into()));
        let a = s.try_take_one(SlotKind::Watch, 2).unwrap();
        let _b = s.try_take_one(SlotKind::Watch, 2).unwrap();
        assert!(s.try_take_one(SlotKind::Watch, 2).is_none());
        assert!(
            s.try_take_one(SlotKind::Request, 2).is_some(),
            "kinds apart"
        );
        drop(a);
        assert!(s.try_take_one(SlotKind::Watch, 2).is_some());
        let three = s.try_take(SlotKind::Stream, 3, 4).unwrap();
        assert_eq!(s.open_slots(SlotKind::Stream), 3);
        assert!(s.try_take(SlotKind::Stream, 2, 4).is_none(), "all or none");
        assert_eq!(s.open_slots(SlotKind::Stream), 3);
        drop(three);
        assert_eq!(s.open_slots(SlotKind::Stream), 0);
    }
}
