//! The billing_credit scenario's rules, stated once: the premise arithmetic, the want rule, and the
//! judgement of a cell (DESIGN §4.2 and §4.6).
//!
//! The runner uses these functions to judge a cell from what it read back from Stripe, and `verify`
//! uses the same functions to re-derive every judgement from the raw data in a results file.

use crate::results::{Approval, BalanceTxnTruth, CreditNoteTruth, GroundTruth, OutageRecord, Want};
use serde_json::Value;
use sha2::Digest as _;

/// The effect id of the billing_credit case `case_id`: lowercase hex SHA-256 of the canonical JSON
/// of the request id `"goodwill-credit:<case_id>"`.
pub fn billing_credit_effect_id(case_id: &str) -> String {
    let request = Value::String(request_id(case_id));
    let bytes = crate::canonical::to_vec(&request).unwrap_or_default();
    hex::encode(sha2::Sha256::digest(&bytes))
}

/// The approved request of a billing_credit case: `goodwill-credit:<case_id>`.
pub fn request_id(case_id: &str) -> String {
    format!("goodwill-credit:{case_id}")
}

/// Where every case's test clock starts unless a run asks for another (`runner --clock-start`),
/// Unix seconds: 2026-09-13T22:40:00Z, the `generated` time of the original implementation's
/// published run on Stripe test mode, so a run's first billing period has the reference's length
/// (30 days). Never today's date: a run and every replay have one test-clock timeline (month
/// lengths, proration days) whatever day they run on. Stripe accepts a clock frozen in the past.
pub const DEFAULT_CLOCK_START: i64 = 1_789_339_200;

/// Final statuses that mean "the credit went out" (or was already out).
pub const SENT_STATUSES: [&str; 8] = [
    "CREDITED",
    "REPLAYED_BY_STRIPE",
    "FOUND_BY_LOOKUP",
    "COMMITTED",
    "COMMITTED_BY_RETRY",
    "COMMITTED_ON_QUERY",
    "REAPPLIED_AFTER_QUERY",
    "DUPLICATE_IGNORED",
];

/// The status a cell gets when the harness could not run it as designed.
pub const HARNESS_ERROR: &str = "HARNESS_ERROR";

/// Whether a final status says the credit went out.
pub fn status_says_sent(status: &str) -> bool {
    SENT_STATUSES.contains(&status)
}

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

/// Whether the want rule's same-second tie-break decides this case: billing's first compensation
/// and the case's first credit share one test-clock second. The runner advances the clock one
/// second after the outage, so no default cell should ever be decided this way; the check says
/// so from the data.
pub fn decided_by_tie(truth: &GroundTruth, incident: &str) -> bool {
    matches!(
        (first_compensation(truth, incident), first_judged_credit(truth)),
        (Some(comp), Some(first)) if comp == first
    )
}

/// The want rule: this case may credit once (`approved_cents`), unless billing compensated this
/// incident (an issued credit note tagged with it) before this case's first credit, or at all if
/// the case never credited; then zero. The case's credits are the judged ones
/// ([`is_judged_credit`]): every credit billing did not make, whatever its tags.
///
/// Times are Stripe `created` values in test-clock seconds. A compensation created in the same
/// second as the case's first credit counts as before it: the clock cannot order them, and the
/// invariant must not be judged held on a guess ([`decided_by_tie`] says when that happened; the
/// runner's one-second clock advance after the outage keeps it out of the default matrix).
pub fn want(truth: &GroundTruth, _case_id: &str, incident: &str, approved_cents: i64) -> Want {
    let compensated_first = match (
        first_compensation(truth, incident),
        first_judged_credit(truth),
    ) {
        (Some(comp), Some(first)) => comp <= first,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if compensated_first {
        Want { count: 0, cents: 0 }
    } else {
        Want {
            count: 1,
            cents: approved_cents,
        }
    }
}

/// The test-clock instant (seconds) at which the approval was revoked, when its `revoked` record
/// carries one (`{"by": ..., "clock_time": T}`, as the runner writes it).
pub fn revoked_at(approval: &Approval) -> Option<i64> {
    approval
        .revoked
        .as_ref()
        .and_then(|r| r.get("clock_time"))
        .and_then(Value::as_i64)
}

/// The want rule with the approval's revocation (DESIGN §4.6): as [`want`], and no case credit may
/// be created after the revocation. A credit created at or before the revocation's instant stands;
/// with none, the revoked approval allows nothing. The runner advances the clock one second past
/// the revocation, so "after" is an order Stripe's `created` shows. Without a revocation instant
/// it is [`want`] exactly.
pub fn want_under_approval(
    truth: &GroundTruth,
    case_id: &str,
    incident: &str,
    approval: &Approval,
) -> Want {
    let w = want(truth, case_id, incident, approval.max_cents);
    match revoked_at(approval) {
        Some(at) if w.count > 0 && first_judged_credit(truth).is_none_or(|first| first > at) => {
            Want { count: 0, cents: 0 }
        }
        _ => w,
    }
}

/// The want rule for a cell or trial whose decision proposed `decided` cents (`None` when no
/// decision was saved): [`want_under_approval`], and a decision the approval never covered (not
/// `0 < decided <= max_cents`) may not be sent at all, so it allows nothing. A covered decision
/// allows one credit of the decided amount.
pub fn want_for_decision(
    truth: &GroundTruth,
    case_id: &str,
    incident: &str,
    approval: &Approval,
    decided: Option<i64>,
) -> Want {
    let w = want_under_approval(truth, case_id, incident, approval);
    match decided {
        Some(amount) if amount <= 0 || amount > approval.max_cents => Want { count: 0, cents: 0 },
        Some(amount) if w.count > 0 => Want {
            count: w.count,
            cents: amount,
        },
        _ => w,
    }
}

/// Whether a decision of `decided` cents is one the approval covers (`0 < decided <= max_cents`).
pub fn approval_covers(approval: &Approval, decided: i64) -> bool {
    decided > 0 && decided <= approval.max_cents
}

/// Why an outage record does not fit the outage named by the cell's label (DESIGN §4.5), or `None`
/// when it fits or the outage is not one of the four this rule knows.
pub fn outage_misfit(outage: &str, record: &OutageRecord, incident: &str) -> Option<&'static str> {
    let note_incident = record.credit_note_incident.as_deref();
    match outage {
        "renewal" if record.credit_note.is_some() || record.downgraded_to_price.is_some() => {
            Some("a renewal outage issues no credit note and changes no price")
        }
        "billing_credit" if record.credit_note.is_none() || note_incident != Some(incident) => {
            Some("a billing_credit outage issues a credit note for the case's own incident")
        }
        "unrelated_credit" if record.credit_note.is_none() || note_incident == Some(incident) => {
            Some("an unrelated_credit outage issues a credit note for another incident")
        }
        "proration" if record.downgraded_to_price.is_none() || record.credit_note.is_some() => {
            Some("a proration outage downgrades the price and issues no credit note")
        }
        _ => None,
    }
}

/// The invariant: this case's credits in Stripe are exactly what the want rule allows.
pub fn invariant_held(truth: &GroundTruth, want: Want) -> bool {
    truth.case_credit_count == want.count && truth.case_credit_cents == want.cents
}

/// The answer matches Stripe when the final status says "sent" exactly when a case credit exists.
pub fn answer_matches(outcome: &str, truth: &GroundTruth) -> bool {
    status_says_sent(outcome) == (truth.case_credit_count > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensation_sums_never_wrap() {
        let note = |id: &str, amount: i64| CreditNoteTruth {
            id: id.into(),
            amount,
            status: "issued".into(),
            incident: None,
            created: 1,
            invoice: "in_1".into(),
        };
        let notes = [
            note("cn_1", i64::MAX),
            note("cn_2", i64::MAX),
            note("cn_3", 2),
        ];
        let exact = compensation_by_others_exact(&notes, &[], "case-1", None);
        assert_eq!(exact, 2 * i128::from(i64::MAX) + 2);
        // The 64-bit view saturates, so it can never wrap around to a small number.
        assert_eq!(
            compensation_by_others(&notes, &[], "case-1", None),
            i64::MAX
        );
    }

    fn txn(
        id: &str,
        kind: &str,
        amount: i64,
        created: i64,
        case: Option<&str>,
        inc: Option<&str>,
    ) -> BalanceTxnTruth {
        BalanceTxnTruth {
            id: id.into(),
            kind: kind.into(),
            amount,
            created,
            case_id: case.map(Into::into),
            incident: inc.map(Into::into),
            credit_note: None,
            invoice: None,
        }
    }

    fn note(
        id: &str,
        amount: i64,
        status: &str,
        inc: Option<&str>,
        created: i64,
    ) -> CreditNoteTruth {
        CreditNoteTruth {
            id: id.into(),
            amount,
            status: status.into(),
            incident: inc.map(Into::into),
            created,
            invoice: "in_1".into(),
        }
    }

    fn truth(txns: Vec<BalanceTxnTruth>, notes: Vec<CreditNoteTruth>, case: &str) -> GroundTruth {
        let _ = case;
        let own: Vec<_> = txns.iter().filter(|t| is_judged_credit(t)).collect();
        GroundTruth {
            case_credits: own
                .iter()
                .map(|t| crate::results::CaseCredit {
                    id: t.id.clone(),
                    amount: t.amount,
                    created: t.created,
                    effect_id: None,
                    dispatch: None,
                })
                .collect(),
            case_credit_count: own.len() as u32,
            case_credit_cents: own.iter().map(|t| -t.amount).sum(),
            credit_notes: notes,
            balance_transactions: txns,
            invoices: vec![],
            customer_balance: 0,
            compensation_by_others: 0,
            incident_compensation: 0,
        }
    }

    /// The mixed fixture of the original's offline test: own credit, a renewal consuming it, a
    /// credit-note transaction, other adjustments with and without incidents, a debit, and notes.
    #[test]
    fn scoped_and_unscoped_sums_exclude_own_credits() {
        let txns = vec![
            txn("own", "adjustment", -1000, 1, Some("case-1"), Some("INC-1")),
            txn("renewal", "applied_to_invoice", 1000, 2, None, None),
            txn("cn", "credit_note", -1000, 3, None, Some("INC-1")),
            txn("a1", "adjustment", -500, 4, Some("case-9"), None),
            txn("a2", "adjustment", -300, 5, Some("case-8"), Some("INC-1")),
            txn("debit", "adjustment", 700, 6, Some("case-7"), Some("INC-1")),
        ];
        let notes = vec![
            note("n1", 1000, "issued", Some("INC-1"), 7),
            note("n2", 400, "void", Some("INC-1"), 8),
            note("n3", 250, "issued", Some("INC-2"), 9),
        ];
        assert_eq!(compensation_by_others(&notes, &txns, "case-1", None), 2050);
        assert_eq!(
            compensation_by_others(&notes, &txns, "case-1", Some("INC-1")),
            1300
        );
        assert_eq!(
            compensation_by_others(&notes, &txns, "case-1", Some("INC-3")),
            0
        );
    }

    #[test]
    fn want_is_one_credit_when_nobody_else_compensated_the_incident() {
        let t = truth(
            vec![txn("own", "adjustment", -1000, 100, Some("c"), None)],
            vec![],
            "c",
        );
        assert_eq!(
            want(&t, "c", "INC-1", 1000),
            Want {
                count: 1,
                cents: 1000
            }
        );
        let never = truth(vec![], vec![], "c");
        assert_eq!(
            want(&never, "c", "INC-1", 1000),
            Want {
                count: 1,
                cents: 1000
            }
        );
    }

    #[test]
    fn want_is_zero_when_the_incident_was_compensated_before_or_without_our_credit() {
        let before = truth(
            vec![txn("own", "adjustment", -1000, 200, Some("c"), None)],
            vec![note("n", 1000, "issued", Some("INC-1"), 150)],
            "c",
        );
        assert_eq!(
            want(&before, "c", "INC-1", 1000),
            Want { count: 0, cents: 0 }
        );
        let same_second = truth(
            vec![txn("own", "adjustment", -1000, 150, Some("c"), None)],
            vec![note("n", 1000, "issued", Some("INC-1"), 150)],
            "c",
        );
        assert_eq!(want(&same_second, "c", "INC-1", 1000).count, 0);
        let no_credit = truth(
            vec![],
            vec![note("n", 1000, "issued", Some("INC-1"), 150)],
            "c",
        );
        assert_eq!(want(&no_credit, "c", "INC-1", 1000).count, 0);
        let by_adjustment = truth(
            vec![txn(
                "other",
                "adjustment",
                -500,
                10,
                Some("c2"),
                Some("INC-1"),
            )],
            vec![],
            "c",
        );
        // Another tag on a credit to this case's customer does not make it somebody else's
        // compensation: the judge counts it as the case's credit.
        assert_eq!(want(&by_adjustment, "c", "INC-1", 1000).count, 1);
        assert_eq!(by_adjustment.case_credit_count, 1);
    }

    #[test]
    fn the_judge_counts_every_credit_billing_did_not_make_whatever_its_tags() {
        let t = truth(
            vec![
                txn("untagged", "adjustment", -1000, 100, None, None),
                txn("mangled", "adjustment", -1000, 101, Some("case-x"), None),
                txn("debit", "adjustment", 500, 102, Some("c"), None),
                txn("cn", "credit_note", -1000, 103, None, Some("INC-1")),
                txn("renewal", "applied_to_invoice", 2000, 104, None, None),
            ],
            vec![note("n", 1000, "issued", Some("INC-1"), 103)],
            "c",
        );
        assert_eq!(t.case_credit_count, 2);
        assert_eq!(first_judged_credit(&t), Some(100));
        assert_eq!(want(&t, "c", "INC-1", 1000).count, 1);
        assert!(!invariant_held(&t, want(&t, "c", "INC-1", 1000)));
    }

    #[test]
    fn no_credit_may_be_created_after_the_revocation() {
        let approval = |revoked: Option<serde_json::Value>| Approval {
            id: "approval-c".into(),
            approver: "support-lead".into(),
            max_cents: 1000,
            revoked,
        };
        let revoked = approval(Some(
            serde_json::json!({"by": "support-lead", "clock_time": 200}),
        ));
        let before = truth(
            vec![txn("own", "adjustment", -1000, 199, None, None)],
            vec![],
            "c",
        );
        assert_eq!(
            want_under_approval(&before, "c", "INC-1", &revoked).count,
            1
        );
        let after = truth(
            vec![txn("own", "adjustment", -1000, 201, None, None)],
            vec![],
            "c",
        );
        assert_eq!(want_under_approval(&after, "c", "INC-1", &revoked).count, 0);
        let none = truth(vec![], vec![], "c");
        assert_eq!(want_under_approval(&none, "c", "INC-1", &revoked).count, 0);
        assert_eq!(
            want_under_approval(&after, "c", "INC-1", &approval(None)).count,
            1
        );
        assert_eq!(revoked_at(&revoked), Some(200));
    }

    #[test]
    fn a_decision_the_approval_never_covered_may_not_be_sent() {
        let approval = Approval {
            id: "approval-c".into(),
            approver: "support-lead".into(),
            max_cents: 1000,
            revoked: None,
        };
        let sent = truth(
            vec![txn("own", "adjustment", -2000, 10, None, None)],
            vec![],
            "c",
        );
        let w = want_for_decision(&sent, "c", "INC-1", &approval, Some(2000));
        assert_eq!(w, Want { count: 0, cents: 0 });
        assert!(!invariant_held(&sent, w));
        let refused = truth(vec![], vec![], "c");
        assert!(invariant_held(
            &refused,
            want_for_decision(&refused, "c", "INC-1", &approval, Some(2000))
        ));
        let half = truth(
            vec![txn("own", "adjustment", -500, 10, None, None)],
            vec![],
            "c",
        );
        assert!(invariant_held(
            &half,
            want_for_decision(&half, "c", "INC-1", &approval, Some(500))
        ));
        assert_eq!(
            want_for_decision(&refused, "c", "INC-1", &approval, None).cents,
            1000
        );
    }

    #[test]
    fn a_tie_is_reported_and_a_second_apart_is_not() {
        let tie = truth(
            vec![txn("own", "adjustment", -1000, 150, Some("c"), None)],
            vec![note("n", 1000, "issued", Some("INC-1"), 150)],
            "c",
        );
        assert!(decided_by_tie(&tie, "INC-1"));
        let apart = truth(
            vec![txn("own", "adjustment", -1000, 151, Some("c"), None)],
            vec![note("n", 1000, "issued", Some("INC-1"), 150)],
            "c",
        );
        assert!(!decided_by_tie(&apart, "INC-1"));
        assert_eq!(want(&apart, "c", "INC-1", 1000).count, 0);
        assert!(!decided_by_tie(&apart, "INC-2"));
    }

    #[test]
    fn want_ignores_later_other_incident_and_void_compensation() {
        let t = truth(
            vec![txn("own", "adjustment", -1000, 100, Some("c"), None)],
            vec![
                note("later", 1000, "issued", Some("INC-1"), 500),
                note("other", 1000, "issued", Some("INC-2"), 50),
                note("void", 1000, "void", Some("INC-1"), 50),
            ],
            "c",
        );
        assert_eq!(want(&t, "c", "INC-1", 1000).count, 1);
    }

    #[test]
    fn judgement() {
        let t = truth(
            vec![txn("own", "adjustment", -1000, 100, Some("c"), None)],
            vec![],
            "c",
        );
        assert!(invariant_held(
            &t,
            Want {
                count: 1,
                cents: 1000
            }
        ));
        assert!(!invariant_held(&t, Want { count: 0, cents: 0 }));
        assert!(answer_matches("COMMITTED_BY_RETRY", &t));
        assert!(!answer_matches("AMBIGUOUS", &t));
        assert!(!answer_matches("REFUSED:stale_premise", &t));
        let none = truth(vec![], vec![], "c");
        assert!(answer_matches("REFUSED:stale_premise_at_recovery", &none));
        assert!(!answer_matches("CREDITED", &none));
    }
}
