//! The want rule and the judgement of a pr_merge cell, from the repository's ground truth.

use super::record::{Branch, Cell, RepoTruth, TicketRecord};
use crate::finding::Finding;
use serde::{Deserialize, Serialize};

/// The hand-written columns' status for a merge they sent.
pub const MERGED: &str = "MERGED";

/// `hand_check`'s status when it finds the pull request already merged (and not by its own
/// merge, which its lookup finds first).
pub const ALREADY_MERGED: &str = "REFUSED:already_merged";

/// What the rules derive for a judged cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgement {
    /// Merges this case may have made: 1, or 0 when before its first merge (or at all, if it
    /// made none) the pull request's head left the reviewed head or someone else merged it.
    pub want: u32,
    /// Merges of the pull request the case made (every merge but the outage's).
    pub merges: u32,
    /// The case merged a head other than the reviewed one.
    pub merged_unreviewed: bool,
    /// `merges == want` and nothing unreviewed merged.
    pub invariant_held: bool,
    /// The final answer agrees with the repository: it says merged when the case made a merge;
    /// when someone else merged the pull request and the case made none, it says so (a
    /// refusal that gives no reason, such as the service's 405, does not); otherwise it does
    /// not say merged.
    pub answer_matches: bool,
}

/// Whether a status says the merge went out (or was already out): the hand-written columns'
/// [`MERGED`] and `FOUND_BY_LOOKUP`, and every status of the gate that records a commit.
pub fn status_says_merged(status: &str) -> bool {
    use crate::scenarios::billing_credit::FOUND_BY_LOOKUP;
    [MERGED, FOUND_BY_LOOKUP].contains(&status)
        || crate::protocol::Status::parse(status).is_some_and(crate::protocol::Status::is_committed)
}

/// The premise violation the gate's merge target records when the pull request it was to merge
/// has been merged: its state was `"open"` and is now `"merged"` (the target writes each
/// violation as `<premise>: was <recorded>, now <live>`, values as JSON).
pub fn merged_state_violation() -> String {
    format!(
        "state: was {}, now {}",
        serde_json::json!("open"),
        serde_json::json!("merged")
    )
}

/// Whether the ticket's answer says the pull request was merged, and not by this case: the
/// hand-written [`ALREADY_MERGED`], or a receipt whose final entry is a refusal naming
/// [`merged_state_violation`] among the premises it re-checked (the gate's answer is its
/// receipt; its status alone names only the refusal's code).
pub fn says_merged_by_other(ticket: &TicketRecord) -> bool {
    if ticket.status == ALREADY_MERGED {
        return true;
    }
    let Some(last) = ticket.receipt.as_ref().and_then(|b| b.entries.last()) else {
        return false;
    };
    if last.get("kind").and_then(serde_json::Value::as_str) != Some("REFUSED") {
        return false;
    }
    let wanted = merged_state_violation();
    ["rechecked", "checks"].iter().any(|field| {
        last.get(field)
            .and_then(|c| c.get("violations"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|v| v.iter().any(|x| x.as_str() == Some(wanted.as_str())))
    })
}

/// The case's merges: every merge commit of the pull request on the base branch but the one the
/// outage made, as indexes into `truth.updates`.
fn case_merges(truth: &RepoTruth) -> Vec<usize> {
    truth
        .updates
        .iter()
        .enumerate()
        .filter(|(_, u)| u.branch == Branch::Base && u.merged_head.is_some())
        .filter(|(_, u)| truth.outage_merge.as_deref() != Some(u.commit.as_str()))
        .map(|(i, _)| i)
        .collect()
}

/// The want rule: the case may merge the reviewed head once, unless before its first merge (or
/// at all, if it made none) the pull request's head moved off the reviewed head or someone else
/// merged the pull request.
pub fn want(truth: &RepoTruth) -> u32 {
    let until = case_merges(truth)
        .first()
        .copied()
        .unwrap_or(truth.updates.len());
    let before = truth.updates.get(..until).unwrap_or_default();
    let head_moved = before
        .iter()
        .any(|u| u.branch == Branch::Head && u.commit != truth.reviewed_head);
    let merged_by_other = before
        .iter()
        .any(|u| truth.outage_merge.as_deref() == Some(u.commit.as_str()));
    u32::from(!(head_moved || merged_by_other))
}

/// The cell is what its plan says and its ground truth is read as recorded: the worker was
/// killed at the planned crash point; the planned outage, and no other, shows in the repository
/// (a push of another head, a base commit that is not a merge, a merge by someone else); an
/// outage merge is one of the updates, and is a merge.
fn consistent(cell: &Cell) -> Vec<Finding> {
    let truth = &cell.truth;
    let mut out = Vec::new();
    if cell.ticket.killed_at.as_deref() != Some(cell.planned.crash_point.as_str()) {
        out.push(Finding::new(
            "ticket.killed_at",
            crate::finding::code::CRASH_NOT_PROVEN,
            "the worker was not killed at the cell's planned crash point",
        ));
    }
    let pushed = truth
        .updates
        .iter()
        .any(|u| u.branch == Branch::Head && u.commit != truth.reviewed_head);
    let base_moved = truth
        .updates
        .iter()
        .any(|u| u.branch == Branch::Base && u.merged_head.is_none());
    for (shows, outage) in [(pushed, "unreviewed_push"), (base_moved, "base_moved")] {
        if shows != (cell.planned.outage == outage) {
            out.push(Finding::new(
                "truth.updates",
                crate::finding::code::GROUND_TRUTH_INCONSISTENT,
                format!("the repository shows the {outage} outage exactly when it is planned"),
            ));
        }
    }
    if let Some(m) = &truth.outage_merge {
        let recorded = truth
            .updates
            .iter()
            .any(|u| &u.commit == m && u.branch == Branch::Base && u.merged_head.is_some());
        if !recorded {
            out.push(Finding::new(
                "truth.outage_merge",
                crate::finding::code::GROUND_TRUTH_INCONSISTENT,
                "the outage's merge is not a merge on the base branch",
            ));
        }
    }
    // Someone else merges during the outage, unless the case's own merge had already merged the
    // pull request (a merged pull request cannot be merged again): then the outage changed nothing.
    let planned_other = cell.planned.outage == "merged_by_other";
    let already_merged = truth.outage_merge.is_none() && !case_merges(truth).is_empty();
    if truth.outage_merge.is_some() != planned_other && !(planned_other && already_merged) {
        out.push(Finding::new(
            "truth.outage_merge",
            crate::finding::code::GROUND_TRUTH_INCONSISTENT,
            "an outage merge is recorded exactly when the outage is merged_by_other and the \
             case had not merged the pull request already",
        ));
    }
    out
}

/// The in-flight bound the forge declares, ms: how late a merge request that left its client can
/// still land. A gate's recovery may trust a lookup's "not found" only once this much time has
/// passed since it found the sender's claim free.
pub const DECLARED_MAX_IN_FLIGHT_MS: u64 = 2_000;

/// Whether a settling entry rests on a lookup's "not found" (trusted only after the in-flight
/// bound): a merge resent by recovery, or a recovery's refusal for a changed premise or a revoked
/// approval (a tier-2 recovery refuses only once its lookup has not found the merge).
fn rests_on_not_found(entry: &serde_json::Value) -> bool {
    let text = |k: &str| entry.get(k).and_then(serde_json::Value::as_str);
    match text("kind") {
        Some("COMMITTED") => text("via") == Some("recovery-reapply"),
        Some("REFUSED") => matches!(
            text("code"),
            Some("stale_premise_at_recovery" | "lease_at_recovery")
        ),
        _ => false,
    }
}

/// An entry resting on a lookup's "not found" must state the bound it waited and the instant it
/// counted from, and the bound must be at least the forge's declared one (verify-core checks it
/// was waited): a gate configured with a shorter bound, or none, trusted a lookup too early.
fn bound_findings(i: usize, entry: &serde_json::Value) -> Option<Finding> {
    if !rests_on_not_found(entry) {
        return None;
    }
    let bound = entry
        .get("assumed_max_in_flight_ms")
        .and_then(serde_json::Value::as_u64);
    let counted = entry
        .get("counted_from_ms")
        .and_then(serde_json::Value::as_u64);
    let problem = match (bound, counted) {
        (None, _) | (_, None) => "states no in-flight bound or no instant it counted from".into(),
        (Some(b), Some(_)) if b < DECLARED_MAX_IN_FLIGHT_MS => format!(
            "rests on an in-flight bound of {b} ms, shorter than the forge's declared \
             {DECLARED_MAX_IN_FLIGHT_MS} ms"
        ),
        _ => return None,
    };
    Some(Finding::new(
        format!("ticket.receipt.entries[{i}]"),
        crate::finding::code::GROUND_TRUTH_INCONSISTENT,
        format!("a settling entry that trusted a lookup's \"not found\" {problem}"),
    ))
}

/// What a gated ticket's receipt says of the merge, held to the repository: the head its
/// proposal and dispatch name is the reviewed head, and a merge commit its COMMITTED entry names
/// is one of the case's merges on the base branch (a receipt of another merge, or of another
/// head, would verify on its own); an entry that trusted a lookup's "not found" rests on the
/// forge's declared in-flight bound ([`DECLARED_MAX_IN_FLIGHT_MS`]).
pub fn receipt_findings(truth: &RepoTruth, ticket: &TicketRecord) -> Vec<Finding> {
    let Some(bundle) = &ticket.receipt else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let merges: Vec<&str> = case_merges(truth)
        .into_iter()
        .filter_map(|i| truth.updates.get(i).map(|u| u.commit.as_str()))
        .collect();
    for (i, e) in bundle.entries.iter().enumerate() {
        out.extend(bound_findings(i, e));
        let kind = e.get("kind").and_then(serde_json::Value::as_str);
        let sha = e
            .get("effect")
            .and_then(|x| x.get("sha"))
            .and_then(serde_json::Value::as_str);
        if let Some(sha) = sha.filter(|s| *s != truth.reviewed_head) {
            out.push(Finding::new(
                format!("ticket.receipt.entries[{i}].effect.sha"),
                crate::finding::code::GROUND_TRUTH_INCONSISTENT,
                format!(
                    "the receipt's {} names head {}, not the reviewed head",
                    kind.unwrap_or("entry"),
                    crate::display::shorten(sha, 40)
                ),
            ));
        }
        let merged = e
            .get("evidence")
            .and_then(|x| x.get("merge_commit"))
            .and_then(serde_json::Value::as_str);
        if let Some(m) = merged.filter(|m| kind == Some("COMMITTED") && !merges.contains(m)) {
            out.push(Finding::new(
                format!("ticket.receipt.entries[{i}].evidence.merge_commit"),
                crate::finding::code::GROUND_TRUTH_INCONSISTENT,
                format!(
                    "the receipt's COMMITTED names merge commit {}, which is not one of the \
                     case's merges in the repository",
                    crate::display::shorten(m, 40)
                ),
            ));
        }
    }
    out
}

/// The judgement of a cell; findings when its ground truth does not add up.
pub fn judge(cell: &Cell) -> Result<Judgement, Vec<Finding>> {
    let mut problems = consistent(cell);
    problems.extend(receipt_findings(&cell.truth, &cell.ticket));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(judgement(&cell.truth, &cell.ticket))
}

/// The judgement of a case from its ground truth and its ticket (final status and receipt),
/// once the truth is known to be consistent with the case's plan: the want rule, the merges the
/// case made, whether an unreviewed head was merged, the invariant and the answer.
pub fn judgement(truth: &RepoTruth, ticket: &TicketRecord) -> Judgement {
    let merges = case_merges(truth);
    let merged_unreviewed = merges.iter().any(|&i| {
        truth
            .updates
            .get(i)
            .and_then(|u| u.merged_head.as_deref())
            .is_some_and(|h| h != truth.reviewed_head)
    });
    let want = want(truth);
    let count = u32::try_from(merges.len()).unwrap_or(u32::MAX);
    let says_merged = status_says_merged(&ticket.status);
    let answer_matches = if count > 0 {
        says_merged
    } else if truth.outage_merge.is_some() {
        says_merged_by_other(ticket)
    } else {
        !says_merged
    };
    Judgement {
        want,
        merges: count,
        merged_unreviewed,
        invariant_held: count == want && !merged_unreviewed,
        answer_matches,
    }
}
