//! Query strings read as the apiserver reads them.
//!
//! The apiserver takes `req.URL.Query()` — Go's `url.ParseQuery` with its
//! error dropped — and converts it into `ListOptions` (or `PodLogOptions`)
//! with apimachinery's generated `url.Values` conversions, which read every
//! parameter's *first* value (`runtime.Convert_Slice_string_To_string`,
//! `…_To_int64`, `…_To_bool`). Booleans follow
//! `runtime.Convert_Slice_string_To_bool`: a parameter that is absent is
//! false; one that is present is true unless its first value is `0` or,
//! ignoring case as Go's `strings.EqualFold` does, `false` — so `watch`,
//! `watch=`, `watch=yes`, `watch=on`, `watch=TRUE` and `watch=2` all watch,
//! and `watch=0&watch=1` does not. A boolean is never refused.
//!
//! `url.ParseQuery` splits on `&` only; a pair holding a `;` is dropped
//! (Go 1.17 on); the name and the value are percent-decoded with `+` as a
//! space, and a pair with a malformed escape (`%zz`, a `%` too near the end)
//! is dropped; a pair without `=` has an empty value. Since Go 1.24.12 and
//! 1.25.6 a query of more than 10,000 pairs (counted by its `&`s) is refused
//! whole, read as no parameters at all.

use std::collections::HashMap;

use deltascope_facts::percent::decode_query_bytes;

/// Pairs past which Go's `url.ParseQuery` reads no parameters at all.
const MAX_PAIRS: usize = 10_000;

/// The parameters of a raw query string (without `?`): for each name, its
/// first value, as the apiserver's conversions read them.
pub fn parse(raw: Option<&str>) -> HashMap<String, String> {
    let mut params = HashMap::new();
    let Some(raw) = raw else {
        return params;
    };
    if raw.bytes().filter(|&b| b == b'&').count() + 1 > MAX_PAIRS {
        return params;
    }
    for pair in raw.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(name), Some(value)) = (decode(name), decode(value)) else {
            continue;
        };
        params.entry(name).or_insert(value);
    }
    params
}

/// `runtime.Convert_Slice_string_To_bool` on a parameter's first value:
/// `None` when absent, else whether it is anything but `0` and `false`.
pub fn flag(params: &HashMap<String, String>, name: &str) -> Option<bool> {
    params.get(name).map(|value| !is_false(value))
}

/// `0`, or `false` under Go's `strings.EqualFold` (simple case folding:
/// `FALSE`, `False`, and `falſe` with the long s, which folds to `s`).
fn is_false(value: &str) -> bool {
    if value == "0" {
        return true;
    }
    let mut chars = value.chars();
    "false".chars().all(|want| {
        chars
            .next()
            .is_some_and(|c| c.to_ascii_lowercase() == want || (want == 's' && c == '\u{17F}'))
    }) && chars.next().is_none()
}

/// Go's `url.QueryUnescape`; bytes that are not UTF-8 are replaced (no name
/// or flag value the apiserver reads is spelled with them, and a flag is true
/// whatever they are).
fn decode(text: &str) -> Option<String> {
    decode_query_bytes(text).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(raw: &str) -> bool {
        flag(&parse(Some(raw)), "watch").unwrap_or(false)
    }

    #[test]
    fn a_present_flag_is_true_unless_its_first_value_is_0_or_false() {
        for raw in [
            "watch=1",
            "watch=true",
            "watch",
            "watch=",
            "w%61tch=1",
            "%77atch=true",
            "watch=%31",
            "watch=yes",
            "watch=TRUE",
            "watch=on",
            "watch=no",
            "watch=2",
            "watch=+",
            "watch=%FF",
            "watch=1&watch=0",
            "watch&watch=false",
            "limit=5&watch",
        ] {
            assert!(watch(raw), "{raw:?} watches");
        }
        for raw in [
            "",
            "watch=0",
            "watch=false",
            "watch=FALSE",
            "watch=fAlSe",
            "watch=fal%C5%BFe",
            "watch=%30",
            "watch=0&watch=1",
            "watch=false&watch=true",
            "watch=%zz",
            "watch=%1",
            "w%zzatch=1",
            "watch=1;x=2",
            "watch%20=1",
            "watch+=1",
            "nowatch=1",
        ] {
            assert!(!watch(raw), "{raw:?} does not watch");
        }
    }

    #[test]
    fn every_parameter_reads_its_first_value() {
        let q = parse(Some("limit=5&limit=7&labelSelector=a%3Db+c&x=%zz&x=ok"));
        assert_eq!(q.get("limit").map(String::as_str), Some("5"));
        assert_eq!(q.get("labelSelector").map(String::as_str), Some("a=b c"));
        // the pair with a malformed escape is dropped, not the name
        assert_eq!(q.get("x").map(String::as_str), Some("ok"));
        assert!(parse(None).is_empty());
    }

    #[test]
    fn more_than_ten_thousand_pairs_are_no_parameters() {
        let at_limit = format!("watch=1{}", "&a=1".repeat(MAX_PAIRS - 1));
        assert!(watch(&at_limit));
        let over = format!("watch=1{}", "&a=1".repeat(MAX_PAIRS));
        assert!(parse(Some(&over)).is_empty());
    }
}
