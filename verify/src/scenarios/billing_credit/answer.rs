//! The columns' final statuses, and whether a column's answer matches Stripe: the statuses that
//! say "sent".

use crate::protocol::Status;
use crate::results::GroundTruth;

/// no_check and hand_check: their POST created the credit.
pub const CREDITED: &str = "CREDITED";
/// no_check and hand_check: Stripe answered the POST as a replay of an earlier one under the key.
pub const REPLAYED_BY_STRIPE: &str = "REPLAYED_BY_STRIPE";
/// hand_check: its lookup found the case's credit, so it did not send.
pub const FOUND_BY_LOOKUP: &str = "FOUND_BY_LOOKUP";
/// hand_check: the approval no longer covered the credit.
pub const REFUSED_APPROVAL: &str = "REFUSED:approval";

/// The status a cell gets when the harness could not run it as designed.
pub const HARNESS_ERROR: &str = "HARNESS_ERROR";

/// Whether a final status says the credit went out (or was already out): the columns' own
/// sent statuses, and every status of the gate that records the effect as committed.
pub fn status_says_sent(status: &str) -> bool {
    [CREDITED, REPLAYED_BY_STRIPE, FOUND_BY_LOOKUP].contains(&status)
        || Status::parse(status).is_some_and(Status::is_committed)
}

/// The answer matches Stripe when the final status says "sent" exactly when a case credit exists.
pub fn answer_matches(outcome: &str, truth: &GroundTruth) -> bool {
    status_says_sent(outcome) == (truth.case_credit_count > 0)
}
