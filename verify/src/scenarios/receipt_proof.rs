//! The interlock column's proof rule, shared by every scenario: the receipt verifies, what it
//! proves happened agrees with what the service holds, and when it proves the effect happened,
//! the service holds exactly one such object and the COMMITTED evidence names it.

use crate::receipt::{Happened, ReceiptReport};
use serde_json::Value;

/// Whether the column's record proves what happened: `Ok(())`, or why not in one clause.
pub type Proof = Result<(), String>;

/// The rule for one receipt. `held` is how many objects of this effect the service holds and
/// `holds(id)` whether it holds the one named `id`; the evidence names it under `evidence_key`;
/// `what` names the kind of object in messages (`credit`, `refund`).
pub fn receipt_proof(
    report: &ReceiptReport,
    held: usize,
    holds: impl Fn(&str) -> bool,
    evidence_key: &str,
    what: &str,
) -> Proof {
    let named = report
        .evidence
        .as_ref()
        .and_then(|e| e.get(evidence_key))
        .and_then(Value::as_str);
    if !report.valid {
        return Err("its receipt does not verify".into());
    }
    if !report.happened.agrees_with(held > 0) {
        return Err(format!(
            "the receipt says happened = {} while Stripe holds {held} case {what}(s)",
            report.happened
        ));
    }
    if report.happened == Happened::Yes && held != 1 {
        return Err(format!(
            "the receipt proves one {what} while Stripe holds {held} case {what}s"
        ));
    }
    if report.happened == Happened::Yes && !named.is_some_and(&holds) {
        return Err(format!(
            "the COMMITTED evidence names {what} {:?}, which the ground truth does not hold",
            named.unwrap_or("(none)")
        ));
    }
    Ok(())
}
