//! The premise candidates table: how each candidate premise would have done on each row, as
//! `verify` derived it, formatted.

use crate::format::ratio;
use verify::figures::billing_credit::{self as figures, CandidateFigure};

/// The three premise candidates, in the order the reference page shows them.
pub use verify::figures::billing_credit::CANDIDATES;

/// One row of the premise candidates table.
#[derive(Debug, Clone)]
pub struct CandidateRow {
    /// Row label.
    pub label: String,
    /// Wanted credit counts of the row's cells (distinct, ` / `-joined).
    pub want: String,
    /// One entry per [`CANDIDATES`].
    pub cells: Vec<CandidateCell>,
}

/// How one premise candidate would have done on one row.
#[derive(Debug, Clone)]
pub struct CandidateCell {
    /// Distinct `decision -> crash -> restart` triples, sorted, ` / `-joined.
    pub values: String,
    /// `a/n`: cells whose restart value differs from the decision value.
    pub refuses_at_restart: String,
    /// `b/n`, shown only when b > 0: cells whose crash value differs.
    pub refuses_at_crash: Option<String>,
    /// For every cell, refusing at restart equals the cell wanting no credit.
    pub right: bool,
}

/// The premise candidates table (`verify`'s [`figures::CandidateRow`]s), formatted: per row,
/// the distinct wants, and per candidate its `decision -> crash -> restart` values (`?` when not
/// read at the crash), how many cells it refuses at restart and at the crash, and whether it was
/// right.
pub fn candidate_rows(rows: &[figures::CandidateRow]) -> Vec<CandidateRow> {
    rows.iter()
        .map(|r| CandidateRow {
            label: format!("{} / {}", r.row.crash, r.row.outage),
            want: r
                .wants
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" / "),
            cells: r.cells.iter().map(candidate_cell).collect(),
        })
        .collect()
}

fn candidate_cell(c: &CandidateFigure) -> CandidateCell {
    CandidateCell {
        values: c
            .values
            .iter()
            .map(|(dv, crv, rv)| {
                let crs = crv.map_or("?".to_owned(), |v| v.to_string());
                format!("{dv} -> {crs} -> {rv}")
            })
            .collect::<Vec<_>>()
            .join(" / "),
        refuses_at_restart: ratio(c.refuses_at_restart, c.cells),
        refuses_at_crash: (c.refuses_at_crash > 0).then(|| ratio(c.refuses_at_crash, c.cells)),
        right: c.right,
    }
}
