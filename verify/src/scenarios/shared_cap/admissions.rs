//! The budget's admissions in a shared_cap `interlock` cell, re-derived from the two tickets'
//! receipts by `verify::budget`'s rule; and each receipt must spend from the order's budget.

use crate::budget::{check_budget, EffectEntries};
use crate::entry::ReceiptBundle;
use serde_json::Value;

/// Every problem with the admissions of budget `budget` (the order id) that the receipts show,
/// in words.
pub fn check_budget_of(budget: &str, receipts: &[&ReceiptBundle]) -> Vec<String> {
    let mut out = Vec::new();
    for r in receipts {
        let named = r
            .entries
            .iter()
            .find(|e| e.get("kind").and_then(Value::as_str) == Some("PROPOSED"))
            .and_then(|e| e.get("budget"))
            .and_then(|b| b.get("id"))
            .and_then(Value::as_str);
        if named != Some(budget) {
            out.push(format!(
                "effect {}: its proposal names budget {}, not the order's",
                r.effect_id,
                named.unwrap_or("none")
            ));
        }
    }
    let effects: Vec<EffectEntries<'_>> = receipts
        .iter()
        .map(|b| EffectEntries {
            effect_id: &b.effect_id,
            entries: &b.entries,
        })
        .collect();
    out.extend(
        check_budget(budget, &effects)
            .iter()
            .map(ToString::to_string),
    );
    out
}
