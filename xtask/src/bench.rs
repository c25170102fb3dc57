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
//! only orchestrates and formats; it has no dependencies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::run::{command, output_of, root, step, Result, XtaskError};

/// The result files each part writes in `target/bench/` (`NAME.tsv`,
/// `NAME.json`), in the order the table lists them.
const RESULT_FILES: [&str; 13] = [
    "core_vs_kube",
    "history_figures",
    "history",
    "history_scale",
    "proxy",
    "channel",
    "sim_fanout",
    "bundle",
    "page",
    "kept",
    "logs",
    "persist",
    "jank",
];

/// One row of the table, as a bench program wrote it.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    figure: String,
    unit: String,
    ours: f64,
    reference: f64,
    reference_name: String,
    ratio: f64,
    goal: String,
    met: String,
    note: String,
}

impl Row {
    fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 10 {
            return None;
        }
        Some(Row {
            id: f[0].to_owned(),
            figure: f[1].to_owned(),
            unit: f[2].to_owned(),
            ours: f[3].parse().ok()?,
            reference: f[4].parse().ok()?,
            reference_name: f[5].to_owned(),
            ratio: f[6].parse().ok()?,
            goal: f[7].to_owned(),
            met: f[8].to_owned(),
            note: f[9].to_owned(),
        })
    }
}

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

pub fn bench(args: &[String]) -> Result<()> {
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
    let wanted = |part: &str| {
        only.iter().any(|p| p == part) || (only.is_empty() && !NAMED_ONLY.contains(&part))
    };
    let started = Instant::now();
    let out_dir = root().join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|source| XtaskError::Io {
        what: format!("creating {}", out_dir.display()),
        source,
    })?;
    let mut ran: Vec<&str> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut record = |name: &'static str, result: Result<()>| match result {
        Ok(()) => ran.push(name),
        Err(e) => {
            eprintln!("xtask: bench {name}: {e}");
            failures.push(format!("{name}: {e}"));
        }
    };

    if wanted("core") {
        record("core", run_bench("deltascope", "core_vs_kube", quick, &[]));
    }
    if wanted("timeline") {
        record(
            "timeline",
            run_bench("deltascope", "history_figures", quick, &[]),
        );
    }
    if wanted("proxy") || wanted("sim") || wanted("history") || wanted("history-scale") {
        // The binary a user builds, copied aside: `cargo bench` rebuilds
        // target/release/deltascope with the dev-dependencies' features
        // unified in (hyper's http2 among them), which holds more memory per
        // connection than the product binary and is not what users run.
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
        let bin = bin.display().to_string();
        if wanted("proxy") {
            record(
                "proxy",
                run_bench("deltascope-proxy", "proxy", quick, &["--bin", &bin]),
            );
            record(
                "channel",
                run_bench("deltascope-proxy", "channel", quick, &["--bin", &bin]),
            );
        }
        if wanted("sim") {
            record(
                "sim",
                run_bench("deltascope-proxy", "sim_fanout", quick, &["--bin", &bin]),
            );
        }
        if wanted("history") {
            record("history", history_bench("history", quick, &bin));
        }
        if wanted("history-scale") {
            record("history-scale", history_bench("history_scale", quick, &bin));
        }
    }
    if wanted("bundle") {
        record("bundle", bundle(&out_dir));
    }
    if wanted("page") {
        record("page", page(&out_dir, quick));
    }

    let mut rows = Vec::new();
    for name in RESULT_FILES {
        let path = out_dir.join(format!("{name}.tsv"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            rows.extend(text.lines().filter_map(Row::parse));
        }
    }
    let mut cmd = String::from("cargo xtask bench");
    for a in args {
        cmd.push(' ');
        cmd.push_str(a);
    }
    let machine = Machine::detect();
    let commit = git_commit();
    let date = output_of("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .map(|d| d.trim().to_owned())
        .unwrap_or_default();
    let md = markdown(&rows, &machine, &cmd, &commit, &date, quick, &failures);
    write(&root().join("BENCHMARKS.md"), &md)?;
    let json = results_json(&rows, &machine, &cmd, &commit, &date, quick, &out_dir);
    write(&out_dir.join("results.json"), &json)?;
    println!(
        "xtask: bench wrote BENCHMARKS.md and target/bench/results.json ({} figures, {:.0} s)",
        rows.len(),
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

/// `cargo bench -p PACKAGE --bench NAME -- [--quick] --out target/bench/NAME.json EXTRA…`.
/// The recorded history's figures, with a private PostgreSQL for its
/// PostgreSQL rows (started and stopped as for the tests).
fn history_bench(name: &str, quick: bool, bin: &str) -> Result<()> {
    let postgres_bin = crate::tools::postgresql()?;
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
    let mut raw = 0u64;
    let mut gz = 0u64;
    let mut br = 0u64;
    let mut files = Vec::new();
    let entries = std::fs::read_dir(&dist).map_err(|source| XtaskError::Io {
        what: format!("reading {}", dist.display()),
        source,
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "wasm" && ext != "js" {
            continue;
        }
        raw += entry.metadata().map(|m| m.len()).unwrap_or(0);
        let gzip = gzip_size(&path)?;
        gz += gzip;
        let brotli = brotli_sizes
            .iter()
            .find(|(source, _)| *source == path)
            .map(|(_, size)| *size)
            .ok_or_else(|| XtaskError::StepFailed {
                step: format!("brotli of {}", path.display()),
                hint: "the page build wrote no .br for it".into(),
            })?;
        br += brotli;
        files.push(format!(
            "{} {:.0} KB (brotli {:.0} KB)",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
            gzip as f64 / 1024.0,
            brotli as f64 / 1024.0,
        ));
    }
    let (kb, br_kb, raw_kb) = (gz as f64 / 1024.0, br as f64 / 1024.0, raw as f64 / 1024.0);
    let lines = format!(
        "bundle.served\tpage bundle as serve sends it to Chromium, wasm + js, brotli (the build's .br)\tKB\t{br_kb}\t400\tgoal\t{}\t≤ 400 KB\t{}\traw {raw_kb:.0} KB\n\
         bundle.gzip\tpage bundle, wasm + js, gzip -9 (a browser without br)\tKB\t{kb}\t400\tgoal\t{}\t≤ 400 KB\t{}\traw {raw_kb:.0} KB: {}\n",
        br_kb / 400.0,
        br_kb <= 400.0,
        kb / 400.0,
        kb <= 400.0,
        files.join(", ")
    );
    write(&out_dir.join("bundle.tsv"), &lines)?;
    let json = format!(
        "{{\"bench\":\"bundle\",\"figures\":[\
         {{\"id\":\"bundle.served\",\"unit\":\"KB\",\"ours\":{br_kb},\"raw_kb\":{raw_kb},\"goal\":\"<= 400 KB\",\"met\":{}}},\
         {{\"id\":\"bundle.gzip\",\"unit\":\"KB\",\"ours\":{kb},\"raw_kb\":{raw_kb},\"goal\":\"<= 400 KB\",\"met\":{}}}]}}\n",
        br_kb <= 400.0,
        kb <= 400.0
    );
    write(&out_dir.join("bundle.json"), &json)
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

fn write(path: &PathBuf, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| XtaskError::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}

struct Machine {
    nproc: usize,
    cpu: String,
    memory: String,
    load: String,
}

impl Machine {
    fn detect() -> Machine {
        let nproc = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
            .unwrap_or_else(|| "unknown".into());
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        Machine {
            nproc,
            cpu,
            memory,
            load,
        }
    }
}

fn git_commit() -> String {
    let head = output_of("git", &["rev-parse", "--short=12", "HEAD"])
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let dirty = output_of("git", &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.trim().is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{head} (with uncommitted changes)")
    } else {
        head
    }
}

/// 1234567.8 → "1.23 M"; keeps 3 significant digits.
fn human(v: f64) -> String {
    let (scaled, suffix) = if v.abs() >= 1e9 {
        (v / 1e9, " G")
    } else if v.abs() >= 1e6 {
        (v / 1e6, " M")
    } else if v.abs() >= 1e4 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    let digits = if scaled.abs() >= 100.0 {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{suffix}")
}

fn markdown(
    rows: &[Row],
    m: &Machine,
    cmd: &str,
    commit: &str,
    date: &str,
    quick: bool,
    failures: &[String],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# deltascope benchmarks\n");
    let _ = writeln!(
        s,
        "Written by `cargo xtask bench` — do not edit by hand. Every figure is measured \
         against a reference in the same run, on a shared and noisy machine, so read the \
         **ratio**, not the absolute values.{}\n",
        if quick {
            " This is a `--quick` run: smaller inputs and fewer samples."
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "- machine: {} CPUs ({}), {} memory; load average at the end {}",
        m.nproc, m.cpu, m.memory, m.load
    );
    let _ = writeln!(s, "- command: `{cmd}`");
    let _ = writeln!(s, "- commit: `{commit}`");
    let _ = writeln!(s, "- date: {date}\n");
    let _ = writeln!(
        s,
        "| figure | ours | reference | ratio | goal | met? |\n|---|---|---|---|---|---|"
    );
    for r in rows {
        let met = match r.met.as_str() {
            "true" if r.goal.starts_with('(') => "—",
            "true" => "✅",
            "false" => "❌",
            _ => "—",
        };
        let _ = writeln!(
            s,
            "| {} | {} {} | {} {} ({}) | {:.2}× | {} | {} |",
            r.figure,
            human(r.ours),
            r.unit,
            human(r.reference),
            r.unit,
            r.reference_name,
            r.ratio,
            r.goal,
            met
        );
    }
    let _ = writeln!(s, "\n## Notes per figure\n");
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        let _ = writeln!(s, "- `{}`: {}", r.id, r.note);
    }
    if !failures.is_empty() {
        let _ = writeln!(s, "\n## Parts that failed in this run\n");
        for f in failures {
            let _ = writeln!(s, "- {f}");
        }
    }
    let _ = writeln!(
        s,
        "\n## How each figure is measured\n\n\
         - **core deltas/s** (`benches/core_vs_kube.rs`): one recorded list + watch stream \
         (NDJSON bytes), fed in 64 KiB chunks. Ours: the whole sans-IO `Informer` (framer → \
         decode → Reflector → DeltaFIFO → Indexer with 3 indexes → History). Reference: \
         kube-runtime 5's `reflector::store::Writer` fed `watcher::Event`s parsed with \
         serde_json into k8s-openapi types from the same bytes. Both sides include parsing; \
         the two alternate, one warm-up each, median of N.\n\
         - **core bytes per object**: a counting global allocator in the bench binary; bytes \
         live after building each side from the list minus before.\n\
         - **proxy** (`proxy/benches/proxy.rs`): `deltascope sim` as upstream, `deltascope \
         serve --upstream` and the real `kubectl proxy` in front of it, all separate \
         processes; a hyper client in the bench. List throughput alternates direct / serve / \
         kubectl proxy (median MB/s). Added latency: one watch per path from the same \
         resourceVersion while the sim churns; each event's arrival is stamped per path and \
         matched by resourceVersion, so it is `t(serve) − t(direct)` for the same event. RSS: \
         peak `VmRSS` of the serve process (reference: kubectl proxy) with 1,000 open watches \
         while the sim churns at 5 events/s.\n\
         - **channel** (`proxy/benches/channel.rs`): the page's multiplexed channel through \
         `deltascope serve --upstream`, read with the page's own frame decoder. Added latency: \
         a direct watch and the same watch as a channel stream from the same resourceVersion, \
         matched by resourceVersion (`t(channel) − t(direct)`); the reference is a plain watch \
         through serve on its own connection. RSS: peak `VmRSS` of serve with 10 channels of \
         100 watches while the sim churns at 5 events/s.\n\
         - **sim fan-out** (`proxy/benches/sim_fanout.rs`): N watches of `deltascope sim` \
         open, then `POST /_sim/scale` adds K pods; events delivered/s summed over the \
         watchers until the last one has all K (reference: the sim's pod creation rate with no \
         watcher). List: MB/s of `GET /api/v1/pods` vs the same bytes from a bare in-memory \
         TCP server.\n\
         - **bundle**: `trunk build --release` into `target/bench/dist`; the .wasm + .js as serve sends them to Chromium (the build's brotli, quality 11) and their gzip -9.\n\
         - **page** (`tests/browser_page_bench.rs`, headless Chromium over WebDriver, the \
         release page served by `serve --demo`): open → synced from the page's Performance \
         marks against `fetch` + `JSON.parse` of the same list pages in the same page (below \
         100k pods the open with the median ratio of three fresh browsers); memory \
         from the wasm memory size + JS heap; frames from `requestAnimationFrame`. **wasm \
         core**: `window.__deltascope.benchCore` plays a fixed ConfigMap list + watch stream \
         (`src/metrics/core_workload.rs`) through a fresh informer in the page's wasm; the driver \
         (built with the optimised `bench-page` profile) plays the same bytes natively in \
         between; median deltas/s of each.\n\
         - **kept** (`tests/browser_kept_bench.rs`, same setup): 32 resources kept live (every \
         discovered resource plus per-namespace views, the pods table on screen) while the sim \
         makes 2,000 writes/s; frames from `requestAnimationFrame`, event→DOM over every event \
         fed to any kept informer, digests of all 32 against the cluster's afterwards, and the \
         page's own peak count of requests in flight (what holds browser connections).\n\
         - **logs** (`tests/browser_logs_bench.rs`, `deltascope sim --pods 4` behind `serve \
         --upstream`, more than six resources open first): the busiest Deployment's pods \
         followed while the sim writes 10,000 lines/s for 30 s; frames from \
         `requestAnimationFrame`, newest line → DOM from the kubelet timestamp of the last line \
         drawn, lines lost against the sim's own count, the ring's bytes against its bound, and \
         frames while scrolling 100,000 held lines.\n\
         - **persist** (`tests/browser_persist_bench.rs`, same setup as page): a cold open of N \
         pods, then, once the page has stored them in IndexedDB, a warm reopen of the same tab: \
         navigation → every stored row shown (warm) and → synced, against the cold open; bytes \
         stored per object and per delta (from the stored meta record) against a pod's JSON; \
         frames while 2,000 Pod events/s arrive and are stored.\n\
         - **jank** (`tests/browser_jank_bench.rs`, same setup, 100k pods): long tasks \
         (PerformanceObserver) and frame gaps (`requestAnimationFrame`) during a relist after \
         410 Gone, switches between two kept resources (pods and ReplicaSets) and time travel \
         to four moments over the history of the list, and 20 s of the sim's churn at 6,000 \
         writes/s with Pods, ReplicaSets, Deployments and Events kept live (the rate that reached \
         the page is in the figure)."
    );
    s
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn results_json(
    rows: &[Row],
    m: &Machine,
    cmd: &str,
    commit: &str,
    date: &str,
    quick: bool,
    out_dir: &Path,
) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(
        s,
        "  \"machine\": {{\"nproc\": {}, \"cpu\": {}, \"memory\": {}, \"loadavg\": {}}},",
        m.nproc,
        json_str(&m.cpu),
        json_str(&m.memory),
        json_str(&m.load)
    );
    let _ = writeln!(s, "  \"command\": {},", json_str(cmd));
    let _ = writeln!(s, "  \"commit\": {},", json_str(commit));
    let _ = writeln!(s, "  \"date\": {},", json_str(date));
    let _ = writeln!(s, "  \"quick\": {quick},");
    s.push_str("  \"figures\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            s,
            "    {{\"id\": {}, \"figure\": {}, \"unit\": {}, \"ours\": {}, \"reference\": {}, \
             \"reference_name\": {}, \"ratio\": {}, \"goal\": {}, \"met\": {}, \"note\": {}}}",
            json_str(&r.id),
            json_str(&r.figure),
            json_str(&r.unit),
            json_num(r.ours),
            json_num(r.reference),
            json_str(&r.reference_name),
            json_num(r.ratio),
            json_str(&r.goal),
            r.met == "true",
            json_str(&r.note)
        );
        s.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    s.push_str("  ],\n  \"raw\": {");
    let mut first = true;
    for name in RESULT_FILES {
        if let Ok(text) = std::fs::read_to_string(out_dir.join(format!("{name}.json"))) {
            let _ = write!(
                s,
                "{}\n    {}: {}",
                if first { "" } else { "," },
                json_str(name),
                text.trim()
            );
            first = false;
        }
    }
    s.push_str("\n  }\n}\n");
    s
}

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
    ] {
        let _ = std::fs::remove_file(&stale);
        let _ = std::fs::remove_file(stale.with_extension("tsv"));
    }
    let mut cargo = command("cargo");
    cargo
        .args([
            "test",
            "--package",
            "deltascope",
            "--test",
            "browser_page_bench",
            "--test",
            "browser_kept_bench",
            "--test",
            "browser_logs_bench",
            "--test",
            "browser_persist_bench",
            "--test",
            "browser_jank_bench",
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
