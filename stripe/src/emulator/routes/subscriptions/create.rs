//! `POST /v1/subscriptions`: the request is read and checked whole (billing
//! mode, settings, every item), then the subscription is opened and its first
//! period billed.

use super::super::check_payment_method;
use crate::emulator::billing;
use crate::emulator::clock;
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{
    apply_metadata, Account, Customer, Metadata, Price, Recurring, SubItem, Subscription,
};
use serde_json::Value;

const CREATE_PARAMS: [&str; 10] = [
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
];

/// One requested item: its price, quantity and metadata.
type ItemRequest = (Price, i64, Metadata);

/// What the request sets besides the customer and the items.
struct Settings<'f> {
    /// `payment_behavior`.
    behaviour: &'f str,
    default_payment_method: Option<&'f str>,
    description: Option<String>,
    metadata: Metadata,
}

/// A checked request for a new subscription.
struct NewSubscription<'f> {
    customer: Customer,
    items: Vec<ItemRequest>,
    /// The items' common currency and billing interval.
    currency: String,
    recurring: Recurring,
    settings: Settings<'f>,
    billing_mode: &'static str,
    proration_discounts: &'static str,
}

pub(in crate::emulator::routes) fn create_subscription(
    a: &mut Account,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    let new = parse_new_subscription(a, form)?;
    let now = a.now_for(&new.customer.id);
    let behaviour = new.settings.behaviour;
    let (id, items) = open_subscription(a, new, now);
    bill_first_period(a, &id, &items, behaviour, now);
    let s = a.subscription(&id, "id")?;
    Ok(render::subscription(a, s))
}

/// Reads and checks the whole request, in Stripe's order of errors; nothing
/// is changed.
fn parse_new_subscription<'f>(
    a: &Account,
    form: &Form<'f>,
) -> Result<NewSubscription<'f>, ApiError> {
    form.allow(&CREATE_PARAMS)?;
    let (billing_mode, proration_discounts) = parse_billing_mode(form)?;
    let cus = form.req_str("customer")?;
    let customer = a.customer(cus, "customer")?.clone();
    let items = form.list("items")?;
    if items.is_empty() {
        return Err(ApiError::missing("items"));
    }
    let settings = parse_settings(form)?;
    // Validate every item before creating anything.
    let items = items
        .iter()
        .map(|item| parse_item(a, item))
        .collect::<Result<Vec<_>, _>>()?;
    let (currency, recurring) = common_terms(&items, &customer)?;
    Ok(NewSubscription {
        customer,
        items,
        currency,
        recurring,
        settings,
        billing_mode,
        proration_discounts,
    })
}

/// `billing_mode[type]` (flexible unless asked) and
/// `billing_mode[flexible][proration_discounts]` (included unless itemized).
fn parse_billing_mode(form: &Form<'_>) -> Result<(&'static str, &'static str), ApiError> {
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
    Ok((billing_mode, proration_discounts))
}

/// The payment behaviour, payment method, description and metadata; a
/// `collection_method` other than `charge_automatically` is refused.
fn parse_settings<'f>(form: &Form<'f>) -> Result<Settings<'f>, ApiError> {
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
    let mut metadata = Metadata::new();
    apply_metadata(&mut metadata, form.metadata()?);
    Ok(Settings {
        behaviour,
        default_payment_method: pm,
        description,
        metadata,
    })
}

/// One `items[N]`: a recurring price and a quantity of at least 1.
fn parse_item(a: &Account, item: &Form<'_>) -> Result<ItemRequest, ApiError> {
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
    Ok((price, quantity, item_meta))
}

/// The currency and billing interval every item shares, which must be the
/// customer's currency if it has one.
fn common_terms(
    items: &[ItemRequest],
    customer: &Customer,
) -> Result<(String, Recurring), ApiError> {
    let currency = items[0].0.currency.clone();
    let recurring = items[0].0.recurring;
    if items
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
    Ok((currency, recurring))
}

/// Stores the new (incomplete) subscription with its items for their first
/// period, and gives the customer its currency; returns the id and items.
fn open_subscription(
    a: &mut Account,
    new: NewSubscription<'_>,
    now: i64,
) -> (String, Vec<SubItem>) {
    let end = clock::add_interval(now, new.recurring, 1);
    let id = a.new_id("sub");
    let seq = a.next_seq();
    let mut sub_items = Vec::new();
    for (price, quantity, item_meta) in &new.items {
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
    let cus = new.customer.id.as_str();
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
            default_payment_method: new.settings.default_payment_method.map(str::to_string),
            description: new.settings.description,
            metadata: new.settings.metadata,
            cancel_at_period_end: false,
            canceled_at: None,
            ended_at: None,
            currency: new.currency.clone(),
            test_clock: new.customer.test_clock.clone(),
            billing_mode: new.billing_mode,
            proration_discounts: new.proration_discounts,
        },
    );
    if let Some(c) = a.customers.get_mut(cus) {
        c.currency.get_or_insert(new.currency);
    }
    (id, sub_items)
}

/// Invoices the first period and tries to pay it (with `default_incomplete`,
/// only when nothing is left to pay); the subscription is active once paid.
fn bill_first_period(a: &mut Account, id: &str, items: &[SubItem], behaviour: &str, now: i64) {
    let mut lines = Vec::new();
    for item in items {
        let end = item.period_end;
        let line = billing::period_line(a, id, &item.id, &item.price, item.quantity, now, end);
        lines.push(line);
    }
    let inv = billing::create_invoice(a, id, "subscription_create", lines, now, (now, now), None);
    billing::finalize(a, &inv, now);
    let paid = if behaviour == "default_incomplete" {
        a.invoices
            .get(&inv)
            .is_some_and(|i| i.amount_remaining == 0)
            && billing::attempt_payment(a, &inv, now)
    } else {
        billing::attempt_payment(a, &inv, now)
    };
    if let Some(s) = a.subscriptions.get_mut(id) {
        s.status = if paid { "active" } else { "incomplete" };
    }
}
