//! The outages the runner runs while the worker is dead (DESIGN §4.5).

use super::case::{int_field, new_incident, str_field};
use super::reads::{invoice, subscription};
use super::{
    CaseFile, Outage, ScenarioError, RENEWAL_OVERSHOOT_SECS, SLA_CREDIT_CENTS, SLA_SOURCE,
};
use serde_json::Value;
use std::time::{Duration, Instant};
use stripe::{Client, Params};
use verify::results::OutageRecord;

/// First pause between test-clock reads; doubled after every read that is not `ready`.
const CLOCK_POLL_FIRST: Duration = Duration::from_millis(10);
/// Longest pause between test-clock reads.
const CLOCK_POLL_MAX: Duration = Duration::from_secs(2);
/// How many times the clock is read before giving up (about five minutes at the longest pause).
const CLOCK_POLL_LIMIT: u32 = 160;

/// Runs `outage` against the case's customer and clock and says what it did.
///
/// * `renewal`: advance the case's test clock to the subscription item's `current_period_end`
///   + 3 h, wait until the clock is `ready`, and record the `subscription_cycle` invoice;
/// * `billing_credit`: the renewal, then billing's SLA automation credits the renewal invoice
///   $10 (`credit_amount`) with `metadata[incident]` = the case's incident;
/// * `proration`: downgrade $30 → $20 with `create_prorations`, then the renewal;
/// * `unrelated_credit`: as `billing_credit` but for a fresh incident id drawn from `rng`;
///
/// and then, whatever the outage, [`advance_one_second`] (the recorded `clock_time` is after it).
pub fn run_outage(
    client: &Client,
    case: &CaseFile,
    outage: Outage,
    rng: &mut impl rand::Rng,
) -> Result<OutageRecord, ScenarioError> {
    run_outage_timed(client, case, outage, rng).map(|(record, _)| record)
}

/// A premise fact the world changed, and when (the request that changed it, from just before it
/// was sent to just after its answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FactChange {
    /// `incident_compensation` (or `approval`, `subscription_status`).
    pub fact: &'static str,
    /// Just before the change was asked for.
    pub from: Instant,
    /// Just after it was answered.
    pub until: Instant,
}

/// [`run_outage`], also saying which premise facts it changed and when: billing's credit note
/// for the case's own incident changes `incident_compensation`; a renewal, a proration and a
/// credit for another incident change no premise.
pub fn run_outage_timed(
    client: &Client,
    case: &CaseFile,
    outage: Outage,
    rng: &mut impl rand::Rng,
) -> Result<(OutageRecord, Vec<FactChange>), ScenarioError> {
    let mut changes = Vec::new();
    let mut record = OutageRecord {
        renewal_invoice: None,
        credit_note: None,
        credit_note_incident: None,
        downgraded_to_price: None,
        clock_time: None,
    };
    if outage == Outage::Proration {
        downgrade(client, case)?;
        record.downgraded_to_price = Some(case.prices.small.clone());
    }
    let (invoice, clock_time) = advance_through_renewal(client, case)?;
    record.renewal_invoice = Some(invoice.clone());
    record.clock_time = Some(clock_time);
    let incident = match outage {
        Outage::BillingCredit => Some(case.incident.clone()),
        Outage::UnrelatedCredit => {
            // Another incident, never the case's own (a 1 in 16^6 draw, but stated, not hoped).
            let mut other = new_incident(rng);
            while other == case.incident {
                other = new_incident(rng);
            }
            Some(other)
        }
        Outage::Renewal | Outage::Proration => None,
    };
    if let Some(incident) = incident {
        let from = Instant::now();
        let note = sla_credit_note(client, case, &invoice, &incident)?;
        if incident == case.incident {
            changes.push(FactChange {
                fact: "incident_compensation",
                from,
                until: Instant::now(),
            });
        }
        record.credit_note = Some(note);
        record.credit_note_incident = Some(incident);
    }
    record.clock_time = Some(advance_one_second(client, case, clock_time)?);
    Ok((record, changes))
}

/// Advances the case's test clock from `from` to `from + 1` and waits until it is `ready`;
/// returns the new frozen time.
///
/// Run after the outage, before the restart: whatever the restart creates is then at least one
/// test-clock second after whatever the outage created, so "compensation before the case's first
/// credit" is an order Stripe's `created` shows, never the want rule's same-second tie-break.
pub fn advance_one_second(
    client: &Client,
    case: &CaseFile,
    from: i64,
) -> Result<i64, ScenarioError> {
    let target = from + 1;
    client
        .post(
            &format!("/v1/test_helpers/test_clocks/{}/advance", case.clock),
            &Params::new().set("frozen_time", target),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "advance test clock {} one second to {target}",
            case.clock
        )))?;
    wait_until_ready(client, &case.clock)
}

fn first_item(sub: &Value, case: &CaseFile) -> Result<Value, ScenarioError> {
    sub.get("items")
        .and_then(|i| i.get("data"))
        .and_then(|d| d.as_array())
        .and_then(|d| d.first())
        .cloned()
        .ok_or_else(|| ScenarioError::Malformed {
            what: format!("subscription {}", case.subscription),
            detail: "no `items.data[0]`".into(),
        })
}

/// `POST /v1/subscriptions/{id}`: the one item to the $20 price with prorations.
fn downgrade(client: &Client, case: &CaseFile) -> Result<(), ScenarioError> {
    let sub = subscription(client, case)?;
    let item = first_item(&sub, case)?;
    let item_id = str_field(&item, "id", &format!("the item of {}", case.subscription))?;
    client
        .post(
            &format!("/v1/subscriptions/{}", case.subscription),
            &Params::new()
                .set("items[0][id]", &item_id)
                .set("items[0][price]", &case.prices.small)
                .set("proration_behavior", "create_prorations"),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "downgrade {} to {}",
            case.subscription, case.prices.small
        )))?;
    Ok(())
}

/// Advances the clock past the period end, waits for `ready`, and returns the renewal invoice
/// and the clock's frozen time.
fn advance_through_renewal(
    client: &Client,
    case: &CaseFile,
) -> Result<(String, i64), ScenarioError> {
    let sub = subscription(client, case)?;
    let item = first_item(&sub, case)?;
    let period_end = int_field(
        &item,
        "current_period_end",
        &format!("the item of {}", case.subscription),
    )?;
    let target = period_end + RENEWAL_OVERSHOOT_SECS;
    client
        .post(
            &format!("/v1/test_helpers/test_clocks/{}/advance", case.clock),
            &Params::new().set("frozen_time", target),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "advance test clock {} to {target}",
            case.clock
        )))?;
    let clock_time = wait_until_ready(client, &case.clock)?;
    let invoices = client
        .list_all(
            "/v1/invoices",
            &Params::new().set("customer", &case.customer),
        )
        .map_err(ScenarioError::stripe(format!(
            "list the invoices of {}",
            case.customer
        )))?;
    for raw in &invoices {
        let inv = invoice(raw)?;
        if inv.billing_reason.as_deref() == Some("subscription_cycle") {
            return Ok((inv.id, clock_time));
        }
    }
    Err(ScenarioError::Malformed {
        what: format!(
            "the invoices of {} after advancing clock {} to {target}",
            case.customer, case.clock
        ),
        detail: format!(
            "no subscription_cycle invoice among {} invoices",
            invoices.len()
        ),
    })
}

/// The case's test-clock time once the clock is `ready` (a world change made now is recorded at
/// this instant).
pub fn clock_time(client: &Client, case: &CaseFile) -> Result<i64, ScenarioError> {
    wait_until_ready(client, &case.clock)
}

/// Reads the clock until `status == "ready"`, pausing 10 ms, 20 ms, ... up to 2 s between reads.
fn wait_until_ready(client: &Client, clock: &str) -> Result<i64, ScenarioError> {
    let started = Instant::now();
    let mut pause = CLOCK_POLL_FIRST;
    let mut status = String::new();
    for poll in 1..=CLOCK_POLL_LIMIT {
        let answer = client
            .get(
                &format!("/v1/test_helpers/test_clocks/{clock}"),
                &Params::new(),
            )
            .map_err(ScenarioError::stripe(format!("read test clock {clock}")))?;
        status = str_field(&answer.body, "status", &format!("test clock {clock}"))?;
        match status.as_str() {
            "ready" => {
                return int_field(&answer.body, "frozen_time", &format!("test clock {clock}"))
            }
            "internal_failure" => {
                return Err(ScenarioError::ClockNotReady {
                    clock: clock.to_owned(),
                    status,
                    polls: poll,
                    waited_ms: started.elapsed().as_millis() as u64,
                })
            }
            _ => {}
        }
        if poll < CLOCK_POLL_LIMIT {
            std::thread::sleep(pause);
            pause = (pause * 2).min(CLOCK_POLL_MAX);
        }
    }
    Err(ScenarioError::ClockNotReady {
        clock: clock.to_owned(),
        status,
        polls: CLOCK_POLL_LIMIT,
        waited_ms: started.elapsed().as_millis() as u64,
    })
}

/// `POST /v1/credit_notes`: billing's SLA automation credits the renewal invoice $10 to the
/// customer balance, tagged with `incident`.
fn sla_credit_note(
    client: &Client,
    case: &CaseFile,
    invoice: &str,
    incident: &str,
) -> Result<String, ScenarioError> {
    let note = client
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", invoice)
                .set("amount", SLA_CREDIT_CENTS)
                .set("credit_amount", SLA_CREDIT_CENTS)
                .set("memo", format!("SLA credit for {incident}"))
                .set("metadata[incident]", incident)
                .set("metadata[source]", SLA_SOURCE),
            None,
        )
        .map_err(ScenarioError::stripe(format!(
            "issue the SLA credit note for {incident} on {invoice} (customer {} of {})",
            case.customer, case.case_id
        )))?;
    str_field(
        &note.body,
        "id",
        &format!("the SLA credit note on {invoice}"),
    )
}
