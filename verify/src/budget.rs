//! Budgets: limits that span effects (DESIGN §2.8). The record a gate writes when it admits or
//! refuses an effect against a budget, the admission rule itself, and the check that re-derives
//! every admission from the receipts of one budget's effects.
//!
//! A proposal names a budget on its PROPOSED (`budget: {id, amount}`). The entry that admits it
//! (DISPATCHED) or refuses it (REFUSED with code [`OVER_BUDGET`]) carries a [`BudgetRecord`]:
//! the cap it read, its own amount, every other effect of the budget it counted (committed, open
//! or ambiguous) with its amount, and the total. Nothing here relies on the order of entries
//! across effects: [`check_budget`] needs only each effect's own chain.
//!
//! What this check does not do: verify hashes and signatures (run
//! [`crate::receipt::verify_bundle`] on each receipt first), or know the budget store's cap
//! (it compares the caps the entries name with each other, and says when they differ).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The refusal code of an effect the budget cannot take, at dispatch or at recovery.
pub const OVER_BUDGET: &str = "over_budget";

/// A proposal's claim on a budget, recorded on PROPOSED as `budget: {id, amount}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// The budget (e.g. one order's refund cap), as the budget store names it.
    pub id: String,
    /// What this effect spends of it, in the budget's unit (integer cents). The proposal's word:
    /// nothing checks it against the payload.
    pub amount: i64,
}

/// One other effect an admission counted against the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    /// The effect counted.
    pub effect_id: String,
    /// Its amount, as its own PROPOSED named it.
    pub amount: i64,
}

/// What the entry that admits (DISPATCHED) or refuses (REFUSED `over_budget`) an effect records
/// as its `budget` field, and what recovery records as `rechecked.budget`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetRecord {
    /// The budget.
    pub id: String,
    /// The cap the budget store gave; `null` when it did not know the budget.
    pub cap: Option<i64>,
    /// This effect's amount.
    pub amount: i64,
    /// Every other effect of the budget whose reservation held when this was decided: committed,
    /// dispatched and not yet resolved, or ambiguous.
    pub counted: Vec<Counted>,
    /// The counted amounts plus this one.
    pub total: i64,
}

/// The counted amounts plus `amount`; `None` when a sum leaves the range every JSON reader holds
/// exactly (±(2^53 − 1)).
pub fn total_of(counted: &[Counted], amount: i64) -> Option<i64> {
    let limit = i128::from(crate::canonical::MAX_SAFE_INTEGER);
    let sum =
        counted
            .iter()
            .map(|c| i128::from(c.amount))
            .try_fold(i128::from(amount), |acc, a| {
                let next = acc + a;
                (-limit..=limit).contains(&next).then_some(next)
            })?;
    i64::try_from(sum).ok()
}

/// The admission rule: an effect is admitted when the budget is known and the total (what the
/// budget's committed, open and ambiguous effects spend, plus this one) stays within its cap.
pub fn admits(cap: Option<i64>, total: i64) -> bool {
    cap.is_some_and(|cap| total <= cap)
}

/// The entries of one effect, as [`check_budget`] reads them.
#[derive(Debug, Clone, Copy)]
pub struct EffectEntries<'a> {
    /// The effect.
    pub effect_id: &'a str,
    /// Its entries, in chain order.
    pub entries: &'a [Value],
}

/// A way the receipts of a budget's effects disagree with the admission rule, or (for
/// [`BudgetFinding::CapsDiffer`]) a fact worth saying.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetFinding {
    /// An entry that should carry a budget record has none, or one that cannot be read.
    #[error("effect {effect_id}: entry {entry} has no readable budget record: {why}")]
    Malformed {
        /// The effect.
        effect_id: String,
        /// The entry's index in its receipt.
        entry: usize,
        /// What is wrong.
        why: String,
    },
    /// Rule (a): the recorded total is not the counted amounts plus the effect's own.
    #[error("effect {effect_id}: entry {entry} records total {stated}, but its counted amounts plus its own make {}", shown(*derived))]
    TotalMismatch {
        /// The effect.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// The recorded total.
        stated: i64,
        /// The re-derived total (`None`: out of range).
        derived: Option<i64>,
    },
    /// Rule (a): an admission (DISPATCHED) whose total is above its cap, or names no cap.
    #[error("effect {effect_id}: entry {entry} admits a total of {total} under cap {}", shown(*cap))]
    AdmittedOverCap {
        /// The effect.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// Its total.
        total: i64,
        /// Its cap.
        cap: Option<i64>,
    },
    /// Rule (a): a refusal whose total is within its cap.
    #[error(
        "effect {effect_id}: entry {entry} refuses a total of {total}, which is within cap {cap}"
    )]
    RefusedWithinCap {
        /// The effect.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// Its total.
        total: i64,
        /// Its cap.
        cap: i64,
    },
    /// Rule (a): an admission counted its own effect (its reservation counted twice), or one
    /// effect twice.
    #[error("effect {effect_id}: entry {entry} counts effect {counted} {why}")]
    CountedTwice {
        /// The effect.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// The effect counted.
        counted: String,
        /// `as well as its own amount` or `more than once`.
        why: &'static str,
    },
    /// Rule (b): an amount differs from what the effect's own PROPOSED named.
    #[error("effect {effect_id}: entry {entry} takes effect {counted}'s amount as {recorded}, but its PROPOSED names {}", shown(*proposed))]
    AmountMismatch {
        /// The effect whose entry it is.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// The effect whose amount is recorded (the entry's own, or a counted one).
        counted: String,
        /// The amount recorded.
        recorded: i64,
        /// The amount its PROPOSED names (`None`: it names none for this budget).
        proposed: Option<i64>,
    },
    /// Rule (c): two effects both hold their reservation, and neither admission counted the
    /// other: whichever was admitted second did not see the first.
    #[error("effects {first} and {second} both hold the budget, but neither's admission counted the other")]
    Unseen {
        /// One effect.
        first: String,
        /// The other.
        second: String,
    },
    /// Rule (c): no admission among the effects that still hold the budget counted all the
    /// others. Whichever of them was admitted last saw every other already holding, so genuine
    /// receipts always have one; without it the holders' amounts are not bounded by any cap
    /// (a cycle of counts: a counted b, b counted c, c counted a).
    #[error("none of the {holders} effects that hold the budget was admitted counting all the others: no order of admissions gives these receipts")]
    NoLastAdmission {
        /// How many effects hold the budget.
        holders: usize,
    },
    /// An amount or cap outside 0..=2^53 − 1 (the gate refuses such budgets before writing).
    #[error("effect {effect_id}: entry {entry} names {what} {value}, outside 0..=2^53 - 1")]
    OutOfRange {
        /// The effect.
        effect_id: String,
        /// The entry.
        entry: usize,
        /// Which number: `its amount`, `the cap`, or `effect <id>'s amount`.
        what: String,
        /// The number.
        value: i64,
    },
    /// Rule (d): the admissions name different caps (the store's cap changed, e.g. lowered
    /// between a crash and its recovery). Said, not a violation.
    #[error("the budget's entries name {} different caps: {}", caps.len(), caps.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))]
    CapsDiffer {
        /// The distinct caps, ascending.
        caps: Vec<i64>,
    },
}

/// An amount or cap in a sentence: the number, or `none`.
fn shown(v: Option<i64>) -> String {
    v.map_or_else(|| "none".to_owned(), |n| n.to_string())
}

impl BudgetFinding {
    /// The machine code of the finding.
    pub fn code(&self) -> &'static str {
        match self {
            BudgetFinding::Malformed { .. } => "budget_record_malformed",
            BudgetFinding::TotalMismatch { .. } => "budget_total_mismatch",
            BudgetFinding::AdmittedOverCap { .. } => "budget_admitted_over_cap",
            BudgetFinding::RefusedWithinCap { .. } => "budget_refused_within_cap",
            BudgetFinding::CountedTwice { .. } => "budget_counted_twice",
            BudgetFinding::AmountMismatch { .. } => "budget_amount_mismatch",
            BudgetFinding::Unseen { .. } => "budget_unseen",
            BudgetFinding::NoLastAdmission { .. } => "budget_no_last_admission",
            BudgetFinding::OutOfRange { .. } => "budget_out_of_range",
            BudgetFinding::CapsDiffer { .. } => "budget_caps_differ",
        }
    }

    /// False only for [`BudgetFinding::CapsDiffer`], which reports a change, not a breach.
    pub fn is_violation(&self) -> bool {
        !matches!(self, BudgetFinding::CapsDiffer { .. })
    }
}

/// At most this many [`BudgetFinding::Unseen`] pairs are listed: a budget whose admissions saw
/// nothing of each other is shown by a few pairs, not by every pair.
pub const UNSEEN_LISTED: usize = 64;

/// One admission or refusal read from an effect's chain.
struct Decision {
    entry: usize,
    admitted: bool,
    record: BudgetRecord,
}

/// What one effect's chain says about the budget.
struct EffectView<'a> {
    effect_id: &'a str,
    /// The amount the first PROPOSED naming the budget gave.
    proposed: Option<i64>,
    decisions: Vec<Decision>,
    /// The admission whose reservation still holds at the end of the chain (no resolving
    /// REFUSED after it): an index into `decisions`.
    holding: Option<usize>,
}

/// Re-derive every admission of budget `budget_id` from its effects' entries (DESIGN §2.8),
/// whatever order the effects come in:
///
/// - (a) every admission (DISPATCHED) and refusal (REFUSED `over_budget`) records a total equal
///   to its counted amounts plus its own, counts neither itself nor an effect twice; admitted ⇒
///   total ≤ cap, refused ⇒ total > cap (or the cap was unknown);
/// - (b) each amount recorded equals the amount the effect's own PROPOSED names, where that
///   effect's entries are given;
/// - (c) for every two effects that both still hold their reservation (dispatched, and not
///   resolved by a REFUSED since), at least one's admission counted the other;
/// - (d) every entry names the same cap, or [`BudgetFinding::CapsDiffer`] says which.
///
/// Entries of other budgets are ignored. Returns every finding (empty: the admissions hold).
pub fn check_budget(budget_id: &str, effects: &[EffectEntries<'_>]) -> Vec<BudgetFinding> {
    let mut findings = Vec::new();
    let views: Vec<EffectView<'_>> = effects
        .iter()
        .map(|e| read_effect(budget_id, e, &mut findings))
        .collect();
    let proposed: HashMap<&str, Option<i64>> =
        views.iter().map(|v| (v.effect_id, v.proposed)).collect();
    for v in &views {
        for d in &v.decisions {
            check_decision(v, d, &proposed, &mut findings);
        }
    }
    check_pairs(&views, &mut findings);
    check_caps(&views, &mut findings);
    findings
}

/// [`check_budget`] over receipt bundles.
pub fn check_budget_bundles(
    budget_id: &str,
    bundles: &[crate::entry::ReceiptBundle],
) -> Vec<BudgetFinding> {
    let effects: Vec<EffectEntries<'_>> = bundles
        .iter()
        .map(|b| EffectEntries {
            effect_id: &b.effect_id,
            entries: &b.entries,
        })
        .collect();
    check_budget(budget_id, &effects)
}

/// What one effect's chain says about budget `budget_id`: the amount its PROPOSED names, each
/// admission and refusal, and the admission still holding at the end; malformed records go to
/// `findings`.
fn read_effect<'a>(
    budget_id: &str,
    e: &EffectEntries<'a>,
    findings: &mut Vec<BudgetFinding>,
) -> EffectView<'a> {
    let mut view = EffectView {
        effect_id: e.effect_id,
        proposed: None,
        decisions: Vec::new(),
        holding: None,
    };
    for (i, entry) in e.entries.iter().enumerate() {
        let field = entry.get("budget");
        let read = RecordRead {
            budget_id,
            entry: i,
            proposed_here: view.proposed.is_some(),
        };
        let found = match entry.get("kind").and_then(Value::as_str) {
            Some("PROPOSED") => {
                let named = field.and_then(|b| serde_json::from_value::<Budget>(b.clone()).ok());
                if let Some(b) = named.filter(|b| b.id == budget_id) {
                    view.proposed.get_or_insert(b.amount);
                }
                continue;
            }
            Some("DISPATCHED") => read.decision(
                true,
                field,
                |id| format!("a DISPATCHED admits it against budget {id:?}, though its PROPOSED names this one"),
                "a DISPATCHED of an effect proposed under the budget records no admission",
            ),
            // Recovery re-checked the budget before this resend: an admission like the
            // DISPATCHED one, held to the same rules (its reservation stays that one's).
            Some("COMMITTED") if resends(entry) => read.decision(
                true,
                entry.get("rechecked").and_then(|r| r.get("budget")),
                |id| format!("a resend re-checked budget {id:?}, though its PROPOSED names this one"),
                "a resend of an effect proposed under the budget records no re-check of it",
            ),
            Some("REFUSED") => {
                let over = entry.get("code").and_then(Value::as_str) == Some(OVER_BUDGET);
                let found = if over {
                    read.decision(
                        false,
                        field,
                        |id| format!("an over_budget REFUSED names budget {id:?}, though its PROPOSED names this one"),
                        "an over_budget REFUSED records no budget",
                    )
                } else {
                    Ok(None)
                };
                if entry.get("resolves") == Some(&Value::Bool(true)) {
                    view.holding = None;
                }
                found
            }
            _ => continue,
        };
        match found {
            Ok(Some(d)) => {
                // A DISPATCHED's admission holds its reservation until a REFUSED resolves it; a
                // resend's re-check and a refusal hold none of their own.
                if d.admitted && entry.get("kind").and_then(Value::as_str) == Some("DISPATCHED") {
                    view.holding = Some(view.decisions.len());
                }
                view.decisions.push(d);
            }
            Ok(None) => {}
            Err(why) => findings.push(BudgetFinding::Malformed {
                effect_id: e.effect_id.to_owned(),
                entry: i,
                why,
            }),
        }
    }
    view
}

/// Reading one entry's budget record for one effect.
struct RecordRead<'b> {
    budget_id: &'b str,
    entry: usize,
    /// The effect's PROPOSED names this budget (so a record of another, or none, is malformed).
    proposed_here: bool,
}

impl RecordRead<'_> {
    /// The admission (`admitted`) or refusal `record` makes for this budget; `Ok(None)` when it
    /// is another budget's or absent and the effect was not proposed under this one; `Err` why
    /// it is malformed (`other(id)` for another budget's, `missing` for none).
    fn decision(
        &self,
        admitted: bool,
        record: Option<&Value>,
        other: impl Fn(&str) -> String,
        missing: &str,
    ) -> Result<Option<Decision>, String> {
        match record.map(|b| serde_json::from_value::<BudgetRecord>(b.clone())) {
            Some(Ok(r)) if r.id == self.budget_id => Ok(Some(Decision {
                entry: self.entry,
                admitted,
                record: r,
            })),
            Some(Ok(r)) if self.proposed_here => Err(other(&r.id)),
            Some(Ok(_)) => Ok(None),
            Some(Err(err)) => Err(err.to_string()),
            None if self.proposed_here => Err(missing.to_owned()),
            None => Ok(None),
        }
    }
}

/// Whether a COMMITTED entry records a resend by recovery (under the same key, or after a
/// lookup that found nothing): a send the budget was re-checked for.
fn resends(entry: &Value) -> bool {
    use crate::protocol::Via;
    let via = entry.get("via").and_then(Value::as_str);
    via == Some(Via::RetryIdempotent.as_str()) || via == Some(Via::RecoveryReapply.as_str())
}

/// Rules (a) and (b) for one admission or refusal.
fn check_decision(
    v: &EffectView<'_>,
    d: &Decision,
    proposed: &HashMap<&str, Option<i64>>,
    findings: &mut Vec<BudgetFinding>,
) {
    let r = &d.record;
    let eid = v.effect_id.to_owned();
    check_ranges(v.effect_id, d, findings);
    let derived = total_of(&r.counted, r.amount);
    if derived != Some(r.total) {
        findings.push(BudgetFinding::TotalMismatch {
            effect_id: eid.clone(),
            entry: d.entry,
            stated: r.total,
            derived,
        });
    }
    match (d.admitted, admits(r.cap, r.total), r.cap) {
        (true, false, cap) => findings.push(BudgetFinding::AdmittedOverCap {
            effect_id: eid.clone(),
            entry: d.entry,
            total: r.total,
            cap,
        }),
        (false, true, Some(cap)) => findings.push(BudgetFinding::RefusedWithinCap {
            effect_id: eid.clone(),
            entry: d.entry,
            total: r.total,
            cap,
        }),
        _ => {}
    }
    let mut seen = HashSet::new();
    for c in &r.counted {
        let why = if c.effect_id == v.effect_id {
            Some("as well as its own amount")
        } else if !seen.insert(c.effect_id.as_str()) {
            Some("more than once")
        } else {
            None
        };
        if let Some(why) = why {
            findings.push(BudgetFinding::CountedTwice {
                effect_id: eid.clone(),
                entry: d.entry,
                counted: c.effect_id.clone(),
                why,
            });
        }
    }
    let own = std::iter::once((v.effect_id, r.amount, Some(v.proposed)));
    let others = r.counted.iter().map(|c| {
        let p = proposed.get(c.effect_id.as_str()).copied();
        (c.effect_id.as_str(), c.amount, p)
    });
    for (counted, recorded, p) in own.chain(others) {
        // `None`: the counted effect's entries were not given, so there is nothing to compare.
        if let Some(p) = p.filter(|p| *p != Some(recorded)) {
            findings.push(BudgetFinding::AmountMismatch {
                effect_id: eid.clone(),
                entry: d.entry,
                counted: counted.to_owned(),
                recorded,
                proposed: p,
            });
        }
    }
}

/// Every amount and the cap of one admission or refusal within 0..=2^53 − 1, as the gate
/// requires before it writes: a negative amount would make room under any cap.
fn check_ranges(effect_id: &str, d: &Decision, findings: &mut Vec<BudgetFinding>) {
    let r = &d.record;
    let max = crate::canonical::MAX_SAFE_INTEGER;
    let numbers = std::iter::once(("its amount".to_owned(), r.amount))
        .chain(r.cap.map(|c| ("the cap".to_owned(), c)))
        .chain(
            r.counted
                .iter()
                .map(|c| (format!("effect {}'s amount", c.effect_id), c.amount)),
        );
    for (what, value) in numbers {
        if !(0..=max).contains(&value) {
            findings.push(BudgetFinding::OutOfRange {
                effect_id: effect_id.to_owned(),
                entry: d.entry,
                what,
                value,
            });
        }
    }
}

/// Rule (c): of every two effects that hold their reservation, one's admission counted the
/// other, and one holder's admission (the last) counted all the others. Counts the pairs
/// covered first (linear in what the admissions list), and only when some are missing looks for
/// them, listing at most [`UNSEEN_LISTED`].
fn check_pairs(views: &[EffectView<'_>], findings: &mut Vec<BudgetFinding>) {
    let holders: Vec<(&str, &Decision)> = views
        .iter()
        .filter_map(|v| Some((v.effect_id, v.decisions.get(v.holding?)?)))
        .collect();
    let ids: HashSet<&str> = holders.iter().map(|(e, _)| *e).collect();
    let mut covered: HashSet<(&str, &str)> = HashSet::new();
    for (eid, d) in &holders {
        for c in &d.record.counted {
            let other = c.effect_id.as_str();
            if other != *eid && ids.contains(other) {
                covered.insert(if *eid < other {
                    (*eid, other)
                } else {
                    (other, *eid)
                });
            }
        }
    }
    let n = ids.len();
    // The holder admitted last counted every other holder: some admission must have.
    let counted_all = holders.iter().any(|(eid, d)| {
        let seen: HashSet<&str> = d
            .record
            .counted
            .iter()
            .map(|c| c.effect_id.as_str())
            .filter(|c| c != eid && ids.contains(c))
            .collect();
        seen.len() + 1 == n
    });
    if covered.len() == n * n.saturating_sub(1) / 2 {
        // Every pair seen, yet nobody saw everybody: a cycle of counts.
        if n > 1 && !counted_all {
            findings.push(BudgetFinding::NoLastAdmission { holders: n });
        }
        return;
    }
    let mut sorted: Vec<&str> = ids.into_iter().collect();
    sorted.sort_unstable();
    let mut listed = 0;
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            if !covered.contains(&(*a, *b)) {
                findings.push(BudgetFinding::Unseen {
                    first: (*a).to_owned(),
                    second: (*b).to_owned(),
                });
                listed += 1;
                if listed == UNSEEN_LISTED {
                    return;
                }
            }
        }
    }
}

/// Rule (d): every admission and refusal names the same cap.
fn check_caps(views: &[EffectView<'_>], findings: &mut Vec<BudgetFinding>) {
    let mut caps: Vec<i64> = views
        .iter()
        .flat_map(|v| v.decisions.iter().filter_map(|d| d.record.cap))
        .collect();
    caps.sort_unstable();
    caps.dedup();
    if caps.len() > 1 {
        findings.push(BudgetFinding::CapsDiffer { caps });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CAP: i64 = 3000;

    fn proposed(amount: i64) -> Value {
        json!({"kind": "PROPOSED", "budget": {"id": "order-1", "amount": amount}})
    }

    fn record(amount: i64, counted: &[(&str, i64)], cap: Option<i64>) -> Value {
        let counted: Vec<Counted> = counted
            .iter()
            .map(|(e, a)| Counted {
                effect_id: (*e).to_owned(),
                amount: *a,
            })
            .collect();
        let total = total_of(&counted, amount).unwrap_or(i64::MAX);
        json!({"id": "order-1", "cap": cap, "amount": amount, "counted": counted, "total": total})
    }

    fn dispatched(amount: i64, counted: &[(&str, i64)]) -> Value {
        json!({"kind": "DISPATCHED", "budget": record(amount, counted, Some(CAP))})
    }

    fn over_budget(amount: i64, counted: &[(&str, i64)]) -> Value {
        json!({"kind": "REFUSED", "code": OVER_BUDGET, "reason": "r.", "budget": record(amount, counted, Some(CAP))})
    }

    fn committed() -> Value {
        json!({"kind": "COMMITTED", "via": "send"})
    }

    fn check(effects: &[(&str, Vec<Value>)]) -> Vec<BudgetFinding> {
        let given: Vec<EffectEntries<'_>> = effects
            .iter()
            .map(|(e, entries)| EffectEntries {
                effect_id: e,
                entries,
            })
            .collect();
        check_budget("order-1", &given)
    }

    fn codes(f: &[BudgetFinding]) -> Vec<&'static str> {
        f.iter().map(BudgetFinding::code).collect()
    }

    #[test]
    fn a_resend_is_an_admission_its_recheck_must_justify() {
        let resent = |cap: i64| {
            json!({"kind": "COMMITTED", "via": "retry-idempotent",
                "rechecked": {"budget": record(2000, &[], Some(cap))}})
        };
        let ok = check(&[(
            "a",
            vec![proposed(2000), dispatched(2000, &[]), resent(CAP)],
        )]);
        assert!(ok.is_empty(), "{ok:?}");
        // The cap had been lowered: the re-check says over, yet it resent.
        let over = check(&[(
            "a",
            vec![proposed(2000), dispatched(2000, &[]), resent(1000)],
        )]);
        assert!(
            codes(&over).contains(&"budget_admitted_over_cap"),
            "{over:?}"
        );
        // No re-check recorded for a resend of a budgeted effect.
        let bare = json!({"kind": "COMMITTED", "via": "recovery-reapply"});
        let none = check(&[("a", vec![proposed(2000), dispatched(2000, &[]), bare])]);
        assert!(
            codes(&none).contains(&"budget_record_malformed"),
            "{none:?}"
        );
    }

    #[test]
    fn a_cycle_of_counts_has_no_last_admission() {
        // Three holders of 1000 under a cap of 2000, each counting one other: every pair is
        // covered and every total is within the cap, yet 3000 holds.
        let d = |amount: i64, counted: &[(&str, i64)]| json!({"kind": "DISPATCHED", "budget": record(amount, counted, Some(2000))});
        let found = check(&[
            (
                "a",
                vec![proposed(1000), d(1000, &[("b", 1000)]), committed()],
            ),
            (
                "b",
                vec![proposed(1000), d(1000, &[("c", 1000)]), committed()],
            ),
            (
                "c",
                vec![proposed(1000), d(1000, &[("a", 1000)]), committed()],
            ),
        ]);
        assert_eq!(codes(&found), ["budget_no_last_admission"], "{found:?}");
        // Genuine order a, b, c: c counted both.
        let found = check(&[
            ("a", vec![proposed(1000), d(1000, &[]), committed()]),
            (
                "b",
                vec![proposed(1000), d(1000, &[("a", 1000)]), committed()],
            ),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn an_admission_against_another_budget_is_not_dropped() {
        let elsewhere = json!({"kind": "DISPATCHED", "budget": {"id": "order-9", "cap": CAP, "amount": 2000, "counted": [], "total": 2000}});
        let found = check(&[
            ("a", vec![proposed(2000), elsewhere, committed()]),
            (
                "b",
                vec![proposed(2000), dispatched(2000, &[]), committed()],
            ),
        ]);
        assert!(
            codes(&found).contains(&"budget_record_malformed"),
            "{found:?}"
        );
    }

    #[test]
    fn negative_amounts_are_out_of_range() {
        let found = check(&[
            (
                "a",
                vec![proposed(-1000), dispatched(-1000, &[]), committed()],
            ),
            (
                "b",
                vec![
                    proposed(1500),
                    dispatched(1500, &[("a", -1000)]),
                    committed(),
                ],
            ),
        ]);
        assert!(codes(&found).contains(&"budget_out_of_range"), "{found:?}");
    }

    /// Two refunds of 2000 under a cap of 3000: the first admitted, the second refused having
    /// counted the first.
    fn two_refunds() -> Vec<(&'static str, Vec<Value>)> {
        vec![
            (
                "a",
                vec![proposed(2000), dispatched(2000, &[]), committed()],
            ),
            ("b", vec![proposed(2000), over_budget(2000, &[("a", 2000)])]),
        ]
    }

    #[test]
    fn admissions_that_follow_the_rule_have_no_findings_in_any_order() {
        let mut effects = two_refunds();
        assert_eq!(check(&effects), vec![]);
        effects.reverse();
        assert_eq!(check(&effects), vec![]);
    }

    #[test]
    fn a_total_that_is_not_the_counted_amounts_plus_its_own_is_found() {
        let mut effects = two_refunds();
        effects[1].1[1]["budget"]["total"] = json!(3500);
        assert_eq!(codes(&check(&effects)), ["budget_total_mismatch"]);
    }

    #[test]
    fn an_admission_over_the_cap_is_found() {
        let mut effects = two_refunds();
        effects[1].1[1] = dispatched(2000, &[("a", 2000)]);
        assert_eq!(codes(&check(&effects)), ["budget_admitted_over_cap"]);
    }

    #[test]
    fn an_admission_under_an_unknown_cap_is_found_and_a_refusal_under_one_is_not() {
        let mut effects = two_refunds();
        effects[0].1[1]["budget"]["cap"] = Value::Null;
        assert_eq!(codes(&check(&effects)), ["budget_admitted_over_cap"]);
        let mut effects = two_refunds();
        effects[1].1[1]["budget"]["cap"] = Value::Null;
        assert_eq!(check(&effects), vec![]);
    }

    #[test]
    fn a_refusal_within_the_cap_is_found() {
        let mut effects = two_refunds();
        effects[1].1 = vec![proposed(1000), over_budget(1000, &[("a", 2000)])];
        assert_eq!(codes(&check(&effects)), ["budget_refused_within_cap"]);
    }

    #[test]
    fn an_admission_that_counts_itself_or_one_effect_twice_is_found() {
        let mut effects = two_refunds();
        effects[0].1[1] = dispatched(500, &[("a", 500)]);
        effects[0].1[0] = proposed(500);
        effects[1].1 = vec![proposed(2500), over_budget(2500, &[("a", 500), ("a", 500)])];
        let found = check(&effects);
        assert_eq!(
            codes(&found),
            ["budget_counted_twice", "budget_counted_twice"],
            "{found:?}"
        );
        assert!(found[0].to_string().contains("as well as its own amount"));
        assert!(found[1].to_string().contains("more than once"));
    }

    #[test]
    fn a_counted_amount_other_than_the_counted_effects_proposal_is_found() {
        let mut effects = two_refunds();
        effects[1].1[1] = over_budget(2000, &[("a", 1500)]);
        let found = check(&effects);
        assert!(found.contains(&BudgetFinding::AmountMismatch {
            effect_id: "b".into(),
            entry: 1,
            counted: "a".into(),
            recorded: 1500,
            proposed: Some(2000),
        }));
        assert_eq!(codes(&found), ["budget_amount_mismatch"]);
    }

    #[test]
    fn an_admission_of_an_amount_other_than_its_own_proposal_is_found() {
        let mut effects = two_refunds();
        effects[0].1[1] = dispatched(1000, &[]);
        assert_eq!(codes(&check(&effects)), ["budget_amount_mismatch"]);
    }

    #[test]
    fn a_counted_effect_whose_entries_are_not_given_is_taken_at_its_word() {
        let effects = vec![("b", vec![proposed(2000), over_budget(2000, &[("a", 2000)])])];
        assert_eq!(check(&effects), vec![]);
    }

    #[test]
    fn two_holders_where_neither_counted_the_other_are_found() {
        let effects = vec![
            (
                "a",
                vec![proposed(1000), dispatched(1000, &[]), committed()],
            ),
            ("b", vec![proposed(1000), dispatched(1000, &[])]),
            (
                "c",
                vec![proposed(500), dispatched(500, &[("a", 1000), ("b", 1000)])],
            ),
        ];
        assert_eq!(
            check(&effects),
            vec![BudgetFinding::Unseen {
                first: "a".into(),
                second: "b".into()
            }]
        );
    }

    #[test]
    fn a_reservation_released_by_a_refusal_needs_no_one_to_have_seen_it() {
        let released = json!({"kind": "REFUSED", "code": "lease_at_recovery", "reason": "r.", "resolves": true});
        let effects = vec![
            (
                "a",
                vec![proposed(1000), dispatched(1000, &[]), committed()],
            ),
            ("b", vec![proposed(1000), dispatched(1000, &[]), released]),
        ];
        assert_eq!(check(&effects), vec![]);
    }

    #[test]
    fn a_redispatch_must_count_the_others_again() {
        let released = json!({"kind": "REFUSED", "code": "stale_premise_at_recovery", "reason": "r.", "resolves": true});
        let effects = vec![
            (
                "a",
                vec![proposed(1000), dispatched(1000, &[]), committed()],
            ),
            // b's first admission saw a; its second, after its reservation was released, did not.
            (
                "b",
                vec![
                    proposed(1000),
                    dispatched(1000, &[("a", 1000)]),
                    released,
                    dispatched(1000, &[]),
                ],
            ),
        ];
        assert_eq!(codes(&check(&effects)), ["budget_unseen"]);
    }

    #[test]
    fn different_caps_are_said_but_are_no_violation() {
        let mut effects = two_refunds();
        effects[1].1[1] = json!({"kind": "REFUSED", "code": OVER_BUDGET, "reason": "r.", "resolves": true,
            "budget": record(2000, &[("a", 2000)], Some(1000))});
        let found = check(&effects);
        assert_eq!(
            found,
            vec![BudgetFinding::CapsDiffer {
                caps: vec![1000, 3000]
            }]
        );
        assert!(!found[0].is_violation());
        assert!(found[0].to_string().contains("1000, 3000"));
    }

    #[test]
    fn a_dispatch_of_a_budgeted_proposal_without_a_record_is_found() {
        let mut effects = two_refunds();
        effects[0].1[1] = json!({"kind": "DISPATCHED"});
        effects[1].1[1] = over_budget(2000, &[("a", 2000)]);
        assert_eq!(codes(&check(&effects)), ["budget_record_malformed"]);
        effects[0].1[1] = json!({"kind": "DISPATCHED", "budget": {"id": "order-1"}});
        assert_eq!(codes(&check(&effects)), ["budget_record_malformed"]);
    }

    #[test]
    fn entries_of_other_budgets_are_ignored() {
        let mut effects = two_refunds();
        effects[1].1[1]["budget"]["id"] = json!("order-2");
        effects[1].1[1]["budget"]["total"] = json!(1);
        effects[1].1[0]["budget"]["id"] = json!("order-2");
        assert_eq!(check(&effects), vec![]);
    }

    #[test]
    fn totals_out_of_the_exact_range_are_none() {
        let big = Counted {
            effect_id: "a".into(),
            amount: crate::canonical::MAX_SAFE_INTEGER,
        };
        assert_eq!(
            total_of(std::slice::from_ref(&big), 0),
            Some(crate::canonical::MAX_SAFE_INTEGER)
        );
        assert_eq!(total_of(&[big], 1), None);
        assert!(admits(Some(5), 5) && !admits(Some(5), 6) && !admits(None, 0));
    }
}
