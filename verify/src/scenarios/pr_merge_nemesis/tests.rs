use super::*;
use crate::scenarios::pr_merge::{Branch, RefUpdate, RepoTruth, TicketRecord, WorkerExit, MERGED};

const H: &str = "1111111111111111111111111111111111111111";

fn params() -> Params {
    Params {
        seed: 7,
        trials: 5,
        nemeses: NEMESES.map(String::from).to_vec(),
        columns: crate::scenarios::pr_merge::COLUMNS
            .map(String::from)
            .to_vec(),
    }
}

fn trial(nemesis: &str, column: &str, index: u32) -> Cell {
    let draw = draw(7, nemesis, column, index);
    let merge = RefUpdate {
        branch: Branch::Base,
        commit: "m".repeat(40),
        merged_head: Some(H.into()),
    };
    Cell {
        planned: Planned {
            nemesis: nemesis.into(),
            column: column.into(),
            index,
            draw: draw.clone(),
        },
        pull: 1,
        truth: RepoTruth {
            reviewed_head: H.into(),
            updates: vec![merge],
            outage_merge: None,
        },
        ticket: TicketRecord {
            status: MERGED.into(),
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
        paused_at: draw.pause_at.clone(),
        released_at: draw.release_at.clone(),
        held_ms: draw.release_at.as_ref().map(|_| 40),
        fault_taken: (draw.hold_ms.is_some() || draw.answer.is_some() || draw.release_at.is_some())
            .then_some(true),
        harness_error: None,
        worker_output: None,
        judgement: None,
    }
}

#[test]
fn every_draw_derives_from_the_seed_and_the_trials_place_and_stays_in_its_columns_steps() {
    let p = plan(&params(), usize::MAX).unwrap();
    assert_eq!(p.len(), NEMESES.len() * 4 * 5);
    assert_eq!(p, plan(&params(), usize::MAX).unwrap());
    let other = Params {
        seed: 8,
        ..params()
    };
    assert_ne!(
        p,
        plan(&other, usize::MAX).unwrap(),
        "another seed draws otherwise"
    );
    for t in &p {
        let d = &t.draw;
        if let Some(k) = d.kill_at.as_deref().filter(|k| *k != HELD_STEP) {
            assert!(first_steps(&t.column).contains(&k), "{t:?}");
        }
        if let Some(k) = &d.restart_kill_at {
            assert!(restart_steps(&t.column).contains(&k.as_str()), "{t:?}");
        }
        if let Some(s) = &d.pause_at {
            assert!(pause_steps(&t.column).contains(&s.as_str()), "{t:?}");
        }
        match (t.nemesis.as_str(), d.hold_ms) {
            ("kill_while_held", Some(h)) => assert!(h <= FORGE_MAX_IN_FLIGHT_MS, "{t:?}"),
            ("held_beyond_bound", Some(h)) => assert!(h > FORGE_MAX_IN_FLIGHT_MS, "{t:?}"),
            ("kill_while_held" | "held_beyond_bound", None) => panic!("{t:?}"),
            (_, h) => assert_eq!(h, None, "{t:?}"),
        }
    }
    assert!(plan(
        &Params {
            trials: 0,
            ..params()
        },
        usize::MAX
    )
    .is_err());
    assert!(plan(&params(), 10).is_err());
}

#[test]
fn a_trial_fired_only_when_every_drawn_fault_landed_where_drawn() {
    let c = trial("kill_at_step", "hand_check", 0);
    assert!(fired(&c));
    let mut missed = c.clone();
    missed.ticket.killed_at = None;
    missed.ticket.first_exit = None;
    assert!(!fired(&missed));
    let mut c = trial("kill_restart", "native", 1);
    assert!(fired(&c));
    c.restart_killed_at = None;
    assert!(!fired(&c));
    let mut c = trial("drop_answer", "interlock", 2);
    assert!(fired(&c));
    c.fault_taken = Some(false);
    assert!(!fired(&c));
    let mut c = trial("push_mid_check", "hand_check", 3);
    assert!(fired(&c));
    c.paused_at = None;
    assert!(!fired(&c));
}

#[test]
fn one_rule_puts_a_hold_past_the_bound_and_an_unguarded_push_beyond_assumptions() {
    for column in crate::scenarios::pr_merge::COLUMNS {
        let c = trial("held_beyond_bound", column, 0);
        assert!(beyond(&c).is_some(), "{column}");
        let c = trial("kill_while_held", column, 0);
        assert_eq!(beyond(&c), None, "{column}");
        let mut c = trial("push_mid_check", column, 0);
        c.truth.updates.insert(
            0,
            RefUpdate {
                branch: Branch::Head,
                commit: "2".repeat(40),
                merged_head: None,
            },
        );
        // Only no_check sends no sha: for the others the service's precondition guards the head.
        assert_eq!(beyond(&c).is_some(), column == "no_check", "{column}");
    }
}

#[test]
fn the_summary_counts_fired_trials_within_and_beyond_and_the_rest_apart() {
    let mut cells = Vec::new();
    let mut held = trial("kill_at_step", "native", 0);
    held.planned.draw.outage = "none".into();
    cells.push(held);
    let mut missed = trial("kill_at_step", "native", 1);
    missed.planned.draw.outage = "none".into();
    missed.ticket.killed_at = None;
    missed.ticket.first_exit = None;
    cells.push(missed);
    let mut twice = trial("held_beyond_bound", "native", 0);
    twice.truth.updates.push(RefUpdate {
        branch: Branch::Base,
        commit: "n".repeat(40),
        merged_head: Some(H.into()),
    });
    cells.push(twice);
    let judged: Vec<_> = cells.iter().map(|c| (c, judge(c).unwrap())).collect();
    let pairs: Vec<_> = judged.iter().map(|(c, j)| (*c, j)).collect();
    let s = summarize(&pairs);
    let k = &s["kill_at_step:native"];
    assert_eq!(
        (k.judged, k.not_fired, k.within, k.violations_within),
        (2, 1, 1, 0)
    );
    let b = &s["held_beyond_bound:native"];
    assert_eq!((b.beyond, b.violations_beyond, b.within), (1, 1, 0));
}

#[test]
fn a_revocation_mid_check_wants_no_merge_and_is_beyond_a_column_that_read_the_approval_before() {
    for (column, step, within) in [
        ("hand_check", "lookup", true),
        ("hand_check", "premises", true),
        ("hand_check", "approval", false),
        ("interlock", "authorized", true),
        ("interlock", "dispatched", false),
        ("native", "decision_saved", false),
        ("no_check", "decision_saved", false),
    ] {
        let mut c = trial("revoke_mid_check", column, 0);
        c.planned.draw.pause_at = Some(step.into());
        c.paused_at = Some(step.into());
        let j = judge(&c).unwrap();
        // The case merged once (the fixture's merge) after the revocation: a violation.
        assert_eq!(
            (j.merge.want, j.merge.invariant_held),
            (0, false),
            "{column} {step}"
        );
        assert_eq!(
            j.beyond.is_none(),
            within,
            "{column} {step}: {:?}",
            j.beyond
        );
        c.truth.updates.clear();
        c.ticket.status = "REFUSED:approval".into();
        let j = judge(&c).unwrap();
        assert!(
            j.merge.invariant_held && j.merge.answer_matches,
            "{column} {step}"
        );
        // A pause that never happened revoked nothing: the trial did not fire.
        c.paused_at = None;
        assert!(!fired(&c));
    }
}

#[test]
fn a_push_after_no_checks_own_merge_changed_nothing_it_rested_on() {
    let mut c = trial("kill_at_step", "no_check", 0);
    c.planned.draw.outage = "unreviewed_push".into();
    let push = RefUpdate {
        branch: Branch::Head,
        commit: "2".repeat(40),
        merged_head: None,
    };
    c.truth.updates.push(push.clone());
    assert_eq!(beyond(&c), None, "the push came after the merge");
    c.truth.updates.insert(0, push);
    assert!(beyond(&c).is_some(), "the push came before the merge");
}

#[test]
fn held_within_draws_short_holds_often_and_never_reaches_the_bound() {
    assert_eq!(held_within(0), 1);
    assert!(held_within(999) < FORGE_MAX_IN_FLIGHT_MS);
    assert!(held_within(5_000) < FORGE_MAX_IN_FLIGHT_MS);
    let short = (0..1000).filter(|&x| held_within(x) < 50).count();
    assert!(
        (100..250).contains(&short),
        "{short} of 1000 draws under 50 ms"
    );
}

#[test]
fn a_release_lands_at_a_restart_step_before_its_send_and_the_measured_hold_decides_within() {
    for column in crate::scenarios::pr_merge::COLUMNS {
        let steps = release_steps(column);
        assert!(!steps.is_empty(), "{column}");
        assert!(!steps.contains(&"after_send") && !steps.contains(&"committed"));
        for index in 0..20 {
            let d = draw(7, "release_mid_restart", column, index);
            assert_eq!(d.kill_at.as_deref(), Some(HELD_STEP));
            assert!(steps.contains(&d.release_at.as_deref().unwrap()), "{d:?}");
            assert_eq!(d.hold_ms, None);
        }
    }
    let mut c = trial("release_mid_restart", "hand_check", 0);
    let j = judge(&c).unwrap();
    assert!(j.fired && j.beyond.is_none(), "{j:?}");
    // Held past the declared bound (a restart that waited it out before the release step).
    c.held_ms = Some(FORGE_MAX_IN_FLIGHT_MS + 1);
    assert!(judge(&c).unwrap().beyond.is_some());
    // A release that never came (the restart did not reach its step) did not fire.
    c.released_at = None;
    c.held_ms = None;
    assert!(!judge(&c).unwrap().fired);
    // Files written before the release existed read as they were, and write back the same.
    let old = trial("kill_at_step", "native", 0);
    let text = serde_json::to_string(&old).unwrap();
    assert!(
        !text.contains("release_at") && !text.contains("held_ms"),
        "{text}"
    );
}
