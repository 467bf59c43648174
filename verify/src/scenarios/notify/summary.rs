//! The notify summary: per column, over the judged cells, with what the mailbox held for every
//! case handed to a person.

use super::judge::{Answer, Judgement};
use super::record::Cell;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One column's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSummary {
    /// Judged cells.
    pub judged: u32,
    /// Emails delivered, over every judged cell.
    pub emails_sent: u32,
    /// Emails the want rule allows, over every judged cell.
    pub emails_wanted: u32,
    /// Cells where the invariant held (delivered == want).
    pub held: u32,
    /// Cells with more emails than wanted (a second email, or one that should not go out).
    pub over: u32,
    /// Cells with fewer emails than wanted (the customer was never told).
    pub under: u32,
    /// Cells whose answer states an outcome the mailbox contradicts.
    pub wrong_answers: u32,
    /// Cells whose answer says it cannot know: handed to a person.
    pub handoffs: u32,
    /// Cells that gave no final answer (the restart failed, or the gate's effect was left in
    /// flight): neither right nor wrong.
    #[serde(default)]
    pub unresolved: u32,
    /// For every handoff, what the person would have found in the mailbox.
    pub handed_off: Vec<Handoff>,
}

/// A case handed to a person, and what its mailbox held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// The cell's crash point.
    pub crash_point: String,
    /// The cell's outage.
    pub outage: String,
    /// The cell's repeat.
    pub repeat: u32,
    /// The status that handed it off.
    pub status: String,
    /// Emails of the case in the mailbox.
    pub delivered: u32,
    /// Emails the case may deliver.
    pub want: u32,
}

/// The summary, by column name.
pub type Summary = BTreeMap<String, ColumnSummary>;

/// Per column, every judged cell counted once.
pub fn summarize(judged: &[(&Cell, &Judgement)]) -> Summary {
    let mut out = Summary::new();
    for (cell, j) in judged {
        let s = out.entry(cell.planned.column.clone()).or_default();
        s.judged += 1;
        s.emails_sent = s.emails_sent.saturating_add(j.delivered);
        s.emails_wanted += j.want;
        s.held += u32::from(j.invariant_held);
        s.over += u32::from(j.delivered > j.want);
        s.under += u32::from(j.delivered < j.want);
        s.wrong_answers += u32::from(j.answer == Answer::Wrong);
        s.unresolved += u32::from(j.answer == Answer::Unresolved);
        if j.answer == Answer::HandedOff {
            s.handoffs += 1;
            s.handed_off.push(Handoff {
                crash_point: cell.planned.crash_point.clone(),
                outage: cell.planned.outage.clone(),
                repeat: cell.planned.repeat,
                status: cell.ticket.status.clone(),
                delivered: j.delivered,
                want: j.want,
            });
        }
    }
    out
}
