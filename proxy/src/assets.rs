//! The page's files, from `--dist` (trunk's output).
//!
//! `/` is `index.html`. There is no SPA fallback: the page uses hash routes, so
//! a missing file is a plain 404. Hidden files (`.something`) are never served.
//! Paths arrive normalised (see [`crate::paths`]), so they cannot leave `dist`.
//!
//! Auth decision: `index.html` needs a session (without one the sign-in page
//! below is served instead), the other files (wasm, js, css, icons) are served
//! without auth because they hold no cluster data and nothing secret.

use std::path::Path;

use axum::body::Body;
use axum::response::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::StatusCode;

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

/// Serves `segments` (decoded, normalised) from `dist`; `[]` is `index.html`.
pub async fn serve_file(dist: &Path, segments: &[String]) -> Response {
    if segments.iter().any(|s| s.starts_with('.')) {
        return not_found();
    }
    let mut path = dist.to_path_buf();
    let name = if segments.is_empty() {
        path.push("index.html");
        "index.html"
    } else {
        segments.iter().for_each(|s| path.push(s));
        segments.last().map(String::as_str).unwrap_or("")
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let cache = if name.ends_with(".html") {
                "no-cache"
            } else {
                "public, max-age=0, must-revalidate"
            };
            build(StatusCode::OK, content_type(name), cache, Body::from(bytes))
        }
        Err(_) if segments.is_empty() => build(
            StatusCode::NOT_FOUND,
            "text/html; charset=utf-8",
            "no-store",
            Body::from(format!(
                "<!doctype html><meta charset=utf-8><title>deltascope</title>\
                 <p>The page is not built: no index.html in <code>{}</code>. \
                 Run <code>cargo xtask demo</code>, or <code>trunk build</code> and pass \
                 <code>--dist</code>.</p>",
                html_escape(&dist.display().to_string())
            )),
        ),
        Err(_) => not_found(),
    }
}

fn not_found() -> Response {
    build(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "no-store",
        Body::from("not found\n"),
    )
}

/// The page shown on `/` without a valid session.
pub fn sign_in_page() -> Response {
    build(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        "no-store",
        Body::from(
            "<!doctype html><meta charset=utf-8><title>deltascope: sign in</title>\
             <style>body{font:16px system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em}\
             code{background:#eee;padding:0 .2em}</style>\
             <h1>deltascope</h1><p>This dashboard needs the session link printed by the \
             <code>deltascope serve</code> command when it started, a line like</p>\
             <pre>deltascope: open http://127.0.0.1:8080/?token=…</pre>\
             <p>Open that exact URL in this browser. If you no longer have it, restart \
             <code>deltascope serve</code> (or pass <code>--token</code> to choose one).</p>",
        ),
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
