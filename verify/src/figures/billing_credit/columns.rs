//! One column's figures over its judged cells: the summary `verify` derived, the violated count
//! and rows, the timings' medians and extremes, and the final statuses, vias and record kinds.

use super::{count, Row};
use crate::results::{median_ms, Cell, ColumnSummary, ResultsFile};
use crate::scenarios::billing_credit::status_says_sent;
use std::collections::{BTreeMap, BTreeSet};

/// One column's figures, over its judged cells.
#[derive(Debug, Clone)]
pub struct ColumnFigures {
    summary: ColumnSummary,
    violated_rows: Vec<Row>,
    median_outage_ms: Option<u64>,
    min_crash_ms: Option<u64>,
    max_crash_ms: Option<u64>,
    min_restart_ms: Option<u64>,
    max_restart_ms: Option<u64>,
    outcomes: BTreeMap<String, u32>,
    vias: BTreeMap<String, u32>,
    sent: u32,
    refused: u32,
    ambiguous: u32,
    records: BTreeSet<String>,
}

impl ColumnFigures {
    /// The column's summary as `verify` derived it from its own judgements: judged cells, held,
    /// answers matched, proof, harness errors and the timings' medians.
    pub fn summary(&self) -> &ColumnSummary {
        &self.summary
    }

    /// Judged cells where the invariant did not hold (`cells - held`, from the summary).
    pub fn violated(&self) -> u32 {
        self.summary.cells.saturating_sub(self.summary.held)
    }

    /// The distinct rows where the column broke the invariant, in file order.
    pub fn violated_rows(&self) -> &[Row] {
        &self.violated_rows
    }

    /// Median of the judged cells' `outage_ms`.
    pub fn median_outage_ms(&self) -> Option<u64> {
        self.median_outage_ms
    }

    /// Shortest `crash_to_settled_ms`.
    pub fn min_crash_ms(&self) -> Option<u64> {
        self.min_crash_ms
    }

    /// Longest `crash_to_settled_ms`.
    pub fn max_crash_ms(&self) -> Option<u64> {
        self.max_crash_ms
    }

    /// Shortest `restart_to_settled_ms`.
    pub fn min_restart_ms(&self) -> Option<u64> {
        self.min_restart_ms
    }

    /// Longest `restart_to_settled_ms`.
    pub fn max_restart_ms(&self) -> Option<u64> {
        self.max_restart_ms
    }

    /// Final statuses, with how many judged cells ended in each.
    pub fn outcomes(&self) -> &BTreeMap<String, u32> {
        &self.outcomes
    }

    /// Interlock's `via`s, with how many judged cells recorded each.
    pub fn vias(&self) -> &BTreeMap<String, u32> {
        &self.vias
    }

    /// Judged cells whose final status says the credit went out.
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// Judged cells whose final status starts with `REFUSED`.
    pub fn refused(&self) -> u32 {
        self.refused
    }

    /// Judged cells whose final status is `AMBIGUOUS`.
    pub fn ambiguous(&self) -> u32 {
        self.ambiguous
    }

    /// The distinct record kinds of the judged cells.
    pub fn records(&self) -> &BTreeSet<String> {
        &self.records
    }
}

/// Per column (the file's, and any a judged cell names) that `verify` summarized, its figures.
pub(super) fn derive(
    f: &ResultsFile,
    summary: &BTreeMap<String, ColumnSummary>,
) -> BTreeMap<String, ColumnFigures> {
    let mut judged: BTreeMap<&str, Vec<&Cell>> = BTreeMap::new();
    for col in &f.columns {
        judged.insert(col.as_str(), Vec::new());
    }
    for c in f.cells.iter().filter(|c| c.judged()) {
        judged.entry(c.column.as_str()).or_default().push(c);
    }
    judged
        .into_iter()
        .filter_map(|(col, cells)| {
            let s = summary.get(col)?;
            Some((col.to_owned(), column(s, &cells)))
        })
        .collect()
}

fn tally(items: impl Iterator<Item = String>) -> BTreeMap<String, u32> {
    let mut m: BTreeMap<String, u32> = BTreeMap::new();
    for i in items {
        *m.entry(i).or_default() += 1;
    }
    m
}

fn column(s: &ColumnSummary, cells: &[&Cell]) -> ColumnFigures {
    let timing = |g: fn(&crate::results::Timings) -> u64| -> Vec<u64> {
        cells
            .iter()
            .filter_map(|c| c.timings.as_ref().map(g))
            .collect()
    };
    let crash = timing(|t| t.crash_to_settled_ms);
    let restart = timing(|t| t.restart_to_settled_ms);
    let outage = timing(|t| t.outage_ms);
    let mut violated_rows: Vec<Row> = Vec::new();
    for c in cells.iter().filter(|c| !c.invariant_held) {
        let row = Row::of(c);
        if !violated_rows.contains(&row) {
            violated_rows.push(row);
        }
    }
    let how_many = |p: &dyn Fn(&Cell) -> bool| count(cells.iter().filter(|c| p(c)).count());
    ColumnFigures {
        summary: s.clone(),
        violated_rows,
        median_outage_ms: median_ms(&outage),
        min_crash_ms: crash.iter().copied().min(),
        max_crash_ms: crash.iter().copied().max(),
        min_restart_ms: restart.iter().copied().min(),
        max_restart_ms: restart.iter().copied().max(),
        outcomes: tally(cells.iter().map(|c| c.outcome.clone())),
        vias: tally(cells.iter().filter_map(|c| c.via.clone())),
        sent: how_many(&|c| status_says_sent(&c.outcome)),
        refused: how_many(&|c| c.outcome.starts_with("REFUSED")),
        ambiguous: how_many(&|c| c.outcome == "AMBIGUOUS"),
        records: cells.iter().map(|c| c.record.clone()).collect(),
    }
}
