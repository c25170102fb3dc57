//! Brotli for the built page: `FILE.br` beside each wasm, js and css file of
//! a `dist`, which `deltascope serve` sends to browsers that accept `br`
//! (it checks each once against its file, `proxy/src/compress.rs`).
//!
//! A release page gets quality 11, brotli's best and slowest: about 1.7 s of
//! one core for its wasm, paid once per build rather than by a request (on
//! the fly, serve sends gzip). A debug page (7 MB of wasm, for the tests and
//! the dev loop on loopback) gets quality 5, which takes a second instead of
//! half a minute. The release binary embeds the `.br` files with the page.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::run::{Result, XtaskError};

/// Brotli's best quality, for a release page.
const BEST: u32 = 11;
/// A quick quality, for a debug page.
const QUICK: u32 = 5;
/// log2 of brotli's window: 4 MiB, more than the wasm.
const WINDOW: u32 = 22;
/// Smaller files are sent as they are (serve's own threshold).
const MIN_LEN: u64 = 1024;

/// Writes `FILE.br` for each wasm, js and css file at the top of `dist`
/// (at brotli's best quality for a `release` page); returns each source with
/// its compressed size.
pub fn precompress(dist: &Path, release: bool) -> Result<Vec<(PathBuf, u64)>> {
    let quality = if release { BEST } else { QUICK };
    let io = |what: String| move |source| XtaskError::Io { what, source };
    let entries = std::fs::read_dir(dist).map_err(io(format!("reading {}", dist.display())))?;
    let mut written = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if !matches!(ext, "wasm" | "js" | "css") || len < MIN_LEN {
            continue;
        }
        let content = std::fs::read(&path).map_err(io(format!("reading {}", path.display())))?;
        let mut compressed = Vec::with_capacity(content.len() / 3);
        {
            let mut writer =
                brotli::CompressorWriter::new(&mut compressed, 1 << 16, quality, WINDOW);
            writer
                .write_all(&content)
                .map_err(io(format!("compressing {}", path.display())))?;
        }
        let mut target = path.clone().into_os_string();
        target.push(".br");
        let target = PathBuf::from(target);
        std::fs::write(&target, &compressed)
            .map_err(io(format!("writing {}", target.display())))?;
        written.push((path, compressed.len() as u64));
    }
    Ok(written)
}
