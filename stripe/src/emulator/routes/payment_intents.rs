//! PaymentIntents paid with a test card (create with `confirm=true`,
//! retrieve) and the charges they create (retrieve).

use super::currency;
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::payments::{test_card, Charge, PaymentIntent, TestCard};
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, wall_now, Account, Metadata};
use crate::emulator::versions::AcceptedVersion;
use serde_json::{json, Value};

/// A create request, parsed and validated: nothing in it can fail any more
/// except the payment itself.
struct NewIntent {
    amount: i64,
    currency: String,
    customer: Option<String>,
    description: Option<String>,
    metadata: Metadata,
    card: Option<TestCard>,
    automatic: Option<(bool, &'static str)>,
    confirm: bool,
    return_url: bool,
}

/// Which payment method types a request asks for: explicitly (only `card` is
/// modelled), or dynamic ones (`automatic_payment_methods`).
fn payment_method_types(
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<Option<(bool, &'static str)>, ApiError> {
    if form.has("payment_method_types") && !version.payment_method_types_writable {
        return Err(ApiError::invalid(
            "payment_method_types",
            format!(
                "`payment_method_types` cannot be set in API version {}: use \
                 `allowed_payment_method_types` or dynamic payment methods \
                 (`automatic_payment_methods`) instead.",
                version.name
            ),
        )
        .with_code("payment_method_types_no_longer_supported"));
    }
    let given: Vec<&str> = [
        "payment_method_types",
        "allowed_payment_method_types",
        "automatic_payment_methods",
    ]
    .into_iter()
    .filter(|p| form.has(p))
    .collect();
    if given.len() > 1 {
        return Err(ApiError::bad_request(format!(
            "You may only specify one of these parameters: {}.",
            given.join(", ")
        )));
    }
    for param in ["payment_method_types", "allowed_payment_method_types"] {
        for (i, t) in form.strings(param)?.iter().enumerate() {
            if t != "card" {
                return Err(ApiError::invalid(
                    format!("{param}[{i}]"),
                    format!(
                        "The payment method type {t:?} is not modelled by this emulator: \
                         only card payments are."
                    ),
                ));
            }
        }
    }
    if !given.is_empty() && given[0] != "automatic_payment_methods" {
        return Ok(None);
    }
    let automatic = form.sub("automatic_payment_methods")?;
    automatic.allow(&["enabled", "allow_redirects"])?;
    let enabled = automatic.bool("enabled")?.unwrap_or(true);
    let redirects = match automatic.choice("allow_redirects", &["always", "never"])? {
        Some("never") => "never",
        _ => "always",
    };
    Ok(Some((enabled, redirects)))
}

fn parse_new_intent(
    a: &Account,
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<NewIntent, ApiError> {
    form.allow(&[
        "amount",
        "currency",
        "customer",
        "description",
        "metadata",
        "payment_method",
        "confirm",
        "payment_method_types",
        "allowed_payment_method_types",
        "automatic_payment_methods",
        "return_url",
        "expand",
    ])?;
    let automatic = payment_method_types(form, version)?;
    let amount = form.req_int("amount")?;
    let currency = currency(form, "currency")?;
    if amount < 1 {
        return Err(positive_integer("amount"));
    }
    if currency == "usd" && amount < 50 {
        return Err(
            ApiError::invalid("amount", "Amount must be at least $0.50 usd")
                .with_code("amount_too_small"),
        );
    }
    let customer = match form.str("customer")? {
        Some(id) => Some(a.customer(id, "customer")?.id.clone()),
        None => None,
    };
    let card = match form.str("payment_method")? {
        Some(token) => Some(
            test_card(token)
                .ok_or_else(|| ApiError::no_such("PaymentMethod", token, "payment_method"))?,
        ),
        None => None,
    };
    let mut metadata = Metadata::new();
    apply_metadata(&mut metadata, form.metadata()?);
    Ok(NewIntent {
        amount,
        currency,
        customer,
        description: form.text("description", 1000)?,
        metadata,
        card,
        automatic,
        confirm: form.bool("confirm")?.unwrap_or(false),
        return_url: form.text("return_url", 5000)?.is_some(),
    })
}

/// 400 `parameter_invalid_integer` for an amount that is not positive.
pub(super) fn positive_integer(param: &str) -> ApiError {
    ApiError::invalid(param, "Invalid positive integer").with_code("parameter_invalid_integer")
}

/// `POST /v1/payment_intents`: creates the PaymentIntent and, with
/// `confirm=true`, pays it at once with its test card.
pub(super) fn create_payment_intent(
    a: &mut Account,
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<Value, ApiError> {
    let new = parse_new_intent(a, form, version)?;
    let created = new
        .customer
        .as_deref()
        .map_or_else(wall_now, |c| a.now_for(c));
    let id = a.new_id("pi");
    let secret = a.token(16);
    // A test card token stands for a fresh PaymentMethod of that card.
    let payment_method = new.card.map(|_| a.new_id("pm"));
    let intent = PaymentIntent {
        id: id.clone(),
        created,
        amount: new.amount,
        currency: new.currency,
        customer: new.customer,
        description: new.description,
        metadata: new.metadata,
        status: if new.card.is_some() {
            "requires_confirmation"
        } else {
            "requires_payment_method"
        },
        payment_method,
        card: new.card,
        automatic: new.automatic,
        latest_charge: None,
        last_payment_error: None,
        client_secret: format!("{id}_secret_{secret}"),
    };
    a.payment_intents.insert(id.clone(), intent);
    if new.confirm {
        confirm(a, &id, new.return_url)?;
    }
    a.payment_intents
        .get(&id)
        .map(render::payment_intent)
        .ok_or_else(|| ApiError::no_such("payment_intent", &id, "id"))
}

/// Confirms a PaymentIntent just created: the card is charged, or the attempt
/// fails as Stripe's does. From here on the request has executed: every error
/// is saved under its idempotency key, and the PaymentIntent stays.
fn confirm(a: &mut Account, id: &str, return_url: bool) -> Result<(), ApiError> {
    let intent = a
        .payment_intents
        .get(id)
        .cloned()
        .ok_or_else(|| ApiError::no_such("payment_intent", id, "id"))?;
    let (card, payment_method) = confirmable(&intent, return_url)?;
    let charge_id = a.new_id("ch");
    let balance_transaction = card.decline.is_none().then(|| a.new_id("txn"));
    a.charges.insert(
        charge_id.clone(),
        Charge {
            id: charge_id.clone(),
            created: intent.created,
            amount: intent.amount,
            currency: intent.currency.clone(),
            customer: intent.customer.clone(),
            description: intent.description.clone(),
            metadata: intent.metadata.clone(),
            payment_intent: intent.id.clone(),
            payment_method: payment_method.clone(),
            card,
            balance_transaction,
            amount_refunded: 0,
        },
    );
    let decline = card.decline;
    let last_error = decline.map(|d| {
        json!({
            "charge": charge_id,
            "code": "card_declined",
            "decline_code": d.decline_code,
            "doc_url": "https://stripe.com/docs/error-codes/card-declined",
            "message": d.message,
            "payment_method": { "id": payment_method, "object": "payment_method", "type": "card" },
            "type": "card_error",
        })
    });
    let updated = a
        .payment_intents
        .get_mut(id)
        .ok_or_else(|| ApiError::no_such("payment_intent", id, "id"))?;
    updated.latest_charge = Some(charge_id.clone());
    updated.last_payment_error = last_error;
    updated.status = if decline.is_some() {
        "requires_payment_method"
    } else {
        "succeeded"
    };
    let Some(d) = decline else {
        return Ok(());
    };
    let rendered = render::payment_intent(updated);
    Err(ApiError::card_error("card_declined", d.message)
        .with_field("charge", json!(charge_id))
        .with_field("decline_code", json!(d.decline_code))
        .with_field("payment_intent", rendered)
        .executed())
}

/// The card and payment method a PaymentIntent is confirmed with; an intent
/// without one, or one that may redirect without a `return_url`, is refused
/// (with the intent in the error, as executed).
fn confirmable(intent: &PaymentIntent, return_url: bool) -> Result<(TestCard, String), ApiError> {
    let with_intent = |e: ApiError| {
        e.with_field("payment_intent", render::payment_intent(intent))
            .executed()
    };
    let (Some(card), Some(payment_method)) = (intent.card, intent.payment_method.clone()) else {
        return Err(with_intent(
            ApiError::bad_request(
                "You cannot confirm this PaymentIntent because it's missing a payment method. \
                 You can either update the PaymentIntent with a payment method and then confirm \
                 it again, or confirm it again directly with a payment method.",
            )
            .with_code("payment_intent_unexpected_state"),
        ));
    };
    if intent.automatic == Some((true, "always")) && !return_url {
        return Err(with_intent(ApiError::bad_request(
            "This PaymentIntent is configured to accept payment methods enabled in your \
             Dashboard. Because some of these payment methods might redirect your customer \
             off of your page, you must provide a `return_url`. If you don't want to accept \
             redirect-based payment methods, set `automatic_payment_methods[enabled]` to \
             `true` and `automatic_payment_methods[allow_redirects]` to `never` when \
             creating Setup Intents and Payment Intents.",
        )));
    }
    Ok((card, payment_method))
}

/// `GET /v1/payment_intents/{id}`.
pub(super) fn retrieve_payment_intent(a: &Account, id: &str) -> Result<Value, ApiError> {
    a.payment_intents
        .get(id)
        .map(render::payment_intent)
        .ok_or_else(|| ApiError::no_such("payment_intent", id, "id"))
}

/// `GET /v1/charges/{id}`.
pub(super) fn retrieve_charge(a: &Account, id: &str) -> Result<Value, ApiError> {
    a.charges
        .get(id)
        .map(|c| render::charge(a, c))
        .ok_or_else(|| ApiError::no_such("charge", id, "id"))
}
