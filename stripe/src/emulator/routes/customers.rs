//! Customers: create (on a test clock, with a payment method), update, list.

use super::{check_payment_method, created_filter, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, wall_now, Account, Customer, Metadata};
use serde_json::Value;

const CUSTOMER_PARAMS: [&str; 10] = [
    "name",
    "email",
    "description",
    "phone",
    "metadata",
    "balance",
    "test_clock",
    "payment_method",
    "invoice_settings",
    "expand",
];

pub(super) fn create_customer(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&CUSTOMER_PARAMS)?;
    let settings = form.sub("invoice_settings")?;
    settings.allow(&["default_payment_method"])?;
    let name = form.text("name", 256)?;
    let email = form.text("email", 512)?;
    let description = form.text("description", 350)?;
    let phone = form.text("phone", 20)?;
    let balance = form.int("balance")?.unwrap_or(0);
    let test_clock = match form.str("test_clock")? {
        Some(id) => Some(a.clock(id, "test_clock")?.id.clone()),
        None => None,
    };
    let payment_method = form.str("payment_method")?;
    if let Some(pm) = payment_method {
        check_payment_method("payment_method", pm)?;
    }
    let default_pm = settings.str("default_payment_method")?;
    if let Some(pm) = default_pm {
        check_payment_method("invoice_settings[default_payment_method]", pm)?;
    }
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let created = test_clock
        .as_ref()
        .and_then(|c| a.clocks.get(c))
        .map_or_else(wall_now, |c| c.frozen_time);
    let default_payment_method = attach_payment_method(a, payment_method, default_pm);
    let id = a.new_id("cus");
    let seq = a.next_seq();
    let prefix = a.token(8);
    a.customers.insert(
        id.clone(),
        Customer {
            id: id.clone(),
            seq,
            created,
            name,
            email,
            description,
            phone,
            metadata: meta,
            balance: 0,
            currency: None,
            test_clock,
            default_payment_method,
            invoice_prefix: prefix,
            next_invoice_sequence: 1,
        },
    );
    if balance != 0 {
        a.add_balance_txn(
            &id,
            balance,
            "usd",
            "initial",
            created,
            None,
            None,
            None,
            Metadata::new(),
        );
    }
    a.customer(&id, "id").map(render::customer)
}

/// Attaching a test payment method (e.g. pm_card_visa) gives the customer its
/// own copy with a new id, which then stands for the original in defaults:
/// the customer's default payment method.
fn attach_payment_method(
    a: &mut Account,
    payment_method: Option<&str>,
    default_pm: Option<&str>,
) -> Option<String> {
    let attached = payment_method.map(|_| a.new_id("pm"));
    match (default_pm, payment_method, &attached) {
        (Some(d), Some(p), Some(new)) if d == p => Some(new.clone()),
        (Some(d), _, _) => Some(d.to_string()),
        _ => None,
    }
}

pub(super) fn update_customer(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&[
        "name",
        "email",
        "description",
        "phone",
        "metadata",
        "balance",
        "invoice_settings",
        "expand",
    ])?;
    let settings = form.sub("invoice_settings")?;
    settings.allow(&["default_payment_method"])?;
    let name = form.text("name", 256)?;
    let email = form.text("email", 512)?;
    let description = form.text("description", 350)?;
    let phone = form.text("phone", 20)?;
    let balance = form.int("balance")?;
    let default_pm = settings.str("default_payment_method")?;
    if let Some(pm) = default_pm.filter(|p| !p.is_empty()) {
        check_payment_method("invoice_settings[default_payment_method]", pm)?;
    }
    let meta = form.metadata()?;
    let now = a.now_for(id);
    let current = a.customer(id, "id")?.clone();
    if let Some(b) = balance {
        if b != current.balance {
            let currency = current.currency.clone().unwrap_or_else(|| "usd".into());
            a.add_balance_txn(
                id,
                b - current.balance,
                &currency,
                "adjustment",
                now,
                None,
                None,
                None,
                Metadata::new(),
            );
        }
    }
    let c = a
        .customers
        .get_mut(id)
        .ok_or_else(|| ApiError::no_such("customer", id, "id"))?;
    if name.is_some() {
        c.name = name.filter(|s| !s.is_empty());
    }
    if email.is_some() {
        c.email = email.filter(|s| !s.is_empty());
    }
    if description.is_some() {
        c.description = description.filter(|s| !s.is_empty());
    }
    if phone.is_some() {
        c.phone = phone.filter(|s| !s.is_empty());
    }
    if let Some(pm) = default_pm {
        c.default_payment_method = (!pm.is_empty()).then(|| pm.to_string());
    }
    apply_metadata(&mut c.metadata, meta);
    Ok(render::customer(c))
}

pub(super) fn list_customers(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&["email", "test_clock", "created"]))?;
    let email = form.str("email")?;
    let clock = form.str("test_clock")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.customers
            .values()
            .filter(|c| email.is_none_or(|e| c.email.as_deref() == Some(e)))
            // Customers on a test clock are listed only when that clock is asked for.
            .filter(|c| c.test_clock.as_deref() == clock)
            .filter(|c| created.admits(c.created))
            .map(|c| (c.created, c.seq, render::customer(c))),
    );
    page(form, "customer", items, "/v1/customers")
}
