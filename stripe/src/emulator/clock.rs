//! Calendar arithmetic, test clock endpoints, and the engine that moves a clock
//! forward: period rollovers, draft renewal invoices, finalization about an hour
//! later (applying the customer balance), payment.

use super::billing;
use super::errors::ApiError;
use super::form::Form;
use super::render;
use super::state::{wall_now, Account, Clock, Interval, Recurring};
use serde_json::Value;
use std::time::Instant;

const DAY: i64 = 86_400;

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    days_from_civil(ny, nm, 1) - days_from_civil(y, m, 1)
}

fn add_months(t: i64, months: i64) -> i64 {
    let (days, secs) = (t.div_euclid(DAY), t.rem_euclid(DAY));
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m - 1) + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let nd = d.min(days_in_month(ny, nm));
    days_from_civil(ny, nm, nd) * DAY + secs
}

/// `anchor` plus `n` billing intervals. Months keep the anchor's day of month,
/// clamped to shorter months (Jan 31 → Feb 28 → Mar 31).
pub(crate) fn add_interval(anchor: i64, r: Recurring, n: i64) -> i64 {
    let count = i64::from(r.interval_count) * n;
    match r.interval {
        Interval::Day => anchor + count * DAY,
        Interval::Week => anchor + count * 7 * DAY,
        Interval::Month => add_months(anchor, count),
        Interval::Year => add_months(anchor, 12 * count),
    }
}

/// The first period boundary after `after` on the grid `anchor + k intervals`.
pub(crate) fn next_boundary(anchor: i64, r: Recurring, after: i64) -> i64 {
    let mut n = 1;
    loop {
        let t = add_interval(anchor, r, n);
        if t > after {
            return t;
        }
        n += 1;
    }
}

/// `YYYY-MM-DD` for descriptions.
pub(crate) fn date(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(DAY));
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let name = months[usize::try_from(m - 1).unwrap_or(0).min(11)];
    format!("{d} {name} {y}")
}

/// `POST /v1/test_helpers/test_clocks`.
pub(crate) fn create(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&["frozen_time", "name", "expand"])?;
    let frozen_time = form.req_int("frozen_time")?;
    let name = form.text("name", 300)?;
    let id = a.new_id("clock");
    let seq = a.next_seq();
    let created = wall_now();
    let clock = Clock {
        id: id.clone(),
        seq,
        created,
        name,
        frozen_time,
        deletes_after: created + 30 * DAY,
    };
    let out = render::clock(&clock, None);
    a.clocks.insert(id, clock);
    Ok(out)
}

/// The latest time `clock` may be advanced to: two intervals of its shortest
/// subscription past its frozen time, or two years when it has none.
fn advance_limit(a: &Account, clock: &Clock) -> i64 {
    let shortest = a
        .subscriptions
        .values()
        .filter(|s| s.test_clock.as_deref() == Some(clock.id.as_str()) && s.status != "canceled")
        .flat_map(|s| s.items.iter())
        .filter_map(|i| a.prices.get(&i.price).and_then(|p| p.recurring))
        .min_by_key(|r| add_interval(0, *r, 1));
    match shortest {
        Some(r) => add_interval(clock.frozen_time, r, 2),
        None => add_months(clock.frozen_time, 24),
    }
}

/// `POST /v1/test_helpers/test_clocks/{id}/advance`.
pub(crate) fn advance(a: &mut Account, id: &str, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&["frozen_time", "expand"])?;
    let target = form.req_int("frozen_time")?;
    // An advance still under way completes before the next one starts.
    finish_slow_advance(a, id, true);
    let clock = a.clock(id, "test_clock")?.clone();
    if target <= clock.frozen_time {
        return Err(ApiError::invalid(
            "frozen_time",
            format!(
                "The test clock's frozen_time can only move forward: {target} is not after the \
                 current frozen_time {}.",
                clock.frozen_time
            ),
        ));
    }
    let limit = advance_limit(a, &clock);
    if target > limit {
        return Err(ApiError::invalid(
            "frozen_time",
            format!(
                "Cannot advance the test clock to {target}: it can move at most two intervals of \
                 its shortest subscription (or two years when it has none) ahead of its frozen \
                 time, i.e. to {limit} at most."
            ),
        ));
    }
    // The answer shows the clock as it is when advancing starts.
    let answer = render::clock(&clock, Some(target));
    match a.next_advance_takes.take() {
        Some(takes) => {
            a.slow_advances
                .insert(id.to_string(), (target, Instant::now() + takes));
        }
        None => run_until(a, id, target),
    }
    a.advancing.insert(id.to_string(), target);
    Ok(answer)
}

/// Finishes any advance of `id` still under way and returns its frozen time; `Err` names a
/// clock the account does not have.
pub(crate) fn settle_and_read(a: &mut Account, id: &str) -> Result<i64, super::NoSuchClock> {
    finish_slow_advance(a, id, true);
    a.advancing.remove(id);
    a.clocks
        .get(id)
        .map(|c| c.frozen_time)
        .ok_or_else(|| super::NoSuchClock(id.to_owned()))
}

/// Finishes a slow advance of the clock whose time has come (or, with `force`, any slow
/// advance of it): runs its events. Returns the target of an advance still under way.
fn finish_slow_advance(a: &mut Account, id: &str, force: bool) -> Option<i64> {
    let (target, ready_at) = *a.slow_advances.get(id)?;
    if !force && Instant::now() < ready_at {
        return Some(target);
    }
    a.slow_advances.remove(id);
    run_until(a, id, target);
    None
}

/// Processes every due event of the clock's objects in time order, then sets
/// the clock to `target`.
pub(crate) fn run_until(a: &mut Account, clock_id: &str, target: i64) {
    loop {
        let next = billing::next_event(a, clock_id, target);
        let Some((t, event)) = next else { break };
        if let Some(c) = a.clocks.get_mut(clock_id) {
            c.frozen_time = c.frozen_time.max(t);
        }
        billing::run_event(a, event, t);
    }
    if let Some(c) = a.clocks.get_mut(clock_id) {
        c.frozen_time = target;
    }
}

/// `GET /v1/test_helpers/test_clocks/{id}`: an advance has completed by the
/// time anyone reads the clock again.
pub(crate) fn retrieve(a: &mut Account, id: &str) -> Result<Value, ApiError> {
    a.clock(id, "test_clock")?;
    if let Some(target) = finish_slow_advance(a, id, false) {
        return Ok(render::clock(a.clock(id, "test_clock")?, Some(target)));
    }
    let clock = a.clock(id, "test_clock")?;
    let out = render::clock(clock, None);
    a.advancing.remove(id);
    Ok(out)
}

/// `DELETE /v1/test_helpers/test_clocks/{id}`: removes the clock and every
/// object attached to it.
pub(crate) fn delete(a: &mut Account, id: &str) -> Result<Value, ApiError> {
    a.clock(id, "test_clock")?;
    a.clocks.remove(id);
    a.advancing.remove(id);
    a.slow_advances.remove(id);
    let customers: Vec<String> = a
        .customers
        .values()
        .filter(|c| c.test_clock.as_deref() == Some(id))
        .map(|c| c.id.clone())
        .collect();
    for cus in &customers {
        a.customers.remove(cus);
        a.subscriptions.retain(|_, s| &s.customer != cus);
        a.invoices.retain(|_, i| &i.customer != cus);
        a.balance_txns.retain(|_, t| &t.customer != cus);
        a.credit_notes.retain(|_, n| &n.customer != cus);
        a.pending_items.retain(|p| &p.customer != cus);
    }
    Ok(serde_json::json!({ "id": id, "object": "test_helpers.test_clock", "deleted": true }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_round_trips_and_months_clamp() {
        for days in [-1000, 0, 59, 365, 11_016, 20_000, 30_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        let jan31 = days_from_civil(2027, 1, 31) * DAY + 3600;
        let r = Recurring {
            interval: Interval::Month,
            interval_count: 1,
        };
        assert_eq!(
            add_interval(jan31, r, 1),
            days_from_civil(2027, 2, 28) * DAY + 3600
        );
        assert_eq!(
            add_interval(jan31, r, 2),
            days_from_civil(2027, 3, 31) * DAY + 3600
        );
        assert_eq!(
            next_boundary(jan31, r, jan31 + 40 * DAY),
            add_interval(jan31, r, 2)
        );
        assert_eq!(date(0), "1 Jan 1970");
    }
}
