//! The line each benchmark writes per figure into `target/bench/NAME.tsv`,
//! in the columns `cargo xtask bench` reads: id, figure, unit, ours,
//! reference, reference name, ratio, goal, met, note — tab-separated, with
//! tabs and newlines inside a field turned into spaces. Shared by the benches
//! of this package and the page bench in `tests/` (which includes this file).

#![allow(dead_code)]

/// A figure's line; the ratio is `ours / reference`.
#[allow(clippy::too_many_arguments)]
pub fn row(
    id: &str,
    figure: &str,
    unit: &str,
    ours: f64,
    reference: f64,
    reference_name: &str,
    goal: &str,
    met: bool,
    note: &str,
) -> String {
    let ratio = ours / reference;
    let clean = |s: &str| s.replace(['\t', '\n'], " ");
    format!(
        "{}\t{}\t{}\t{ours}\t{reference}\t{}\t{ratio}\t{}\t{met}\t{}\n",
        clean(id),
        clean(figure),
        clean(unit),
        clean(reference_name),
        clean(goal),
        clean(note)
    )
}

/// A frame figure's line: the p95 frame time against one 60 Hz frame
/// (`budget_ms`), met within half a millisecond; `(p50, p95, max, n)` as
/// the browser benches' `frame_stats` gives them, over `seconds`.
pub fn frame_row(
    id: &str,
    figure: &str,
    budget_ms: f64,
    (p50, p95, max, n): (f64, f64, f64, usize),
    seconds: f64,
) -> String {
    row(
        id,
        figure,
        "ms",
        p95,
        budget_ms,
        "one 60 Hz frame",
        "p95 ≤ 16.7 ms",
        p95 <= budget_ms + 0.5,
        &format!("{n} frames in {seconds:.0} s, p50 {p50:.1} ms, max {max:.1} ms"),
    )
}
