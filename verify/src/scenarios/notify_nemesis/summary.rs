//! The summary of a notify campaign: per nemesis and column, over its judged trials.

use super::judge::TrialJudgement;
use super::plan::MID_DATA;
use super::record::Cell;
use crate::scenarios::notify::Answer;
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
    /// Of those, trials whose invariant did not hold (more or fewer emails than wanted).
    pub violations_within: u32,
    /// Of those, trials with more emails than wanted (a second email, or one that should not
    /// have gone out).
    pub over_within: u32,
    /// Of those, trials with fewer emails than wanted (the customer was never told).
    pub under_within: u32,
    /// Of those, wrong answers (unresolved ones excluded: they gave none).
    pub wrong_within: u32,
    /// Of those, answers that say the outcome cannot be known: handed to a person.
    pub handoffs_within: u32,
    /// Of the handoffs within, those whose mailbox held the case's email (what the person
    /// would find; the rest held none).
    pub handoffs_found_sent: u32,
    /// Fired trials beyond the column's assumptions.
    pub beyond: u32,
    /// Of those, trials whose invariant did not hold.
    pub violations_beyond: u32,
    /// Of those, wrong answers.
    pub wrong_beyond: u32,
    /// Of those, handoffs.
    pub handoffs_beyond: u32,
    /// Fired trials that gave no final answer (the last restart ended in an error, or the
    /// gate's effect was left in flight).
    pub unresolved: u32,
    /// SIGKILLs inside the SMTP `DATA` in fired trials (of a first worker or of a restart).
    pub killed_mid_data: u32,
    /// Of those, kills after which the mailbox held one more email of the case than before
    /// the killed worker ran (the server must discard a message whose final `.` never came:
    /// want 0).
    pub kept_mid_data: u32,
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
        if cell.ticket.killed_at.as_deref() == Some(MID_DATA) {
            s.killed_mid_data += 1;
            s.kept_mid_data += u32::from(!cell.truth.before_outage.is_empty());
        }
        if let (Some(MID_DATA), Some(after)) = (
            cell.restart_killed_at.as_deref(),
            cell.after_restart_kill.as_ref(),
        ) {
            s.killed_mid_data += 1;
            s.kept_mid_data += u32::from(after.len() > cell.truth.before_outage.len());
        }
        let unresolved = j.mail.answer == Answer::Unresolved;
        s.unresolved += u32::from(unresolved);
        let m = &j.mail;
        let violated = u32::from(!m.invariant_held);
        let wrong = u32::from(m.answer == Answer::Wrong && !unresolved);
        let handoff = u32::from(m.answer == Answer::HandedOff);
        if j.beyond.is_some() {
            s.beyond += 1;
            s.violations_beyond += violated;
            s.wrong_beyond += wrong;
            s.handoffs_beyond += handoff;
        } else {
            s.within += 1;
            s.violations_within += violated;
            s.over_within += u32::from(m.delivered > m.want);
            s.under_within += u32::from(m.delivered < m.want);
            s.wrong_within += wrong;
            s.handoffs_within += handoff;
            s.handoffs_found_sent += handoff * u32::from(m.delivered > 0);
        }
    }
    out
}
