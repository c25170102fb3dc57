//! A metrics list read as it arrives: the answer for 100,000 pods is about
//! 40 MB of JSON, and read at once it held the page's main thread for
//! 690 ms (the page bench, `page.metrics.longtask.100k`) — every watch
//! event that came meanwhile waited. [`UsageListReader`] takes the body a
//! piece at a time (the channel's 64 KiB frames), finds each element of
//! the top-level `items` array by its brackets (strings and escapes
//! skipped), and reads each whole item as it completes, so no piece costs
//! more than its own bytes. Only the item in progress is held, never the
//! body. Pure and tested natively; the items are read by
//! `crate::api::resource_metrics`.

use super::resource_metrics::{add_item, Keep, UsageList, UsageListError};

/// Reads a `PodMetricsList` or `NodeMetricsList` body.
pub fn parse_usage_list(body: &[u8]) -> Result<UsageList, UsageListError> {
    parse_usage_list_keeping(body, Keep::default())
}

/// Reads a metrics list keeping what `keep` says too (the whole body at
/// once; an answer arriving in pieces is read as it comes by
/// [`UsageListReader`]).
pub fn parse_usage_list_keeping(body: &[u8], keep: Keep) -> Result<UsageList, UsageListError> {
    let mut reader = UsageListReader::new(keep);
    reader.feed(body);
    reader.finish()
}

/// Reads one metrics list, piece by piece (see the module doc).
#[derive(Debug)]
pub struct UsageListReader {
    keep: Keep,
    list: UsageList,
    /// Bytes not yet let go: the item in progress (and a top-level key).
    held: Vec<u8>,
    /// How far `held` is scanned.
    scanned: usize,
    depth: u32,
    in_string: bool,
    escape: bool,
    /// Where the string being read at depth 1 (a key) starts in `held`.
    key_start: Option<usize>,
    /// The last string at depth 1 was `"items"` …
    items_key: bool,
    /// … and a `:` followed it: its value comes next.
    items_value: bool,
    /// Inside the `items` array (at depth 2).
    in_items: bool,
    /// Where the item in progress starts in `held`.
    item_start: Option<usize>,
    /// The top-level object was opened, then closed.
    opened: bool,
    closed: bool,
    error: Option<UsageListError>,
}

impl UsageListReader {
    pub fn new(keep: Keep) -> UsageListReader {
        UsageListReader {
            keep,
            list: UsageList::default(),
            held: Vec::new(),
            scanned: 0,
            depth: 0,
            in_string: false,
            escape: false,
            key_start: None,
            items_key: false,
            items_value: false,
            in_items: false,
            item_start: None,
            opened: false,
            closed: false,
            error: None,
        }
    }

    /// Reads the next piece of the body: every item it completes is added
    /// to the list (the first error is kept, the rest ignored).
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.error.is_some() || self.closed {
            return;
        }
        self.held.extend_from_slice(bytes);
        let mut at = self.scanned;
        while at < self.held.len() {
            let byte = self.held[at];
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if byte == b'\\' {
                    self.escape = true;
                } else if byte == b'"' {
                    self.in_string = false;
                    if let Some(start) = self.key_start.take() {
                        self.items_key = &self.held[start + 1..at] == b"items";
                    }
                }
                at += 1;
                continue;
            }
            match byte {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 {
                        self.key_start = Some(at);
                    }
                }
                b':' if self.depth == 1 => self.items_value = self.items_key,
                b',' if self.depth == 1 => self.items_value = false,
                b'{' | b'[' => {
                    if self.depth == 0 {
                        if byte != b'{' || self.opened {
                            return self.refuse("it is not a JSON object");
                        }
                        self.opened = true;
                    } else if self.depth == 1 && byte == b'[' && self.items_value {
                        self.in_items = true;
                    } else if self.depth == 2 && self.in_items && byte == b'{' {
                        self.item_start = Some(at);
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return self.refuse("it closes more than it opens");
                    }
                    self.depth -= 1;
                    match (self.depth, self.item_start) {
                        (2, Some(start)) if byte == b'}' => {
                            self.item_start = None;
                            let item = &self.held[start..=at];
                            if let Err(error) = add_item(&mut self.list, item, self.keep) {
                                self.error = Some(error);
                                return;
                            }
                        }
                        (1, _) => self.in_items = false,
                        (0, _) => self.closed = true,
                        _ => {}
                    }
                }
                b' ' | b'\n' | b'\r' | b'\t' => {}
                _ if self.depth == 0 => return self.refuse("it is not a JSON object"),
                _ => {}
            }
            at += 1;
        }
        // let go of everything before the item (or key) in progress
        let keep_from = [self.item_start, self.key_start]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.held.len());
        self.held.drain(..keep_from);
        self.item_start = self.item_start.map(|start| start - keep_from);
        self.key_start = self.key_start.map(|start| start - keep_from);
        self.scanned = self.held.len();
    }

    fn refuse(&mut self, why: &str) {
        self.error = Some(UsageListError::NotJson(why.to_string()));
    }

    /// The list, once the whole body was read.
    pub fn finish(self) -> Result<UsageList, UsageListError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if !self.closed {
            let why = if self.opened {
                "the answer ended before the list did"
            } else {
                "the answer is empty"
            };
            return Err(UsageListError::NotJson(why.to_string()));
        }
        Ok(self.list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pods, with a `]`, `}` and an escaped quote inside strings, and
    /// `items` as a label key and in metadata too.
    const PODS: &str = r#"{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"items":"not these"},"items":[
        {"metadata":{"name":"web-1","namespace":"shop","labels":{"items":"x]}\"{["}},"timestamp":"2026-11-28T09:00:00Z","window":"15s",
         "containers":[{"name":"app","usage":{"cpu":"12345678n","memory":"123456Ki"}},{"name":"sidecar","usage":{"cpu":"1000001n","memory":"1Mi"}}]},
        {"metadata":{"name":"db-0","namespace":"shop"},"timestamp":"2026-11-28T09:00:15Z","window":"15s",
         "containers":[{"name":"db","usage":{"cpu":"250m","memory":"256Mi"}}]}],"extra":{"items":[{"metadata":{"name":"no"}}]}}"#;

    const KEEP: Keep = Keep {
        containers: true,
        labels: true,
    };

    #[test]
    fn a_list_read_in_any_pieces_is_the_list_read_at_once() {
        let whole = parse_usage_list_keeping(PODS.as_bytes(), KEEP).expect("a list");
        assert_eq!(whole.usage.len(), 2, "only the top-level items: {whole:?}");
        assert_eq!(
            whole.labels["shop/web-1"]
                .root()
                .pointer("/items")
                .and_then(|v| v.as_str()),
            Some("x]}\"{[")
        );
        assert_eq!(whole.timestamp, "2026-11-28T09:00:15Z");
        for size in [1, 2, 3, 7, 64, 1000] {
            let mut reader = UsageListReader::new(KEEP);
            for piece in PODS.as_bytes().chunks(size) {
                reader.feed(piece);
            }
            assert_eq!(reader.finish().expect("a list"), whole, "pieces of {size}");
        }
    }

    #[test]
    fn only_the_item_in_progress_is_held() {
        let mut body = String::from(r#"{"items":["#);
        for i in 0..2_000 {
            if i > 0 {
                body.push(',');
            }
            body.push_str(&format!(
                r#"{{"metadata":{{"name":"p{i}","namespace":"a"}},"timestamp":"2026-11-28T09:00:00Z","window":"15s","containers":[{{"name":"c","usage":{{"cpu":"1m","memory":"1Mi"}}}}]}}"#
            ));
        }
        body.push_str("]}");
        let mut reader = UsageListReader::new(Keep::default());
        let mut most = 0;
        for piece in body.as_bytes().chunks(4096) {
            reader.feed(piece);
            most = most.max(reader.held.len());
        }
        assert!(most < 400, "held {most} bytes at most");
        assert_eq!(reader.finish().expect("a list").usage.len(), 2_000);
    }

    #[test]
    fn bad_bodies_are_refused_with_why() {
        let read = |body: &[u8]| {
            let mut reader = UsageListReader::new(Keep::default());
            reader.feed(body);
            reader.finish()
        };
        for (body, words) in [
            (&b"<html></html>"[..], "not a JSON object"),
            (b"", "empty"),
            (b"[1,2]", "not a JSON object"),
            (br#"{"items":[{"metadata":{"name":"a"}"#, "ended before"),
            (b"}", "closes more"),
        ] {
            match read(body) {
                Err(UsageListError::NotJson(why)) => assert!(why.contains(words), "{why}"),
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(body)),
            }
        }
        // an item that is not a metrics item: serde says why
        assert!(matches!(
            read(br#"{"items":[{"metadata":{}}]}"#),
            Err(UsageListError::NotJson(why)) if why.contains("name")
        ));
    }
}
