//! Invoices and money: subscription invoices, renewals, proration, applying the
//! customer balance at finalization, payment, and credit notes.

use super::clock::{date, next_boundary};
use super::state::{Account, Invoice, Line, Metadata, PendingItem};

/// Something the clock engine must do at a point in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A subscription reaches the end of its current period.
    Renew(String),
    /// A draft invoice's automatic finalization (and payment attempt) is due.
    Finalize(String),
}

/// The earliest event at or before `until` for objects on `clock`.
/// At equal times renewals run before finalizations.
pub(crate) fn next_event(a: &Account, clock: &str, until: i64) -> Option<(i64, Event)> {
    let renewals = a
        .subscriptions
        .values()
        .filter(|s| {
            s.test_clock.as_deref() == Some(clock)
                && matches!(s.status, "active" | "past_due" | "trialing")
        })
        .filter_map(|s| {
            let end = s.items.first()?.period_end;
            (end <= until).then(|| (end, 0, s.seq, Event::Renew(s.id.clone())))
        });
    let finalizations = a
        .invoices
        .values()
        .filter(|i| i.test_clock.as_deref() == Some(clock) && i.status == "draft" && i.auto_advance)
        .filter_map(|i| {
            let at = i.automatically_finalizes_at?;
            (at <= until).then(|| (at, 1, i.seq, Event::Finalize(i.id.clone())))
        });
    renewals
        .chain(finalizations)
        .min_by_key(|(t, order, seq, _)| (*t, *order, *seq))
        .map(|(t, _, _, e)| (t, e))
}

pub(crate) fn run_event(a: &mut Account, event: Event, at: i64) {
    match event {
        Event::Renew(sub) => renew(a, &sub, at),
        Event::Finalize(inv) => {
            finalize(a, &inv, at);
            attempt_payment(a, &inv, at);
        }
    }
}

/// Formats cents as `$30.00` for line descriptions.
fn money(cents: i64, currency: &str) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    let symbol = if currency == "usd" { "$" } else { "" };
    format!("{sign}{symbol}{}.{:02}", abs / 100, abs % 100)
}

/// The line billing one subscription item for one full period.
pub(crate) fn period_line(
    a: &mut Account,
    sub: &str,
    item: &str,
    price_id: &str,
    quantity: i64,
    start: i64,
    end: i64,
) -> Line {
    let id = a.new_id("il");
    let (amount, currency, product, product_name, interval) = match a.prices.get(price_id) {
        Some(p) => (
            p.unit_amount * quantity,
            p.currency.clone(),
            p.product.clone(),
            a.products
                .get(&p.product)
                .map_or_else(|| p.product.clone(), |pr| pr.name.clone()),
            p.recurring.map_or("month", |r| r.interval.as_str()),
        ),
        None => (0, "usd".into(), String::new(), String::new(), "month"),
    };
    let unit = if quantity != 0 { amount / quantity } else { 0 };
    Line {
        id,
        amount,
        description: format!(
            "{quantity} × {product_name} (at {} / {interval})",
            money(unit, &currency)
        ),
        currency,
        price: price_id.to_string(),
        product,
        quantity,
        period_start: start,
        period_end: end,
        proration: false,
        subscription: Some(sub.to_string()),
        subscription_item: Some(item.to_string()),
        invoice_item: None,
        credited: None,
        metadata: Metadata::new(),
    }
}

/// `round(amount × part / whole)`, half away from zero, in integer arithmetic.
pub(crate) fn prorate(amount: i64, part: i64, whole: i64) -> i64 {
    if whole <= 0 {
        return 0;
    }
    let num = i128::from(amount) * i128::from(part) * 2;
    let den = i128::from(whole) * 2;
    let rounded = if num >= 0 {
        (num + i128::from(whole)) / den
    } else {
        (num - i128::from(whole)) / den
    };
    i64::try_from(rounded).unwrap_or(0)
}

/// The two proration lines for changing an item from `old` to `new` price and
/// quantity at `at` within the period `[start, end)`: a negative "Unused time"
/// credit for the old price and a positive "Remaining time" charge for the new.
#[allow(clippy::too_many_arguments)]
pub(crate) fn proration_lines(
    a: &mut Account,
    sub: &str,
    item: &str,
    (old_price, old_qty): (&str, i64),
    (new_price, new_qty): (&str, i64),
    at: i64,
    (start, end): (i64, i64),
    credited: Option<(String, Vec<String>)>,
) -> Vec<Line> {
    let mut out = Vec::new();
    for (price_id, qty, sign, label) in [
        (old_price, old_qty, -1, "Unused time on"),
        (new_price, new_qty, 1, "Remaining time on"),
    ] {
        let Some(price) = a.prices.get(price_id).cloned() else {
            continue;
        };
        let amount = sign * prorate(price.unit_amount * qty, end - at, end - start);
        let name = a
            .products
            .get(&price.product)
            .map_or_else(|| price.product.clone(), |p| p.name.clone());
        let id = a.new_id("il");
        let ii = a.new_id("ii");
        out.push(Line {
            id,
            amount,
            currency: price.currency.clone(),
            description: if qty == 1 {
                format!("{label} {name} after {}", date(at))
            } else {
                format!("{label} {qty} × {name} after {}", date(at))
            },
            price: price_id.to_string(),
            product: price.product.clone(),
            quantity: qty,
            period_start: at,
            period_end: end,
            proration: true,
            subscription: Some(sub.to_string()),
            subscription_item: Some(item.to_string()),
            invoice_item: Some(ii),
            credited: if sign < 0 { credited.clone() } else { None },
            metadata: Metadata::new(),
        });
    }
    out
}

/// Creates a draft invoice for a subscription.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create_invoice(
    a: &mut Account,
    sub: &str,
    reason: &'static str,
    lines: Vec<Line>,
    created: i64,
    period: (i64, i64),
    finalizes_at: Option<i64>,
) -> String {
    let id = a.new_id("in");
    let seq = a.next_seq();
    let (customer, currency, test_clock, pm) = match a.subscriptions.get(sub) {
        Some(s) => (
            s.customer.clone(),
            s.currency.clone(),
            s.test_clock.clone(),
            s.default_payment_method.clone(),
        ),
        None => (String::new(), "usd".into(), None, None),
    };
    let lines: Vec<Line> = lines;
    let subtotal: i64 = lines.iter().map(|l| l.amount).sum();
    a.invoices.insert(
        id.clone(),
        Invoice {
            id: id.clone(),
            seq,
            created,
            customer,
            subscription: Some(sub.to_string()),
            billing_reason: reason,
            status: "draft",
            collection_method: "charge_automatically",
            auto_advance: true,
            currency,
            lines,
            number: None,
            period_start: period.0,
            period_end: period.1,
            subtotal,
            total: subtotal,
            starting_balance: None,
            ending_balance: None,
            amount_due: subtotal.max(0),
            amount_paid: 0,
            amount_paid_off_stripe: 0,
            amount_remaining: subtotal.max(0),
            pre_payment_credit_notes_amount: 0,
            post_payment_credit_notes_amount: 0,
            attempted: false,
            attempt_count: 0,
            finalized_at: None,
            paid_at: None,
            voided_at: None,
            automatically_finalizes_at: finalizes_at,
            default_payment_method: pm,
            test_clock,
            metadata: Metadata::new(),
            description: None,
        },
    );
    if let Some(s) = a.subscriptions.get_mut(sub) {
        s.latest_invoice = Some(id.clone());
    }
    id
}

/// Moves the subscription's pending invoice items onto an invoice's lines.
pub(crate) fn take_pending(a: &mut Account, sub: &str) -> Vec<Line> {
    let (taken, kept): (Vec<PendingItem>, Vec<PendingItem>) = std::mem::take(&mut a.pending_items)
        .into_iter()
        .partition(|p| p.subscription == sub);
    a.pending_items = kept;
    taken.into_iter().map(|p| p.line).collect()
}

/// A subscription reaches its period end at `at`: start the next period and
/// create the draft `subscription_cycle` invoice (new period charge plus any
/// pending proration items), due to finalize an hour later.
fn renew(a: &mut Account, sub_id: &str, at: i64) {
    let Some(sub) = a.subscriptions.get(sub_id).cloned() else {
        return;
    };
    if sub.cancel_at_period_end {
        if let Some(s) = a.subscriptions.get_mut(sub_id) {
            s.status = "canceled";
            s.canceled_at = Some(at);
            s.ended_at = Some(at);
        }
        return;
    }
    let old_start = sub.items.first().map_or(at, |i| i.period_start);
    let mut lines = Vec::new();
    let mut new_items = sub.items.clone();
    for item in &mut new_items {
        let end = a
            .prices
            .get(&item.price)
            .and_then(|p| p.recurring)
            .map_or(at, |r| next_boundary(sub.billing_cycle_anchor, r, at));
        item.period_start = at;
        item.period_end = end;
        let line = period_line(a, sub_id, &item.id, &item.price, item.quantity, at, end);
        lines.push(line);
    }
    // Proration items first, as Stripe lists them before the new period.
    let mut all = take_pending(a, sub_id);
    all.extend(lines);
    if let Some(s) = a.subscriptions.get_mut(sub_id) {
        s.items = new_items;
    }
    create_invoice(
        a,
        sub_id,
        "subscription_cycle",
        all,
        at,
        (old_start, at),
        Some(at + 3600),
    );
}

/// Finalizes a draft at `at`: assigns a number and applies the customer balance.
///
/// With balance `B` (negative = credit) and total `T >= 0`: a credit covers
/// `min(-B, T)`, a debit (`B > 0`) is added in full; `amount_due = T - applied`,
/// `starting_balance = B`, `ending_balance = B + applied`, and an
/// `applied_to_invoice` transaction of `+applied` is recorded (positive when a
/// credit is consumed). A negative total is added to the customer's credit.
pub(crate) fn finalize(a: &mut Account, inv_id: &str, at: i64) {
    let Some(inv) = a.invoices.get(inv_id).cloned() else {
        return;
    };
    if inv.status != "draft" {
        return;
    }
    let Some(customer) = a.customers.get(&inv.customer).cloned() else {
        return;
    };
    let b = customer.balance;
    let t = inv.total;
    let applied = if t < 0 {
        t
    } else if b < 0 {
        (-b).min(t)
    } else {
        -b
    };
    let amount_due = if t < 0 { 0 } else { t - applied };
    let number = format!(
        "{}-{:04}",
        customer.invoice_prefix, customer.next_invoice_sequence
    );
    if let Some(c) = a.customers.get_mut(&inv.customer) {
        c.next_invoice_sequence += 1;
    }
    if applied != 0 {
        a.add_balance_txn(
            &inv.customer,
            applied,
            &inv.currency,
            "applied_to_invoice",
            at,
            Some(inv_id.to_string()),
            None,
            None,
            Metadata::new(),
        );
    }
    if let Some(i) = a.invoices.get_mut(inv_id) {
        i.status = "open";
        i.number = Some(number);
        i.starting_balance = Some(b);
        i.ending_balance = Some(b + applied);
        i.amount_due = amount_due;
        i.amount_remaining = amount_due;
        i.finalized_at = Some(at);
        i.automatically_finalizes_at = None;
    }
}

/// Whether a payment method is available: the invoice's, the subscription's,
/// or the customer's default. Test payment methods always succeed.
fn has_payment_method(a: &Account, inv: &Invoice) -> bool {
    inv.default_payment_method.is_some()
        || inv
            .subscription
            .as_ref()
            .and_then(|s| a.subscriptions.get(s))
            .is_some_and(|s| s.default_payment_method.is_some())
        || a.customers
            .get(&inv.customer)
            .is_some_and(|c| c.default_payment_method.is_some())
}

/// Tries to collect an open invoice at `at`. Returns whether it is now paid.
pub(crate) fn attempt_payment(a: &mut Account, inv_id: &str, at: i64) -> bool {
    let Some(inv) = a.invoices.get(inv_id).cloned() else {
        return false;
    };
    if inv.status != "open" {
        return inv.status == "paid";
    }
    let pays = inv.amount_remaining == 0 || has_payment_method(a, &inv);
    if let Some(i) = a.invoices.get_mut(inv_id) {
        if i.amount_remaining > 0 {
            i.attempted = true;
            i.attempt_count += 1;
        } else {
            i.attempted = true;
        }
        if pays {
            i.amount_paid += i.amount_remaining;
            i.amount_remaining = 0;
            i.status = "paid";
            i.paid_at = Some(at);
        }
    }
    if let Some(sub) = inv
        .subscription
        .as_ref()
        .and_then(|s| a.subscriptions.get_mut(s))
    {
        if pays && matches!(sub.status, "past_due" | "incomplete") {
            sub.status = "active";
        } else if !pays && sub.status == "active" && inv.billing_reason != "subscription_create" {
            sub.status = "past_due";
        }
    }
    pays
}

/// Marks an open invoice paid outside Stripe.
pub(crate) fn pay_out_of_band(a: &mut Account, inv_id: &str, at: i64) {
    if let Some(i) = a.invoices.get_mut(inv_id) {
        i.amount_paid += i.amount_remaining;
        i.amount_paid_off_stripe += i.amount_remaining;
        i.amount_remaining = 0;
        i.status = "paid";
        i.paid_at = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::prorate;

    #[test]
    fn proration_rounds_half_away_from_zero() {
        assert_eq!(prorate(3000, 10, 10), 3000);
        assert_eq!(prorate(3000, 5, 10), 1500);
        assert_eq!(prorate(1001, 1, 2), 501);
        assert_eq!(prorate(-1001, 1, 2), -501);
        assert_eq!(prorate(2000, 0, 10), 0);
    }
}
