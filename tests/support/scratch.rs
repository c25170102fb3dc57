//! A test's scratch directory (removed when its guard drops, also after a
//! failed assert) and the wall clock in ms — what the browser tests that
//! start a recording serve share.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// A scratch directory of one test, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `$TMPDIR/deltascope-{test}-{pid}-{name}`, empty.
    pub fn new(test: &str, name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("deltascope-{test}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Now, in ms since the Unix epoch.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
