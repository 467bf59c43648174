//! Subscriptions and their items, invoices and their lines, customer balance
//! transactions, credit notes and their lines.

use super::super::state::{Account, BalanceTxn, CreditNote, Invoice, Line, SubItem, Subscription};
use super::metadata;
use serde_json::{json, Value};

use super::catalog::{plan, price};
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
