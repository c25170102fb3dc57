//! What a bench run writes: the figures' lines the bench programs left in
//! `target/bench/NAME.tsv` read back as [`Row`]s, with the machine and the
//! commit they were measured on, into `BENCHMARKS.md` (the table and its
//! notes, the rows of parts this run did not measure carried from the file
//! it replaces: `carried`) and `target/bench/results.json`. Apart from `bench` because it is
//! formatting, not running: nothing here starts a program but `git` and
//! `date`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::carried::{self, Measured};
use crate::run::{output_of, root, Result, XtaskError};

/// The result files each part writes in `target/bench/` (`NAME.tsv`,
/// `NAME.json`), in the order the table lists them.
const RESULT_FILES: [&str; 15] = [
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
    "reach",
    "clusters",
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

pub(super) fn write(path: &PathBuf, text: &str) -> Result<()> {
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

/// The run the figures come from, as both reports state it.
struct Run {
    machine: Machine,
    /// `cargo xtask bench ARGS…`
    command: String,
    commit: String,
    /// When the reports were written (UTC, RFC 3339).
    date: String,
    quick: bool,
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

/// `BENCHMARKS.md`: what the run was, the table, the notes and failed
/// parts, then how each figure is measured.
fn markdown(rows: &[Row], run: &Run, failures: &[String], measured: &[Measured]) -> String {
    let mut s = String::new();
    markdown_header(&mut s, run);
    for line in carried::provenance(measured, &run.commit, &run.date) {
        let _ = writeln!(s, "- carried, not measured by this run: {line}");
    }
    markdown_table(&mut s, rows);
    for row in measured.iter().filter(|m| m.part == carried::EARLIER_ROW) {
        let _ = writeln!(s, "{}", row.line);
    }
    markdown_notes(&mut s, rows, failures);
    for note in measured.iter().filter(|m| m.part == carried::EARLIER_NOTE) {
        let _ = writeln!(s, "{}", note.line);
    }
    let _ = writeln!(s, "{HOW_MEASURED}");
    s.push_str(&carried::block(measured));
    s
}

/// The title, how to read the figures, and the machine, command, commit
/// and date of the run.
fn markdown_header(s: &mut String, run: &Run) {
    let m = &run.machine;
    let _ = writeln!(s, "# deltascope benchmarks\n");
    let _ = writeln!(
        s,
        "Written by `cargo xtask bench` — do not edit by hand. Every figure is measured \
         against a reference in the same run, on a shared and noisy machine, so read the \
         **ratio**, not the absolute values.{}\n",
        if run.quick {
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
    let _ = writeln!(s, "- command: `{}`", run.command);
    let _ = writeln!(s, "- commit: `{}`", run.commit);
    let _ = writeln!(s, "- date: {}", run.date);
}

/// The table, one line per figure.
fn markdown_table(s: &mut String, rows: &[Row]) {
    let _ = writeln!(
        s,
        "\n| figure | ours | reference | ratio | goal | met? |\n|---|---|---|---|---|---|"
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
}

/// Each figure's note, then the parts that failed (if any).
fn markdown_notes(s: &mut String, rows: &[Row], failures: &[String]) {
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
}

/// The end of `BENCHMARKS.md`.
const HOW_MEASURED: &str = "\n## How each figure is measured\n\n\
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
     - **recorded history** (`proxy/benches/history.rs`): the store alone on one runtime thread — 50k pods listed, then 150k status changes as watch event lines, each parsed into the compact form and written with the version before in batches of 1,000 (reference: appending the same lines to a file and syncing it); bytes are the database's growth; reads go through `HistoryStore::lines`; the state and memory figures run `deltascope sim` (100k pods) behind `deltascope serve --history sqlite:…`. PostgreSQL is 15 from Debian, a private server with fsync and synchronous_commit off (as for the tests), on loopback.\n\
     - **recorded history at scale** (`proxy/benches/history_scale.rs`, only with `--only history-scale`): 100k pods listed, then each changed once every 1,000 s of recorded time until 10 million deltas are held (about 27 h); one pod's last 24 h, a namespace's 10-minute window in the middle, and the state of every pod at that middle moment through `deltascope serve --history-read-only` in front of a stub upstream whose pods LIST is the very bytes of that state (so the reference is serve copying the same bytes).\n\
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
     the page is in the figure).\n\
     - **reach** (`tests/browser_reach_bench.rs`, `deltascope sim --pods 200` behind the \
     release `serve --upstream --history-read-only`, whose SQLite database is first filled \
     through `deltascope-history` with a million Pod deltas over the hour before the page \
     opens, one pod changed 1,000 times): the timeline zoomed back over that hour — the \
     wheel → the first recorded deltas drawn in the pods lane, against the browser's own \
     `fetch` + `JSON.parse` of the marks answer the page asked for, and the long tasks \
     until every bucket is drawn; that pod opened from its address with History shown \
     (`?tab=history`) — the address → the versions on screen drawn with their changes (all \
     of the newest 100 in the notes), against `fetch` + `JSON.parse` of the page's first \
     request, the record's newest 100 versions (`newest=100`), in the page, and the long \
     tasks until all 100 are drawn.\n\
     - **clusters** (`tests/browser_clusters_bench.rs`, three `deltascope sim`s behind one \
     release `serve --upstream NAME=URL` ×3, two of them with 30k pods): a fresh page \
     syncing both clusters' pods at once (`#/b/core/v1/pods`, then `#/c/core/v1/pods` at \
     once), against a fresh page syncing one of them alone — the longest main-thread task \
     and the frame p95 from the first list to every table synced (from navigation in the \
     notes), then each table's digest against its own sim's; serve with five `--context`s of one kubeconfig (the real \
     `kubectl proxy` each) against serve with one: its resident memory once every cluster \
     answers, and the kubectl processes it runs.";

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

/// `target/bench/results.json`: the run, every figure, and each part's
/// full JSON under `raw`.
fn results_json(rows: &[Row], run: &Run, out_dir: &Path) -> String {
    let m = &run.machine;
    let mut s = String::from("{\n");
    let _ = writeln!(
        s,
        "  \"machine\": {{\"nproc\": {}, \"cpu\": {}, \"memory\": {}, \"loadavg\": {}}},",
        m.nproc,
        json_str(&m.cpu),
        json_str(&m.memory),
        json_str(&m.load)
    );
    let _ = writeln!(s, "  \"command\": {},", json_str(&run.command));
    let _ = writeln!(s, "  \"commit\": {},", json_str(&run.commit));
    let _ = writeln!(s, "  \"date\": {},", json_str(&run.date));
    let _ = writeln!(s, "  \"quick\": {},", run.quick);
    s.push_str("  \"figures\": [\n");
    for (i, r) in rows.iter().enumerate() {
        s.push_str(&json_figure(r));
        s.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    s.push_str("  ],\n  \"raw\": {");
    push_raw_results(&mut s, out_dir);
    s.push_str("\n  }\n}\n");
    s
}

/// One figure as a line of `figures` (without its comma).
fn json_figure(r: &Row) -> String {
    format!(
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
    )
}

/// `raw`'s members: each part's `NAME.json` in `out_dir` that exists, as
/// it was written.
fn push_raw_results(s: &mut String, out_dir: &Path) {
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
}

/// Reads every part's figures back and writes `BENCHMARKS.md` and
/// `target/bench/results.json` for the run `cargo xtask bench ARGS…`
/// started at `started`: the rows of the parts it measured (their
/// `NAME.tsv` written since), and the rows of the others carried from the
/// `BENCHMARKS.md` it replaces with their own commit and date
/// ([`carried`]); an earlier file's lines are dropped by a run of every
/// part. Returns how many figures they hold.
pub(super) fn write_reports(
    args: &[String],
    (quick, every_part): (bool, bool),
    failures: &[String],
    out_dir: &Path,
    started: std::time::SystemTime,
) -> Result<usize> {
    // the page part's narrowing, when set, is part of the command
    let mut cmd = ["PAGE_BENCH_TESTS", "PAGE_BENCH_SIZES"]
        .into_iter()
        .filter_map(|name| Some(format!("{name}={} ", std::env::var(name).ok()?)))
        .collect::<String>();
    cmd.push_str("cargo xtask bench");
    for a in args {
        cmd.push(' ');
        cmd.push_str(a);
    }
    let run = Run {
        machine: Machine::detect(),
        command: cmd,
        commit: git_commit(),
        date: output_of("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"])
            .map(|d| d.trim().to_owned())
            .unwrap_or_default(),
        quick,
    };
    let path = root().join("BENCHMARKS.md");
    let before = carried::read(&std::fs::read_to_string(&path).unwrap_or_default());
    let mut measured: Vec<Measured> = Vec::new();
    for name in RESULT_FILES {
        let tsv = out_dir.join(format!("{name}.tsv"));
        let fresh = std::fs::metadata(&tsv)
            .and_then(|m| m.modified())
            .is_ok_and(|at| at >= started);
        match std::fs::read_to_string(&tsv) {
            Ok(text) if fresh => {
                measured.extend(text.lines().filter(|line| Row::parse(line).is_some()).map(
                    |line| Measured {
                        part: name.to_owned(),
                        commit: run.commit.clone(),
                        date: run.date.clone(),
                        line: line.to_owned(),
                    },
                ))
            }
            _ => measured.extend(before.iter().filter(|m| m.part == name).cloned()),
        }
    }
    let rows: Vec<Row> = measured
        .iter()
        .filter_map(|m| Row::parse(&m.line))
        .collect();
    if !every_part {
        // an earlier file's lines stay until a row of the same figure is measured
        let figures: Vec<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
        let ids: Vec<String> = rows.iter().map(|r| format!("- `{}`:", r.id)).collect();
        measured.extend(
            before
                .iter()
                .filter(|m| match m.earlier_figure() {
                    Some(figure) => !figures.contains(&figure),
                    None => {
                        m.part == carried::EARLIER_NOTE
                            && !ids.iter().any(|id| m.line.starts_with(id.as_str()))
                    }
                })
                .cloned(),
        );
    }
    let md = markdown(&rows, &run, failures, &measured);
    write(&path, &md)?;
    let json = results_json(&rows, &run, out_dir);
    write(&out_dir.join("results.json"), &json)?;
    Ok(rows.len())
}
