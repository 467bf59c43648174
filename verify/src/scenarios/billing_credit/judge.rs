//! A cell's judgement, derived from its raw data: `want`, `invariant_held`, `answer_matches` and
//! `proof`. The runner writes a cell's judgement with [`judge`]; `verify` re-derives every cell's
//! with it and compares.

use super::{answer_matches, invariant_held, proof, want_for_decision, Proof};
use crate::receipt::ReceiptReport;
use crate::results::{Cell, Want};

/// What the rules derive for one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// What the want rule allows.
    pub want: Want,
    /// The case's credits are exactly `want`.
    pub invariant_held: bool,
    /// The final status says "sent" exactly when a case credit exists.
    pub answer_matches: bool,
    /// Whether the column's record proves what happened, or why not.
    pub proof: Proof,
}

/// Judges a cell from its raw data; `receipt` is its receipt's report (interlock cells).
pub fn judge(cell: &Cell, receipt: Option<&ReceiptReport>) -> Judgement {
    judge_carrying(cell, cell.receipt.is_some(), receipt)
}

/// [`judge`] of a cell whose receipt was read apart from it: `carries_receipt` says whether the
/// cell has one (`cell.receipt` is not looked at).
pub fn judge_carrying(
    cell: &Cell,
    carries_receipt: bool,
    receipt: Option<&ReceiptReport>,
) -> Judgement {
    let gt = &cell.ground_truth;
    let want = want_for_decision(
        gt,
        &cell.case.case_id,
        &cell.case.incident,
        &cell.case.approval,
        cell.decision.as_ref().map(|d| d.amount),
    );
    Judgement {
        want,
        invariant_held: invariant_held(gt, want),
        answer_matches: answer_matches(&cell.outcome, gt),
        proof: proof::proof_carrying(cell, carries_receipt, receipt),
    }
}

/// Fills a cell's `want`, `invariant_held`, `answer_matches` and `proof` by [`judge`].
pub fn judge_in_place(cell: &mut Cell, receipt: Option<&ReceiptReport>) {
    let j = judge(cell, receipt);
    cell.want = j.want;
    cell.invariant_held = j.invariant_held;
    cell.answer_matches = j.answer_matches;
    cell.proof = j.proof.is_ok();
}
