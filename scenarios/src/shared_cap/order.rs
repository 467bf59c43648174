//! Opening an order: the $100 payment and its two tickets, and each ticket's decision.

use crate::billing_credit::case::{random_hex, str_field};
use crate::billing_credit::{read_json, write_json_durably, ScenarioError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use stripe::{Client, Params};
use verify::results::Approval;
use verify::shared_cap::{CAP_CENTS, ORDER_KEY, PAYMENT_CENTS, REFUND_CENTS};

/// One support ticket: a customer asked for a goodwill refund, and support approved one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ticket {
    /// The worker's name for it: `a` or `b`.
    pub name: String,
    /// `TCK-<8 hex>`: the `metadata[ticket]` of its refund.
    pub id: String,
    /// The approval: one refund of at most $20, `approval-<ticket id>`.
    pub approval: Approval,
}

/// The order both workers refund against, saved as `order.json` in the cell directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderFile {
    /// `order-<10 hex>`: the budget's id for the gate and `metadata[order]` of every refund.
    pub order_id: String,
    /// The payment (`pi_...`).
    pub payment_intent: String,
    /// Its charge (`ch_...`).
    pub charge: String,
    /// The payment, cents ($100).
    pub amount: i64,
    /// The policy cap on the order's refunds, cents ($30).
    pub cap_cents: i64,
    /// The two tickets, `a` then `b`.
    pub tickets: Vec<Ticket>,
}

impl OrderFile {
    /// Reads `order.json` from a cell directory.
    pub fn load(cell_dir: &Path) -> Result<OrderFile, ScenarioError> {
        read_json(&cell_dir.join(super::ORDER_FILE))
    }

    /// Writes `order.json` into a cell directory (fsynced, renamed into place).
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(super::ORDER_FILE), self)
    }

    /// The ticket named `name` (`a` or `b`).
    pub fn ticket(&self, name: &str) -> Result<&Ticket, ScenarioError> {
        self.tickets
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ScenarioError::UnknownName {
                what: "ticket",
                got: name.to_owned(),
                expected: self
                    .tickets
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// Creates the order: a $100 PaymentIntent confirmed with Stripe's test card `pm_card_visa`
/// (redirects not allowed, so no return URL is needed), and two tickets approved for one $20 refund
/// each. Ids derive from `rng`.
pub fn open_order(client: &Client, rng: &mut impl rand::Rng) -> Result<OrderFile, ScenarioError> {
    let order_id = format!("order-{}", random_hex(rng, 10));
    let intent = client
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", PAYMENT_CENTS)
                .set("currency", "usd")
                .set("payment_method", "pm_card_visa")
                .set("automatic_payment_methods[enabled]", "true")
                .set("automatic_payment_methods[allow_redirects]", "never")
                .set("confirm", "true")
                .set("description", format!("interlock-sandbox {order_id}"))
                .set(&format!("metadata[{ORDER_KEY}]"), &order_id)
                .set("metadata[sandbox]", "interlock-sandbox"),
            Some(&format!("open-{order_id}")),
        )
        .map_err(ScenarioError::stripe(format!("pay the order {order_id}")))?;
    let what = format!("the payment of {order_id}");
    let payment_intent = str_field(&intent.body, "id", &what)?;
    let status = str_field(&intent.body, "status", &what)?;
    if status != "succeeded" {
        return Err(ScenarioError::Malformed {
            what,
            detail: format!("status {status:?}, expected \"succeeded\""),
        });
    }
    let charge = str_field(&intent.body, "latest_charge", &what)?;
    let tickets = ["a", "b"]
        .into_iter()
        .map(|name| {
            let id = format!("TCK-{}", random_hex(rng, 8));
            Ticket {
                name: name.to_owned(),
                approval: Approval {
                    id: format!("approval-{id}"),
                    approver: super::APPROVER.to_owned(),
                    max_cents: REFUND_CENTS,
                    revoked: None,
                },
                id,
            }
        })
        .collect();
    Ok(OrderFile {
        order_id,
        payment_intent,
        charge,
        amount: PAYMENT_CENTS,
        cap_cents: CAP_CENTS,
        tickets,
    })
}

/// What a ticket's bot decided: the amount and a reason, saved before any send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Cents to refund.
    pub amount: i64,
    /// The note sent with the refund.
    pub reason: String,
    /// Who decided: `policy` (this scenario has no model decider).
    pub decider: String,
}

impl Decision {
    /// The deterministic policy: refund what the ticket's approval allows.
    pub fn policy(ticket: &Ticket) -> Decision {
        Decision {
            amount: ticket.approval.max_cents,
            reason: format!("goodwill refund for {}", ticket.id),
            decider: "policy".to_owned(),
        }
    }

    fn file(ticket: &str) -> String {
        format!("decision-{ticket}.json")
    }

    /// Saves the decision of ticket `ticket` durably in the cell directory.
    pub fn save(&self, cell_dir: &Path, ticket: &str) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(Decision::file(ticket)), self)
    }

    /// Reads the saved decision of ticket `ticket`.
    pub fn load(cell_dir: &Path, ticket: &str) -> Result<Decision, ScenarioError> {
        read_json(&cell_dir.join(Decision::file(ticket)))
    }
}
