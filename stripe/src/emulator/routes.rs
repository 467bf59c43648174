//! Routing of `/v1/...` requests to the endpoint handlers, and the handlers for
//! customers, balance transactions, products, prices, subscriptions, invoices and
//! credit notes.

use super::billing;
use super::clock;
use super::errors::ApiError;
use super::form::Form;
use super::render;
use super::state::{
    apply_metadata, wall_now, Account, CreditNote, CreditNoteLine, Customer, Interval, Metadata,
    PendingItem, Price, Product, Recurring, SubItem, Subscription,
};
use serde_json::Value;
use std::cmp::Reverse;

const LIST: [&str; 4] = ["limit", "starting_after", "ending_before", "expand"];

fn with_list<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all: Vec<&str> = LIST.to_vec();
    all.extend_from_slice(extra);
    all
}

/// Answers one API request against an account. `expand` is applied here.
pub(crate) fn dispatch(
    a: &mut Account,
    method: &str,
    path: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let mut value = match (method, segs.as_slice()) {
        ("POST", ["v1", "test_helpers", "test_clocks"]) => clock::create(a, form),
        ("GET", ["v1", "test_helpers", "test_clocks"]) => list_clocks(a, form),
        ("GET", ["v1", "test_helpers", "test_clocks", id]) => {
            form.allow(&["expand"])?;
            clock::retrieve(a, id)
        }
        ("DELETE", ["v1", "test_helpers", "test_clocks", id]) => {
            form.allow(&[])?;
            clock::delete(a, id)
        }
        ("POST", ["v1", "test_helpers", "test_clocks", id, "advance"]) => {
            clock::advance(a, id, form)
        }
        ("POST", ["v1", "customers"]) => create_customer(a, form),
        ("GET", ["v1", "customers"]) => list_customers(a, form),
        ("GET", ["v1", "customers", id]) => {
            form.allow(&["expand"])?;
            a.customer(id, "id").map(render::customer)
        }
        ("POST", ["v1", "customers", id]) => update_customer(a, id, form),
        ("POST", ["v1", "customers", id, "balance_transactions"]) => {
            create_balance_txn(a, id, form)
        }
        ("GET", ["v1", "customers", id, "balance_transactions"]) => list_balance_txns(a, id, form),
        ("GET", ["v1", "customers", id, "balance_transactions", txn]) => {
            form.allow(&["expand"])?;
            balance_txn(a, id, txn).map(render::balance_txn)
        }
        ("POST", ["v1", "customers", id, "balance_transactions", txn]) => {
            update_balance_txn(a, id, txn, form)
        }
        ("POST", ["v1", "products"]) => create_product(a, form),
        ("GET", ["v1", "products"]) => {
            form.allow(&with_list(&["active"]))?;
            let active = form.bool("active")?;
            let items = newest_first(
                a.products
                    .values()
                    .filter(|p| active.is_none_or(|x| p.active == x))
                    .map(|p| (p.created, p.seq, render::product(p))),
            );
            page(form, items, "/v1/products")
        }
        ("GET", ["v1", "products", id]) => {
            form.allow(&["expand"])?;
            a.products
                .get(*id)
                .map(render::product)
                .ok_or_else(|| ApiError::no_such("product", id, "id"))
        }
        ("POST", ["v1", "prices"]) => create_price(a, form),
        ("GET", ["v1", "prices"]) => list_prices(a, form),
        ("GET", ["v1", "prices", id]) => {
            form.allow(&["expand"])?;
            a.price(id, "price").map(render::price)
        }
        ("POST", ["v1", "subscriptions"]) => create_subscription(a, form),
        ("GET", ["v1", "subscriptions"]) => list_subscriptions(a, form),
        ("GET", ["v1", "subscriptions", id]) => {
            form.allow(&["expand"])?;
            let s = a.subscription(id, "id")?;
            Ok(render::subscription(a, s))
        }
        ("POST", ["v1", "subscriptions", id]) => update_subscription(a, id, form),
        ("DELETE", ["v1", "subscriptions", id]) => cancel_subscription(a, id, form),
        ("GET", ["v1", "invoices"]) => list_invoices(a, form),
        ("GET", ["v1", "invoices", id]) => {
            form.allow(&["expand"])?;
            let inv = a.invoice(id, "invoice")?;
            Ok(render::invoice(a, inv))
        }
        ("GET", ["v1", "invoices", id, "lines"]) => {
            form.allow(&LIST)?;
            let inv = a.invoice(id, "invoice")?;
            let items = inv.lines.iter().map(|l| render::line(&inv.id, l)).collect();
            page(form, items, &format!("/v1/invoices/{id}/lines"))
        }
        ("POST", ["v1", "invoices", id, "finalize"]) => finalize_invoice(a, id, form),
        ("POST", ["v1", "invoices", id, "pay"]) => pay_invoice(a, id, form),
        ("POST", ["v1", "credit_notes"]) => create_credit_note(a, form),
        ("GET", ["v1", "credit_notes"]) => list_credit_notes(a, form),
        ("GET", ["v1", "credit_notes", id]) => {
            form.allow(&["expand"])?;
            credit_note(a, id).map(render::credit_note)
        }
        ("GET", ["v1", "credit_notes", id, "lines"]) => {
            form.allow(&LIST)?;
            let cn = credit_note(a, id)?;
            page(
                form,
                render::credit_note_lines(cn),
                &format!("/v1/credit_notes/{id}/lines"),
            )
        }
        ("POST", ["v1", "credit_notes", id, "void"]) => void_credit_note(a, id, form),
        _ => Err(ApiError::unrecognized_url(method, path)),
    }?;
    let expand = form.strings("expand")?;
    render::expand(a, &mut value, &expand)?;
    Ok(value)
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

/// One page of an ordered list: `limit` (1–100, default 10), `starting_after`,
/// `ending_before`.
fn page(form: &Form<'_>, items: Vec<Value>, url: &str) -> Result<Value, ApiError> {
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
            .ok_or_else(|| ApiError::no_such("object", id, param))
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
    page(form, items, "/v1/test_helpers/test_clocks")
}

fn check_payment_method(param: &str, pm: &str) -> Result<(), ApiError> {
    if pm.starts_with("pm_") {
        Ok(())
    } else {
        Err(ApiError::no_such("PaymentMethod", pm, param))
    }
}

fn create_customer(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
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
    ])?;
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
    // Attaching a test payment method (e.g. pm_card_visa) gives the customer its
    // own copy with a new id, which then stands for the original in defaults.
    let attached = payment_method.map(|_| a.new_id("pm"));
    let default_payment_method = match (default_pm, payment_method, &attached) {
        (Some(d), Some(p), Some(new)) if d == p => Some(new.clone()),
        (Some(d), _, _) => Some(d.to_string()),
        _ => None,
    };
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

fn update_customer(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn list_customers(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
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
    page(form, items, "/v1/customers")
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

fn create_balance_txn(a: &mut Account, cus: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn balance_txn<'a>(
    a: &'a Account,
    cus: &str,
    id: &str,
) -> Result<&'a super::state::BalanceTxn, ApiError> {
    a.customer(cus, "customer")?;
    a.balance_txns
        .get(id)
        .filter(|t| t.customer == cus)
        .ok_or_else(|| ApiError::no_such("customer balance transaction", id, "id"))
}

fn update_balance_txn(
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

fn list_balance_txns(a: &Account, cus: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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
        items,
        &format!("/v1/customers/{cus}/balance_transactions"),
    )
}

fn create_product(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn create_price(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
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
    ])?;
    let currency = currency(form, "currency")?;
    let unit_amount = form.req_int("unit_amount")?;
    if unit_amount < 0 {
        return Err(ApiError::invalid(
            "unit_amount",
            "Invalid unit_amount: must be at least 0",
        ));
    }
    let recurring_form = form.sub("recurring")?;
    recurring_form.allow(&["interval", "interval_count", "usage_type"])?;
    let recurring = if form.has("recurring") {
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
        Some(Recurring {
            interval,
            interval_count,
        })
    } else {
        None
    };
    let lookup_key = form.text("lookup_key", 200)?;
    let transfer = form.bool("transfer_lookup_key")?.unwrap_or(false);
    let nickname = form.text("nickname", 5000)?;
    let active = form.bool("active")?.unwrap_or(true);
    let product_data = form.sub("product_data")?;
    product_data.allow(&["name", "metadata", "active"])?;
    let product = match (form.str("product")?, form.has("product_data")) {
        (Some(p), false) => {
            if !a.products.contains_key(p) {
                return Err(ApiError::no_such("product", p, "product"));
            }
            p.to_string()
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
            id
        }
        (Some(_), true) => {
            return Err(ApiError::bad_request(
                "You may only specify one of these parameters: product, product_data.",
            ))
        }
        (None, false) => return Err(ApiError::missing("product")),
    };
    if let Some(key) = &lookup_key {
        let holder = a
            .prices
            .values()
            .find(|p| p.lookup_key.as_ref() == Some(key))
            .map(|p| p.id.clone());
        if let Some(holder) = holder {
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
        }
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

fn list_prices(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
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
    page(form, items, "/v1/prices")
}

fn create_subscription(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn list_subscriptions(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
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
    page(form, items, "/v1/subscriptions")
}

fn update_subscription(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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
    if let Some(anchor) = form.str("billing_cycle_anchor")? {
        if anchor != "unchanged" {
            return Err(ApiError::invalid(
                "billing_cycle_anchor",
                "The emulator only models billing_cycle_anchor=unchanged.",
            ));
        }
    }
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

fn cancel_subscription(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn list_invoices(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
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
    page(form, items, "/v1/invoices")
}

fn finalize_invoice(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn pay_invoice(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
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

fn credit_note<'a>(a: &'a Account, id: &str) -> Result<&'a CreditNote, ApiError> {
    a.credit_notes
        .get(id)
        .ok_or_else(|| ApiError::no_such("credit_note", id, "id"))
}

fn create_credit_note(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
        "invoice",
        "amount",
        "lines",
        "credit_amount",
        "refund_amount",
        "out_of_band_amount",
        "memo",
        "reason",
        "metadata",
        "effective_at",
        "email_type",
        "expand",
    ])?;
    let inv_id = form.req_str("invoice")?;
    let inv = a.invoice(inv_id, "invoice")?.clone();
    let mut cn_lines: Vec<(i64, Option<String>, Option<String>)> = Vec::new();
    for line in form.list("lines")? {
        line.allow(&[
            "type",
            "invoice_line_item",
            "amount",
            "description",
            "quantity",
        ])?;
        let kind = line.choice("type", &["invoice_line_item", "custom_line_item"])?;
        let Some(kind) = kind else {
            return Err(ApiError::missing(&line.name("type")));
        };
        let amount = match (kind, line.int("amount")?) {
            (_, Some(x)) => x,
            ("invoice_line_item", None) => {
                let item = line.req_str("invoice_line_item")?;
                inv.lines
                    .iter()
                    .find(|l| l.id == item)
                    .map(|l| l.amount)
                    .ok_or_else(|| {
                        ApiError::no_such(
                            "invoice line item",
                            item,
                            &line.name("invoice_line_item"),
                        )
                    })?
            }
            _ => return Err(ApiError::missing(&line.name("amount"))),
        };
        let item = if kind == "invoice_line_item" {
            let item = line.req_str("invoice_line_item")?;
            if !inv.lines.iter().any(|l| l.id == item) {
                return Err(ApiError::no_such(
                    "invoice line item",
                    item,
                    &line.name("invoice_line_item"),
                ));
            }
            Some(item.to_string())
        } else {
            None
        };
        cn_lines.push((amount, line.text("description", 5000)?, item));
    }
    let amount = match (form.int("amount")?, cn_lines.is_empty()) {
        (Some(x), true) => x,
        (None, false) => cn_lines.iter().map(|l| l.0).sum(),
        (Some(x), false) => {
            let sum: i64 = cn_lines.iter().map(|l| l.0).sum();
            if sum != x {
                return Err(ApiError::invalid(
                    "amount",
                    format!("The amount ({x}) must equal the sum of the lines ({sum})."),
                ));
            }
            x
        }
        (None, true) => return Err(ApiError::missing("amount")),
    };
    if amount <= 0 {
        return Err(ApiError::invalid(
            "amount",
            "Invalid amount: a credit note must be for a positive amount",
        ));
    }
    if !matches!(inv.status, "open" | "paid") {
        return Err(ApiError::invalid(
            "invoice",
            format!(
                "Credit notes can only be created on open or paid invoices; {inv_id} is {}.",
                inv.status
            ),
        )
        .executed());
    }
    let creditable =
        inv.total - inv.pre_payment_credit_notes_amount - inv.post_payment_credit_notes_amount;
    if amount > creditable {
        return Err(ApiError::invalid(
            "amount",
            format!(
                "The credit note amount ({amount}) is greater than the amount that can still be \
                 credited on invoice {inv_id} ({creditable})."
            ),
        )
        .executed());
    }
    let credit_amount = form.int("credit_amount")?.unwrap_or(0);
    let refund_amount = form.int("refund_amount")?.unwrap_or(0);
    let oob_amount = form.int("out_of_band_amount")?.unwrap_or(0);
    for (name, v) in [
        ("credit_amount", credit_amount),
        ("refund_amount", refund_amount),
        ("out_of_band_amount", oob_amount),
    ] {
        if v < 0 {
            return Err(ApiError::invalid(
                name,
                format!("Invalid {name}: must be at least 0"),
            ));
        }
    }
    if refund_amount > 0 {
        return Err(ApiError::invalid(
            "refund_amount",
            "The emulator does not model card payments, so it cannot refund; use credit_amount \
             or out_of_band_amount.",
        ));
    }
    let pre = if inv.status == "open" {
        amount.min(inv.amount_remaining)
    } else {
        0
    };
    let post = amount - pre;
    if credit_amount + refund_amount + oob_amount != post {
        return Err(ApiError::invalid(
            if form.has("credit_amount") {
                "credit_amount"
            } else {
                "amount"
            },
            format!(
                "The sum of credit amount, refund amount and out of band amount ({}) must equal \
                 the credit note's post-payment amount ({post}).",
                credit_amount + refund_amount + oob_amount
            ),
        ));
    }
    let memo = form.text("memo", 5000)?;
    let reason = form
        .choice(
            "reason",
            &[
                "duplicate",
                "fraudulent",
                "order_change",
                "product_unsatisfactory",
            ],
        )?
        .map(str::to_string);
    form.choice("email_type", &["credit_note", "none"])?;
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let now = a.now_for(&inv.customer);
    let effective_at = form.int("effective_at")?.unwrap_or(now);
    let id = a.new_id("cn");
    let seq = a.next_seq();
    let existing = a
        .credit_notes
        .values()
        .filter(|c| c.invoice == inv_id)
        .count();
    let number = format!(
        "{}-CN-{:02}",
        inv.number.clone().unwrap_or_else(|| inv_id.to_string()),
        existing + 1
    );
    let cbtxn = if credit_amount > 0 {
        Some(a.add_balance_txn(
            &inv.customer,
            -credit_amount,
            &inv.currency,
            "credit_note",
            now,
            Some(inv_id.to_string()),
            Some(id.clone()),
            None,
            Metadata::new(),
        ))
    } else {
        None
    };
    if cn_lines.is_empty() {
        cn_lines.push((amount, memo.clone().or_else(|| Some("Credit".into())), None));
    }
    let mut lines = Vec::new();
    for (amount, description, item) in cn_lines {
        lines.push(CreditNoteLine {
            id: a.new_id("cnli"),
            amount,
            description,
            invoice_line_item: item,
        });
    }
    if let Some(i) = a.invoices.get_mut(inv_id) {
        i.pre_payment_credit_notes_amount += pre;
        i.post_payment_credit_notes_amount += post;
        if pre > 0 {
            i.amount_due -= pre;
            i.amount_remaining -= pre;
            if i.amount_remaining == 0 && i.status == "open" {
                i.status = "paid";
                i.paid_at = Some(now);
            }
        }
    }
    let cn = CreditNote {
        id: id.clone(),
        seq,
        created: now,
        customer: inv.customer.clone(),
        invoice: inv_id.to_string(),
        currency: inv.currency.clone(),
        amount,
        credit_amount,
        out_of_band_amount: oob_amount,
        pre_payment_amount: pre,
        post_payment_amount: post,
        status: "issued",
        kind: match (pre > 0, post > 0) {
            (true, true) => "mixed",
            (true, false) => "pre_payment",
            _ => "post_payment",
        },
        memo,
        reason,
        metadata: meta,
        number,
        customer_balance_transaction: cbtxn,
        voided_at: None,
        effective_at,
        lines,
    };
    let out = render::credit_note(&cn);
    a.credit_notes.insert(id, cn);
    Ok(out)
}

fn list_credit_notes(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&["customer", "invoice", "created"]))?;
    let customer = form.str("customer")?;
    let invoice = form.str("invoice")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.credit_notes
            .values()
            .filter(|c| customer.is_none_or(|x| c.customer == x))
            .filter(|c| invoice.is_none_or(|x| c.invoice == x))
            .filter(|c| created.admits(c.created))
            .map(|c| (c.created, c.seq, render::credit_note(c))),
    );
    page(form, items, "/v1/credit_notes")
}

fn void_credit_note(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&["expand"])?;
    let cn = credit_note(a, id)?.clone();
    if cn.status == "void" {
        return Err(ApiError::bad_request(format!(
            "The credit note {id} has already been voided."
        ))
        .executed());
    }
    let now = a.now_for(&cn.customer);
    if cn.credit_amount > 0 {
        a.add_balance_txn(
            &cn.customer,
            cn.credit_amount,
            &cn.currency,
            "credit_note",
            now,
            Some(cn.invoice.clone()),
            Some(id.to_string()),
            None,
            Metadata::new(),
        );
    }
    if let Some(i) = a.invoices.get_mut(&cn.invoice) {
        i.pre_payment_credit_notes_amount -= cn.pre_payment_amount;
        i.post_payment_credit_notes_amount -= cn.post_payment_amount;
        if cn.pre_payment_amount > 0 {
            i.amount_due += cn.pre_payment_amount;
            i.amount_remaining += cn.pre_payment_amount;
            if i.status == "paid" && i.amount_remaining > 0 {
                i.status = "open";
                i.paid_at = None;
            }
        }
    }
    let c = a
        .credit_notes
        .get_mut(id)
        .ok_or_else(|| ApiError::no_such("credit_note", id, "id"))?;
    c.status = "void";
    c.voided_at = Some(now);
    Ok(render::credit_note(c))
}
