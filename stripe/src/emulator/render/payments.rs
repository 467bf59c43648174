//! PaymentIntents, charges and refunds.

use super::super::payments::{Charge, PaymentIntent, Refund};
use super::super::state::Account;
use super::list;
use super::metadata;
use serde_json::{json, Value};

pub(crate) fn payment_intent(pi: &PaymentIntent) -> Value {
    let automatic = pi
        .automatic
        .map(|(enabled, redirects)| json!({ "allow_redirects": redirects, "enabled": enabled }));
    json!({
        "id": pi.id,
        "object": "payment_intent",
        "amount": pi.amount,
        "amount_capturable": 0,
        "amount_details": { "tip": {} },
        "amount_received": pi.amount_received(),
        "application": null,
        "application_fee_amount": null,
        "automatic_payment_methods": automatic,
        "canceled_at": null,
        "cancellation_reason": null,
        "capture_method": "automatic",
        "client_secret": pi.client_secret,
        "confirmation_method": "automatic",
        "created": pi.created,
        "currency": pi.currency,
        "customer": pi.customer,
        "customer_account": null,
        "description": pi.description,
        "excluded_payment_method_types": null,
        "last_payment_error": pi.last_payment_error,
        "latest_charge": pi.latest_charge,
        "livemode": false,
        "metadata": metadata(&pi.metadata),
        "next_action": null,
        "on_behalf_of": null,
        "payment_method": pi.payment_method,
        "payment_method_configuration_details": null,
        "payment_method_options": {
            "card": {
                "installments": null,
                "mandate_options": null,
                "network": null,
                "request_three_d_secure": "automatic",
            },
        },
        "payment_method_types": ["card"],
        "processing": null,
        "receipt_email": null,
        "review": null,
        "setup_future_usage": null,
        "shipping": null,
        "statement_descriptor": null,
        "statement_descriptor_suffix": null,
        "status": pi.status,
        "transfer_data": null,
        "transfer_group": null,
    })
}

/// A charge, with its refunds newest first (as the fixture shows them).
pub(crate) fn charge(a: &Account, c: &Charge) -> Value {
    let mut refunds: Vec<&Refund> = a.refunds.values().filter(|r| r.charge == c.id).collect();
    refunds.sort_by_key(|r| std::cmp::Reverse((r.created, r.seq)));
    let refund_data: Vec<Value> = refunds.iter().map(|r| refund(r)).collect();
    let decline = c.card.decline;
    let outcome = match decline {
        None => json!({
            "advice_code": null,
            "network_advice_code": null,
            "network_decline_code": null,
            "network_status": "approved_by_network",
            "reason": null,
            "risk_level": "normal",
            "risk_score": 32,
            "seller_message": "Payment complete.",
            "type": "authorized",
        }),
        Some(d) => json!({
            "advice_code": null,
            "network_advice_code": null,
            "network_decline_code": null,
            "network_status": "declined_by_network",
            "reason": d.decline_code,
            "risk_level": "normal",
            "risk_score": 32,
            "seller_message": "The bank did not return any further details with this decline.",
            "type": "issuer_declined",
        }),
    };
    let paid = decline.is_none();
    json!({
        "id": c.id,
        "object": "charge",
        "amount": c.amount,
        "amount_captured": if paid { c.amount } else { 0 },
        "amount_refunded": c.amount_refunded,
        "application": null,
        "application_fee": null,
        "application_fee_amount": null,
        "balance_transaction": c.balance_transaction,
        "billing_details": {
            "address": {
                "city": null, "country": null, "line1": null, "line2": null,
                "postal_code": null, "state": null,
            },
            "email": null,
            "name": null,
            "phone": null,
            "tax_id": null,
        },
        "calculated_statement_descriptor": "INTERLOCK EMULATOR",
        "captured": paid,
        "created": c.created,
        "currency": c.currency,
        "customer": c.customer,
        "description": c.description,
        "disputed": false,
        "failure_balance_transaction": null,
        "failure_code": decline.map(|_| "card_declined"),
        "failure_message": decline.map(|d| d.message),
        "fraud_details": {},
        "livemode": false,
        "metadata": metadata(&c.metadata),
        "on_behalf_of": null,
        "outcome": outcome,
        "paid": paid,
        "payment_intent": c.payment_intent,
        "payment_method": c.payment_method,
        "payment_method_details": {
            "card": {
                "amount_authorized": if paid { Some(c.amount) } else { None },
                "authorization_code": null,
                "brand": c.card.brand,
                "checks": {
                    "address_line1_check": null,
                    "address_postal_code_check": null,
                    "cvc_check": null,
                },
                "country": "US",
                "exp_month": 12,
                "exp_year": 2034,
                "extended_authorization": { "status": "disabled" },
                "fingerprint": format!("emu{}", c.card.last4),
                "funding": "credit",
                "incremental_authorization": { "status": "unavailable" },
                "installments": null,
                "last4": c.card.last4,
                "mandate": null,
                "multicapture": { "status": "unavailable" },
                "network": c.card.brand,
                "network_token": { "used": false },
                "network_transaction_id": null,
                "overcapture": {
                    "maximum_amount_capturable": c.amount,
                    "status": "unavailable",
                },
                "regulated_status": "unregulated",
                "three_d_secure": null,
                "transaction_link_id": null,
                "wallet": null,
            },
            "type": "card",
        },
        "receipt_email": null,
        "receipt_number": null,
        "receipt_url": format!("https://emulator.invalid/receipts/payment/{}", c.id),
        "refunded": paid && c.amount_refunded >= c.amount,
        "refunds": list(&format!("/v1/charges/{}/refunds", c.id), refund_data, false),
        "review": null,
        "shipping": null,
        "source_transfer": null,
        "statement_descriptor": null,
        "statement_descriptor_suffix": null,
        "status": if paid { "succeeded" } else { "failed" },
        "transfer_data": null,
        "transfer_group": null,
    })
}

pub(crate) fn refund(r: &Refund) -> Value {
    let mut rendered = json!({
        "id": r.id,
        "object": "refund",
        "amount": r.amount,
        "balance_transaction": r.balance_transaction,
        "charge": r.charge,
        "created": r.created,
        "currency": r.currency,
        "customer": null,
        "customer_account": null,
        "destination_details": {
            "card": { "reference_status": "pending", "reference_type": "acquirer_reference_number", "type": "refund" },
            "type": "card",
        },
        "metadata": metadata(&r.metadata),
        "payment_intent": r.payment_intent,
        "payment_method": null,
        "reason": r.reason,
        "receipt_number": null,
        "source_transfer_reversal": null,
        "status": if r.failure_reason.is_some() { "failed" } else { "succeeded" },
        "transfer_reversal": null,
    });
    // Stripe sends `failure_reason` only on a refund that failed.
    if let (Some(why), Some(o)) = (r.failure_reason, rendered.as_object_mut()) {
        o.insert("failure_reason".into(), json!(why));
    }
    rendered
}
