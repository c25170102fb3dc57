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

/// What the page's long-task observer and frame gaps showed over one
/// stretch (the browser benches' `JANK` script).
pub struct Jank {
    pub count: f64,
    /// The part of the long tasks over 50 ms, summed.
    pub blocked: f64,
    pub longest: f64,
    pub p95: f64,
    pub longest_gap: f64,
    pub frames: f64,
}

impl Jank {
    /// What the `JANK` script returned (missing figures are NaN).
    pub fn from_script(value: &serde_json::Value) -> Jank {
        let num = |key: &str| value[key].as_f64().unwrap_or(f64::NAN);
        Jank {
            count: num("count"),
            blocked: num("blocked"),
            longest: num("longest"),
            p95: num("p95"),
            longest_gap: num("longestGap"),
            frames: num("frames"),
        }
    }
}

/// Two lines for one stretch (`during`, e.g. "navigation → synced table,
/// 100k pods"): the longest main-thread task against 50 ms (goal: none
/// longer), and the frame p95 against one 60 Hz frame.
pub fn jank_rows(id: &str, during: &str, jank: &Jank, budget_ms: f64, note: &str) -> String {
    let mut lines = row(
        id,
        &format!("longest main-thread task, {during}"),
        "ms",
        jank.longest,
        50.0,
        "a long task (50 ms)",
        "no task over 50 ms",
        jank.longest <= 50.0,
        &format!(
            "{:.0} long tasks, {:.0} ms blocked; frame p95 {:.1} ms, longest gap {:.0} ms over {:.0} frames \
             (PerformanceObserver longtask + requestAnimationFrame){}{note}",
            jank.count,
            jank.blocked,
            jank.p95,
            jank.longest_gap,
            jank.frames,
            if note.is_empty() { "" } else { "; " },
        ),
    );
    lines.push_str(&row(
        &format!("{id}.frames"),
        &format!("frame p95, {during}"),
        "ms",
        jank.p95,
        budget_ms,
        "one 60 Hz frame",
        "p95 ≤ 16.7 ms",
        jank.p95 <= budget_ms + 0.5,
        &format!(
            "longest gap {:.0} ms over {:.0} frames",
            jank.longest_gap, jank.frames
        ),
    ));
    lines
}
