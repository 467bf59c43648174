//! The premise candidates table: how each candidate premise would have done on each row.

use crate::format::ratio;
use std::collections::BTreeSet;
use verify::results::{Candidates, Cell, ResultsFile};

/// The three premise candidates, in the order the reference page shows them.
pub const CANDIDATES: [&str; 3] = [
    "customer_balance",
    "compensation_by_others",
    "incident_compensation",
];

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

fn candidate_value(c: &Candidates, name: &str) -> i64 {
    match name {
        "customer_balance" => c.customer_balance,
        "compensation_by_others" => c.compensation_by_others,
        _ => c.incident_compensation,
    }
}

/// The premise candidates table, computed as the original did (reference behaviour §5.5), with
/// each cell's own want: per row, the cells of every column pooled.
pub fn candidate_rows(f: &ResultsFile) -> Vec<CandidateRow> {
    let mut out = Vec::new();
    for r in &f.rows {
        let cells: Vec<(&Cell, Candidates, Option<Candidates>, Candidates)> = f
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
        let n = cells.len() as u32;
        let wants: BTreeSet<u32> = cells.iter().map(|(c, ..)| c.want.count).collect();
        let candidate_cells = CANDIDATES
            .iter()
            .map(|name| {
                let mut triples = BTreeSet::new();
                let (mut at_restart, mut at_crash, mut right) = (0u32, 0u32, true);
                for (c, d, cr, re) in &cells {
                    let dv = candidate_value(d, name);
                    let crv = cr.map(|x| candidate_value(&x, name));
                    let rv = candidate_value(re, name);
                    let crs = crv.map_or("?".to_owned(), |v| v.to_string());
                    triples.insert((dv, crv, rv, format!("{dv} -> {crs} -> {rv}")));
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
                CandidateCell {
                    values: triples
                        .into_iter()
                        .map(|t| t.3)
                        .collect::<Vec<_>>()
                        .join(" / "),
                    refuses_at_restart: ratio(at_restart, n),
                    refuses_at_crash: (at_crash > 0).then(|| ratio(at_crash, n)),
                    right,
                }
            })
            .collect();
        out.push(CandidateRow {
            label: format!("{} / {}", r.crash, r.outage),
            want: wants
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" / "),
            cells: candidate_cells,
        });
    }
    out
}
