//! The one effect (the refund POST), the gate's view of it ([`RefundTarget`]) and the ground
//! truth (every refund of the order's payment).

use super::order::OrderFile;
use crate::billing_credit::case::{int_field, str_field};
use crate::billing_credit::reads::metadata;
use crate::billing_credit::target::{scenario_to_target_error, to_target_error};
use crate::billing_credit::{fire, Crash, CrashPoint, ScenarioError, ANCHOR_KEY, DEDUP_WINDOW};
use ::interlock::{Capabilities, Target, TargetError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;
use stripe::{Client, Params};
use verify::shared_cap::{OrderTruth, RefundTruth, ORDER_KEY, TICKET_KEY};

/// A refund Stripe answered for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundPosted {
    /// `re_...`.
    pub id: String,
    /// Cents refunded.
    pub amount: i64,
    /// Stripe answered `Idempotent-Replayed: true`: nothing new was applied.
    pub replayed: bool,
}

/// The metadata key the gate's lookup searches by.
pub const EFFECT_KEY: &str = "interlock_effect_id";

/// `POST /v1/refunds` of `cents` on the order's payment with `metadata[order]`,
/// `metadata[ticket]` and, from the gate, `metadata[interlock_effect_id]` and the anchor
/// `metadata[interlock_dispatch]`, under `Idempotency-Key: key`.
///
/// The crash hook fires right before the POST ([`CrashPoint::BeforeSend`]) and right after its
/// answer was parsed ([`CrashPoint::AfterSend`]).
pub fn post_refund(
    client: &Client,
    order: &OrderFile,
    ticket_id: &str,
    cents: i64,
    key: &str,
    gate: Option<(&str, &str)>,
    crash: Option<&Crash>,
) -> Result<RefundPosted, ScenarioError> {
    let mut params = Params::new()
        .set("payment_intent", &order.payment_intent)
        .set("amount", cents)
        .set("reason", "requested_by_customer")
        .set(&format!("metadata[{ORDER_KEY}]"), &order.order_id)
        .set(&format!("metadata[{TICKET_KEY}]"), ticket_id);
    if let Some((effect_id, dispatch)) = gate {
        params = params
            .set(&format!("metadata[{EFFECT_KEY}]"), effect_id)
            .set(&format!("metadata[{ANCHOR_KEY}]"), dispatch);
    }
    fire(crash, CrashPoint::BeforeSend);
    let answer = client
        .post("/v1/refunds", &params, Some(key))
        .map_err(ScenarioError::stripe(format!(
            "refund {cents} cents of {} for {ticket_id} (key {key})",
            order.payment_intent
        )))?;
    let id = str_field(&answer.body, "id", "the refund")?;
    let amount = int_field(&answer.body, "amount", &format!("refund {id}"))?;
    let posted = RefundPosted {
        id,
        amount,
        replayed: answer.replayed,
    };
    fire(crash, CrashPoint::AfterSend);
    Ok(posted)
}

/// Every refund of the order's payment (all list pages), newest first, whatever its tags.
pub fn refunds(client: &Client, order: &OrderFile) -> Result<Vec<RefundTruth>, ScenarioError> {
    let raw = client
        .list_all(
            "/v1/refunds",
            &Params::new().set("payment_intent", &order.payment_intent),
        )
        .map_err(ScenarioError::stripe(format!(
            "list the refunds of {}",
            order.payment_intent
        )))?;
    raw.iter()
        .map(|r| {
            let id = str_field(r, "id", "a refund")?;
            let what = format!("refund {id}");
            Ok(RefundTruth {
                amount: int_field(r, "amount", &what)?,
                status: str_field(r, "status", &what)?,
                ticket: metadata(r, TICKET_KEY),
                effect_id: metadata(r, EFFECT_KEY),
                created: int_field(r, "created", &what)?,
                id,
            })
        })
        .collect()
}

/// What Stripe holds for the order: its charge and every refund.
pub fn ground_truth(client: &Client, order: &OrderFile) -> Result<OrderTruth, ScenarioError> {
    let refunds = refunds(client, order)?;
    let charge = client
        .get(&format!("/v1/charges/{}", order.charge), &Params::new())
        .map_err(ScenarioError::stripe(format!(
            "read the charge {}",
            order.charge
        )))?;
    let what = format!("charge {}", order.charge);
    Ok(OrderTruth {
        payment_intent: order.payment_intent.clone(),
        charge: order.charge.clone(),
        charge_amount: int_field(&charge.body, "amount", &what)?,
        amount_refunded: int_field(&charge.body, "amount_refunded", &what)?,
        refunds,
    })
}

/// The effect payload the interlock column proposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RefundEffect {
    pub payment_intent: String,
    pub ticket: String,
    pub amount: i64,
}

/// The refund target for the gate: tier 1 (Stripe dedupes on the Idempotency-Key, which is the
/// effect id), queryable (the refund carries `metadata[interlock_effect_id]`), 24 h window.
/// Premises: none beyond the payment itself — the cap is the budget's business, not a premise.
pub struct RefundTarget {
    client: Client,
    order: OrderFile,
    max_in_flight: Duration,
    crash: Option<Crash>,
}

impl std::fmt::Debug for RefundTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefundTarget")
            .field("order", &self.order.order_id)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

impl RefundTarget {
    /// A target for `order`'s refunds; `crash` fires inside the send (after DISPATCHED).
    pub fn new(
        client: Client,
        order: OrderFile,
        max_in_flight: Duration,
        crash: Option<Crash>,
    ) -> RefundTarget {
        RefundTarget {
            client,
            order,
            max_in_flight,
            crash,
        }
    }
}

impl Target for RefundTarget {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: Some(Some(DEDUP_WINDOW)),
            lookup: true,
            max_in_flight: Some(self.max_in_flight),
        }
    }

    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        // The one premise: the payment is still the one decided on.
        let recorded = premises.get("payment_intent").and_then(Value::as_str);
        if recorded == Some(self.order.payment_intent.as_str()) {
            Ok(Vec::new())
        } else {
            Ok(vec![format!(
                "payment_intent: was {}, now {}",
                premises.get("payment_intent").unwrap_or(&Value::Null),
                self.order.payment_intent
            )])
        }
    }

    fn apply(&self, effect_id: &str, _effect: &Value) -> Result<Value, TargetError> {
        Err(TargetError::Rejected {
            reason: format!(
                "effect {effect_id}: a refund is sent only with its DISPATCHED entry's hash"
            ),
        })
    }

    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        let effect: RefundEffect =
            serde_json::from_value(effect.clone()).map_err(|e| TargetError::Rejected {
                reason: format!("effect {effect_id} is not a refund payload: {e}"),
            })?;
        let posted = post_refund(
            &self.client,
            &self.order,
            &effect.ticket,
            effect.amount,
            effect_id,
            Some((effect_id, dispatch)),
            self.crash.as_ref(),
        )
        .map_err(scenario_to_target_error)?;
        Ok(json!({
            "status": if posted.replayed { "already_processed" } else { "ok" },
            "refund": posted.id,
            "amount": posted.amount,
        }))
    }

    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        let all = refunds(&self.client, &self.order).map_err(|e| match e {
            ScenarioError::Stripe { source, .. } => to_target_error(&source, "list refunds"),
            other => scenario_to_target_error(other),
        })?;
        // Oldest first, so the first found is the one that landed first.
        let found: Vec<&RefundTruth> = all
            .iter()
            .rev()
            .filter(|r| r.counts() && r.effect_id.as_deref() == Some(effect_id))
            .collect();
        Ok(found.first().map(|r| {
            let mut evidence = json!({"status": "found", "refund": r.id, "amount": r.amount});
            if found.len() > 1 {
                evidence["duplicates"] =
                    json!(found[1..].iter().map(|r| &r.id).collect::<Vec<_>>());
            }
            evidence
        }))
    }
}
