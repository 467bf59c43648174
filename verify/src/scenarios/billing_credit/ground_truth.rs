//! What Stripe holds for a case, read the judge's way: which balance transactions are the case's
//! credits, the premise arithmetic (compensation by others), and when billing compensated.

use crate::results::{BalanceTxnTruth, CreditNoteTruth, GroundTruth};

/// Cents credited to the customer by anyone other than `case_id`, optionally only for `incident`:
/// issued credit notes (their `amount`) plus negative `adjustment` balance transactions whose
/// `metadata.case_id` is not this case (their `-amount`).
///
/// Not counted: `applied_to_invoice` (a renewal consuming the balance), `credit_note`-type
/// transactions (counted through the note), positive adjustments (debits), void notes, this case's
/// own credits, and (when scoped) anything tagged with another incident or with none.
pub fn compensation_by_others(
    credit_notes: &[CreditNoteTruth],
    balance_transactions: &[BalanceTxnTruth],
    case_id: &str,
    incident: Option<&str>,
) -> i64 {
    let exact = compensation_by_others_exact(credit_notes, balance_transactions, case_id, incident);
    i64::try_from(exact).unwrap_or(if exact < 0 { i64::MIN } else { i64::MAX })
}

/// [`compensation_by_others`] summed exactly (no wrap, no saturation: 128 bits hold any sum of
/// 64-bit amounts a file can list), for comparing with a stated 64-bit value.
pub fn compensation_by_others_exact(
    credit_notes: &[CreditNoteTruth],
    balance_transactions: &[BalanceTxnTruth],
    case_id: &str,
    incident: Option<&str>,
) -> i128 {
    let in_scope = |tag: &Option<String>| match incident {
        None => true,
        Some(want) => tag.as_deref() == Some(want),
    };
    let notes: i128 = credit_notes
        .iter()
        .filter(|n| n.status == "issued" && in_scope(&n.incident))
        .map(|n| i128::from(n.amount))
        .sum();
    let adjustments: i128 = balance_transactions
        .iter()
        .filter(|t| is_credit_by_other(t, case_id) && in_scope(&t.incident))
        .map(|t| -i128::from(t.amount))
        .sum();
    notes + adjustments
}

fn is_credit_by_other(t: &BalanceTxnTruth, case_id: &str) -> bool {
    t.kind == "adjustment" && t.amount < 0 && t.case_id.as_deref() != Some(case_id)
}

/// Whether a balance transaction is tagged as one of this case's credits (`metadata.case_id`).
///
/// This is the columns' own view (hand_check looks its credit up this way, and the premise
/// excludes the case's own credits this way); the judge does not use it: see
/// [`is_judged_credit`].
pub fn is_case_credit(t: &BalanceTxnTruth, case_id: &str) -> bool {
    t.kind == "adjustment" && t.case_id.as_deref() == Some(case_id)
}

/// Whether the judge counts a balance transaction as a credit of the case: every credit to the
/// customer that billing did not make, whatever its tags say.
///
/// Billing's own movements are `credit_note` transactions (its SLA credit notes) and
/// `applied_to_invoice` (a renewal consuming the balance); a case's customer exists only for the
/// case, so every negative `adjustment` is a credit somebody sent on the case's behalf. A column
/// that drops or mangles its `metadata.case_id` is still counted.
pub fn is_judged_credit(t: &BalanceTxnTruth) -> bool {
    t.kind == "adjustment" && t.amount < 0
}

/// The first instant (test-clock seconds) at which billing compensated `incident`: the earliest
/// issued credit note tagged with it, or `None` if there is none.
pub fn first_compensation(truth: &GroundTruth, incident: &str) -> Option<i64> {
    truth
        .credit_notes
        .iter()
        .filter(|n| n.status == "issued" && n.incident.as_deref() == Some(incident))
        .map(|n| n.created)
        .min()
}

/// The first judged credit's instant (test-clock seconds), or `None` if the case never credited.
pub fn first_judged_credit(truth: &GroundTruth) -> Option<i64> {
    truth
        .balance_transactions
        .iter()
        .filter(|t| is_judged_credit(t))
        .map(|t| t.created)
        .min()
}

/// How a stated ground truth's case credits compare with what its own balance transactions give
/// (the consistency rule a matrix cell and a nemesis trial are both checked by).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseCredits<'g> {
    /// The judged credits ([`is_judged_credit`]) among the balance transactions: (id, amount,
    /// created).
    pub judged: std::collections::BTreeSet<(&'g str, i64, i64)>,
    /// `case_credits` are exactly the judged credits, each listed once.
    pub listed_are_judged: bool,
    /// `case_credit_count` is the number of listed credits.
    pub count_matches: bool,
    /// The cents the listed credits add up to, exactly.
    pub cents: i128,
    /// `case_credit_cents` is that sum.
    pub cents_match: bool,
}

impl CaseCredits<'_> {
    /// Every part of the rule holds.
    pub fn consistent(&self) -> bool {
        self.listed_are_judged && self.count_matches && self.cents_match
    }
}

/// The case-credit consistency rule: `case_credits` are the credits billing did not make, and
/// their count and cents are stated as they add up.
pub fn case_credits(gt: &GroundTruth) -> CaseCredits<'_> {
    let judged: std::collections::BTreeSet<(&str, i64, i64)> = gt
        .balance_transactions
        .iter()
        .filter(|t| is_judged_credit(t))
        .map(|t| (t.id.as_str(), t.amount, t.created))
        .collect();
    let stated: std::collections::BTreeSet<(&str, i64, i64)> = gt
        .case_credits
        .iter()
        .map(|c| (c.id.as_str(), c.amount, c.created))
        .collect();
    let cents: i128 = gt.case_credits.iter().map(|c| -i128::from(c.amount)).sum();
    CaseCredits {
        listed_are_judged: judged == stated && stated.len() == gt.case_credits.len(),
        count_matches: gt.case_credit_count as usize == gt.case_credits.len(),
        cents_match: i128::from(gt.case_credit_cents) == cents,
        judged,
        cents,
    }
}
