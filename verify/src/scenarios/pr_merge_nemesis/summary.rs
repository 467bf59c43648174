//! The summary of a pr_merge campaign: per nemesis and column, over its judged trials.

use super::judge::{TrialJudgement, RESTART_FAILED};
use super::record::Cell;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One nemesis and column's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisColumn {
    /// Judged trials.
    pub judged: u32,
    /// Of those, trials whose drawn fault did not fire: counted apart, in no figure below.
    pub not_fired: u32,
    /// Fired trials within the column's assumptions.
    pub within: u32,
    /// Of those, trials whose invariant did not hold.
    pub violations_within: u32,
    /// Of those, wrong answers (unresolved ones excluded: they gave none).
    pub wrong_within: u32,
    /// Fired trials beyond the column's assumptions.
    pub beyond: u32,
    /// Of those, trials whose invariant did not hold.
    pub violations_beyond: u32,
    /// Of those, wrong answers.
    pub wrong_beyond: u32,
    /// Fired trials whose last restart ended in an error (no answer).
    pub unresolved: u32,
}

/// The summary, keyed `<nemesis>:<column>`.
pub type Summary = BTreeMap<String, NemesisColumn>;

/// Per nemesis and column, every judged trial counted once.
pub fn summarize(judged: &[(&Cell, &TrialJudgement)]) -> Summary {
    let mut out = Summary::new();
    for (cell, j) in judged {
        let key = format!("{}:{}", cell.planned.nemesis, cell.planned.column);
        let s = out.entry(key).or_default();
        s.judged += 1;
        if !j.fired {
            s.not_fired += 1;
            continue;
        }
        let unresolved = cell.ticket.status == RESTART_FAILED;
        s.unresolved += u32::from(unresolved);
        let violated = u32::from(!j.merge.invariant_held);
        let wrong = u32::from(!j.merge.answer_matches && !unresolved);
        if j.beyond.is_some() {
            s.beyond += 1;
            s.violations_beyond += violated;
            s.wrong_beyond += wrong;
        } else {
            s.within += 1;
            s.violations_within += violated;
            s.wrong_within += wrong;
        }
    }
    out
}
