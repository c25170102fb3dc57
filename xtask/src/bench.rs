//! `cargo xtask bench [--quick] [--only core|timeline|proxy|sim|history|bundle|page]…`: builds the
//! release `deltascope` binary, runs the benchmark programs (`benches/` of
//! the core, `proxy/benches/` of the proxy and the simulator), measures the
//! page bundle, and writes `BENCHMARKS.md` and `target/bench/results.json`.
//!
//! Every figure is a ratio against a reference measured in the same run
//! (these machines are shared and noisy), so each bench program measures both
//! sides itself and writes one tab-separated line per figure
//! (`target/bench/NAME.tsv`: id, figure, unit, ours, reference, reference
//! name, ratio, goal, met, note) beside its full JSON (`NAME.json`). This file
//! only orchestrates; `report` turns the lines into the table and the JSON,
//! keeping the rows of the parts a run did not measure (`carried`). The
//! page part's programs can be narrowed: `PAGE_BENCH_TESTS=browser_page_bench`
//! (a comma list) and `PAGE_BENCH_SIZES=100000` (pods). It has no
//! dependencies.

mod carried;
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::run::{command, root, step, Result, XtaskError};

const PARTS: [&str; 8] = [
    "core",
    "timeline",
    "proxy",
    "sim",
    "history",
    "history-scale",
    "bundle",
    "page",
];

/// Parts run only when named (`--only`): filling a store with 10 million
/// deltas takes a quarter of an hour per engine. Their last figures stay
/// in the table.
const NAMED_ONLY: [&str; 1] = ["history-scale"];

/// What `cargo xtask bench` was asked for.
struct BenchArgs {
    quick: bool,
    /// The parts `--only` names; none: every part but [`NAMED_ONLY`].
    only: Vec<String>,
}

impl BenchArgs {
    fn parse(args: &[String]) -> Result<BenchArgs> {
        let mut quick = false;
        let mut only: Vec<String> = Vec::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--quick" => quick = true,
                "--only" => {
                    let part = iter.next().ok_or_else(|| {
                        XtaskError::Usage(format!("--only needs one of {}", PARTS.join(", ")))
                    })?;
                    if !PARTS.contains(&part.as_str()) {
                        return Err(XtaskError::Usage(format!(
                            "--only {part}: expected one of {}",
                            PARTS.join(", ")
                        )));
                    }
                    only.push(part.clone());
                }
                other => {
                    return Err(XtaskError::Usage(format!(
                        "bench: unknown argument {other:?} (expected --quick, --only PART)"
                    )))
                }
            }
        }
        Ok(BenchArgs { quick, only })
    }

    /// Whether this run measures `part`.
    fn wants(&self, part: &str) -> bool {
        self.only.iter().any(|p| p == part) || (self.only.is_empty() && !NAMED_ONLY.contains(&part))
    }
}

/// The parts that failed, each `NAME: ERROR` (said as it happens; a failed
/// part does not stop the others).
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn record(&mut self, name: &str, result: Result<()>) {
        if let Err(e) = result {
            eprintln!("xtask: bench {name}: {e}");
            self.0.push(format!("{name}: {e}"));
        }
    }
}

pub fn bench(args: &[String]) -> Result<()> {
    let parsed = BenchArgs::parse(args)?;
    let quick = parsed.quick;
    let started = Instant::now();
    let started_at = std::time::SystemTime::now();
    let out_dir = root().join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|source| XtaskError::Io {
        what: format!("creating {}", out_dir.display()),
        source,
    })?;
    let mut failures = Failures::default();

    if parsed.wants("core") {
        failures.record("core", run_bench("deltascope", "core_vs_kube", quick, &[]));
    }
    if parsed.wants("timeline") {
        failures.record(
            "timeline",
            run_bench("deltascope", "history_figures", quick, &[]),
        );
    }
    run_binary_parts(&parsed, &mut failures)?;
    if parsed.wants("bundle") {
        failures.record("bundle", bundle(&out_dir));
    }
    if parsed.wants("page") {
        failures.record("page", page(&out_dir, quick));
    }

    let failures = failures.0;
    let every_part = parsed.only.is_empty();
    let figures =
        report::write_reports(args, (quick, every_part), &failures, &out_dir, started_at)?;
    println!(
        "xtask: bench wrote BENCHMARKS.md and target/bench/results.json ({figures} figures, {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(XtaskError::StepFailed {
            step: "cargo xtask bench".into(),
            hint: format!(
                "{} part(s) failed ({}); the figures that ran are in BENCHMARKS.md",
                failures.len(),
                failures.join("; ")
            ),
        })
    }
}

/// The parts that run the release binary (proxy and channel, sim, history,
/// history-scale), when any is wanted: the binary is built and copied aside
/// first, and failing to is the run's failure.
fn run_binary_parts(args: &BenchArgs, failures: &mut Failures) -> Result<()> {
    let quick = args.quick;
    if !(args.wants("proxy")
        || args.wants("sim")
        || args.wants("history")
        || args.wants("history-scale"))
    {
        return Ok(());
    }
    let bin = copy_release_binary()?;
    if args.wants("proxy") {
        failures.record(
            "proxy",
            run_bench("deltascope-proxy", "proxy", quick, &["--bin", &bin]),
        );
        failures.record(
            "channel",
            run_bench("deltascope-proxy", "channel", quick, &["--bin", &bin]),
        );
    }
    if args.wants("sim") {
        failures.record(
            "sim",
            run_bench("deltascope-proxy", "sim_fanout", quick, &["--bin", &bin]),
        );
    }
    if args.wants("history") {
        failures.record("history", history_bench("history", quick, &bin));
    }
    if args.wants("history-scale") {
        failures.record("history-scale", history_bench("history_scale", quick, &bin));
    }
    Ok(())
}

/// The binary a user builds, copied aside to `target/bench/deltascope`;
/// returns its path. `cargo bench` rebuilds target/release/deltascope with
/// the dev-dependencies' features unified in (hyper's http2 among them),
/// which holds more memory per connection than the product binary and is
/// not what users run.
fn copy_release_binary() -> Result<String> {
    crate::demo::build_binary(true)?;
    let built = root().join("target").join("release").join("deltascope");
    let bin = root().join("target").join("bench").join("deltascope");
    if let Some(dir) = bin.parent() {
        std::fs::create_dir_all(dir).map_err(|source| crate::run::XtaskError::Io {
            what: format!("cannot create {}", dir.display()),
            source,
        })?;
    }
    std::fs::copy(&built, &bin).map_err(|source| crate::run::XtaskError::Io {
        what: format!("cannot copy {} to {}", built.display(), bin.display()),
        source,
    })?;
    Ok(bin.display().to_string())
}

/// The recorded history's figures, with a private PostgreSQL for its
/// PostgreSQL rows (started and stopped as for the tests).
fn history_bench(name: &str, quick: bool, bin: &str) -> Result<()> {
    let postgres_bin = crate::postgres::server_bin()?;
    let mut postgres = crate::postgres::Server::start(&postgres_bin)?;
    let result = run_bench_with(
        "deltascope-proxy",
        name,
        quick,
        &["--bin", bin],
        &postgres.env(),
    );
    let stopped = postgres.stop();
    result.and(stopped)
}

/// `cargo bench -p PACKAGE --bench NAME -- [--quick] --out target/bench/NAME.json EXTRA…`.
fn run_bench(package: &str, name: &str, quick: bool, extra: &[&str]) -> Result<()> {
    run_bench_with(package, name, quick, extra, &[])
}

fn run_bench_with(
    package: &str,
    name: &str,
    quick: bool,
    extra: &[&str],
    env: &[(&'static str, String)],
) -> Result<()> {
    let out = root()
        .join("target")
        .join("bench")
        .join(format!("{name}.json"));
    // stale results must not reach the table if this run fails
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(out.with_extension("tsv"));
    let mut cargo = command("cargo");
    cargo.args(["bench", "--package", package, "--bench", name, "--"]);
    if quick {
        cargo.arg("--quick");
    }
    cargo.arg("--out").arg(&out).args(extra);
    cargo.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    step(
        &format!("cargo bench --bench {name}"),
        &mut cargo,
        "the benchmark failed; its output above says where",
    )
}

/// `trunk build --release` of the page into an emptied `dist`, with the
/// page's `bench` feature (its measuring hooks) when `bench_hooks`, and the
/// brotli of its files; returns each file with its brotli size.
fn build_release_page(
    dist: &Path,
    purpose: &str,
    bench_hooks: bool,
) -> Result<Vec<(PathBuf, u64)>> {
    let _ = std::fs::remove_dir_all(dist);
    let mut trunk = command("trunk");
    trunk
        .args(["build", "--release", "--dist"])
        .arg(dist)
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    if bench_hooks {
        trunk.args(["--features", "bench"]);
    }
    step(
        &format!("trunk build --release ({purpose})"),
        &mut trunk,
        "the page did not build",
    )?;
    crate::precompress::precompress(dist, true)
}

/// Bundle size: `trunk build --release` into a scratch dist, then the size
/// of its `.wasm` and `.js` files as serve sends them to Chromium (the
/// build's brotli, `FILE.br`), and their gzip (-9) size, what a browser that
/// takes gzip only gets at best.
fn bundle(out_dir: &Path) -> Result<()> {
    crate::tools::setup(crate::tools::Needs::Build)?;
    let dist = out_dir.join("dist");
    // the release page as shipped: no bench hooks
    let brotli_sizes = build_release_page(&dist, "bundle size", false)?;
    let sizes = BundleSizes::measure(&dist, &brotli_sizes)?;
    sizes.write_figures(out_dir)
}

/// The page bundle's `.wasm` and `.js` files, summed.
struct BundleSizes {
    raw: u64,
    gz: u64,
    br: u64,
    /// Each file: `NAME N KB (brotli N KB)`.
    files: Vec<String>,
}

impl BundleSizes {
    /// Measures the files in `dist`, their brotli sizes from the build's
    /// (`brotli_sizes`), their gzip with `gzip -9`.
    fn measure(dist: &Path, brotli_sizes: &[(PathBuf, u64)]) -> Result<BundleSizes> {
        let mut sizes = BundleSizes {
            raw: 0,
            gz: 0,
            br: 0,
            files: Vec::new(),
        };
        let entries = std::fs::read_dir(dist).map_err(|source| XtaskError::Io {
            what: format!("reading {}", dist.display()),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if ext != "wasm" && ext != "js" {
                continue;
            }
            sizes.raw += entry.metadata().map(|m| m.len()).unwrap_or(0);
            let gzip = gzip_size(&path)?;
            sizes.gz += gzip;
            let brotli = brotli_sizes
                .iter()
                .find(|(source, _)| *source == path)
                .map(|(_, size)| *size)
                .ok_or_else(|| XtaskError::StepFailed {
                    step: format!("brotli of {}", path.display()),
                    hint: "the page build wrote no .br for it".into(),
                })?;
            sizes.br += brotli;
            sizes.files.push(format!(
                "{} {:.0} KB (brotli {:.0} KB)",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
                gzip as f64 / 1024.0,
                brotli as f64 / 1024.0,
            ));
        }
        Ok(sizes)
    }

    /// `bundle.tsv` and `bundle.json` in `out_dir`: the served (brotli) and
    /// the gzip figures against the 400 KB goal.
    fn write_figures(&self, out_dir: &Path) -> Result<()> {
        let (kb, br_kb, raw_kb) = (
            self.gz as f64 / 1024.0,
            self.br as f64 / 1024.0,
            self.raw as f64 / 1024.0,
        );
        let lines = format!(
            "bundle.served\tpage bundle as serve sends it to Chromium, wasm + js, brotli (the build's .br)\tKB\t{br_kb}\t400\tgoal\t{}\t≤ 400 KB\t{}\traw {raw_kb:.0} KB\n\
             bundle.gzip\tpage bundle, wasm + js, gzip -9 (a browser without br)\tKB\t{kb}\t400\tgoal\t{}\t≤ 400 KB\t{}\traw {raw_kb:.0} KB: {}\n",
            br_kb / 400.0,
            br_kb <= 400.0,
            kb / 400.0,
            kb <= 400.0,
            self.files.join(", ")
        );
        report::write(&out_dir.join("bundle.tsv"), &lines)?;
        let json = format!(
            "{{\"bench\":\"bundle\",\"figures\":[\
             {{\"id\":\"bundle.served\",\"unit\":\"KB\",\"ours\":{br_kb},\"raw_kb\":{raw_kb},\"goal\":\"<= 400 KB\",\"met\":{}}},\
             {{\"id\":\"bundle.gzip\",\"unit\":\"KB\",\"ours\":{kb},\"raw_kb\":{raw_kb},\"goal\":\"<= 400 KB\",\"met\":{}}}]}}\n",
            br_kb <= 400.0,
            kb <= 400.0
        );
        report::write(&out_dir.join("bundle.json"), &json)
    }
}

fn gzip_size(path: &Path) -> Result<u64> {
    let output = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .map_err(|source| XtaskError::Spawn {
            program: "gzip".into(),
            source,
        })?;
    if !output.status.success() {
        return Err(XtaskError::StepFailed {
            step: format!("gzip {}", path.display()),
            hint: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output.stdout.len() as u64)
}

/// The page's bench programs, each an `#[ignore]` test.
const PAGE_BENCH_TESTS: [&str; 7] = [
    "browser_page_bench",
    "browser_kept_bench",
    "browser_logs_bench",
    "browser_persist_bench",
    "browser_jank_bench",
    "browser_reach_bench",
    "browser_clusters_bench",
];

/// The page in headless Chromium (`tests/browser_page_bench.rs`, an
/// `#[ignore]` test): a release page build with the `bench` feature in
/// `target/bench/dist-bench`, served by the release binary's `serve --demo`.
fn page(out_dir: &Path, quick: bool) -> Result<()> {
    crate::tools::setup(crate::tools::Needs::Everything)?;
    // the release page plus its bench hooks (window.__deltascope), in a
    // dist of its own: the bundle figure is the page without them
    let dist = out_dir.join("dist-bench");
    let _ = build_release_page(&dist, "page bench", true)?;
    crate::demo::build_binary(true)?;
    let out = out_dir.join("page.json");
    // stale results must not reach the table if this run fails
    for stale in [
        out.clone(),
        out.with_file_name("kept.json"),
        out.with_file_name("logs.json"),
        out.with_file_name("persist.json"),
        out.with_file_name("jank.json"),
        out.with_file_name("reach.json"),
        out.with_file_name("clusters.json"),
    ] {
        let _ = std::fs::remove_file(&stale);
        let _ = std::fs::remove_file(stale.with_extension("tsv"));
    }
    // PAGE_BENCH_TESTS=browser_page_bench,… runs only those (the others'
    // rows are carried from BENCHMARKS.md with their own run's commit)
    let chosen = std::env::var("PAGE_BENCH_TESTS").unwrap_or_default();
    let tests: Vec<&str> = PAGE_BENCH_TESTS
        .into_iter()
        .filter(|test| chosen.is_empty() || chosen.split(',').any(|c| c.trim() == *test))
        .collect();
    if tests.is_empty() {
        return Err(XtaskError::Usage(format!(
            "PAGE_BENCH_TESTS={chosen:?} names none of {}",
            PAGE_BENCH_TESTS.join(", ")
        )));
    }
    let mut cargo = command("cargo");
    cargo.args(["test", "--package", "deltascope"]);
    for test in tests {
        cargo.args(["--test", test]);
    }
    cargo
        .args([
            "--features",
            "bench",
            // optimised: the driver also runs the core natively as a reference
            "--profile",
            "bench-page",
        ])
        .args(["--", "--ignored", "--nocapture"])
        .env(
            "DELTASCOPE_BIN",
            root().join("target").join("release").join("deltascope"),
        )
        .env("DELTASCOPE_DIST", &dist)
        .env("PAGE_BENCH_OUT", &out)
        .env("PAGE_BENCH_QUICK", if quick { "1" } else { "0" });
    step(
        "page bench in headless Chromium",
        &mut cargo,
        "the page benchmark failed; its output above says where",
    )
}
