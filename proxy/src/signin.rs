//! Signing in and out on `/` (the rules are in [`crate::auth`]'s module doc):
//! the printed link `GET /?token=T`, spent once it has opened a session; the
//! sign-in form `POST /` for another browser; and `POST /_deltascope/sign-out`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use http::header::CONTENT_TYPE;
use http::{Method, StatusCode};

use crate::assets::{sign_in_page, SignIn};
use crate::auth::{query_token, Auth, Session};
use crate::layers::see_root;
use crate::status::status;

/// The sign-in form's body at most (a `token=` field).
const MAX_FORM_BYTES: usize = 4096;

/// How long the sign-in form's body may take to arrive: the request is not
/// authenticated yet, so it must not hold its connection longer than a head may.
const FORM_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// `/`: answers a sign-in (link or form) or the sign-in page, or hands the
/// request back to go on to the page when it has a session.
pub(crate) async fn at_index(
    auth: &Auth,
    request: Request,
    session: Option<&Arc<Session>>,
) -> Result<Request, Response> {
    if request.method() == Method::POST {
        return Err(form(auth, request).await);
    }
    if let Some(token) = query_token(request.uri().query()) {
        return Err(link(auth, request.method(), &token, session.is_some()));
    }
    match session {
        Some(_) => Ok(request),
        None => Err(sign_in_page(SignIn::Needed)),
    }
}

/// `/_deltascope/signin?token=T`: the link, for a browser that reaches serve
/// through a proxy (`cargo xtask dev`); without a token, the sign-in page.
pub(crate) fn at_signin(
    auth: &Auth,
    request: &Request,
    session: Option<&Arc<Session>>,
) -> Response {
    match query_token(request.uri().query()) {
        Some(token) => link(auth, request.method(), &token, session.is_some()),
        None => sign_in_page(SignIn::Needed),
    }
}

/// `GET /?token=T`. The first correct use opens a session; later ones go to
/// the page from the browser that has a session, and to the sign-in page
/// (nothing opened) from any other.
fn link(auth: &Auth, method: &Method, token: &str, signed_in: bool) -> Response {
    if method != Method::GET {
        return sign_in_page(SignIn::Needed);
    }
    if !auth.token_matches(token) {
        return sign_in_page(SignIn::WrongToken);
    }
    if signed_in {
        return see_root(None);
    }
    if auth.spend_link() {
        return see_root(Some(auth.open_session()));
    }
    tracing::info!("the sign-in link was opened again after it had opened a session; refused");
    sign_in_page(SignIn::LinkUsed)
}

/// `POST /` with `application/x-www-form-urlencoded` `token=T`: the sign-in
/// page's form, which keeps the token out of URLs and histories.
async fn form(auth: &Auth, request: Request) -> Response {
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
    let token = std::str::from_utf8(&body).ok().and_then(|text| {
        crate::query::pairs(text)
            .find(|(name, _)| name.as_ref() == b"token")
            .and_then(|(_, value)| String::from_utf8(value.into_owned()).ok())
    });
    match token {
        Some(token) if auth.token_matches(&token) => see_root(Some(auth.open_session())),
        _ => sign_in_page(SignIn::WrongToken),
    }
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
