//! Invoices: list, finalize, pay.

use super::{check_payment_method, created_filter, newest_first, page, with_list};
use crate::emulator::billing;
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::Account;
use serde_json::Value;

pub(super) fn list_invoices(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&[
        "customer",
        "subscription",
        "status",
        "collection_method",
        "created",
    ]))?;
    let created = created_filter(form)?;
    let customer = form.str("customer")?;
    let subscription = form.str("subscription")?;
    let status = form.choice(
        "status",
        &["draft", "open", "paid", "uncollectible", "void"],
    )?;
    let method = form.choice(
        "collection_method",
        &["charge_automatically", "send_invoice"],
    )?;
    let items = newest_first(
        a.invoices
            .values()
            .filter(|i| customer.is_none_or(|c| i.customer == c))
            .filter(|i| subscription.is_none_or(|s| i.subscription.as_deref() == Some(s)))
            .filter(|i| status.is_none_or(|s| i.status == s))
            .filter(|i| method.is_none_or(|m| i.collection_method == m))
            .filter(|i| created.admits(i.created))
            .map(|i| (i.created, i.seq, render::invoice(a, i))),
    );
    page(form, "invoice", items, "/v1/invoices")
}

pub(super) fn finalize_invoice(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&["auto_advance", "expand"])?;
    let auto_advance = form.bool("auto_advance")?;
    let inv = a.invoice(id, "invoice")?.clone();
    if inv.status != "draft" {
        return Err(ApiError::bad_request(format!(
            "This invoice is already finalized, you can't re-finalize a non-draft invoice ({id})."
        ))
        .with_code("invoice_not_editable")
        .executed());
    }
    let now = a.now_for(&inv.customer);
    if let Some(auto) = auto_advance {
        if let Some(i) = a.invoices.get_mut(id) {
            i.auto_advance = auto;
        }
    }
    billing::finalize(a, id, now);
    if a.invoices.get(id).is_some_and(|i| i.auto_advance) {
        billing::attempt_payment(a, id, now);
    }
    let inv = a.invoice(id, "invoice")?;
    Ok(render::invoice(a, inv))
}

pub(super) fn pay_invoice(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
        "paid_out_of_band",
        "payment_method",
        "off_session",
        "forgive",
        "expand",
    ])?;
    let oob = form.bool("paid_out_of_band")?.unwrap_or(false);
    form.bool("off_session")?;
    form.bool("forgive")?;
    let pm = form.str("payment_method")?;
    if let Some(pm) = pm {
        check_payment_method("payment_method", pm)?;
    }
    let inv = a.invoice(id, "invoice")?.clone();
    match inv.status {
        "paid" => {
            return Err(
                ApiError::bad_request(format!("Invoice is already paid ({id}).")).executed(),
            )
        }
        "void" | "uncollectible" => {
            return Err(ApiError::bad_request(format!(
                "This invoice can't be paid because it is {} ({id}).",
                inv.status
            ))
            .executed())
        }
        _ => {}
    }
    let now = a.now_for(&inv.customer);
    if inv.status == "draft" {
        billing::finalize(a, id, now);
    }
    if oob {
        billing::pay_out_of_band(a, id, now);
    } else {
        if let Some(pm) = pm {
            if let Some(i) = a.invoices.get_mut(id) {
                i.default_payment_method = Some(pm.to_string());
            }
        }
        if !billing::attempt_payment(a, id, now) {
            return Err(ApiError::payment_failed(id));
        }
    }
    let inv = a.invoice(id, "invoice")?;
    Ok(render::invoice(a, inv))
}
