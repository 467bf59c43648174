//! `POST /v1/subscriptions/{id}`: the request is read and checked whole
//! (settings, proration date, every item change), then the items change with
//! their prorations, the subscription's settings are set, and the prorations
//! wait for the next invoice or are invoiced at once.

use super::super::check_payment_method;
use crate::emulator::billing;
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, Account, Line, PendingItem, SubItem, Subscription};
use crate::emulator::versions::AcceptedVersion;
use serde_json::Value;

const UPDATE_PARAMS: [&str; 10] = [
    "items",
    "proration_behavior",
    "proration_date",
    "payment_behavior",
    "billing_cycle_anchor",
    "cancel_at_period_end",
    "default_payment_method",
    "description",
    "metadata",
    "expand",
];

/// A change of one item: its index, new price and new quantity.
type ItemChange = (usize, String, i64);

/// A checked update of subscription `sub`.
struct Update<'f> {
    sub: Subscription,
    /// `proration_behavior`.
    behaviour: &'f str,
    now: i64,
    /// The current period of the subscription's first item.
    period: (i64, i64),
    /// When the prorations are computed from.
    at: i64,
    cancel: Option<bool>,
    default_payment_method: Option<&'f str>,
    description: Option<String>,
    metadata: Option<Option<Vec<(String, String)>>>,
    changes: Vec<ItemChange>,
}

pub(in crate::emulator::routes) fn update_subscription(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<Value, ApiError> {
    let mut update = parse_update(a, id, form, version)?;
    let changes = std::mem::take(&mut update.changes);
    let (items, proration) = change_items(a, id, &update, changes);
    set_fields(a, id, items, &mut update);
    if !proration.is_empty() {
        hold_prorations(a, id, &update, proration);
    }
    let s = a.subscription(id, "id")?;
    Ok(render::subscription(a, s))
}

/// Reads and checks the whole update, in Stripe's order of errors; nothing
/// is changed.
fn parse_update<'f>(
    a: &Account,
    id: &str,
    form: &Form<'f>,
    version: AcceptedVersion,
) -> Result<Update<'f>, ApiError> {
    form.allow(&UPDATE_PARAMS)?;
    let sub = a.subscription(id, "subscription")?.clone();
    if sub.status == "canceled" {
        return Err(ApiError::bad_request(format!(
            "A canceled subscription can only update its cancellation_details and metadata ({id})."
        ))
        .executed());
    }
    let behaviour = form
        .choice(
            "proration_behavior",
            &["always_invoice", "create_prorations", "none"],
        )?
        .unwrap_or("create_prorations");
    form.choice(
        "payment_behavior",
        &[
            "allow_incomplete",
            "default_incomplete",
            "error_if_incomplete",
            "pending_if_incomplete",
        ],
    )?;
    billing_cycle_anchor(form, version)?;
    let now = a.now_for(&sub.customer);
    let period = sub
        .items
        .first()
        .map_or((now, now), |i| (i.period_start, i.period_end));
    let at = proration_date(form, period, now)?;
    let cancel = form.bool("cancel_at_period_end")?;
    let pm = form.str("default_payment_method")?;
    if let Some(pm) = pm.filter(|p| !p.is_empty()) {
        check_payment_method("default_payment_method", pm)?;
    }
    let description = form.text("description", 500)?;
    let metadata = form.metadata()?;
    let changes = form
        .list("items")?
        .iter()
        .map(|item| parse_item_change(a, &sub, item))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Update {
        sub,
        behaviour,
        now,
        period,
        at,
        cancel,
        default_payment_method: pm,
        description,
        metadata,
        changes,
    })
}

/// `proration_date`, within the current period (now when not given).
fn proration_date(form: &Form<'_>, period: (i64, i64), now: i64) -> Result<i64, ApiError> {
    match form.int("proration_date")? {
        Some(t) if t < period.0 || t > period.1 => Err(ApiError::invalid(
            "proration_date",
            "proration_date must be within the subscription's current period.",
        )),
        Some(t) => Ok(t),
        None => Ok(now),
    }
}

/// One `items[N]`: an existing item (by id) with a price of the same
/// currency and interval and a quantity of at least 1.
fn parse_item_change(
    a: &Account,
    sub: &Subscription,
    item: &Form<'_>,
) -> Result<ItemChange, ApiError> {
    item.allow(&["id", "price", "quantity", "metadata"])?;
    let Some(item_id) = item.str("id")? else {
        return Err(ApiError::invalid(
            item.name("id"),
            "The emulator only models changing existing items (pass items[N][id]).",
        ));
    };
    let index = sub
        .items
        .iter()
        .position(|i| i.id == item_id)
        .ok_or_else(|| ApiError::no_such("subscription_item", item_id, &item.name("id")))?;
    let current = &sub.items[index];
    let price_id = item.str("price")?.unwrap_or(&current.price).to_string();
    let new_price = a.price(&price_id, &item.name("price"))?;
    let old_price = a.price(&current.price, &item.name("price"))?;
    if new_price.recurring != old_price.recurring || new_price.currency != old_price.currency {
        return Err(ApiError::invalid(
            item.name("price"),
            "The emulator only models price changes with the same currency and billing interval.",
        ));
    }
    let quantity = item.int("quantity")?.unwrap_or(current.quantity);
    if quantity < 1 {
        return Err(ApiError::invalid(
            item.name("quantity"),
            "Invalid quantity: must be at least 1",
        ));
    }
    Ok((index, price_id, quantity))
}

/// The items after the changes, and the proration lines of the changes made
/// before the period's end (unless `proration_behavior=none`).
fn change_items(
    a: &mut Account,
    id: &str,
    u: &Update<'_>,
    changes: Vec<ItemChange>,
) -> (Vec<SubItem>, Vec<Line>) {
    let mut proration = Vec::new();
    let mut items = u.sub.items.clone();
    for (index, price_id, quantity) in changes {
        let current = items[index].clone();
        if current.price == price_id && current.quantity == quantity {
            continue;
        }
        if u.behaviour != "none" && u.at < u.period.1 {
            let credited = u.sub.latest_invoice.as_ref().and_then(|inv| {
                let invoice = a.invoices.get(inv)?;
                let line = invoice.lines.iter().find(|l| {
                    !l.proration && l.subscription_item.as_deref() == Some(current.id.as_str())
                })?;
                Some((inv.clone(), vec![line.id.clone()]))
            });
            proration.extend(billing::proration_lines(
                a,
                id,
                &current.id,
                (&current.price, current.quantity),
                (&price_id, quantity),
                u.at,
                u.period,
                credited,
            ));
        }
        items[index].price = price_id;
        items[index].quantity = quantity;
    }
    (items, proration)
}

/// Stores the new items and the settings the update gives.
fn set_fields(a: &mut Account, id: &str, items: Vec<SubItem>, u: &mut Update<'_>) {
    let Some(s) = a.subscriptions.get_mut(id) else {
        return;
    };
    s.items = items;
    if let Some(c) = u.cancel {
        s.cancel_at_period_end = c;
    }
    if let Some(pm) = u.default_payment_method {
        s.default_payment_method = (!pm.is_empty()).then(|| pm.to_string());
    }
    if u.description.is_some() {
        s.description = u.description.take().filter(|d| !d.is_empty());
    }
    apply_metadata(&mut s.metadata, u.metadata.take());
}

/// Keeps the prorations as pending items for the next invoice, or with
/// `proration_behavior=always_invoice` invoices them now and tries to pay.
fn hold_prorations(a: &mut Account, id: &str, u: &Update<'_>, proration: Vec<Line>) {
    let customer = u.sub.customer.clone();
    for line in proration {
        a.pending_items.push(PendingItem {
            customer: customer.clone(),
            subscription: id.to_string(),
            line,
        });
    }
    if u.behaviour == "always_invoice" {
        let now = u.now;
        let lines = billing::take_pending(a, id);
        let inv =
            billing::create_invoice(a, id, "subscription_update", lines, now, (now, now), None);
        billing::finalize(a, &inv, now);
        billing::attempt_payment(a, &inv, now);
    }
}

/// Checks a subscription update's `billing_cycle_anchor`: a string before
/// 2026-09-30.endive (`billing_cycle_anchor=unchanged`), an object with a `type`
/// since (`billing_cycle_anchor[type]=unchanged`). Only `unchanged` is modelled.
fn billing_cycle_anchor(form: &Form<'_>, version: AcceptedVersion) -> Result<(), ApiError> {
    if !form.has("billing_cycle_anchor") {
        return Ok(());
    }
    let (param, anchor) = if version.anchor_is_object {
        let anchor = form.sub("billing_cycle_anchor")?;
        anchor.allow(&["type"])?;
        (anchor.name("type"), anchor.req_str("type")?)
    } else {
        let anchor = form.str("billing_cycle_anchor")?.unwrap_or_default();
        ("billing_cycle_anchor".to_string(), anchor)
    };
    if anchor == "unchanged" {
        Ok(())
    } else {
        Err(ApiError::invalid(
            param,
            format!(
                "The emulator only models an unchanged billing cycle anchor (in {}: {}).",
                version.name,
                if version.anchor_is_object {
                    "billing_cycle_anchor[type]=unchanged"
                } else {
                    "billing_cycle_anchor=unchanged"
                }
            ),
        ))
    }
}
