//! Where the history is kept (`--history`): a SQLite file (the default,
//! under the user's state directory), a PostgreSQL server, or nowhere.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::HistoryError;

/// The value of `--history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryTarget {
    /// `--history off`: nothing recorded or read.
    Off,
    /// `--history sqlite:PATH`.
    Sqlite(PathBuf),
    /// `--history postgres://…` (or `postgresql://…`).
    Postgres(String),
}

impl FromStr for HistoryTarget {
    type Err = HistoryError;

    fn from_str(given: &str) -> Result<HistoryTarget, HistoryError> {
        let bad = |problem| HistoryError::BadTarget {
            given: given.to_string(),
            problem,
        };
        if given == "off" {
            Ok(HistoryTarget::Off)
        } else if let Some(path) = given.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(bad(
                    "sqlite: needs a file path, as in sqlite:/var/lib/deltascope/history.sqlite",
                ));
            }
            if path.contains('?') {
                return Err(bad("give the SQLite file's path alone, without options"));
            }
            Ok(HistoryTarget::Sqlite(PathBuf::from(path)))
        } else if given.starts_with("postgres://") || given.starts_with("postgresql://") {
            Ok(HistoryTarget::Postgres(given.to_string()))
        } else {
            Err(bad(
                "expected off, sqlite:PATH or postgres://USER@HOST/DATABASE",
            ))
        }
    }
}

impl std::fmt::Display for HistoryTarget {
    /// As the user may see it: a PostgreSQL URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryTarget::Off => f.write_str("off"),
            HistoryTarget::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            HistoryTarget::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// The default SQLite file: `$XDG_STATE_HOME/deltascope/history.sqlite`,
/// else `~/.local/state/deltascope/history.sqlite`; `None` with neither
/// variable set.
pub fn default_sqlite_path() -> Option<PathBuf> {
    state_dir_from(
        std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
    .map(|dir| dir.join("history.sqlite"))
}

fn state_dir_from(xdg_state: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    match xdg_state.filter(|dir| dir.is_absolute()) {
        Some(dir) => Some(dir.join("deltascope")),
        None => home.map(|home| home.join(".local/state/deltascope")),
    }
}

/// Creates the SQLite file's folder (0700) and the file itself (0600) if
/// they are missing; an existing file keeps its contents and is narrowed
/// to 0600.
pub(crate) fn prepare_sqlite_file(path: &Path) -> Result<(), HistoryError> {
    let failed = |source| HistoryError::Create {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        if !dir.exists() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(failed)?;
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(failed)?;
    }
    drop(file);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_parse_and_anything_else_is_refused() {
        assert_eq!("off".parse::<HistoryTarget>().unwrap(), HistoryTarget::Off);
        assert_eq!(
            "sqlite:/tmp/h.sqlite".parse::<HistoryTarget>().unwrap(),
            HistoryTarget::Sqlite("/tmp/h.sqlite".into())
        );
        assert_eq!(
            "sqlite:relative.db".parse::<HistoryTarget>().unwrap(),
            HistoryTarget::Sqlite("relative.db".into())
        );
        assert!(matches!(
            "postgresql://u@h/db".parse::<HistoryTarget>().unwrap(),
            HistoryTarget::Postgres(_)
        ));
        for bad in [
            "",
            "sqlite:",
            "mysql://x",
            "/tmp/h.sqlite",
            "sqlite:/a?mode=ro",
        ] {
            let error = bad.parse::<HistoryTarget>().unwrap_err();
            assert!(error.to_string().contains("--history"), "{error}");
        }
    }

    #[test]
    fn a_postgres_password_is_never_shown() {
        let target: HistoryTarget = "postgres://team:hunter2@db.example:5432/deltascope"
            .parse()
            .unwrap();
        let shown = target.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(shown, "postgres://team:***@db.example:5432/deltascope");
        assert_eq!(without_password("postgres://u@h/d"), "postgres://u@h/d");
    }

    #[test]
    fn the_state_directory_follows_xdg_then_home() {
        assert_eq!(
            state_dir_from(Some("/s".into()), Some("/h".into())),
            Some(PathBuf::from("/s/deltascope"))
        );
        assert_eq!(
            state_dir_from(Some("relative".into()), Some("/h".into())),
            Some(PathBuf::from("/h/.local/state/deltascope"))
        );
        assert_eq!(state_dir_from(None, None), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_and_its_folder_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ds-target-{}", std::process::id()));
        let path = dir.join("nested/history.sqlite");
        prepare_sqlite_file(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        std::fs::write(&path, b"kept").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        prepare_sqlite_file(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(mode(&path), 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
