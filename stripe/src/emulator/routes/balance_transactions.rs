//! Customer balance transactions: create, retrieve, update, list.

use super::{created_filter, currency, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, Account, Metadata};
use serde_json::Value;

pub(super) fn create_balance_txn(
    a: &mut Account,
    cus: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&["amount", "currency", "description", "metadata", "expand"])?;
    let customer = a.customer(cus, "customer")?.clone();
    let amount = form.req_int("amount")?;
    let currency = currency(form, "currency")?;
    if let Some(existing) = customer.currency.as_deref() {
        if existing != currency {
            return Err(ApiError::invalid(
                "currency",
                format!(
                    "The customer's currency is {existing}; a balance transaction in {currency} \
                     is not allowed (multi-currency balances are not modelled)."
                ),
            )
            .executed());
        }
    }
    let description = form.text("description", 350)?;
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let now = a.now_for(cus);
    let id = a.add_balance_txn(
        cus,
        amount,
        &currency,
        "adjustment",
        now,
        None,
        None,
        description,
        meta,
    );
    balance_txn(a, cus, &id).map(render::balance_txn)
}

pub(super) fn balance_txn<'a>(
    a: &'a Account,
    cus: &str,
    id: &str,
) -> Result<&'a crate::emulator::state::BalanceTxn, ApiError> {
    a.customer(cus, "customer")?;
    a.balance_txns
        .get(id)
        .filter(|t| t.customer == cus)
        .ok_or_else(|| ApiError::no_such("customer balance transaction", id, "id"))
}

pub(super) fn update_balance_txn(
    a: &mut Account,
    cus: &str,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&["description", "metadata", "expand"])?;
    let description = form.text("description", 350)?;
    let meta = form.metadata()?;
    balance_txn(a, cus, id)?;
    let t = a
        .balance_txns
        .get_mut(id)
        .ok_or_else(|| ApiError::no_such("customer balance transaction", id, "id"))?;
    if description.is_some() {
        t.description = description.filter(|s| !s.is_empty());
    }
    apply_metadata(&mut t.metadata, meta);
    Ok(render::balance_txn(t))
}

pub(super) fn list_balance_txns(
    a: &Account,
    cus: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&with_list(&["invoice", "created"]))?;
    a.customer(cus, "customer")?;
    let invoice = form.str("invoice")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.balance_txns
            .values()
            .filter(|t| t.customer == cus)
            .filter(|t| created.admits(t.created))
            .filter(|t| invoice.is_none_or(|i| t.invoice.as_deref() == Some(i)))
            .map(|t| (t.created, t.seq, render::balance_txn(t))),
    );
    page(
        form,
        "customer balance transaction",
        items,
        &format!("/v1/customers/{cus}/balance_transactions"),
    )
}
