//! The emulator against real Stripe: each cell's ground truth from an emulator run, compared
//! with what real Stripe test mode held for the same cell in the original implementation's
//! published results.
//!
//! Both sides are first brought to one comparable form ([`Truth`]): object ids become
//! `cbtxn 1`, `in 2`, ... in order of first appearance (lists keep Stripe's newest-first order,
//! which is created-time order), a case credit's time becomes the billing period of the case's
//! subscription it was created in (not a count of days: the two runs' clocks started on
//! different dates, and a month from one date can have 30 days where a month from another has
//! 31), and a credit note's incident becomes whether it is the case's own incident. Everything
//! else (amounts, types, statuses, billing reasons, balances) is compared as it is.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use verify::results::{Cell, ResultsFile};

/// How far before a period boundary a creation time still counts as after it: the original
/// file gives its clocks' start only to the minute of its run (see [`stripe_truth`]), while a
/// credit after a renewal is made hours past the boundary (the outage advances the clock to
/// 3 h after the period's end) and one before it within seconds of the clock's start.
const BOUNDARY_SLACK: i64 = 3_600;

/// One cell's ground truth in comparable form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truth {
    /// The customer's balance, cents (negative = credit owed to the customer).
    pub customer_balance: i64,
    /// This case's credits.
    pub case_credits: Vec<CaseCredit>,
    /// Every balance transaction, newest first.
    pub balance_transactions: Vec<BalanceTxn>,
    /// Every invoice, newest first.
    pub invoices: Vec<Invoice>,
    /// Every credit note.
    pub credit_notes: Vec<CreditNote>,
    /// Compensation by others, unscoped, cents.
    pub compensation_by_others: i64,
    /// Compensation by others for the case's incident, cents.
    pub incident_compensation: i64,
}

/// A case credit: its reference, amount and the billing period it was created in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseCredit {
    /// `cbtxn N`.
    pub reference: String,
    /// Cents (negative).
    pub amount: i64,
    /// The billing period of the case's monthly subscription, on its test clock, that the credit
    /// was created in: 1 the first (before the outage's renewal), 2 the one the renewal opened.
    pub period: i64,
}

/// A balance transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BalanceTxn {
    /// `cbtxn N`.
    pub reference: String,
    /// Stripe's `type`.
    pub kind: String,
    /// Cents.
    pub amount: i64,
}

/// An invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Invoice {
    /// `in N`.
    pub reference: String,
    /// `billing_reason`.
    pub billing_reason: String,
    /// `status`.
    pub status: String,
    /// Cents.
    pub total: i64,
    /// Cents.
    pub starting_balance: i64,
    /// Cents.
    pub amount_due: i64,
}

/// A credit note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreditNote {
    /// `cn N`.
    pub reference: String,
    /// Cents.
    pub amount: i64,
    /// `issued` or `void`.
    pub status: String,
    /// `this case's incident`, `another incident` or `none`.
    pub incident: String,
}

/// One cell of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellComparison {
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// Column.
    pub column: String,
    /// The emulator's side, if the emulator run has this cell.
    pub emulator: Option<Truth>,
    /// Real Stripe's side, if the original run has this cell.
    pub stripe: Option<Truth>,
    /// What differs, one sentence each; empty when identical.
    pub differences: Vec<String>,
}

impl CellComparison {
    /// Both sides present and equal.
    pub fn identical(&self) -> bool {
        self.emulator.is_some() && self.stripe.is_some() && self.differences.is_empty()
    }
}

/// The whole comparison, cells in the original file's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// One entry per cell of either side.
    pub cells: Vec<CellComparison>,
}

impl Comparison {
    /// Cells whose two sides are identical.
    pub fn identical(&self) -> usize {
        self.cells.iter().filter(|c| c.identical()).count()
    }
}

/// Why the original file cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComparisonError {
    /// A field the comparison needs is missing or has the wrong type.
    #[error("the original results file has no usable {0}")]
    Missing(String),
}

/// Hands out `prefix N` references in order of first appearance.
#[derive(Default)]
struct References {
    seen: BTreeMap<String, String>,
    counts: BTreeMap<String, usize>,
}

impl References {
    fn of(&mut self, id: &str) -> String {
        if let Some(r) = self.seen.get(id) {
            return r.clone();
        }
        let prefix = id.split('_').next().unwrap_or(id).to_string();
        let n = self.counts.entry(prefix.clone()).or_insert(0);
        *n += 1;
        let reference = format!("{prefix} {n}");
        self.seen.insert(id.to_string(), reference.clone());
        reference
    }
}

fn incident_label(incident: Option<&str>, case_incident: &str) -> String {
    match incident {
        None => "none".into(),
        Some(i) if i == case_incident => "this case's incident".into(),
        Some(_) => "another incident".into(),
    }
}

/// `start` plus `months` calendar months, keeping the day of month and clamping it to shorter
/// months, as a monthly subscription's periods do (Jan 31 → Feb 28 → Mar 31). `None` out of range.
fn add_months(start: i64, months: i64) -> Option<i64> {
    let t = time::OffsetDateTime::from_unix_timestamp(start).ok()?;
    let total = i64::from(t.year()) * 12 + i64::from(u8::from(t.month())) - 1 + months;
    let year = i32::try_from(total.div_euclid(12)).ok()?;
    let month = time::Month::try_from(u8::try_from(total.rem_euclid(12) + 1).ok()?).ok()?;
    let day = t.day().min(month.length(year));
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    Some(t.replace_date(date).unix_timestamp())
}

/// The billing period (1 = the first) that `created` falls in, for a monthly subscription that
/// started at `clock_start`.
pub fn billing_period(created: i64, clock_start: i64) -> i64 {
    let mut period = 1;
    // A case's clock is advanced once, by about a month; a few periods bound any case.
    while period < 24 {
        match add_months(clock_start, period) {
            Some(boundary) if created >= boundary - BOUNDARY_SLACK => period += 1,
            _ => break,
        }
    }
    period
}

/// The emulator side of one cell. Its clock started when the subscription was created (the
/// `subscription_create` invoice's `created`).
pub fn emulator_truth(cell: &Cell) -> Truth {
    let g = &cell.ground_truth;
    let clock_start = g
        .invoices
        .iter()
        .filter(|i| i.billing_reason.as_deref() == Some("subscription_create"))
        .map(|i| i.created)
        .min()
        .unwrap_or(0);
    let mut refs = References::default();
    Truth {
        customer_balance: g.customer_balance,
        case_credits: g
            .case_credits
            .iter()
            .map(|c| CaseCredit {
                reference: refs.of(&c.id),
                amount: c.amount,
                period: billing_period(c.created, clock_start),
            })
            .collect(),
        balance_transactions: g
            .balance_transactions
            .iter()
            .map(|t| BalanceTxn {
                reference: refs.of(&t.id),
                kind: t.kind.clone(),
                amount: t.amount,
            })
            .collect(),
        invoices: g
            .invoices
            .iter()
            .map(|i| Invoice {
                reference: refs.of(&i.id),
                billing_reason: i.billing_reason.clone().unwrap_or_default(),
                status: i.status.clone().unwrap_or_default(),
                total: i.total,
                starting_balance: i.starting_balance,
                amount_due: i.amount_due,
            })
            .collect(),
        credit_notes: g
            .credit_notes
            .iter()
            .map(|n| CreditNote {
                reference: refs.of(&n.id),
                amount: n.amount,
                status: n.status.clone(),
                incident: incident_label(n.incident.as_deref(), &cell.case.incident),
            })
            .collect(),
        compensation_by_others: g.compensation_by_others,
        incident_compensation: g.incident_compensation,
    }
}

fn field<'a>(v: &'a Value, name: &str, at: &str) -> Result<&'a Value, ComparisonError> {
    v.get(name)
        .ok_or_else(|| ComparisonError::Missing(format!("{at}.{name}")))
}

fn int(v: &Value, name: &str, at: &str) -> Result<i64, ComparisonError> {
    field(v, name, at)?
        .as_i64()
        .ok_or_else(|| ComparisonError::Missing(format!("{at}.{name} (an integer)")))
}

fn text(v: &Value, name: &str, at: &str) -> Result<String, ComparisonError> {
    field(v, name, at)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ComparisonError::Missing(format!("{at}.{name} (a string)")))
}

fn list<'a>(v: &'a Value, name: &str, at: &str) -> Result<&'a Vec<Value>, ComparisonError> {
    field(v, name, at)?
        .as_array()
        .ok_or_else(|| ComparisonError::Missing(format!("{at}.{name} (an array)")))
}

/// Real Stripe's side of one cell of the original file. That file does not record when each
/// test clock started; the original created every clock at the wall time of its run, which
/// lasted minutes, so the file's `generated` time (`YYYY-MM-DD HH:MM UTC`) stands for it.
pub fn stripe_truth(cell: &Value, at: &str, clock_start: i64) -> Result<Truth, ComparisonError> {
    let g = field(cell, "ground_truth", at)?;
    let gat = format!("{at}.ground_truth");
    let case_incident = text(field(cell, "case", at)?, "incident", &format!("{at}.case"))?;
    let mut refs = References::default();
    let mut case_credits = Vec::new();
    for (i, c) in list(g, "case_credits", &gat)?.iter().enumerate() {
        let cat = format!("{gat}.case_credits[{i}]");
        case_credits.push(CaseCredit {
            reference: refs.of(&text(c, "id", &cat)?),
            amount: int(c, "amount", &cat)?,
            period: billing_period(int(c, "created", &cat)?, clock_start),
        });
    }
    let mut balance_transactions = Vec::new();
    for (i, t) in list(g, "balance_transactions", &gat)?.iter().enumerate() {
        let tat = format!("{gat}.balance_transactions[{i}]");
        balance_transactions.push(BalanceTxn {
            reference: refs.of(&text(t, "id", &tat)?),
            kind: text(t, "type", &tat)?,
            amount: int(t, "amount", &tat)?,
        });
    }
    let mut invoices = Vec::new();
    for (i, v) in list(g, "invoices", &gat)?.iter().enumerate() {
        let iat = format!("{gat}.invoices[{i}]");
        invoices.push(Invoice {
            reference: refs.of(&text(v, "id", &iat)?),
            billing_reason: text(v, "billing_reason", &iat)?,
            status: text(v, "status", &iat)?,
            total: int(v, "total", &iat)?,
            starting_balance: int(v, "starting_balance", &iat)?,
            amount_due: int(v, "amount_due", &iat)?,
        });
    }
    let mut credit_notes = Vec::new();
    for (i, n) in list(g, "credit_notes", &gat)?.iter().enumerate() {
        let nat = format!("{gat}.credit_notes[{i}]");
        credit_notes.push(CreditNote {
            reference: refs.of(&text(n, "id", &nat)?),
            amount: int(n, "amount", &nat)?,
            status: text(n, "status", &nat)?,
            incident: incident_label(n.get("incident").and_then(Value::as_str), &case_incident),
        });
    }
    Ok(Truth {
        customer_balance: int(g, "customer_balance", &gat)?,
        case_credits,
        balance_transactions,
        invoices,
        credit_notes,
        compensation_by_others: int(g, "compensation_by_others", &gat)?,
        incident_compensation: int(g, "incident_compensation", &gat)?,
    })
}

/// Unix seconds of the original file's `generated` (`YYYY-MM-DD HH:MM UTC`).
pub fn original_generated(original: &Value) -> Result<i64, ComparisonError> {
    let raw = text(original, "generated", "file")?;
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::PrimitiveDateTime::parse(&raw, format)
        .map(|t| t.assume_utc().unix_timestamp())
        .map_err(|_| ComparisonError::Missing(format!("file.generated in a known form ({raw:?})")))
}

/// The differences between two truths, one sentence each.
pub fn differences(emulator: &Truth, stripe: &Truth) -> Vec<String> {
    let mut out = Vec::new();
    let mut scalar = |what: &str, e: i64, s: i64| {
        if e != s {
            out.push(format!("{what}: emulator {e}, Stripe {s}"));
        }
    };
    scalar(
        "customer balance",
        emulator.customer_balance,
        stripe.customer_balance,
    );
    scalar(
        "compensation by others",
        emulator.compensation_by_others,
        stripe.compensation_by_others,
    );
    scalar(
        "incident compensation",
        emulator.incident_compensation,
        stripe.incident_compensation,
    );
    fn lists<T: PartialEq + std::fmt::Debug>(out: &mut Vec<String>, what: &str, e: &[T], s: &[T]) {
        if e.len() != s.len() {
            out.push(format!(
                "{what}: emulator has {}, Stripe {}",
                e.len(),
                s.len()
            ));
        }
        for (i, (a, b)) in e.iter().zip(s).enumerate() {
            if a != b {
                out.push(format!("{what} #{}: emulator {a:?}, Stripe {b:?}", i + 1));
            }
        }
    }
    lists(
        &mut out,
        "case credits",
        &emulator.case_credits,
        &stripe.case_credits,
    );
    lists(
        &mut out,
        "balance transactions",
        &emulator.balance_transactions,
        &stripe.balance_transactions,
    );
    lists(&mut out, "invoices", &emulator.invoices, &stripe.invoices);
    lists(
        &mut out,
        "credit notes",
        &emulator.credit_notes,
        &stripe.credit_notes,
    );
    out
}

/// Compare every cell of an emulator run (repeat 0) with the original file's cells, matched by
/// crash point, outage and column.
pub fn compare(emulator: &ResultsFile, original: &Value) -> Result<Comparison, ComparisonError> {
    let clock_start = original_generated(original)?;
    let cells = list(original, "cells", "file")?;
    let mut out = Vec::new();
    let mut matched = vec![false; emulator.cells.len()];
    for (i, cell) in cells.iter().enumerate() {
        let at = format!("cells[{i}]");
        let crash = text(cell, "crash", &at)?;
        let outage = text(cell, "outage", &at)?;
        let column = text(cell, "system", &at)?;
        let stripe = stripe_truth(cell, &at, clock_start)?;
        let ours = emulator.cells.iter().position(|c| {
            c.repeat == 0 && c.crash == crash && c.outage == outage && c.column == column
        });
        let emulator_side = ours.map(|k| {
            matched[k] = true;
            emulator_truth(&emulator.cells[k])
        });
        let differences = match &emulator_side {
            Some(e) => differences(e, &stripe),
            None => vec!["the emulator run has no such cell".into()],
        };
        out.push(CellComparison {
            crash,
            outage,
            column,
            emulator: emulator_side,
            stripe: Some(stripe),
            differences,
        });
    }
    for (k, cell) in emulator.cells.iter().enumerate() {
        if !matched[k] && cell.repeat == 0 {
            out.push(CellComparison {
                crash: cell.crash.clone(),
                outage: cell.outage.clone(),
                column: cell.column.clone(),
                emulator: Some(emulator_truth(cell)),
                stripe: None,
                differences: vec!["the original run on Stripe has no such cell".into()],
            });
        }
    }
    Ok(Comparison { cells: out })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn original(credit_created: i64, starting_balance: i64) -> Value {
        json!({
            "scenario": "billing_credit",
            "generated": "2026-09-13 22:40 UTC",
            "cells": [{
                "system": "no_check", "crash": "after_send", "outage": "renewal",
                "case": {"incident": "INC-aaaaaa"},
                "ground_truth": {
                    "case_credits": [{"id": "cbtxn_X", "amount": -1000, "created": credit_created}],
                    "credit_notes": [{"id": "cn_Z", "amount": 1000, "status": "issued", "incident": "INC-bbbbbb"}],
                    "compensation_by_others": 1000, "incident_compensation": 0,
                    "customer_balance": 0,
                    "balance_transactions": [
                        {"id": "cbtxn_Y", "type": "applied_to_invoice", "amount": 1000},
                        {"id": "cbtxn_X", "type": "adjustment", "amount": -1000}
                    ],
                    "invoices": [{"id": "in_1", "billing_reason": "subscription_cycle", "status": "paid",
                                  "total": 3000, "starting_balance": starting_balance, "amount_due": 2000}]
                }
            }]
        })
    }

    #[test]
    fn ids_become_references_by_first_appearance_and_times_billing_periods() {
        let start = original_generated(&original(0, 0)).unwrap();
        assert_eq!(start, 1_789_339_200);
        let t = stripe_truth(&original(start - 50, -1000)["cells"][0], "c", start).unwrap();
        assert_eq!(t.case_credits[0].reference, "cbtxn 1");
        assert_eq!(t.case_credits[0].period, 1);
        let kinds: Vec<(&str, &str)> = t
            .balance_transactions
            .iter()
            .map(|b| (b.reference.as_str(), b.kind.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [("cbtxn 2", "applied_to_invoice"), ("cbtxn 1", "adjustment")]
        );
        assert_eq!(t.credit_notes[0].incident, "another incident");
        let later = stripe_truth(
            &original(start + 30 * DAY + 3 * HOUR, -1000)["cells"][0],
            "c",
            start,
        )
        .unwrap();
        assert_eq!(later.case_credits[0].period, 2);
    }

    const HOUR: i64 = 3_600;
    const DAY: i64 = 86_400;

    fn at(rfc3339: &str) -> i64 {
        time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
            .unwrap()
            .unix_timestamp()
    }

    #[test]
    fn a_period_is_a_calendar_month_whatever_its_length() {
        // (clock start, the first renewal): 28, 29, 30 and 31 days, a year end, a clamped day.
        let cases = [
            ("2027-02-10T12:00:00Z", "2027-03-10T12:00:00Z"),
            ("2028-02-10T12:00:00Z", "2028-03-10T12:00:00Z"),
            ("2026-09-13T22:40:00Z", "2026-10-13T22:40:00Z"),
            ("2026-12-20T08:00:00Z", "2027-01-20T08:00:00Z"),
            ("2027-01-31T00:00:00Z", "2027-02-28T00:00:00Z"),
        ];
        for (start, renewal) in cases {
            let (s, r) = (at(start), at(renewal));
            assert_eq!(billing_period(s, s), 1, "{start}");
            assert_eq!(billing_period(s + 20 * DAY, s), 1, "{start}");
            assert_eq!(billing_period(r - 2 * HOUR, s), 1, "{start}");
            assert_eq!(billing_period(r + 3 * HOUR, s), 2, "{start}");
        }
        // A day count would call these different; the periods are the same.
        let (sep, dec) = (at("2026-09-13T00:00:00Z"), at("2026-12-01T00:00:00Z"));
        assert_eq!(
            billing_period(sep + 30 * DAY + 3 * HOUR, sep),
            billing_period(dec + 31 * DAY + 3 * HOUR, dec)
        );
    }

    #[test]
    fn a_different_amount_or_day_is_named() {
        let start = 1_789_339_200;
        let a = stripe_truth(&original(start, -1000)["cells"][0], "c", start).unwrap();
        let b = stripe_truth(&original(start + 30 * DAY, 0)["cells"][0], "c", start).unwrap();
        let d = differences(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].starts_with("case credits #1") && d[1].starts_with("invoices #1"),
            "{d:?}"
        );
        assert!(differences(&a, &a).is_empty());
    }

    #[test]
    fn a_missing_field_is_an_error_naming_it() {
        let mut o = original(0, 0);
        o["cells"][0]["ground_truth"]
            .as_object_mut()
            .unwrap()
            .remove("customer_balance");
        let e = stripe_truth(&o["cells"][0], "cells[0]", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the original results file has no usable cells[0].ground_truth.customer_balance"
        );
    }
}
