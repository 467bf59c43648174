use super::*;
use crate::scenarios::notify::{Answer, MailTruth, Message, ESCALATED, SENT};
use crate::scenarios::pr_merge::{TicketRecord, WorkerExit};

fn params() -> Params {
    Params {
        seed: 11,
        trials: 6,
        nemeses: NEMESES.map(String::from).to_vec(),
        columns: crate::scenarios::notify::COLUMNS.map(String::from).to_vec(),
    }
}

fn msg(n: &str) -> Message {
    Message {
        file: format!("file-{n}"),
        message_id: None,
    }
}

/// A trial of `column` whose faults landed as drawn, the change made as drawn, with the
/// mailbox holding `before` then `delivered` and the last answer `status`.
fn trial(
    nemesis: &str,
    column: &str,
    draw: Draw,
    status: &str,
    before: Vec<Message>,
    delivered: Vec<Message>,
) -> Cell {
    Cell {
        planned: Planned {
            nemesis: nemesis.into(),
            column: column.into(),
            index: 0,
            draw: draw.clone(),
        },
        case: "notify-0001".into(),
        refund: "re_1".into(),
        truth: MailTruth {
            before_outage: before,
            delivered,
            refund_status: if draw.outage == "refund_failed" {
                "failed".into()
            } else {
                "succeeded".into()
            },
            approval_revoked: draw.outage == "approval_revoked",
        },
        ticket: TicketRecord {
            status: status.into(),
            effect_id: None,
            journal_kinds: None,
            receipt: None,
            killed_at: draw.kill_at.clone(),
            first_exit: draw.kill_at.as_ref().map(|k| WorkerExit {
                code: None,
                signal: Some(9),
                at: Some(k.clone()),
            }),
        },
        restart_killed_at: draw.restart_kill_at.clone(),
        after_restart_kill: draw.restart_kill_at.as_ref().map(|_| Vec::new()),
        paused_at: draw.pause_at.clone(),
        harness_error: None,
        worker_output: None,
        judgement: None,
    }
}

fn drawn(outage: &str, kill_at: Option<&str>, pause_at: Option<&str>) -> Draw {
    Draw {
        outage: outage.into(),
        kill_at: kill_at.map(String::from),
        restart_kill_at: None,
        pause_at: pause_at.map(String::from),
    }
}

fn judged(c: &Cell) -> TrialJudgement {
    judge(c).unwrap_or_else(|f| panic!("{f:?}"))
}

#[test]
fn every_draw_derives_from_the_seed_and_the_trials_place_and_stays_in_its_columns_steps() {
    let p = plan(&params(), usize::MAX).unwrap();
    assert_eq!(p.len(), 3 * 4 * 6);
    assert_eq!(p, plan(&params(), usize::MAX).unwrap());
    let other = Params {
        seed: 12,
        ..params()
    };
    assert_ne!(p, plan(&other, usize::MAX).unwrap());
    for t in &p {
        let d = &t.draw;
        let inside = |step: &Option<String>, steps: &[&str]| {
            step.as_deref().is_none_or(|s| steps.contains(&s))
        };
        assert!(inside(&d.kill_at, first_steps(&t.column)), "{t:?}");
        assert!(
            inside(&d.restart_kill_at, restart_steps(&t.column)),
            "{t:?}"
        );
        assert!(inside(&d.pause_at, pause_steps(&t.column)), "{t:?}");
        match t.nemesis.as_str() {
            "kill_at_step" => assert!(d.kill_at.is_some() && d.pause_at.is_none()),
            "kill_restart" => {
                let first = d.kill_at.as_deref().unwrap();
                assert!(RESTART_FIRST_KILLS.contains(&first), "{d:?}");
                assert!(d.restart_kill_at.is_some());
            }
            _ => assert!(d.pause_at.is_some() && CHANGES.contains(&d.outage.as_str())),
        }
    }
    // Mid-DATA is a step of every column and of every restart.
    for column in crate::scenarios::notify::COLUMNS {
        assert!(first_steps(column).contains(&MID_DATA));
        assert!(restart_steps(column).contains(&MID_DATA));
        assert!(!pause_steps(column).contains(&MID_DATA));
    }
    assert!(plan(&params(), 10).is_err());
}

#[test]
fn a_kill_that_did_not_land_where_drawn_is_counted_apart() {
    let d = drawn("none", Some("mid_data"), None);
    let mut c = trial("kill_at_step", "interlock", d, "AMBIGUOUS", vec![], vec![]);
    assert!(judged(&c).fired);
    c.ticket.killed_at = Some("before_send".into());
    let j = judged(&c);
    assert!(!j.fired);
    let s = summarize(&[(&c, &j)]);
    let row = &s["kill_at_step:interlock"];
    assert_eq!((row.judged, row.not_fired, row.within), (1, 1, 0));
    assert_eq!(row.killed_mid_data, 0);
    // A kill inside DATA is counted with what the mailbox held right after it.
    let d = drawn("none", Some("mid_data"), None);
    let gone = trial(
        "kill_at_step",
        "no_check",
        d.clone(),
        SENT,
        vec![],
        vec![msg("2")],
    );
    let kept = trial(
        "kill_at_step",
        "no_check",
        d,
        SENT,
        vec![msg("1")],
        vec![msg("1"), msg("2")],
    );
    let (jg, jk) = (judged(&gone), judged(&kept));
    let row = &summarize(&[(&gone, &jg), (&kept, &jk)])["kill_at_step:no_check"];
    assert_eq!((row.killed_mid_data, row.kept_mid_data), (2, 1));
}

#[test]
fn a_guess_that_sends_twice_is_a_violation_within_assumptions_and_a_handoff_is_never_wrong() {
    let d = drawn("none", Some("after_send"), None);
    let resend = trial(
        "kill_at_step",
        "hand_resend",
        d.clone(),
        SENT,
        vec![msg("1")],
        vec![msg("1"), msg("2")],
    );
    let j = judged(&resend);
    assert!(j.fired && j.beyond.is_none() && !j.mail.invariant_held);
    let escalated = trial(
        "kill_at_step",
        "hand_check",
        d,
        ESCALATED,
        vec![msg("1")],
        vec![msg("1")],
    );
    let k = judged(&escalated);
    assert_eq!(k.mail.answer, Answer::HandedOff);
    let s = summarize(&[(&resend, &j), (&escalated, &k)]);
    let r = &s["kill_at_step:hand_resend"];
    assert_eq!(
        (r.violations_within, r.over_within, r.wrong_within),
        (1, 1, 0)
    );
    let h = &s["kill_at_step:hand_check"];
    assert_eq!(
        (
            h.violations_within,
            h.handoffs_within,
            h.handoffs_found_sent
        ),
        (0, 1, 1)
    );
}

#[test]
fn a_change_after_a_columns_last_read_of_it_is_beyond_its_assumptions_by_one_rule() {
    // Paused after the refund was read: the hand-written columns do not read it again.
    for column in ["hand_check", "hand_resend"] {
        let d = drawn("refund_failed", None, Some("premises"));
        let c = trial("change_mid_check", column, d, SENT, vec![], vec![msg("1")]);
        assert!(judged(&c).beyond.is_some(), "{column}");
        // The approval is read after that step: its revocation is within.
        let d = drawn("approval_revoked", None, Some("premises"));
        let c = trial(
            "change_mid_check",
            column,
            d,
            "REFUSED:approval",
            vec![],
            vec![],
        );
        assert!(judged(&c).beyond.is_none(), "{column}");
    }
    // The gate checks both when it writes DISPATCHED: a change after that is beyond it.
    let d = drawn("approval_revoked", None, Some("authorized"));
    let c = trial(
        "change_mid_check",
        "interlock",
        d,
        "REFUSED",
        vec![],
        vec![],
    );
    assert!(judged(&c).beyond.is_none());
    let d = drawn("approval_revoked", None, Some("dispatched"));
    let c = trial(
        "change_mid_check",
        "interlock",
        d,
        "COMMITTED",
        vec![],
        vec![msg("1")],
    );
    let j = judged(&c);
    assert!(j.beyond.is_some() && !j.mail.invariant_held);
    // no_check reads nothing after its decision; a change while it is dead is beyond it, and
    // within every other column's.
    for column in crate::scenarios::notify::COLUMNS {
        let d = drawn("refund_failed", Some("before_send"), None);
        let c = trial("kill_at_step", column, d, "AMBIGUOUS", vec![], vec![]);
        assert_eq!(
            judged(&c).beyond.is_some(),
            column == "no_check",
            "{column}"
        );
    }
    // A change after the case's email went out changes nothing it rested on.
    let d = drawn("refund_failed", Some("after_send"), None);
    let c = trial(
        "kill_at_step",
        "no_check",
        d,
        SENT,
        vec![msg("1")],
        vec![msg("1"), msg("2")],
    );
    assert!(judged(&c).beyond.is_none());
}

#[test]
fn the_ground_truth_must_show_the_change_exactly_as_made() {
    let d = drawn("refund_failed", Some("before_send"), None);
    let mut c = trial("kill_at_step", "hand_check", d, ESCALATED, vec![], vec![]);
    assert!(judge(&c).is_ok());
    c.truth.refund_status = "succeeded".into();
    assert!(judge(&c).is_err());
    // A pause that never came made no change: the case must show none.
    let d = drawn("approval_revoked", None, Some("approval"));
    let mut c = trial(
        "change_mid_check",
        "hand_check",
        d,
        SENT,
        vec![],
        vec![msg("1")],
    );
    c.paused_at = None;
    assert!(judge(&c).is_err());
    c.truth.approval_revoked = false;
    let j = judged(&c);
    assert!(!j.fired && j.mail.invariant_held);
    // An email delivered before the change cannot vanish.
    let d = drawn("none", Some("after_send"), None);
    let c = trial(
        "kill_at_step",
        "no_check",
        d,
        SENT,
        vec![msg("1")],
        vec![msg("2")],
    );
    assert!(judge(&c).is_err());
}

#[test]
fn a_restart_killed_inside_data_is_counted_with_what_the_mailbox_held_right_after() {
    let d = Draw {
        outage: "none".into(),
        kill_at: Some("decision_saved".into()),
        restart_kill_at: Some(MID_DATA.into()),
        pause_at: None,
    };
    let mut c = trial(
        "kill_restart",
        "hand_resend",
        d,
        SENT,
        vec![],
        vec![msg("2")],
    );
    c.after_restart_kill = Some(vec![]);
    let j = judged(&c);
    let row = &summarize(&[(&c, &j)])["kill_restart:hand_resend"];
    assert_eq!((row.killed_mid_data, row.kept_mid_data), (1, 0));
    // Kept: the mailbox grew across the kill.
    c.after_restart_kill = Some(vec![msg("1")]);
    c.truth.delivered = vec![msg("1"), msg("2")];
    let j = judged(&c);
    let row = &summarize(&[(&c, &j)])["kill_restart:hand_resend"];
    assert_eq!((row.killed_mid_data, row.kept_mid_data), (1, 1));
    // The reads must agree: a message seen after the kill cannot vanish by the end.
    c.truth.delivered = vec![msg("2")];
    assert!(judge(&c).is_err());
    c.after_restart_kill = None;
    assert!(
        judge(&c).is_err(),
        "a restart kill without its mailbox read"
    );
}

#[test]
fn a_restart_kill_that_did_not_land_does_not_fire_and_no_final_answer_is_never_wrong() {
    let d = Draw {
        outage: "none".into(),
        kill_at: Some("decision_saved".into()),
        restart_kill_at: Some("before_send".into()),
        pause_at: None,
    };
    let mut c = trial("kill_restart", "no_check", d, SENT, vec![], vec![msg("1")]);
    assert!(judged(&c).fired);
    c.restart_killed_at = None;
    c.after_restart_kill = None;
    assert!(!judged(&c).fired, "the restart's kill did not land");
    c.restart_killed_at = Some("before_send".into());
    c.after_restart_kill = Some(vec![]);
    // The gate left its effect in flight, or the restart failed: unresolved, never wrong.
    for status in ["IN_FLIGHT", RESTART_FAILED] {
        c.ticket.status = status.into();
        let j = judged(&c);
        assert_eq!(j.mail.answer, Answer::Unresolved);
        let row = &summarize(&[(&c, &j)])["kill_restart:no_check"];
        assert_eq!((row.unresolved, row.wrong_within), (1, 0), "{status}");
    }
}
