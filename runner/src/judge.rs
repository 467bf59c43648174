//! Judging a cell from what Stripe holds (DESIGN §4.6), with `verify`'s rules.
//!
//! - `want`, `invariant_held`, `answer_matches`: `verify::billing_credit`.
//! - `proof`: interlock: the receipt verifies against the run's pinned public key, its `happened`
//!   agrees with Stripe, and the COMMITTED evidence's `credit` is one of this case's credits in
//!   Stripe (when nothing was committed there must be no case credit); hand_check: the last
//!   restart-phase step of its plain log agrees with Stripe; no_check: never.
//!
//! These are the rules `verify::check` re-derives; the runner checks the written file with it.

use serde_json::Value;
use verify::billing_credit::{answer_matches, invariant_held, want_for_decision};
use verify::receipt::{verify_bundle, Happened, KeyCheck};
use verify::results::{Cell, FreeForm, GroundTruth};

/// Fills `want`, `invariant_held`, `answer_matches` and `proof` from the cell's raw data.
pub fn judge(cell: &mut Cell, public_key: &ed25519_dalek::VerifyingKey) {
    let w = want_for_decision(
        &cell.ground_truth,
        &cell.case.case_id,
        &cell.case.incident,
        &cell.case.approval,
        cell.decision.as_ref().map(|d| d.amount),
    );
    cell.want = w;
    cell.invariant_held = invariant_held(&cell.ground_truth, w);
    cell.answer_matches = answer_matches(&cell.outcome, &cell.ground_truth);
    cell.proof = match cell.column.as_str() {
        "interlock" => interlock_proves(cell, public_key),
        "hand_check" => cell.hand_check_log.as_deref().is_some_and(|log| {
            let lines: Vec<Value> = log.iter().map(FreeForm::to_value).collect();
            hand_check_log_agrees(&lines, &cell.ground_truth)
        }),
        _ => false,
    };
}

/// The interlock proof rule.
pub fn interlock_proves(cell: &Cell, public_key: &ed25519_dalek::VerifyingKey) -> bool {
    let Some(bundle) = &cell.receipt else {
        return false;
    };
    let report = verify_bundle(bundle, &KeyCheck::Pinned(*public_key));
    let exists = cell.ground_truth.case_credit_count > 0;
    if !report.valid || !report.happened.agrees_with(exists) {
        return false;
    }
    match report.happened {
        // The receipt proves one credit: Stripe must hold exactly that one.
        Happened::Yes if cell.ground_truth.case_credit_count != 1 => false,
        Happened::Yes => report
            .evidence
            .as_ref()
            .and_then(|e| e.get("credit"))
            .and_then(Value::as_str)
            .is_some_and(|credit| {
                cell.ground_truth
                    .case_credits
                    .iter()
                    .any(|c| c.id == credit)
            }),
        Happened::No => !exists,
        Happened::Unknown => false,
    }
}

/// Whether hand_check's plain log agrees with Stripe: its last restart-phase step says "sent"
/// (`sent` with a credit, or a `lookup` that found one) naming a credit Stripe holds for the case,
/// or says "refused" (`approval` / `premises`) while Stripe holds no case credit.
pub fn hand_check_log_agrees(log: &[Value], truth: &GroundTruth) -> bool {
    let held =
        |id: Option<&str>| id.is_some_and(|id| truth.case_credits.iter().any(|c| c.id == id));
    let Some(last) = log
        .iter()
        .rev()
        .find(|l| l.get("phase").and_then(Value::as_str) == Some("restart"))
    else {
        return false;
    };
    let exists = truth.case_credit_count > 0;
    match last.get("step").and_then(Value::as_str) {
        Some("sent") => exists && held(last.get("credit").and_then(Value::as_str)),
        Some("lookup") => exists && held(last.get("found").and_then(Value::as_str)),
        Some("approval") | Some("premises") => !exists,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use verify::results::CaseCredit;

    fn truth(ids: &[&str]) -> GroundTruth {
        GroundTruth {
            case_credits: ids
                .iter()
                .map(|id| CaseCredit {
                    id: id.to_string(),
                    amount: -1000,
                    created: 1,
                    effect_id: None,
                    dispatch: None,
                })
                .collect(),
            case_credit_count: ids.len() as u32,
            case_credit_cents: 1000 * ids.len() as i64,
            credit_notes: vec![],
            balance_transactions: vec![],
            invoices: vec![],
            customer_balance: 0,
            compensation_by_others: 0,
            incident_compensation: 0,
        }
    }

    fn line(step: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut v = json!({"phase": "restart", "step": step});
        if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
            m.extend(e);
        }
        v
    }

    #[test]
    fn hand_check_log_rule() {
        let decide_only = vec![json!({"phase": "decide", "step": "send"})];
        assert!(!hand_check_log_agrees(&decide_only, &truth(&[])));
        assert!(!hand_check_log_agrees(&[], &truth(&[])));

        let sent = vec![
            line("lookup", json!({"found": null})),
            line("send", json!({})),
            line("sent", json!({"credit": "cbtxn_1"})),
        ];
        assert!(hand_check_log_agrees(&sent, &truth(&["cbtxn_1"])));
        assert!(!hand_check_log_agrees(&sent, &truth(&[])));
        assert!(!hand_check_log_agrees(&sent, &truth(&["cbtxn_2"])));

        let found = vec![line("lookup", json!({"found": "cbtxn_1"}))];
        assert!(hand_check_log_agrees(&found, &truth(&["cbtxn_1"])));
        assert!(!hand_check_log_agrees(&found, &truth(&["cbtxn_9"])));

        let refused = vec![
            line("lookup", json!({"found": null})),
            line("approval", json!({"approval": {}})),
            line("premises", json!({"refused": {"was": {}, "now": {}}})),
        ];
        assert!(hand_check_log_agrees(&refused, &truth(&[])));
        assert!(!hand_check_log_agrees(&refused, &truth(&["cbtxn_1"])));
    }
}
