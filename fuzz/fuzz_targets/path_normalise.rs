//! Fuzz target: a request target `PATH?QUERY`, as serve decides on it.
//!
//! The path: the normaliser never panics; a normalised path starts with `/`,
//! has no empty, `.` or `..` segment, normalises to itself (idempotent), and
//! classifying it never panics.
//!
//! The query: serve's one "is this a watch" decision (`query::is_watch_query`,
//! and `forward::is_stream` with the classified path) never panics, and no
//! upstream can stream where serve saw no stream. Two readings of the query,
//! written here independently, must each imply serve's: an apiserver's (Go's
//! `url.ParseQuery`, the *first* `watch` value, true unless `0`/`false`) and
//! the simulated cluster's (lenient decoding, the *last* value, true for ``,
//! `1`, `true`, `True`). The decision also holds under re-encoding every
//! byte of every name and value, under adding unrelated pairs, and adding any
//! `watch` pair that is not `0`/`false` makes any query a watch; the legacy
//! `/watch/` path prefix is a stream whatever the query says.
#![no_main]

use deltascope_proxy::forward::is_stream;
use deltascope_proxy::paths::{classify, normalise, NormalPath, Route};
use deltascope_proxy::query::is_watch_query;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let (path, query) = match raw.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (raw, None),
    };
    let normal = check_path(path);
    let Some(query) = query else {
        return;
    };
    check_query(query);
    if let Some(Route::Api(api)) = normal.map(|p| classify(&p, false)) {
        let stream = is_stream(&api, Some(query));
        assert!(!api.watch_prefix || stream, "{raw:?}: /watch/ is a stream");
        assert!(
            !is_watch_query(query) || stream,
            "{raw:?}: a watch query is a stream"
        );
    }
});

fn check_path(raw: &str) -> Option<NormalPath> {
    let p = normalise(raw).ok()?;
    let s = p.as_str();
    assert!(s.starts_with('/'), "{raw:?} → {s:?}");
    assert!(
        p.segments()
            .iter()
            .all(|seg| !seg.is_empty() && seg != "." && seg != ".."),
        "{raw:?} → segments {:?}",
        p.segments()
    );
    assert!(
        !s.split('/').skip(1).any(|seg| seg == ".." || seg == "."),
        "{raw:?} → {s:?} keeps a dot segment"
    );
    match normalise(s) {
        Ok(again) => assert_eq!(again, p, "not idempotent: {raw:?} → {s:?} → {again:?}"),
        Err(e) => panic!("{raw:?} → {s:?}, which does not normalise again: {e}"),
    }
    let _ = classify(&p, false);
    let _ = classify(&p, true);
    Some(p)
}

fn check_query(query: &str) {
    let watch = is_watch_query(query);
    if apiserver_watches(query) {
        assert!(
            watch,
            "{query:?}: an apiserver watches, serve did not count it"
        );
    }
    if sim_watches(query) {
        assert!(
            watch,
            "{query:?}: the simulated cluster watches, serve did not count it"
        );
    }
    assert_eq!(
        is_watch_query(&reencoded(query)),
        watch,
        "{query:?}: the decision changed when re-encoded as {:?}",
        reencoded(query)
    );
    assert_eq!(is_watch_query(&format!("{query}&limit=500")), watch);
    assert_eq!(
        is_watch_query(&format!("labelSelector=a%3Db&{query}")),
        watch
    );
    assert!(
        is_watch_query(&format!("{query}&w%61tch")),
        "{query:?} + watch"
    );
    assert!(is_watch_query(&format!("watch=0&{query}&watch=1")));
}

/// An apiserver's reading: Go's `url.ParseQuery` drops pairs with `;` or a
/// malformed escape and turns `+` into a space; apimachinery's bool
/// conversion takes the first value.
fn apiserver_watches(query: &str) -> bool {
    fn unescape(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut bytes = s.bytes();
        while let Some(b) = bytes.next() {
            match b {
                b'%' => {
                    let hi = (bytes.next()? as char).to_digit(16)?;
                    let lo = (bytes.next()? as char).to_digit(16)?;
                    out.push((hi * 16 + lo) as u8);
                }
                b'+' => out.push(b' '),
                b => out.push(b),
            }
        }
        Some(out)
    }
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (unescape(key), unescape(value)) else {
            continue;
        };
        if key == b"watch" {
            return !(value == b"0" || value.eq_ignore_ascii_case(b"false"));
        }
    }
    false
}

/// `+` as a space, then `%XX` escapes; a malformed escape stays as it is
/// (how `application/x-www-form-urlencoded` decoders read a component).
fn lenient_decode(s: &str) -> Vec<u8> {
    let spaced = s.replace('+', " ");
    let bytes = spaced.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match escape {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

/// The simulated cluster's reading: lenient decoding and lossy UTF-8 into a
/// map, so the last value wins; it streams for ``, `1`, `true` and `True` only.
fn sim_watches(query: &str) -> bool {
    let decode = |s: &str| String::from_utf8_lossy(&lenient_decode(s)).into_owned();
    let last = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .filter(|(key, _)| decode(key) == "watch")
        .map(|(_, value)| decode(value))
        .next_back();
    matches!(last.as_deref(), Some("" | "1" | "true" | "True"))
}

/// `query` with every byte of every name and value percent-encoded, after
/// decoding it leniently.
fn reencoded(query: &str) -> String {
    let encode = |component: &str| -> String {
        lenient_decode(component)
            .iter()
            .map(|b| format!("%{b:02X}"))
            .collect()
    };
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => format!("{}={}", encode(key), encode(value)),
            None => encode(pair),
        })
        .collect::<Vec<_>>()
        .join("&")
}
