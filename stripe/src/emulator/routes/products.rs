//! Products and prices: create (prices with lookup keys), list.

use super::{currency, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{
    apply_metadata, wall_now, Account, Interval, Metadata, Price, Product, Recurring,
};
use serde_json::Value;

pub(super) fn create_product(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&["name", "id", "description", "active", "metadata", "expand"])?;
    let name = form.req_str("name")?.to_string();
    let id = match form.str("id")? {
        Some(id) if a.products.contains_key(id) => {
            return Err(ApiError::invalid("id", "Product already exists.").executed())
        }
        Some(id) => id.to_string(),
        None => a.new_id("prod"),
    };
    let description = form.text("description", 40_000)?;
    let active = form.bool("active")?.unwrap_or(true);
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let seq = a.next_seq();
    let p = Product {
        id: id.clone(),
        seq,
        created: wall_now(),
        name,
        description,
        active,
        metadata: meta,
    };
    let out = render::product(&p);
    a.products.insert(id, p);
    Ok(out)
}

const PRICE_PARAMS: [&str; 11] = [
    "currency",
    "unit_amount",
    "product",
    "product_data",
    "recurring",
    "lookup_key",
    "transfer_lookup_key",
    "nickname",
    "active",
    "metadata",
    "expand",
];

/// `POST /v1/prices`. The product (given, or created from `product_data`) and
/// the lookup key (taken from its holder with `transfer_lookup_key`) are
/// settled before the last parameters are read, as at Stripe.
pub(super) fn create_price(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&PRICE_PARAMS)?;
    let currency = currency(form, "currency")?;
    let unit_amount = form.req_int("unit_amount")?;
    if unit_amount < 0 {
        return Err(ApiError::invalid(
            "unit_amount",
            "Invalid unit_amount: must be at least 0",
        ));
    }
    let recurring = parse_recurring(form)?;
    let lookup_key = form.text("lookup_key", 200)?;
    let transfer = form.bool("transfer_lookup_key")?.unwrap_or(false);
    let nickname = form.text("nickname", 5000)?;
    let active = form.bool("active")?.unwrap_or(true);
    let product = price_product(a, form)?;
    if let Some(key) = &lookup_key {
        claim_lookup_key(a, key, transfer)?;
    }
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let id = a.new_id("price");
    let seq = a.next_seq();
    let p = Price {
        id: id.clone(),
        seq,
        created: wall_now(),
        product,
        currency,
        unit_amount,
        recurring,
        lookup_key,
        nickname,
        active,
        metadata: meta,
    };
    let out = render::price(&p);
    a.prices.insert(id, p);
    Ok(out)
}

/// `recurring[interval]` and `recurring[interval_count]` (1 to 365), when
/// `recurring` is given.
fn parse_recurring(form: &Form<'_>) -> Result<Option<Recurring>, ApiError> {
    let recurring_form = form.sub("recurring")?;
    recurring_form.allow(&["interval", "interval_count", "usage_type"])?;
    if !form.has("recurring") {
        return Ok(None);
    }
    let interval = recurring_form.req_str("interval")?;
    let interval = Interval::parse(interval).ok_or_else(|| {
        ApiError::invalid_enum(
            "recurring[interval]",
            interval,
            &["day", "week", "month", "year"],
        )
    })?;
    let count = recurring_form.int("interval_count")?.unwrap_or(1);
    let interval_count = u32::try_from(count)
        .ok()
        .filter(|c| (1..=365).contains(c))
        .ok_or_else(|| {
            ApiError::invalid(
                "recurring[interval_count]",
                "Invalid recurring[interval_count]: must be a positive integer",
            )
        })?;
    recurring_form.choice("usage_type", &["licensed"])?;
    Ok(Some(Recurring {
        interval,
        interval_count,
    }))
}

/// The price's product: `product` (which must exist) or a new one made from
/// `product_data`, exactly one of them.
fn price_product(a: &mut Account, form: &Form<'_>) -> Result<String, ApiError> {
    let product_data = form.sub("product_data")?;
    product_data.allow(&["name", "metadata", "active"])?;
    match (form.str("product")?, form.has("product_data")) {
        (Some(p), false) => {
            if !a.products.contains_key(p) {
                return Err(ApiError::no_such("product", p, "product"));
            }
            Ok(p.to_string())
        }
        (None, true) => {
            let name = product_data.req_str("name")?.to_string();
            let mut meta = Metadata::new();
            apply_metadata(&mut meta, product_data.metadata()?);
            let id = a.new_id("prod");
            let seq = a.next_seq();
            a.products.insert(
                id.clone(),
                Product {
                    id: id.clone(),
                    seq,
                    created: wall_now(),
                    name,
                    description: None,
                    active: product_data.bool("active")?.unwrap_or(true),
                    metadata: meta,
                },
            );
            Ok(id)
        }
        (Some(_), true) => Err(ApiError::bad_request(
            "You may only specify one of these parameters: product, product_data.",
        )),
        (None, false) => Err(ApiError::missing("product")),
    }
}

/// Frees lookup key `key` for a new price: a price holding it gives it up
/// with `transfer_lookup_key=true`, else the request is refused.
fn claim_lookup_key(a: &mut Account, key: &str, transfer: bool) -> Result<(), ApiError> {
    let holder = a
        .prices
        .values()
        .find(|p| p.lookup_key.as_deref() == Some(key))
        .map(|p| p.id.clone());
    let Some(holder) = holder else {
        return Ok(());
    };
    if !transfer {
        return Err(ApiError::invalid(
            "lookup_key",
            format!(
                "A price ({holder}) already uses that lookup key. Pass \
                 transfer_lookup_key=true to move it to this price."
            ),
        )
        .executed());
    }
    if let Some(p) = a.prices.get_mut(&holder) {
        p.lookup_key = None;
    }
    Ok(())
}

pub(super) fn list_prices(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&[
        "lookup_keys",
        "active",
        "product",
        "type",
        "currency",
    ]))?;
    let keys = form.strings("lookup_keys")?;
    let active = form.bool("active")?;
    let product = form.str("product")?;
    let kind = form.choice("type", &["one_time", "recurring"])?;
    let currency = form.str("currency")?;
    let items = newest_first(
        a.prices
            .values()
            .filter(|p| {
                keys.is_empty()
                    || p.lookup_key
                        .as_ref()
                        .is_some_and(|k| keys.iter().any(|x| x == k))
            })
            .filter(|p| active.is_none_or(|x| p.active == x))
            .filter(|p| product.is_none_or(|x| p.product == x))
            .filter(|p| currency.is_none_or(|x| p.currency == x))
            .filter(|p| kind.is_none_or(|k| (k == "recurring") == p.recurring.is_some()))
            .map(|p| (p.created, p.seq, render::price(p))),
    );
    page(form, "price", items, "/v1/prices")
}
