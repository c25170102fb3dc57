//! The page's files: built into the binary, or from `--dist DIR` (trunk's
//! output, for the `trunk serve` dev loop and tests).
//!
//! The built-in page is `dist/` at the workspace root when the binary is
//! compiled, embedded with `rust-embed` (chosen over `include_dir`: it reads
//! the files from disk in debug builds, so the dev loop and `cargo xtask
//! test` never recompile the proxy for a page change, and `allow_missing`
//! lets a clean clone compile before the page is built). A release binary
//! compiled without `dist/` carries no page; serve then refuses to start
//! without `--dist` and says how to build it ([`built_in_page`]).
//!
//! `/` is `index.html`. There is no SPA fallback: the page uses hash routes, so
//! a missing file is a plain 404. Hidden files (`.something`) are never served.
//! Paths arrive normalised (see [`crate::paths`]), so they cannot leave `dist`.
//!
//! Auth decision: `index.html` needs a session (without one the sign-in page
//! below is served instead), the other files (wasm, js, css, icons) are served
//! without auth because they hold no cluster data and nothing secret.
//!
//! The other files go out compressed when the browser accepts it, and a
//! request that names their `ETag` gets `304 Not Modified` (see
//! [`crate::compress`]).
//!
//! Every HTML document served here carries the page's Content-Security-Policy
//! ([`crate::csp::page_policy`]), computed from the document itself so the
//! hashes of its inline scripts are always the build's own.

use std::path::Path;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG,
    IF_NONE_MATCH, VARY,
};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::compress::{compressible, entity_tag, not_modified, sha256, Accepted, Compressed};
use crate::csp::page_policy;
use crate::sign_in_code::{CodeRefused, MAX_LIVE_CODES};

/// The page as built when this binary was compiled (read from disk in debug builds).
#[derive(rust_embed::RustEmbed)]
#[folder = "../dist"]
#[allow_missing = true]
struct BuiltPage;

/// Does this binary carry a built page (its `index.html`)?
pub fn built_in_page() -> bool {
    BuiltPage::get("index.html").is_some()
}

/// A file of the page (`[]` is `index.html`), and its path relative to the page.
async fn read(dist: Option<&Path>, segments: &[String]) -> (String, Option<Vec<u8>>) {
    let relative = if segments.is_empty() {
        "index.html".to_string()
    } else {
        segments.join("/")
    };
    let bytes = read_relative(dist, &relative).await;
    (relative, bytes)
}

/// A file of the page by its relative path: from `dist` when given, else the
/// built-in page.
async fn read_relative(dist: Option<&Path>, relative: &str) -> Option<Vec<u8>> {
    match dist {
        Some(dir) => {
            let mut path = dir.to_path_buf();
            path.push(relative);
            tokio::fs::read(&path).await.ok()
        }
        None => BuiltPage::get(relative).map(|file| file.data.into_owned()),
    }
}

/// The content type for a file name.
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Serves `segments` (decoded, normalised) from `dist`, or from the built-in
/// page when `None`; `[]` is `index.html`. `request` gives the codings the
/// browser accepts and the `ETag` it already holds.
pub async fn serve_file(
    dist: Option<&Path>,
    segments: &[String],
    request: &HeaderMap,
    compressed: &Compressed,
) -> Response {
    if segments.iter().any(|s| s.starts_with('.')) {
        return not_found();
    }
    let name = if segments.is_empty() {
        "index.html"
    } else {
        segments.last().map(String::as_str).unwrap_or("")
    };
    let (relative, bytes) = read(dist, segments).await;
    match bytes {
        Some(bytes) if is_html(name) => {
            let html = String::from_utf8_lossy(&bytes);
            let policy = page_policy(&html);
            html_response(StatusCode::OK, "no-cache", &policy, Body::from(bytes))
        }
        Some(bytes) => {
            // The page build's brotli of this file, if it wrote one.
            let precompressed = async {
                read_relative(dist, &format!("{relative}.br"))
                    .await
                    .map(Bytes::from)
            };
            let content = Bytes::from(bytes);
            static_file(
                content_type(name),
                content,
                request,
                compressed,
                precompressed,
            )
            .await
        }
        None if segments.is_empty() => {
            let place = match dist {
                Some(dir) => format!(
                    "in <code>{}</code>",
                    html_escape(&dir.display().to_string())
                ),
                None => "built into this binary".to_string(),
            };
            let html = format!(
                "<!doctype html><meta charset=utf-8><title>deltascope</title>\
                 <p>The page is not built: no index.html {place}. \
                 Run <code>cargo xtask demo</code>, or <code>trunk build</code> and pass \
                 <code>--dist</code>.</p>"
            );
            let policy = page_policy(&html);
            html_response(StatusCode::NOT_FOUND, "no-store", &policy, Body::from(html))
        }
        None => not_found(),
    }
}

/// A file other than HTML: `304` when the browser holds it (its `ETag`),
/// else the content, compressed when worth it and accepted.
async fn static_file(
    content_type: &'static str,
    content: Bytes,
    request: &HeaderMap,
    compressed: &Compressed,
    precompressed: impl std::future::Future<Output = Option<Bytes>>,
) -> Response {
    const CACHE: &str = "public, max-age=0, must-revalidate";
    let header = |name| {
        request
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let digest = sha256(&content);
    let tag = entity_tag(&digest);
    let worth_compressing = compressible(content_type, content.len());
    let mut response = if not_modified(header(IF_NONE_MATCH), &tag) {
        build(StatusCode::NOT_MODIFIED, content_type, CACHE, Body::empty())
    } else if worth_compressing {
        let accepted = Accepted::parse(header(ACCEPT_ENCODING));
        let (body, encoding) = compressed
            .encode(content, digest, accepted, precompressed)
            .await;
        let mut response = build(StatusCode::OK, content_type, CACHE, Body::from(body));
        if let Some(coding) = encoding.header_value() {
            response
                .headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        response
    } else {
        build(StatusCode::OK, content_type, CACHE, Body::from(content))
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(ETAG, value);
    }
    if worth_compressing {
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

fn is_html(name: &str) -> bool {
    content_type(name).starts_with("text/html")
}

/// An HTML document with the page's CSP. Its referrer policy is
/// `same-origin` rather than serve's usual `no-referrer`: under `no-referrer`
/// a browser sends `Origin: null` with a form's POST, which the Origin check
/// refuses, and the sign-in and sign-out forms are such POSTs. Nothing leaves
/// for other origins either way.
fn html_response(status: StatusCode, cache: &'static str, policy: &str, body: Body) -> Response {
    let mut response = build(status, "text/html; charset=utf-8", cache, body);
    response.headers_mut().insert(
        http::header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if let Ok(value) = HeaderValue::from_str(policy) {
        response
            .headers_mut()
            .insert(CONTENT_SECURITY_POLICY, value);
    }
    response
}

fn not_found() -> Response {
    build(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "no-store",
        Body::from("not found\n"),
    )
}

/// Why the sign-in page is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// No session: the first visit, or the session ended.
    Needed,
    /// A sign-in link whose code opens nothing: used, expired, replaced or unknown.
    Refused(CodeRefused),
    /// An old link with `?token=`: links carry a one-time code now.
    TokenInUrl,
    /// A wrong token came with the form.
    WrongToken,
    /// The page's button had serve print a new link in its terminal.
    LinkPrinted,
}

/// "5 minutes", "2 seconds": how long a link is valid, for the page.
fn duration_words(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (n, unit) = if secs >= 60 && secs % 60 == 0 {
        (secs / 60, "minute")
    } else {
        (secs.max(1), "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// The sign-in page: 401 on `/` without a valid session (200 once it had a
/// link printed): how to sign in, the button that has serve print a new
/// link, and the form that takes the token without putting it in a URL.
/// `ttl` is how long a link is valid.
pub fn sign_in_page(why: SignIn, ttl: Duration) -> Response {
    let ttl = duration_words(ttl);
    let again = "Have serve print a new one below, or enter the token.";
    let notice = match why {
        SignIn::Needed => String::new(),
        SignIn::Refused(CodeRefused::Spent) => format!(
            "This sign-in link has already been used: each link signs in one browser, \
             once. {again}"
        ),
        SignIn::Refused(CodeRefused::Expired) => format!(
            "This sign-in link has expired: a link is valid for {ttl} after serve \
             printed it. {again}"
        ),
        SignIn::Refused(CodeRefused::Replaced) => format!(
            "This sign-in link was replaced by newer ones: serve keeps only its \
             {MAX_LIVE_CODES} newest links. {again}"
        ),
        SignIn::Refused(CodeRefused::Unknown) => format!(
            "This sign-in link is not one this server knows: it may be from before \
             serve restarted, long expired, or mistyped. {again}"
        ),
        SignIn::TokenInUrl => "Addresses no longer carry the token: serve's sign-in link \
             holds a one-time code (<code>?code=…</code>), so this address signs nothing in. \
             If it held the real token, that token is now in this browser's history: \
             restart serve to change it."
            .to_string(),
        SignIn::WrongToken => "That token is not the one this server was started with.".into(),
        SignIn::LinkPrinted => format!(
            "serve printed a new sign-in link in its terminal: open it in this browser. \
             It is valid for {ttl} and signs in one browser, once."
        ),
    };
    let notice = if notice.is_empty() {
        notice
    } else {
        format!("<p class=notice>{notice}</p>")
    };
    let html = format!(
        "<!doctype html><html lang=en><meta charset=utf-8>\
         <meta name=viewport content=\"width=device-width, initial-scale=1\">\
         <title>deltascope: sign in</title><link rel=icon href=\"data:,\">\
         <style>body{{font:16px system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em}}\
         code{{background:#8882;padding:0 .2em}}.notice{{border-left:4px solid #c60;padding-left:.6em}}\
         input{{font:inherit;width:100%;box-sizing:border-box;margin:.3em 0}}</style>\
         <h1>deltascope</h1>{notice}\
         <p>This dashboard needs a sign-in link from the <code>deltascope serve</code> \
         command. It prints one when it starts, a line like</p>\
         <pre>deltascope: open http://127.0.0.1:8080/?code=…</pre>\
         <p>Each link signs in one browser, once, within {ttl}. For a new one:</p>\
         <form method=post action=/_deltascope/sign-in-link>\
         <button type=submit>Have serve print a new link in its terminal</button></form>\
         <p>Or enter the session token. A token serve made up is in the file it named \
         when it started (<code>deltascope: token for the sign-in form and \
         Authorization: Bearer is in …</code>):</p>\
         <form method=post action=/><label for=token>Token</label>\
         <input id=token name=token type=password autocomplete=off required autofocus>\
         <button type=submit>Sign in</button></form>\
         <p>If you have neither, restart <code>deltascope serve</code> (or pass \
         <code>--token-file</code> to choose the token).</p></html>"
    );
    let policy = page_policy(&html);
    let status = match why {
        SignIn::LinkPrinted => StatusCode::OK,
        _ => StatusCode::UNAUTHORIZED,
    };
    html_response(status, "no-store", &policy, Body::from(html))
}

fn build(
    status: StatusCode,
    content_type: &'static str,
    cache: &'static str,
    body: Body,
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static(cache));
    response
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn content_types() {
        assert_eq!(super::content_type("app_bg.wasm"), "application/wasm");
        assert!(super::content_type("app.js").starts_with("text/javascript"));
        assert!(super::content_type("style.CSS").starts_with("text/css"));
        assert!(super::content_type("index.html").starts_with("text/html"));
    }

    #[test]
    fn link_lifetimes_in_words() {
        use std::time::Duration;
        assert_eq!(super::duration_words(Duration::from_secs(300)), "5 minutes");
        assert_eq!(super::duration_words(Duration::from_secs(60)), "1 minute");
        assert_eq!(super::duration_words(Duration::from_secs(90)), "90 seconds");
        assert_eq!(
            super::duration_words(Duration::from_millis(1500)),
            "1 second"
        );
    }
}
