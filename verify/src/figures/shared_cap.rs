//! The figures of a shared_cap results file: each column's summary with its judged cells (the
//! denominator of its ratios) and the rows where it went over the cap, and each cell's refunds
//! that count, and the 95% interval on the rate at which its cap held over its repeats; each
//! with the definitions the published pages use.

use crate::nemesis::rules::clopper_pearson_interval95_ppm;
use crate::receipt::KeyCheck;
use crate::shared_cap::check::{check as check_cap, CapReport};
use crate::shared_cap::record::CapResults;
use crate::shared_cap::summary::ColumnSummary;
use crate::shared_cap::CAP_CENTS;

/// A shared_cap results file checked by `verify::shared_cap::check::check`: its report and its
/// figures. A renderer shows the figures only when `report.ok`.
#[derive(Debug, Clone)]
pub struct Checked {
    /// What the check found, and the per-column summary it derived.
    pub report: CapReport,
    /// The figures of the file.
    pub figures: CapFigures,
}

/// Check `file` under `key` with `verify::shared_cap::check::check` and derive its figures.
pub fn check(file: &CapResults, key: &KeyCheck) -> Checked {
    let report = check_cap(file, key);
    let figures = CapFigures::derive(file, &report);
    Checked { report, figures }
}

/// A row of the matrix: a crash point and an overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapRow {
    /// The crash point.
    pub crash_point: String,
    /// The overlap.
    pub overlap: String,
}

/// One column's figures.
#[derive(Debug, Clone)]
pub struct CapColumn {
    summary: ColumnSummary,
    judged: u32,
    held_interval95_ppm: (u32, u32),
    over_rows: Vec<CapRow>,
}

impl CapColumn {
    /// The column's summary as `verify` derived it.
    pub fn summary(&self) -> &ColumnSummary {
        &self.summary
    }

    /// Cells judged (not harness errors): the denominator of the column's ratios.
    pub fn judged(&self) -> u32 {
        self.judged
    }

    /// The two-sided 95% Clopper–Pearson interval on the rate at which the cap held, over the
    /// column's judged cells (every row and repeat), in parts per million: (lower, upper). The
    /// method of the nemesis pages' bounds ([`crate::nemesis::rules`]).
    pub fn held_interval95_ppm(&self) -> (u32, u32) {
        self.held_interval95_ppm
    }

    /// The distinct rows, in file order, in which a judged cell of the column refunded more
    /// than the cap.
    pub fn over_rows(&self) -> &[CapRow] {
        &self.over_rows
    }
}

/// What `verify` derived from a shared_cap results file, beside its report.
#[derive(Debug, Clone)]
pub struct CapFigures {
    cells: u32,
    columns: Vec<CapColumn>,
    refunds: Vec<u32>,
}

impl CapFigures {
    fn derive(file: &CapResults, report: &CapReport) -> CapFigures {
        CapFigures {
            cells: u32::try_from(file.cells.len()).unwrap_or(u32::MAX),
            columns: report
                .summary
                .iter()
                .map(|s| {
                    let judged = s.cells.saturating_sub(s.harness_errors);
                    CapColumn {
                        summary: s.clone(),
                        judged,
                        held_interval95_ppm: clopper_pearson_interval95_ppm(s.held, judged),
                        over_rows: over_rows(file, &s.column),
                    }
                })
                .collect(),
            refunds: file
                .cells
                .iter()
                .map(|c| {
                    let n = c.truth.refunds.iter().filter(|r| r.counts()).count();
                    u32::try_from(n).unwrap_or(u32::MAX)
                })
                .collect(),
        }
    }

    /// Cells in the file.
    pub fn cells(&self) -> u32 {
        self.cells
    }

    /// Per column, in the summary's order, its figures.
    pub fn columns(&self) -> &[CapColumn] {
        &self.columns
    }

    /// The refunds that count (succeeded or pending) of the file's cell `index`.
    pub fn refunds(&self, index: usize) -> Option<u32> {
        self.refunds.get(index).copied()
    }
}

/// The rows (crash point, overlap) in which `column` went over the cap, in file order.
fn over_rows(file: &CapResults, column: &str) -> Vec<CapRow> {
    let mut rows: Vec<CapRow> = Vec::new();
    for c in file
        .cells
        .iter()
        .filter(|c| c.column == column && c.judged() && c.truth.refunded_cents() > CAP_CENTS)
    {
        let row = CapRow {
            crash_point: c.crash_point.clone(),
            overlap: c.overlap.clone(),
        };
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    rows
}
