//! The `no_check` column: the decision was saved before the send; the credit is POSTed under
//! `Idempotency-Key: goodwill-credit-<case>`; the restart re-sends the saved decision under the
//! same key without re-reading anything.

use super::target::{post_credit, CreditPosted};
use super::{CaseFile, Crash, ScenarioError};
use verify::results::Decision;

/// `CREDITED`, or `REPLAYED_BY_STRIPE` when Stripe answered from its idempotency cache.
pub(crate) fn send(
    client: &stripe::Client,
    case: &CaseFile,
    decision: &Decision,
    crash: Option<&Crash>,
) -> Result<(&'static str, CreditPosted), ScenarioError> {
    let posted = post_credit(
        client,
        case,
        &case.customer,
        decision.amount,
        &decision.description,
        &case.idempotency_key(),
        None,
        crash,
    )?;
    let status = if posted.replayed {
        verify::scenarios::billing_credit::answer::REPLAYED_BY_STRIPE
    } else {
        verify::scenarios::billing_credit::answer::CREDITED
    };
    Ok((status, posted))
}
