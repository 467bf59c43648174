//! The per-column summary of a shared_cap run: derived from the cells here, written by the
//! runner, re-derived by the check, rendered by the site.

use super::record::CapCell;
use serde::{Deserialize, Serialize};

/// One column's counts over a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSummary {
    /// The column.
    pub column: String,
    /// Cells run (harness errors included).
    pub cells: u32,
    /// Cells whose invariant held.
    pub held: u32,
    /// Judged cells in which worker `a` was SIGKILLed at the row's crash point (in the others it
    /// ended by itself first, refused before it got there).
    pub killed: u32,
    /// Cells where refunds went over the cap.
    pub over_cap: u32,
    /// Cells where every ticket's answer matched Stripe.
    pub answers_matched: u32,
    /// Tickets whose record proves their outcome, of all tickets judged.
    pub proved: u32,
    /// Tickets judged (two per judged cell).
    pub tickets: u32,
    /// Cells the harness could not run as designed (not judged).
    pub harness_errors: u32,
}

/// The columns a file's summary lists: each column of [`super::plan::COLUMNS`] that has a cell
/// in `cells`, in display order (a run without the database runs no `hand_pg_lock` cell).
pub fn columns_of(cells: &[CapCell]) -> Vec<&'static str> {
    super::plan::COLUMNS
        .into_iter()
        .filter(|col| cells.iter().any(|c| c.column == *col))
        .collect()
}

/// The summary of `cells`, one entry per column in `columns` order.
pub fn summarize(cells: &[CapCell], columns: &[&str]) -> Vec<ColumnSummary> {
    columns
        .iter()
        .map(|column| {
            let mine = cells.iter().filter(|c| c.column == *column);
            let mut s = ColumnSummary {
                column: (*column).to_owned(),
                cells: 0,
                held: 0,
                killed: 0,
                over_cap: 0,
                answers_matched: 0,
                proved: 0,
                tickets: 0,
                harness_errors: 0,
            };
            for c in mine {
                s.cells += 1;
                if !c.judged() {
                    s.harness_errors += 1;
                    continue;
                }
                s.held += u32::from(c.invariant_held);
                s.killed += u32::from(c.a_killed());
                s.over_cap += u32::from(c.truth.refunded_cents() > super::CAP_CENTS);
                s.answers_matched += u32::from(c.answers_match);
                for t in &c.tickets {
                    s.tickets += 1;
                    s.proved += u32::from(t.proof);
                }
            }
            s
        })
        .collect()
}

/// [`summarize`] of cells given one at a time, none of them held: every count of a column's
/// summary is a sum over its cells, and the columns listed are [`columns_of`] the cells given.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// One summary per column met so far (of [`super::plan::COLUMNS`]), in no order.
    met: Vec<ColumnSummary>,
}

impl Tally {
    /// Counts cell `c` in its column's summary.
    pub(crate) fn add(&mut self, c: &CapCell) {
        let Some(column) = super::plan::COLUMNS.into_iter().find(|k| *k == c.column) else {
            return;
        };
        for one in summarize(std::slice::from_ref(c), &[column]) {
            match self.met.iter_mut().find(|s| s.column == one.column) {
                Some(s) => s.absorb(one),
                None => self.met.push(one),
            }
        }
    }

    /// [`summarize`] of every cell added, over [`columns_of`] them.
    pub(crate) fn finish(mut self) -> Vec<ColumnSummary> {
        let mut out = Vec::with_capacity(self.met.len());
        for column in super::plan::COLUMNS {
            if let Some(at) = self.met.iter().position(|s| s.column == column) {
                out.push(self.met.swap_remove(at));
            }
        }
        out
    }
}

impl ColumnSummary {
    /// Adds `other`'s counts (of the same column) to these.
    fn absorb(&mut self, other: ColumnSummary) {
        // Every field named: a count added to the summary must be added here too.
        let ColumnSummary {
            column: _,
            cells,
            held,
            killed,
            over_cap,
            answers_matched,
            proved,
            tickets,
            harness_errors,
        } = other;
        self.cells += cells;
        self.held += held;
        self.killed += killed;
        self.over_cap += over_cap;
        self.answers_matched += answers_matched;
        self.proved += proved;
        self.tickets += tickets;
        self.harness_errors += harness_errors;
    }
}
