//! Bytes → lines. A watch response is one JSON event per line, but the
//! network delivers it in arbitrary chunks; the framer reassembles lines
//! incrementally. Each input byte is scanned for `\n` exactly once: a line
//! wholly inside one chunk is handed out without copying into the buffer;
//! only the unfinished tail of a chunk is kept. `\r\n` endings are accepted,
//! empty lines are skipped, and a line longer than `max_line` bytes is an
//! error instead of unbounded memory.

/// 16 MiB: the default limit on one line (one watch event).
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramerError {
    #[error(
        "a line of the response is longer than the limit of {max} bytes; the stream was abandoned"
    )]
    LineTooLong { max: usize },
}

/// Incremental line splitter.
#[derive(Debug)]
pub struct LineFramer {
    partial: Vec<u8>,
    max_line: usize,
    failed: bool,
}

impl Default for LineFramer {
    fn default() -> Self {
        LineFramer::new(DEFAULT_MAX_LINE)
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

impl LineFramer {
    pub fn new(max_line: usize) -> LineFramer {
        LineFramer {
            partial: Vec::new(),
            max_line: max_line.max(1),
            failed: false,
        }
    }

    /// Bytes held for an unfinished line.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Feeds one chunk; `on_line` is called for every complete, non-empty
    /// line (without its `\n` / `\r\n`). After an error the framer stays
    /// failed and ignores further input.
    pub fn push(
        &mut self,
        chunk: &[u8],
        mut on_line: impl FnMut(&[u8]),
    ) -> Result<(), FramerError> {
        if self.failed {
            return Err(FramerError::LineTooLong { max: self.max_line });
        }
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = (&rest[..pos], &rest[pos + 1..]);
            if self.partial.is_empty() {
                let line = trim_cr(head);
                if line.len() > self.max_line {
                    return self.fail();
                }
                if !line.is_empty() {
                    on_line(line);
                }
            } else {
                if self.partial.len() + head.len() > self.max_line + 1 {
                    return self.fail();
                }
                self.partial.extend_from_slice(head);
                let mut line = std::mem::take(&mut self.partial);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.len() > self.max_line {
                    return self.fail();
                }
                if !line.is_empty() {
                    on_line(&line);
                }
                // keep the allocation for the next partial line
                line.clear();
                self.partial = line;
            }
            rest = tail;
        }
        // one byte over the limit is fine only if it is a '\r' that may
        // still be the first half of "\r\n"
        let held = self.partial.len() + rest.len();
        let last = rest.last().or(self.partial.last());
        if held > self.max_line + 1 || (held == self.max_line + 1 && last != Some(&b'\r')) {
            return self.fail();
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// End of stream: returns the final line if it had no newline.
    pub fn finish(&mut self) -> Result<Option<Vec<u8>>, FramerError> {
        if self.failed {
            return Err(FramerError::LineTooLong { max: self.max_line });
        }
        let mut line = std::mem::take(&mut self.partial);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max_line {
            return self.fail().map(|_| None);
        }
        Ok(if line.is_empty() { None } else { Some(line) })
    }

    fn fail(&mut self) -> Result<(), FramerError> {
        self.failed = true;
        self.partial = Vec::new();
        Err(FramerError::LineTooLong { max: self.max_line })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(framer: &mut LineFramer, chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FramerError> {
        let mut out = Vec::new();
        for c in chunks {
            framer.push(c, |l| out.push(l.to_vec()))?;
        }
        if let Some(l) = framer.finish()? {
            out.push(l);
        }
        Ok(out)
    }

    const STREAM: &[u8] = b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\r\n\n{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"\xc3\xbc\"}}}\n{\"type\":\"DELETED\"}";

    fn expected() -> Vec<Vec<u8>> {
        vec![
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}".to_vec(),
            b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"\xc3\xbc\"}}}".to_vec(),
            b"{\"type\":\"DELETED\"}".to_vec(),
        ]
    }

    #[test]
    fn crlf_empty_lines_and_final_line_without_newline() {
        assert_eq!(
            run(&mut LineFramer::default(), &[STREAM]).unwrap(),
            expected()
        );
    }

    #[test]
    fn every_single_split_offset_yields_the_same_lines() {
        for i in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(i);
            assert_eq!(
                run(&mut LineFramer::default(), &[a, b]).unwrap(),
                expected(),
                "split at {i}"
            );
        }
    }

    #[test]
    fn byte_by_byte() {
        let chunks: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(
            run(&mut LineFramer::default(), &chunks).unwrap(),
            expected()
        );
    }

    #[test]
    fn line_too_long_is_an_error_and_sticky() {
        let mut f = LineFramer::new(4);
        assert_eq!(
            run(&mut LineFramer::new(4), &[b"abcd\nef"]).unwrap(),
            vec![b"abcd".to_vec(), b"ef".to_vec()]
        );
        assert_eq!(
            run(&mut LineFramer::new(4), &[b"abcd\r\n"]).unwrap(),
            vec![b"abcd".to_vec()]
        );
        assert!(f.push(b"abc", |_| {}).is_ok());
        assert_eq!(
            f.push(b"de", |_| {}),
            Err(FramerError::LineTooLong { max: 4 })
        );
        assert!(f.push(b"\n", |_| {}).is_err());
        assert!(run(&mut LineFramer::new(4), &[b"abcde\n"]).is_err());
        assert!(run(&mut LineFramer::new(4), &[b"ab", b"cde\n"]).is_err());
        assert!(run(&mut LineFramer::new(4), &[b"abcde"]).is_err());
    }

    proptest! {
        #[test]
        fn random_multi_splits_yield_the_same_lines(cuts in proptest::collection::vec(0..STREAM.len(), 0..12)) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for c in cuts { chunks.push(&STREAM[prev..c]); prev = c; }
            chunks.push(&STREAM[prev..]);
            prop_assert_eq!(run(&mut LineFramer::default(), &chunks).unwrap(), expected());
        }
    }
}
