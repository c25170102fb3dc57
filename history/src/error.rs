//! What can go wrong with the recorded history, each with what it was
//! doing and where, worded for the command line and the page's status bar.

use std::path::PathBuf;

/// An error of the history database or of what it holds.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("--history {given:?}: {problem}")]
    BadTarget {
        given: String,
        problem: &'static str,
    },
    #[error("cannot create the history database's folder or file {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the history database {target}: {source}")]
    Open { target: String, source: sqlx::Error },
    #[error(
        "the history database {target} cannot be read ({detail}); deltascope left it as it is"
    )]
    Unreadable { target: String, detail: String },
    #[error("the history database {target} has schema version {found}, newer than this deltascope knows (version {known}); run a newer deltascope with it, or give another --history")]
    NewerSchema {
        target: String,
        found: i64,
        known: i64,
    },
    #[error("the history database failed while it {doing}: {source}")]
    Database {
        doing: &'static str,
        source: sqlx::Error,
    },
    #[error("a recorded version of {resource} {object} cannot be read back: {detail}")]
    Corrupt {
        resource: String,
        object: String,
        detail: String,
    },
}

impl HistoryError {
    /// A failed statement, with what it was for.
    pub(crate) fn database(doing: &'static str) -> impl FnOnce(sqlx::Error) -> HistoryError {
        move |source| HistoryError::Database { doing, source }
    }
}
