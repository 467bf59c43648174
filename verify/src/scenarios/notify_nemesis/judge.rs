//! The judgement of a notify trial: whether its faults fired, whether they stayed within the
//! column's assumptions (one rule for every column), and the email judgement of `notify`.

use super::plan::Draw;
use super::record::Cell;
use crate::finding::{code, Finding};
use crate::scenarios::notify::{case_receipt_findings, judgement, Judgement, Message};
use serde::{Deserialize, Serialize};

pub use crate::scenarios::pr_merge::RESTART_FAILED;

/// What the rules derive for a judged trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialJudgement {
    /// Every fault the trial drew landed where drawn (the kill at its step, the restart's kill,
    /// the pause). A trial whose fault did not fire measured something else and is counted
    /// apart.
    pub fired: bool,
    /// Why the trial lies beyond the column's assumptions, or `None` within them.
    pub beyond: Option<String>,
    /// The email judgement (want, delivered, invariant, answer).
    pub mail: Judgement,
}

/// Whether each drawn fault fired.
pub fn fired(cell: &Cell) -> bool {
    let d = &cell.planned.draw;
    let same = |drawn: &Option<String>, landed: &Option<String>| drawn == landed;
    same(&d.kill_at, &cell.ticket.killed_at)
        && same(&d.restart_kill_at, &cell.restart_killed_at)
        && same(&d.pause_at, &cell.paused_at)
}

/// Whether `column` reads the fact `change` changes (`refund_failed`: the refund's status;
/// `approval_revoked`: the approval) again after passing `step`, before its send. The
/// hand-written columns read the refund (step `premises` follows the read), then the approval
/// (step `approval`), then log and send. The gate re-reads the refund after AUTHORIZED (its
/// `premises` step follows the read), then takes its claim and reads the approval under it
/// right before it writes DISPATCHED (its `dispatched` step). `no_check` reads neither.
pub fn reads_after(column: &str, step: &str, change: &str) -> bool {
    match (column, change) {
        ("hand_check" | "hand_resend", "refund_failed") => step == "decision_saved",
        ("hand_check" | "hand_resend", "approval_revoked") => {
            matches!(step, "decision_saved" | "premises")
        }
        ("interlock", "refund_failed") => {
            matches!(step, "decision_saved" | "proposed" | "authorized")
        }
        ("interlock", "approval_revoked") => {
            matches!(
                step,
                "decision_saved" | "proposed" | "authorized" | "premises"
            )
        }
        _ => false,
    }
}

/// The change the trial's ground truth must show: the drawn one, except for a pause that never
/// came (no change was made).
fn change_made(cell: &Cell) -> &str {
    let d: &Draw = &cell.planned.draw;
    if d.pause_at.is_some() && cell.paused_at.is_none() {
        "none"
    } else {
        &d.outage
    }
}

/// The one rule for every column: a trial lies beyond the column's assumptions when a fact the
/// email rests on (the refund's status, the approval) changed after the column's last read of
/// it, before the case's first email, and nothing else guards it (a mail server checks
/// neither). `no_check` reads nothing after its decision, so a change while it is dead is
/// beyond its assumptions; a change while a worker is paused is beyond those of a column that
/// does not read that fact again before its send ([`reads_after`]).
pub fn beyond(cell: &Cell) -> Option<String> {
    let change = change_made(cell);
    if change == "none" || !cell.truth.before_outage.is_empty() {
        return None;
    }
    let column = cell.planned.column.as_str();
    match cell.paused_at.as_deref() {
        Some(step) if !reads_after(column, step, change) => Some(format!(
            "the change ({change}) was made at {step}, after {column}'s last read of it"
        )),
        Some(_) => None,
        None if column == "no_check" => Some(format!(
            "the change ({change}) was made after no_check's last read (its decision)"
        )),
        None => None,
    }
}

fn inconsistent(path: &str, why: impl Into<String>) -> Finding {
    Finding::new(path, code::GROUND_TRUTH_INCONSISTENT, why.into())
}

/// The trial's ground truth shows its plan: the refund reads `failed` exactly when the change
/// made was `refund_failed`, the approval is revoked exactly when it was `approval_revoked`,
/// and what the mailbox held before the change is still there at the end.
fn consistent(cell: &Cell) -> Vec<Finding> {
    let truth = &cell.truth;
    let made = change_made(cell);
    let mut out = Vec::new();
    if !["succeeded", "failed"].contains(&truth.refund_status.as_str()) {
        out.push(inconsistent(
            "truth.refund_status",
            "the refund's status is neither succeeded nor failed",
        ));
    }
    for (shown, change) in [
        (truth.refund_status == "failed", "refund_failed"),
        (truth.approval_revoked, "approval_revoked"),
    ] {
        if shown != (made == change) {
            out.push(inconsistent(
                "truth",
                format!("the case shows the {change} change exactly when the trial made it"),
            ));
        }
    }
    let contains = |all: &[Message], m: &Message| all.iter().any(|d| d.file == m.file);
    for (i, m) in truth.before_outage.iter().enumerate() {
        if !contains(&truth.delivered, m) {
            out.push(inconsistent(
                &format!("truth.before_outage[{i}]"),
                "a message delivered before the change is not in the mailbox at the end",
            ));
        }
    }
    match (&cell.restart_killed_at, &cell.after_restart_kill) {
        (Some(_), Some(after)) => {
            let before = truth.before_outage.iter().all(|m| contains(after, m));
            let end = after.iter().all(|m| contains(&truth.delivered, m));
            if !before || !end {
                out.push(inconsistent(
                    "after_restart_kill",
                    "the mailbox after the restart's kill holds every message from before it, \
                     and the mailbox at the end holds every message from after it",
                ));
            }
        }
        (None, None) => {}
        _ => out.push(inconsistent(
            "after_restart_kill",
            "the mailbox is read right after a restart's kill, and only then",
        )),
    }
    out
}

/// The judgement of a trial; findings when its ground truth does not add up.
pub fn judge(cell: &Cell) -> Result<TrialJudgement, Vec<Finding>> {
    let mut problems = consistent(cell);
    problems.extend(case_receipt_findings(
        &cell.case,
        &cell.refund,
        &cell.truth,
        &cell.ticket,
    ));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(TrialJudgement {
        fired: fired(cell),
        beyond: beyond(cell),
        mail: judgement(&cell.truth, &cell.ticket),
    })
}
