//! [`JsonValue::parse`]: JSON text straight into the compact form (the
//! `json` module's tape), for the informer's hot path — every watch line,
//! and so every object of a streamed list.
//!
//! Why not `serde_json` here, as elsewhere: driven through serde's visitor
//! (one call per value, a `MapAccess` per object, UTF-8 checked string by
//! string), parsing is most of the page's time feeding the informer, more
//! than the browser's own `JSON.parse` of the same bytes. This reader
//! checks the text's UTF-8 once and writes each value's tag as it meets it.
//!
//! It accepts exactly what `serde_json::from_slice` accepts, and writes the
//! same tape (the differential tests below hold it to that): the same
//! errors for control characters in strings, lone surrogates, trailing
//! characters and nesting over serde_json's limit; integers as `u64`/`i64`
//! and everything else (fractions, exponents, integers too large, `-0`)
//! read by `serde_json` itself, so floats round the same way.

use std::cell::RefCell;
use std::fmt;

use super::shared::shared_copy;
use super::tape::{tag, JsonRef, JsonValue};
use super::write::{
    close_container, dedup_members, open_container, write_f64, write_i64, write_str, write_u64,
    write_utf8,
};

/// Containers nested deeper than this are refused, as `serde_json` does.
const MAX_DEPTH: usize = 127;

/// Why a text is not JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset in the text.
    pub at: usize,
    pub what: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for ParseError {}

impl JsonValue {
    /// Parses one JSON text (whitespace around it allowed, nothing else).
    pub fn parse(text: &[u8]) -> Result<JsonValue, ParseError> {
        JsonValue::build(|out| write_text(text, out))
    }

    /// Parses one JSON text and hands it to `read`, without keeping the
    /// document: for a watch line, whose object is all that is kept
    /// (copied out with [`ParsedText::copy_out`]).
    pub fn parse_then<R>(
        text: &[u8],
        read: impl FnOnce(ParsedText<'_>) -> R,
    ) -> Result<R, ParseError> {
        LINE.with(|line| match line.try_borrow_mut() {
            Ok(mut tape) => {
                tape.clear();
                write_text(text, &mut tape)?;
                let result = read(ParsedText { tape: &tape });
                if tape.capacity() > 1 << 20 {
                    // one huge line should not pin its size for the thread's life
                    *tape = Vec::new();
                }
                Ok(result)
            }
            Err(_) => {
                let mut tape = Vec::new();
                write_text(text, &mut tape)?;
                Ok(read(ParsedText { tape: &tape }))
            }
        })
    }
}

/// A document [`JsonValue::parse_then`] parsed from text and does not keep.
#[derive(Clone, Copy)]
pub struct ParsedText<'a> {
    /// Written from text: it names no shared subtree.
    tape: &'a [u8],
}

impl<'a> ParsedText<'a> {
    pub fn root(self) -> JsonRef<'a> {
        JsonRef { bytes: self.tape }
    }

    /// A document of its own holding a copy of `part`, its repeating
    /// subtrees shared ([`JsonValue::with_shared_subtrees`]) in the same
    /// copy. Its bytes are copied as they are when `part` is a value of
    /// this document (which names no shared subtree); any other value is
    /// copied with [`JsonRef::to_owned_value`].
    pub fn copy_out(self, part: JsonRef<'_>) -> JsonValue {
        let inside = self.tape.as_ptr_range();
        let range = part.bytes.as_ptr_range();
        if inside.start <= range.start && range.end <= inside.end {
            shared_copy(part).unwrap_or_else(|| JsonValue::plain(part.bytes.into()))
        } else {
            part.to_owned_value()
        }
    }
}

thread_local! {
    /// Where [`JsonValue::parse_then`] writes a line's document; kept
    /// between lines so reading one allocates nothing for it.
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Writes the document of one JSON text to `out`.
fn write_text(text: &[u8], out: &mut Vec<u8>) -> Result<(), ParseError> {
    // Quotes are ASCII, so every string inside valid UTF-8 is valid too.
    if let Err(error) = std::str::from_utf8(text) {
        return Err(ParseError {
            at: error.valid_up_to(),
            what: "invalid UTF-8",
        });
    }
    let mut reader = Reader { text, at: 0, out };
    reader.value(0)?;
    reader.skip_space();
    match reader.at < text.len() {
        true => Err(reader.error("trailing characters")),
        false => Ok(()),
    }
}

/// An object's encoded keys so far, as bits of a 256-bit filter: a key
/// whose bit is already set may be a repeat, and only then are the keys
/// compared ([`dedup_members`]). Comparing every object's keys pairwise
/// would be a tenth of the parse.
#[derive(Default)]
struct KeysSeen {
    bits: [u64; 4],
    maybe_repeated: bool,
}

impl KeysSeen {
    fn note(&mut self, encoded: &[u8]) {
        // a few of its bytes and its length (no copies: this runs per key)
        let len = encoded.len();
        let byte = |i: usize| u64::from(encoded.get(i).copied().unwrap_or(0));
        let sample = byte(0)
            | byte(1) << 8
            | byte(2) << 16
            | byte(len / 2) << 24
            | byte(len.wrapping_sub(2)) << 32
            | byte(len.wrapping_sub(1)) << 40
            | (len as u64) << 48;
        let hash = sample.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let bit = (hash >> 56) as usize;
        let (word, mask) = (bit >> 6, 1u64 << (bit & 63));
        self.maybe_repeated |= self.bits[word] & mask != 0;
        self.bits[word] |= mask;
    }
}

struct Reader<'t, 'o> {
    text: &'t [u8],
    at: usize,
    out: &'o mut Vec<u8>,
}

impl<'t> Reader<'t, '_> {
    fn error(&self, what: &'static str) -> ParseError {
        ParseError { at: self.at, what }
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Result<u8, ParseError> {
        self.skip_space();
        self.text
            .get(self.at)
            .copied()
            .ok_or_else(|| self.error("EOF while parsing a value"))
    }

    fn value(&mut self, depth: usize) -> Result<(), ParseError> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                self.at += 1;
                self.string()
            }
            b't' => self.literal(b"true", tag::TRUE),
            b'f' => self.literal(b"false", tag::FALSE),
            b'n' => self.literal(b"null", tag::NULL),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.error("expected value")),
        }
    }

    fn literal(&mut self, word: &[u8], written: u8) -> Result<(), ParseError> {
        match self.text[self.at..].starts_with(word) {
            true => {
                self.at += word.len();
                self.out.push(written);
                Ok(())
            }
            false => Err(self.error("expected value")),
        }
    }

    /// Past an opening `{` or `[`: its tag and length slot written. Returns
    /// where the length goes, and whether the container is empty (its
    /// closing `close` read too).
    fn open(&mut self, depth: usize, written: u8, close: u8) -> Result<(usize, bool), ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        self.at += 1;
        let len_at = open_container(self.out, written);
        let empty = self.peek()? == close;
        if empty {
            self.at += 1;
        }
        Ok((len_at, empty))
    }

    /// After a member or element: true past a `,` (another follows), false
    /// past the container's `close`.
    fn another(&mut self, close: u8, expected: &'static str) -> Result<bool, ParseError> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Ok(true)
            }
            byte if byte == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(self.error(expected)),
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), ParseError> {
        let (len_at, empty) = self.open(depth, tag::OBJECT, b'}')?;
        let mut count = 0;
        let mut keys_seen = KeysSeen::default();
        if !empty {
            loop {
                if self.peek()? != b'"' {
                    return Err(self.error("key must be a string"));
                }
                self.at += 1;
                let key_at = self.out.len();
                self.string()?;
                keys_seen.note(&self.out[key_at..]);
                if self.peek()? != b':' {
                    return Err(self.error("expected `:`"));
                }
                self.at += 1;
                self.value(depth)?;
                count += 1;
                if !self.another(b'}', "expected `,` or `}`")? {
                    break;
                }
            }
        }
        if keys_seen.maybe_repeated {
            dedup_members(self.out, len_at + 1, count);
        }
        close_container(self.out, len_at);
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<(), ParseError> {
        let (len_at, empty) = self.open(depth, tag::ARRAY, b']')?;
        if !empty {
            loop {
                self.value(depth)?;
                if !self.another(b']', "expected `,` or `]`")? {
                    break;
                }
            }
        }
        close_container(self.out, len_at);
        Ok(())
    }

    /// A string whose opening quote was read.
    fn string(&mut self) -> Result<(), ParseError> {
        let start = self.at;
        let text = self.text;
        loop {
            self.skip_plain_words();
            let Some(&byte) = text.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match byte {
                b'"' => {
                    // UTF-8: checked once for the whole text
                    write_utf8(self.out, &text[start..self.at]);
                    self.at += 1;
                    return Ok(());
                }
                b'\\' => return self.escaped_string(start),
                0x00..=0x1F => return Err(self.error("control character in a string")),
                _ => self.at += 1,
            }
        }
    }

    /// Skips eight bytes at a time while none of them is a quote, a
    /// backslash or a control character (most of a string's bytes).
    fn skip_plain_words(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        // has a zero byte / has a byte below 0x20 (exact as to whether)
        let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        while let Some(Ok(block)) = self.text.get(self.at..self.at + 8).map(<[u8; 8]>::try_from) {
            let word = u64::from_le_bytes(block);
            let special = zero_in(word ^ (ONES * u64::from(b'"')))
                | zero_in(word ^ (ONES * u64::from(b'\\')))
                | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
            if special != 0 {
                return;
            }
            self.at += 8;
        }
    }

    /// The rest of a string that has escapes, from its start.
    fn escaped_string(&mut self, start: usize) -> Result<(), ParseError> {
        let mut decoded: Vec<u8> = self.text[start..self.at].to_vec();
        loop {
            let Some(&byte) = self.text.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            self.at += 1;
            match byte {
                b'"' => break,
                b'\\' => self.escape(&mut decoded)?,
                0x00..=0x1F => {
                    self.at -= 1;
                    return Err(self.error("control character in a string"));
                }
                other => decoded.push(other),
            }
        }
        let text = String::from_utf8(decoded).map_err(|_| self.error("invalid UTF-8"))?;
        write_str(self.out, &text);
        Ok(())
    }

    /// One escape whose backslash was read.
    fn escape(&mut self, decoded: &mut Vec<u8>) -> Result<(), ParseError> {
        let Some(&byte) = self.text.get(self.at) else {
            return Err(self.error("EOF while parsing a string"));
        };
        self.at += 1;
        let simple = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(decoded),
            _ => return Err(self.error("invalid escape")),
        };
        decoded.push(simple);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("EOF while parsing a string"))?;
        let mut n: u16 = 0;
        for &digit in digits {
            let value = (digit as char)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid escape"))?;
            n = n * 16 + value as u16;
        }
        self.at += 4;
        Ok(n)
    }

    /// `\uXXXX` (its `\u` read), a surrogate pair as one character.
    fn unicode_escape(&mut self, decoded: &mut Vec<u8>) -> Result<(), ParseError> {
        let first = self.hex4()?;
        let character = match first {
            0xDC00..=0xDFFF => return Err(self.error("lone trailing surrogate in hex escape")),
            0xD800..=0xDBFF => {
                if self.text.get(self.at..self.at + 2) != Some(b"\\u") {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                self.at += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                let code =
                    0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00);
                char::from_u32(code).ok_or_else(|| self.error("invalid escape"))?
            }
            other => {
                char::from_u32(u32::from(other)).ok_or_else(|| self.error("invalid escape"))?
            }
        };
        let mut buffer = [0u8; 4];
        decoded.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
        Ok(())
    }

    /// One or more decimal digits, passed over (none is an invalid number).
    fn digits(&mut self) -> Result<&'t [u8], ParseError> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.text.get(self.at) {
            self.at += 1;
        }
        match self.at > start {
            true => Ok(&self.text[start..self.at]),
            false => Err(self.error("invalid number")),
        }
    }

    /// A number; plain integers here, anything else read by `serde_json`.
    fn number(&mut self) -> Result<(), ParseError> {
        let start = self.at;
        let text = self.text;
        let negative = text[self.at] == b'-';
        if negative {
            self.at += 1;
        }
        let digits = self.digits()?;
        if digits.len() > 1 && digits[0] == b'0' {
            return Err(self.error("invalid number"));
        }
        let more = matches!(text.get(self.at), Some(b'.' | b'e' | b'E'));
        if !more && digits.len() <= 18 {
            let magnitude = digits
                .iter()
                .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
            match (negative, magnitude) {
                (false, n) => write_u64(self.out, n),
                // `-0` is a float to serde_json
                (true, 0) => write_f64(self.out, -0.0),
                (true, n) => write_i64(self.out, -(n as i64)),
            }
            return Ok(());
        }
        // fraction, exponent or a long integer: serde_json's own reading
        if text.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = text.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = text.get(self.at) {
                self.at += 1;
            }
            self.digits()?;
        }
        let number: serde_json::Number =
            serde_json::from_slice(&text[start..self.at]).map_err(|_| ParseError {
                at: start,
                what: "number out of range",
            })?;
        if let Some(n) = number.as_u64() {
            write_u64(self.out, n);
        } else if let Some(n) = number.as_i64() {
            write_i64(self.out, n);
        } else if let Some(f) = number.as_f64() {
            write_f64(self.out, f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
