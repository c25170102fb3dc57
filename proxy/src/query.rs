//! What a request's query string asks the apiserver for, decided once.
//!
//! serve forwards the query byte for byte, so whether a request is a watch
//! (a stream that lives for minutes, holds an upstream connection and must be
//! redacted event by event) has to be decided exactly as the server behind it
//! will decide it. Deciding it on a spelling (`watch=1`, `watch=true`) let
//! every other spelling through as an uncounted stream: `?watch`, `?watch=`,
//! `?w%61tch=1`, `?watch=%31`, `?watch=yes` all start a watch on an apiserver.
//!
//! The apiserver reads its boolean query parameters with Go's `url.ParseQuery`
//! (pairs split on `&`, names and values percent-decoded, `+` as a space) and
//! apimachinery's `Convert_Slice_string_To_bool`: a parameter that is present
//! is true unless its value is `0` or, ignoring case, `false` — an empty
//! value, `yes` or `on` included. Go takes the *first* value of a repeated
//! parameter; the simulated cluster (serde's `Query`) takes the last, and Go
//! drops pairs it cannot decode where a lenient decoder keeps them. So that no
//! upstream can see a stream where serve saw none, the decision here is the
//! union: a request is a watch when **any** `watch` pair, decoded leniently,
//! has a value other than `0`/`false`. Erring that way only costs a watch slot
//! to a query no real client sends.
//!
//! [`is_watch_query`] is the one place that decides; the forwarder uses it for
//! the `--max-watches` count and for choosing event-by-event redaction, and the
//! channel's streams go through the forwarder.

use std::borrow::Cow;

use percent_encoding::percent_decode;

/// Whether an apiserver (or the simulated cluster) would serve `query` as a
/// watch: some `watch` parameter, after percent-decoding name and value, is
/// present with a value other than `0` or `false` (any case).
pub fn is_watch_query(query: &str) -> bool {
    flag_set(query, "watch")
}

/// Whether `name` is set to true in `query` as the apiserver reads booleans
/// (see the module doc): present with any value but `0` / `false`, in any of
/// its occurrences, in any percent-encoding.
pub fn flag_set(query: &str, name: &str) -> bool {
    pairs(query).any(|(key, value)| key == name.as_bytes() && truthy(&value))
}

/// Decoded `(name, value)` pairs of a query, as Go's `url.ParseQuery` splits
/// them (on `&` only; a pair without `=` has an empty value; empty pairs are
/// skipped), but decoding leniently: a malformed escape is kept as it is.
pub fn pairs(query: &str) -> impl Iterator<Item = (Cow<'_, [u8]>, Cow<'_, [u8]>)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
}

/// `+` as a space, then `%XX` escapes; invalid escapes stay as they are.
fn decode(component: &str) -> Cow<'_, [u8]> {
    if component.contains('+') {
        let spaced = component.replace('+', " ");
        Cow::Owned(percent_decode(spaced.as_bytes()).collect())
    } else {
        percent_decode(component.as_bytes()).into()
    }
}

/// apimachinery's `Convert_Slice_string_To_bool` for one value.
fn truthy(value: &[u8]) -> bool {
    !(value == b"0" || value.eq_ignore_ascii_case(b"false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_an_apiserver_watches_is_a_watch() {
        for query in [
            "watch=1",
            "watch=true",
            "watch",
            "watch=",
            "w%61tch=1",
            "%77atch=true",
            "%77%61%74%63%68",
            "watch=%31",
            "watch=tru%65",
            "watch=yes",
            "watch=on",
            "watch=TRUE",
            "watch=t",
            "watch=2",
            "watch=+",
            "watch=%zz",
            "watch=%FF",
            "labelSelector=a%3Db&watch&limit=5",
            "watch=0&watch=1",
            "watch=1&watch=0",
            "watch=1;x=2",
            "&&watch&&",
        ] {
            assert!(is_watch_query(query), "{query:?} is a watch");
        }
    }

    #[test]
    fn what_is_not_a_watch() {
        for query in [
            "",
            "watch=0",
            "watch=false",
            "watch=FALSE",
            "watch=fAlSe",
            "watch=%30",
            "watch=f%61lse",
            "nowatch=true",
            "watchx=1",
            "watch%20=1",
            "watch+=1",
            "x=watch",
            "labelSelector=watch%3D1",
            "watch=0&watch=false",
            "w%zzatch=1",
        ] {
            assert!(!is_watch_query(query), "{query:?} is not a watch");
        }
    }

    #[test]
    fn other_flags_read_the_same_way() {
        assert!(flag_set("follow", "follow"));
        assert!(flag_set("f%6Fllow=yes", "follow"));
        assert!(!flag_set("follow=false", "follow"));
        assert!(!flag_set("watch=1", "follow"));
    }
}
