//! Proposals (what an agent asks the gate to do) and their effect ids.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What an agent asks the gate to do: one side effect, under one authority, decided on some facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Who proposes (an agent or worker name); recorded on PROPOSED.
    pub agent: String,
    /// The authority the effect is done under (an approval id, usually a string); checked by the
    /// [`LeaseStore`](crate::LeaseStore) at proposal, at dispatch and at recovery.
    pub lease: Value,
    /// The facts captured when the agent decided; re-checked against the target before any send.
    pub premises: Value,
    /// The target payload. The first PROPOSED of an effect fixes it (invariant I5).
    pub effect: Value,
    /// The approved request this effect answers. When present it alone determines the effect id,
    /// so one request can produce one effect whatever payload is decided for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The budget this effect spends from (DESIGN §2.8), recorded on PROPOSED. It does not change
    /// the effect id; the first PROPOSED fixes it with the payload. The gate admits the effect at
    /// dispatch only if the budget's committed, open and ambiguous amounts plus this one stay
    /// within the cap its [`BudgetStore`](crate::BudgetStore) gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
}

/// The effect id of a proposal: lowercase hex SHA-256 (64 characters) of the canonical JSON
/// (RFC 8785) of `request_id` as a JSON string when present, else of `effect`.
///
/// The id is also the idempotency key sent to tier-1 targets.
///
/// A payload the canonical form cannot carry (a floating-point number, an integer beyond
/// ±(2^53 − 1)) is hashed from serde_json's compact text instead, so this function never fails;
/// [`Gate::submit`](crate::Gate::submit) refuses such payloads with an error before writing
/// anything.
pub fn effect_id(p: &Proposal) -> String {
    let key = match &p.request_id {
        Some(r) => Value::String(r.clone()),
        None => p.effect.clone(),
    };
    let text = verify::canonical::to_string(&key).unwrap_or_else(|_| key.to_string());
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(effect: Value, request_id: Option<&str>) -> Proposal {
        Proposal {
            agent: "a".into(),
            lease: json!("l"),
            premises: json!({}),
            effect,
            request_id: request_id.map(str::to_owned),
            budget: None,
        }
    }

    #[test]
    fn request_id_decides_the_id_and_is_hashed_as_a_json_string() {
        let a = p(json!({"amount": 1000}), Some("goodwill-credit:case-1"));
        let b = p(json!({"amount": 500}), Some("goodwill-credit:case-1"));
        assert_eq!(effect_id(&a), effect_id(&b));
        let expected = hex::encode(Sha256::digest(b"\"goodwill-credit:case-1\""));
        assert_eq!(effect_id(&a), expected);
        assert_eq!(effect_id(&a).len(), 64);
    }

    #[test]
    fn a_budget_does_not_change_the_effect_id_and_is_left_out_when_none() {
        let a = p(json!({"amount": 1000}), Some("refund:ticket-1"));
        let mut b = a.clone();
        b.budget = Some(crate::budget::Budget {
            id: "order-1".into(),
            amount: 1000,
        });
        assert_eq!(effect_id(&a), effect_id(&b));
        let text = serde_json::to_string(&a).unwrap_or_default();
        assert!(!text.contains("budget"), "{text}");
        assert!(serde_json::to_string(&b)
            .unwrap_or_default()
            .contains(r#""budget":{"id":"order-1","amount":1000}"#));
    }

    #[test]
    fn without_request_id_the_canonical_effect_decides() {
        let a = p(json!({"b": 2, "a": 1}), None);
        let b = p(json!({"a": 1, "b": 2}), None);
        assert_eq!(effect_id(&a), effect_id(&b));
        assert_eq!(
            effect_id(&a),
            hex::encode(Sha256::digest(br#"{"a":1,"b":2}"#))
        );
        assert_ne!(effect_id(&a), effect_id(&p(json!({"a": 2, "b": 2}), None)));
        assert!(effect_id(&a)
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}
