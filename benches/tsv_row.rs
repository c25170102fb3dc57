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
