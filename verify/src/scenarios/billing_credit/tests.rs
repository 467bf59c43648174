//! The scenario's rules, by example.

use super::*;
use crate::results::{Approval, BalanceTxnTruth, CreditNoteTruth, GroundTruth, Want};

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

fn note(id: &str, amount: i64, status: &str, inc: Option<&str>, created: i64) -> CreditNoteTruth {
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
    let approval = |revoked: Option<crate::results::Revocation>| Approval {
        id: "approval-c".into(),
        approver: "support-lead".into(),
        max_cents: 1000,
        revoked,
    };
    let revoked = approval(Some(crate::results::Revocation {
        by: "support-lead".into(),
        clock_time: Some(200),
    }));
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

fn credits(ids: &[&str]) -> GroundTruth {
    GroundTruth {
        case_credits: ids
            .iter()
            .map(|id| crate::results::CaseCredit {
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

fn restart(step: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut v = serde_json::json!({"phase": "restart", "step": step});
    if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        m.extend(e);
    }
    v
}

fn hand_check_proves(log: &[serde_json::Value], gt: &GroundTruth) -> bool {
    let lines: Vec<crate::results::FreeForm> = log
        .iter()
        .map(crate::results::FreeForm::from_value)
        .collect();
    proof::hand_check_proof(gt, &proof::read_hand_check_log(Some(&lines), gt)).is_ok()
}

#[test]
fn the_hand_check_log_proves_only_what_stripe_agrees_with() {
    use serde_json::json;
    let decide_only = vec![json!({"phase": "decide", "step": "send"})];
    assert!(!hand_check_proves(&decide_only, &credits(&[])));
    assert!(!hand_check_proves(&[], &credits(&[])));
    let gt = credits(&[]);
    assert!(proof::hand_check_proof(&gt, &proof::read_hand_check_log(None, &gt)).is_err());

    let sent = vec![
        restart("lookup", json!({"found": null})),
        restart("send", json!({})),
        restart("sent", json!({"credit": "cbtxn_1"})),
    ];
    assert!(hand_check_proves(&sent, &credits(&["cbtxn_1"])));
    assert!(!hand_check_proves(&sent, &credits(&[])));
    assert!(!hand_check_proves(&sent, &credits(&["cbtxn_2"])));

    let found = vec![restart("lookup", json!({"found": "cbtxn_1"}))];
    assert!(hand_check_proves(&found, &credits(&["cbtxn_1"])));
    assert!(!hand_check_proves(&found, &credits(&["cbtxn_9"])));

    let refused = vec![
        restart("lookup", json!({"found": null})),
        restart("approval", json!({"approval": {}})),
        restart("premises", json!({"refused": {"was": {}, "now": {}}})),
    ];
    assert!(hand_check_proves(&refused, &credits(&[])));
    assert!(!hand_check_proves(&refused, &credits(&["cbtxn_1"])));
}
