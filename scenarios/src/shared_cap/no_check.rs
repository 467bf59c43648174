//! The `no_check` column: POST the saved decision under the ticket's own idempotency key
//! (`goodwill-refund-<ticket>`); the restart re-sends it under the same key. Nothing looks at
//! the order's other refunds.

use super::order::{Decision, OrderFile, Ticket};
use super::refund::post_refund;
use crate::billing_credit::{Crash, ScenarioError};
use verify::billing_credit::REPLAYED_BY_STRIPE;
use verify::shared_cap::REFUNDED;

/// The ticket's own idempotency key.
pub(crate) fn key(ticket: &Ticket) -> String {
    format!("goodwill-refund-{}", ticket.id)
}

/// Send (first run and restart alike): `REFUNDED`, or `REPLAYED_BY_STRIPE` when Stripe answers
/// with the saved refund of an earlier request under the key.
pub(crate) fn send(
    client: &stripe::Client,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    crash: Option<&Crash>,
) -> Result<String, ScenarioError> {
    let posted = post_refund(
        client,
        order,
        &ticket.id,
        decision.amount,
        &key(ticket),
        None,
        crash,
    )?;
    Ok(if posted.replayed {
        REPLAYED_BY_STRIPE
    } else {
        REFUNDED
    }
    .to_owned())
}
