//! Passing over JSON text without parsing it: where a string or a whole
//! value ends. Only quotes, escapes and brackets are followed; whoever
//! uses the bytes between checks them (parses them, or knows them to be
//! JSON). The page reads a past state's List item by item with it
//! (`src/api/history_state.rs`), and the history store finds where a patch
//! goes in a full's text (`history/src/splice.rs`).

/// Where the JSON string whose `"` is at `start` ends (after its closing
/// quote); `None` when there is no string there or it does not end.
pub fn string_end(text: &[u8], start: usize) -> Option<usize> {
    if text.get(start) != Some(&b'"') {
        return None;
    }
    let mut at = start + 1;
    loop {
        // Most of an object's bytes are in its strings: found with memchr's
        // vector search, not a byte at a time.
        at += memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        if text[at] == b'"' {
            return Some(at + 1);
        }
        at += 2; // an escape and the byte it escapes
    }
}

/// Where the JSON value starting at `start` ends; `None` when nothing is
/// there or it does not end.
pub fn value_end(text: &[u8], start: usize) -> Option<usize> {
    match *text.get(start)? {
        b'"' => string_end(text, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            while let Some(&byte) = text.get(at) {
                match byte {
                    b'"' => {
                        at = string_end(text, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            None
        }
        _ => {
            let length = text[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                .unwrap_or(text.len() - start);
            (length > 0).then_some(start + length)
        }
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
pub fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_end_where_they_end_and_unfinished_ones_nowhere() {
        let text = br#"{"a": "x\"}", "b": [1, {"c": null}], "d": 12}"#;
        assert_eq!(value_end(text, 0), Some(text.len()));
        assert_eq!(string_end(text, 6), Some(12));
        assert_eq!(value_end(text, 19), Some(35));
        assert_eq!(value_end(text, 42), Some(44));
        assert_eq!(skip_space(b"  \n x", 0), 4);
        assert_eq!(value_end(b"[1, 2", 0), None);
        assert_eq!(value_end(b"]", 0), None);
        assert_eq!(string_end(b"\"abc", 0), None);
        assert_eq!(value_end(b"", 0), None);
    }
}
