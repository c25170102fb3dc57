//! Fuzz target: the line framer. Input = a control byte (the line limit),
//! a list of cut points and the stream. Feeding the stream in arbitrary
//! chunks must give exactly the same lines, the same final line and the same
//! error as feeding it in one piece; and it never panics.
#![no_main]

use deltascope_informer::{FramerError, LineFramer, DEFAULT_MAX_LINE};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
struct Outcome {
    lines: Vec<Vec<u8>>,
    end: Result<Option<Vec<u8>>, FramerError>,
}

fn frame<'a>(max_line: usize, chunks: impl Iterator<Item = &'a [u8]>) -> Outcome {
    let mut framer = LineFramer::new(max_line);
    let mut lines = Vec::new();
    for chunk in chunks {
        if let Err(e) = framer.push(chunk, |l| lines.push(l.to_vec())) {
            return Outcome { lines, end: Err(e) };
        }
    }
    let end = framer.finish();
    Outcome { lines, end }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    // small limits half the time, so "line too long" is exercised
    let max_line = if control & 0x80 == 0 {
        (control & 0x3f) as usize + 1
    } else {
        DEFAULT_MAX_LINE
    };
    let cuts_len = (rest.first().copied().unwrap_or(0) as usize % 16).min(rest.len());
    let (cuts, stream) = rest.split_at(cuts_len);
    let whole = frame(max_line, std::iter::once(stream));
    if stream.is_empty() {
        return;
    }
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| *c as usize * stream.len() / 256)
        .collect();
    points.push(0);
    points.push(stream.len());
    points.sort_unstable();
    points.dedup();
    let chunks = points.windows(2).map(|w| &stream[w[0]..w[1]]);
    let chunked = frame(max_line, chunks);
    assert_eq!(
        whole, chunked,
        "chunked framing differs (cuts at {points:?})"
    );
    for line in &whole.lines {
        assert!(!line.is_empty() && !line.contains(&b'\n'));
        assert!(line.len() <= max_line);
    }
});
