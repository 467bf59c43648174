//! Judging a cell from what Stripe holds (DESIGN §4.6), by `verify`'s rules
//! (`verify::scenarios::billing_credit::judge`): the runner only verifies the cell's receipt
//! against the run's key, so that the proof rule reads the same report `verify` derives.

use verify::receipt::{verify_bundle, KeyCheck};
use verify::results::Cell;
use verify::scenarios::billing_credit::judge_in_place;

/// Fills `want`, `invariant_held`, `answer_matches` and `proof` from the cell's raw data.
pub fn judge(cell: &mut Cell, public_key: &ed25519_dalek::VerifyingKey) {
    let report = cell
        .receipt
        .as_ref()
        .map(|bundle| verify_bundle(bundle, &KeyCheck::Pinned(*public_key)));
    judge_in_place(cell, report.as_ref());
}
