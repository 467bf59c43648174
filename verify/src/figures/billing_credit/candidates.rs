//! The premise candidates table: how each candidate premise would have done on each row, as the
//! original implementation computed it (reference behaviour §5.5), with each cell's own want.

use super::{count, Row};
use crate::results::{Candidates, Cell, ResultsFile};
use std::collections::BTreeSet;

/// The three premise candidates, in the order the reference page shows them.
pub const CANDIDATES: [&str; 3] = [
    "customer_balance",
    "compensation_by_others",
    "incident_compensation",
];

/// One row of the premise candidates table: the row's judged cells of every column, pooled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRow {
    /// The row.
    pub row: Row,
    /// The distinct wanted credit counts of the row's cells.
    pub wants: BTreeSet<u32>,
    /// One figure per [`CANDIDATES`], in that order.
    pub cells: Vec<CandidateFigure>,
}

/// How one premise candidate would have done on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateFigure {
    /// The distinct `(decision, crash, restart)` values, in order (`None`: not read at the crash).
    pub values: BTreeSet<(i64, Option<i64>, i64)>,
    /// Cells whose restart value differs from the decision value.
    pub refuses_at_restart: u32,
    /// Cells whose crash value differs from the decision value.
    pub refuses_at_crash: u32,
    /// The row's cells counted.
    pub cells: u32,
    /// For every cell, refusing at restart equals the cell wanting no credit.
    pub right: bool,
}

/// One premise candidate over the whole table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateTotal {
    /// The candidate, one of [`CANDIDATES`].
    pub name: &'static str,
    /// Rows of the table where it was right.
    pub right: u32,
    /// Rows of the table.
    pub rows: u32,
    /// The rows where it was wrong, in table order.
    pub wrong_rows: Vec<Row>,
}

fn candidate_value(c: &Candidates, name: &str) -> i64 {
    match name {
        "customer_balance" => c.customer_balance,
        "compensation_by_others" => c.compensation_by_others,
        _ => c.incident_compensation,
    }
}

/// A row's cells that were judged and read their candidates at decision and restart.
type Read<'a> = (&'a Cell, Candidates, Option<Candidates>, Candidates);

/// The table, and each candidate's totals over it.
pub(super) fn derive(f: &ResultsFile) -> (Vec<CandidateRow>, Vec<CandidateTotal>) {
    let mut rows = Vec::new();
    for r in &f.rows {
        let cells: Vec<Read<'_>> = f
            .cells
            .iter()
            .filter(|c| c.crash == r.crash && c.outage == r.outage && c.judged())
            .filter_map(|c| {
                let o = &c.observations;
                Some((c, o.decision?, o.crash, o.restart?))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        rows.push(CandidateRow {
            row: Row {
                crash: r.crash.clone(),
                outage: r.outage.clone(),
            },
            wants: cells.iter().map(|(c, ..)| c.want.count).collect(),
            cells: CANDIDATES.iter().map(|name| figure(&cells, name)).collect(),
        });
    }
    let totals = CANDIDATES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let right_in =
                |r: &&CandidateRow, right: bool| r.cells.get(i).is_some_and(|c| c.right == right);
            CandidateTotal {
                name,
                right: count(rows.iter().filter(|r| right_in(r, true)).count()),
                rows: count(rows.len()),
                wrong_rows: rows
                    .iter()
                    .filter(|r| right_in(r, false))
                    .map(|r| r.row.clone())
                    .collect(),
            }
        })
        .collect();
    (rows, totals)
}

/// How candidate `name` did on a row's cells.
fn figure(cells: &[Read<'_>], name: &str) -> CandidateFigure {
    let mut values = BTreeSet::new();
    let (mut at_restart, mut at_crash, mut right) = (0u32, 0u32, true);
    for (c, d, cr, re) in cells {
        let dv = candidate_value(d, name);
        let crv = cr.map(|x| candidate_value(&x, name));
        let rv = candidate_value(re, name);
        values.insert((dv, crv, rv));
        let refuses = rv != dv;
        if refuses {
            at_restart += 1;
        }
        if crv.is_some_and(|v| v != dv) {
            at_crash += 1;
        }
        if refuses != (c.want.count == 0) {
            right = false;
        }
    }
    CandidateFigure {
        values,
        refuses_at_restart: at_restart,
        refuses_at_crash: at_crash,
        cells: count(cells.len()),
        right,
    }
}
