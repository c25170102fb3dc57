//! The layers every request of `deltascope serve` passes, outermost first
//! (the order and what each decides is in [`crate::serve`]'s module doc), and
//! the dispatcher behind them. Each layer decides one thing on the request as
//! the previous ones left it, and answers with a Kubernetes `Status` (or the
//! sign-in page on `/`) when it refuses.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{self, HeaderValue};
use http::{Method, StatusCode};
use tower::ServiceExt;

use crate::assets;
use crate::auth::{Session, SlotKind};
use crate::body::{Observed, Observer, Until};
use crate::channel::Channels;
use crate::conn::ConnState;
use crate::paths::{classify, normalise as normalise_path, Classified, NormalPath, Route};
use crate::signin;
use crate::state::AppState;
use crate::status::{status, unauthorized};

/// Counts the request as in flight on its connection until its response body
/// is finished or dropped (see [`crate::conn`]).
pub(crate) async fn track(request: Request, next: Next) -> Response {
    let in_flight = request
        .extensions()
        .get::<Arc<ConnState>>()
        .map(ConnState::start_request);
    let response = next.run(request).await;
    match in_flight {
        Some(in_flight) => response.map(|body| Observed::wrap(body, in_flight)),
        None => response,
    }
}

/// Logs each request when its response body is finished or dropped, and sets
/// the security headers every response carries.
pub(crate) async fn access_log(request: Request, next: Next) -> Response {
    let mut entry = AccessEntry {
        method: request.method().clone(),
        // The path only: the query of a sign-in link carries its code.
        path: request.uri().path().to_owned(),
        status: 0,
        bytes: 0,
        started: Instant::now(),
    };
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let headers = &mut parts.headers;
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // HTML documents choose `same-origin` (see `assets`); nothing else has a
    // reason to send a Referer anywhere.
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The page's HTML has its own policy; nothing else is ever a document.
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(crate::csp::NON_PAGE_POLICY),
        );
    }
    entry.status = parts.status.as_u16();
    Response::from_parts(parts, Observed::wrap(body, entry))
}

struct AccessEntry {
    method: Method,
    path: String,
    status: u16,
    bytes: u64,
    started: Instant,
}

impl Observer for AccessEntry {
    fn on_data(&mut self, len: usize) {
        self.bytes += len as u64;
    }
}

impl Drop for AccessEntry {
    fn drop(&mut self) {
        tracing::info!(
            target: "deltascope::access",
            method = %self.method,
            path = %self.path,
            status = self.status,
            bytes = self.bytes,
            duration_ms = self.started.elapsed().as_millis() as u64,
        );
    }
}

/// Exactly one `Host`, one of ours; a fetch from the page itself or typed by
/// the user (fetch metadata); `Origin`, when sent, the page's own.
pub(crate) async fn host_origin(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    // RFC 9112 §3.2: a request with more than one Host is answered 400. Two
    // could be read differently by serve and by anything in front of it.
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first_host = hosts.next();
    if hosts.next().is_some() {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "deltascope refuses a request with more than one Host header",
        );
    }
    let host = first_host
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    // An absolute-form request target carries its own authority: it must pass too.
    let target_ok = request.uri().authority().is_none_or(|a| {
        state
            .allowed_hosts
            .contains(&a.as_str().to_ascii_lowercase())
    });
    let forwarded = forwarded_host(request.headers());
    let host = host
        .filter(|_| target_ok)
        .and_then(|h| browser_authority(&h, forwarded, &state.allowed_hosts));
    let Some(host) = host else {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "deltascope refuses this Host header (DNS-rebinding defence); open the URL \
             `deltascope serve` printed, or start it with `--allow-host NAME` for the name you use",
        );
    };
    // Fetch metadata: browsers say where a request comes from. Cookies are not
    // scoped by port, so a page on another localhost port is "same-site" and
    // its requests would carry our session cookie: only the page itself
    // (`same-origin`) and the user (`none`: a typed URL, a bookmark, the
    // printed link) may call serve. Clients that send no such header (CLI,
    // older browsers) are judged by the other checks.
    for site in request.headers().get_all("sec-fetch-site") {
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "deltascope refuses requests made by other sites and other local ports \
                     (Sec-Fetch-Site: {}); open http://{host}/ directly",
                    String::from_utf8_lossy(site.as_bytes())
                ),
            );
        }
    }
    for origin in request.headers().get_all(header::ORIGIN) {
        let ours = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| state.allowed_hosts.contains(&o.to_ascii_lowercase()));
        if !ours {
            return status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "deltascope refuses cross-origin requests: only pages served from \
                     http://{host} may call it"
                ),
            );
        }
    }
    next.run(request).await
}

/// Normalises the path once, classifies it, and stores the result.
pub(crate) async fn normalise(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = match normalise_path(request.uri().path()) {
        Ok(path) => path,
        Err(error) => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!("deltascope refuses this path: {error}"),
            )
        }
    };
    let route = classify(&path, state.demo);
    request.extensions_mut().insert(Classified { path, route });
    next.run(request).await
}

/// Sessions: `/healthz` and page assets are public; `/` signs in (link or
/// form) or shows the sign-in page; sign-out and new sign-in links take a
/// session if there is one; everything else needs a session. A
/// request that proves a session marks its connection authenticated, and the
/// responses of a browser session are cut when the session ends.
pub(crate) async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(route) = classified_route(&request) else {
        return internal();
    };
    let session = state.auth.authenticate(request.headers());
    if let Some(session) = &session {
        if let Some(conn) = request.extensions().get::<Arc<ConnState>>() {
            conn.mark_authenticated();
        }
        request.extensions_mut().insert(Arc::clone(session));
    }
    match route {
        Route::Healthz | Route::Asset | Route::SignOut | Route::SignInLink => {
            next.run(request).await
        }
        Route::SignIn => signin::at_signin(
            &state.auth,
            &state.sign_in_links,
            &request,
            session.as_ref(),
        ),
        Route::Index => {
            match signin::at_index(&state.auth, &state.sign_in_links, request, session.as_ref())
                .await
            {
                Ok(request) => next.run(request).await,
                Err(answer) => answer,
            }
        }
        Route::Api(_)
        | Route::Sim
        | Route::Channel(_)
        | Route::History(_)
        | Route::Clusters
        | Route::Forbidden(_) => {
            let Some(session) = session else {
                return unauthorized();
            };
            let response = next.run(request).await;
            if session.is_bearer() {
                return response;
            }
            // Signed out, expired or pushed out: its watches and channel end too.
            let ended = session.ended();
            response.map(|body| Until::wrap(body, ended, "the session ended"))
        }
    }
}

/// `X-Forwarded-Host`: `Ok(None)` when absent, `Err(())` when it cannot be
/// trusted at all (several, or not text).
fn forwarded_host(headers: &http::HeaderMap) -> Result<Option<String>, ()> {
    let mut values = headers.get_all("x-forwarded-host").iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    let text = first.to_str().map_err(|_| ())?.trim().to_ascii_lowercase();
    if text.contains(',') {
        return Err(()); // a chain of proxies: not the setup serve knows
    }
    Ok(Some(text))
}

/// The authority the browser used, when serve accepts it (DNS-rebinding
/// defence). A browser always sends `Host` with serve's port, so `Host` must
/// be one of serve's names; then an `X-Forwarded-Host`, if any, must be one
/// too. The one exception is a proxy on this machine in front of serve, such
/// as `trunk serve`: it sends `Host` as a loopback name with no port (what no
/// browser sends for serve's port) and the browser's authority in
/// `X-Forwarded-Host`, which must then be a name serve accepts (`--allow-host
/// 127.0.0.1:8081` for trunk's port). A page on a rebinding name therefore
/// gets 403 through the proxy or not: its name is in `X-Forwarded-Host`.
fn browser_authority(
    host: &str,
    forwarded: Result<Option<String>, ()>,
    allowed: &[String],
) -> Option<String> {
    let forwarded = forwarded.ok()?;
    let allowed_name = |name: &str| allowed.iter().any(|a| a == name);
    let local_proxy = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    match forwarded {
        None => allowed_name(host).then(|| host.to_string()),
        Some(browser) if allowed_name(&browser) && (allowed_name(host) || local_proxy) => {
            Some(browser)
        }
        Some(_) => None,
    }
}

/// The allowlist (403) and the read-only rule (405).
pub(crate) async fn policy(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(route) = classified_route(&request) else {
        return internal();
    };
    let method = request.method();
    let read = method == Method::GET || method == Method::HEAD;
    match route {
        Route::Forbidden(why) => {
            return status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!("deltascope refuses this path: {why}"),
            )
        }
        Route::Api(_) if !read && !state.allow_writes => {
            return method_not_allowed(
                method,
                "deltascope is read-only: only GET and HEAD reach the cluster \
                 (start it with `--allow-writes` to let writes through)",
                "GET, HEAD",
            )
        }
        Route::Sim if !read && method != Method::POST => {
            return method_not_allowed(
                method,
                "the simulated cluster's controls take GET and POST",
                "GET, HEAD, POST",
            )
        }
        Route::Channel(None) if !read => {
            return method_not_allowed(method, "a channel is opened with GET", "GET, HEAD")
        }
        Route::Channel(Some(_)) if method != Method::POST => {
            return method_not_allowed(
                method,
                "a channel is controlled with POST {\"open\":[…],\"close\":[…]}",
                "POST",
            )
        }
        Route::SignIn if !read => {
            return method_not_allowed(method, "the sign-in link is opened with GET", "GET, HEAD")
        }
        Route::SignOut if method != Method::POST => {
            return method_not_allowed(method, "sign out with POST", "POST")
        }
        Route::SignInLink if method != Method::POST => {
            return method_not_allowed(method, "ask for a new sign-in link with POST", "POST")
        }
        Route::History(_) if !read => {
            return method_not_allowed(method, "the recorded history is read with GET", "GET, HEAD")
        }
        Route::Clusters if !read => {
            return method_not_allowed(method, "the clusters' state is read with GET", "GET, HEAD")
        }
        Route::Healthz | Route::Index | Route::Asset if !read => {
            return method_not_allowed(
                method,
                "the page's files are read-only (API writes need `--allow-writes`)",
                "GET, HEAD",
            )
        }
        _ => {}
    }
    next.run(request).await
}

fn method_not_allowed(method: &Method, message: &str, allow: &'static str) -> Response {
    let mut response = status(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("{method} refused: {message}"),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

fn internal() -> Response {
    status(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "deltascope: request reached a handler without passing its layers",
    )
}

/// The route [`normalise`] classified `request` as; `None` when that layer
/// did not run (an internal error).
fn classified_route(request: &Request) -> Option<Route> {
    request
        .extensions()
        .get::<Classified>()
        .map(|c| c.route.clone())
}

/// Sends a request that passed every layer where its route says.
pub(crate) async fn dispatch(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let Some(Classified { path, route }) = request.extensions().get::<Classified>().cloned() else {
        return internal();
    };
    let session = request.extensions().get::<Arc<Session>>().cloned();
    match route {
        Route::Healthz => healthz(),
        Route::Index | Route::Asset => {
            assets::serve_file(
                state.dist.as_deref(),
                path.segments(),
                request.headers(),
                &state.compressed,
            )
            .await
        }
        Route::SignOut => signin::sign_out(&state.auth, session.as_ref()),
        Route::SignInLink => signin::new_link(&state.sign_in_links, session.as_ref()),
        Route::Sim => to_sim(&state, request, &path).await,
        Route::Api(_) | Route::Clusters | Route::Channel(_) | Route::History(_) => match session {
            Some(session) => dispatch_for_session(&state, request, &path, route, session).await,
            None => unauthorized(),
        },
        // Both are answered by `authenticate` and never get here.
        Route::SignIn | Route::Forbidden(_) => internal(),
    }
}

/// The routes that need a session, sent with the request's `session`.
async fn dispatch_for_session(
    state: &AppState,
    request: Request,
    path: &NormalPath,
    route: Route,
    session: Arc<Session>,
) -> Response {
    match route {
        Route::Api(api) => {
            // `/clusters/{name}/…` to that cluster, the rest to the default.
            match state.upstreams.route(path) {
                Ok((forwarder, path)) => forwarder.forward(request, &path, &api, &session).await,
                Err(unknown) => unknown.into_response(),
            }
        }
        Route::Clusters => state.clusters.answer(),
        Route::Channel(id) => to_channel(state, request, id, session).await,
        Route::History(which) => {
            crate::history_api::answer(&state.history, which, request.uri().query()).await
        }
        // `dispatch` answers these itself and never sends them here.
        Route::Healthz
        | Route::Index
        | Route::Asset
        | Route::SignOut
        | Route::SignInLink
        | Route::Sim
        | Route::SignIn
        | Route::Forbidden(_) => internal(),
    }
}

/// `/healthz`: serve is up.
fn healthz() -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        "{\"status\":\"ok\"}\n",
    )
        .into_response()
}

/// `/_sim/*` (with `--demo`): to the simulated cluster's controls under the
/// normalised path, without the browser's credentials, never cached.
async fn to_sim(state: &AppState, request: Request, path: &NormalPath) -> Response {
    let Some(control) = state.sim_control.clone() else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "/_sim exists only with `deltascope serve --demo`",
        );
    };
    let (mut parts, body) = request.into_parts();
    let target = match parts.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    match target.parse() {
        Ok(uri) => parts.uri = uri,
        Err(_) => return status(StatusCode::BAD_REQUEST, "BadRequest", "invalid query"),
    }
    parts.headers.remove(header::COOKIE);
    parts.headers.remove(header::AUTHORIZATION);
    let mut response = match control.oneshot(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `/_deltascope/channel` opens a channel (`id` `None`), and
/// `/_deltascope/channel/{id}` controls one.
async fn to_channel(
    state: &AppState,
    request: Request,
    id: Option<String>,
    session: Arc<Session>,
) -> Response {
    let Some(channels) = state.channels.as_ref() else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "this deltascope serve runs without the channel (--no-channel)",
        );
    };
    match id {
        None => channels.open(session),
        Some(id) => control_channel(channels, request, &id, &session).await,
    }
}

/// A channel control request: one of the session's few control slots, a
/// body of at most [`crate::channel::MAX_CONTROL_BYTES`], then the channel's answer.
async fn control_channel(
    channels: &Channels,
    request: Request,
    id: &str,
    session: &Arc<Session>,
) -> Response {
    let Some(_reading) =
        session.try_take_one(SlotKind::Control, crate::limits::MAX_CONTROLS_PER_SESSION)
    else {
        return crate::status::too_many_requests(
            format!(
                "this session is already sending {} channel control requests",
                crate::limits::MAX_CONTROLS_PER_SESSION
            ),
            1,
        );
    };
    let body =
        match axum::body::to_bytes(request.into_body(), crate::channel::MAX_CONTROL_BYTES).await {
            Ok(body) => body,
            Err(_) => {
                return status(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "RequestEntityTooLarge",
                    format!(
                        "a channel control request may have at most {} bytes",
                        crate::channel::MAX_CONTROL_BYTES
                    ),
                )
            }
        };
    channels.control(id, session, &body)
}

#[cfg(test)]
mod tests {
    use super::browser_authority;

    #[test]
    fn a_local_proxy_may_name_the_browser_s_authority_and_nothing_else_may() {
        let allowed: Vec<String> = ["127.0.0.1:8080", "127.0.0.1:8081", "localhost:8080"]
            .map(String::from)
            .to_vec();
        let ok = |host: &str, fwd: Option<&str>| {
            browser_authority(host, Ok(fwd.map(String::from)), &allowed)
        };
        assert_eq!(
            ok("127.0.0.1:8080", None).as_deref(),
            Some("127.0.0.1:8080")
        );
        // trunk serve: Host without a port, the page's authority forwarded
        assert_eq!(
            ok("127.0.0.1", Some("127.0.0.1:8081")).as_deref(),
            Some("127.0.0.1:8081")
        );
        assert_eq!(
            ok("localhost", Some("127.0.0.1:8081")).as_deref(),
            Some("127.0.0.1:8081")
        );
        // a rebinding name, through the proxy or straight
        assert_eq!(ok("127.0.0.1", Some("rebind.example:8081")), None);
        assert_eq!(ok("rebind.example:8080", None), None);
        assert_eq!(ok("rebind.example", Some("127.0.0.1:8081")), None);
        // a portless loopback Host alone, or a forwarded name not allowed
        assert_eq!(ok("127.0.0.1", None), None);
        assert_eq!(ok("127.0.0.1:8080", Some("evil.example")), None);
        assert_eq!(browser_authority("127.0.0.1", Err(()), &allowed), None);
    }
}
