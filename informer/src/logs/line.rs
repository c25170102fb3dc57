//! One log line and the splitter that cuts a log stream into lines. With
//! `timestamps=true` the kubelet starts each line with an RFC 3339
//! timestamp (nanoseconds) and a space; that timestamp orders lines across
//! containers and is where a broken stream resumes.

use deltascope_facts::time::parse_rfc3339_nanos;

/// Longest line kept whole; the rest of a longer one is cut off (and the
/// line marked truncated) so one runaway line cannot break the view.
pub const DEFAULT_MAX_LOG_LINE: usize = 16 * 1024;

/// One line of a container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Which stream it came from (index given by the caller: pod/container).
    pub source: u32,
    /// The kubelet's timestamp as written (`""` if the line had none).
    pub timestamp: String,
    /// The same in nanoseconds since the epoch (for ordering and resuming);
    /// `None` if the line had no timestamp.
    pub nanos: Option<i128>,
    /// The text, without the timestamp and the newline; made valid UTF-8.
    pub text: String,
    /// The line was longer than the limit and is cut.
    pub truncated: bool,
    /// The line was not valid UTF-8 (shown with replacement characters).
    pub binary: bool,
}

impl LogLine {
    /// Reads `bytes` (one line without its newline) from source `source`.
    pub fn parse(source: u32, bytes: &[u8], truncated: bool) -> LogLine {
        let (timestamp, nanos, rest) = match bytes.iter().position(|&b| b == b' ') {
            Some(space) => match std::str::from_utf8(&bytes[..space])
                .ok()
                .and_then(|ts| Some((ts, parse_rfc3339_nanos(ts)?)))
            {
                Some((ts, nanos)) => (ts.to_owned(), Some(nanos), &bytes[space + 1..]),
                None => (String::new(), None, bytes),
            },
            None => (String::new(), None, bytes),
        };
        let (text, binary) = match std::str::from_utf8(rest) {
            Ok(text) => (text.to_owned(), false),
            Err(_) => (String::from_utf8_lossy(rest).into_owned(), true),
        };
        LogLine {
            source,
            timestamp,
            nanos,
            text,
            truncated,
            binary,
        }
    }

    /// Bytes this line holds (for the ring's byte bound).
    pub fn held_bytes(&self) -> usize {
        self.timestamp.len() + self.text.len() + std::mem::size_of::<LogLine>()
    }
}

/// Cuts a byte stream into lines; keeps at most `max_line` bytes of each.
#[derive(Debug)]
pub struct LogSplitter {
    max_line: usize,
    partial: Vec<u8>,
    /// Bytes of the current line dropped beyond `max_line`.
    dropping: bool,
}

impl LogSplitter {
    pub fn new(max_line: usize) -> LogSplitter {
        LogSplitter {
            max_line: max_line.max(1),
            partial: Vec::new(),
            dropping: false,
        }
    }

    /// Feeds a chunk; calls `on_line(bytes, truncated)` for every complete line.
    pub fn push(&mut self, chunk: &[u8], mut on_line: impl FnMut(&[u8], bool)) {
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.take(&rest[..pos]);
            let mut line = std::mem::take(&mut self.partial);
            if line.last() == Some(&b'\r') && !self.dropping {
                line.pop();
            }
            on_line(&line, std::mem::take(&mut self.dropping));
            rest = &rest[pos + 1..];
        }
        self.take(rest);
    }

    /// The stream ended: the last line, if it had no newline.
    pub fn finish(&mut self) -> Option<(Vec<u8>, bool)> {
        let truncated = std::mem::take(&mut self.dropping);
        (!self.partial.is_empty() || truncated)
            .then(|| (std::mem::take(&mut self.partial), truncated))
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = self.max_line.saturating_sub(self.partial.len());
        if bytes.len() > room {
            self.dropping = true;
        }
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<(Vec<u8>, bool)> {
        let mut splitter = LogSplitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, |line, cut| out.push((line.to_vec(), cut)));
        }
        out.extend(splitter.finish());
        out
    }

    #[test]
    fn lines_across_chunks_blank_lines_kept_crlf_trimmed() {
        let got = split(100, &[b"a\n\nb", b"c\r\n", b"tail"]);
        let want: Vec<(Vec<u8>, bool)> = vec![
            (b"a".to_vec(), false),
            (b"".to_vec(), false),
            (b"bc".to_vec(), false),
            (b"tail".to_vec(), false),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn long_lines_are_cut_not_errors() {
        let got = split(4, &[b"abcdefgh\nxy", b"z\n"]);
        assert_eq!(
            got,
            vec![(b"abcd".to_vec(), true), (b"xyz".to_vec(), false)]
        );
        assert_eq!(split(4, &[b"abcdef"]), vec![(b"abcd".to_vec(), true)]);
    }

    #[test]
    fn timestamps_text_and_binary() {
        let line = LogLine::parse(
            3,
            b"2026-11-25T10:00:00.000000001Z GET /index.html 200",
            false,
        );
        assert_eq!(line.source, 3);
        assert_eq!(line.timestamp, "2026-11-25T10:00:00.000000001Z");
        assert_eq!(line.text, "GET /index.html 200");
        assert_eq!(line.nanos.map(|n| n % 1_000_000_000), Some(1));

        let plain = LogLine::parse(0, b"no timestamp here", false);
        assert_eq!(
            (plain.nanos, plain.text.as_str()),
            (None, "no timestamp here")
        );

        let binary = LogLine::parse(0, b"2026-11-25T10:00:00Z \xff\xfe", false);
        assert!(binary.binary);
        assert_eq!(binary.text, "\u{fffd}\u{fffd}");

        let blank = LogLine::parse(0, b"2026-11-25T10:00:00Z ", false);
        assert_eq!((blank.text.as_str(), blank.nanos.is_some()), ("", true));
    }
}
