//! The figures of a shared_cap results file: each column's summary with its judged cells (the
//! denominator of its ratios) and the rows where it went over the cap, and each cell's refunds
//! that count, and, over the cells whose kill of worker `a` landed, how often its cap held and
//! its weakest row with the 95% interval over that row's repeats; each with the definitions the
//! published pages use.

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

/// How a column did in one row over the repeats whose kill of worker `a` landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowHeld {
    /// The row.
    pub row: CapRow,
    /// Judged cells of the row whose kill of `a` landed.
    pub landed: u32,
    /// Of those, the cells whose cap held.
    pub held: u32,
    /// The two-sided 95% Clopper–Pearson interval on the rate at which the cap held in this
    /// row, over those cells (the row's repeats are draws of one configuration), in parts per
    /// million: (lower, upper).
    pub interval95_ppm: (u32, u32),
}

/// One column's figures.
#[derive(Debug, Clone)]
pub struct CapColumn {
    summary: ColumnSummary,
    judged: u32,
    landed: u32,
    held_landed: u32,
    weakest_row: Option<RowHeld>,
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

    /// Judged cells whose kill of worker `a` landed at the row's crash point: the cells in
    /// which the fault fired. The others (`a` ended before its point) are counted apart.
    pub fn landed(&self) -> u32 {
        self.landed
    }

    /// Of the [`Self::landed`] cells, those whose cap held.
    pub fn held_landed(&self) -> u32 {
        self.held_landed
    }

    /// The row with the lowest rate of held caps over its landed cells (on a tie the one with
    /// the fewest, whose interval is widest; then the first in file order), with its 95% interval: rows are different configurations, so one interval
    /// over every row would treat them as draws of one. `None` when no kill landed.
    pub fn weakest_row(&self) -> Option<&RowHeld> {
        self.weakest_row.as_ref()
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
                    let rows = rows_held(file, &s.column);
                    CapColumn {
                        summary: s.clone(),
                        judged: s.cells.saturating_sub(s.harness_errors),
                        landed: rows.iter().map(|r| r.landed).sum(),
                        held_landed: rows.iter().map(|r| r.held).sum(),
                        weakest_row: weakest(rows),
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

/// Per row of `column` in file order with at least one judged cell whose kill of `a` landed:
/// those cells and how many held.
fn rows_held(file: &CapResults, column: &str) -> Vec<RowHeld> {
    let mut rows: Vec<RowHeld> = Vec::new();
    for c in file
        .cells
        .iter()
        .filter(|c| c.column == column && c.judged() && c.a_killed())
    {
        let row = CapRow {
            crash_point: c.crash_point.clone(),
            overlap: c.overlap.clone(),
        };
        let at = match rows.iter().position(|r| r.row == row) {
            Some(at) => at,
            None => {
                rows.push(RowHeld {
                    row,
                    landed: 0,
                    held: 0,
                    interval95_ppm: (0, 0),
                });
                rows.len() - 1
            }
        };
        rows[at].landed += 1;
        rows[at].held += u32::from(c.invariant_held);
    }
    for r in &mut rows {
        r.interval95_ppm = clopper_pearson_interval95_ppm(r.held, r.landed);
    }
    rows
}

/// The row with the lowest held rate (compared exactly, as fractions); on a tie the one with
/// the fewest landed cells, whose interval is widest; then the first.
fn weakest(rows: Vec<RowHeld>) -> Option<RowHeld> {
    rows.into_iter().reduce(|best, r| {
        let (mine, theirs) = (
            u64::from(r.held) * u64::from(best.landed),
            u64::from(best.held) * u64::from(r.landed),
        );
        if mine < theirs || (mine == theirs && r.landed < best.landed) {
            r
        } else {
            best
        }
    })
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
