//! Subscriptions: create (`create.rs`), list, update with price changes and
//! proration (`update.rs`), cancel.

mod create;
mod update;

use super::{created_filter, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::Account;
use serde_json::Value;

pub(super) use create::create_subscription;
pub(super) use update::update_subscription;

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
