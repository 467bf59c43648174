//! The figures of a billing_credit results file (`interlock-results/1`): the matrix's size, each
//! column's counts, timings and outcomes, the rows where columns differ, the per-row credits and
//! the premise candidates table, each derived with the definitions the published report uses.

mod candidates;
mod columns;

pub use candidates::{CandidateFigure, CandidateRow, CandidateTotal, CANDIDATES};
pub use columns::ColumnFigures;

use crate::check::{verify_results, ResultsReport};
use crate::receipt::KeyCheck;
use crate::results::{Cell, ResultsFile};
use std::collections::{BTreeMap, BTreeSet};

/// A row of the matrix: a crash point and an outage.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    /// The crash point.
    pub crash: String,
    /// The outage.
    pub outage: String,
}

/// One cell's place in the matrix, without its column: the row and the repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellAt {
    /// The row.
    pub row: Row,
    /// Which repeat of the row, from 0.
    pub repeat: u32,
}

impl Row {
    fn of(c: &Cell) -> Row {
        Row {
            crash: c.crash.clone(),
            outage: c.outage.clone(),
        }
    }
}

/// The paired cells (same row and repeat, both judged) where two columns differ on the invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Differ {
    cells: Vec<CellAt>,
    rows: Vec<Row>,
}

impl Differ {
    /// The differing cells of the first column, in file order.
    pub fn cells(&self) -> &[CellAt] {
        &self.cells
    }

    /// How many paired cells differ.
    pub fn count(&self) -> usize {
        self.cells.len()
    }

    /// The distinct rows of [`Differ::cells`], in first-seen order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }
}

/// One row and column's judged cells: the case credits Stripe holds (summed over repeats) and
/// their final statuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowColumn {
    /// The row.
    pub row: Row,
    /// The column.
    pub column: String,
    /// Judged cells of the row and column (one per repeat).
    pub cells: u32,
    /// Case credits Stripe holds, summed over those cells.
    pub credited: i64,
    /// Their final statuses, with how many cells ended in each.
    pub outcomes: BTreeMap<String, u32>,
}

/// What `verify` derived from a billing_credit results file, beside its report.
#[derive(Debug, Clone)]
pub struct ResultsFigures {
    cells: u32,
    replayed: u32,
    judged: u32,
    harness_errors: u32,
    sigkilled: u32,
    repeats: u32,
    receipts: u32,
    receipts_verified: u32,
    approved: Option<i64>,
    columns: BTreeMap<String, ColumnFigures>,
    differ: BTreeMap<(String, String), Differ>,
    row_columns: Vec<RowColumn>,
    row_wants: Vec<BTreeSet<u32>>,
    candidates: Vec<CandidateRow>,
    candidate_totals: Vec<CandidateTotal>,
}

/// A results file checked by [`verify_results`]: its report and its figures. A renderer shows
/// the figures only when `report.ok`.
#[derive(Debug, Clone)]
pub struct Checked {
    /// What the check found, and the per-column summary it derived.
    pub report: ResultsReport,
    /// The figures of the file, derived from the file and that report.
    pub figures: ResultsFigures,
}

/// Check `file` under `key` with [`verify_results`] and derive its figures.
pub fn check(file: &ResultsFile, key: &KeyCheck) -> Checked {
    let report = verify_results(file, key);
    let figures = ResultsFigures::derive(file, &report);
    Checked { report, figures }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl ResultsFigures {
    fn derive(f: &ResultsFile, report: &ResultsReport) -> ResultsFigures {
        let judged = count(f.cells.iter().filter(|c| c.judged()).count());
        let receipts: Vec<_> = report
            .cell_reports
            .iter()
            .filter_map(|c| c.receipt.as_ref())
            .collect();
        let caps: BTreeSet<i64> = f.cells.iter().map(|c| c.case.approval.max_cents).collect();
        let columns = columns::derive(f, &report.summary);
        let (candidates, candidate_totals) = candidates::derive(f);
        ResultsFigures {
            cells: count(f.cells.len()),
            replayed: count(
                f.cells
                    .iter()
                    .filter(|c| {
                        c.decision
                            .as_ref()
                            .is_some_and(|d| d.replayed_from.is_some())
                    })
                    .count(),
            ),
            judged,
            harness_errors: count(f.cells.len()).saturating_sub(judged),
            sigkilled: count(
                f.cells
                    .iter()
                    .filter(|c| c.judged() && c.worker_exit_signal == Some(9))
                    .count(),
            ),
            repeats: f.cells.iter().map(|c| c.repeat + 1).max().unwrap_or(1),
            receipts: count(f.cells.iter().filter(|c| c.receipt.is_some()).count()),
            receipts_verified: count(
                receipts
                    .iter()
                    .filter(|r| r.valid && r.problems.is_empty())
                    .count(),
            ),
            approved: (caps.len() == 1).then(|| caps.first().copied()).flatten(),
            columns,
            differ: differ_all(f),
            row_columns: row_columns(f),
            row_wants: row_wants(f),
            candidates,
            candidate_totals,
        }
    }

    /// Cells in the file.
    pub fn cells(&self) -> u32 {
        self.cells
    }

    /// Cells whose saved decision was replayed from another cell of its row.
    pub fn replayed(&self) -> u32 {
        self.replayed
    }

    /// Cells that ran to a judgement (not HARNESS_ERROR).
    pub fn judged(&self) -> u32 {
        self.judged
    }

    /// Cells that are HARNESS_ERROR.
    pub fn harness_errors(&self) -> u32 {
        self.harness_errors
    }

    /// Judged cells whose worker ended by signal 9.
    pub fn sigkilled(&self) -> u32 {
        self.sigkilled
    }

    /// The largest repeat count of any cell (1 when every cell ran once, or there is none).
    pub fn repeats(&self) -> u32 {
        self.repeats
    }

    /// Cells that carry a receipt.
    pub fn receipts(&self) -> u32 {
        self.receipts
    }

    /// Receipts `verify` found valid and without a problem.
    pub fn receipts_verified(&self) -> u32 {
        self.receipts_verified
    }

    /// The approval cap in cents, when every cell's case has the same.
    pub fn approved(&self) -> Option<i64> {
        self.approved
    }

    /// Per column with judged cells or named by the file, and summarized by `verify`, its
    /// figures (columns in name order).
    pub fn columns(&self) -> &BTreeMap<String, ColumnFigures> {
        &self.columns
    }

    /// The paired cells where columns `a` and `b` differ on the invariant; `None` when either
    /// column is not one of the file's.
    pub fn differ(&self, a: &str, b: &str) -> Option<&Differ> {
        self.differ.get(&(a.to_owned(), b.to_owned()))
    }

    /// Per row and column (in file order) with judged cells, their credits and final statuses.
    pub fn row_columns(&self) -> &[RowColumn] {
        &self.row_columns
    }

    /// Per row of the file (in its order), the distinct wanted credit counts of its judged
    /// cells in the file's columns (empty when none is judged).
    pub fn row_wants(&self) -> &[BTreeSet<u32>] {
        &self.row_wants
    }

    /// The premise candidates table: one row per matrix row with a judged cell that read its
    /// candidates at decision and restart.
    pub fn candidates(&self) -> &[CandidateRow] {
        &self.candidates
    }

    /// Per premise candidate (in [`CANDIDATES`] order), the rows where it was right and wrong.
    pub fn candidate_totals(&self) -> &[CandidateTotal] {
        &self.candidate_totals
    }
}

/// For every ordered pair of different columns of the file, where they differ.
fn differ_all(f: &ResultsFile) -> BTreeMap<(String, String), Differ> {
    let mut out = BTreeMap::new();
    for a in &f.columns {
        for b in &f.columns {
            if a != b {
                out.insert((a.clone(), b.clone()), differ(f, a, b));
            }
        }
    }
    out
}

/// The judged cells of `a` whose judged partner in `b` (same row and repeat) differs on
/// `invariant_held`.
fn differ(f: &ResultsFile, a: &str, b: &str) -> Differ {
    let mut cells = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for ca in f.cells.iter().filter(|c| c.column == a && c.judged()) {
        let partner = f.cells.iter().find(|c| {
            c.column == b
                && c.crash == ca.crash
                && c.outage == ca.outage
                && c.repeat == ca.repeat
                && c.judged()
        });
        if let Some(cb) = partner {
            if ca.invariant_held != cb.invariant_held {
                let row = Row::of(ca);
                if !rows.contains(&row) {
                    rows.push(row.clone());
                }
                cells.push(CellAt {
                    row,
                    repeat: ca.repeat,
                });
            }
        }
    }
    Differ { cells, rows }
}

/// Per row of the file, the distinct wants of its judged cells in the file's columns.
fn row_wants(f: &ResultsFile) -> Vec<BTreeSet<u32>> {
    f.rows
        .iter()
        .map(|r| {
            f.cells
                .iter()
                .filter(|c| c.crash == r.crash && c.outage == r.outage)
                .filter(|c| f.columns.contains(&c.column) && c.judged())
                .map(|c| c.want.count)
                .collect()
        })
        .collect()
}

/// Per row and column of the file, the judged cells' credits and final statuses.
fn row_columns(f: &ResultsFile) -> Vec<RowColumn> {
    let mut out = Vec::new();
    for row in &f.rows {
        for col in &f.columns {
            let cells: Vec<&Cell> = f
                .cells
                .iter()
                .filter(|c| c.crash == row.crash && c.outage == row.outage && &c.column == col)
                .filter(|c| c.judged())
                .collect();
            if cells.is_empty() {
                continue;
            }
            let mut outcomes: BTreeMap<String, u32> = BTreeMap::new();
            for c in &cells {
                *outcomes.entry(c.outcome.clone()).or_default() += 1;
            }
            out.push(RowColumn {
                row: Row {
                    crash: row.crash.clone(),
                    outage: row.outage.clone(),
                },
                column: col.clone(),
                cells: count(cells.len()),
                credited: cells
                    .iter()
                    .map(|c| i64::from(c.ground_truth.case_credit_count))
                    .sum(),
                outcomes,
            });
        }
    }
    out
}
