//! One-time sign-in codes: what the link `deltascope serve` prints carries
//! instead of the session token (the rules are in [`crate::auth`]'s module doc).
//!
//! A code is 128 random bits, hex. It opens one browser session, once,
//! within its time to live ([`CODE_TTL`], 5 minutes) of being issued; then it
//! is spent, so the copy a browser's history or a terminal's scrollback keeps
//! opens nothing, and it never was a credential for anything else. serve keeps
//! only each code's SHA-256 and finds a code by comparing digests in constant
//! time, so neither its memory nor the timing of a guess tells anything about
//! a live code.
//!
//! At most [`MAX_LIVE_CODES`] are live at once: issuing another retires the
//! oldest, so asking for links again and again cannot grow serve's memory.
//! The digests of the last [`MAX_RETIRED_CODES`] codes that stopped being
//! valid are kept with the reason (used, expired, replaced by newer ones), so
//! that the sign-in page can say which it was; older ones, and codes of an
//! earlier run of serve, are simply unknown.
//!
//! The clock is a parameter ([`SignInCodes::issue_at`],
//! [`SignInCodes::redeem_at`]) so that tests need not wait out the TTL.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How long a sign-in code stays valid after it was issued.
pub const CODE_TTL: Duration = Duration::from_secs(5 * 60);

/// Codes valid at once; issuing one more retires the oldest.
pub const MAX_LIVE_CODES: usize = 8;

/// Retired codes remembered, to tell "used" and "expired" from "unknown".
pub const MAX_RETIRED_CODES: usize = 64;

/// Random bytes in a code (128 bits); it is written as twice as many hex digits.
const CODE_BYTES: usize = 16;

/// Why a code opens nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeRefused {
    #[error("the sign-in code has already been used")]
    Spent,
    #[error("the sign-in code has expired")]
    Expired,
    #[error("the sign-in code was replaced by newer ones")]
    Replaced,
    /// Never issued by this run of serve, malformed, or retired too long ago.
    #[error("the sign-in code is not one this server knows")]
    Unknown,
}

/// The live codes (digest and when issued) and the recently retired ones.
#[derive(Debug, Default)]
struct Codes {
    live: VecDeque<([u8; 32], Instant)>,
    retired: VecDeque<([u8; 32], CodeRefused)>,
}

impl Codes {
    fn retire(&mut self, digest: [u8; 32], why: CodeRefused) {
        if self.retired.len() >= MAX_RETIRED_CODES {
            self.retired.pop_front();
        }
        self.retired.push_back((digest, why));
    }

    /// Retires the codes issued `ttl` or longer before `now`.
    fn expire(&mut self, now: Instant, ttl: Duration) {
        while let Some(&(digest, issued)) = self.live.front() {
            if now.saturating_duration_since(issued) < ttl {
                break;
            }
            self.live.pop_front();
            self.retire(digest, CodeRefused::Expired);
        }
    }
}

/// The sign-in codes of one run of serve.
#[derive(Debug)]
pub struct SignInCodes {
    ttl: Duration,
    codes: Mutex<Codes>,
}

impl SignInCodes {
    /// Codes valid for `ttl` each ([`CODE_TTL`] but in tests).
    pub fn new(ttl: Duration) -> Self {
        SignInCodes {
            ttl,
            codes: Mutex::new(Codes::default()),
        }
    }

    /// How long a code stays valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A new code, valid from now.
    pub fn issue(&self) -> String {
        self.issue_at(Instant::now())
    }

    /// A new code, valid from `now`; the oldest live one is retired when
    /// [`MAX_LIVE_CODES`] are live already.
    pub fn issue_at(&self, now: Instant) -> String {
        let mut bytes = [0u8; CODE_BYTES];
        rand::thread_rng().fill_bytes(&mut bytes);
        let code: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut codes = self.lock();
        codes.expire(now, self.ttl);
        if codes.live.len() >= MAX_LIVE_CODES {
            if let Some((oldest, _)) = codes.live.pop_front() {
                codes.retire(oldest, CodeRefused::Replaced);
            }
        }
        codes.live.push_back((digest(&code), now));
        code
    }

    /// Spends `code`: `Ok` for the one caller that presents it first while it
    /// is valid, else why it opens nothing.
    pub fn redeem(&self, code: &str) -> Result<(), CodeRefused> {
        self.redeem_at(code, Instant::now())
    }

    /// [`SignInCodes::redeem`] at `now`.
    pub fn redeem_at(&self, code: &str, now: Instant) -> Result<(), CodeRefused> {
        if !well_formed(code) {
            return Err(CodeRefused::Unknown);
        }
        // Hash outside the lock: it is held for the comparisons only.
        let wanted = digest(code);
        let mut codes = self.lock();
        codes.expire(now, self.ttl);
        if let Some(at) = codes.live.iter().position(|(d, _)| same(d, &wanted)) {
            codes.live.remove(at);
            codes.retire(wanted, CodeRefused::Spent);
            return Ok(());
        }
        codes
            .retired
            .iter()
            .rev()
            .find(|(d, _)| same(d, &wanted))
            .map_or(Err(CodeRefused::Unknown), |&(_, why)| Err(why))
    }

    /// Codes still valid at `now`.
    pub fn live_at(&self, now: Instant) -> usize {
        let mut codes = self.lock();
        codes.expire(now, self.ttl);
        codes.live.len()
    }

    fn lock(&self) -> MutexGuard<'_, Codes> {
        self.codes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Exactly what [`SignInCodes::issue_at`] writes: lowercase hex of [`CODE_BYTES`].
fn well_formed(code: &str) -> bool {
    code.len() == 2 * CODE_BYTES && code.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn digest(code: &str) -> [u8; 32] {
    Sha256::digest(code.as_bytes()).into()
}

fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_opens_once_and_says_so_after() {
        let codes = SignInCodes::new(CODE_TTL);
        let code = codes.issue();
        assert_eq!(code.len(), 32, "{code}");
        assert!(well_formed(&code));
        assert_ne!(code, codes.issue(), "random");
        assert_eq!(codes.redeem(&code), Ok(()));
        assert_eq!(codes.redeem(&code), Err(CodeRefused::Spent));
        assert_eq!(codes.redeem(&code), Err(CodeRefused::Spent));
    }

    #[test]
    fn a_code_expires_after_its_ttl() {
        let codes = SignInCodes::new(CODE_TTL);
        let t0 = Instant::now();
        let late = codes.issue_at(t0);
        let in_time = codes.issue_at(t0);
        assert_eq!(
            codes.redeem_at(&in_time, t0 + CODE_TTL - Duration::from_millis(1)),
            Ok(())
        );
        assert_eq!(
            codes.redeem_at(&late, t0 + CODE_TTL),
            Err(CodeRefused::Expired)
        );
        // Still told apart later, and never valid again.
        assert_eq!(
            codes.redeem_at(&late, t0 + 2 * CODE_TTL),
            Err(CodeRefused::Expired)
        );
        assert_eq!(codes.live_at(t0 + CODE_TTL), 0);
    }

    #[test]
    fn at_most_eight_codes_live_and_the_oldest_goes_first() {
        let codes = SignInCodes::new(CODE_TTL);
        let t0 = Instant::now();
        let issued: Vec<String> = (0..MAX_LIVE_CODES + 2)
            .map(|i| codes.issue_at(t0 + Duration::from_secs(i as u64)))
            .collect();
        let now = t0 + Duration::from_secs(20);
        assert_eq!(codes.live_at(now), MAX_LIVE_CODES);
        assert_eq!(codes.redeem_at(&issued[0], now), Err(CodeRefused::Replaced));
        assert_eq!(codes.redeem_at(&issued[1], now), Err(CodeRefused::Replaced));
        for code in &issued[2..] {
            assert_eq!(codes.redeem_at(code, now), Ok(()));
        }
        assert_eq!(codes.live_at(now), 0);
    }

    #[test]
    fn unknown_and_malformed_codes_open_nothing() {
        let codes = SignInCodes::new(CODE_TTL);
        let code = codes.issue();
        let other = SignInCodes::new(CODE_TTL).issue();
        assert_eq!(codes.redeem(&other), Err(CodeRefused::Unknown));
        for bad in [
            "",
            "x",
            &code.to_uppercase(),
            &format!("{code}0"),
            &code[1..],
        ] {
            assert_eq!(codes.redeem(bad), Err(CodeRefused::Unknown), "{bad:?}");
        }
        assert_eq!(codes.redeem(&code), Ok(()), "the real one still opens");
    }

    #[test]
    fn retired_codes_are_remembered_within_a_bound() {
        let codes = SignInCodes::new(CODE_TTL);
        let first = codes.issue();
        assert_eq!(codes.redeem(&first), Ok(()));
        for _ in 0..MAX_RETIRED_CODES {
            let code = codes.issue();
            assert_eq!(codes.redeem(&code), Ok(()));
        }
        assert_eq!(codes.lock().retired.len(), MAX_RETIRED_CODES);
        assert_eq!(codes.redeem(&first), Err(CodeRefused::Unknown));
    }
}
