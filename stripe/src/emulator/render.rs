//! JSON shapes of the emulator's objects (API version [`crate::API_VERSION`];
//! the same in every version of [`super::versions::ACCEPTED_VERSIONS`]), list
//! envelopes, and `expand`.

use super::errors::ApiError;
use super::payments::{Charge, PaymentIntent, Refund};
use super::state::{
    Account, BalanceTxn, Clock, CreditNote, Customer, Invoice, Line, Metadata, Price, Product,
    SubItem, Subscription,
};
use serde_json::{json, Value};

fn metadata(m: &Metadata) -> Value {
    json!(m)
}

/// `{"object": "list", "data": [...], "has_more": ..., "url": ...}`.
pub(crate) fn list(url: &str, data: Vec<Value>, has_more: bool) -> Value {
    json!({ "object": "list", "data": data, "has_more": has_more, "url": url })
}

pub(crate) fn clock(c: &Clock, advancing_to: Option<i64>) -> Value {
    let (status, details) = match advancing_to {
        Some(target) => (
            "advancing",
            json!({ "advancing": { "target_frozen_time": target } }),
        ),
        None => ("ready", json!({})),
    };
    json!({
        "id": c.id,
        "object": "test_helpers.test_clock",
        "created": c.created,
        "deletes_after": c.deletes_after,
        "frozen_time": c.frozen_time,
        "livemode": false,
        "name": c.name,
        "status": status,
        "status_details": details,
    })
}

pub(crate) fn customer(c: &Customer) -> Value {
    json!({
        "id": c.id,
        "object": "customer",
        "address": null,
        "balance": c.balance,
        "created": c.created,
        "currency": c.currency,
        "default_source": null,
        "delinquent": false,
        "description": c.description,
        "discount": null,
        "email": c.email,
        "invoice_credit_balance": {},
        "invoice_prefix": c.invoice_prefix,
        "invoice_settings": {
            "custom_fields": null,
            "default_payment_method": c.default_payment_method,
            "footer": null,
            "rendering_options": null,
        },
        "livemode": false,
        "metadata": metadata(&c.metadata),
        "name": c.name,
        "next_invoice_sequence": c.next_invoice_sequence,
        "phone": c.phone,
        "preferred_locales": [],
        "shipping": null,
        "tax_exempt": "none",
        "test_clock": c.test_clock,
    })
}

pub(crate) fn product(p: &Product) -> Value {
    json!({
        "id": p.id,
        "object": "product",
        "active": p.active,
        "created": p.created,
        "default_price": null,
        "description": p.description,
        "images": [],
        "livemode": false,
        "marketing_features": [],
        "metadata": metadata(&p.metadata),
        "name": p.name,
        "package_dimensions": null,
        "shippable": null,
        "statement_descriptor": null,
        "tax_code": null,
        // Products made through the API for prices and subscriptions are
        // services (the other value, `good`, is for physical goods).
        "type": "service",
        "unit_label": null,
        "updated": p.created,
        "url": null,
    })
}

pub(crate) fn price(p: &Price) -> Value {
    let recurring = p.recurring.map(|r| {
        json!({
            "interval": r.interval.as_str(),
            "interval_count": r.interval_count,
            "meter": null,
            "usage_type": "licensed",
        })
    });
    json!({
        "id": p.id,
        "object": "price",
        "active": p.active,
        "billing_scheme": "per_unit",
        "created": p.created,
        "currency": p.currency,
        "custom_unit_amount": null,
        "livemode": false,
        "lookup_key": p.lookup_key,
        "metadata": metadata(&p.metadata),
        "nickname": p.nickname,
        "product": p.product,
        "recurring": recurring,
        "tax_behavior": "unspecified",
        "tiers_mode": null,
        "transform_quantity": null,
        "type": if p.recurring.is_some() { "recurring" } else { "one_time" },
        "unit_amount": p.unit_amount,
        "unit_amount_decimal": p.unit_amount.to_string(),
    })
}

/// The legacy `plan` view of a recurring price, as Stripe still shows it on
/// subscription items (same id as the price); `null` for a one-time price.
fn plan(p: &Price) -> Value {
    let Some(recurring) = p.recurring else {
        return Value::Null;
    };
    json!({
        "id": p.id,
        "object": "plan",
        "active": p.active,
        "amount": p.unit_amount,
        "amount_decimal": p.unit_amount.to_string(),
        "billing_scheme": "per_unit",
        "created": p.created,
        "currency": p.currency,
        "interval": recurring.interval.as_str(),
        "interval_count": recurring.interval_count,
        "livemode": false,
        "metadata": metadata(&p.metadata),
        "meter": null,
        "nickname": p.nickname,
        "product": p.product,
        "tiers_mode": null,
        "transform_usage": null,
        "trial_period_days": null,
        "usage_type": "licensed",
    })
}

fn sub_item(a: &Account, sub: &Subscription, item: &SubItem) -> Value {
    let item_price = a.prices.get(&item.price);
    json!({
        "id": item.id,
        "object": "subscription_item",
        "billing_thresholds": null,
        "created": item.created,
        "current_period_end": item.period_end,
        "current_period_start": item.period_start,
        "discounts": [],
        "metadata": metadata(&item.metadata),
        "plan": item_price.map_or(Value::Null, plan),
        "price": item_price.map_or(Value::Null, price),
        "quantity": item.quantity,
        "subscription": sub.id,
        "tax_rates": [],
    })
}

fn billing_mode(s: &Subscription) -> Value {
    if s.billing_mode == "flexible" {
        json!({
            "flexible": { "proration_discounts": s.proration_discounts },
            "type": "flexible",
        })
    } else {
        json!({ "flexible": null, "type": "classic" })
    }
}

pub(crate) fn subscription(a: &Account, s: &Subscription) -> Value {
    let items: Vec<Value> = s.items.iter().map(|i| sub_item(a, s, i)).collect();
    json!({
        "id": s.id,
        "object": "subscription",
        "application": null,
        "application_fee_percent": null,
        "automatic_tax": { "disabled_reason": null, "enabled": false, "liability": null },
        "billing_cycle_anchor": s.billing_cycle_anchor,
        "billing_cycle_anchor_config": null,
        "billing_mode": billing_mode(s),
        "billing_schedules": [],
        "billing_thresholds": null,
        "cancel_at": null,
        "cancel_at_period_end": s.cancel_at_period_end,
        "canceled_at": s.canceled_at,
        "cancellation_details": { "comment": null, "feedback": null, "reason": null },
        "collection_method": s.collection_method,
        "created": s.created,
        "currency": s.currency,
        "customer": s.customer,
        // Set only for customers represented by a v2 Account, which the
        // emulator does not model.
        "customer_account": null,
        "days_until_due": null,
        "default_payment_method": s.default_payment_method,
        "default_source": null,
        "default_tax_rates": [],
        "description": s.description,
        "discounts": [],
        "ended_at": s.ended_at,
        "invoice_settings": { "account_tax_ids": null, "issuer": { "type": "self" } },
        "items": {
            "object": "list",
            "data": items,
            "has_more": false,
            "url": format!("/v1/subscription_items?subscription={}", s.id),
        },
        "latest_invoice": s.latest_invoice,
        "livemode": false,
        "metadata": metadata(&s.metadata),
        "next_pending_invoice_item_invoice": null,
        "on_behalf_of": null,
        "pause_collection": null,
        "payment_settings": {
            "payment_method_options": null,
            "payment_method_types": null,
            "save_default_payment_method": "off",
        },
        "pending_invoice_item_interval": null,
        "pending_setup_intent": null,
        "pending_update": null,
        "schedule": null,
        "start_date": s.start_date,
        "status": s.status,
        "test_clock": s.test_clock,
        "transfer_data": null,
        "trial_end": null,
        "trial_settings": { "end_behavior": { "missing_payment_method": "create_invoice" } },
        "trial_start": null,
    })
}

pub(crate) fn line(invoice: &str, l: &Line) -> Value {
    let credited = l
        .credited
        .as_ref()
        .map(|(inv, lines)| json!({ "invoice": inv, "invoice_line_items": lines }));
    json!({
        "id": l.id,
        "object": "line_item",
        "amount": l.amount,
        "currency": l.currency,
        "description": l.description,
        "discount_amounts": [],
        "discountable": true,
        "discounts": [],
        "invoice": invoice,
        "livemode": false,
        "metadata": metadata(&l.metadata),
        "parent": {
            "type": "subscription_item_details",
            "invoice_item_details": null,
            "subscription_item_details": {
                "invoice_item": l.invoice_item,
                "proration": l.proration,
                "proration_details": { "credited_items": credited },
                "subscription": l.subscription,
                "subscription_item": l.subscription_item,
            },
        },
        "period": { "end": l.period_end, "start": l.period_start },
        "pretax_credit_amounts": [],
        "pricing": {
            "type": "price_details",
            "price_details": { "price": l.price, "product": l.product },
            "unit_amount_decimal": if l.quantity != 0 { (l.amount / l.quantity).to_string() } else { "0".to_string() },
        },
        "quantity": l.quantity,
        // The line's subscription, also under `parent`: clients read both.
        "subscription": l.subscription,
        "subtotal": l.amount,
        "taxes": [],
    })
}

pub(crate) fn invoice(a: &Account, inv: &Invoice) -> Value {
    let lines: Vec<Value> = inv.lines.iter().map(|l| line(&inv.id, l)).collect();
    // Before finalization Stripe shows the customer's current balance.
    let starting_balance = inv
        .starting_balance
        .unwrap_or_else(|| a.customers.get(&inv.customer).map_or(0, |c| c.balance));
    let customer = a.customers.get(&inv.customer);
    let parent = inv.subscription.as_ref().map(|sub| {
        json!({
            "type": "subscription_details",
            "quote_details": null,
            "subscription_details": { "metadata": {}, "subscription": sub },
        })
    });
    json!({
        "id": inv.id,
        "object": "invoice",
        "account_country": "US",
        "account_name": "Interlock emulator",
        "account_tax_ids": null,
        "amount_due": inv.amount_due,
        "amount_overpaid": 0,
        "amount_paid": inv.amount_paid,
        "amount_paid_off_stripe": inv.amount_paid_off_stripe,
        "amount_remaining": inv.amount_remaining,
        "amount_shipping": 0,
        "application": null,
        "attempt_count": inv.attempt_count,
        "attempted": inv.attempted,
        "auto_advance": inv.auto_advance,
        "automatic_tax": {
            "disabled_reason": null, "enabled": false, "liability": null,
            "provider": null, "status": null,
        },
        "automatically_finalizes_at": inv.automatically_finalizes_at,
        "billing_reason": inv.billing_reason,
        "collection_method": inv.collection_method,
        "confirmation_secret": null,
        "created": inv.created,
        "currency": inv.currency,
        "custom_fields": null,
        "customer": inv.customer,
        "customer_account": null,
        "customer_address": null,
        "customer_email": customer.and_then(|c| c.email.clone()),
        "customer_name": customer.and_then(|c| c.name.clone()),
        "customer_phone": null,
        "customer_shipping": null,
        "customer_tax_exempt": "none",
        "customer_tax_ids": [],
        "default_payment_method": inv.default_payment_method,
        "default_source": null,
        "default_tax_rates": [],
        "description": inv.description,
        "discounts": [],
        "due_date": null,
        "effective_at": inv.finalized_at,
        "ending_balance": inv.ending_balance,
        "footer": null,
        "from_invoice": null,
        "hosted_invoice_url": null,
        "invoice_pdf": null,
        "issuer": { "type": "self" },
        "last_finalization_error": null,
        "latest_revision": null,
        "lines": {
            "object": "list",
            "data": lines,
            "has_more": false,
            "url": format!("/v1/invoices/{}/lines", inv.id),
        },
        "livemode": false,
        "metadata": metadata(&inv.metadata),
        "next_payment_attempt": null,
        "number": inv.number,
        "on_behalf_of": null,
        "parent": parent,
        "payment_settings": {
            "default_mandate": null,
            "payment_method_options": null,
            "payment_method_types": null,
        },
        "period_end": inv.period_end,
        "period_start": inv.period_start,
        "post_payment_credit_notes_amount": inv.post_payment_credit_notes_amount,
        "pre_payment_credit_notes_amount": inv.pre_payment_credit_notes_amount,
        "receipt_number": null,
        "rendering": null,
        "shipping_cost": null,
        "shipping_details": null,
        "starting_balance": starting_balance,
        "statement_descriptor": null,
        "status": inv.status,
        "status_transitions": {
            "finalized_at": inv.finalized_at,
            "marked_uncollectible_at": null,
            "paid_at": inv.paid_at,
            "voided_at": inv.voided_at,
        },
        "subtotal": inv.subtotal,
        "subtotal_excluding_tax": inv.subtotal,
        "test_clock": inv.test_clock,
        "total": inv.total,
        "total_discount_amounts": [],
        "total_excluding_tax": inv.total,
        "total_pretax_credit_amounts": [],
        "total_taxes": [],
        "webhooks_delivered_at": inv.finalized_at,
    })
}

pub(crate) fn balance_txn(t: &BalanceTxn) -> Value {
    json!({
        "id": t.id,
        "object": "customer_balance_transaction",
        "amount": t.amount,
        "checkout_session": null,
        "created": t.created,
        "credit_note": t.credit_note,
        "currency": t.currency,
        "customer": t.customer,
        "customer_account": null,
        "description": t.description,
        "ending_balance": t.ending_balance,
        "invoice": t.invoice,
        "livemode": false,
        "metadata": metadata(&t.metadata),
        "type": t.kind,
    })
}

pub(crate) fn credit_note_lines(cn: &CreditNote) -> Vec<Value> {
    cn.lines
        .iter()
        .map(|l| {
            let mut v = json!({
                "id": l.id,
                "object": "credit_note_line_item",
                "amount": l.amount,
                "description": l.description,
                "discount_amount": 0,
                "discount_amounts": [],
                "livemode": false,
                "metadata": {},
                "pretax_credit_amounts": [],
                "quantity": null,
                "tax_rates": [],
                "taxes": [],
                "type": if l.invoice_line_item.is_some() { "invoice_line_item" } else { "custom_line_item" },
                "unit_amount": null,
                "unit_amount_decimal": null,
            });
            if let (Some(obj), Some(item)) = (v.as_object_mut(), &l.invoice_line_item) {
                obj.insert("invoice_line_item".into(), json!(item));
            }
            v
        })
        .collect()
}

pub(crate) fn credit_note(cn: &CreditNote) -> Value {
    json!({
        "id": cn.id,
        "object": "credit_note",
        "amount": cn.amount,
        "amount_shipping": 0,
        "created": cn.created,
        "currency": cn.currency,
        "customer": cn.customer,
        "customer_account": null,
        "customer_balance_transaction": cn.customer_balance_transaction,
        "discount_amount": 0,
        "discount_amounts": [],
        "effective_at": cn.effective_at,
        "invoice": cn.invoice,
        "lines": {
            "object": "list",
            "data": credit_note_lines(cn),
            "has_more": false,
            "url": format!("/v1/credit_notes/{}/lines", cn.id),
        },
        "livemode": false,
        "memo": cn.memo,
        "metadata": metadata(&cn.metadata),
        "number": cn.number,
        "out_of_band_amount": if cn.out_of_band_amount > 0 { json!(cn.out_of_band_amount) } else { Value::Null },
        "pdf": format!("https://emulator.invalid/credit_notes/{}/pdf", cn.id),
        "post_payment_amount": cn.post_payment_amount,
        "pre_payment_amount": cn.pre_payment_amount,
        "pretax_credit_amounts": [],
        "reason": cn.reason,
        "refunds": [],
        "shipping_cost": null,
        "status": cn.status,
        "subtotal": cn.amount,
        "subtotal_excluding_tax": cn.amount,
        "total": cn.amount,
        "total_excluding_tax": cn.amount,
        "total_taxes": [],
        "type": cn.kind,
        "voided_at": cn.voided_at,
    })
}

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
    json!({
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
        "status": "succeeded",
        "transfer_reversal": null,
    })
}

/// Any object by id, for `expand`.
pub(crate) fn by_id(a: &Account, id: &str) -> Option<Value> {
    let prefix = id.split('_').next().unwrap_or_default();
    match prefix {
        "clock" => a
            .clocks
            .get(id)
            .map(|c| clock(c, a.advancing.get(id).copied())),
        "cus" => a.customers.get(id).map(customer),
        "prod" => a.products.get(id).map(product),
        "price" => a.prices.get(id).map(price),
        "sub" => a.subscriptions.get(id).map(|s| subscription(a, s)),
        "in" => a.invoices.get(id).map(|i| invoice(a, i)),
        "cbtxn" => a.balance_txns.get(id).map(balance_txn),
        "cn" => a.credit_notes.get(id).map(credit_note),
        "pi" => a.payment_intents.get(id).map(payment_intent),
        "ch" => a.charges.get(id).map(|c| charge(a, c)),
        "re" => a.refunds.get(id).map(refund),
        _ => None,
    }
}

/// Applies `expand[]` paths (dot-separated, `data.` for lists, at most 4 levels).
pub(crate) fn expand(a: &Account, value: &mut Value, paths: &[String]) -> Result<(), ApiError> {
    for (i, path) in paths.iter().enumerate() {
        let segs: Vec<&str> = path.split('.').collect();
        if segs.len() > 4 {
            return Err(ApiError::invalid(
                format!("expand[{i}]"),
                format!("You cannot expand more than 4 levels of a property. Property: {path}"),
            ));
        }
        expand_one(a, value, &segs, path, i)?;
    }
    Ok(())
}

fn expand_one(
    a: &Account,
    value: &mut Value,
    segs: &[&str],
    path: &str,
    index: usize,
) -> Result<(), ApiError> {
    let Some((first, rest)) = segs.split_first() else {
        return Ok(());
    };
    let cannot = || {
        ApiError::invalid(
            format!("expand[{index}]"),
            format!("This property cannot be expanded ({path})."),
        )
    };
    let Some(obj) = value.as_object_mut() else {
        return Err(cannot());
    };
    let Some(field) = obj.get_mut(*first) else {
        return Err(cannot());
    };
    match field {
        Value::Null => Ok(()),
        Value::String(id) => {
            let resolved = by_id(a, id).ok_or_else(cannot)?;
            *field = resolved;
            expand_one(a, field, rest, path, index)
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                match item {
                    Value::String(id) => {
                        *item = by_id(a, id).ok_or_else(cannot)?;
                        expand_one(a, item, rest, path, index)?;
                    }
                    Value::Object(_) => expand_one(a, item, rest, path, index)?,
                    _ => return Err(cannot()),
                }
            }
            Ok(())
        }
        Value::Object(_) => {
            if rest.is_empty() {
                Ok(())
            } else {
                expand_one(a, field, rest, path, index)
            }
        }
        _ => Err(cannot()),
    }
}
