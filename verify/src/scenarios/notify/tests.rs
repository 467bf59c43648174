use super::*;
use crate::contract::PlanError;
use crate::scenarios::pr_merge::{TicketRecord, WorkerExit};
use serde_json::json;

const CASE: &str = "notify-0001";
const REFUND: &str = "re_1";

fn msg(file: &str, id: Option<&str>) -> Message {
    Message {
        file: file.into(),
        message_id: id.map(String::from),
    }
}

/// A cell of `column` killed after its send, with `outage` made and `status` answered; the
/// mailbox held `before` after the kill and `delivered` at the end.
fn cell(
    column: &str,
    outage: &str,
    status: &str,
    before: Vec<Message>,
    delivered: Vec<Message>,
) -> Cell {
    Cell {
        planned: Planned {
            crash_point: "after_send".into(),
            outage: outage.into(),
            column: column.into(),
            repeat: 0,
        },
        case: CASE.into(),
        refund: REFUND.into(),
        truth: MailTruth {
            before_outage: before,
            delivered,
            refund_status: if outage == "refund_failed" {
                "failed"
            } else {
                "succeeded"
            }
            .into(),
            approval_revoked: outage == "approval_revoked",
        },
        ticket: TicketRecord {
            status: status.into(),
            effect_id: None,
            journal_kinds: None,
            receipt: None,
            killed_at: Some("after_send".into()),
            first_exit: Some(WorkerExit {
                code: None,
                signal: Some(9),
                at: Some("after_send".into()),
            }),
        },
        harness_error: None,
        worker_output: None,
        judgement: None,
    }
}

fn judged(c: &Cell) -> Judgement {
    judge(c).unwrap_or_else(|f| panic!("{f:?}"))
}

#[test]
fn one_email_is_wanted_without_an_outage_and_a_second_one_is_a_violation() {
    let one = vec![msg("1", None)];
    let j = judged(&cell("no_check", "none", SENT, one.clone(), one.clone()));
    assert_eq!((j.want, j.delivered, j.invariant_held), (1, 1, true));
    let two = vec![msg("1", None), msg("2", None)];
    let j = judged(&cell("no_check", "none", SENT, one, two));
    assert_eq!((j.want, j.delivered, j.invariant_held), (1, 2, false));
    assert_eq!(j.answer, Answer::Matches);
}

#[test]
fn a_refund_failed_or_an_approval_revoked_before_the_first_email_wants_none() {
    for outage in ["refund_failed", "approval_revoked"] {
        let j = judged(&cell("hand_check", outage, REFUSED_REFUND, vec![], vec![]));
        assert_eq!(
            (j.want, j.delivered, j.invariant_held),
            (0, 0, true),
            "{outage}"
        );
        let sent = vec![msg("1", None)];
        let j = judged(&cell("no_check", outage, SENT, vec![], sent));
        assert_eq!((j.want, j.invariant_held), (0, false), "{outage}");
    }
}

#[test]
fn an_email_delivered_before_the_refund_failed_was_right_to_send_and_stays_wanted() {
    let one = vec![msg("1", None)];
    let j = judged(&cell(
        "hand_resend",
        "refund_failed",
        REFUSED_REFUND,
        one.clone(),
        one,
    ));
    assert_eq!((j.want, j.delivered, j.invariant_held), (1, 1, true));
    // The restart refused, saying not sent, while the first worker's email is in the mailbox.
    assert_eq!(j.answer, Answer::Wrong);
}

#[test]
fn a_cannot_know_answer_is_handed_to_a_person_and_never_wrong_whatever_the_mailbox_holds() {
    for status in HANDOFF_STATUSES {
        for delivered in [0, 1, 2] {
            assert_eq!(
                answer(status, delivered),
                Answer::HandedOff,
                "{status} {delivered}"
            );
        }
    }
    // The handoff is apart from the invariant: a missing email is still missing.
    let j = judged(&cell("interlock", "none", "AMBIGUOUS", vec![], vec![]));
    assert_eq!(j.answer, Answer::HandedOff);
    assert!(!j.invariant_held);
}

#[test]
fn any_other_answer_must_agree_with_the_mailbox() {
    assert_eq!(answer(SENT, 1), Answer::Matches);
    assert_eq!(answer(SENT, 0), Answer::Wrong);
    assert_eq!(answer("COMMITTED", 1), Answer::Matches);
    assert_eq!(answer("COMMITTED", 0), Answer::Wrong);
    assert_eq!(answer(REFUSED_APPROVAL, 0), Answer::Matches);
    assert_eq!(answer(REFUSED_APPROVAL, 1), Answer::Wrong);
    assert_eq!(answer("REFUSED:lease", 1), Answer::Wrong);
    // A restart that failed, and the gate's IN_FLIGHT, give no answer: neither right nor wrong.
    for status in UNRESOLVED_STATUSES {
        for delivered in [0, 1] {
            assert_eq!(answer(status, delivered), Answer::Unresolved, "{status}");
        }
    }
}

#[test]
fn the_planned_outage_and_no_other_shows_in_the_case_and_the_kill_is_the_planned_one() {
    let mut c = cell("no_check", "none", SENT, vec![], vec![]);
    c.truth.refund_status = "failed".into();
    assert!(judge(&c).is_err());
    let mut c = cell("no_check", "refund_failed", SENT, vec![], vec![]);
    c.truth.refund_status = "succeeded".into();
    assert!(judge(&c).is_err());
    let mut c = cell("no_check", "none", SENT, vec![], vec![]);
    c.truth.approval_revoked = true;
    assert!(judge(&c).is_err());
    let mut c = cell("no_check", "none", SENT, vec![], vec![]);
    c.truth.refund_status = "pending".into();
    assert!(judge(&c).is_err());
    let mut c = cell("no_check", "none", SENT, vec![], vec![]);
    c.ticket.killed_at = Some("before_send".into());
    assert!(judge(&c).is_err());
}

#[test]
fn a_message_delivered_before_the_outage_cannot_vanish_from_the_mailbox() {
    let c = cell("no_check", "none", SENT, vec![msg("1", None)], vec![]);
    let findings = judge(&c).err().unwrap_or_default();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].path, "truth.before_outage[0]");
}

/// A gated ticket whose receipt dispatched under hash `h` an effect naming `case` and `refund`.
fn gated(status: &str, case: &str, refund: &str, h: &str) -> TicketRecord {
    let mut t = cell("interlock", "none", status, vec![], vec![]).ticket;
    let effect = json!({ "case": case, "refund": refund, "to": "customer@interlock.test" });
    t.receipt = Some(crate::entry::ReceiptBundle {
        format: crate::entry::RECEIPT_FORMAT.into(),
        effect_id: "e".repeat(64),
        entries: vec![
            json!({ "kind": "PROPOSED", "effect": effect }),
            json!({ "kind": "AUTHORIZED" }),
            json!({ "kind": "DISPATCHED", "effect": effect, "hash": h }),
            json!({ "kind": "AMBIGUOUS" }),
        ],
        head: None,
    });
    t
}

#[test]
fn a_gated_receipt_is_bound_to_its_case_its_refund_and_the_emails_it_sent() {
    let h = "a".repeat(64);
    let anchored = vec![msg("1", Some(&gate_message_id(&h, CASE)))];
    let mut c = cell("interlock", "none", "AMBIGUOUS", anchored.clone(), anchored);
    c.ticket = gated("AMBIGUOUS", CASE, REFUND, &h);
    assert!(receipt_findings(&c).is_empty());
    let j = judged(&c);
    assert_eq!((j.delivered, j.answer), (1, Answer::HandedOff));
    // Another case's or another refund's receipt: each entry with an effect is named.
    c.ticket = gated("AMBIGUOUS", "notify-0002", REFUND, &h);
    let paths: Vec<String> = receipt_findings(&c).into_iter().map(|f| f.path).collect();
    assert_eq!(
        paths,
        [
            "ticket.receipt.entries[0].effect.case",
            "ticket.receipt.entries[2].effect.case",
        ]
    );
    c.ticket = gated("AMBIGUOUS", CASE, "re_2", &h);
    assert_eq!(receipt_findings(&c).len(), 2);
    // An email of the case that no dispatch of the receipt sent.
    c.ticket = gated("AMBIGUOUS", CASE, REFUND, &h);
    c.truth
        .delivered
        .push(msg("2", Some("<other@interlock.test>")));
    let paths: Vec<String> = receipt_findings(&c).into_iter().map(|f| f.path).collect();
    assert_eq!(paths, ["truth.delivered[1].message_id"]);
    assert!(judge(&c).is_err());
}

#[test]
fn the_summary_counts_emails_violations_wrong_answers_and_what_each_handoff_found() {
    let one = vec![msg("1", None)];
    let cells = [
        cell(
            "no_check",
            "none",
            SENT,
            one.clone(),
            vec![msg("1", None), msg("2", None)],
        ),
        cell("hand_check", "none", ESCALATED, one.clone(), one.clone()),
        cell(
            "hand_check",
            "refund_failed",
            REFUSED_REFUND,
            vec![],
            vec![],
        ),
        cell(
            "hand_resend",
            "refund_failed",
            REFUSED_REFUND,
            one.clone(),
            one,
        ),
    ];
    let judgements: Vec<Judgement> = cells.iter().map(judged).collect();
    let pairs: Vec<(&Cell, &Judgement)> = cells.iter().zip(&judgements).collect();
    let s = summarize(&pairs);
    let no_check = &s["no_check"];
    assert_eq!(
        (
            no_check.emails_sent,
            no_check.emails_wanted,
            no_check.over,
            no_check.held
        ),
        (2, 1, 1, 0)
    );
    let hand = &s["hand_check"];
    assert_eq!(
        (hand.judged, hand.held, hand.handoffs, hand.wrong_answers),
        (2, 2, 1, 0)
    );
    assert_eq!(
        hand.handed_off,
        [Handoff {
            crash_point: "after_send".into(),
            outage: "none".into(),
            repeat: 0,
            status: ESCALATED.into(),
            delivered: 1,
            want: 1,
        }]
    );
    assert_eq!(s["hand_resend"].wrong_answers, 1);
}

#[test]
fn the_default_plan_has_every_crash_point_outage_and_column_and_refuses_unknown_names() {
    let p = plan(&Params::default(), usize::MAX).unwrap_or_default();
    assert_eq!(p.len(), 2 * 3 * 4);
    let mut bad = Params::default();
    bad.outages.push("smtp_down".into());
    assert!(plan(&bad, usize::MAX).is_err_and(|e| e.to_string().contains("outages[3]")));
    assert_eq!(
        plan(&Params::default(), 23),
        Err(PlanError::TooLarge { at_most: 23 })
    );
}
