//! Whether a column's own record proves a ticket's outcome, as Stripe holds it.
//!
//! - `interlock`: the receipt verifies against the run's key, what it says happened agrees with
//!   Stripe (a refund tagged with the ticket exists iff the receipt proves one), and when it
//!   proves one, the committed evidence names the one refund Stripe holds for the ticket.
//! - `hand_check`, `hand_lock`, `hand_pg_lock`: the last line of the ticket's plain log agrees with Stripe (a
//!   `sent` or a `lookup` that found one, naming a refund Stripe holds for the ticket; or a
//!   refusal while Stripe holds none). A plain file the worker wrote itself: it agrees or not,
//!   it cannot be verified.
//! - `no_check`: keeps no record; never.

use super::record::TicketRecord;
use super::truth::OrderTruth;
use crate::receipt::{verify_bundle, KeyCheck};
use serde_json::Value;

/// The proof rule of `column` for one ticket.
pub fn proves(
    column: &str,
    ticket: &TicketRecord,
    truth: &OrderTruth,
    key: &ed25519_dalek::VerifyingKey,
) -> bool {
    match column {
        "interlock" => ticket
            .receipt
            .as_ref()
            .is_some_and(|bundle| receipt_proves(bundle, &ticket.ticket_id, truth, key)),
        "hand_check" | "hand_lock" | super::plan::HAND_PG_LOCK => {
            ticket.log.as_deref().is_some_and(|log| {
                let lines: Vec<Value> =
                    log.iter().map(crate::results::FreeForm::to_value).collect();
                log_agrees(&lines, &ticket.ticket_id, truth)
            })
        }
        _ => false,
    }
}

/// The interlock rule for one receipt ([`crate::scenarios::receipt_proof`]), the ticket's
/// refunds being what Stripe holds of its effect.
pub fn receipt_proves(
    bundle: &crate::entry::ReceiptBundle,
    ticket_id: &str,
    truth: &OrderTruth,
    key: &ed25519_dalek::VerifyingKey,
) -> bool {
    let report = verify_bundle(bundle, &KeyCheck::Pinned(*key));
    let held = truth.of_ticket(ticket_id).count();
    let holds = |id: &str| truth.of_ticket(ticket_id).any(|r| r.id == id);
    crate::scenarios::receipt_proof::receipt_proof(&report, held, holds, "refund", "refund").is_ok()
}

/// The hand-written columns' rule: the log's last line agrees with Stripe.
pub fn log_agrees(log: &[Value], ticket_id: &str, truth: &OrderTruth) -> bool {
    let held =
        |id: Option<&str>| id.is_some_and(|id| truth.of_ticket(ticket_id).any(|r| r.id == id));
    let Some(last) = log.last() else {
        return false;
    };
    let refused = last.get("refused").is_some();
    let exists = truth.of_ticket(ticket_id).next().is_some();
    match last.get("step").and_then(Value::as_str) {
        Some("sent") => held(last.get("refund").and_then(Value::as_str)),
        Some("lookup") => held(last.get("found").and_then(Value::as_str)),
        Some("approval") | Some("cap") if refused => !exists,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_cap::RefundTruth;
    use serde_json::json;

    fn truth(tagged: &[(&str, &str)]) -> OrderTruth {
        OrderTruth {
            payment_intent: "pi_1".into(),
            charge: "ch_1".into(),
            charge_amount: 10_000,
            amount_refunded: 2000 * tagged.len() as i64,
            refunds: tagged
                .iter()
                .map(|(id, ticket)| RefundTruth {
                    id: (*id).into(),
                    amount: 2000,
                    status: "succeeded".into(),
                    ticket: Some((*ticket).into()),
                    effect_id: None,
                    created: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn the_logs_last_line_must_agree_with_stripe() {
        let sent = [
            json!({"step": "send"}),
            json!({"step": "sent", "refund": "re_1"}),
        ];
        assert!(log_agrees(&sent, "T-a", &truth(&[("re_1", "T-a")])));
        assert!(!log_agrees(&sent, "T-a", &truth(&[])));
        // A refund held for the other ticket is not this ticket's.
        assert!(!log_agrees(&sent, "T-a", &truth(&[("re_1", "T-b")])));
        let found = [json!({"step": "lookup", "found": "re_1"})];
        assert!(log_agrees(&found, "T-a", &truth(&[("re_1", "T-a")])));
        let refused = [json!({"step": "cap", "refused": {"refunded": 2000}})];
        assert!(log_agrees(&refused, "T-a", &truth(&[("re_9", "T-b")])));
        assert!(!log_agrees(&refused, "T-a", &truth(&[("re_1", "T-a")])));
        // A log that stops at its `send` line proves nothing.
        assert!(!log_agrees(&[json!({"step": "send"})], "T-a", &truth(&[])));
        assert!(!log_agrees(&[], "T-a", &truth(&[])));
        // A passed check is not a refusal.
        assert!(!log_agrees(
            &[json!({"step": "cap", "refunded": 0})],
            "T-a",
            &truth(&[])
        ));
    }
}
