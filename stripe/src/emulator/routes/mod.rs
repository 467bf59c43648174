//! Routing of `/v1/...` requests to the endpoint handlers (one file per
//! resource), and what lists share: pagination, newest-first order, `created`
//! filters. Test clock endpoints live in `clock.rs`; the payment and refund
//! rules in `payments.rs`.

mod balance_transactions;
mod credit_notes;
mod customers;
mod invoices;
mod payment_intents;
mod products;
mod refunds;
mod subscriptions;

use super::clock;
use super::errors::ApiError;
use super::form::Form;
use super::render;
use super::state::Account;
use super::versions::AcceptedVersion;
use balance_transactions::{
    balance_txn, create_balance_txn, list_balance_txns, update_balance_txn,
};
use credit_notes::{create_credit_note, credit_note, list_credit_notes, void_credit_note};
use customers::{create_customer, list_customers, update_customer};
use invoices::{finalize_invoice, list_invoices, pay_invoice};
use payment_intents::{create_payment_intent, retrieve_charge, retrieve_payment_intent};
use products::{create_price, create_product, list_prices};
use refunds::{create_refund, list_charge_refunds, list_refunds, retrieve_refund};
use serde_json::Value;
use std::cmp::Reverse;
use subscriptions::{
    cancel_subscription, create_subscription, list_subscriptions, update_subscription,
};

const LIST: [&str; 4] = ["limit", "starting_after", "ending_before", "expand"];

fn with_list<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all: Vec<&str> = LIST.to_vec();
    all.extend_from_slice(extra);
    all
}

/// One request as the routes see it.
struct Request<'r, 'f> {
    method: &'r str,
    path: &'r str,
    form: &'r Form<'f>,
    version: AcceptedVersion,
}

impl Request<'_, '_> {
    /// The answer to a method and path no route takes.
    fn unrecognized(&self) -> Result<Value, ApiError> {
        Err(ApiError::unrecognized_url(self.method, self.path))
    }
}

/// Answers one API request against an account, in API version `version`.
/// `expand` is applied here.
pub(crate) fn dispatch(
    a: &mut Account,
    method: &str,
    path: &str,
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<Value, ApiError> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let r = Request {
        method,
        path,
        form,
        version,
    };
    let mut value = match segs.as_slice() {
        ["v1", "test_helpers", "test_clocks", rest @ ..] => clock_routes(a, &r, rest),
        ["v1", "customers", rest @ ..] => customer_routes(a, &r, rest),
        ["v1", "products" | "prices", ..] => catalog_routes(a, &r, &segs[1..]),
        ["v1", "subscriptions" | "invoices", ..] => billing_routes(a, &r, &segs[1..]),
        ["v1", "credit_notes", rest @ ..] => credit_note_routes(a, &r, rest),
        ["v1", "payment_intents" | "charges" | "refunds", ..] => payment_routes(a, &r, &segs[1..]),
        _ => r.unrecognized(),
    }?;
    let expand = form.strings("expand")?;
    render::expand(a, &mut value, &expand)?;
    Ok(value)
}

/// `/v1/test_helpers/test_clocks/...`.
fn clock_routes(a: &mut Account, r: &Request<'_, '_>, rest: &[&str]) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, rest) {
        ("POST", []) => clock::create(a, form),
        ("GET", []) => list_clocks(a, form),
        ("GET", [id]) => {
            form.allow(&["expand"])?;
            clock::retrieve(a, id)
        }
        ("DELETE", [id]) => {
            form.allow(&[])?;
            clock::delete(a, id)
        }
        ("POST", [id, "advance"]) => clock::advance(a, id, form),
        _ => r.unrecognized(),
    }
}

/// `/v1/customers/...`, with their balance transactions.
fn customer_routes(a: &mut Account, r: &Request<'_, '_>, rest: &[&str]) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, rest) {
        ("POST", []) => create_customer(a, form),
        ("GET", []) => list_customers(a, form),
        ("GET", [id]) => {
            form.allow(&["expand"])?;
            a.customer(id, "id").map(render::customer)
        }
        ("POST", [id]) => update_customer(a, id, form),
        ("POST", [id, "balance_transactions"]) => create_balance_txn(a, id, form),
        ("GET", [id, "balance_transactions"]) => list_balance_txns(a, id, form),
        ("GET", [id, "balance_transactions", txn]) => {
            form.allow(&["expand"])?;
            balance_txn(a, id, txn).map(render::balance_txn)
        }
        ("POST", [id, "balance_transactions", txn]) => update_balance_txn(a, id, txn, form),
        _ => r.unrecognized(),
    }
}

/// `/v1/products/...` and `/v1/prices/...`.
fn catalog_routes(a: &mut Account, r: &Request<'_, '_>, segs: &[&str]) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, segs) {
        ("POST", ["products"]) => create_product(a, form),
        ("GET", ["products"]) => {
            form.allow(&with_list(&["active"]))?;
            let active = form.bool("active")?;
            let items = newest_first(
                a.products
                    .values()
                    .filter(|p| active.is_none_or(|x| p.active == x))
                    .map(|p| (p.created, p.seq, render::product(p))),
            );
            page(form, "product", items, "/v1/products")
        }
        ("GET", ["products", id]) => {
            form.allow(&["expand"])?;
            a.products
                .get(*id)
                .map(render::product)
                .ok_or_else(|| ApiError::no_such("product", id, "id"))
        }
        ("POST", ["prices"]) => create_price(a, form),
        ("GET", ["prices"]) => list_prices(a, form),
        ("GET", ["prices", id]) => {
            form.allow(&["expand"])?;
            a.price(id, "price").map(render::price)
        }
        _ => r.unrecognized(),
    }
}

/// `/v1/subscriptions/...` and `/v1/invoices/...`.
fn billing_routes(a: &mut Account, r: &Request<'_, '_>, segs: &[&str]) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, segs) {
        ("POST", ["subscriptions"]) => create_subscription(a, form),
        ("GET", ["subscriptions"]) => list_subscriptions(a, form),
        ("GET", ["subscriptions", id]) => {
            form.allow(&["expand"])?;
            let s = a.subscription(id, "id")?;
            Ok(render::subscription(a, s))
        }
        ("POST", ["subscriptions", id]) => update_subscription(a, id, form, r.version),
        ("DELETE", ["subscriptions", id]) => cancel_subscription(a, id, form),
        ("GET", ["invoices"]) => list_invoices(a, form),
        ("GET", ["invoices", id]) => {
            form.allow(&["expand"])?;
            let inv = a.invoice(id, "invoice")?;
            Ok(render::invoice(a, inv))
        }
        ("GET", ["invoices", id, "lines"]) => {
            form.allow(&LIST)?;
            let inv = a.invoice(id, "invoice")?;
            let items = inv.lines.iter().map(|l| render::line(&inv.id, l)).collect();
            page(
                form,
                "line_item",
                items,
                &format!("/v1/invoices/{id}/lines"),
            )
        }
        ("POST", ["invoices", id, "finalize"]) => finalize_invoice(a, id, form),
        ("POST", ["invoices", id, "pay"]) => pay_invoice(a, id, form),
        _ => r.unrecognized(),
    }
}

/// `/v1/credit_notes/...`.
fn credit_note_routes(
    a: &mut Account,
    r: &Request<'_, '_>,
    rest: &[&str],
) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, rest) {
        ("POST", []) => create_credit_note(a, form),
        ("GET", []) => list_credit_notes(a, form),
        ("GET", [id]) => {
            form.allow(&["expand"])?;
            credit_note(a, id).map(render::credit_note)
        }
        ("GET", [id, "lines"]) => {
            form.allow(&LIST)?;
            let cn = credit_note(a, id)?;
            page(
                form,
                "credit_note_line_item",
                render::credit_note_lines(cn),
                &format!("/v1/credit_notes/{id}/lines"),
            )
        }
        ("POST", [id, "void"]) => void_credit_note(a, id, form),
        _ => r.unrecognized(),
    }
}

/// `/v1/payment_intents/...`, `/v1/charges/...` and `/v1/refunds/...`.
fn payment_routes(a: &mut Account, r: &Request<'_, '_>, segs: &[&str]) -> Result<Value, ApiError> {
    let form = r.form;
    match (r.method, segs) {
        ("POST", ["payment_intents"]) => create_payment_intent(a, form, r.version),
        ("GET", ["payment_intents", id]) => {
            form.allow(&["expand"])?;
            retrieve_payment_intent(a, id)
        }
        ("GET", ["charges", id]) => {
            form.allow(&["expand"])?;
            retrieve_charge(a, id)
        }
        ("GET", ["charges", id, "refunds"]) => list_charge_refunds(a, id, form),
        ("POST", ["refunds"]) => create_refund(a, form),
        ("GET", ["refunds"]) => list_refunds(a, form),
        ("GET", ["refunds", id]) => {
            form.allow(&["expand"])?;
            retrieve_refund(a, id)
        }
        _ => r.unrecognized(),
    }
}

/// A list's `created` filter: `created=T`, or any of `created[gt]`,
/// `created[gte]`, `created[lt]`, `created[lte]`.
#[derive(Debug, Default)]
struct Created {
    gt: Option<i64>,
    gte: Option<i64>,
    lt: Option<i64>,
    lte: Option<i64>,
}

impl Created {
    fn admits(&self, t: i64) -> bool {
        self.gt.is_none_or(|x| t > x)
            && self.gte.is_none_or(|x| t >= x)
            && self.lt.is_none_or(|x| t < x)
            && self.lte.is_none_or(|x| t <= x)
    }
}

fn created_filter(form: &Form<'_>) -> Result<Created, ApiError> {
    if !form.has("created") {
        return Ok(Created::default());
    }
    if let Ok(Some(t)) = form.int("created") {
        return Ok(Created {
            gte: Some(t),
            lte: Some(t),
            ..Created::default()
        });
    }
    let range = form.sub("created")?;
    range.allow(&["gt", "gte", "lt", "lte"])?;
    Ok(Created {
        gt: range.int("gt")?,
        gte: range.int("gte")?,
        lt: range.int("lt")?,
        lte: range.int("lte")?,
    })
}

/// Orders `(created, seq, object)` newest first.
fn newest_first(items: impl Iterator<Item = (i64, u64, Value)>) -> Vec<Value> {
    let mut items: Vec<(i64, u64, Value)> = items.collect();
    items.sort_by_key(|(created, seq, _)| Reverse((*created, *seq)));
    items.into_iter().map(|(_, _, v)| v).collect()
}

/// One page of an ordered list of `what` (as named in "No such ..." errors):
/// `limit` (1–100, default 10), `starting_after`, `ending_before`.
fn page(form: &Form<'_>, what: &str, items: Vec<Value>, url: &str) -> Result<Value, ApiError> {
    let limit = form.int("limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "Invalid limit: must be an integer between 1 and 100",
        ));
    }
    let limit = usize::try_from(limit).unwrap_or(10);
    let position = |param: &str, id: &str| {
        items
            .iter()
            .position(|v| v.get("id").and_then(Value::as_str) == Some(id))
            .ok_or_else(|| ApiError::no_such(what, id, param))
    };
    if let Some(after) = form.str("starting_after")? {
        if form.str("ending_before")?.is_some() {
            return Err(ApiError::bad_request(
                "You may only specify one of these parameters: ending_before, starting_after.",
            ));
        }
        let start = position("starting_after", after)? + 1;
        let rest = &items[start..];
        let has_more = rest.len() > limit;
        return Ok(render::list(
            url,
            rest.iter().take(limit).cloned().collect(),
            has_more,
        ));
    }
    if let Some(before) = form.str("ending_before")? {
        let end = position("ending_before", before)?;
        let start = end.saturating_sub(limit);
        return Ok(render::list(url, items[start..end].to_vec(), start > 0));
    }
    let has_more = items.len() > limit;
    Ok(render::list(
        url,
        items.into_iter().take(limit).collect(),
        has_more,
    ))
}

fn list_clocks(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&LIST)?;
    let items = newest_first(
        a.clocks
            .values()
            .map(|c| (c.created, c.seq, render::clock(c, None))),
    );
    page(
        form,
        "test_helpers.test_clock",
        items,
        "/v1/test_helpers/test_clocks",
    )
}

fn check_payment_method(param: &str, pm: &str) -> Result<(), ApiError> {
    if pm.starts_with("pm_") {
        Ok(())
    } else {
        Err(ApiError::no_such("PaymentMethod", pm, param))
    }
}

fn currency(form: &Form<'_>, key: &str) -> Result<String, ApiError> {
    let c = form.req_str(key)?.to_ascii_lowercase();
    if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_lowercase()) {
        Ok(c)
    } else {
        Err(ApiError::invalid(
            form.name(key),
            format!("Invalid currency: {c}"),
        ))
    }
}
