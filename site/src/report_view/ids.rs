//! The Ids page's view: every id of a cell, in Stripe and in the run, and how its worker ended.

use super::{anchor, label, receipt_href};
use crate::verification::{ReceiptCheck, Verified};
use verify::results::Cell;

/// Every id of one cell.
#[derive(Debug, Clone)]
pub struct IdsView {
    /// HTML id.
    pub anchor: String,
    /// Cell label.
    pub label: String,
    /// (name, value) pairs: clock, customer, subscription, invoices, ...
    pub stripe: Vec<(String, String)>,
    /// What the outage did, as (name, value) pairs.
    pub outage: Vec<(String, String)>,
    /// Effect id (interlock).
    pub effect_id: Option<String>,
    /// `signal 9 (SIGKILL)`, `exit code N`, or `unknown`.
    pub worker_exit: String,
    /// Receipt summary re-derived at build time.
    pub receipt: Option<ReceiptCheck>,
    /// Link to the receipt page, relative to the scenario directory.
    pub receipt_href: Option<String>,
    /// Journal kinds, space-separated.
    pub journal: String,
    /// HARNESS_ERROR detail.
    pub harness_error: Option<String>,
    /// hand_check: number of lines in its plain log (published in full in the results JSON).
    pub hand_check_log: Option<usize>,
}

/// `none` for an empty list, else its items `, `-joined.
fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// What the outage did to a cell, as (name, value) pairs.
fn outage_ids(c: &Cell) -> Vec<(String, String)> {
    let o = &c.outage_record;
    let mut outage = Vec::new();
    let mut push = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            outage.push((k.to_owned(), v.clone()));
        }
    };
    push("renewal_invoice", &o.renewal_invoice);
    push("credit_note", &o.credit_note);
    push("credit_note_incident", &o.credit_note_incident);
    push("downgraded_to_price", &o.downgraded_to_price);
    if let Some(t) = o.clock_time {
        outage.push(("clock_time".into(), t.to_string()));
    }
    outage
}

/// How a cell's worker ended, in words.
fn worker_exit(c: &Cell) -> String {
    match (c.worker_exit_signal, c.worker_exit_code) {
        (Some(9), _) => "signal 9 (SIGKILL)".into(),
        (Some(sig), _) => format!("signal {sig}"),
        (None, Some(code)) => format!("exit code {code}"),
        (None, None) => "unknown".into(),
    }
}

/// Every id of one cell, for the Ids page.
pub(super) fn ids_view(verified: &Verified, c: &Cell, repeats: u32) -> IdsView {
    let s = &c.stripe_ids;
    IdsView {
        anchor: anchor(c),
        label: label(c, repeats),
        stripe: vec![
            ("case".into(), c.case.case_id.clone()),
            ("incident".into(), c.case.incident.clone()),
            ("clock".into(), s.clock.clone()),
            ("customer".into(), s.customer.clone()),
            ("subscription".into(), s.subscription.clone()),
            ("invoices".into(), list(&s.invoices)),
            ("credit notes".into(), list(&s.credit_notes)),
            ("case credits".into(), list(&s.case_credits)),
        ],
        outage: outage_ids(c),
        effect_id: c.effect_id.clone(),
        worker_exit: worker_exit(c),
        receipt: c
            .receipt
            .as_ref()
            .and_then(|b| verified.receipts().get(&b.effect_id).cloned()),
        receipt_href: receipt_href(c),
        journal: if c.journal_kinds.is_empty() {
            "none".into()
        } else {
            c.journal_kinds.join(" ")
        },
        harness_error: c.harness_error.clone(),
        hand_check_log: c.hand_check_log.as_ref().map(Vec::len),
    }
}
