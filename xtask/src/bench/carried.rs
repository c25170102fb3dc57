//! The figures a bench run did not measure, carried over from the
//! `BENCHMARKS.md` it replaces, so that `cargo xtask bench --only PART`
//! replaces PART's rows and keeps every other part's — each with the
//! commit and date it was measured on, never passed off as this run's.
//!
//! `BENCHMARKS.md` ends with a comment block holding every row as its
//! bench program wrote it (a `NAME.tsv` line), after the part it came from
//! and the commit and date of the run that measured it. A file written
//! before the block existed has its table and note lines carried as they
//! are ("earlier" rows), until a run measures a row of the same figure or
//! measures every part.

use std::fmt::Write as _;

/// The block's first line.
pub(super) const BEGIN: &str =
    "<!-- measured rows (part, commit, date, row as its bench wrote it): \
     `cargo xtask bench` reads them back to keep the rows of the parts a run does not measure";
/// The block's last line.
pub(super) const END: &str = "-->";
/// The part of a table line carried from a file without the block.
pub(super) const EARLIER_ROW: &str = "earlier-table-line";
/// The part of a note line carried from a file without the block.
pub(super) const EARLIER_NOTE: &str = "earlier-note-line";

/// One row and where it was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Measured {
    /// The result file it came from (`history_figures`), or an earlier part.
    pub part: String,
    pub commit: String,
    pub date: String,
    /// The `NAME.tsv` line, or an earlier file's markdown line (whose
    /// `date` is then what that file said of its run).
    pub line: String,
}

impl Measured {
    pub(super) fn is_earlier(&self) -> bool {
        self.part == EARLIER_ROW || self.part == EARLIER_NOTE
    }

    /// An earlier table line's figure (its first cell), without the note
    /// of how it was run that such a line may end with (`` (`cargo bench
    /// …`, DATE, commit …)``): a run's own rows name their figure alone.
    pub(super) fn earlier_figure(&self) -> Option<&str> {
        (self.part == EARLIER_ROW).then(|| {
            let cell = self
                .line
                .trim_start_matches('|')
                .split(" | ")
                .next()
                .unwrap_or_default();
            match cell.find(" (`cargo ") {
                Some(run_note) => cell[..run_note].trim(),
                None => cell.trim(),
            }
        })
    }
}

/// The rows `text` (a `BENCHMARKS.md`) holds: its block's, or without one
/// its table's and notes' lines as earlier ones.
pub(super) fn read(text: &str) -> Vec<Measured> {
    let mut lines = text.lines();
    if lines.any(|line| line == BEGIN) {
        return lines
            .take_while(|line| *line != END)
            .filter_map(|line| {
                let mut fields = line.splitn(4, '\t');
                Some(Measured {
                    part: fields.next()?.to_owned(),
                    commit: fields.next()?.to_owned(),
                    date: fields.next()?.to_owned(),
                    line: fields.next()?.to_owned(),
                })
            })
            .collect();
    }
    // what that file said of its run (machine, command, commit, date, …)
    let said: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("- "))
        .take_while(|line| line.starts_with("- "))
        .collect();
    let said = said.join("; ");
    let earlier = |part: &str, line: &str| Measured {
        part: part.to_owned(),
        commit: String::new(),
        date: said.clone(),
        line: line.to_owned(),
    };
    let mut rows = Vec::new();
    let mut section = "";
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title;
        } else if section.is_empty() && line.starts_with("| ") && !line.starts_with("| figure |") {
            rows.push(earlier(EARLIER_ROW, line));
        } else if section == "Notes per figure" && line.starts_with("- `") {
            rows.push(earlier(EARLIER_NOTE, line));
        }
    }
    rows
}

/// The block for `rows`.
pub(super) fn block(rows: &[Measured]) -> String {
    let mut s = format!("\n{BEGIN}\n");
    for row in rows {
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}",
            row.part, row.commit, row.date, row.line
        );
    }
    s.push_str(END);
    s.push('\n');
    s
}

/// What the header says of the rows that were not measured by this run:
/// one line per part, commit and date.
pub(super) fn provenance(rows: &[Measured], this_commit: &str, this_date: &str) -> Vec<String> {
    let mut said: Vec<String> = Vec::new();
    for row in rows {
        let line = if row.is_earlier() {
            format!(
                "the table's and notes' lines of the file this run replaced that it did not \
                 measure again (written before this file kept each row's run; that file \
                 said: {})",
                row.date
            )
        } else if row.commit == this_commit && row.date == this_date {
            continue;
        } else {
            format!(
                "`{}` rows: measured on `{}`, {}",
                row.part, row.commit, row.date
            )
        };
        if !said.contains(&line) {
            said.push(line);
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(part: &str, commit: &str, line: &str) -> Measured {
        Measured {
            part: part.into(),
            commit: commit.into(),
            date: "2026-11-28T20:00:00Z".into(),
            line: line.into(),
        }
    }

    #[test]
    fn an_earlier_lines_figure_is_named_without_how_it_was_run() {
        let annotated = row(
            EARLIER_ROW,
            "",
            "| recorded history: deltas/s the sqlite history takes (one thread) (`cargo bench -p x --bench history`, 2026-11-28, commit 075b802) | 29.7 k | 182 k | 0.16× | ≥ 20000/s | ✅ |",
        );
        assert_eq!(
            annotated.earlier_figure(),
            Some("recorded history: deltas/s the sqlite history takes (one thread)")
        );
        let plain = row(
            EARLIER_ROW,
            "",
            "| timeline: bucket 10k marks | 0.6 ms | 16.7 ms | 0.04× | ≤ 1 frame | ✅ |",
        );
        assert_eq!(plain.earlier_figure(), Some("timeline: bucket 10k marks"));
        assert_eq!(row(EARLIER_NOTE, "", "- `x`: note").earlier_figure(), None);
    }

    #[test]
    fn the_block_reads_back_as_written() {
        let rows = vec![
            row(
                "bundle",
                "abc",
                "bundle.served\tpage bundle\tKB\t455\t400\tgoal\t1.14\t≤ 400 KB\tfalse\tnote",
            ),
            row(
                "page",
                "def",
                "page.open.1k\topen\tms\t1\t2\tref\t0.5\t≤ 1×\ttrue\t",
            ),
        ];
        let text = format!("# deltascope benchmarks\n\n| a | b |\n{}", block(&rows));
        assert_eq!(read(&text), rows);
    }

    #[test]
    fn a_file_without_the_block_is_carried_as_its_lines() {
        let text = "# deltascope benchmarks\n\n- command: x\n\n\
            | figure | ours | reference | ratio | goal | met? |\n|---|---|---|---|---|---|\n\
            | core deltas/s | 48.4 k deltas/s | 12.6 k | 3.85× | ≥ 1.0× | ✅ |\n\
            | page bundle | 455 KB | 400 KB | 1.14× | ≤ 400 KB | ❌ |\n\n\
            ## Notes per figure\n\n- `bundle.served`: raw 1491 KB\n\n\
            ## How each figure is measured\n\n- **bundle**: trunk\n";
        let rows = read(text);
        assert!(rows.iter().all(|r| r.date == "- command: x"), "{rows:?}");
        let figures: Vec<&str> = rows.iter().filter_map(Measured::earlier_figure).collect();
        assert_eq!(figures, ["core deltas/s", "page bundle"]);
        let notes: Vec<&str> = rows
            .iter()
            .filter(|r| r.part == EARLIER_NOTE)
            .map(|r| r.line.as_str())
            .collect();
        assert_eq!(notes, ["- `bundle.served`: raw 1491 KB"]);
    }

    #[test]
    fn the_header_names_each_carried_part_once_and_not_this_runs() {
        let rows = vec![
            row("bundle", "abc", "x"),
            row("bundle", "abc", "y"),
            row("page", "new", "z"),
            row(EARLIER_ROW, "", "| a | b |"),
        ];
        let said = provenance(&rows, "new", "2026-11-28T20:00:00Z");
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("`bundle` rows: measured on `abc`"));
    }
}
