//! Running child processes for xtask: the workspace root, a PATH that finds
//! `cargo install`ed tools, and errors that say which step failed and what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[derive(Debug)]
pub enum XtaskError {
    Usage(String),
    /// A step ran and failed; `hint` says what the user can do about it.
    StepFailed {
        step: String,
        hint: String,
    },
    /// A program could not even be started.
    Spawn {
        program: String,
        source: std::io::Error,
    },
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl fmt::Display for XtaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XtaskError::Usage(message) => write!(f, "{message}"),
            XtaskError::StepFailed { step, hint } if hint.is_empty() => write!(f, "{step} failed"),
            XtaskError::StepFailed { step, hint } => write!(f, "{step} failed: {hint}"),
            XtaskError::Spawn { program, source } => {
                write!(
                    f,
                    "cannot run {program}: {source} (is it installed and on PATH?)"
                )
            }
            XtaskError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

pub type Result<T> = std::result::Result<T, XtaskError>;

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Where `cargo install` puts binaries.
pub fn cargo_bin_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(home).join("bin");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cargo").join("bin")
}

/// PATH with cargo's bin dir first, so freshly installed trunk/wasm-bindgen are found.
pub fn path_env() -> String {
    let current = std::env::var("PATH").unwrap_or_default();
    format!("{}:{current}", cargo_bin_dir().display())
}

/// A command rooted at the workspace with the extended PATH.
pub fn command(program: &str) -> Command {
    let mut command = Command::new(program);
    command.current_dir(root()).env("PATH", path_env());
    command
}

/// Runs a step with inherited stdio and fails with `hint` when it exits non-zero.
pub fn step(name: &str, command: &mut Command, hint: &str) -> Result<()> {
    println!("xtask: ▶ {name}");
    let started = Instant::now();
    let status = command.status().map_err(|source| XtaskError::Spawn {
        program: format!("{:?}", command.get_program()),
        source,
    })?;
    println!(
        "xtask: {} {name} ({:.1} s)",
        if status.success() { "✔" } else { "✘" },
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::StepFailed {
            step: name.to_string(),
            hint: hint.to_string(),
        })
    }
}

/// Output of a command's stdout+stderr, or None when it cannot be run or fails.
pub fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = command(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Some(text)
}
