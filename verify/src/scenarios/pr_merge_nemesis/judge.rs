//! The judgement of a pr_merge trial: whether its faults fired, whether they stayed within the
//! column's assumptions (one rule for every column), and the merge judgement of `pr_merge`.

use super::plan::{FORGE_MAX_IN_FLIGHT_MS, HELD_STEP};
use super::record::Cell;
use crate::finding::Finding;
use crate::scenarios::pr_merge::{judgement, Branch, Judgement};
use serde::{Deserialize, Serialize};

pub use crate::scenarios::pr_merge::RESTART_FAILED;

/// What the rules derive for a judged trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialJudgement {
    /// Every fault the trial drew landed where drawn (a kill at its step, the restart's kill,
    /// the pause, the service's fault taken by the first merge request). A trial whose fault did
    /// not fire measured something else and is counted apart.
    pub fired: bool,
    /// Why the trial lies beyond the column's assumptions, or `None` within them.
    pub beyond: Option<String>,
    /// The merge judgement (want, merges, invariant, answer).
    pub merge: Judgement,
}

/// Whether each drawn fault fired.
pub fn fired(cell: &Cell) -> bool {
    let d = &cell.planned.draw;
    let kill = match d.kill_at.as_deref() {
        Some(k) => cell.ticket.killed_at.as_deref() == Some(k),
        None => cell.ticket.killed_at.is_none(),
    };
    let restart = d
        .restart_kill_at
        .as_deref()
        .is_none_or(|k| cell.restart_killed_at.as_deref() == Some(k));
    let pause = d
        .pause_at
        .as_deref()
        .is_none_or(|p| cell.paused_at.as_deref() == Some(p));
    let release = d
        .release_at
        .as_deref()
        .is_none_or(|r| cell.released_at.as_deref() == Some(r) && cell.held_ms.is_some());
    let drew_fault = d.hold_ms.is_some() || d.answer.is_some() || d.release_at.is_some();
    let fault = !drew_fault || cell.fault_taken == Some(true);
    kill && restart && pause && release && fault
}

/// The step the approval was revoked at, when the trial revoked it.
pub fn revoked_at(cell: &Cell) -> Option<&str> {
    (cell.planned.nemesis == "revoke_mid_check")
        .then_some(cell.paused_at.as_deref())
        .flatten()
}

/// Whether `column` reads the approval again after passing `step`, before its merge request:
/// `hand_check` re-reads it at its approval check (after its lookup and its premise read), the
/// gate checks its lease at DISPATCHED (and at PROPOSED and AUTHORIZED before it); `no_check`
/// and `native` never read it.
pub fn reads_approval_after(column: &str, step: &str) -> bool {
    match column {
        "hand_check" => matches!(step, "decision_saved" | "lookup" | "premises"),
        "interlock" => matches!(step, "decision_saved" | "proposed" | "authorized"),
        _ => false,
    }
}

/// Whether the head moved off the reviewed head before the case's first merge (or at all, when
/// the case made none): a push after the case merged changed nothing it rested on.
fn head_moved_before_first_merge(cell: &Cell) -> bool {
    let truth = &cell.truth;
    for u in &truth.updates {
        let case_merge = u.branch == Branch::Base
            && u.merged_head.is_some()
            && truth.outage_merge.as_deref() != Some(u.commit.as_str());
        if case_merge {
            return false;
        }
        if u.branch == Branch::Head && u.commit != truth.reviewed_head {
            return true;
        }
    }
    false
}

/// Whether the head moved off the reviewed head in the trial (an unreviewed push).
fn head_moved(cell: &Cell) -> bool {
    cell.truth
        .updates
        .iter()
        .any(|u| u.branch == Branch::Head && u.commit != cell.truth.reviewed_head)
}

/// The one rule for every column: a trial lies beyond the column's assumptions when a merge
/// request was held at the service longer than the declared in-flight bound, or when a fact the
/// merge rests on changed after the column's last read of it and nothing guards it. The head is
/// guarded by the service's own precondition for every column that passes `sha`; `no_check`
/// passes none and reads nothing after its decision, so a push after it is beyond its
/// assumptions. The approval is guarded by no service: a revocation is beyond the assumptions
/// of a column that reads it for the last time before the step it was revoked at (`no_check`
/// and `native` never read it).
pub fn beyond(cell: &Cell) -> Option<String> {
    if let Some(step) = revoked_at(cell) {
        if !reads_approval_after(&cell.planned.column, step) {
            return Some(format!(
                "the approval was revoked at {step}, after {}'s last read of it",
                cell.planned.column
            ));
        }
    }
    if let Some(hold) = cell.held_ms.or(cell.planned.draw.hold_ms) {
        if hold > FORGE_MAX_IN_FLIGHT_MS && cell.fault_taken == Some(true) {
            return Some(format!(
                "the merge request was held {hold} ms at the service, past the declared \
                 in-flight bound of {FORGE_MAX_IN_FLIGHT_MS} ms"
            ));
        }
    }
    if cell.planned.column == "no_check" && head_moved_before_first_merge(cell) {
        return Some(
            "the head moved after no_check's last read (its decision), and it sends no sha".into(),
        );
    }
    None
}

/// The trial's ground truth shows its plan: an unreviewed push exactly when its outage or its
/// pause made one, the base moved exactly when its outage did, and someone else's merge exactly
/// when the outage was that (unless the case had merged already).
fn consistent(cell: &Cell) -> Vec<Finding> {
    let d = &cell.planned.draw;
    let truth = &cell.truth;
    let mut out = Vec::new();
    let pushed_by_plan = d.outage == "unreviewed_push"
        || (cell.planned.nemesis == "push_mid_check" && cell.paused_at.is_some());
    let base_moved = truth
        .updates
        .iter()
        .any(|u| u.branch == Branch::Base && u.merged_head.is_none());
    for (shows, planned, what) in [
        (head_moved(cell), pushed_by_plan, "an unreviewed push"),
        (base_moved, d.outage == "base_moved", "the base moving"),
    ] {
        if shows != planned {
            out.push(Finding::new(
                "truth.updates",
                crate::finding::code::GROUND_TRUTH_INCONSISTENT,
                format!("the repository shows {what} exactly when the trial made it"),
            ));
        }
    }
    let other = d.outage == "merged_by_other";
    let merged_already = truth.outage_merge.is_none()
        && truth
            .updates
            .iter()
            .any(|u| u.branch == Branch::Base && u.merged_head.is_some());
    let recorded = truth.outage_merge.as_ref().is_none_or(|m| {
        truth
            .updates
            .iter()
            .any(|u| &u.commit == m && u.branch == Branch::Base && u.merged_head.is_some())
    });
    if !recorded || (truth.outage_merge.is_some() != other && !(other && merged_already)) {
        out.push(Finding::new(
            "truth.outage_merge",
            crate::finding::code::GROUND_TRUTH_INCONSISTENT,
            "someone else's merge is recorded, as a merge on the base branch, exactly when the \
             outage is merged_by_other and the case had not merged already",
        ));
    }
    if cell.planned.draw.kill_at.as_deref() == Some(HELD_STEP)
        && cell.ticket.killed_at.as_deref() == Some(HELD_STEP)
        && cell.fault_taken != Some(true)
    {
        out.push(Finding::new(
            "ticket.killed_at",
            crate::finding::code::GROUND_TRUTH_INCONSISTENT,
            "a worker killed while its request was held, with no request taken by the service",
        ));
    }
    out
}

/// The judgement of a trial; findings when its ground truth does not add up.
pub fn judge(cell: &Cell) -> Result<TrialJudgement, Vec<Finding>> {
    let mut problems = consistent(cell);
    problems.extend(crate::scenarios::pr_merge::receipt_findings(
        &cell.truth,
        &cell.ticket,
    ));
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut merge = judgement(&cell.truth, &cell.ticket);
    if revoked_at(cell).is_some() {
        // Revoked before any send of the case (every pause step is before its first merge
        // request): the case may merge nothing.
        merge.want = 0;
        merge.invariant_held = merge.merges == 0;
    }
    Ok(TrialJudgement {
        fired: fired(cell),
        beyond: beyond(cell),
        merge,
    })
}
