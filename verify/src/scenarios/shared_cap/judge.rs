//! Judging a shared_cap cell from what Stripe holds: the one place the runner's judgement and
//! the check's re-derivation both come from.

use super::proof::proves;
use super::record::CapCell;
use super::truth::{answer_matches, invariant_held};

/// Fills `invariant_held`, `answers_match` and every ticket's `answer_matches` and `proof`
/// from the cell's ground truth, statuses and records.
pub fn judge(cell: &mut CapCell, key: &ed25519_dalek::VerifyingKey) {
    cell.invariant_held = invariant_held(&cell.truth);
    let mut all = true;
    for t in &mut cell.tickets {
        t.answer_matches = answer_matches(&t.status, &t.ticket_id, &cell.truth);
        t.proof = proves(&cell.column, t, &cell.truth, key);
        all &= t.answer_matches;
    }
    cell.answers_match = all;
}
