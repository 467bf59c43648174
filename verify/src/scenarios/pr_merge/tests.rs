use super::*;
use crate::contract::PlanError;

const H: &str = "1111111111111111111111111111111111111111";
const PUSHED: &str = "2222222222222222222222222222222222222222";
const BASE: &str = "3333333333333333333333333333333333333333";

fn merge(commit: &str, head: &str) -> RefUpdate {
    RefUpdate {
        branch: Branch::Base,
        commit: commit.into(),
        merged_head: Some(head.into()),
    }
}

fn push(commit: &str) -> RefUpdate {
    RefUpdate {
        branch: Branch::Head,
        commit: commit.into(),
        merged_head: None,
    }
}

fn base(commit: &str) -> RefUpdate {
    RefUpdate {
        branch: Branch::Base,
        commit: commit.into(),
        merged_head: None,
    }
}

fn cell(outage: &str, status: &str, updates: Vec<RefUpdate>, outage_merge: Option<&str>) -> Cell {
    Cell {
        planned: Planned {
            crash_point: "after_send".into(),
            outage: outage.into(),
            column: "no_check".into(),
            repeat: 0,
        },
        pull: 1,
        truth: RepoTruth {
            reviewed_head: H.into(),
            updates,
            outage_merge: outage_merge.map(String::from),
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
fn one_merge_of_the_reviewed_head_is_what_the_case_may_make_without_an_outage() {
    let j = judged(&cell("none", MERGED, vec![merge("m1", H)], None));
    assert_eq!(
        (j.want, j.merges, j.invariant_held, j.answer_matches),
        (1, 1, true, true)
    );
    let j = judged(&cell("none", "REFUSED:approval", vec![], None));
    assert_eq!(
        (j.want, j.merges, j.invariant_held, j.answer_matches),
        (1, 0, false, true)
    );
}

#[test]
fn an_unreviewed_push_before_the_cases_merge_makes_any_merge_a_violation() {
    // Nothing merged after the push: held.
    let j = judged(&cell(
        "unreviewed_push",
        "REFUSED:stale_premise",
        vec![push(PUSHED)],
        None,
    ));
    assert_eq!((j.want, j.merges, j.invariant_held), (0, 0, true));
    // The saved decision re-sent without `sha` merged the pushed head.
    let j = judged(&cell(
        "unreviewed_push",
        MERGED,
        vec![push(PUSHED), merge("m1", PUSHED)],
        None,
    ));
    assert_eq!(
        (j.want, j.merges, j.merged_unreviewed, j.invariant_held),
        (0, 1, true, false)
    );
}

#[test]
fn a_push_after_the_cases_merge_of_the_reviewed_head_leaves_it_held() {
    let j = judged(&cell(
        "unreviewed_push",
        "COMMITTED_ON_QUERY",
        vec![merge("m1", H), push(PUSHED)],
        None,
    ));
    assert_eq!(
        (j.want, j.merges, j.invariant_held, j.answer_matches),
        (1, 1, true, true)
    );
}

#[test]
fn a_merge_by_someone_else_is_not_the_cases_and_leaves_it_nothing_to_merge() {
    let j = judged(&cell(
        "merged_by_other",
        ALREADY_MERGED,
        vec![merge("other", H)],
        Some("other"),
    ));
    assert_eq!(
        (j.want, j.merges, j.invariant_held, j.answer_matches),
        (0, 0, true, true)
    );
    // The service cannot merge twice, but a file that says so is judged by the same rule.
    let j = judged(&cell(
        "merged_by_other",
        MERGED,
        vec![merge("other", H), merge("m2", H)],
        Some("other"),
    ));
    assert_eq!((j.want, j.merges, j.invariant_held), (0, 1, false));
}

/// A ticket refused by the gate, its receipt ending in a REFUSED entry whose re-checked
/// premises name `violations`.
fn gate_refused(violations: &[&str]) -> TicketRecord {
    let mut t = cell(
        "merged_by_other",
        "REFUSED:stale_premise_at_recovery",
        vec![],
        None,
    )
    .ticket;
    t.receipt = Some(crate::entry::ReceiptBundle {
        format: crate::entry::RECEIPT_FORMAT.into(),
        effect_id: "e".repeat(64),
        entries: vec![serde_json::json!({
            "kind": "REFUSED",
            "code": "stale_premise_at_recovery",
            "rechecked": { "violations": violations, "lease_live": true },
        })],
        head: None,
    });
    t
}

#[test]
fn when_someone_else_merged_first_only_an_answer_that_says_so_matches() {
    let truth = RepoTruth {
        reviewed_head: H.into(),
        updates: vec![merge("other", H)],
        outage_merge: Some("other".into()),
    };
    let answer = |t: &TicketRecord| judgement(&truth, t).answer_matches;
    let plain = |status: &str| cell("merged_by_other", status, vec![], None).ticket;
    // hand_check's refusal names the merge; the service's 405 and a bare refusal do not.
    assert!(answer(&plain(ALREADY_MERGED)));
    assert!(!answer(&plain("REFUSED_BY_SERVICE:405")));
    assert!(!answer(&plain("REFUSED:stale_premise_at_recovery")));
    // The gate's answer is its receipt: a refusal that re-checked the state and found it merged.
    assert!(answer(&gate_refused(&[&merged_state_violation()])));
    assert!(!answer(&gate_refused(&["head: was \"a\", now \"b\""])));
    assert!(!answer(&gate_refused(&[])));
    // The same violation in an entry that is not the final refusal says nothing.
    let mut t = gate_refused(&[&merged_state_violation()]);
    if let Some(b) = t.receipt.as_mut() {
        b.entries.push(serde_json::json!({ "kind": "COMMITTED" }));
    }
    assert!(!answer(&t));
}

#[test]
fn an_unrelated_base_commit_leaves_one_merge_of_the_reviewed_head_wanted() {
    let j = judged(&cell(
        "base_moved",
        MERGED,
        vec![base(BASE), merge("m1", H)],
        None,
    ));
    assert_eq!((j.want, j.merges, j.invariant_held), (1, 1, true));
}

#[test]
fn an_answer_that_says_merged_without_a_merge_does_not_match() {
    let j = judged(&cell("none", "COMMITTED", vec![], None));
    assert!(!j.answer_matches);
}

#[test]
fn a_cell_not_killed_at_its_planned_crash_point_is_not_judged() {
    let mut c = cell("none", MERGED, vec![merge("m1", H)], None);
    assert!(judge(&c).is_ok());
    for killed_at in [None, Some("before_send"), Some("never")] {
        c.ticket.killed_at = killed_at.map(String::from);
        assert!(judge(&c).is_err(), "{killed_at:?}");
    }
}

#[test]
fn the_planned_outage_and_no_other_shows_in_the_repository() {
    // A push of another head or a base commit that is not a merge, unplanned or missing.
    for c in [
        cell("unreviewed_push", MERGED, vec![merge("m1", H)], None),
        cell("base_moved", MERGED, vec![merge("m1", H)], None),
        cell("none", MERGED, vec![merge("m1", H), push(PUSHED)], None),
        cell("none", MERGED, vec![base(BASE), merge("m1", H)], None),
        cell(
            "unreviewed_push",
            MERGED,
            vec![base(BASE), push(PUSHED)],
            None,
        ),
    ] {
        assert!(
            judge(&c).is_err(),
            "{:?} {:?}",
            c.planned.outage,
            c.truth.updates
        );
    }
}

#[test]
fn an_outage_merge_that_is_not_a_recorded_merge_is_inconsistent_ground_truth() {
    let c = cell(
        "merged_by_other",
        MERGED,
        vec![merge("m1", H)],
        Some("other"),
    );
    assert!(judge(&c).is_err());
    let c = cell("none", MERGED, vec![merge("m1", H)], Some("m1"));
    assert!(judge(&c).is_err());
}

#[test]
fn someone_else_cannot_merge_what_the_case_already_merged_and_nothing_else_excuses_no_outage_merge()
{
    // The case's merge landed before the outage: the other person's merge is refused, and
    // the cell is consistent without an outage merge.
    let c = cell("merged_by_other", MERGED, vec![merge("m1", H)], None);
    let j = judge(&c).unwrap();
    assert!(j.invariant_held && j.answer_matches, "{j:?}");
    // No merge by the case and none by the outage: the planned outage did not happen.
    let c = cell("merged_by_other", "REFUSED:already_merged", vec![], None);
    assert!(judge(&c).is_err());
}

#[test]
fn the_default_plan_has_every_crash_point_outage_and_column_and_refuses_unknown_names() {
    let p = plan(&Params::default(), usize::MAX).unwrap_or_default();
    assert_eq!(p.len(), 2 * 4 * 4);
    let mut bad = Params::default();
    bad.columns.push("yolo".into());
    assert!(plan(&bad, usize::MAX).is_err_and(|e| e.to_string().contains("columns[4]")));
    let mut twice = Params::default();
    twice.outages.push("none".into());
    assert!(plan(&twice, usize::MAX).is_err_and(|e| matches!(e, PlanError::Twice { index: 4, .. })));
    let none = Params {
        repeats: 0,
        ..Params::default()
    };
    assert_eq!(plan(&none, usize::MAX), Err(PlanError::NoRepeats));
}

#[test]
fn a_plan_larger_than_the_file_is_refused_before_it_is_built() {
    let huge = Params {
        repeats: u32::MAX,
        ..Params::default()
    };
    assert_eq!(plan(&huge, 32), Err(PlanError::TooLarge { at_most: 32 }));
    assert_eq!(
        plan(&Params::default(), 31),
        Err(PlanError::TooLarge { at_most: 31 })
    );
    assert_eq!(plan(&Params::default(), 32).map(|p| p.len()), Ok(32));
}

#[test]
fn an_entry_that_trusted_a_not_found_must_rest_on_the_forges_declared_bound() {
    let truth = RepoTruth {
        reviewed_head: H.into(),
        updates: vec![merge("m1", H)],
        outage_merge: None,
    };
    let with = |entry: serde_json::Value| {
        let mut t = cell("none", "REAPPLIED_AFTER_QUERY", vec![], None).ticket;
        t.receipt = Some(crate::entry::ReceiptBundle {
            format: crate::entry::RECEIPT_FORMAT.into(),
            effect_id: "e".repeat(64),
            entries: vec![entry],
            head: None,
        });
        receipt_findings(&truth, &t)
    };
    let reapplied = |bound: Option<u64>| {
        let mut e = serde_json::json!({
            "kind": "COMMITTED", "via": "recovery-reapply",
            "evidence": { "merge_commit": "m1" }, "counted_from_ms": 5,
        });
        if let (Some(b), Some(m)) = (bound, e.as_object_mut()) {
            m.insert("assumed_max_in_flight_ms".into(), b.into());
        }
        e
    };
    assert!(with(reapplied(Some(DECLARED_MAX_IN_FLIGHT_MS))).is_empty());
    for bad in [None, Some(0), Some(1), Some(DECLARED_MAX_IN_FLIGHT_MS - 1)] {
        let found = with(reapplied(bad));
        assert_eq!(found.len(), 1, "{bad:?}: {found:?}");
    }
    // A refusal at recovery rests on the lookup too; one that read the service's own answer does
    // not, nor does a merge found by the lookup.
    let refused = serde_json::json!({ "kind": "REFUSED", "code": "stale_premise_at_recovery" });
    assert_eq!(with(refused).len(), 1);
    for fine in [
        serde_json::json!({ "kind": "REFUSED", "code": "target_failed_at_recovery" }),
        serde_json::json!({
            "kind": "COMMITTED", "via": "recovery-query", "evidence": { "merge_commit": "m1" },
        }),
    ] {
        assert!(with(fine.clone()).is_empty(), "{fine}");
    }
}
