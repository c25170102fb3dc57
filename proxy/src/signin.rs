//! Signing in and out (the rules are in [`crate::auth`]'s module doc): the
//! printed link `GET /?code=C` (`/_deltascope/signin?code=C` behind a proxy),
//! whose one-time code opens one session; the sign-in form `POST /` with the
//! token, for another browser; new links, `POST /_deltascope/sign-in-link`;
//! and `POST /_deltascope/sign-out`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Method, StatusCode};

use crate::assets::{sign_in_page, SignIn};
use crate::auth::{Auth, Session};
use crate::sign_in_code::SignInCodes;
use crate::status::{status, too_many_requests};

/// The sign-in form's body at most (a `token=` field).
const MAX_FORM_BYTES: usize = 4096;

/// How long the sign-in form's body may take to arrive: the request is not
/// authenticated yet, so it must not hold its connection longer than a head may.
const FORM_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The sign-in page's button has serve print a new link at most this often,
/// so nobody can flood its terminal.
pub const PRINT_INTERVAL: Duration = Duration::from_secs(5);

/// The sign-in links of one serve: their codes, the address they open, and
/// when the sign-in page last had one printed.
pub(crate) struct SignInLinks {
    /// `http://ADDR/`.
    base: String,
    codes: SignInCodes,
    last_printed: Mutex<Option<Instant>>,
}

impl SignInLinks {
    /// Links to `base` (`http://ADDR/`) whose codes are valid for `ttl`.
    pub(crate) fn new(base: String, ttl: Duration) -> Self {
        SignInLinks {
            base,
            codes: SignInCodes::new(ttl),
            last_printed: Mutex::new(None),
        }
    }

    /// A link with a new code: `http://ADDR/?code=C`.
    pub(crate) fn issue(&self) -> String {
        format!("{}?code={}", self.base, self.codes.issue())
    }

    /// Whether the sign-in page may have a link printed now; `Err` holds how
    /// long until it may.
    fn may_print(&self, now: Instant) -> Result<(), Duration> {
        let mut last = self.last_printed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = *last {
            let since = now.saturating_duration_since(at);
            if since < PRINT_INTERVAL {
                return Err(PRINT_INTERVAL - since);
            }
        }
        *last = Some(now);
        Ok(())
    }
}

/// Prints `deltascope: open URL` on stdout: the line users look for, and
/// tooling (`cargo xtask dev`, the tests) parses.
pub(crate) fn print_link(url: &str) {
    crate::process::print_line(&format!("deltascope: open {url}"));
}

/// `/`: answers a sign-in (link or form) or the sign-in page, or hands the
/// request back to go on to the page when it has a session.
pub(crate) async fn at_index(
    auth: &Auth,
    links: &SignInLinks,
    request: Request,
    session: Option<&Arc<Session>>,
) -> Result<Request, Response> {
    if request.method() == Method::POST {
        return Err(form(auth, links, request).await);
    }
    if let Some(answer) = link(auth, links, &request, session.is_some()) {
        return Err(answer);
    }
    match session {
        Some(_) => Ok(request),
        None => Err(sign_in_page(SignIn::Needed, links.codes.ttl())),
    }
}

/// `/_deltascope/signin?code=C`: the link, for a browser that reaches serve
/// through a proxy (`cargo xtask dev`); without a code, the sign-in page.
pub(crate) fn at_signin(
    auth: &Auth,
    links: &SignInLinks,
    request: &Request,
    session: Option<&Arc<Session>>,
) -> Response {
    link(auth, links, request, session.is_some())
        .unwrap_or_else(|| sign_in_page(SignIn::Needed, links.codes.ttl()))
}

/// The answer to a request for `/` or `/_deltascope/signin` with `?code=` or
/// `?token=` (`None` without either). A valid code opens a session, once; a
/// browser that has a session goes to the page (the code is spent all the
/// same); anything else shows the sign-in page, saying why. A token in the
/// URL signs nothing in and is not even compared.
fn link(auth: &Auth, links: &SignInLinks, request: &Request, signed_in: bool) -> Option<Response> {
    let query = request.uri().query();
    let ttl = links.codes.ttl();
    let Some(code) = query_value(query, "code") else {
        // Not even compared with the token: an old link, or a typed one.
        query_value(query, "token")?;
        tracing::info!("a link with ?token= was opened; links carry a one-time code now");
        return Some(if signed_in {
            see_root(None)
        } else {
            sign_in_page(SignIn::TokenInUrl, ttl)
        });
    };
    // HEAD (a link preview) spends nothing.
    if request.method() != Method::GET {
        return Some(sign_in_page(SignIn::Needed, ttl));
    }
    let redeemed = links.codes.redeem(&code);
    if signed_in {
        return Some(see_root(None));
    }
    Some(match redeemed {
        Ok(()) => see_root(Some(auth.open_session())),
        Err(why) => {
            tracing::info!("a sign-in link opened nothing: {why}");
            sign_in_page(SignIn::Refused(why), ttl)
        }
    })
}

/// `POST /_deltascope/sign-in-link`. With a session or the token: the new
/// link as JSON. Without (the sign-in page's button): serve prints it in its
/// terminal, at most once per [`PRINT_INTERVAL`], and the page says so.
pub(crate) fn new_link(links: &SignInLinks, session: Option<&Arc<Session>>) -> Response {
    let ttl = links.codes.ttl();
    if session.is_some() {
        let body = serde_json::json!({
            "url": links.issue(),
            "expiresInSeconds": ttl.as_secs(),
        });
        let mut response = Response::new(Body::from(body.to_string()));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return response;
    }
    if let Err(wait) = links.may_print(Instant::now()) {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        return too_many_requests(
            format!(
                "deltascope serve printed a sign-in link less than {} s ago: open that one, \
                 or ask again in a few seconds",
                PRINT_INTERVAL.as_secs()
            ),
            seconds,
        );
    }
    print_link(&links.issue());
    tracing::info!("the sign-in page had serve print a new sign-in link");
    sign_in_page(SignIn::LinkPrinted, ttl)
}

/// `POST /` with `application/x-www-form-urlencoded` `token=T`: the sign-in
/// page's form, which keeps the token out of URLs and histories.
async fn form(auth: &Auth, links: &SignInLinks, request: Request) -> Response {
    let is_form = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !is_form {
        return status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            "sign in with the form on / (application/x-www-form-urlencoded `token=…`); \
             CLI clients send `Authorization: Bearer TOKEN` instead",
        );
    }
    let read = axum::body::to_bytes(request.into_body(), MAX_FORM_BYTES);
    let body = match tokio::time::timeout(FORM_READ_TIMEOUT, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestEntityTooLarge",
                format!("the sign-in form may have at most {MAX_FORM_BYTES} bytes"),
            )
        }
        Err(_) => {
            return status(
                StatusCode::REQUEST_TIMEOUT,
                "Timeout",
                "the sign-in form did not arrive in time",
            )
        }
    };
    let token = std::str::from_utf8(&body)
        .ok()
        .and_then(|text| query_value(Some(text), "token"));
    match token {
        Some(token) if auth.token_matches(&token) => see_root(Some(auth.open_session())),
        _ => sign_in_page(SignIn::WrongToken, links.codes.ttl()),
    }
}

/// A `303 See Other` to `/`, optionally setting a cookie.
fn see_root(set_cookie: Option<String>) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    headers.insert(LOCATION, HeaderValue::from_static("/"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(cookie) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(SET_COOKIE, cookie);
    }
    response
}

/// The first value of `name` in a query (or a form body), percent-decoded;
/// `None` when absent or not UTF-8.
fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    crate::query::pairs(query?)
        .find(|(key, _)| key.as_ref() == name.as_bytes())
        .and_then(|(_, value)| String::from_utf8(value.into_owned()).ok())
}

/// `POST /_deltascope/sign-out`: ends the browser's session (its streams are
/// cut) and removes its cookie. Harmless without one; the bearer session is
/// not ended (it lasts as long as the token).
pub(crate) fn sign_out(auth: &Auth, session: Option<&Arc<Session>>) -> Response {
    if let Some(session) = session {
        if auth.end_session(session) {
            tracing::info!("a browser signed out");
        }
    }
    see_root(Some(auth.clearing_cookie()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_button_prints_at_most_once_per_interval() {
        let links = SignInLinks::new("http://127.0.0.1:1/".into(), Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(links.may_print(t0), Ok(()));
        let soon = t0 + Duration::from_secs(1);
        assert_eq!(
            links.may_print(soon),
            Err(PRINT_INTERVAL - Duration::from_secs(1))
        );
        assert_eq!(links.may_print(t0 + PRINT_INTERVAL), Ok(()));
        let url = links.issue();
        let code = url.strip_prefix("http://127.0.0.1:1/?code=").unwrap();
        assert_eq!(links.codes.redeem(code), Ok(()));
    }

    #[test]
    fn query_values_are_decoded_and_the_first_wins() {
        let q = Some("a=1&code=ab%63&code=x&token");
        assert_eq!(query_value(q, "code").as_deref(), Some("abc"));
        assert_eq!(query_value(q, "token").as_deref(), Some(""));
        assert_eq!(query_value(q, "none"), None);
        assert_eq!(query_value(None, "code"), None);
    }
}
