//! Judging a shared_cap cell from what Stripe holds: the one place the runner's judgement and
//! the check's re-derivation both come from.

use super::proof::proves;
use super::record::CapCell;
use super::truth::{answer_matches, invariant_held};

/// What the rules give for a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// The invariant held.
    pub invariant_held: bool,
    /// Every ticket's answer matches Stripe.
    pub answers_match: bool,
    /// Per ticket, in the cell's order.
    pub tickets: Vec<TicketJudgement>,
}

/// What the rules give for one ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TicketJudgement {
    /// Its final answer matches Stripe.
    pub answer_matches: bool,
    /// Its record proves its outcome.
    pub proof: bool,
}

/// The cell's judgement from its ground truth, statuses and records (the cell is only read).
pub fn judgement(cell: &CapCell, key: &ed25519_dalek::VerifyingKey) -> Judgement {
    let tickets: Vec<TicketJudgement> = cell
        .tickets
        .iter()
        .map(|t| TicketJudgement {
            answer_matches: answer_matches(&t.status, &t.ticket_id, &cell.truth),
            proof: proves(&cell.column, t, &cell.truth, key),
        })
        .collect();
    Judgement {
        invariant_held: invariant_held(&cell.truth),
        answers_match: tickets.iter().all(|t| t.answer_matches),
        tickets,
    }
}

/// Fills `invariant_held`, `answers_match` and every ticket's `answer_matches` and `proof`
/// with the cell's [`judgement`].
pub fn judge(cell: &mut CapCell, key: &ed25519_dalek::VerifyingKey) {
    let j = judgement(cell, key);
    cell.invariant_held = j.invariant_held;
    cell.answers_match = j.answers_match;
    for (t, d) in cell.tickets.iter_mut().zip(j.tickets) {
        t.answer_matches = d.answer_matches;
        t.proof = d.proof;
    }
}
