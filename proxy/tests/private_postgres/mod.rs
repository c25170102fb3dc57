//! A PostgreSQL server of one test's own, for the tests that stop it and
//! start it again (a database outage) without disturbing any other test:
//! `initdb` into a fresh temporary directory from the binaries in
//! `DELTASCOPE_TEST_PG_BIN`, run as `DELTASCOPE_TEST_PG_USER` (PostgreSQL
//! refuses to run as root; `cargo xtask test` sets both), listening on
//! 127.0.0.1 on a free port, trusting local connections, not fsyncing.
//! Without the variables a test using it fails, naming the one missing.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A PostgreSQL server of this test's own; stopped and wiped when dropped.
pub struct PrivatePostgres {
    bin: PathBuf,
    dir: PathBuf,
    user: String,
    port: u16,
}

impl PrivatePostgres {
    /// `initdb`s a fresh data directory and starts the server.
    pub fn start() -> PrivatePostgres {
        let bin = PathBuf::from(std::env::var("DELTASCOPE_TEST_PG_BIN").unwrap_or_else(|_| {
            panic!(
                "DELTASCOPE_TEST_PG_BIN is not set: this test starts a real PostgreSQL of its own \
                 from that directory; `cargo xtask test` sets it"
            )
        }));
        let user = std::env::var("DELTASCOPE_TEST_PG_USER").unwrap_or_default();
        if user.is_empty() && running_as_root() {
            panic!(
                "DELTASCOPE_TEST_PG_USER is not set and this test runs as root, as which \
                 PostgreSQL refuses to run: set it to the user to run the server as \
                 (`cargo xtask test` sets it)"
            );
        }
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ds-pg-private-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if !user.is_empty() {
            let owned = Command::new("chown").arg(&user).arg(&dir).status().unwrap();
            assert!(owned.success(), "chown {user} {}", dir.display());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = PrivatePostgres {
            bin,
            dir,
            user,
            port,
        };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "--auth=trust",
                "--username",
                "deltascope",
                "--no-sync",
            ],
        );
        server.up();
        server
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// `program` from the server's binaries, as the run-as user.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = if self.user.is_empty() {
            Command::new(&path)
        } else {
            let mut command = Command::new("runuser");
            command.args(["-u", &self.user, "--"]).arg(&path);
            command
        };
        command.current_dir(&self.dir);
        command
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self.command(program).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Starts the server (again), on the same port.
    pub fn up(&self) {
        let data = self.data();
        let options = format!(
            "-p {} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port
        );
        let log = format!("{data}/server.log");
        self.run(
            "pg_ctl",
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
        );
    }

    /// Stops the server (`pg_ctl stop -m fast`), waiting until it is down.
    pub fn down(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    /// `postgres://deltascope@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://deltascope@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(Path::new(&self.dir));
    }
}

/// Whether this process runs as root (`id -u` says 0).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}
