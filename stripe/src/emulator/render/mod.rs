//! JSON shapes of the emulator's objects (API version [`crate::API_VERSION`];
//! the same in every version of [`super::versions::ACCEPTED_VERSIONS`]), list
//! envelopes, and `expand`. Test clocks and customers are here; the other
//! objects by what they belong to: `catalog.rs`, `billing.rs`, `payments.rs`.

mod billing;
mod catalog;
mod payments;

use super::errors::ApiError;
use super::state::{Account, Clock, Customer, Metadata};
use serde_json::{json, Value};

pub(crate) use billing::{
    balance_txn, credit_note, credit_note_lines, invoice, line, subscription,
};
pub(crate) use catalog::{price, product};
pub(crate) use payments::{charge, payment_intent, refund};

/// An object's `metadata`.
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
