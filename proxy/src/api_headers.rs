//! Which headers cross serve on forwarded API requests, in each direction, and
//! what an API response may look like when it reaches the browser.
//!
//! Going up: hop-by-hop headers, our own credentials (`Cookie`,
//! `Authorization`), `Origin`/`Referer` and `Impersonate-*` never go upstream;
//! for Secrets, only JSON and no compression is asked for, so the redactor has
//! something to parse.
//!
//! Coming back: hop-by-hop, CORS and cookie headers are dropped, and every
//! response gets `Cache-Control: no-store` (cluster data, Secrets included,
//! must not be kept in a browser cache). The dashboard's origin serves the
//! page, so an API response must never be something a browser renders: only
//! the JSON family (Kubernetes objects, lists, Tables, Status, watch streams)
//! is answered inline. Anything else — a pod's `text/plain` log, protobuf for
//! kubectl, or an aggregated API answering `text/html` with a script — is
//! sent as an attachment, and types other than a few inert ones are relabelled
//! `application/octet-stream` ([`confine_content_type`]).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// Non-JSON types passed on as they are (as attachments): none of them is
/// rendered or run by a browser.
const INERT_TYPES: [&str; 6] = [
    "text/plain",
    "application/octet-stream",
    "application/vnd.kubernetes.protobuf",
    "application/yaml",
    "application/x-yaml",
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
];

fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(header::TRANSFER_ENCODING);
}

/// The headers sent upstream for a request that came with `incoming`.
pub fn request_headers(incoming: &HeaderMap, redact: bool) -> HeaderMap {
    let mut headers = incoming.clone();
    remove_hop_by_hop(&mut headers);
    for name in [
        header::HOST,
        header::COOKIE,
        header::AUTHORIZATION,
        header::ORIGIN,
        header::REFERER,
    ] {
        headers.remove(name);
    }
    let impersonation: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in impersonation {
        headers.remove(name);
    }
    if redact {
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        let accept = json_only_accept(headers.get(header::ACCEPT));
        headers.insert(header::ACCEPT, accept);
    }
    headers
}

/// Keeps only JSON media ranges (with their parameters, e.g. `as=Table`), so a
/// Secret response always comes back in a form the redactor can read.
pub fn json_only_accept(accept: Option<&HeaderValue>) -> HeaderValue {
    let kept: Vec<String> = accept
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(',')
        .filter_map(|range| {
            let range = range.trim();
            let (media, params) = match range.split_once(';') {
                Some((media, params)) => (media.trim(), Some(params)),
                None => (range, None),
            };
            match media.to_ascii_lowercase().as_str() {
                "application/json" | "*/*" | "application/*" => Some(match params {
                    Some(params) => format!("application/json;{params}"),
                    None => "application/json".to_owned(),
                }),
                _ => None,
            }
        })
        .collect();
    if kept.is_empty() {
        return HeaderValue::from_static("application/json");
    }
    HeaderValue::from_str(&kept.join(", "))
        .unwrap_or_else(|_| HeaderValue::from_static("application/json"))
}

/// Drops what must not come back from upstream and marks the response
/// uncacheable.
pub fn strip_response_headers(headers: &mut HeaderMap) {
    remove_hop_by_hop(headers);
    headers.remove(header::SET_COOKIE);
    let cors: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for name in cors {
        headers.remove(name);
    }
    headers.remove(header::EXPIRES);
    headers.remove(header::PRAGMA);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// The media type of a `Content-Type` value, lowercase, without parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or("").trim();
    Some(media.to_ascii_lowercase())
}

/// `application/json` or a `+json` type, with any parameters.
fn is_json(media: &str) -> bool {
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// Makes sure a browser never renders an API response: JSON passes as it is;
/// anything else becomes an attachment, relabelled `application/octet-stream`
/// unless it is one of `INERT_TYPES`. Returns whether it changed anything.
pub fn confine_content_type(headers: &mut HeaderMap, has_body: bool) -> bool {
    let media = media_type(headers);
    if media.as_deref().is_some_and(is_json) {
        return false;
    }
    if media.is_none() && !has_body {
        return false;
    }
    if !media.as_deref().is_some_and(|m| INERT_TYPES.contains(&m)) {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
    }
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment"),
    );
    true
}

/// A Secret response that is not uncompressed JSON, so it cannot be
/// redacted (the forwarder refuses to pass it on).
#[derive(Debug, thiserror::Error)]
#[error(
    "the Kubernetes API answered a Secret request with {content_type:?} (encoding \
     {encoding:?}), which deltascope cannot redact; refusing to pass it through \
     (--show-secrets disables redaction)"
)]
pub struct NotRedactable {
    pub content_type: String,
    pub encoding: String,
}

/// A Secret response can be redacted only if it is uncompressed JSON.
pub fn check_redactable(headers: &HeaderMap) -> Result<(), NotRedactable> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity");
    let json = content_type
        .to_ascii_lowercase()
        .starts_with("application/json");
    if json && encoding.eq_ignore_ascii_case("identity") {
        return Ok(());
    }
    Err(NotRedactable {
        content_type: content_type.to_owned(),
        encoding: encoding.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_rewrite() {
        let v = |s: &'static str| json_only_accept(Some(&HeaderValue::from_static(s)));
        assert_eq!(
            v("application/json;as=Table;v=v1;g=meta.k8s.io, application/json"),
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
        );
        assert_eq!(v("application/vnd.kubernetes.protobuf"), "application/json");
        assert_eq!(v("application/yaml, */*"), "application/json");
    }

    fn confined(content_type: Option<&'static str>) -> (Option<String>, Option<String>) {
        let mut headers = HeaderMap::new();
        if let Some(t) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(t));
        }
        confine_content_type(&mut headers, true);
        let get = |name| {
            headers
                .get(name)
                .map(|v: &HeaderValue| v.to_str().unwrap().to_owned())
        };
        (get(header::CONTENT_TYPE), get(header::CONTENT_DISPOSITION))
    }

    #[test]
    fn only_json_is_inline() {
        for json in [
            "application/json",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert_eq!(confined(Some(json)).1, None, "{json}");
        }
        assert_eq!(
            confined(Some("text/plain; charset=utf-8")),
            (
                Some("text/plain; charset=utf-8".into()),
                Some("attachment".into())
            )
        );
        for rendered in [
            "text/html",
            "text/html; charset=utf-8",
            "image/svg+xml",
            "application/xhtml+xml",
            "text/javascript",
            "application/jsonx",
            "nonsense",
        ] {
            assert_eq!(
                confined(Some(rendered)),
                (
                    Some("application/octet-stream".into()),
                    Some("attachment".into())
                ),
                "{rendered}"
            );
        }
        assert_eq!(
            confined(None),
            (
                Some("application/octet-stream".into()),
                Some("attachment".into())
            )
        );
    }
}
