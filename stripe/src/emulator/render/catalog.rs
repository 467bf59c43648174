//! Products and prices (with the legacy `plan` view of a recurring price).

use super::super::state::{Price, Product};
use super::metadata;
use serde_json::{json, Value};

pub(crate) fn product(p: &Product) -> Value {
    json!({
        "id": p.id,
        "object": "product",
        "active": p.active,
        "created": p.created,
        "default_price": null,
        "description": p.description,
        "images": [],
        "livemode": false,
        "marketing_features": [],
        "metadata": metadata(&p.metadata),
        "name": p.name,
        "package_dimensions": null,
        "shippable": null,
        "statement_descriptor": null,
        "tax_code": null,
        // Products made through the API for prices and subscriptions are
        // services (the other value, `good`, is for physical goods).
        "type": "service",
        "unit_label": null,
        "updated": p.created,
        "url": null,
    })
}

pub(crate) fn price(p: &Price) -> Value {
    let recurring = p.recurring.map(|r| {
        json!({
            "interval": r.interval.as_str(),
            "interval_count": r.interval_count,
            "meter": null,
            "usage_type": "licensed",
        })
    });
    json!({
        "id": p.id,
        "object": "price",
        "active": p.active,
        "billing_scheme": "per_unit",
        "created": p.created,
        "currency": p.currency,
        "custom_unit_amount": null,
        "livemode": false,
        "lookup_key": p.lookup_key,
        "metadata": metadata(&p.metadata),
        "nickname": p.nickname,
        "product": p.product,
        "recurring": recurring,
        "tax_behavior": "unspecified",
        "tiers_mode": null,
        "transform_quantity": null,
        "type": if p.recurring.is_some() { "recurring" } else { "one_time" },
        "unit_amount": p.unit_amount,
        "unit_amount_decimal": p.unit_amount.to_string(),
    })
}

/// The legacy `plan` view of a recurring price, as Stripe still shows it on
/// subscription items (same id as the price); `null` for a one-time price.
pub(super) fn plan(p: &Price) -> Value {
    let Some(recurring) = p.recurring else {
        return Value::Null;
    };
    json!({
        "id": p.id,
        "object": "plan",
        "active": p.active,
        "amount": p.unit_amount,
        "amount_decimal": p.unit_amount.to_string(),
        "billing_scheme": "per_unit",
        "created": p.created,
        "currency": p.currency,
        "interval": recurring.interval.as_str(),
        "interval_count": recurring.interval_count,
        "livemode": false,
        "metadata": metadata(&p.metadata),
        "meter": null,
        "nickname": p.nickname,
        "product": p.product,
        "tiers_mode": null,
        "transform_usage": null,
        "trial_period_days": null,
        "usage_type": "licensed",
    })
}
