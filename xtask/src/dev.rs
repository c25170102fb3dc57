//! `cargo xtask dev [--upstream URL] [--port P] [--serve-port S]`: the
//! development loop in one command. It runs `deltascope serve` (the demo, or
//! in front of `kubectl proxy` with `--upstream`) and the pinned `trunk
//! serve` together: trunk rebuilds the page on every source change and
//! reloads it, and proxies the API, `/_sim` and the page's channel to serve,
//! exactly as the repository's `Trunk.toml` says (only its two ports are
//! replaced, in a copy under `target/dev/`). Once trunk listens it asks serve
//! for a sign-in link (with the token it gave serve) and prints it on trunk's
//! port, `deltascope dev: open http://127.0.0.1:P/_deltascope/signin?code=C`:
//! a one-time code that signs one browser in, once, within 5 minutes. A link
//! the sign-in page has serve print later is printed the same way. It stops
//! both on Ctrl-C or when either ends.
//!
//! The token is `DELTASCOPE_TOKEN` when that is set (the tests call serve as
//! a CLI client with it), else a random one; serve gets it in its environment.
//!
//! The session cookie outlives trunk's reloads (serve keeps running), so a
//! rebuilt page comes back signed in and lists again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::demo::build_binary;
use crate::run::{command, root, Result, XtaskError};
use crate::tools::{self, Needs};

/// The ports of the repository's `Trunk.toml`: trunk's own, and serve's that
/// its proxy rules name.
const TRUNK_PORT: u16 = 8081;
const SERVE_PORT: u16 = 8080;

struct DevArgs {
    upstream: Option<String>,
    port: u16,
    serve_port: u16,
}

fn parse(args: &[String]) -> Result<DevArgs> {
    let mut parsed = DevArgs {
        upstream: None,
        port: TRUNK_PORT,
        serve_port: SERVE_PORT,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |flag: &str| {
            iter.next()
                .cloned()
                .ok_or_else(|| XtaskError::Usage(format!("dev: {flag} needs a value")))
        };
        let port = |text: String, flag: &str| {
            text.parse::<u16>().map_err(|_| {
                XtaskError::Usage(format!("dev: {flag} takes a port number, not {text:?}"))
            })
        };
        match arg.as_str() {
            "--upstream" => parsed.upstream = Some(value("--upstream")?),
            "--port" => parsed.port = port(value("--port")?, "--port")?,
            "--serve-port" => parsed.serve_port = port(value("--serve-port")?, "--serve-port")?,
            other => {
                return Err(XtaskError::Usage(format!(
                    "dev: unknown argument {other:?} (dev [--upstream URL] [--port P] [--serve-port S])"
                )))
            }
        }
    }
    Ok(parsed)
}

/// The repository's `Trunk.toml` with trunk's and serve's ports replaced and
/// its paths made absolute (it is read from `target/dev/`).
pub fn trunk_config(repo_config: &str, root: &Path, port: u16, serve_port: u16) -> Result<String> {
    let mut text = repo_config.to_string();
    let replace = |text: &mut String, from: &str, to: &str| -> Result<()> {
        if !text.contains(from) {
            return Err(XtaskError::Usage(format!(
                "dev: Trunk.toml no longer contains {from:?}; update xtask/src/dev.rs with it"
            )));
        }
        *text = text.replace(from, to);
        Ok(())
    };
    replace(
        &mut text,
        &format!("127.0.0.1:{SERVE_PORT}/"),
        &format!("127.0.0.1:{serve_port}/"),
    )?;
    replace(
        &mut text,
        &format!("port = {TRUNK_PORT}"),
        &format!("port = {port}"),
    )?;
    replace(
        &mut text,
        "target = \"index.html\"",
        &format!("target = \"{}\"", root.join("index.html").display()),
    )?;
    replace(
        &mut text,
        "dist = \"dist\"",
        &format!("dist = \"{}\"", root.join("target/dev/dist").display()),
    )?;
    Ok(text)
}

pub fn dev(args: &[String]) -> Result<()> {
    let args = parse(args)?;
    tools::setup(Needs::Build)?;
    // serve answers `/` from trunk's own output (the page is built by trunk serve).
    build_binary(false)?;

    let dir = root().join("target/dev");
    let config = write_trunk_config(&dir, &args)?;
    let token = match std::env::var("DELTASCOPE_TOKEN") {
        Ok(token) if !token.is_empty() => token,
        _ => random_token()?,
    };
    let mut serve = start_serve(&args, &dir, &token)?;
    let mut trunk = start_trunk(&config)?;
    // The link serve printed at its start may have expired while trunk built.
    let code = new_sign_in_code(args.serve_port, &token)?;
    print_dev_link(args.port, &code);
    println!(
        "xtask: trunk rebuilds and reloads the page on every change to src/, static/, index.html; \
         Ctrl-C stops both"
    );
    watch(&mut serve, &mut trunk, args.port)
}

/// Writes `DIR/Trunk.toml`, the repository's on the ports `args` gives
/// ([`trunk_config`]); returns its path.
fn write_trunk_config(dir: &Path, args: &DevArgs) -> Result<PathBuf> {
    let io = |what: String| move |source| XtaskError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let repo_config = std::fs::read_to_string(root().join("Trunk.toml"))
        .map_err(io("reading Trunk.toml".into()))?;
    let config = dir.join("Trunk.toml");
    std::fs::write(
        &config,
        trunk_config(&repo_config, &root(), args.port, args.serve_port)?,
    )
    .map_err(io(format!("writing {}", config.display())))?;
    Ok(config)
}

/// Starts `deltascope serve` (the demo, or in front of `--upstream`) with
/// `token`, allowing trunk's port, and waits for its sign-in line.
fn start_serve(args: &DevArgs, dir: &Path, token: &str) -> Result<Children> {
    let binary = root().join("target/debug/deltascope");
    let mut serve = command(&binary.to_string_lossy());
    serve
        .arg("serve")
        .args(["--listen", &format!("127.0.0.1:{}", args.serve_port)])
        .args(["--allow-host", &format!("127.0.0.1:{}", args.port)])
        .args(["--allow-host", &format!("localhost:{}", args.port)])
        .arg("--dist")
        .arg(dir.join("dist"))
        .env("DELTASCOPE_TOKEN", token)
        .stdout(Stdio::piped());
    match &args.upstream {
        Some(url) => serve.args(["--upstream", url]),
        None => serve.arg("--demo"),
    };
    let mut serve = Children::spawn(serve, "deltascope serve")?;
    serve.wait_for_line("deltascope: open ", Duration::from_secs(30))?;
    Ok(serve)
}

/// Starts `trunk serve` with `config` and waits until it listens (after
/// its first build).
fn start_trunk(config: &Path) -> Result<Children> {
    let mut trunk = command("trunk");
    trunk
        .arg("serve")
        .arg("--config")
        .arg(config)
        // trunk reads watch paths relative to its config file: give them whole.
        .args(
            ["src", "index.html", "static", "channel/src"]
                .iter()
                .flat_map(|p| ["--watch".to_string(), root().join(p).display().to_string()]),
        )
        .env("TRUNK_SKIP_VERSION_CHECK", "true")
        .env("NO_COLOR", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut trunk = Children::spawn(trunk, "trunk serve")?;
    trunk.wait_for_line("server listening at", Duration::from_secs(600))?;
    Ok(trunk)
}

/// Runs until serve or trunk ends, printing on trunk's `port` each link
/// serve prints. Either ending (or Ctrl-C, which reaches both) ends the
/// loop; the guards stop the other.
fn watch(serve: &mut Children, trunk: &mut Children, port: u16) -> Result<()> {
    loop {
        std::thread::sleep(Duration::from_millis(300));
        // A link serve printed for its sign-in page's button, on trunk's port.
        while let Ok(line) = serve.lines.try_recv() {
            if let Some(code) = printed_code(&line) {
                print_dev_link(port, code);
            }
        }
        for child in [&mut *serve, &mut *trunk] {
            if let Some(status) = child.ended() {
                return Err(XtaskError::StepFailed {
                    step: child.name.clone(),
                    hint: format!("it ended ({status}); the other was stopped"),
                });
            }
        }
    }
}

/// `deltascope dev: open …`: a sign-in link through trunk's port.
fn print_dev_link(port: u16, code: &str) {
    println!("deltascope dev: open http://127.0.0.1:{port}/_deltascope/signin?code={code}");
}

/// The code of a `deltascope: open http://ADDR/?code=C` line serve printed.
fn printed_code(line: &str) -> Option<&str> {
    let (_, url) = line.split_once("deltascope: open ")?;
    code_in(url)
}

/// The hex code after `?code=` in `text`.
fn code_in(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("?code=")?;
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// A new sign-in code from serve: `POST /_deltascope/sign-in-link` with the token.
fn new_sign_in_code(serve_port: u16, token: &str) -> Result<String> {
    let what = format!("asking deltascope serve on port {serve_port} for a sign-in link");
    let io = |source| XtaskError::Io {
        what: what.clone(),
        source,
    };
    let mut stream = TcpStream::connect(("127.0.0.1", serve_port)).map_err(io)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(io)?;
    let request = format!(
        "POST /_deltascope/sign-in-link HTTP/1.1\r\nHost: 127.0.0.1:{serve_port}\r\n\
         Authorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(io)?;
    let ok = response.starts_with("HTTP/1.1 200 ");
    match code_in(&response) {
        Some(code) if ok => Ok(code.to_string()),
        _ => Err(XtaskError::StepFailed {
            step: what,
            hint: format!(
                "it answered {:?}",
                response.lines().next().unwrap_or("nothing")
            ),
        }),
    }
}

/// 256 random bits from the kernel, hex: the session token, passed to serve
/// in its environment so `ps` does not show it.
fn random_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    let mut file = std::fs::File::open("/dev/urandom").map_err(|source| XtaskError::Io {
        what: "opening /dev/urandom".into(),
        source,
    })?;
    std::io::Read::read_exact(&mut file, &mut bytes).map_err(|source| XtaskError::Io {
        what: "reading /dev/urandom".into(),
        source,
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A child killed when dropped, whose stdout is echoed line by line.
struct Children {
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Children {
    fn spawn(mut command: std::process::Command, name: &str) -> Result<Children> {
        let mut child = command.spawn().map_err(|source| XtaskError::Spawn {
            program: name.to_string(),
            source,
        })?;
        let (sender, lines) = mpsc::channel();
        let echo = |output: Box<dyn std::io::Read + Send>, sender: mpsc::Sender<String>| {
            let prefix = name.to_string();
            std::thread::spawn(move || {
                for line in BufReader::new(output)
                    .lines()
                    .map_while(std::result::Result::ok)
                {
                    println!("{prefix}: {line}");
                    let _ = sender.send(line);
                }
            });
        };
        if let Some(stdout) = child.stdout.take() {
            echo(Box::new(stdout), sender.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            echo(Box::new(stderr), sender);
        }
        Ok(Children {
            name: name.to_string(),
            child,
            lines,
        })
    }

    fn wait_for_line(&mut self, marker: &str, within: Duration) -> Result<String> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(500)))
            {
                Ok(line) if line.contains(marker) => return Ok(line),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {
                    if let Some(status) = self.ended() {
                        return Err(XtaskError::StepFailed {
                            step: self.name.clone(),
                            hint: format!("it ended ({status}) before printing {marker:?}"),
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(200));
                    let how = self
                        .ended()
                        .map_or("closed its output".to_string(), |s| format!("ended ({s})"));
                    return Err(XtaskError::StepFailed {
                        step: self.name.clone(),
                        hint: format!("it {how} before printing {marker:?}"),
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(XtaskError::StepFailed {
                        step: self.name.clone(),
                        hint: format!("no {marker:?} line within {} s", within.as_secs()),
                    })
                }
            }
        }
    }

    fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_config_becomes_one_on_other_ports() {
        let repo = std::fs::read_to_string(root().join("Trunk.toml")).unwrap();
        let config = trunk_config(&repo, Path::new("/r"), 9001, 9000).unwrap();
        assert!(config.contains("port = 9001"));
        assert!(config.contains("target = \"/r/index.html\""));
        assert!(config.contains("dist = \"/r/target/dev/dist\""));
        assert!(!config.contains("127.0.0.1:8080/"), "{config}");
        for path in [
            "/api\"",
            "/apis\"",
            "/version\"",
            "/_sim\"",
            "/_deltascope\"",
        ] {
            assert!(
                config.contains(&format!("http://127.0.0.1:9000{path}")),
                "{path} is proxied to serve: {config}"
            );
        }
        let broken = trunk_config("port = 1", Path::new("/r"), 1, 2).unwrap_err();
        assert!(broken.to_string().contains("Trunk.toml no longer contains"));
    }

    #[test]
    fn codes_are_read_from_serve_s_lines_and_answers() {
        assert_eq!(
            printed_code("deltascope serve: deltascope: open http://127.0.0.1:8080/?code=ab12"),
            Some("ab12")
        );
        assert_eq!(
            printed_code("deltascope: open http://127.0.0.1:8080/"),
            None
        );
        assert_eq!(
            code_in("{\"url\":\"http://127.0.0.1:8080/?code=09af\",\"expiresInSeconds\":300}"),
            Some("09af")
        );
        assert_eq!(code_in("?code=\""), None);
    }
}
