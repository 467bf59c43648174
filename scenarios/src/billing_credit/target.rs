//! The one effect (the credit POST) and [`CreditTarget`], the gate's view of it.

use super::case::{int_field, str_field};
use super::reads::{balance_txn, facts, metadata};
use super::{fire, CaseFile, Crash, CrashPoint, ScenarioError, DEDUP_WINDOW};
use ::interlock::{Capabilities, Target, TargetError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;
use stripe::{Client, Params};
use verify::scenarios::billing_credit::is_case_credit;

/// A credit Stripe answered for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditPosted {
    /// The balance transaction (`cbtxn_...`).
    pub id: String,
    /// Cents credited (positive).
    pub amount: i64,
    /// Stripe answered `Idempotent-Replayed: true`: the saved answer of an earlier request under
    /// the same key, nothing new applied.
    pub replayed: bool,
}

/// The metadata key of the anchor: the hash of the DISPATCHED entry a gate's credit was sent
/// under (DESIGN §3.4), so anyone who can read the account can match the credit to its receipt.
pub const ANCHOR_KEY: &str = "interlock_dispatch";

/// What the gate adds to its credit's metadata.
#[derive(Debug, Clone, Copy)]
pub struct GateTags<'a> {
    /// `metadata[interlock_effect_id]`: the effect id, what the gate's lookup searches by.
    pub effect_id: &'a str,
    /// `metadata[interlock_dispatch]`: the anchor.
    pub dispatch: &'a str,
}

/// `POST /v1/customers/{customer}/balance_transactions` with `amount = -cents`, `currency=usd`,
/// `description`, `metadata[case_id]` and, when `gate` is given, `metadata[interlock_effect_id]`
/// and `metadata[interlock_dispatch]`, under `Idempotency-Key: key`.
///
/// The crash hook fires right before the POST ([`CrashPoint::BeforeSend`]) and right after its
/// response is parsed ([`CrashPoint::AfterSend`]).
#[allow(clippy::too_many_arguments)]
pub fn post_credit(
    client: &Client,
    case: &CaseFile,
    customer: &str,
    cents: i64,
    description: &str,
    key: &str,
    gate: Option<GateTags<'_>>,
    crash: Option<&Crash>,
) -> Result<CreditPosted, ScenarioError> {
    let mut params = Params::new()
        .set("amount", -cents)
        .set("currency", "usd")
        .set("description", description)
        .set("metadata[case_id]", &case.case_id);
    if let Some(tags) = gate {
        params = params
            .set("metadata[interlock_effect_id]", tags.effect_id)
            .set(&format!("metadata[{ANCHOR_KEY}]"), tags.dispatch);
    }
    let path = format!("/v1/customers/{customer}/balance_transactions");
    fire(crash, CrashPoint::BeforeSend);
    super::events::announce_post();
    let answer = client.post(&path, &params, Some(key));
    super::events::announce_answered(answer.as_ref().is_ok_and(|a| a.replayed));
    let answer = answer.map_err(ScenarioError::stripe(format!(
        "credit {cents} cents to {customer} for {} (key {key})",
        case.case_id
    )))?;
    let id = str_field(&answer.body, "id", "the credit's balance transaction")?;
    let amount = int_field(&answer.body, "amount", &format!("credit {id}"))?;
    let posted = CreditPosted {
        id,
        amount: -amount,
        replayed: answer.replayed,
    };
    fire(crash, CrashPoint::AfterSend);
    Ok(posted)
}

/// The effect payload the interlock column proposes: `{customer, amount, description}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreditEffect {
    pub customer: String,
    pub amount: i64,
    pub description: String,
}

/// The billing_credit target for the gate: tier 1 (Stripe dedupes on the Idempotency-Key, which
/// is the effect id), queryable (the credit carries `metadata[interlock_effect_id]`), 24 h
/// dedup window.
///
/// `max_in_flight` is the server-side bound the runner states for its backend
/// ([`super::ScenarioSettings::max_in_flight`]): a "not found" lookup is trusted only once it has
/// passed since recovery found the sender's claim free. A 5xx answered with
/// `Idempotent-Replayed: true` is a saved failure: the first request under the key finished, and
/// the gate settles the effect by lookup instead of resending.
pub struct CreditTarget {
    client: Client,
    case: CaseFile,
    max_in_flight: Duration,
    crash: Option<Crash>,
}

impl std::fmt::Debug for CreditTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreditTarget")
            .field("case", &self.case.case_id)
            .field("max_in_flight", &self.max_in_flight)
            .field("crash", &self.crash.as_ref().map(|(p, _)| *p))
            .finish()
    }
}

impl CreditTarget {
    /// A target for `case`'s credit. `crash` is fired inside [`Target::apply`] (decide phase
    /// only: DISPATCHED is durable by then).
    pub fn new(
        client: Client,
        case: CaseFile,
        max_in_flight: Duration,
        crash: Option<Crash>,
    ) -> CreditTarget {
        CreditTarget {
            client,
            case,
            max_in_flight,
            crash,
        }
    }

    /// This case's credits tagged with `metadata.interlock_effect_id == effect_id` (all pages),
    /// oldest first: `(id, positive cents)`.
    fn credits_for(&self, effect_id: &str) -> Result<Vec<(String, i64)>, TargetError> {
        let path = format!("/v1/customers/{}/balance_transactions", self.case.customer);
        let all = self
            .client
            .list_all(&path, &Params::new())
            .map_err(|e| to_target_error(&e, "list balance transactions for the query"))?;
        let mut found = Vec::new();
        for raw in all.iter().rev() {
            if metadata(raw, "interlock_effect_id").as_deref() != Some(effect_id) {
                continue;
            }
            let t = balance_txn(raw).map_err(scenario_to_target_error)?;
            if is_case_credit(&t, &self.case.case_id) {
                found.push((t.id, -t.amount));
            }
        }
        Ok(found)
    }
}

pub(crate) fn to_target_error(e: &stripe::StripeError, what: &str) -> TargetError {
    if e.api().is_some_and(|f| f.replayed && f.status >= 500) {
        TargetError::Replayed {
            reason: format!("{what}: {e}"),
        }
    } else if e.key_in_use() {
        TargetError::InFlight {
            reason: format!("{what}: {e}"),
        }
    } else if e.is_rejected() {
        TargetError::Rejected {
            reason: format!("{what}: {e}"),
        }
    } else {
        TargetError::Unknown {
            reason: format!("{what}: {e}"),
        }
    }
}

pub(crate) fn scenario_to_target_error(e: ScenarioError) -> TargetError {
    match &e {
        ScenarioError::Stripe { source, .. }
            if source.api().is_some_and(|f| f.replayed && f.status >= 500) =>
        {
            TargetError::Replayed {
                reason: e.to_string(),
            }
        }
        ScenarioError::Stripe { source, .. } if source.key_in_use() => TargetError::InFlight {
            reason: e.to_string(),
        },
        ScenarioError::Stripe { source, .. } if source.is_rejected() => TargetError::Rejected {
            reason: e.to_string(),
        },
        // Everything else may have landed (timeouts, 5xx, another 409, an unreadable 2xx answer).
        _ => TargetError::Unknown {
            reason: e.to_string(),
        },
    }
}

/// Violations `"<key>: was <recorded>, now <live>"` for every key of the live premises (sorted)
/// whose recorded value differs; values are rendered as JSON (`"active"`, `1000`).
pub(crate) fn premise_violations(recorded: &Value, live: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(live) = live.as_object() {
        let mut keys: Vec<&String> = live.keys().collect();
        keys.sort();
        for key in keys {
            let now = &live[key.as_str()];
            match recorded.get(key.as_str()) {
                Some(was) if was == now => {}
                Some(was) => out.push(format!("{key}: was {was}, now {now}")),
                None => out.push(format!("{key}: was not recorded, now {now}")),
            }
        }
    }
    out
}

impl Target for CreditTarget {
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
        // The effect id is not needed: own credits are excluded by case id.
        let live = facts(&self.client, &self.case).map_err(scenario_to_target_error)?;
        let live = serde_json::to_value(&live).map_err(|e| TargetError::Unknown {
            reason: format!("cannot render the live premises: {e}"),
        })?;
        Ok(premise_violations(premises, &live))
    }

    fn apply(&self, effect_id: &str, _effect: &Value) -> Result<Value, TargetError> {
        // The gate always sends through apply_dispatched; a credit without its anchor is never
        // posted.
        Err(TargetError::Rejected {
            reason: format!(
                "effect {effect_id}: a credit is sent only with its DISPATCHED entry's hash"
            ),
        })
    }

    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        let effect: CreditEffect =
            serde_json::from_value(effect.clone()).map_err(|e| TargetError::Rejected {
                reason: format!("effect {effect_id} is not a credit payload: {e}"),
            })?;
        let posted = post_credit(
            &self.client,
            &self.case,
            &effect.customer,
            effect.amount,
            &effect.description,
            effect_id,
            Some(GateTags {
                effect_id,
                dispatch,
            }),
            self.crash.as_ref(),
        )
        .map_err(scenario_to_target_error)?;
        Ok(json!({
            "status": if posted.replayed { "already_processed" } else { "ok" },
            "credit": posted.id,
            "amount": posted.amount,
        }))
    }

    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        let found = self.credits_for(effect_id)?;
        Ok(found.first().map(|(id, amount)| {
            let mut evidence = json!({"status": "found", "credit": id, "amount": amount});
            if found.len() > 1 {
                evidence["duplicates"] =
                    json!(found[1..].iter().map(|(i, _)| i).collect::<Vec<_>>());
            }
            evidence
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_name_key_and_both_values() {
        let recorded = json!({"subscription_status": "active", "incident_compensation": 0});
        let same = recorded.clone();
        assert!(premise_violations(&recorded, &same).is_empty());
        let live = json!({"subscription_status": "canceled", "incident_compensation": 1000});
        assert_eq!(
            premise_violations(&recorded, &live),
            [
                "incident_compensation: was 0, now 1000",
                "subscription_status: was \"active\", now \"canceled\""
            ]
        );
    }
}
