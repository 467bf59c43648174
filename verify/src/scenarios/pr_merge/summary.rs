//! The pr_merge summary: per column, over the judged cells.

use super::judge::Judgement;
use super::record::Cell;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One column's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSummary {
    /// Judged cells.
    pub judged: u32,
    /// Cells where the invariant held.
    pub held: u32,
    /// Cells where the case merged more than it may (a second merge, or a merge it may not make).
    pub over: u32,
    /// Cells where the case merged less than it may.
    pub under: u32,
    /// Cells where an unreviewed head was merged.
    pub unreviewed: u32,
    /// Cells whose final answer did not match the repository.
    pub wrong_answers: u32,
}

/// The summary, by column name.
pub type Summary = BTreeMap<String, ColumnSummary>;

/// Per column, every judged cell counted once.
pub fn summarize(judged: &[(&Cell, &Judgement)]) -> Summary {
    let mut out = Summary::new();
    for (cell, j) in judged {
        let s = out.entry(cell.planned.column.clone()).or_default();
        s.judged += 1;
        s.held += u32::from(j.invariant_held);
        s.over += u32::from(j.merges > j.want);
        s.under += u32::from(j.merges < j.want);
        s.unreviewed += u32::from(j.merged_unreviewed);
        s.wrong_answers += u32::from(!j.answer_matches);
    }
    out
}
