//! The `interlock` column: the gate over [`RefundTarget`], each ticket's approval as its lease,
//! and one budget for the order (its id, the cap from `order.json`), in one journal both workers
//! share (`journal.jsonl` in the cell directory, or the run's PostgreSQL journal).
//!
//! Decide: submit the ticket's proposal; the crash hook fires inside the target's send (after
//! DISPATCHED is durable, with its budget reservation). Restart: recover until resolved, then
//! write `receipt-<ticket>.json`.

use super::order::{Decision, OrderFile, Ticket};
use super::refund::{RefundEffect, RefundTarget};
use super::{AGENT, JOURNAL_FILE, JOURNAL_LOCATION_FILE};
use crate::billing_credit::interlock::{describe, journal_location, observe_steps, settle};
use crate::billing_credit::{Crash, RestartReport, ScenarioError, ScenarioSettings};
use ::interlock::{
    effect_id, Budget, BudgetError, BudgetStore, Gate, GateConfig, LeaseCheck, LeaseError,
    LeaseStore, Proposal,
};
use serde_json::{json, Value};
use std::path::Path;

/// The tickets' approvals as the gate's lease store: a lease is live when it names the ticket's
/// approval, unrevoked, and the refund is within it.
#[derive(Debug, Clone)]
pub(crate) struct TicketApprovals {
    order: OrderFile,
}

impl LeaseStore for TicketApprovals {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let ticket = effect.get("ticket").and_then(Value::as_str);
        let approval = self
            .order
            .tickets
            .iter()
            .find(|t| Some(t.id.as_str()) == ticket)
            .map(|t| &t.approval);
        let amount = effect.get("amount").and_then(Value::as_i64);
        let live = approval.is_some_and(|a| {
            lease.as_str() == Some(a.id.as_str())
                && a.revoked.is_none()
                && amount.is_some_and(|x| x > 0 && x <= a.max_cents)
        });
        let grant = approval
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| LeaseError {
                reason: format!("cannot render the approval: {e}"),
            })?;
        Ok(LeaseCheck { live, grant })
    }
}

/// The order's cap as the gate's budget store: one budget, named by the order id.
#[derive(Debug, Clone)]
pub(crate) struct OrderCap {
    order: OrderFile,
}

impl BudgetStore for OrderCap {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        Ok((id == self.order.order_id).then_some(self.order.cap_cents))
    }
}

/// The ticket's proposal: request id `goodwill-refund:<ticket id>`, the ticket's approval as
/// lease, the payment as premise, and the order's budget with the decided amount.
pub(crate) fn proposal(order: &OrderFile, ticket: &Ticket, decision: &Decision) -> Proposal {
    let effect = RefundEffect {
        payment_intent: order.payment_intent.clone(),
        ticket: ticket.id.clone(),
        amount: decision.amount,
    };
    Proposal {
        agent: AGENT.to_owned(),
        lease: json!(ticket.approval.id),
        premises: json!({ "payment_intent": order.payment_intent }),
        effect: json!(effect),
        request_id: Some(format!("goodwill-refund:{}", ticket.id)),
        budget: Some(Budget {
            id: order.order_id.clone(),
            amount: decision.amount,
        }),
    }
}

fn open_gate(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<Gate<RefundTarget, TicketApprovals>, ScenarioError> {
    let steps = crash.clone();
    let target = RefundTarget::new(client.clone(), order.clone(), settings.max_in_flight, crash);
    let config = GateConfig {
        claim_ttl: settings.claim_ttl,
        ..GateConfig::default()
    };
    let (journal, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let approvals = TicketApprovals {
        order: order.clone(),
    };
    let mut gate = Gate::open_at(&journal, target, approvals, gate_key.clone(), config)
        .map_err(ScenarioError::gate(format!("open the journal {shown}")))?;
    gate.set_budgets(Box::new(OrderCap {
        order: order.clone(),
    }));
    observe_steps(&mut gate, steps);
    Ok(gate)
}

/// Decide phase: submit through the gate and return its status string.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, ScenarioError> {
    let gate = open_gate(client, cell_dir, order, crash, gate_key, settings)?;
    let submitted =
        gate.submit(&proposal(order, ticket, decision))
            .map_err(ScenarioError::gate(format!(
                "submit the refund of {}",
                ticket.id
            )))?;
    Ok(submitted.status.as_str().to_owned())
}

/// Restart phase: recover the ticket's effect until resolved; write `receipt-<ticket>.json`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn restart(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, ScenarioError> {
    let gate = open_gate(client, cell_dir, order, crash, gate_key, settings)?;
    let p = proposal(order, ticket, decision);
    let eid = effect_id(&p);
    let (_, shown) = journal_location(cell_dir, JOURNAL_LOCATION_FILE, JOURNAL_FILE);
    let receipt = cell_dir.join(receipt_file(&ticket.name));
    let gate_err = |what: &str| ScenarioError::gate(format!("{what} {eid}"));
    let open = gate
        .open_effects()
        .map_err(gate_err("list the open effects for"))?
        .contains(&eid);
    let settled = gate.status(&eid).map_err(gate_err("read the status of"))?;
    if !open && settled.is_none() {
        // Killed before its dispatch was durable: nothing of it can have been sent, and the
        // restarted bot submits its proposal again (the same effect id; the gate goes on from
        // what its journal holds).
        let submitted = gate.submit(&p).map_err(gate_err("submit again"))?;
        let status = submitted.status.as_str().to_owned();
        return describe(
            &gate,
            eid,
            status,
            &receipt,
            gate_key,
            json!({ "submitted_again": true }),
            std::time::Duration::ZERO,
        );
    }
    settle(&gate, eid, &shown, &receipt, gate_key)
}

/// The receipt bundle's file name for ticket `name`.
pub fn receipt_file(name: &str) -> String {
    format!("receipt-{name}.json")
}

/// The report on the ticket's effect after a first phase that ended by itself with `status`:
/// the journal as it stands and the receipt, written as `receipt-<ticket>.json`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finished(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    status: String,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<RestartReport, ScenarioError> {
    let gate = open_gate(client, cell_dir, order, None, gate_key, settings)?;
    let eid = effect_id(&proposal(order, ticket, decision));
    let receipt = cell_dir.join(receipt_file(&ticket.name));
    describe(
        &gate,
        eid,
        status,
        &receipt,
        gate_key,
        json!({}),
        std::time::Duration::ZERO,
    )
}
