//! What the tests' PostgreSQL server needs from the machine, and the pure
//! rules behind it: where Debian's server programs are (the newest
//! `/usr/lib/postgresql/VERSION/bin`), its settings and URL, which user runs
//! it (`deltascope-pg` under root, made when missing; else `nobody`), where
//! its data directory goes and how it is wiped, how a server a killed run
//! left is stopped, and running its programs as that user with output shown
//! only on failure.

use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::run::{root, Result, XtaskError};
use crate::tools;

/// The superuser role `initdb` makes; the tests connect as it.
pub const SUPERUSER: &str = "deltascope";
/// The system user the server runs as when xtask runs as root.
const RUN_AS: &str = "deltascope-pg";
/// Used when `RUN_AS` can neither be found nor created.
const FALLBACK_USER: &str = "nobody";
/// Where Debian's packages put each major version's programs.
const SERVER_ROOT: &str = "/usr/lib/postgresql";
/// The programs a server directory must hold.
const SERVER_PROGRAMS: [&str; 3] = ["postgres", "initdb", "pg_ctl"];
/// Unix socket paths longer than this do not fit `sockaddr_un` (108 bytes
/// with the terminating NUL); the server then listens on TCP only.
const MAX_SOCKET_PATH: usize = 107;
/// Attempts to start on a fresh free port (another process may take the
/// port between our probe and the server's bind).
pub(super) const START_ATTEMPTS: usize = 3;

/// The newest `/usr/lib/postgresql/VERSION/bin` holding `postgres`,
/// `initdb` and `pg_ctl`.
pub fn find_server_bin() -> Option<PathBuf> {
    let names: Vec<String> = std::fs::read_dir(SERVER_ROOT)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    let bin = |name: &str| Path::new(SERVER_ROOT).join(name).join("bin");
    let complete = |name: &&str| {
        SERVER_PROGRAMS
            .iter()
            .all(|program| bin(name).join(program).is_file())
    };
    newest_version(names.iter().map(String::as_str).filter(complete)).map(bin)
}

/// `15` → (15, 0), `9.6` → (9, 6); anything else (`common`, `15beta`) is
/// no version.
fn version_key(name: &str) -> Option<(u32, u32)> {
    let mut parts = name.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = match parts.next() {
        Some(minor) => minor.parse().ok()?,
        None => 0,
    };
    match parts.next() {
        Some(_) => None,
        None => Some((major, minor)),
    }
}

/// The highest version among directory names, compared as numbers.
fn newest_version<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .filter_map(|name| Some((version_key(name)?, name)))
        .max_by_key(|(key, _)| *key)
        .map(|(_, name)| name)
}

/// The superuser's URL for the server on `port` (its `postgres` database).
pub fn superuser_url(port: u16) -> String {
    format!("postgres://{SUPERUSER}@127.0.0.1:{port}/postgres")
}

/// A string as a postgresql.conf value.
fn conf_string(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// The server's settings (`deltascope.conf`): loopback only, `port`, the
/// unix socket in `socket_dir` (none when `None`), and speed over
/// durability — the data is thrown away after the run.
pub(super) fn server_conf(port: u16, socket_dir: Option<&Path>) -> String {
    let sockets = socket_dir
        .map(|dir| conf_string(&dir.to_string_lossy()))
        .unwrap_or_else(|| "''".to_string());
    format!(
        "# written by cargo xtask at every start; the tests' server, thrown away\n\
         listen_addresses = '127.0.0.1'\n\
         port = {port}\n\
         unix_socket_directories = {sockets}\n\
         max_connections = 200\n\
         fsync = off\n\
         synchronous_commit = off\n\
         full_page_writes = off\n"
    )
}

/// Where the socket of a server on `port` would be, if it fits.
pub(super) fn socket_dir_for(data: &Path, port: u16) -> Option<&Path> {
    let socket = data.join(format!(".s.PGSQL.{port}"));
    (socket.as_os_str().len() <= MAX_SOCKET_PATH).then_some(data)
}

/// The data directories a run may use, the preferred first: under
/// `target/`, then under the temporary directory (named after the
/// workspace, so two checkouts do not share one) for a run-as user who
/// cannot reach `target/` (a checkout under `/root`).
pub(super) fn base_candidates() -> Vec<PathBuf> {
    let workspace = root();
    vec![
        workspace.join("target/test-postgres"),
        std::env::temp_dir().join(format!(
            "deltascope-test-postgres-{:016x}",
            fnv1a(workspace.to_string_lossy().as_bytes())
        )),
    ]
}

/// FNV-1a: a hash that is the same in every build, for a stable path.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

pub(super) fn failed(step: &str, hint: impl Into<String>) -> XtaskError {
    XtaskError::StepFailed {
        step: step.to_string(),
        hint: hint.into(),
    }
}

pub(super) fn io_error(what: String) -> impl FnOnce(std::io::Error) -> XtaskError {
    move |source| XtaskError::Io { what, source }
}

/// The last `n` lines of a program's output or a log, for an error.
pub(super) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn output_text(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

/// A user's uid and gid, from `id`.
fn ids_of(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| {
        let output = Command::new("id").args([flag, user]).output().ok()?;
        if !output.status.success() {
            return None;
        }
        String::from_utf8_lossy(&output.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// Who the server runs as: `None` (this user) unless xtask runs as root.
pub(super) fn run_as_user() -> Result<Option<String>> {
    if !tools::is_root() {
        return Ok(None);
    }
    if ids_of(RUN_AS).is_some() {
        return Ok(Some(RUN_AS.to_string()));
    }
    let created = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--user-group",
            RUN_AS,
        ])
        .status()
        .is_ok_and(|status| status.success());
    if created && ids_of(RUN_AS).is_some() {
        println!("xtask: created the system user {RUN_AS} to run the tests' PostgreSQL server");
        return Ok(Some(RUN_AS.to_string()));
    }
    if ids_of(FALLBACK_USER).is_some() {
        println!(
            "xtask: could not create the user {RUN_AS}; running PostgreSQL as {FALLBACK_USER}"
        );
        return Ok(Some(FALLBACK_USER.to_string()));
    }
    Err(failed(
        "choosing a user to run PostgreSQL as",
        format!("PostgreSQL refuses to run as root, `useradd {RUN_AS}` failed and there is no user {FALLBACK_USER}"),
    ))
}

/// `program` run as `user` (through `runuser`), or as ourselves.
pub(super) fn as_user(user: Option<&str>, program: &Path) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Runs a step whose output is shown only when it fails.
pub(super) fn quiet_step(name: &str, command: &mut Command, hint: &str) -> Result<Output> {
    say(&format!("xtask: ▶ {name}"));
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|source| XtaskError::Spawn {
            program: format!("{:?}", command.get_program()),
            source,
        })?;
    let mark = if output.status.success() {
        "✔"
    } else {
        "✘"
    };
    say(&format!(
        "xtask: {mark} {name} ({:.1} s)",
        started.elapsed().as_secs_f64()
    ));
    if output.status.success() {
        Ok(output)
    } else {
        Err(failed(
            name,
            format!("{hint}\n{}", tail(&output_text(&output), 20)),
        ))
    }
}

/// A free loopback port (free when asked: the server binds it a moment
/// later, hence `START_ATTEMPTS`).
pub(super) fn free_port() -> Result<u16> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(io_error("finding a free loopback port".to_string()))
}

/// Is the postmaster `pid` (from a `postmaster.pid`) still running?
fn is_postgres(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| matches!(comm.trim(), "postgres" | "postmaster"))
}

/// Stops the server a killed run may have left in `data`: `pg_ctl stop`
/// as `user`, else its postmaster killed by pid.
pub(super) fn stop_leftover(bin: &Path, data: &Path, user: Option<&str>) -> Result<()> {
    let pid_file = data.join("postmaster.pid");
    let Ok(contents) = std::fs::read_to_string(&pid_file) else {
        return Ok(());
    };
    let pid = contents
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if pid.is_empty() || !is_postgres(&pid) {
        return Ok(()); // a stale pid file: the wipe removes it
    }
    println!(
        "xtask: stopping the PostgreSQL server a previous run left in {} (pid {pid})",
        data.display()
    );
    let stopped = as_user(user, &bin.join("pg_ctl"))
        .arg("-D")
        .arg(data)
        .args(["-m", "immediate", "-w", "-t", "30", "stop"])
        .current_dir(data)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|output| output.status.success());
    if stopped {
        return Ok(());
    }
    let _ = Command::new("kill").args(["-KILL", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_postgres(&pid) {
        if Instant::now() > deadline {
            return Err(failed(
                "stopping a leftover PostgreSQL server",
                format!(
                    "pid {pid} (data directory {}) does not stop; kill it by hand",
                    data.display()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Makes `base` (kept: `target/` may not be ours to write) owned by
/// `user` and empties it; `false` when `user` cannot write there (a parent
/// it may not enter), so the next candidate is tried.
pub(super) fn fresh_base(base: &Path, user: Option<&str>) -> Result<bool> {
    if std::fs::create_dir_all(base).is_err() {
        return Ok(false);
    }
    if let Some(user) = user {
        let (uid, gid) = ids_of(user)
            .ok_or_else(|| failed("looking up the PostgreSQL user", format!("no user {user}")))?;
        std::os::unix::fs::chown(base, Some(uid), Some(gid))
            .map_err(io_error(format!("giving {} to {user}", base.display())))?;
    }
    let writable = as_user(user, Path::new("test"))
        .arg("-w")
        .arg(base)
        .status()
        .is_ok_and(|status| status.success());
    if !writable {
        return Ok(false);
    }
    let wipe = format!(
        "wiping the old test PostgreSQL directory {}",
        base.display()
    );
    for entry in std::fs::read_dir(base).map_err(io_error(wipe.clone()))? {
        let path = entry.map_err(io_error(wipe.clone()))?.path();
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(io_error(format!("{wipe} ({})", path.display())))?;
    }
    Ok(true)
}

/// A line on stdout that cannot panic: a closed pipe while the server is
/// being stopped on the way out must not stop the stopping.
pub(super) fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

pub(super) fn append(path: &Path, text: &str) -> Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(io_error(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_complete_version_directory_wins() {
        assert_eq!(version_key("15"), Some((15, 0)));
        assert_eq!(version_key("9.6"), Some((9, 6)));
        assert_eq!(version_key("common"), None);
        assert_eq!(version_key("15beta1"), None);
        assert_eq!(version_key("1.2.3"), None);
        let names = ["9.6", "15", "common", "13", "16"];
        assert_eq!(newest_version(names.into_iter()), Some("16"));
        // numbers, not strings: 10 is newer than 9.6
        assert_eq!(newest_version(["9.6", "10"].into_iter()), Some("10"));
        assert_eq!(newest_version(["lib"].into_iter()), None);
    }

    #[test]
    fn the_url_names_the_superuser_on_loopback() {
        assert_eq!(
            superuser_url(54321),
            "postgres://deltascope@127.0.0.1:54321/postgres"
        );
    }

    #[test]
    fn the_settings_listen_on_loopback_only_and_quote_paths() {
        let conf = server_conf(5433, Some(Path::new("/tmp/it's/data")));
        assert!(conf.contains("listen_addresses = '127.0.0.1'\n"));
        assert!(conf.contains("port = 5433\n"));
        assert!(conf.contains("unix_socket_directories = '/tmp/it''s/data'\n"));
        assert!(conf.contains("fsync = off\n"));
        let tcp_only = server_conf(5433, None);
        assert!(tcp_only.contains("unix_socket_directories = ''\n"));
    }

    #[test]
    fn a_socket_path_too_long_for_sockaddr_un_is_not_used() {
        let short = Path::new("/work/target/test-postgres/data");
        assert_eq!(socket_dir_for(short, 5432), Some(short));
        let long = PathBuf::from(format!("/{}", "d".repeat(100)));
        assert_eq!(socket_dir_for(&long, 5432), None);
    }

    #[test]
    fn the_fallback_directory_is_stable_per_workspace() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let candidates = base_candidates();
        assert_eq!(candidates, base_candidates());
        assert!(candidates[0].ends_with("target/test-postgres"));
    }
}
