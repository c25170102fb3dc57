//! The real `deltascope serve` binary in a process of its own, for the
//! tests where its stdout, its flags, its files or its signals are the point:
//! starting it (in a scratch runtime directory), reading the lines it prints
//! (the sign-in link, the token file's path).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{make_dist, scratch_dir};

/// The address and the link's path (`/?code=…`) of serve's
/// `deltascope: open http://ADDR/?code=…` line.
pub fn parse_open_line(line: &str) -> Option<(SocketAddr, String)> {
    let rest = line.strip_prefix("deltascope: open http://")?;
    let at = rest.find('/')?;
    Some((rest[..at].parse().ok()?, rest[at..].to_owned()))
}

/// `deltascope serve` in a process of its own (killed on drop), its stdout
/// read line by line.
pub struct Served {
    pub child: tokio::process::Child,
    pub addr: SocketAddr,
    /// The path of the link it printed first (`/?code=…`).
    pub link: String,
    /// The first line, as printed.
    pub first_line: String,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Served {
    /// Starts `command` (a `deltascope serve …`, perhaps behind `sh -c`) and
    /// waits for its first line, the sign-in link. Its stderr is left as the
    /// command set it (inherited unless piped or nulled).
    pub async fn start(mut command: tokio::process::Command) -> Served {
        use std::process::Stdio;
        use tokio::io::AsyncBufReadExt;
        let mut child = command
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("deltascope serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = tokio::io::BufReader::new(stdout).lines();
        let (sender, mut lines) = tokio::sync::mpsc::unbounded_channel();
        // Keep reading stdout, so the child never blocks on it.
        tokio::spawn(async move {
            while let Ok(Some(line)) = reader.next_line().await {
                let _ = sender.send(line);
            }
        });
        let first_line = tokio::time::timeout(Duration::from_secs(20), lines.recv())
            .await
            .expect("the URL within 20 s")
            .expect("a line on stdout");
        let (addr, link) = parse_open_line(&first_line)
            .unwrap_or_else(|| panic!("unexpected first line {first_line:?}"));
        Served {
            child,
            addr,
            link,
            first_line,
            lines,
        }
    }

    /// The next line on stdout, if one comes within `within`.
    pub async fn next_line(&mut self, within: Duration) -> Option<String> {
        tokio::time::timeout(within, self.lines.recv())
            .await
            .ok()
            .flatten()
    }
}

/// `deltascope serve --listen 127.0.0.1:0 --dist DIST ARGS`, the real binary,
/// with no token from the environment and a scratch `XDG_RUNTIME_DIR` (where
/// the file of a token it makes up goes); its stderr discarded unless the
/// caller pipes it.
pub fn serve_binary(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_deltascope"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--dist"])
        .arg(make_dist())
        .args(args)
        .env_remove("DELTASCOPE_TOKEN")
        .env("XDG_RUNTIME_DIR", scratch_dir())
        // no recorder unless a test asks for one (--history overrides this)
        .env("DELTASCOPE_HISTORY", "off")
        .stderr(std::process::Stdio::null());
    command
}

/// What serve prints after the link when it made up its token.
pub const TOKEN_FILE_LINE: &str =
    "deltascope: token for the sign-in form and Authorization: Bearer is in ";

/// The path serve printed for the token it made up (its next line).
pub async fn token_path(served: &mut Served) -> PathBuf {
    let line = served
        .next_line(Duration::from_secs(10))
        .await
        .expect("a second line, where the token is");
    let path = line
        .strip_prefix(TOKEN_FILE_LINE)
        .unwrap_or_else(|| panic!("unexpected second line {line:?}"));
    PathBuf::from(path)
}

/// The token serve made up, from the file it named.
pub async fn token_from_file(served: &mut Served) -> String {
    let path = token_path(served).await;
    let text = std::fs::read_to_string(&path).expect("the token file");
    text.trim_end_matches('\n').to_owned()
}

/// Starts `command` (a `deltascope serve …`, perhaps behind `sh -c`) and
/// returns it with the address it printed.
pub async fn started(mut command: tokio::process::Command) -> (tokio::process::Child, SocketAddr) {
    command.stderr(std::process::Stdio::null());
    let served = Served::start(command).await;
    (served.child, served.addr)
}
