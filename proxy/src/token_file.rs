//! Where a generated session token is kept for its user: a file only they can
//! read, never the terminal.
//!
//! When serve makes up its token (no `--token`, `--token-file` or
//! `DELTASCOPE_TOKEN`), the user still needs it for the sign-in form of a
//! second browser and for `Authorization: Bearer` clients, but the printed
//! sign-in link no longer carries it. serve writes it to
//! `DIR/deltascope/token-<port>`, where DIR is `$XDG_RUNTIME_DIR` (a tmpfs
//! only the user can enter, emptied at logout), else `$XDG_STATE_HOME`, else
//! `~/.local/state`; the `deltascope` directory is made (or made again)
//! `0700` and the file is created afresh, `0600`, never through a symlink.
//! serve prints the file's path and removes the file when it stops normally
//! (Ctrl-C, SIGTERM): best effort, a killed serve leaves it behind, and the
//! next serve on that port replaces it. An operator's own token is never
//! written anywhere.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why the token could not be written (serve says so and keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(
        "none of XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME is set to an absolute path, \
         so there is no private directory for the token"
    )]
    NoDirectory,
    #[error("cannot make the private directory {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a directory of its own (a symlink or a file?)")]
    NotADirectory { path: PathBuf },
    #[error("cannot write the token file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The directory the token file goes in, from the environment.
pub fn token_dir() -> Result<PathBuf, TokenFileError> {
    token_dir_from(
        std::env::var_os("XDG_RUNTIME_DIR"),
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// `RUNTIME/deltascope`, else `STATE/deltascope`, else
/// `HOME/.local/state/deltascope`; relative or empty values are ignored, as
/// the XDG base directory specification says.
fn token_dir_from(
    runtime: Option<OsString>,
    state: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, TokenFileError> {
    let absolute =
        |value: Option<OsString>| value.map(PathBuf::from).filter(|path| path.is_absolute());
    absolute(runtime)
        .or_else(|| absolute(state))
        .or_else(|| absolute(home).map(|home| home.join(".local/state")))
        .map(|dir| dir.join("deltascope"))
        .ok_or(TokenFileError::NoDirectory)
}

/// The written token file; removed (best effort) when dropped.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// Writes `token` to `dir/token-<port>` (see the module doc).
    pub fn write(dir: &Path, port: u16, token: &str) -> Result<TokenFile, TokenFileError> {
        private_dir(dir)?;
        let path = dir.join(format!("token-{port}"));
        let write_error = |path: &Path, source| TokenFileError::Write {
            path: path.to_owned(),
            source,
        };
        // A file left by a killed serve (or anything else at that name, a
        // symlink included) goes; `create_new` then never follows a link.
        match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(write_error(&path, error))
            }
            _ => {}
        }
        let mut handle = create_private(&path).map_err(|e| write_error(&path, e))?;
        // From here a failed write removes the file again (on drop).
        let file = TokenFile { path };
        handle
            .write_all(format!("{token}\n").as_bytes())
            .map_err(|e| write_error(&file.path, e))?;
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates `dir` (and its parents) if missing and makes it the user's
/// alone (0700); refuses anything that is not a directory.
#[cfg(unix)]
pub(crate) fn private_dir(dir: &Path) -> Result<(), TokenFileError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir_error = |source| TokenFileError::Directory {
        path: dir.to_owned(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(dir_error)?;
    let meta = std::fs::symlink_metadata(dir).map_err(dir_error)?;
    if !meta.is_dir() {
        return Err(TokenFileError::NotADirectory {
            path: dir.to_owned(),
        });
    }
    // Only its owner may change its mode: this also proves it is ours.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(dir_error)
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
pub(crate) fn private_dir(dir: &Path) -> Result<(), TokenFileError> {
    std::fs::create_dir_all(dir).map_err(|source| TokenFileError::Directory {
        path: dir.to_owned(),
        source,
    })
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "deltascope-token-file-{name}-{}-{}",
            std::process::id(),
            crate::auth::random_hex_256()
        ))
    }

    #[test]
    fn the_directory_follows_xdg_and_ignores_relative_values() {
        let os = |s: &str| Some(OsString::from(s));
        let dir = |r, s, h| token_dir_from(r, s, h).ok();
        assert_eq!(
            dir(os("/run/user/7"), os("/s"), os("/h")),
            Some(PathBuf::from("/run/user/7/deltascope"))
        );
        assert_eq!(
            dir(os("relative"), os("/s"), os("/h")),
            Some(PathBuf::from("/s/deltascope"))
        );
        assert_eq!(
            dir(None, os(""), os("/h")),
            Some(PathBuf::from("/h/.local/state/deltascope"))
        );
        assert_eq!(dir(None, None, os("h")), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_replaced_and_removed_on_drop() {
        use std::os::unix::fs::PermissionsExt;
        let base = scratch("write");
        let dir = base.join("deltascope");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A stale file (or a link planted at its name) is replaced, not followed.
        let elsewhere = base.join("elsewhere");
        std::fs::write(&elsewhere, "untouched").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("token-8080")).unwrap();

        let file = TokenFile::write(&dir, 8080, "the-token").unwrap();
        assert_eq!(file.path(), dir.join("token-8080"));
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "the-token\n");
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        let path = file.path().to_owned();
        drop(file);
        assert!(!path.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_directory_is_refused() {
        let base = scratch("link");
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("deltascope")).unwrap();
        assert!(matches!(
            TokenFile::write(&base.join("deltascope"), 1, "t"),
            Err(TokenFileError::NotADirectory { .. })
        ));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
