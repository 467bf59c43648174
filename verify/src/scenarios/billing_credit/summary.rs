//! The per-column summary (DESIGN §4.6): counts and medians over a column's judged cells. The
//! runner writes it with [`summarize`]; `verify` re-derives it from its own judgements with
//! [`summarize_tallies`]; the site renders the summary `verify` derived.

use crate::results::{median_ms, Cell, ColumnSummary, Timings};
use std::collections::BTreeMap;

/// The per-column summary of `cells`: HARNESS_ERROR cells are counted apart and excluded from every
/// other count and from both medians ([`median_ms`]). The runner writes the summary with this
/// function; `verify` re-derives it from its own recomputed judgements through [`summarize_with`].
pub fn summarize(columns: &[String], cells: &[Cell]) -> BTreeMap<String, ColumnSummary> {
    summarize_with(columns, cells, |_, c| {
        (c.invariant_held, c.answer_matches, c.proof)
    })
}

/// The summary rule over `cells`, with `judged(index, cell)` giving the cell's
/// (invariant_held, answer_matches, proof); see [`summarize_tallies`].
pub fn summarize_with(
    columns: &[String],
    cells: &[Cell],
    mut judged: impl FnMut(usize, &Cell) -> (bool, bool, bool),
) -> BTreeMap<String, ColumnSummary> {
    summarize_tallies(
        columns,
        cells.iter().enumerate().map(|(i, cell)| {
            let (held, answer_matches, proof) = judged(i, cell);
            Tally {
                column: &cell.column,
                judged: cell.judged(),
                timings: cell.timings,
                held,
                answer_matches,
                proof,
            }
        }),
    )
}

/// What the summary rule reads of one cell.
#[derive(Debug, Clone, Copy)]
pub struct Tally<'a> {
    /// The cell's column.
    pub column: &'a str,
    /// The cell ran to a judgement ([`crate::results::Cell::judged`]); the others are
    /// counted apart, as harness errors.
    pub judged: bool,
    /// The cell's timings, if any.
    pub timings: Option<Timings>,
    /// The cell's (judged) `invariant_held`.
    pub held: bool,
    /// The cell's (judged) `answer_matches`.
    pub answer_matches: bool,
    /// The cell's (judged) `proof`.
    pub proof: bool,
}

/// The summary rule, stated once: one pass over the cells (linear time), counts that cannot wrap.
/// Cells of columns not in `columns` are not counted.
pub fn summarize_tallies<'a>(
    columns: &[String],
    cells: impl IntoIterator<Item = Tally<'a>>,
) -> BTreeMap<String, ColumnSummary> {
    struct Acc {
        summary: ColumnSummary,
        crash: Vec<u64>,
        restart: Vec<u64>,
    }
    let mut acc: BTreeMap<&str, Acc> = columns
        .iter()
        .map(|c| {
            let summary = ColumnSummary {
                cells: 0,
                harness_errors: 0,
                held: 0,
                answer_matches: 0,
                proof: 0,
                median_crash_to_settled_ms: None,
                median_restart_to_settled_ms: None,
            };
            let empty = Acc {
                summary,
                crash: Vec::new(),
                restart: Vec::new(),
            };
            (c.as_str(), empty)
        })
        .collect();
    let bump = |n: &mut u32, by: bool| *n = n.saturating_add(u32::from(by));
    for cell in cells {
        let Some(a) = acc.get_mut(cell.column) else {
            continue;
        };
        if !cell.judged {
            bump(&mut a.summary.harness_errors, true);
            continue;
        }
        bump(&mut a.summary.cells, true);
        bump(&mut a.summary.held, cell.held);
        bump(&mut a.summary.answer_matches, cell.answer_matches);
        bump(&mut a.summary.proof, cell.proof);
        if let Some(t) = cell.timings {
            a.crash.push(t.crash_to_settled_ms);
            a.restart.push(t.restart_to_settled_ms);
        }
    }
    acc.into_iter()
        .map(|(column, mut a)| {
            a.summary.median_crash_to_settled_ms = median_ms(&a.crash);
            a.summary.median_restart_to_settled_ms = median_ms(&a.restart);
            (column.to_owned(), a.summary)
        })
        .collect()
}
