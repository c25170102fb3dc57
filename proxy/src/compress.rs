//! The page's files as the browser downloads them: compressed with brotli
//! when the browser accepts it, else gzip, and answered with `304 Not
//! Modified` when the browser already holds the same content.
//!
//! Why: the page's wasm is about 1.3 MB. Brotli at quality 11 makes it about
//! 400 KB and gzip about 500 KB; a reload, revalidated by its `ETag`, costs
//! no body at all. Chromium asks for `br` from `http://127.0.0.1` (a secure
//! context), which is how serve is reached; over plain HTTP to another host
//! browsers ask for gzip only.
//!
//! Brotli at quality 11 takes about 1.7 s of one core for the wasm, so it
//! is done when the page is built, not per request: `cargo xtask build`
//! (and `demo`, `test`, `bench`) writes `FILE.br` beside each file, the
//! release binary embeds them with the page, and a browser that accepts
//! `br` gets that. A `FILE.br` is sent only after it was checked once to
//! decode to `FILE`'s bytes, so a stale one is never sent (it is reported
//! and skipped). Without one (a page from a bare `trunk build`, served with
//! `--dist`) the browser gets gzip, made once per content (about 60 ms for the wasm).
//! Both are kept by the content's SHA-256, so a rebuilt page (`--dist`)
//! gets its own; the oldest contents are dropped beyond [`KEPT_CONTENTS`].
//!
//! Only text-like files of at least [`MIN_COMPRESSED_LEN`] bytes are
//! compressed (wasm, js, css, json, svg, plain text). HTML documents are
//! small and carry their own policy header; they are served as they are.
//! The `ETag` is weak and the same for every encoding: the encodings are
//! the same content, and `If-None-Match` on a GET compares weakly (RFC 9110
//! §13.1.2).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use sha2::{Digest, Sha256};

/// How many distinct contents keep their compressed variants.
pub const KEPT_CONTENTS: usize = 16;

/// Files shorter than this are sent as they are.
pub const MIN_COMPRESSED_LEN: usize = 1024;

/// A content coding serve sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

impl Encoding {
    /// The `Content-Encoding` value, `None` for identity.
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
            Encoding::Identity => None,
        }
    }
}

/// The codings a request's `Accept-Encoding` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accepted {
    pub brotli: bool,
    pub gzip: bool,
}

impl Accepted {
    /// Reads an `Accept-Encoding` value: a comma list of codings with
    /// optional `;q=` weights, where `q=0` refuses a coding and `*` stands for
    /// every coding not named. A missing header accepts no coding (identity).
    pub fn parse(header: Option<&str>) -> Accepted {
        let Some(header) = header else {
            return Accepted::default();
        };
        let mut brotli = None;
        let mut gzip = None;
        let mut any = None;
        for item in header.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            // No weight means q=1; an unreadable one refuses the coding.
            let mut allowed = true;
            for (name, value) in parts.filter_map(|param| param.split_once('=')) {
                if name.trim().eq_ignore_ascii_case("q") {
                    allowed = value.trim().parse::<f32>().is_ok_and(|q| q > 0.0);
                }
            }
            match coding.as_str() {
                "br" => brotli = Some(allowed),
                "gzip" | "x-gzip" => gzip = Some(allowed),
                "*" => any = Some(allowed),
                _ => {}
            }
        }
        let any = any.unwrap_or(false);
        Accepted {
            brotli: brotli.unwrap_or(any),
            gzip: gzip.unwrap_or(any),
        }
    }
}

/// Is a file of this content type and length worth compressing?
pub fn compressible(content_type: &str, len: usize) -> bool {
    let text_like = content_type.starts_with("application/wasm")
        || content_type.starts_with("text/javascript")
        || content_type.starts_with("text/css")
        || content_type.starts_with("text/plain")
        || content_type.starts_with("application/json")
        || content_type.starts_with("image/svg+xml");
    text_like && len >= MIN_COMPRESSED_LEN
}

/// The validator of a content: a weak `ETag` from its SHA-256.
pub fn entity_tag(digest: &[u8; 32]) -> String {
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("W/\"{hex}\"")
}

/// Does `If-None-Match` name this tag (weak comparison), or `*`?
pub fn not_modified(if_none_match: Option<&str>, tag: &str) -> bool {
    let Some(header) = if_none_match else {
        return false;
    };
    let opaque = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let ours = opaque(tag);
    header
        .split(',')
        .any(|candidate| candidate.trim() == "*" || opaque(candidate) == ours)
}

/// The content's SHA-256: its `ETag`, and the key of its variants.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// One content's compressed forms, each made (or checked) once.
struct Variants {
    digest: [u8; 32],
    gzip: OnceCell<Option<Bytes>>,
    /// The page build's `FILE.br`, once it decoded to the content.
    brotli: OnceCell<Option<Bytes>>,
}

type OnceCell<T> = tokio::sync::OnceCell<T>;

/// The compressed variants of the contents served lately; shared by every
/// request of one serve.
#[derive(Default)]
pub struct Compressed {
    kept: Mutex<VecDeque<Arc<Variants>>>,
}

impl Compressed {
    fn variants(&self, digest: [u8; 32]) -> Arc<Variants> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = kept.iter().find(|v| v.digest == digest) {
            return found.clone();
        }
        let fresh = Arc::new(Variants {
            digest,
            gzip: OnceCell::new(),
            brotli: OnceCell::new(),
        });
        kept.push_back(fresh.clone());
        while kept.len() > KEPT_CONTENTS {
            kept.pop_front();
        }
        fresh
    }

    /// The body to send for `content` (whose SHA-256 is `digest`) to a
    /// browser that accepts `accepted`, and its coding: the build's brotli
    /// (`precompressed`, read only if brotli is accepted and not yet
    /// checked) when it decodes to `content`, else gzip, else `content`.
    pub async fn encode<F>(
        &self,
        content: Bytes,
        digest: [u8; 32],
        accepted: Accepted,
        precompressed: F,
    ) -> (Bytes, Encoding)
    where
        F: std::future::Future<Output = Option<Bytes>>,
    {
        if !accepted.brotli && !accepted.gzip {
            return (content, Encoding::Identity);
        }
        let variants = self.variants(digest);
        if accepted.brotli {
            let source = content.clone();
            let brotli = variants
                .brotli
                .get_or_init(|| async move {
                    let candidate = precompressed.await?;
                    let checked = candidate.clone();
                    let decodes =
                        tokio::task::spawn_blocking(move || decodes_to(&checked, &source))
                            .await
                            .unwrap_or(false);
                    if !decodes {
                        tracing::warn!(
                            "a precompressed .br file does not decode to the file it sits beside \
                             (a stale build?); sending gzip instead"
                        );
                    }
                    decodes.then_some(candidate)
                })
                .await;
            if let Some(brotli) = brotli {
                return (brotli.clone(), Encoding::Brotli);
            }
        }
        if accepted.gzip {
            let source = content.clone();
            let gzip = variants
                .gzip
                .get_or_init(|| async move {
                    tokio::task::spawn_blocking(move || gzip(&source).map(Bytes::from))
                        .await
                        .ok()
                        .flatten()
                })
                .await;
            if let Some(gzip) = gzip {
                return (gzip.clone(), Encoding::Gzip);
            }
        }
        (content, Encoding::Identity)
    }
}

/// Does this brotli stream decode to exactly `content`? (Reads at most one
/// byte past it, so a corrupt or hostile file cannot make it inflate more.)
fn decodes_to(brotli: &[u8], content: &[u8]) -> bool {
    let limit = content.len() as u64 + 1;
    let mut decoded = Vec::with_capacity(content.len());
    let read = brotli_decompressor::Decompressor::new(brotli, 1 << 16)
        .take(limit)
        .read_to_end(&mut decoded);
    read.is_ok() && decoded == content
}

fn gzip(content: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(content.len() / 2),
        flate2::Compression::default(),
    );
    encoder.write_all(content).ok()?;
    encoder.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding_is_read_with_weights_and_wildcards() {
        let parse = |h: &str| Accepted::parse(Some(h));
        let both = Accepted {
            brotli: true,
            gzip: true,
        };
        assert_eq!(parse("gzip, deflate, br, zstd"), both);
        assert_eq!(
            parse("gzip, deflate"),
            Accepted {
                brotli: false,
                gzip: true
            }
        );
        assert_eq!(
            parse("br;q=0, gzip"),
            Accepted {
                brotli: false,
                gzip: true
            }
        );
        assert_eq!(
            parse("BR ; Q=0.5"),
            Accepted {
                brotli: true,
                gzip: false
            }
        );
        assert_eq!(parse("*"), both);
        assert_eq!(
            parse("*;q=1, gzip;q=0"),
            Accepted {
                brotli: true,
                gzip: false
            }
        );
        assert_eq!(parse("identity"), Accepted::default());
        assert_eq!(parse("gzip;q=nonsense"), Accepted::default());
        assert_eq!(parse(""), Accepted::default());
        assert_eq!(Accepted::parse(None), Accepted::default());
    }

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists() {
        let tag = entity_tag(&[7; 32]);
        assert!(tag.starts_with("W/\""));
        assert!(not_modified(Some(&tag), &tag));
        assert!(not_modified(Some(tag.trim_start_matches("W/")), &tag));
        assert!(not_modified(Some(&format!("\"other\", {tag}")), &tag));
        assert!(not_modified(Some("*"), &tag));
        assert!(!not_modified(Some("\"other\""), &tag));
        assert!(!not_modified(None, &tag));
    }

    #[test]
    fn only_text_like_files_worth_it_are_compressed() {
        assert!(compressible("application/wasm", 2000));
        assert!(compressible("text/javascript; charset=utf-8", 2000));
        assert!(!compressible("application/wasm", 100));
        assert!(!compressible("image/png", 1 << 20));
        assert!(!compressible("text/html; charset=utf-8", 1 << 20));
    }

    fn brotli_of(content: &[u8]) -> Bytes {
        let mut out = Vec::new();
        {
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 9, 22);
            writer.write_all(content).expect("compress");
        }
        Bytes::from(out)
    }

    fn gunzip(body: &[u8]) -> Vec<u8> {
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(body)
            .read_to_end(&mut decoded)
            .expect("gunzip");
        decoded
    }

    #[tokio::test]
    async fn the_builds_brotli_is_sent_once_it_decodes_to_the_content() {
        let content = Bytes::from("deltascope ".repeat(5000));
        let digest = sha256(&content);
        let cache = Compressed::default();
        let all = Accepted::parse(Some("gzip, deflate, br, zstd"));
        let br = brotli_of(&content);
        let (body, coding) = cache
            .encode(content.clone(), digest, all, async { Some(br.clone()) })
            .await;
        assert_eq!((body, coding), (br.clone(), Encoding::Brotli));
        // Checked once: the file is not read again.
        let (body, coding) = cache
            .encode(content.clone(), digest, all, async { unreachable!() })
            .await;
        assert_eq!((body, coding), (br, Encoding::Brotli));
        let gzip_only = Accepted::parse(Some("gzip"));
        let (body, coding) = cache
            .encode(content.clone(), digest, gzip_only, async { None })
            .await;
        assert_eq!(coding, Encoding::Gzip);
        assert!(body.len() < content.len() / 10);
        assert_eq!(gunzip(&body), content);
        let (body, coding) = cache
            .encode(content.clone(), digest, Accepted::default(), async { None })
            .await;
        assert_eq!((body, coding), (content, Encoding::Identity));
    }

    #[tokio::test]
    async fn a_stale_or_broken_brotli_file_is_never_sent() {
        let content = Bytes::from("the new build ".repeat(500));
        let all = Accepted::parse(Some("gzip, br"));
        for candidate in [
            brotli_of(&"the old build ".repeat(500).into_bytes()),
            brotli_of(&"the new build ".repeat(501).into_bytes()),
            Bytes::from_static(b"not brotli at all"),
            Bytes::new(),
        ] {
            let cache = Compressed::default();
            let (body, coding) = cache
                .encode(content.clone(), sha256(&content), all, async {
                    Some(candidate)
                })
                .await;
            assert_eq!(coding, Encoding::Gzip);
            assert_eq!(gunzip(&body), content);
        }
        // Brotli accepted, gzip refused, no build brotli: the content itself.
        let cache = Compressed::default();
        let (body, coding) = cache
            .encode(
                content.clone(),
                sha256(&content),
                Accepted::parse(Some("br")),
                async { None },
            )
            .await;
        assert_eq!((body, coding), (content, Encoding::Identity));
    }

    #[tokio::test]
    async fn only_the_latest_contents_are_kept() {
        let cache = Compressed::default();
        for n in 0..(KEPT_CONTENTS + 5) {
            let content = Bytes::from(format!("{n} ").repeat(1000));
            let _ = cache
                .encode(
                    content.clone(),
                    sha256(&content),
                    Accepted::parse(Some("gzip")),
                    async { None },
                )
                .await;
        }
        assert_eq!(cache.kept.lock().expect("lock").len(), KEPT_CONTENTS);
    }
}
