//! `cargo xtask test`: everything CI checks, in order of cost — fmt, clippy and
//! `cargo doc` (warnings as errors) for the native and the wasm32 target (the
//! native clippy checks the fuzz targets too: `fuzz/` is a member), the
//! page build, native unit and
//! integration tests (browser tests included, in headless Chromium) with
//! nextest, against a private PostgreSQL server started for them and
//! stopped after them (`postgres::Server`; its `DELTASCOPE_TEST_POSTGRES*`
//! and `DELTASCOPE_TEST_PG_*` variables), then wasm-bindgen tests in
//! headless Chromium. Ends with one line `tests: N passed, N failed`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Instant;

use crate::demo::build_page;
use crate::postgres;
use crate::run::{command, root, step, Result, XtaskError};
use crate::tools::{self, Needs};

#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
}

/// `cargo xtask test [--skip-lint]`: the steps of the module doc, in order;
/// fails when a step or a test does.
pub fn test(args: &[String]) -> Result<()> {
    let started = Instant::now();
    let skip_lint = args.iter().any(|a| a == "--skip-lint");
    tools::setup(Needs::Everything)?;
    // installed now, so a missing server fails the run before the long steps
    let postgres_bin = postgres::server_bin()?;

    if !skip_lint {
        check_format_and_lints()?;
        check_docs()?;
    }

    build_page(false)?;
    // No `cargo build` of the binary first: nextest's build makes
    // target/debug/deltascope itself (the proxy's integration tests need
    // it), with the tests' features — a build of it alone, with the
    // binary's features, compiled some sixty crates twice.

    let artifacts = create_artifacts_dir()?;
    let mut counts = Counts::default();
    // Stopped after the native tests, or when dropped on an early return;
    // its guard stops it if xtask is killed.
    let mut postgres = postgres::Server::start(&postgres_bin)?;
    let native_ok = run_native_tests(&postgres, &artifacts, &mut counts)?;
    let postgres_stopped = postgres.stop();
    let wasm_ok = run_wasm_tests(&mut counts)?;

    print_summary(started, &artifacts, &counts);
    postgres_stopped?;
    if native_ok && wasm_ok && counts.failed == 0 {
        Ok(())
    } else {
        Err(XtaskError::StepFailed {
            step: "cargo xtask test".into(),
            hint: "see the failing tests above".into(),
        })
    }
}

/// `cargo fmt --check`, then clippy (warnings as errors) for the native
/// workspace and for the page's wasm32 build.
fn check_format_and_lints() -> Result<()> {
    step(
        "cargo fmt --check",
        command("cargo").args(["fmt", "--all", "--", "--check"]),
        "run `cargo fmt --all`",
    )?;
    step(
        "clippy (native)",
        command("cargo").args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
        "fix the warnings above",
    )?;
    step(
        "clippy (wasm32)",
        command("cargo").args([
            "clippy",
            "--package",
            "deltascope",
            "--package",
            "deltascope-informer",
            "--target",
            "wasm32-unknown-unknown",
            "--lib",
            "--bins",
            "--test",
            "wasm_dom",
            "--",
            "-D",
            "warnings",
        ]),
        "fix the warnings above",
    )
}

/// Docs that cannot rot: a broken intra-doc link fails here, for the
/// native crates and for the page's wasm-only modules alike.
fn check_docs() -> Result<()> {
    step(
        "cargo doc (native)",
        command("cargo")
            .args([
                "doc",
                "--no-deps",
                "--workspace",
                "--exclude",
                "xtask",
                "--lib",
            ])
            .env("RUSTDOCFLAGS", "-D warnings"),
        "fix the doc warnings above (a link to an item that moved or is private)",
    )?;
    step(
        "cargo doc (wasm32)",
        command("cargo")
            .args([
                "doc",
                "--no-deps",
                "--package",
                "deltascope",
                "--package",
                "deltascope-informer",
                "--lib",
                "--target",
                "wasm32-unknown-unknown",
            ])
            .env("RUSTDOCFLAGS", "-D warnings"),
        "fix the doc warnings above (a link to an item that moved or is private)",
    )
}

/// `target/test-artifacts`, where the browser tests leave their screenshots.
fn create_artifacts_dir() -> Result<PathBuf> {
    let artifacts = root().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).map_err(|source| XtaskError::Io {
        what: format!("creating {}", artifacts.display()),
        source,
    })?;
    Ok(artifacts)
}

/// The native unit, integration and browser tests with nextest, against
/// the private PostgreSQL server `postgres`; adds their counts and returns
/// whether they passed.
fn run_native_tests(
    postgres: &postgres::Server,
    artifacts: &Path,
    counts: &mut Counts,
) -> Result<bool> {
    let mut nextest = command("cargo");
    nextest
        .args(["nextest", "run", "--workspace", "--no-fail-fast"])
        .env("DELTASCOPE_BIN", root().join("target/debug/deltascope"))
        .env("DELTASCOPE_DIST", root().join("dist"))
        .env("DELTASCOPE_ARTIFACTS", artifacts)
        .env("CHROMEDRIVER", "/usr/bin/chromedriver")
        .envs(postgres.env());
    let (native_ok, lines) = run_capturing("native and browser tests (nextest)", &mut nextest)?;
    add_nextest_counts(&lines, counts);
    Ok(native_ok)
}

/// The wasm-bindgen tests in headless Chromium; adds their counts and
/// returns whether they passed.
fn run_wasm_tests(counts: &mut Counts) -> Result<bool> {
    let mut wasm = command("cargo");
    wasm.args([
        "test",
        "--package",
        "deltascope",
        "--target",
        "wasm32-unknown-unknown",
        "--test",
        "wasm_dom",
    ])
    .env("CHROMEDRIVER", "/usr/bin/chromedriver")
    .env("WASM_BINDGEN_TEST_TIMEOUT", "120");
    let (wasm_ok, lines) = run_capturing("wasm tests in headless Chromium", &mut wasm)?;
    add_libtest_counts(&lines, counts);
    Ok(wasm_ok)
}

/// The run's time and artefacts, then its one line `tests: N passed, N failed`.
fn print_summary(started: Instant, artifacts: &Path, counts: &Counts) {
    println!(
        "xtask: test run took {:.0} s; artefacts (screenshots) in {}",
        started.elapsed().as_secs_f64(),
        artifacts.display()
    );
    if counts.skipped > 0 {
        println!(
            "tests: {} passed, {} failed, {} skipped",
            counts.passed, counts.failed, counts.skipped
        );
    } else {
        println!("tests: {} passed, {} failed", counts.passed, counts.failed);
    }
}

/// Runs a command, echoing its output live, and returns (success, all lines).
fn run_capturing(name: &str, command: &mut Command) -> Result<(bool, Vec<String>)> {
    println!("xtask: ▶ {name}");
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| XtaskError::Spawn {
            program: format!("{:?}", command.get_program()),
            source,
        })?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_thread = thread::spawn(move || echo_lines(stdout, false));
    let err_thread = thread::spawn(move || echo_lines(stderr, true));
    let status = child.wait().map_err(|source| XtaskError::Io {
        what: format!("waiting for {name}"),
        source,
    })?;
    let mut lines = out_thread.join().unwrap_or_default();
    lines.extend(err_thread.join().unwrap_or_default());
    println!(
        "xtask: {} {name} ({:.1} s)",
        if status.success() { "✔" } else { "✘" },
        started.elapsed().as_secs_f64()
    );
    Ok((status.success(), lines))
}

fn echo_lines(stream: Option<impl std::io::Read>, to_stderr: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let Some(stream) = stream else { return lines };
    for line in BufReader::new(stream)
        .lines()
        .map_while(std::io::Result::ok)
    {
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
        lines.push(line);
    }
    lines
}

/// nextest's summary: `Summary [  12.3s] 57 tests run: 56 passed, 1 failed, 2 skipped`.
fn add_nextest_counts(lines: &[String], counts: &mut Counts) {
    for line in lines
        .iter()
        .filter(|l| l.trim_start().starts_with("Summary ["))
    {
        let Some((_, tail)) = line
            .split_once("tests run:")
            .or_else(|| line.split_once("test run:"))
        else {
            continue;
        };
        for part in tail.split(',') {
            add_count(part, counts);
        }
    }
}

/// libtest's summary: `test result: ok. 3 passed; 0 failed; 0 ignored; …`.
fn add_libtest_counts(lines: &[String], counts: &mut Counts) {
    for line in lines.iter().filter(|l| l.starts_with("test result:")) {
        if let Some((_, tail)) = line.split_once('.') {
            for part in tail.split(';') {
                add_count(&part.replace("ignored", "skipped"), counts);
            }
        }
    }
}

fn add_count(part: &str, counts: &mut Counts) {
    let mut words = part.split_whitespace();
    let (Some(number), Some(label)) = (words.next(), words.next()) else {
        return;
    };
    let Ok(number) = number.parse::<u64>() else {
        return;
    };
    match label {
        "passed" => counts.passed += number,
        "failed" | "timed" => counts.failed += number,
        "skipped" => counts.skipped += number,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nextest_summary_is_counted() {
        let mut counts = Counts::default();
        let lines = vec![
            "     Summary [  12.345s] 57 tests run: 55 passed, 2 failed, 3 skipped".to_string(),
        ];
        add_nextest_counts(&lines, &mut counts);
        assert_eq!((counts.passed, counts.failed, counts.skipped), (55, 2, 3));
    }

    #[test]
    fn libtest_summary_is_counted() {
        let mut counts = Counts::default();
        let lines = vec![
            "test result: ok. 3 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out"
                .to_string(),
        ];
        add_libtest_counts(&lines, &mut counts);
        assert_eq!((counts.passed, counts.failed, counts.skipped), (3, 1, 2));
    }
}
