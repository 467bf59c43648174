//! The interlock column's proof rule, shared by every scenario: the receipt verifies, what it
//! proves happened agrees with what the service holds, and when it proves the effect happened,
//! the service holds exactly one such object and the COMMITTED evidence names it.

use crate::receipt::{Happened, ReceiptReport};
use serde_json::Value;

/// Whether the column's record proves what happened: `Ok(())`, or why not.
pub type Proof = Result<(), Unproven>;

/// Why a column's record does not prove what happened; its text is one clause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unproven {
    /// An interlock cell without a receipt.
    #[error("the cell has no receipt")]
    NoReceipt,
    /// A column that keeps no record (no_check).
    #[error("a column without a record proves nothing")]
    NoRecord,
    /// The receipt's chain or signatures do not verify.
    #[error("its receipt does not verify")]
    ReceiptInvalid,
    /// The receipt says the effect happened (or not) and the service disagrees.
    #[error("the receipt says happened = {happened} while Stripe holds {held} case {what}(s)")]
    HappenedDisagrees {
        /// What the receipt says.
        happened: Happened,
        /// How many objects of the effect the service holds.
        held: usize,
        /// The kind of object.
        what: &'static str,
    },
    /// The receipt proves one object and the service holds another number.
    #[error("the receipt proves one {what} while Stripe holds {held} case {what}s")]
    NotExactlyOne {
        /// How many objects of the effect the service holds.
        held: usize,
        /// The kind of object.
        what: &'static str,
    },
    /// The COMMITTED evidence names an object the service does not hold.
    #[error("the COMMITTED evidence names {what} {named:?}, which the ground truth does not hold")]
    EvidenceNotHeld {
        /// The kind of object.
        what: &'static str,
        /// The id the evidence names, `(none)` when it names none.
        named: String,
    },
    /// hand_check's log says sent and the service holds no object.
    #[error("the log says sent while Stripe holds no case credit")]
    LogSaysSent,
    /// hand_check's log says not sent and the service holds an object.
    #[error("the log says not sent while Stripe holds a case credit")]
    LogSaysNotSent,
    /// hand_check's log does not say which: why, in one clause.
    #[error("{0}")]
    LogUnclear(String),
}

/// The rule for one receipt. `held` is how many objects of this effect the service holds and
/// `holds(id)` whether it holds the one named `id`; the evidence names it under `evidence_key`;
/// `what` names the kind of object in messages (`credit`, `refund`).
pub fn receipt_proof(
    report: &ReceiptReport,
    held: usize,
    holds: impl Fn(&str) -> bool,
    evidence_key: &str,
    what: &'static str,
) -> Proof {
    let named = report
        .evidence
        .as_ref()
        .and_then(|e| e.get(evidence_key))
        .and_then(Value::as_str);
    if !report.valid {
        return Err(Unproven::ReceiptInvalid);
    }
    if !report.happened.agrees_with(held > 0) {
        return Err(Unproven::HappenedDisagrees {
            happened: report.happened,
            held,
            what,
        });
    }
    if report.happened == Happened::Yes && held != 1 {
        return Err(Unproven::NotExactlyOne { held, what });
    }
    if report.happened == Happened::Yes && !named.is_some_and(&holds) {
        return Err(Unproven::EvidenceNotHeld {
            what,
            named: named.unwrap_or("(none)").to_owned(),
        });
    }
    Ok(())
}
