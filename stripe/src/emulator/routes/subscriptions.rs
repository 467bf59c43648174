//! Subscriptions: create, list, update (price changes with proration), cancel.

use super::{check_payment_method, created_filter, newest_first, page, with_list};
use crate::emulator::billing;
use crate::emulator::clock;
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{
    apply_metadata, Account, Metadata, PendingItem, Price, SubItem, Subscription,
};
use crate::emulator::versions::AcceptedVersion;
use serde_json::Value;

pub(super) fn create_subscription(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
        "customer",
        "items",
        "default_payment_method",
        "payment_behavior",
        "proration_behavior",
        "collection_method",
        "billing_mode",
        "description",
        "metadata",
        "expand",
    ])?;
    let mode = form.sub("billing_mode")?;
    mode.allow(&["type", "flexible"])?;
    let flexible = mode.sub("flexible")?;
    flexible.allow(&["proration_discounts"])?;
    let billing_mode = match mode.choice("type", &["classic", "flexible"])? {
        Some("classic") => "classic",
        Some(_) => "flexible",
        None if form.has("billing_mode") => return Err(ApiError::missing("billing_mode[type]")),
        None => "flexible",
    };
    let proration_discounts =
        match flexible.choice("proration_discounts", &["included", "itemized"])? {
            Some("itemized") => "itemized",
            _ => "included",
        };
    let cus = form.req_str("customer")?;
    let customer = a.customer(cus, "customer")?.clone();
    let items = form.list("items")?;
    if items.is_empty() {
        return Err(ApiError::missing("items"));
    }
    let behaviour = form
        .choice(
            "payment_behavior",
            &[
                "allow_incomplete",
                "default_incomplete",
                "error_if_incomplete",
                "pending_if_incomplete",
            ],
        )?
        .unwrap_or("allow_incomplete");
    form.choice(
        "proration_behavior",
        &["always_invoice", "create_prorations", "none"],
    )?;
    if let Some(m) = form.choice(
        "collection_method",
        &["charge_automatically", "send_invoice"],
    )? {
        if m != "charge_automatically" {
            return Err(ApiError::invalid(
                "collection_method",
                "The emulator only models collection_method=charge_automatically.",
            ));
        }
    }
    let pm = form.str("default_payment_method")?;
    if let Some(pm) = pm {
        check_payment_method("default_payment_method", pm)?;
    }
    let description = form.text("description", 500)?;
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    // Validate every item before creating anything.
    let mut chosen: Vec<(Price, i64, Metadata)> = Vec::new();
    for item in &items {
        item.allow(&["price", "quantity", "metadata"])?;
        let price_id = item.req_str("price")?;
        let price = a.price(price_id, &item.name("price"))?.clone();
        if price.recurring.is_none() {
            return Err(ApiError::invalid(
                item.name("price"),
                format!("The price specified ({price_id}) is not recurring; subscriptions need a recurring price."),
            ));
        }
        let quantity = item.int("quantity")?.unwrap_or(1);
        if quantity < 1 {
            return Err(ApiError::invalid(
                item.name("quantity"),
                "Invalid quantity: must be at least 1",
            ));
        }
        let mut item_meta = Metadata::new();
        apply_metadata(&mut item_meta, item.metadata()?);
        chosen.push((price, quantity, item_meta));
    }
    let currency = chosen[0].0.currency.clone();
    let recurring = chosen[0].0.recurring;
    if chosen
        .iter()
        .any(|(p, _, _)| p.currency != currency || p.recurring != recurring)
    {
        return Err(ApiError::invalid(
            "items",
            "All prices on a subscription must have the same currency and billing interval.",
        ));
    }
    if let Some(existing) = customer.currency.as_deref() {
        if existing != currency {
            return Err(ApiError::invalid(
                "items",
                format!("The customer's currency is {existing}, not {currency}."),
            )
            .executed());
        }
    }
    let Some(recurring) = recurring else {
        return Err(ApiError::missing("items[0][price]"));
    };
    let now = a.now_for(cus);
    let end = clock::add_interval(now, recurring, 1);
    let id = a.new_id("sub");
    let seq = a.next_seq();
    let mut sub_items = Vec::new();
    for (price, quantity, item_meta) in &chosen {
        sub_items.push(SubItem {
            id: a.new_id("si"),
            created: now,
            price: price.id.clone(),
            quantity: *quantity,
            period_start: now,
            period_end: end,
            metadata: item_meta.clone(),
        });
    }
    a.subscriptions.insert(
        id.clone(),
        Subscription {
            id: id.clone(),
            seq,
            created: now,
            customer: cus.to_string(),
            status: "incomplete",
            items: sub_items.clone(),
            latest_invoice: None,
            billing_cycle_anchor: now,
            start_date: now,
            collection_method: "charge_automatically",
            default_payment_method: pm.map(str::to_string),
            description,
            metadata: meta,
            cancel_at_period_end: false,
            canceled_at: None,
            ended_at: None,
            currency: currency.clone(),
            test_clock: customer.test_clock.clone(),
            billing_mode,
            proration_discounts,
        },
    );
    if let Some(c) = a.customers.get_mut(cus) {
        c.currency.get_or_insert(currency);
    }
    let mut lines = Vec::new();
    for item in &sub_items {
        let line = billing::period_line(a, &id, &item.id, &item.price, item.quantity, now, end);
        lines.push(line);
    }
    let inv = billing::create_invoice(a, &id, "subscription_create", lines, now, (now, now), None);
    billing::finalize(a, &inv, now);
    let paid = if behaviour == "default_incomplete" {
        a.invoices
            .get(&inv)
            .is_some_and(|i| i.amount_remaining == 0)
            && billing::attempt_payment(a, &inv, now)
    } else {
        billing::attempt_payment(a, &inv, now)
    };
    if let Some(s) = a.subscriptions.get_mut(&id) {
        s.status = if paid { "active" } else { "incomplete" };
    }
    let s = a.subscription(&id, "id")?;
    Ok(render::subscription(a, s))
}

pub(super) fn list_subscriptions(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&[
        "customer",
        "status",
        "price",
        "test_clock",
        "created",
    ]))?;
    let customer = form.str("customer")?;
    let status = form.choice(
        "status",
        &[
            "active",
            "all",
            "canceled",
            "ended",
            "incomplete",
            "incomplete_expired",
            "past_due",
            "paused",
            "trialing",
            "unpaid",
        ],
    )?;
    let price = form.str("price")?;
    let clock = form.str("test_clock")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.subscriptions
            .values()
            .filter(|s| customer.is_none_or(|c| s.customer == c))
            // Test-clock subscriptions are listed only when their clock or
            // customer is asked for.
            .filter(|s| match (clock, customer) {
                (Some(c), _) => s.test_clock.as_deref() == Some(c),
                (None, Some(_)) => true,
                (None, None) => s.test_clock.is_none(),
            })
            .filter(|s| created.admits(s.created))
            .filter(|s| price.is_none_or(|p| s.items.iter().any(|i| i.price == p)))
            .filter(|s| match status {
                None => s.status != "canceled",
                Some("all") => true,
                Some("ended") => s.status == "canceled",
                Some(x) => s.status == x,
            })
            .map(|s| (s.created, s.seq, render::subscription(a, s))),
    );
    page(form, "subscription", items, "/v1/subscriptions")
}

pub(super) fn update_subscription(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
    version: AcceptedVersion,
) -> Result<Value, ApiError> {
    form.allow(&[
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
    ])?;
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
    let at = match form.int("proration_date")? {
        Some(t) if t < period.0 || t > period.1 => {
            return Err(ApiError::invalid(
                "proration_date",
                "proration_date must be within the subscription's current period.",
            ))
        }
        Some(t) => t,
        None => now,
    };
    let cancel = form.bool("cancel_at_period_end")?;
    let pm = form.str("default_payment_method")?;
    if let Some(pm) = pm.filter(|p| !p.is_empty()) {
        check_payment_method("default_payment_method", pm)?;
    }
    let description = form.text("description", 500)?;
    let meta = form.metadata()?;
    // Validate item changes.
    let mut changes: Vec<(usize, String, i64)> = Vec::new();
    for item in form.list("items")? {
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
        changes.push((index, price_id, quantity));
    }
    // Apply.
    let mut proration = Vec::new();
    let mut items = sub.items.clone();
    for (index, price_id, quantity) in changes {
        let current = items[index].clone();
        if current.price == price_id && current.quantity == quantity {
            continue;
        }
        if behaviour != "none" && at < period.1 {
            let credited = sub.latest_invoice.as_ref().and_then(|inv| {
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
                at,
                period,
                credited,
            ));
        }
        items[index].price = price_id;
        items[index].quantity = quantity;
    }
    if let Some(s) = a.subscriptions.get_mut(id) {
        s.items = items;
        if let Some(c) = cancel {
            s.cancel_at_period_end = c;
        }
        if let Some(pm) = pm {
            s.default_payment_method = (!pm.is_empty()).then(|| pm.to_string());
        }
        if description.is_some() {
            s.description = description.filter(|d| !d.is_empty());
        }
        apply_metadata(&mut s.metadata, meta);
    }
    if !proration.is_empty() {
        let customer = sub.customer.clone();
        for line in proration {
            a.pending_items.push(PendingItem {
                customer: customer.clone(),
                subscription: id.to_string(),
                line,
            });
        }
        if behaviour == "always_invoice" {
            let lines = billing::take_pending(a, id);
            let inv =
                billing::create_invoice(a, id, "subscription_update", lines, now, (now, now), None);
            billing::finalize(a, &inv, now);
            billing::attempt_payment(a, &inv, now);
        }
    }
    let s = a.subscription(id, "id")?;
    Ok(render::subscription(a, s))
}

pub(super) fn cancel_subscription(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&["expand", "invoice_now", "prorate"])?;
    form.bool("invoice_now")?;
    form.bool("prorate")?;
    let sub = a.subscription(id, "subscription")?.clone();
    let now = a.now_for(&sub.customer);
    if let Some(s) = a.subscriptions.get_mut(id) {
        s.status = "canceled";
        s.canceled_at = Some(now);
        s.ended_at = Some(now);
    }
    a.pending_items.retain(|p| p.subscription != id);
    let s = a.subscription(id, "id")?;
    Ok(render::subscription(a, s))
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
