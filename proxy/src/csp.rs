//! Content-Security-Policy headers: the page's, and the one for everything else.
//!
//! The page runs on the same origin as the API it reads, so anything the
//! browser would run as script there could read the cluster. The page's
//! policy allows scripts only from serve's own files, WebAssembly
//! compilation (`'wasm-unsafe-eval'`, without which `WebAssembly.instantiate`
//! is refused), and the inline scripts of the page's own `index.html`, each by
//! its SHA-256 ([`inline_script_hashes`]): trunk writes the `<script
//! type="module">` that loads the wasm inline, and its hash changes with every
//! build, so it is computed from the file as served. No `'unsafe-inline'` for
//! scripts, nothing from other origins, `connect-src 'self'`, and no framing.
//! Inline *styles* stay allowed: the page sets `style` attributes (the heights
//! of virtualised table spacers, timeline lanes), and CSS alone cannot run
//! script.
//!
//! Every other response (API JSON, Status errors, assets) gets
//! [`NON_PAGE_POLICY`]: should a browser ever render one as a document — an
//! upstream answering `text/html` for an API path, say — it is sandboxed in an
//! opaque origin with nothing allowed to load.

use base64::Engine;
use sha2::{Digest, Sha256};

/// For every response that is not one of the page's HTML documents.
pub const NON_PAGE_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// The page's policy for an HTML document whose inline scripts are `html`'s.
pub fn page_policy(html: &str) -> String {
    let mut script_src = String::from("'self' 'wasm-unsafe-eval'");
    for hash in inline_script_hashes(html) {
        script_src.push(' ');
        script_src.push_str(&hash);
    }
    format!(
        "default-src 'self'; script-src {script_src}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// `'sha256-…'` of the text of every `<script>` in `html` that has no `src`,
/// as a browser hashes it (after HTML's newline normalisation). Comments are
/// skipped, so a `<script>` inside one cannot shift which text is hashed.
pub fn inline_script_hashes(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut hashes = Vec::new();
    let mut at = 0;
    while at < lower.len() {
        let Some(offset) = lower[at..].find('<') else {
            break;
        };
        let tag = at + offset;
        if lower[tag..].starts_with("<!--") {
            at = match lower[tag + 4..].find("-->") {
                Some(end) => tag + 4 + end + 3,
                None => lower.len(),
            };
            continue;
        }
        let is_script = lower[tag..].starts_with("<script")
            && lower[tag + 7..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c == '/' || c.is_ascii_whitespace());
        if !is_script {
            at = tag + 1;
            continue;
        }
        let Some(open_end) = end_of_tag(&lower, tag + 7) else {
            break;
        };
        let attributes = &lower[tag + 7..open_end];
        let content_start = open_end + 1;
        let content_end = lower[content_start..]
            .find("</script")
            .map_or(lower.len(), |end| content_start + end);
        if !has_src(attributes) {
            let text = html[content_start..content_end]
                .replace("\r\n", "\n")
                .replace('\r', "\n");
            let digest = Sha256::digest(text.as_bytes());
            hashes.push(format!(
                "'sha256-{}'",
                base64::engine::general_purpose::STANDARD.encode(digest)
            ));
        }
        at = content_end;
    }
    hashes
}

/// The index of the `>` ending a tag whose attributes start at `from`
/// (quoted attribute values may hold `>`).
fn end_of_tag(lower: &str, from: usize) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in lower[from..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(from + i),
            (None, _) => {}
        }
    }
    None
}

/// Whether a tag's attribute text names a `src` attribute.
fn has_src(attributes: &str) -> bool {
    let mut rest = attributes;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
        if rest.is_empty() {
            return false;
        }
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '/')
            .unwrap_or(rest.len());
        if &rest[..name_end] == "src" {
            return true;
        }
        rest = rest[name_end..].trim_start();
        if let Some(value) = rest.strip_prefix('=') {
            let value = value.trim_start();
            rest = match value.chars().next() {
                Some(q @ ('"' | '\'')) => value[1..].find(q).map_or("", |end| &value[end + 2..]),
                _ => value
                    .find(|c: char| c.is_ascii_whitespace())
                    .map_or("", |end| &value[end..]),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(text: &str) -> String {
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
        )
    }

    #[test]
    fn hashes_inline_scripts_only() {
        let html =
            "<!doctype html><head><script type=\"module\">\nimport init from '/a.js';\n</script>\
                    <script src=\"/b.js\"></script><SCRIPT data-x='a>b'>x()</SCRIPT>\
                    <!-- <script>not(me)</script> --><scripts>no</scripts>\
                    <script async\nsrc=/c.js></script></head>";
        assert_eq!(
            inline_script_hashes(html),
            vec![hash("\nimport init from '/a.js';\n"), hash("x()")]
        );
    }

    #[test]
    fn newlines_are_normalised_like_the_html_parser_does() {
        assert_eq!(
            inline_script_hashes("<script>a\r\nb\rc</script>"),
            vec![hash("a\nb\nc")]
        );
    }

    #[test]
    fn page_policy_is_strict() {
        let policy = page_policy("<script>go()</script>");
        for part in [
            "default-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
            "'wasm-unsafe-eval'",
            &hash("go()"),
        ] {
            assert!(policy.contains(part), "{part} in {policy}");
        }
        let script_src = policy
            .split(';')
            .find(|d| d.trim_start().starts_with("script-src"))
            .unwrap();
        assert!(!script_src.contains("unsafe-inline"), "{policy}");
    }
}
