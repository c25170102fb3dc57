//! A private PostgreSQL server for the test run ([`Server`]): `cargo xtask
//! test` starts one before the native tests and stops it after them, also
//! when they fail; the hidden `cargo xtask postgres [--check]` starts one
//! on its own, to try it (see [`command`]).
//!
//! Its programs are Debian's ([`server_bin`]: the newest installed
//! version, `postgresql` installed through `tools::apt_install` when none is).
//!
//! The server is throwaway and local: its data directory is wiped and made
//! anew by `initdb` at every start (`target/test-postgres/data`, or a
//! directory under the system's temporary one when the run-as user cannot
//! reach `target/`), it listens on 127.0.0.1 only, on a free port, with its
//! unix socket inside the data directory, trusts every local connection
//! (`--auth=trust`) and does not fsync. Its settings are written into the
//! data directory (`deltascope.conf`, included by `postgresql.conf`), so a
//! test that stops it with `pg_ctl stop` starts it again, on the same port,
//! with a bare `pg_ctl -D DATA -l DATA/server.log -w start`.
//!
//! PostgreSQL refuses to run as root: run as root (CI), xtask runs it as the
//! system user `deltascope-pg` (created when missing; `nobody` when it
//! cannot be), through `runuser -u USER --`; run as anyone else, as that
//! user. Why the env vars it exports are what they are: [`Server::env`].
//!
//! Stopping: [`Server::stop`] (or dropping the [`Server`]: an early return
//! or a panic); a guard process in a session of its own runs `pg_ctl stop`
//! when xtask dies without that (Ctrl-C, a kill), as it sees its stdin
//! close; and a start first stops a server a killed run left behind.
//!
//! `host` has what it needs from the machine (programs, users,
//! directories) and the pure rules (versions, settings, the URL).

mod host;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::run::{Result, XtaskError};
use crate::tools;

use host::{
    append, as_user, base_candidates, failed, find_server_bin, free_port, fresh_base, io_error,
    quiet_step, run_as_user, say, server_conf, socket_dir_for, stop_leftover, superuser_url, tail,
    START_ATTEMPTS, SUPERUSER,
};

/// The directory of the PostgreSQL server's programs (`postgres`,
/// `initdb`, `pg_ctl`), installing Debian's `postgresql` when no
/// `/usr/lib/postgresql/*/bin` has them.
pub fn server_bin() -> Result<PathBuf> {
    if let Some(bin) = find_server_bin() {
        return Ok(bin);
    }
    if !tools::is_root() {
        return Err(XtaskError::StepFailed {
            step: "installing the PostgreSQL server (postgresql)".into(),
            hint: "apt-get needs root; run `sudo apt-get install -y postgresql` and retry".into(),
        });
    }
    let started = Instant::now();
    tools::apt_install(
        &["postgresql"],
        "the PostgreSQL server could not be installed from Debian's packages",
    )?;
    let bin = find_server_bin().ok_or_else(|| XtaskError::StepFailed {
        step: "finding the PostgreSQL server after installing it".into(),
        hint: "no /usr/lib/postgresql/*/bin holds postgres, initdb and pg_ctl".into(),
    })?;
    println!(
        "xtask: PostgreSQL server installed in {} ({:.1} s)",
        bin.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(bin)
}

/// A running private PostgreSQL server; stopped by [`Server::stop`] or
/// when dropped.
pub struct Server {
    bin: PathBuf,
    data: PathBuf,
    user: Option<String>,
    port: u16,
    /// Runs `pg_ctl stop` when our end of its stdin closes.
    guard: Option<Child>,
    running: bool,
}

impl Server {
    /// Stops a leftover server, wipes the data directory, `initdb`s it and
    /// starts the server; every failure names its step.
    pub fn start(bin: &Path) -> Result<Server> {
        let started = Instant::now();
        let user = run_as_user()?;
        let candidates = base_candidates();
        for base in &candidates {
            stop_leftover(bin, &base.join("data"), user.as_deref())?;
        }
        let mut base = None;
        for candidate in &candidates {
            if fresh_base(candidate, user.as_deref())? {
                base = Some(candidate.clone());
                break;
            }
        }
        let base = base.ok_or_else(|| {
            failed(
                "preparing the test PostgreSQL data directory",
                format!(
                    "the user {} cannot write to any of {candidates:?}",
                    user.as_deref().unwrap_or("running xtask")
                ),
            )
        })?;
        let data = base.join("data");
        let mut initdb = as_user(user.as_deref(), &bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["--auth=trust", "--username", SUPERUSER])
            .args(["--encoding=UTF8", "--locale=C", "--no-sync"])
            .current_dir(&base);
        quiet_step(
            "initdb (the tests' PostgreSQL)",
            &mut initdb,
            "initdb could not create the data directory",
        )?;
        append(
            &data.join("postgresql.conf"),
            "\ninclude 'deltascope.conf'\n",
        )?;
        let mut server = Server {
            bin: bin.to_path_buf(),
            data,
            user,
            port: 0,
            guard: None,
            running: false,
        };
        server.start_on_a_free_port()?;
        server.guard = server.spawn_guard();
        println!(
            "xtask: PostgreSQL ready at {} ({:.1} s from the wipe)",
            server.url(),
            started.elapsed().as_secs_f64()
        );
        Ok(server)
    }

    fn start_on_a_free_port(&mut self) -> Result<()> {
        let log = self.data.join("server.log");
        for attempt in 1..=START_ATTEMPTS {
            self.port = free_port()?;
            let conf = server_conf(self.port, socket_dir_for(&self.data, self.port));
            std::fs::write(self.data.join("deltascope.conf"), conf).map_err(io_error(format!(
                "writing {}",
                self.data.join("deltascope.conf").display()
            )))?;
            let mut pg_ctl = self.pg_ctl();
            pg_ctl.arg("-l").arg(&log).args(["-w", "-t", "60", "start"]);
            let result = quiet_step(
                &format!("pg_ctl start (port {})", self.port),
                &mut pg_ctl,
                "the PostgreSQL server did not start",
            );
            match result {
                Ok(_) => {
                    self.running = true;
                    return Ok(());
                }
                Err(e) => {
                    // a postmaster still starting when pg_ctl gave up
                    let _ = self
                        .pg_ctl()
                        .args(["-m", "immediate", "-w", "stop"])
                        .stdin(Stdio::null())
                        .output();
                    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
                    let port_taken =
                        log_text.contains("could not bind") || log_text.contains("already in use");
                    if !(port_taken && attempt < START_ATTEMPTS) {
                        return Err(failed(
                            "starting the tests' PostgreSQL server",
                            format!("{e}\n{}:\n{}", log.display(), tail(&log_text, 20)),
                        ));
                    }
                }
            }
        }
        Err(failed(
            "starting the tests' PostgreSQL server",
            "no free port",
        ))
    }

    /// `pg_ctl -D DATA`, as the server's user, in the data directory.
    fn pg_ctl(&self) -> Command {
        let mut command = as_user(self.user.as_deref(), &self.bin.join("pg_ctl"));
        command.arg("-D").arg(&self.data).current_dir(&self.data);
        command
    }

    /// A process in a session of its own (so Ctrl-C does not reach it)
    /// that waits for its stdin to close — xtask exited, however — and
    /// then stops the server. `None` when `setsid` cannot be run; a next
    /// run then stops what this one leaves.
    fn spawn_guard(&self) -> Option<Child> {
        let pg_ctl = self.pg_ctl();
        let mut guard = Command::new("setsid");
        guard
            .args(["sh", "-c", "read -r _; exec \"$@\"", "sh"])
            .arg(pg_ctl.get_program())
            .args(pg_ctl.get_args())
            .args(["-m", "fast", "-w", "stop"])
            .current_dir(&self.data)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        guard.spawn().ok()
    }

    pub fn url(&self) -> String {
        superuser_url(self.port)
    }

    /// What the test processes are given: the superuser URL (tests make
    /// their own databases in it) and what a test needs to stop and start
    /// the server itself — the `pg_ctl` directory, the data directory and
    /// the user to run it as (empty: the test's own).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DELTASCOPE_TEST_POSTGRES", self.url()),
            (
                "DELTASCOPE_TEST_PG_BIN",
                self.bin.to_string_lossy().into_owned(),
            ),
            (
                "DELTASCOPE_TEST_PG_DATA",
                self.data.to_string_lossy().into_owned(),
            ),
            (
                "DELTASCOPE_TEST_PG_USER",
                self.user.clone().unwrap_or_default(),
            ),
        ]
    }

    /// Is the server running now (a test may have stopped it)?
    fn is_running(&self) -> bool {
        let mut status = self.pg_ctl();
        status
            .arg("status")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        status.status().is_ok_and(|s| s.success())
    }

    /// Stops the server (fast shutdown: sessions are ended) if it runs,
    /// then the guard — kept when the stop fails, to try again as xtask
    /// exits. A server a test stopped and left stopped is fine.
    pub fn stop(&mut self) -> Result<()> {
        if self.running {
            if self.is_running() {
                let mut stop = self.pg_ctl();
                stop.args(["-m", "fast", "-w", "-t", "60", "stop"]);
                quiet_step(
                    "pg_ctl stop (the tests' PostgreSQL)",
                    &mut stop,
                    "the PostgreSQL server did not stop; see server.log in its data directory",
                )?;
            } else {
                say("xtask: the tests' PostgreSQL server was already stopped");
            }
            self.running = false;
        }
        if let Some(mut guard) = self.guard.take() {
            let _ = guard.kill();
            let _ = guard.wait();
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            let _ = writeln!(std::io::stderr(), "xtask: {e}");
        }
    }
}

/// `cargo xtask postgres [--check]` (not in the usage text: a tool to try
/// the tests' server by hand). Without `--check`: start it, print the
/// environment the tests get, stop it when Enter is pressed (or stdin
/// closes, or Ctrl-C). With `--check`: start it, run `select 1` and make a
/// database as the superuser, stop and start it with `pg_ctl` as a fault
/// test would, query it again and stop it.
pub fn command(args: &[String]) -> Result<()> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            return Err(XtaskError::Usage(
                "usage: cargo xtask postgres [--check]".to_string(),
            ))
        }
    };
    let bin = server_bin()?;
    let mut server = Server::start(&bin)?;
    for (name, value) in server.env() {
        println!("{name}={value}");
    }
    if check {
        check_server(&server)?;
    } else {
        println!("xtask: PostgreSQL runs until you press Enter (Ctrl-C stops it too)");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
    server.stop()
}

/// What `--check` proves: the URL works for the superuser, and the
/// server stops and starts as a fault test would drive it.
fn check_server(server: &Server) -> Result<()> {
    let psql = |sql: &str| {
        let program = server.bin.join("psql");
        let program = if program.is_file() {
            program
        } else {
            PathBuf::from("psql")
        };
        let mut psql = Command::new(program);
        psql.arg(server.url())
            .args(["-v", "ON_ERROR_STOP=1", "-tAc", sql]);
        psql
    };
    let out = quiet_step(
        "psql select 1",
        &mut psql("select 1"),
        "the server answers no query",
    )?;
    if String::from_utf8_lossy(&out.stdout).trim() != "1" {
        return Err(failed("psql select 1", "the answer was not 1"));
    }
    quiet_step(
        "psql create database (as the superuser)",
        &mut psql("create database xtask_check"),
        "the superuser cannot make a database",
    )?;
    // the documented way a test stops and starts it
    let mut stop = server.pg_ctl();
    stop.args(["-m", "fast", "-w", "stop"]);
    quiet_step(
        "pg_ctl stop (as a test would)",
        &mut stop,
        "pg_ctl stop failed",
    )?;
    let down = psql("select 1")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if down {
        return Err(failed("checking the server is down", "it still answers"));
    }
    let mut start = server.pg_ctl();
    start
        .arg("-l")
        .arg(server.data.join("server.log"))
        .args(["-w", "start"]);
    quiet_step(
        "pg_ctl start (as a test would)",
        &mut start,
        "pg_ctl start failed",
    )?;
    let out = quiet_step(
        "psql after the restart",
        &mut psql("select count(*) from pg_database where datname = 'xtask_check'"),
        "the restarted server answers no query",
    )?;
    if String::from_utf8_lossy(&out.stdout).trim() != "1" {
        return Err(failed(
            "psql after the restart",
            "the database made before is gone",
        ));
    }
    println!("xtask: ✔ the tests' PostgreSQL works, and stops and starts with pg_ctl");
    Ok(())
}
