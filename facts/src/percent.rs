//! Percent-encoding of query values (label and field selectors, continue
//! tokens, hash-route parameters) with the `percent-encoding` crate: every
//! byte but RFC 3986's unreserved characters is escaped, so `a=b,c!=d` or
//! `x in (a, b)` survive as one value. Decoding also reads `+` as a space,
//! as browsers write form values.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but `A–Z a–z 0–9 - . _ ~`.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `app=web,tier!=db` → `app%3Dweb%2Ctier%21%3Ddb`.
pub fn encode_query_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// Decodes `%XX` and `+` (as space); `None` on a malformed escape or
/// invalid UTF-8.
pub fn decode_query_value(value: &str) -> Option<String> {
    String::from_utf8(decode_query_bytes(value)?).ok()
}

/// Decodes `%XX` and `+` (as space) into bytes, whatever they spell (Go's
/// `url.QueryUnescape`); `None` on a malformed escape (`%zz`, a `%` too near
/// the end).
pub fn decode_query_bytes(value: &str) -> Option<Vec<u8>> {
    let bytes = value.as_bytes();
    for (at, byte) in bytes.iter().enumerate() {
        if *byte == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
        }
    }
    let spaced = value.replace('+', " ");
    Some(percent_decode_str(&spaced).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_survive_as_one_value() {
        assert_eq!(
            encode_query_value("app=web,tier!=db"),
            "app%3Dweb%2Ctier%21%3Ddb"
        );
        assert_eq!(encode_query_value("x in (a, b)"), "x%20in%20%28a%2C%20b%29");
        assert_eq!(encode_query_value("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(encode_query_value("ü"), "%C3%BC");
    }

    #[test]
    fn decoding_inverts_encoding() {
        for text in ["app=web", "x in (a, b)", "ü/ä?&#", ""] {
            assert_eq!(
                decode_query_value(&encode_query_value(text)).as_deref(),
                Some(text)
            );
        }
        assert_eq!(decode_query_value("a+b").as_deref(), Some("a b"));
    }

    #[test]
    fn malformed_escapes_are_refused() {
        assert_eq!(decode_query_value("%"), None);
        assert_eq!(decode_query_value("%4"), None);
        assert_eq!(decode_query_value("%zz"), None);
        assert_eq!(decode_query_value("%ff"), None);
    }
}
