//! Refunds of a PaymentIntent's charge: create, retrieve, list (by
//! `payment_intent` or `charge`), and a charge's own refund list.

use super::payment_intents::positive_integer;
use super::{created_filter, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::payments::{money, refund_amount, Refund, RefundRefused};
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, Account, Metadata};
use serde_json::Value;

/// What a refund request names.
enum Target {
    /// A charge (given, or the PaymentIntent's latest).
    Charge(String),
    /// A PaymentIntent that has no charge at all.
    Uncharged(String),
}

/// The charge a refund request names, by `payment_intent` (its latest charge)
/// or by `charge`. Unknown ids are 404s found while validating.
fn charge_to_refund(a: &Account, form: &Form<'_>) -> Result<Target, ApiError> {
    let by_intent = match form.str("payment_intent")? {
        Some(id) => Some(
            a.payment_intents
                .get(id)
                .ok_or_else(|| ApiError::no_such("payment_intent", id, "payment_intent"))?,
        ),
        None => None,
    };
    let by_charge = match form.str("charge")? {
        Some(id) => Some(
            a.charges
                .get(id)
                .ok_or_else(|| ApiError::no_such("charge", id, "charge"))?,
        ),
        None => None,
    };
    match (by_intent, by_charge) {
        (None, None) => Err(ApiError::bad_request(
            "One of `charge` or `payment_intent` is required to create a refund.",
        )),
        (Some(pi), Some(ch)) if ch.payment_intent != pi.id => Err(ApiError::invalid(
            "charge",
            format!(
                "Charge {} does not belong to PaymentIntent {}.",
                ch.id, pi.id
            ),
        )),
        (_, Some(ch)) => Ok(Target::Charge(ch.id.clone())),
        (Some(pi), None) => Ok(match &pi.latest_charge {
            Some(ch) => Target::Charge(ch.clone()),
            None => Target::Uncharged(pi.id.clone()),
        }),
    }
}

/// Stripe's answer to a refund it refuses. These are found by the endpoint
/// (the state of the charge), so they are saved under the idempotency key.
fn refused(why: RefundRefused, charge: &str, intent: &str, currency: &str) -> ApiError {
    match why {
        RefundRefused::NotPaid => ApiError::bad_request(format!(
            "This PaymentIntent ({intent}) does not have a successful charge to refund."
        )),
        RefundRefused::AlreadyRefunded => {
            ApiError::bad_request(format!("Charge {charge} has already been refunded."))
                .with_code("charge_already_refunded")
        }
        // Stripe sends this one with `param` but without a `code`.
        RefundRefused::ExceedsRemaining {
            requested,
            remaining,
        } => ApiError::invalid(
            "amount",
            format!(
                "Refund amount ({}) is greater than unrefunded amount on charge ({})",
                money(requested, currency),
                money(remaining, currency)
            ),
        ),
    }
    .executed()
}

/// `POST /v1/refunds`.
pub(super) fn create_refund(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
        "payment_intent",
        "charge",
        "amount",
        "reason",
        "metadata",
        "expand",
    ])?;
    let requested = form.int("amount")?;
    if requested.is_some_and(|n| n < 1) {
        return Err(positive_integer("amount"));
    }
    let reason = form
        .choice(
            "reason",
            &["duplicate", "fraudulent", "requested_by_customer"],
        )?
        .map(str::to_string);
    let mut metadata = Metadata::new();
    apply_metadata(&mut metadata, form.metadata()?);
    let charge = match charge_to_refund(a, form)? {
        Target::Charge(id) => a
            .charges
            .get(&id)
            .cloned()
            .ok_or_else(|| ApiError::no_such("charge", &id, "charge"))?,
        Target::Uncharged(intent) => {
            return Err(refused(RefundRefused::NotPaid, "", &intent, "usd"))
        }
    };
    let amount = refund_amount(&charge, requested)
        .map_err(|why| refused(why, &charge.id, &charge.payment_intent, &charge.currency))?;
    let created = charge
        .customer
        .as_deref()
        .map_or_else(crate::emulator::state::wall_now, |c| a.now_for(c));
    let id = a.new_id("re");
    let seq = a.next_seq();
    let balance_transaction = a.new_id("txn");
    let refund = Refund {
        id: id.clone(),
        seq,
        created,
        amount,
        currency: charge.currency.clone(),
        charge: charge.id.clone(),
        payment_intent: charge.payment_intent.clone(),
        reason,
        metadata,
        balance_transaction,
        failure_reason: None,
    };
    if let Some(c) = a.charges.get_mut(&charge.id) {
        c.amount_refunded += amount;
    }
    let rendered = render::refund(&refund);
    a.refunds.insert(id, refund);
    Ok(rendered)
}

/// `GET /v1/refunds/{id}`.
pub(super) fn retrieve_refund(a: &Account, id: &str) -> Result<Value, ApiError> {
    a.refunds
        .get(id)
        .map(render::refund)
        .ok_or_else(|| ApiError::no_such("refund", id, "id"))
}

/// `GET /v1/refunds`: newest first, optionally those of one PaymentIntent or
/// one charge.
pub(super) fn list_refunds(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&["payment_intent", "charge", "created"]))?;
    let intent = form.str("payment_intent")?;
    let charge = form.str("charge")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.refunds
            .values()
            .filter(|r| intent.is_none_or(|pi| r.payment_intent == pi))
            .filter(|r| charge.is_none_or(|ch| r.charge == ch))
            .filter(|r| created.admits(r.created))
            .map(|r| (r.created, r.seq, render::refund(r))),
    );
    page(form, "refund", items, "/v1/refunds")
}

/// `GET /v1/charges/{id}/refunds`: the refunds of one charge, newest first.
pub(super) fn list_charge_refunds(
    a: &Account,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&super::LIST)?;
    if !a.charges.contains_key(id) {
        return Err(ApiError::no_such("charge", id, "charge"));
    }
    let items = newest_first(
        a.refunds
            .values()
            .filter(|r| r.charge == id)
            .map(|r| (r.created, r.seq, render::refund(r))),
    );
    page(form, "refund", items, &format!("/v1/charges/{id}/refunds"))
}
