//! The lines a log view holds: a ring bounded by line count and by bytes,
//! ordered by timestamp (lines of several containers or pods interleave as
//! they happened; a line arriving late is inserted in its place), that
//! counts what falls out so the view can say so.

use std::collections::VecDeque;

use super::line::LogLine;

/// How much a ring may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingBounds {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for RingBounds {
    /// 100,000 lines or 64 MiB, whichever is reached first.
    fn default() -> Self {
        RingBounds {
            max_lines: 100_000,
            max_bytes: 64 << 20,
        }
    }
}

/// The held lines, oldest first.
#[derive(Debug, Default)]
pub struct LogRing {
    lines: VecDeque<LogLine>,
    bounds: RingBounds,
    bytes: usize,
    evicted_lines: u64,
    evicted_bytes: u64,
}

impl LogRing {
    pub fn new(bounds: RingBounds) -> LogRing {
        LogRing {
            bounds,
            ..LogRing::default()
        }
    }

    /// Adds a line in timestamp order (a line without a timestamp goes at
    /// the end), then evicts the oldest lines beyond the bounds.
    pub fn insert(&mut self, line: LogLine) {
        self.bytes += line.held_bytes();
        let at = match line.nanos {
            Some(nanos)
                if self
                    .lines
                    .back()
                    .and_then(|l| l.nanos)
                    .is_some_and(|last| last > nanos) =>
            {
                self.lines
                    .partition_point(|l| l.nanos.is_none_or(|n| n <= nanos))
            }
            _ => self.lines.len(),
        };
        self.lines.insert(at, line);
        self.evict();
    }

    /// Changes the bounds (evicting at once if they shrank).
    pub fn set_bounds(&mut self, bounds: RingBounds) {
        self.bounds = bounds;
        self.evict();
    }

    fn evict(&mut self) {
        while self.lines.len() > self.bounds.max_lines.max(1)
            || (self.bytes > self.bounds.max_bytes && self.lines.len() > 1)
        {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            let held = old.held_bytes();
            self.bytes -= held;
            self.evicted_lines += 1;
            self.evicted_bytes += held as u64;
        }
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<&LogLine> {
        self.lines.get(index)
    }

    pub fn iter(&self) -> impl Iterator<Item = &LogLine> {
        self.lines.iter()
    }

    pub fn bounds(&self) -> RingBounds {
        self.bounds
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> usize {
        self.bytes
    }

    /// Lines and bytes that fell out of the ring so far.
    pub fn evicted(&self) -> (u64, u64) {
        (self.evicted_lines, self.evicted_bytes)
    }

    /// Indexes of the lines containing `query`, ignoring the case of ASCII
    /// letters (`grep -i` in the C locale; "É" and "é" differ). Unicode case
    /// tables would add about 10 KB to the page's download.
    pub fn search(&self, query: &str) -> Vec<usize> {
        if query.is_empty() {
            return Vec::new();
        }
        let query = query.to_ascii_lowercase();
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.text.to_ascii_lowercase().contains(&query))
            .map(|(i, _)| i)
            .collect()
    }

    /// Forgets every line (counts them as evicted).
    pub fn clear(&mut self) {
        self.evicted_lines += self.lines.len() as u64;
        self.evicted_bytes += self.bytes as u64;
        self.lines.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(source: u32, nanos: Option<i128>, text: &str) -> LogLine {
        LogLine {
            source,
            timestamp: String::new(),
            nanos,
            text: text.into(),
            truncated: false,
            binary: false,
        }
    }

    fn texts(ring: &LogRing) -> Vec<&str> {
        ring.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn interleaves_sources_by_timestamp() {
        let mut ring = LogRing::new(RingBounds::default());
        ring.insert(line(0, Some(10), "a10"));
        ring.insert(line(1, Some(30), "b30"));
        ring.insert(line(0, Some(20), "a20"));
        ring.insert(line(1, Some(20), "b20"));
        ring.insert(line(0, None, "untimed"));
        ring.insert(line(0, Some(40), "a40"));
        assert_eq!(
            texts(&ring),
            vec!["a10", "a20", "b20", "b30", "untimed", "a40"]
        );
    }

    #[test]
    fn bounded_by_lines_and_bytes_counting_evictions() {
        let mut ring = LogRing::new(RingBounds {
            max_lines: 3,
            max_bytes: usize::MAX,
        });
        for i in 0..5 {
            ring.insert(line(0, Some(i), &format!("l{i}")));
        }
        assert_eq!(texts(&ring), vec!["l2", "l3", "l4"]);
        assert_eq!(ring.evicted().0, 2);

        let per_line = line(0, None, "l0").held_bytes();
        ring.set_bounds(RingBounds {
            max_lines: 10,
            max_bytes: per_line * 2,
        });
        assert_eq!(ring.len(), 2);
        assert!(ring.held_bytes() <= per_line * 2);
        assert_eq!(ring.evicted().0, 3);
        ring.clear();
        assert_eq!((ring.len(), ring.held_bytes(), ring.evicted().0), (0, 0, 5));
    }

    #[test]
    fn search_is_case_insensitive() {
        let mut ring = LogRing::new(RingBounds::default());
        for (i, text) in ["GET /a", "error: boom", "Error again", "ok"]
            .iter()
            .enumerate()
        {
            ring.insert(line(0, Some(i as i128), text));
        }
        assert_eq!(ring.search("ERROR"), vec![1, 2]);
        assert!(ring.search("").is_empty());
    }
}
