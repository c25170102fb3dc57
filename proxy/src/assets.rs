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

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG,
    IF_NONE_MATCH, VARY,
};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::compress::{compressible, entity_tag, not_modified, sha256, Accepted, Compressed};
use crate::csp::page_policy;

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
    /// The sign-in link was opened again after it had opened a session.
    LinkUsed,
    /// A wrong token came with the link or the form.
    WrongToken,
}

/// The page shown on `/` without a valid session (401): how to sign in, and
/// the form that takes the token without putting it in a URL.
pub fn sign_in_page(why: SignIn) -> Response {
    let notice = match why {
        SignIn::Needed => "",
        SignIn::LinkUsed => {
            "<p class=notice>This sign-in link has already opened a session, in another \
             browser or an earlier visit, and works only once. Enter the token from it below \
             to sign in here.</p>"
        }
        SignIn::WrongToken => {
            "<p class=notice>That token is not the one this server was started with.</p>"
        }
    };
    let html = format!(
        "<!doctype html><html lang=en><meta charset=utf-8>\
         <meta name=viewport content=\"width=device-width, initial-scale=1\">\
         <title>deltascope: sign in</title><link rel=icon href=\"data:,\">\
         <style>body{{font:16px system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em}}\
         code{{background:#8882;padding:0 .2em}}.notice{{border-left:4px solid #c60;padding-left:.6em}}\
         input{{font:inherit;width:100%;box-sizing:border-box;margin:.3em 0}}</style>\
         <h1>deltascope</h1>{notice}\
         <p>This dashboard needs the session link printed by the \
         <code>deltascope serve</code> command when it started, a line like</p>\
         <pre>deltascope: open http://127.0.0.1:8080/?token=…</pre>\
         <p>The link signs in one browser, once. To sign in another browser (or again \
         after signing out), enter the token, the part after <code>?token=</code>:</p>\
         <form method=post action=/><label for=token>Token</label>\
         <input id=token name=token type=password autocomplete=off required autofocus>\
         <button type=submit>Sign in</button></form>\
         <p>If you no longer have it, restart <code>deltascope serve</code> (or pass \
         <code>--token-file</code> to choose one).</p></html>"
    );
    let policy = page_policy(&html);
    html_response(
        StatusCode::UNAUTHORIZED,
        "no-store",
        &policy,
        Body::from(html),
    )
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
}
